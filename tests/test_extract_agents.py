"""`mem extract --transcript` on sessions recorded from the real Codex CLI and Gemini CLI.

The fixtures were written by the clients themselves (scripts/record_agents.py,
headless against tests/e2e/fakeagents.py on loopback): each plants a fact in the
prompt, one in a file the model read with the client's own tool, and one in the
model's answer. Every one must reach the extraction model (tests/fakeapi.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakeapi import first_user_text
from mem.core.jobs import extract as ex
from mem.core.memdir.store import MemoryDir
from mem.core.transcripts import parse_lines, read_transcript

FIX = Path(__file__).parent / "fixtures"
SESSIONS = {
    "codex": next((FIX / "codex-0.171.0" / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl")),
    "gemini": next((FIX / "gemini-cli-0.61.0" / "home" / ".gemini" / "tmp").rglob("session-*.jsonl")),
    # gemini-cli 0.30 wrote one JSON document per session, rewritten whole
    "gemini-0.30": next((FIX / "gemini-cli-0.30.0" / "home" / ".gemini" / "tmp").rglob("session-*.json")),
}
FACTS = ("blue-heron script; never run it on Fridays", "quartz-7 and it needs 8 GB of RAM",
         "staging database is named tern-42")


@pytest.mark.parametrize("client", sorted(SESSIONS))
def test_every_planted_fact_reaches_the_model(client, fake_api, memdir):
    fake_api.reply_text("Nothing.")
    result = ex.extract(ex.ExtractRequest(MemoryDir(memdir), transcript=str(SESSIONS[client])))
    prompt = first_user_text(fake_api.requests[0]["body"])
    for fact in FACTS:
        assert fact in prompt, (client, fact)
    assert result.session and result.cursor_after
    # the client's own context is not conversation: no system prompt, environment or skills list
    for injected in ("<environment_context>", "<session_context>", "<skills_instructions>", "You are a coding agent"):
        assert injected not in prompt


@pytest.mark.parametrize("client", sorted(SESSIONS))
def test_a_second_run_sends_nothing_new(client, fake_api, memdir):
    fake_api.reply_text("Nothing.")
    ex.extract(ex.ExtractRequest(MemoryDir(memdir), transcript=str(SESSIONS[client])))
    again = ex.extract(ex.ExtractRequest(MemoryDir(memdir), transcript=str(SESSIONS[client])))
    assert again.messages == 0 and len(fake_api.requests) == 1


def test_codex_rollout_reads_as_calls_and_results():
    t = read_transcript(str(SESSIONS["codex"]))
    assert t.format == "codex" and t.session_id == "01a21ab2-ad9e-77b3-99eb-3d27af0807b0"
    (call,) = [b for m in t.messages for b in m.tool_uses()]
    assert (call.name, call.input) == ("exec_command", {"cmd": "cat NOTES.txt"})
    (result,) = [b for m in t.messages for b in m.blocks if b.type == "tool_result"]
    assert result.id == call.id and "quartz-7" in result.text
    assert [m.text for m in t.messages if m.is_human] == [
        "We deploy with the blue-heron script; never run it on Fridays. Read NOTES.txt and remember what it says."]


def test_gemini_recording_is_read_as_the_client_loads_it():
    t = read_transcript(str(SESSIONS["gemini"]))
    assert t.format == "gemini" and t.session_id == "d5588907-163c-47d5-8e0a-9bba212f0e6b"
    # the tool call's message is written twice (before and after its result): read once;
    # its result is written twice (in the call and as a user record): read once
    assert [b.name for m in t.messages for b in m.tool_uses()] == ["read_file"]
    assert sum(b.type == "tool_result" for m in t.messages for b in m.blocks) == 1
    assert [m.role for m in t.messages if m.kind != "meta"] == ["user", "assistant", "user", "assistant"]


def test_gemini_rewind_drops_the_message_and_what_followed():
    lines = [json.dumps({"sessionId": "s", "projectHash": "h", "startTime": "t"}),
             json.dumps({"id": "1", "type": "user", "content": [{"text": "keep me"}]}),
             json.dumps({"id": "2", "type": "user", "content": [{"text": "rewound away"}]}),
             json.dumps({"id": "3", "type": "gemini", "content": "also gone"}),
             json.dumps({"$rewindTo": "2"}),
             json.dumps({"id": "4", "type": "user", "content": "after the rewind"})]
    t = parse_lines(lines)
    assert [m.text for m in t.messages] == ["keep me", "after the rewind"]


HOOKS = FIX / "codex-0.171.0" / "hooks" / "hooks"


def _payload(event: str, **changes: str) -> str:
    payload = json.loads((HOOKS / f"{event}.json").read_text())
    return json.dumps({**payload, **changes})


def test_codex_stop_hook_payload_extracts_its_rollout(fake_api, memdir, run_mem, tmp_path):
    # Codex's Stop payload names the rollout in transcript_path, as Claude Code's names its transcript
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_bytes(SESSIONS["codex"].read_bytes())
    fake_api.reply_text("Nothing.")
    r = run_mem("extract", "--hook", input=_payload("Stop", transcript_path=str(rollout), cwd=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    prompt = first_user_text(fake_api.requests[0]["body"])
    assert all(fact in prompt for fact in FACTS)


def test_codex_user_prompt_hook_gets_the_memory_as_context(memdir, run_mem, tmp_path):
    (memdir / "staging-deploys.md").write_text("---\nname: staging-deploys\ndescription: staging deploys fail on "
                                               "migration timeouts\ntype: project\n---\n\nRerun with MIGRATION_TIMEOUT=900.\n")
    r = run_mem("recall", "--hook", "--offline", input=_payload("UserPromptSubmit", cwd=str(tmp_path)))
    out = json.loads(r.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit" and "MIGRATION_TIMEOUT=900" in out["additionalContext"]


def test_hook_context_codex_recorded_is_meta_not_conversation():
    # what mem's hooks added reaches the model as developer messages; extraction does not read them back
    t = read_transcript(str(next((FIX / "codex-0.171.0" / "hooks" / "home").rglob("rollout-*.jsonl"))))
    meta = "\n".join(b.text for m in t.messages if m.kind == "meta" for b in m.blocks)
    assert "MIGRATION_TIMEOUT=900" in meta
    assert all("MIGRATION_TIMEOUT=900" not in m.text for m in t.messages if m.kind != "meta")


GEMINI_HOOKS = FIX / "gemini-cli-0.61.0" / "hooks"


def _gemini_payload(name: str, home, **changes: str) -> str:
    """A recorded Gemini CLI payload, its transcript_path moved under ``home`` as the client keeps it."""
    payload = json.loads((GEMINI_HOOKS / "hooks" / f"{name}.json").read_text())
    chat = home / ".gemini" / "tmp" / "repo" / "chats" / "session.jsonl"
    chat.parent.mkdir(parents=True, exist_ok=True)
    chat.write_bytes(next((GEMINI_HOOKS / "home").rglob("session-*.jsonl")).read_bytes())
    return json.dumps({**payload, "transcript_path": str(chat), **changes})


def test_gemini_before_agent_is_a_prompt_hook(isolated_env, memdir, run_mem, tmp_path):
    (memdir / "staging-deploys.md").write_text("---\nname: staging-deploys\ndescription: staging deploys fail on "
                                               "migration timeouts\ntype: project\n---\n\nRerun with MIGRATION_TIMEOUT=900.\n")
    payload = _gemini_payload("UserPromptSubmit", isolated_env, cwd=str(tmp_path))
    assert json.loads(payload)["hook_event_name"] == "BeforeAgent"
    r = run_mem("recall", "--hook", "--offline", input=payload)
    assert "MIGRATION_TIMEOUT=900" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"], r.stderr


def test_gemini_session_start_uses_the_claude_layout_not_qwens(isolated_env, run_mem, tmp_path):
    # Gemini CLI stamps payloads with `timestamp`, as qwen-code does: that must not mean ~/.qwen
    r = run_mem("prompt", "--hook", "--mode", "full", input=_gemini_payload("SessionStart", isolated_env, cwd=str(tmp_path)))
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "/.claude/projects/" in context and "/.qwen/" not in context


def test_gemini_after_agent_extracts_without_what_the_hooks_added(isolated_env, fake_api, memdir, run_mem, tmp_path):
    fake_api.reply_text("Nothing.")
    payload = _gemini_payload("Stop", isolated_env, cwd=str(tmp_path))
    assert json.loads(payload)["hook_event_name"] == "AfterAgent"
    r = run_mem("extract", "--hook", input=payload)
    assert r.returncode == 0, r.stderr
    prompt = first_user_text(fake_api.requests[0]["body"])
    assert "User: Why do staging deploys time out?" in prompt and "tern-42" in prompt
    assert "hook_context" not in prompt and "You have a long-term memory" not in prompt


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_session_start_gives_the_full_text_to_clients_that_load_no_memory(client, isolated_env, run_mem, tmp_path):
    # Claude Code's layout is the default, but neither Codex nor Gemini CLI loads its MEMORY.md
    if client == "codex":
        payload = _payload("SessionStart", cwd=str(tmp_path))
    else:
        payload = _gemini_payload("SessionStart", isolated_env, cwd=str(tmp_path))
    context = json.loads(run_mem("prompt", "--hook", input=payload).stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# Memory\n") and "You have a long-term memory" in context


def test_a_half_written_gemini_document_is_an_empty_transcript_not_an_error():
    text = SESSIONS["gemini-0.30"].read_text()
    t = parse_lines(text[: len(text) // 2].splitlines(keepends=True))
    assert (t.format, t.messages, t.lines) == ("empty", [], 0)
    t.require_known("the chat")  # no error: the client may be rewriting it


def test_codex_agents_md_instructions_are_meta():
    # codex-cli 0.171.0 sends the project's AGENTS.md (mem's block included) as a user message
    # beginning "# AGENTS.md instructions for <dir>": Codex's context, not the person's words
    line = {"timestamp": "2026-11-27T02:14:00.000Z", "type": "response_item",
            "payload": {"type": "message", "id": "msg_1", "role": "user", "content": [
                {"type": "input_text", "text": "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n"
                                               "<!-- mem:begin -->\nUse mem.\n<!-- mem:end -->\n</INSTRUCTIONS>"}]}}
    (m,) = parse_lines([json.dumps(line)]).messages
    assert m.kind == "meta" and not m.is_human
