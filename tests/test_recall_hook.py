"""`mem recall --hook` with the payloads the real clients sent, run as the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, write_memory
from mem.core.memdir.store import MemoryDir
from mem import clients
from mem.core import recall
from mem.core.jscompat import len16

HOOKS = FIXTURES / "hooks"
CC_MEMORY = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory/"
QC_MEMORY = "/home/dev/qc-run/home/.qwen/projects/-home-dev-qc-run-repo/memory/"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory and its Claude Code memory dir, with memories; MEM_DIR unset."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Path(clients.resolve(project=str(repo)).memory_dir)
    mem.mkdir(parents=True)
    write_memory(mem, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    write_memory(mem, "user-prefers-tabs.md", name="tabs", description="user wants tabs not spaces in Go code",
                 body="Tabs in Go.\n")
    return repo, mem


def payload(name: str, repo: Path, tmp_path: Path, *, transcript: str | None = None, memory: Path | None = None,
            **changes) -> str:
    """A recorded payload with cwd and transcript_path moved into the test's directories."""
    data = json.loads((HOOKS / name).read_text(encoding="utf-8"))
    data["cwd"] = str(repo)
    if transcript is not None:
        text = (HOOKS / transcript).read_text(encoding="utf-8")
        if memory is not None:  # the client wrote into its memory dir: make that ours
            for old in (CC_MEMORY, QC_MEMORY):
                text = text.replace(old, str(memory).rstrip("/") + "/")
        t = tmp_path / Path(transcript).name
        t.write_text(text, encoding="utf-8")
        data["transcript_path"] = str(t)
    else:
        data["transcript_path"] = str(tmp_path / "no-transcript.jsonl")
    data.update(changes)
    return json.dumps(data)


def context_of(p: subprocess.CompletedProcess, event: str = "UserPromptSubmit") -> str:
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


# --- Claude Code ---------------------------------------------------------------


def test_claude_user_prompt_surfaces_the_relevant_memory(project, tmp_path, run_mem):
    repo, mem = project
    # Claude Code 2.1.197 (its transcript says so) passes hook context unescaped: the exact wrapping
    p = run_mem("recall", "--hook", "--offline", input=payload(
        "claude-code/UserPromptSubmit.json", repo, tmp_path, transcript="claude-code/transcript-05.jsonl",
        prompt="the staging deploy failed with a migration timeout"))
    ctx = context_of(p)
    assert ctx == recall.reminder(f"Memory (saved today): {mem / 'staging.md'}:", (mem / "staging.md").read_text())
    assert p.stderr == ""


def test_the_session_id_keeps_the_budget(project, tmp_path, run_mem):
    repo, mem = project
    text = payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt="staging deploy migration timeout again")
    assert context_of(run_mem("recall", "--hook", "--offline", input=text))
    again = run_mem("recall", "--hook", "--offline", input=text)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    sid = json.loads(text)["session_id"]
    assert os.path.exists(recall.session_file(MemoryDir(mem), sid))


def test_after_compaction_memories_may_come_again(project, tmp_path, run_mem):
    repo, mem = project
    text = payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt="staging deploy migration timeout")
    sid = json.loads(text)["session_id"]
    assert context_of(run_mem("recall", "--hook", "--offline", input=text))
    start = payload("claude-code/SessionStart-compact.json", repo, tmp_path, session_id=sid)
    p = run_mem("recall", "--hook", input=start)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    assert not os.path.exists(recall.session_file(MemoryDir(mem), sid))
    assert context_of(run_mem("recall", "--hook", "--offline", input=text))
    # other SessionStart sources leave the session alone
    run_mem("recall", "--hook", input=payload("claude-code/SessionStart-startup.json", repo, tmp_path, session_id=sid))
    assert os.path.exists(recall.session_file(MemoryDir(mem), sid))


