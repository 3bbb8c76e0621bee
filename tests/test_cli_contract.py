"""The contract scripts rely on, checked by running the installed ``mem`` executable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import git, write_memory

SAMPLE = Path(__file__).parent.parent / "examples" / "memory"


@pytest.fixture
def populated(memdir):
    write_memory(memdir, "user_role.md", name="user-role", description="backend engineer", mtime=2_000_000_000)
    write_memory(memdir, "feedback_tests.md", name="tests", description="real DB in tests", type="feedback", mtime=1_900_000_000)
    (memdir / "MEMORY.md").write_text("- [User role](user_role.md) — backend\n- [Tests](feedback_tests.md) — real DB\n")
    return memdir


def test_version_and_help(run_mem):
    r = run_mem("--version")
    assert r.returncode == 0 and r.stdout.startswith("mem ") and r.stderr == ""
    r = run_mem("--help")
    assert r.returncode == 0 and "scan" in r.stdout and "index" in r.stdout and "path" in r.stdout


def test_scan_text_is_the_manifest_on_stdout(run_mem, populated):
    r = run_mem("scan")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "- [user] user_role.md (2033-05-18T03:33:20.000Z): backend engineer",
        "- [feedback] feedback_tests.md (2030-03-17T17:46:40.000Z): real DB in tests",
    ]
    assert r.stderr == ""


def test_scan_json_and_jsonl_fields(run_mem, populated):
    doc = json.loads(run_mem("scan", "--json").stdout)
    assert [d["relpath"] for d in doc] == ["user_role.md", "feedback_tests.md"]
    assert set(doc[0]) >= {"path", "relpath", "name", "description", "type", "mtime", "size", "warnings"}
    assert doc[0]["path"] == str(populated / "user_role.md")
    assert doc[0]["mtime"] == "2033-05-18T03:33:20.000Z" and doc[0]["size"] > 0
    lines = run_mem("scan", "--jsonl").stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["user-role", "tests"]


def test_json_and_jsonl_together_is_a_usage_error(run_mem, populated):
    r = run_mem("scan", "--json", "--jsonl")
    assert r.returncode == 2 and r.stdout == "" and "mutually exclusive" in r.stderr


def test_unknown_option_is_usage_error_2(run_mem):
    r = run_mem("scan", "--bogus")
    assert r.returncode == 2 and r.stdout == "" and "No such option" in r.stderr


def test_scan_check_exit_codes(run_mem, populated):
    r = run_mem("scan", "--check")
    assert r.returncode == 0 and r.stdout == "" and "no problems" in r.stderr
    write_memory(populated, "orphan.md", name="o", description="o", type="bogus")
    r = run_mem("scan", "--check")
    assert r.returncode == 1
    assert "orphan.md: unknown-type:" in r.stdout and "orphan.md: not-indexed:" in r.stdout


def test_secret_in_a_memory_is_reported_not_printed(run_mem, populated):
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    write_memory(populated, "k.md", name="k", description="k", body=f"aws {key}\n")
    r = run_mem("scan", "--check", "--json")
    assert r.returncode == 1
    assert key not in r.stdout + r.stderr
    entry = next(e for e in json.loads(r.stdout) if e["relpath"] == "k.md")
    assert {"code": "secret", "message": "line 7 looks like a secret (AWS Access Token, rule aws-access-token)"} in entry["warnings"]


def test_missing_memory_dir_is_empty_with_a_note(run_mem, tmp_path):
    # A project without memories yet; a missing --dir is a usage error (test_cli_conventions).
    project = tmp_path / "project"
    project.mkdir()
    env = {"MEM_DIR": "", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    r = run_mem("scan", env=env, cwd=str(project))
    assert r.returncode == 0 and r.stdout == "" and "no memory directory" in r.stderr


def test_index_print_is_what_the_agent_gets(run_mem, populated):
    (populated / "MEMORY.md").write_text("\n<!-- note -->\n- [User role](user_role.md) — backend\n\n")
    r = run_mem("index")
    assert r.returncode == 0 and r.stdout == "- [User role](user_role.md) — backend\n"
    doc = json.loads(run_mem("index", "--print", "--json").stdout)
    assert doc["content"] == "- [User role](user_role.md) — backend" and doc["truncated"] is False


def test_index_print_from_stdin(run_mem, populated):
    r = run_mem("index", "-", input="\n".join(f"- l{i}" for i in range(201)))
    assert r.returncode == 0 and "> WARNING: MEMORY.md is 201 lines (limit: 200)." in r.stdout


def test_index_missing_exits_1(run_mem, memdir):
    r = run_mem("index")
    assert r.returncode == 1 and r.stdout == "" and r.stderr.startswith("mem: error: no index at")


def test_index_check_and_rebuild(run_mem, populated):
    (populated / "MEMORY.md").write_text("- [User role](user_role.md) — backend\n- [Gone](gone.md) — x\n")
    r = run_mem("index", "--check")
    assert r.returncode == 1
    assert "MEMORY.md:2: dangling-pointer:" in r.stdout and "not-indexed" in r.stdout
    before = (populated / "MEMORY.md").read_bytes()
    r = run_mem("index", "--rebuild", "--dry-run")
    assert r.returncode == 1 and "-- [Gone](gone.md) — x" in r.stdout and "+- [Tests](feedback_tests.md) — real DB in tests" in r.stdout
    assert (populated / "MEMORY.md").read_bytes() == before
    r = run_mem("index", "--rebuild", "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout) == {
        "path": str(populated / "MEMORY.md"), "changed": True, "written": True,
        "added": ["feedback_tests.md"], "removed": ["gone.md"],
    }
    assert run_mem("index", "--check").returncode == 0


def test_rebuild_refuses_to_write_a_secret(run_mem, populated):
    key = "ghp_" + "x1Y2" * 9
    write_memory(populated, "new.md", name="n", description=f"token {key}")
    before = (populated / "MEMORY.md").read_bytes()
    r = run_mem("index", "--rebuild")
    assert r.returncode == 4 and key not in r.stderr and "github-pat" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (populated / "MEMORY.md").read_bytes() == before


def test_path_json_from_a_git_worktree(run_mem, tmp_path, isolated_env):
    repo = tmp_path / "My Repo_v2.0 é"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    r = run_mem("path", "--json", cwd=str(tmp_path / "wt"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    slug = str(repo).replace("/", "-").replace(" ", "-").replace(".", "-").replace("_", "-").replace("é", "-")
    assert doc["memory_dir"] == f"{isolated_env}/.claude/projects/{slug}/memory/"
    assert doc["rule"] == "default" and doc["auto_memory_enabled"] is True
    assert doc["transcripts_dir"].endswith("-wt")
    assert run_mem("path", cwd=str(tmp_path / "wt")).stdout == doc["memory_dir"] + "\n"


def test_path_disabled_warns_on_stderr(run_mem, tmp_path):
    r = run_mem("path", "--project", str(tmp_path), env={"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"})
    assert r.returncode == 0 and r.stdout.endswith("/memory/\n")
    assert "auto memory is off" in r.stderr


def test_agent_without_scope_is_usage_error(run_mem, tmp_path):
    r = run_mem("path", "--agent", "reviewer", "--project", str(tmp_path))
    assert r.returncode == 2 and "--scope" in r.stderr and r.stdout == ""


def test_closed_pipe_is_quiet(mem_exe, memdir):
    for i in range(300):
        write_memory(memdir, f"m{i}.md", name=f"m{i}", description="x" * 100)
    p = subprocess.run(f"'{mem_exe}' scan --all | head -1", shell=True, capture_output=True, text=True)
    assert p.stdout.startswith("- [user] m")
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr


def test_unexpected_error_is_one_line_unless_debug(run_mem, memdir):
    (memdir / "MEMORY.md").mkdir()
    r = run_mem("index", "--check")
    assert r.returncode == 70
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = run_mem("--debug", "index", "--check")
    assert r.returncode == 70 and "Traceback" in r.stderr


def test_no_color_when_not_a_tty_and_when_asked(run_mem, tmp_path):
    r = run_mem("index", "--dir", str(tmp_path), env={"NO_COLOR": ""})
    assert "\x1b[" not in r.stderr


def test_sample_directory_is_clean(run_mem):
    r = run_mem("scan", "--check", "--dir", str(SAMPLE))
    assert r.returncode == 0, r.stdout
    r = run_mem("index", "--check", "--dir", str(SAMPLE))
    assert r.returncode == 0, r.stdout


def test_python_dash_m_entry_point(memdir):
    import sys

    write_memory(memdir, "a.md", name="a", description="A")
    r = subprocess.run([sys.executable, "-m", "mem", "scan"], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0 and "a.md" in r.stdout


def test_rebuild_appends_an_event(run_mem, populated):
    from mem.core.memdir.events import read_events
    from mem.core.memdir.store import MemoryDir

    (populated / "MEMORY.md").write_text("- [User role](user_role.md) — backend\n")
    assert run_mem("index", "--rebuild").returncode == 0
    (event,) = read_events(MemoryDir(populated))
    assert event["command"] == "index --rebuild" and event["updated"] == ["MEMORY.md"]
    assert event["detail"]["added"] == ["feedback_tests.md"] and event["detail"]["removed"] == [] and event["outcome"] == "ok"
    assert event["detail"]["operation"] == json.loads(run_mem("history", "--json").stdout)[0]["id"]
    assert run_mem("index", "--rebuild").returncode == 0  # nothing to do: no new event
    assert len(read_events(MemoryDir(populated))) == 1


def test_closed_pipe_exits_141_like_a_c_tool(mem_exe, memdir):
    for i in range(2000):
        write_memory(memdir, f"m{i}.md", name=f"m{i}", description="x" * 200)
    p = subprocess.run(["bash", "-c", f"set -o pipefail; '{mem_exe}' scan --all | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert p.stdout.strip() == "141", p.stderr
    assert p.stderr == ""
