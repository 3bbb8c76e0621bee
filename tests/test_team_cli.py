"""`mem team pull|push|sync|status` as scripts run them: the installed executable, real git, real server."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import git
from test_team_support import FAKE_PAT, REPO, all_stored_text, files, server, write  # noqa: F401 - fixtures


@pytest.fixture
def project(tmp_path):
    """A git checkout whose origin is acme/widgets, and a memory dir for it."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    git("remote", "add", "origin", "https://github.com/acme/widgets.git", cwd=repo)
    return repo


def _env(srv, token=None, **extra):
    return {"MEM_TEAM_URL": srv.url, "MEM_TEAM_TOKEN": token if token is not None else srv.token(), **extra}


def test_push_pull_sync_status_through_the_command(server, project, tmp_path, run_mem):
    env = _env(server)
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "team/MEMORY.md", "- [Tests](tests.md) — run them against a real database\n")
    write(a, "team/tests.md", "---\nname: tests\ndescription: d\ntype: feedback\n---\nuse a real db\n")
    r = run_mem("team", "push", "--dir", str(a), env=env, cwd=str(project))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["pushed team/MEMORY.md", "pushed team/tests.md"]
    assert "pushed 2 files to acme/widgets" in r.stderr

    r = run_mem("team", "pull", "--dir", str(b), "--json", env=env, cwd=str(project))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["created"] == ["MEMORY.md", "tests.md"] and doc["status"] == "updated" and doc["version"] == 1
    assert set(doc) == {"repo", "url", "status", "version", "checksum", "entry_count", "created", "updated",
                        "unchanged", "skipped", "overwritten_local", "kept_local", "snapshot"}
    assert files(a) == files(b)

    write(b, "team/deploy.md", "tuesdays\n")
    r = run_mem("team", "status", "--dir", str(b), "--check", env=env, cwd=str(project))
    assert r.returncode == 1 and r.stdout == "local-only      team/deploy.md\n"
    r = run_mem("team", "sync", "--dir", str(b), "--jsonl", env=env, cwd=str(project))
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["push"]["uploaded"] == ["deploy.md"] and line["pull"]["status"] == "unchanged"
    r = run_mem("team", "status", "--dir", str(b), "--check", "--json", env=env, cwd=str(project))
    assert r.returncode == 0 and json.loads(r.stdout)["in_sync"] is True
    r = run_mem("team", "pull", "--dir", str(a), env=env, cwd=str(project))
    assert r.stdout == "created team/deploy.md\n"
    r = run_mem("team", "pull", "--dir", str(a), env=env, cwd=str(project))
    assert r.stdout == "" and "not modified" in r.stderr


def test_a_secret_is_named_and_exits_4_while_the_rest_is_pushed(server, project, tmp_path, run_mem):
    a = tmp_path / "a"
    write(a, "team/ok.md", "fine\n")
    write(a, "team/creds.md", f"token: {FAKE_PAT}\n")
    r = run_mem("team", "push", "--dir", str(a), env=_env(server), cwd=str(project))
    assert r.returncode == 4
    assert r.stdout == "pushed team/ok.md\n"
    assert "team/creds.md: not synced: it contains a secret (GitHub PAT, rule github-pat)" in r.stderr
    assert FAKE_PAT not in r.stderr + r.stdout
    assert FAKE_PAT not in all_stored_text(server.db)


def test_repo_flag_and_variable_override_the_remote(server, tmp_path, run_mem):
    a = tmp_path / "a"
    write(a, "team/x.md", "x\n")
    token = server.token("other/thing")
    r = run_mem("team", "push", "--dir", str(a), "--repo", "other/thing", env=_env(server, token), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert server.store.get("other/thing").entries == {"x.md": "x\n"}
    r = run_mem("team", "status", "--dir", str(a), "--json", env=_env(server, token, MEM_TEAM_REPO="other/thing"))
    assert json.loads(r.stdout)["repo"] == "other/thing"


def test_configuration_errors_exit_3_with_one_line(server, project, tmp_path, run_mem):
    a = str(tmp_path / "a")
    r = run_mem("team", "pull", "--dir", a, cwd=str(project))
    assert r.returncode == 3 and r.stderr == ("mem: error: no team server: set MEM_TEAM_URL (or TEAM_MEMORY_SYNC_URL), "
                                              "or pass --url\n")
    r = run_mem("team", "pull", "--dir", a, env=_env(server), cwd=str(tmp_path))  # not a git checkout
    assert r.returncode == 3 and "pass --repo OWNER/REPO" in r.stderr and r.stderr.count("\n") == 1
    r = run_mem("team", "pull", "--dir", a, env=_env(server, "memt_wrong"), cwd=str(project))
    assert r.returncode == 3 and "401" in r.stderr and "MEM_TEAM_TOKEN" in r.stderr
    r = run_mem("team", "push", "--dir", a, env=_env(server, server.token("acme/other")), cwd=str(project))
    assert r.returncode in (0, 3)  # nothing to push needs no request; a push with content is refused:
    write(tmp_path / "a", "team/x.md", "x")
    r = run_mem("team", "push", "--dir", a, env=_env(server, server.token("acme/other")), cwd=str(project))
    assert r.returncode == 3 and "403" in r.stderr
    r = run_mem("team", "pull", "--dir", a, "--url", server.url, env={"TEAM_MEMORY_SYNC_URL": "http://127.0.0.1:1",
                                                                      "MEM_TEAM_TOKEN": server.token()}, cwd=str(project))
    assert r.returncode == 0, r.stderr


def test_an_unreachable_server_exits_70_with_one_line(project, tmp_path, run_mem):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    write(tmp_path / "a", "team/x.md", "x")
    r = run_mem("team", "push", "--dir", str(tmp_path / "a"), "--timeout", "2",
                env={"MEM_TEAM_URL": f"http://127.0.0.1:{port}", "MEM_TEAM_TOKEN": "t"}, cwd=str(project))
    assert r.returncode == 70
    assert r.stderr.startswith("mem: error: cannot reach the team server http://127.0.0.1:") and r.stderr.count("\n") == 1


def test_a_traversal_key_from_the_server_is_refused_with_exit_4(server, project, tmp_path, run_mem):
    with server.store.transaction(write=True) as conn:
        server.store._exec(conn, "INSERT INTO team_repos (repo, version, checksum, last_modified) VALUES (?, 1, 'sha256:x', 'x')", (REPO,))
        server.store._exec(conn, "INSERT INTO team_entries (repo, key, content, checksum, version, updated) "
                                 "VALUES (?, ?, 'evil', 'sha256:x', 1, 'x')", (REPO, "../../../outside.md"))
    r = run_mem("team", "pull", "--dir", str(tmp_path / "b"), env=_env(server), cwd=str(project))
    assert r.returncode == 4
    assert "team/../../../outside.md: not synced: escapes the team directory" in r.stderr
    assert not list(tmp_path.rglob("outside.md"))


def test_team_help_stays_light():
    import subprocess
    import sys

    code = ("import sys\nfrom mem.cli import cli\n"
            "for args in (['team', '--help'], ['team', 'serve', '--help'], ['team', 'token', 'add', '--help']):\n"
            "    cli.main(args, standalone_mode=False)\n"
            "heavy = ('psycopg', 'sqlite3', 'http', 'anthropic', 'httpx', 'yaml')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