@pytest.mark.process  # the hook's deadline counts from the process's start
def test_recent_tools_and_files_already_read_come_from_the_transcript(project, tmp_path, run_mem, fake_api):
    repo, mem = project
    # In this recorded session Claude wrote user-prefers-tabs.md with Write: it is in its context already.
    fake_api.reply_text('{"selected_memories": ["staging.md"]}')
    p = run_mem("recall", "--hook", "--always-ask", input=payload(
        "claude-code/UserPromptSubmit-05.json", repo, tmp_path, transcript="claude-code/transcript-05.jsonl",
        memory=mem, prompt="which indentation do I want, and how do staging deploys go"))
    assert "staging.md" in context_of(p)
    manifest_block, query_block = fake_api.requests[0]["body"]["messages"][0]["content"]
    assert query_block["text"].endswith("\n\nRecently used tools: Write")
    content = manifest_block["text"]
    assert "user-prefers-tabs.md" not in content and "staging.md" in content


def test_one_word_and_empty_prompts_surface_nothing(project, tmp_path, run_mem):
    repo, _ = project
    for prompt in ("staging", "", "   "):
        p = run_mem("recall", "--hook", "--offline",
                    input=payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt=prompt))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), prompt


def test_auto_memory_off_means_no_recall(project, tmp_path, run_mem):
    repo, _ = project
    text = payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt="staging deploy migration timeout")
    p = run_mem("recall", "--hook", "--offline", input=text, env={"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"})
    assert (p.returncode, p.stdout) == (0, "")


def test_five_large_memories_stay_under_claudes_hook_limit(project, tmp_path, run_mem):
    repo, mem = project
    for i in range(5):
        body = "\n".join(f"rollout checklist step {j}: " + "z" * 80 for j in range(80)) + "\n"
        write_memory(mem, f"rollout{i}.md", name=f"rollout-{i}", description=f"rollout checklist part {i}",
                     body=body, mtime=time.time() - 30 * 86400)
    p = run_mem("recall", "--hook", "--offline", input=payload(
        "claude-code/UserPromptSubmit.json", repo, tmp_path, transcript="claude-code/transcript-05.jsonl",
        prompt="walk me through the rollout checklist"))
    ctx = context_of(p)
    assert len16(ctx) < 10_000
    assert ctx.count("<system-reminder>") == 5
    for i in range(5):
        path = mem / f"rollout{i}.md"
        assert f"Memory: {path}:" in ctx
        assert f"truncated (hook output limit). Use the Read tool to view the complete file at: {path}" in ctx
    assert "This memory is 30 days old." in ctx
    # and the whole stdout stays under the limit too, JSON escaping included
    assert len(p.stdout) < 11_000


# --- qwen-code ------------------------------------------------------------------


