"""Every message that promises recovery is true (issue #31 item 3).

A command says `mem undo` takes its change back only when the change was recorded and its undo
would put the files back; with no git on PATH a command that changed memory says history is off.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import write_memory
from test_history import history, remember
from test_relocate import moved
from test_team_support import server, write  # noqa: F401 - fixtures

from mem.core import gitcmd

KEY = "AKIA" + "QWERTYUIOPASDFGH"  # an AWS key id: the history withholds any version holding it


@pytest.fixture
def no_git(tmp_path, monkeypatch):
    """git gone from PATH for the rest of the test (where git is, is looked up once per process)."""
    bin_dir = tmp_path / "no-git-bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    monkeypatch.setenv("PATH", str(bin_dir))
    gitcmd.binary.cache_clear()
    yield
    gitcmd.binary.cache_clear()


def test_restore_promises_its_undo_only_when_that_would_work(run_mem, memdir):
    """Restoring over a version an editor put a secret in: that version is not kept, so no promise."""
    remember(run_mem, "Tabs", "Use tabs.")
    with open(memdir / "tabs.md", "a") as f:
        f.write(f"aws {KEY}\n")  # an outside editor: the version is withheld from the history
    r = run_mem("restore", "tabs.md", "--at", "0s")
    assert r.returncode == 0, r.stderr  # it failed: "version ... is not in the history" (the diff looked for it)
    assert KEY not in (memdir / "tabs.md").read_text()
    assert "takes it back" not in r.stderr and "`mem undo` cannot take it back" in r.stderr, r.stderr
    assert run_mem("undo").returncode == 4  # and it really cannot

    remember(run_mem, "Deploy", "Tuesdays.")
    r = run_mem("undo")
    undo_id = history(run_mem)[0]["id"][:12]  # a plain undo never takes back an undo: the promise names the id
    assert r.returncode == 0 and f"; `mem undo {undo_id}` takes it back)" in r.stderr, r.stderr
    assert run_mem("undo", undo_id).returncode == 0 and (memdir / "deploy.md").exists()  # and it does


def test_an_undo_over_an_index_holding_a_secret_records_it_and_promises_nothing(run_mem, memdir):
    """The undo's MEMORY.md change (withheld before and after) was dropped as a no-op: it said `mem undo` takes it
    back, and undoing it brought reviews.md back without its pointer."""
    remember(run_mem, "Tabs", "Use tabs.")
    remember(run_mem, "Reviews", "Two approvals.")
    with open(memdir / "MEMORY.md", "a") as f:
        f.write(f"- aws {KEY}\n")  # an outside editor: every version of the index from now on is withheld
    r = run_mem("undo", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(c["path"] for c in json.loads(r.stdout)["operation"]["changes"]) == ["MEMORY.md", "reviews.md"]
    assert "takes it back" not in r.stderr and "`mem undo` cannot take it back" in r.stderr, r.stderr
    r = run_mem("undo", json.loads(r.stdout)["operation"]["id"][:12])
    assert r.returncode == 4 and "MEMORY.md: its earlier version is not kept" in r.stderr, r.stderr
    assert not (memdir / "reviews.md").exists()


def test_import_promises_undo_only_when_it_would_work(run_mem, memdir, tmp_path):
    src = tmp_path / "src"
    write_memory(src, "deploy.md", name="deploy", description="deploys", body="Deploys on Fridays.\n")
    (src / "MEMORY.md").write_text("- [Deploy](deploy.md) — deploys\n")
    r = run_mem("import", str(src))
    assert r.returncode == 0 and "; `mem undo` takes it back" in r.stderr, r.stderr

    write_memory(src, "deploy.md", name="deploy", description="deploys", body="Deploys on Mondays.\n")
    with open(memdir / "deploy.md", "a") as f:
        f.write(f"aws {KEY}\n")  # ours now holds a secret an editor put there: not kept by the history
    r = run_mem("import", "--on-conflict", "theirs", str(src))
    assert r.returncode == 0, r.stderr
    assert "takes it back" not in r.stderr and "`mem undo` cannot take it back" in r.stderr, r.stderr
    assert run_mem("undo").returncode == 4  # and it really cannot


def test_import_with_no_git_says_history_is_off(run_mem, memdir, tmp_path, no_git):
    src = tmp_path / "src"
    write_memory(src, "deploy.md", name="deploy", description="deploys")
    r = run_mem("import", str(src))
    assert r.returncode == 0, r.stderr
    assert "takes it back" not in r.stderr and "history is off" in r.stderr, r.stderr


def test_team_pull_with_no_git_says_history_is_off(run_mem, server, tmp_path):  # noqa: F811 - a fixture
    """It printed `mem undo <None>` brings it back (a TypeError) for an unpushed edit it replaced."""
    env = {"MEM_TEAM_URL": server.url, "MEM_TEAM_TOKEN": server.token()}
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "team/x.md", "from a\n")
    r = run_mem("team", "push", "--repo", "acme/widgets", "--dir", str(a), env=env)
    assert r.returncode == 0, r.stderr
    write(b, "team/x.md", "b's own text\n")
    r = run_mem("team", "pull", "--repo", "acme/widgets", "--dir", str(b), env=env)
    assert r.returncode == 0 and "`mem undo " in r.stderr and "brings it back" in r.stderr, r.stderr

    write(b, "team/x.md", "b's second text\n")
    bin_dir = tmp_path / "no-git-bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    gitcmd.binary.cache_clear()
    try:
        r = run_mem("team", "pull", "--no-cache", "--repo", "acme/widgets", "--dir", str(b),
                    env={**env, "PATH": str(bin_dir)})
    finally:
        gitcmd.binary.cache_clear()
    assert r.returncode == 0, r.stderr
    assert "replaced by the server's copy" in r.stderr and "brings it back" not in r.stderr
    assert "history is off" in r.stderr


def test_remember_with_no_git_says_history_is_off(run_mem, memdir, no_git):
    r = remember(run_mem, "Tabs", "Use tabs.")
    assert "history is off" in r.stderr and (memdir / "tabs.md").exists()


def test_promote_with_no_git_says_history_is_off(run_mem, memdir, tmp_path, monkeypatch, no_git):
    monkeypatch.setenv("MEM_USER_DIR", str(tmp_path / "user-memory"))
    write_memory(memdir, "user_shell.md", name="shell", description="fish, not bash")
    (memdir / "MEMORY.md").write_text("- [Shell](user_shell.md) — fish, not bash\n")
    r = run_mem("promote", "user_shell.md")
    assert r.returncode == 0, r.stderr
    assert "history is off" in r.stderr and (tmp_path / "user-memory" / "user_shell.md").exists()


def test_dream_with_no_git_refuses_rather_than_promise(run_mem, memdir, no_git):
    """Its validation and its taking back on failure both need the history: with none it said "nothing to change"."""
    for name in ("a.md", "b.md"):
        write_memory(memdir, name, name="same", description="the same memory twice")
    r = run_mem("dream", "--offline", "--force", "--dry-run")
    assert r.returncode == 1 and "would merge 1 exact duplicate" in r.stderr, r.stderr
    r = run_mem("dream", "--offline", "--force")
    assert r.returncode == 3 and "dream needs git on PATH" in r.stderr, r.stderr
    assert (memdir / "a.md").exists() and (memdir / "b.md").exists()


@pytest.mark.parametrize("command", [("undo",), ("dream", "--undo")])
def test_undo_with_no_git_refuses_as_dream_does(run_mem, tmp_path, monkeypatch, no_git, command):
    """From an empty HOME in a project nobody opened: it exited 70 (an internal error) with "history needs git"."""
    project = tmp_path / "fresh-project"
    project.mkdir()
    monkeypatch.delenv("MEM_DIR", raising=False)
    r = run_mem(*command, cwd=str(project))
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 1 and "undo needs git on PATH" in r.stderr and "Traceback" not in r.stderr
    r = run_mem(*command, "--json", cwd=str(project))
    assert r.returncode == 3, r.stderr
    error = json.loads(r.stdout)["error"]
    assert error["exit_code"] == 3 and error["kind"] == "config" and "undo needs git on PATH" in error["message"]
    assert list(project.iterdir()) == []


def test_relocate_merge_with_no_git_says_history_is_off(run_mem, tmp_path, monkeypatch):
    old, new, memory, new_memory = moved(tmp_path)
    write_memory(new_memory, "project_new.md", name="new", description="written after the move", type="project")
    bin_dir = tmp_path / "no-git-bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    monkeypatch.setenv("PATH", str(bin_dir))
    gitcmd.binary.cache_clear()
    try:
        r = run_mem("relocate", "--dry-run", str(old), str(new))
        assert "through its own history" not in r.stdout and "history is off" in r.stdout, r.stdout
        r = run_mem("relocate", str(old), str(new))
    finally:
        gitcmd.binary.cache_clear()
    assert r.returncode == 0, r.stderr
    assert "history is off" in r.stderr and not memory.exists()


def test_log_and_index_rebuild_with_no_git_say_history_is_off(run_mem, memdir, no_git):
    r = run_mem("log", "shipped the release")
    assert r.returncode == 0 and "history is off" in r.stderr, r.stderr
    (memdir / "MEMORY.md").write_text("- [Gone](gone.md) — a pointer to nothing\n")
    r = run_mem("index", "--rebuild")
    assert r.returncode == 0 and "history is off" in r.stderr, r.stderr
    r = run_mem("index", "--rebuild")  # nothing changed: nothing to say
    assert r.returncode == 0 and "history is off" not in r.stderr, r.stderr


def test_extract_with_no_git_says_history_is_off(run_mem, memdir, fake_api, no_git):
    """Its line had no test: an extract that saved a memory with git gone must not promise an undo."""
    good = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": good})
    fake_api.reply_text("Saved.")
    data = json.dumps({"role": "user", "content": "remember that I prefer tabs"}) + "\n"
    r = run_mem("extract", "--transcript", "-", "--session", "s1", input=data)
    assert r.returncode == 0, r.stderr
    assert (memdir / "user-prefers-tabs.md").exists()
    assert "history is off" in r.stderr and "takes it back" not in r.stderr.replace("cannot take it back", ""), r.stderr
    fake_api.reply_text("Nothing.")  # nothing saved: nothing to say
    data += json.dumps({"role": "user", "content": "and nothing else"}) + "\n"
    r = run_mem("extract", "--transcript", "-", "--session", "s1", input=data)
    assert r.returncode == 0 and "history is off" not in r.stderr, r.stderr
