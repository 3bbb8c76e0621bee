"""One rule for "does memory apply here?" (mem/clients/), asked alike by recall, prompt, context and extract.

The real clients: Claude Code with its auto memory off (CLAUDE_CODE_DISABLE_AUTO_MEMORY=1) loads
no MEMORY.md, recalls nothing and extracts nothing, for its own directory and for its subagents'
memory alike (reference: isAutoMemoryEnabled gates recall, extraction and agent memory). Its
switch does not govern qwen-code, whose own switch is ``memory.enableManagedAutoMemory`` in its
settings (qwen-code 0.24.4: it gates recall and extraction), nor a directory of the user's own
named with --dir or MEM_DIR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_memory
from mem import clients

OFF = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
PROMPT = "staging deploy migration timeout"


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """A project with memories in Claude Code's directory, a subagent's, qwen-code's and one of the user's own."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    found = {
        "claude": Path(clients.resolve(project=str(repo), layout="claude").memory_dir),
        "agent": repo / ".claude" / "agent-memory" / "rev",
        "qwen": Path(clients.resolve(project=str(repo), layout="qwen").memory_dir),
        "own": tmp_path / "own",
    }
    for name, d in found.items():
        write_memory(d, "staging.md", name="staging", description=f"{name}: staging deploys fail on migration timeouts",
                     type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
        (d / "MEMORY.md").write_text(f"- [Staging]({'staging.md'}) — {name} staging deploys\n")
    return repo, found


def hook(repo: Path, event: str, client: str = "claude", **extra) -> str:
    data = {"session_id": "s-1", "cwd": str(repo), "hook_event_name": event,
            "transcript_path": str(repo / "no-transcript.jsonl")}
    if client == "qwen":  # what tells mem a payload is qwen-code's
        data["transcript_path"] = str(Path.home() / ".qwen/projects/x/chats/s-1.jsonl")
        data["timestamp"] = "2026-11-27T00:00:00.000Z"
    if event == "UserPromptSubmit":
        data["prompt"] = PROMPT
    if event == "SessionStart":
        data["source"] = "startup"
    data.update(extra)
    return json.dumps(data)


def recalled(run_mem, repo, *opts, client="claude", env=OFF) -> str:
    p = run_mem("recall", "--hook", "--offline", *opts, input=hook(repo, "UserPromptSubmit", client), env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def started(run_mem, repo, *opts, client="claude", env=OFF) -> str:
    p = run_mem("prompt", "--hook", *opts, input=hook(repo, "SessionStart", client), env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"] if p.stdout else ""


def context(run_mem, repo, *opts, env=OFF):
    return run_mem("context", "--project", str(repo), *opts, env=env)


def extract_stderr(run_mem, repo, *opts, client="claude", env=OFF) -> str:
    p = run_mem("extract", "--hook", *opts, input=hook(repo, "Stop", client), env=env)
    assert p.returncode == 0 and p.stdout == ""
    return p.stderr


#: (case, the memory-directory options, the client, the environment, whether memory applies)
CASES = [
    ("own dir, Claude's auto memory off", ("--dir", "{own}"), "claude", OFF, "own"),
    ("subagent, Claude's auto memory off", ("--agent", "rev", "--scope", "project"), "claude", OFF, None),
    ("Claude's own, its auto memory off", (), "claude", OFF, None),
    ("qwen-code's, Claude's auto memory off", (), "qwen", OFF, "qwen"),
    ("qwen-code's, its own switch off", (), "qwen", {}, None),
    ("Claude's own, auto memory on", (), "claude", {}, "claude"),
    ("subagent, auto memory on", ("--agent", "rev", "--scope", "project"), "claude", {}, "agent"),
]
IDS = [c[0] for c in CASES]


@pytest.fixture(params=CASES, ids=IDS)
def case(request, dirs):
    name, opts, client, env, applies = request.param
    repo, d = dirs
    if name.endswith("its own switch off"):
        (repo / ".qwen").mkdir()
        (repo / ".qwen" / "settings.json").write_text(
            '{\n  // kept off for this repository\n  "memory": {"enableManagedAutoMemory": false}\n}\n')
    opts = tuple(o.format(own=d["own"]) for o in opts)
    return repo, opts, client, env, applies


def test_recall(case, run_mem):
    repo, opts, client, env, applies = case
    out = recalled(run_mem, repo, *opts, client=client, env=env)
    assert (f"{applies}: staging" in out) if applies else out == ""


def test_prompt_at_session_start(case, run_mem):
    repo, opts, client, env, applies = case
    out = started(run_mem, repo, *opts, client=client, env=env)
    assert out != "" if applies else out == ""


def test_context(case, run_mem):
    repo, opts, client, env, applies = case
    layout = ("--layout", "qwen") if client == "qwen" else ()
    c = context(run_mem, repo, *opts, *layout, env=env)
    if "--agent" in opts:  # a subagent's MEMORY.md is in that agent's own prompt, not the session's context
        assert "staging deploys" not in c.stdout and "agent's own prompt" in c.stderr
    elif applies:
        assert f"{applies} staging deploys" in c.stdout and "left out" not in c.stderr
    else:
        assert "staging deploys" not in c.stdout and "left out" in c.stderr


def test_extract_at_stop(case, run_mem):
    repo, opts, client, env, applies = case
    err = extract_stderr(run_mem, repo, *opts, client=client, env=env)
    assert ("auto memory" not in err) if applies else "auto memory is turned off" in err


def test_path_and_status_say_the_same(case, run_mem):
    repo, opts, client, env, applies = case
    layout = ("--layout", "qwen") if client == "qwen" else ()
    p = run_mem("path", "--project", str(repo), *opts, *layout, env=env)
    assert ("auto memory is off here" in p.stderr) is not bool(applies), p.stderr
    data = json.loads(run_mem("path", "--project", str(repo), *opts, *layout, "--json", env=env).stdout)
    assert data["memory_on"] is bool(applies)
    # the older names give the same answer, whichever client's directory it is (they once held Claude Code's switch)
    assert (data["auto_memory_enabled"], data["auto_memory_reason"]) == (data["memory_on"], data["memory_on_reason"])
    status = json.loads(run_mem("status", "--project", str(repo), *opts, *layout, "--json", env=env).stdout)
    assert (status["auto_memory_enabled"], status["auto_memory_reason"]) == (data["memory_on"], data["memory_on_reason"])