@pytest.fixture
def qwen_project(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Path(clients.resolve(project=str(repo), layout="qwen").memory_dir)
    mem.mkdir(parents=True)
    write_memory(mem, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    # Claude's memory dir for the same project exists too: the payload decides which one is meant
    claude = Path(clients.resolve(project=str(repo), layout="claude").memory_dir)
    claude.mkdir(parents=True)
    write_memory(claude, "other.md", name="other", description="staging deploys in the other client", body="x\n")
    return repo, mem


def test_qwen_payload_uses_the_qwen_memory_dir(qwen_project, tmp_path, run_mem):
    repo, mem = qwen_project
    p = run_mem("recall", "--hook", "--offline", input=payload(
        "qwen-code/UserPromptSubmit.json", repo, tmp_path, transcript="qwen-code/transcript-05.jsonl",
        prompt="the staging deploy failed with a migration timeout"))
    ctx = context_of(p)
    assert f"Memory (saved today): {mem}/staging.md:" in ctx
    assert "other.md" not in ctx


def test_qwen_later_calls_of_a_turn_surface_nothing(qwen_project, tmp_path, run_mem):
    repo, _ = qwen_project
    p = run_mem("recall", "--hook", "--offline", input=payload(
        "qwen-code/UserPromptSubmit-05-later.json", repo, tmp_path, transcript="qwen-code/transcript-05.jsonl"))
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_qwen_transcript_gives_recent_tools(qwen_project, tmp_path):
    repo, mem = qwen_project
    t = tmp_path / "t.jsonl"
    t.write_text((HOOKS / "qwen-code/transcript-05.jsonl").read_text().replace(QC_MEMORY, str(mem) + "/"))
    facts = recall.transcript_facts(str(t), "something new to ask about", MemoryDir(mem))
    assert facts.recent_tools == ["write_file", "read_file"]
    assert facts.touched == {str(mem / "user-prefers-tabs.md"), str(mem / "MEMORY.md")}
    # the prompt may already be in the transcript: then the tools before it count
    facts = recall.transcript_facts(str(t), "remember that I prefer tabs", MemoryDir(mem))
    assert facts.recent_tools == ["write_file", "read_file"]


def test_transcript_tools_stop_at_the_previous_prompt(tmp_path):
    lines = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "Grep", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "ok"}]},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "2", "name": "Bash", "input": {}},
                                          {"type": "tool_use", "id": "3", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "2", "content": "boom", "is_error": True},
                                     {"type": "tool_result", "tool_use_id": "3", "content": "ok"}]},
    ]
    t = tmp_path / "t.jsonl"
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert recall.transcript_facts(str(t), "third question", MemoryDir(tmp_path / "m")).recent_tools == ["Read"]


# --- never break the prompt ------------------------------------------------------------


@pytest.mark.parametrize("stdin, args", [
    ("{not json", []),
    ("", []),
    ("[1, 2]", []),
    ('{"hook_event_name": "UserPromptSubmit", "prompt": "hi there"}', []),  # no session_id
    ('{"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "relative/dir", "prompt": "a b"}', []),
    ('{"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/", "prompt": 5}', []),
    (None, ["--bogus-option"]),
    (None, ["--limit", "0"]),
    (None, ["--json"]),
    (None, ["some", "query"]),
])
def test_any_failure_exits_zero_with_one_line(project, tmp_path, run_mem, stdin, args):
    repo, _ = project
    if stdin is None:
        stdin = payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt="staging deploy timeout")
    p = run_mem("recall", "--hook", *args, input=stdin)
    assert p.returncode == 0
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("mem: hook: "), p.stderr


def test_a_stop_payload_is_not_for_recall(project, tmp_path, run_mem):
    repo, _ = project
    p = run_mem("recall", "--hook", input=payload("claude-code/Stop.json", repo, tmp_path))
    assert (p.returncode, p.stdout) == (0, "")
    assert "hook event Stop is not handled here" in p.stderr


@pytest.mark.parametrize("flags", [["--offline"], []], ids=["offline", "no-key"])
def test_hook_mode_without_the_model_does_not_import_the_sdk(project, tmp_path, flags):
    repo, _ = project
    probe = (
        "import sys\n"
        f"sys.argv = ['mem', 'recall', '--hook', *{flags!r}]\n"
        "from mem.cli import cli\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('HEAVY=' + ','.join(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx')))\n"
    )
    text = payload("claude-code/UserPromptSubmit.json", repo, tmp_path, prompt="the staging deploy migration timeout")
    p = subprocess.run([sys.executable, "-c", probe], input=text, capture_output=True, text=True)
    assert "Memory (saved today)" in p.stdout
    assert p.stderr.strip().endswith("HEAVY=")


# --- the payload reader other hooks share --------------------------------------------------


def test_payloads_of_both_clients_parse():
    from mem.core import hooks

    claude = hooks.parse_payload((HOOKS / "claude-code/UserPromptSubmit.json").read_bytes())
    assert (claude.client, claude.hook_event_name, claude.prompt) == ("claude", "UserPromptSubmit", "hello hooks json")
    assert claude.session_id == "7b81b00d-454e-470b-8bbf-c40d037b7677" and claude.cwd == "/home/dev/cc-run/repo"
    assert claude.transcript_path.endswith(".jsonl") and claude.raw["prompt_id"]
    start = hooks.parse_payload((HOOKS / "claude-code/SessionStart-compact.json").read_text())
    assert (start.source, start.prompt, start.client) == ("compact", None, "claude")
    qwen = hooks.parse_payload((HOOKS / "qwen-code/UserPromptSubmit-05-later.json").read_text())
    assert (qwen.client, qwen.prompt) == ("qwen", "")
    # qwen-code's payloads are recognised by their shape too, wherever the transcript is
    data = json.loads((HOOKS / "qwen-code/UserPromptSubmit.json").read_text())
    data["transcript_path"] = "/elsewhere/t.jsonl"
    assert hooks.parse_payload(json.dumps(data)).client == "qwen"


def test_payload_validation():
    from mem.core import hooks
    from mem.core.errors import UsageError

    ok = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp", "prompt": "x"}
    assert hooks.parse_payload(json.dumps(ok), events=("UserPromptSubmit",)).cwd == "/tmp"
    no_cwd = dict(ok)
    del no_cwd["cwd"]
    assert hooks.parse_payload(json.dumps(no_cwd)).cwd == os.getcwd()
    for bad, message in (
        ("", "no hook payload"), ("{", "not JSON"), ("[]", "not a JSON object"),
        (json.dumps({**ok, "session_id": ""}), "no session_id"),
        (json.dumps({**ok, "cwd": "rel"}), "not an absolute path"),
        (json.dumps({**ok, "prompt": ["x"]}), "prompt is not a string"),
        (json.dumps({**ok, "hook_event_name": "Stop"}), "hook event Stop is not handled here"),
    ):
        with pytest.raises(UsageError, match=message):
            hooks.parse_payload(bad, events=("UserPromptSubmit",))
    with pytest.raises(UsageError, match="no cwd"):
        hooks.parse_payload(json.dumps(no_cwd), require=("cwd",))


def test_hook_output():
    from mem.core import hooks

    assert hooks.render_output("UserPromptSubmit", "") == ""
    out = json.loads(hooks.render_output("SessionStart", "<system-reminder>\nx — ü\n</system-reminder>"))
    assert out == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                          "additionalContext": "<system-reminder>\nx — ü\n</system-reminder>"}}


def test_the_prompt_flow_runs_in_process_with_the_environment_and_clock_it_is_given(memdir, tmp_path):
    # The flow asks its caller's Env, not os.environ and the wall clock: the memory directory comes
    # from the given MEM_DIR (not the process's), the memory's age and the session's record from the clock.
    from mem.core.hooks import HookPayload
    from mem.core.hooks.recall import RecallOptions, on_prompt
    from mem.env import Env

    saved = 1_700_000_000.0
    other = tmp_path / "other-memories"
    write_memory(other, "deploy.md", name="deploy", description="how we deploy to staging", type="project",
                 mtime=saved)
    write_memory(memdir, "deploy-here.md", name="deploy", description="how we deploy to staging", type="project")
    environ = {**os.environ, "MEM_DIR": str(other)}
    clock = lambda: saved + 3 * 86400 + 60  # noqa: E731 - three days and a minute after it was saved
    payload = HookPayload("s1", None, str(tmp_path), "UserPromptSubmit", prompt="how do we deploy to staging?")
    result = on_prompt(payload, {}, RecallOptions(offline=True), Env(environ, cwd=str(tmp_path), clock=clock))
    context = json.loads(result.output)["hookSpecificOutput"]["additionalContext"]
    assert f"Memory: {other / 'deploy.md'}:" in context and "deploy-here.md" not in context
    assert "3 days old" in context
    state = json.loads(Path(recall.session_file(MemoryDir(other), "s1")).read_text())
    assert state["surfaced"][0]["time"].startswith("2023-11-17T22:14")  # the clock's time, not now's
