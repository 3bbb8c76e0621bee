"""The transcript reader against what the real clients wrote (tests/fixtures/transcripts)."""

from __future__ import annotations

import json
from pathlib import Path

from mem.core import transcripts as t
from mem.core.memdir.store import MemoryDir

FIX = Path(__file__).parent / "fixtures" / "transcripts"
CC_MEMORY = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory/"
QC_MEMORY = "/home/dev/qc-run/home/.qwen/projects/-home-dev-qc-run-repo/memory"


def read(name: str) -> t.Transcript:
    return t.read_transcript(str(FIX / name))


def shape(tr: t.Transcript) -> list[tuple]:
    return [(m.role, m.kind, [b.type for b in m.blocks]) for m in tr.messages]


# --- Claude Code -----------------------------------------------------------------------------------


def test_claude_hello_keeps_the_conversation_and_drops_bookkeeping():
    tr = read("claude-code-01-hello.jsonl")
    assert tr.format == "claude"
    assert tr.session_id == "21eb5647-26b2-499c-b27b-2abedddc50f6"
    assert tr.skipped_lines == 0
    # queue-operation / last-prompt lines (no uuid) and attachments carry no conversation
    assert shape(tr) == [("user", "message", ["text"]), ("assistant", "message", ["text"])]
    assert tr.messages[0].text == "hello" and tr.messages[0].is_human
    assert tr.messages[1].text == "Hello from the fake model."
    assert tr.messages[1].message_id and tr.messages[1].usage["output_tokens"] >= 0
    assert tr.last_uuid == "a07c730e-52e8-4f9d-81a5-876373cb6ff5"


def test_claude_tool_use_one_block_per_line_sharing_the_message_id():
    tr = read("claude-code-05-tool-use-write-memory.jsonl")
    assert shape(tr) == [
        ("user", "message", ["text"]),
        ("assistant", "message", ["text"]),
        ("assistant", "message", ["tool_use"]),
        ("user", "tool_result", ["tool_result"]),
        ("assistant", "message", ["tool_use"]),
        ("user", "tool_result", ["tool_result"]),
        ("assistant", "message", ["text"]),
    ]
    text, use = tr.messages[1], tr.messages[2]
    assert text.message_id == use.message_id  # one API message written as two lines
    call = use.tool_uses()[0]
    assert call.name == "Write"
    assert call.input["file_path"] == CC_MEMORY + "user-prefers-tabs.md"
    result = tr.messages[3].blocks[0]
    assert result.id == call.id and not result.is_error
    assert result.text.startswith("File created successfully at: ")
    assert not tr.messages[3].is_human  # a tool result is not a prompt someone typed
    assert [m.line for m in tr.messages] == [5, 9, 10, 11, 12, 13, 14]


def test_claude_memory_writes_and_successful_tools():
    tr = read("claude-code-05-tool-use-write-memory.jsonl")
    writes = t.memory_writes(tr.messages, MemoryDir(CC_MEMORY))
    assert writes == [CC_MEMORY + "user-prefers-tabs.md", CC_MEMORY + "MEMORY.md"]
    assert t.memory_writes(tr.messages, MemoryDir("/home/dev/cc-run/home/.claude/projects/other/memory")) == []
    # a sibling directory whose name extends the memory dir's is not inside it
    assert t.memory_writes(tr.messages, MemoryDir(CC_MEMORY.rstrip("/")[:-1])) == []
    assert t.recent_successful_tools(tr.messages) == ["Write"]


def test_claude_error_result_is_marked():
    tr = read("claude-code-07-bash-denied.jsonl")
    result = next(b for m in tr.messages for b in m.blocks if b.type == "tool_result")
    assert result.is_error and result.text == "This command requires approval"
    assert t.recent_successful_tools(tr.messages) == []  # Bash failed


def test_claude_compact_boundary_summary_and_slash_command():
    tr = read("claude-code-06-compact.jsonl")
    assert shape(tr)[7:] == [
        ("system", "compact_boundary", ["text"]),
        ("user", "compact_summary", ["text"]),
        ("user", "meta", ["text"]),
        ("user", "command", ["text"]),
        ("user", "command", ["text"]),
    ]
    boundary = tr.messages[7]
    assert boundary.uuid == "bbe7f014-190c-4f34-a02c-616dca800dde"
    assert t.command_text(tr.messages[10]) == "/compact keep memory notes"
    assert t.command_text(tr.messages[11]) is None  # its output
    # the slash command and its output are not prompts a person typed
    assert [m.uuid[:8] for m in tr.messages if m.is_human] == ["fc5fe802"]
    # messages after the last pre-compaction message: the compaction and what followed
    after = tr.after("2f99db88-e0b7-4f79-8878-dc4a99ad5f87")
    assert [m.kind for m in after] == ["compact_boundary", "compact_summary", "meta", "command", "command"]
    # a cursor whose message is gone means everything
    assert tr.after("not-in-this-file") == tr.messages
    text = t.render_for_model(after)
    assert text.splitlines()[0] == "[earlier conversation was compacted]"
    assert "Summary of earlier conversation: This session is being continued" in text
    assert "User ran the command /compact keep memory notes" in text
    assert "local-command-caveat" not in text and "local-command-stdout" not in text


# --- qwen-code -------------------------------------------------------------------------------------


def test_qwen_hello_and_system_lines():
    tr = read("qwen-code-01-hello.jsonl")
    assert tr.format == "qwen"
    assert tr.session_id == "44380d2f-def3-4529-9b0d-cf3c82bd8a0f"
    # attribution_snapshot / ui_telemetry system lines are dropped
    assert shape(tr) == [("user", "message", ["text"]), ("assistant", "message", ["text"])]
    assert tr.messages[1].text == "Hello from the fake model."


def test_qwen_hook_context_part_stays_in_the_user_message():
    tr = read("qwen-code-04-hooks-json.jsonl")
    first = tr.messages[0]
    assert [b.text.split(":")[0] for b in first.blocks] == ["hello hooks json", "HOOK_CTX_JSON_UserPromptSubmit"]


def test_qwen_function_calls_and_responses():
    tr = read("qwen-code-05-tool-use-write-memory.jsonl")
    assert shape(tr) == [
        ("user", "message", ["text", "text"]),
        ("assistant", "message", ["text", "tool_use"]),
        ("user", "tool_result", ["tool_result"]),
        ("assistant", "message", ["tool_use"]),
        ("user", "tool_result", ["tool_result"]),
        ("assistant", "message", ["tool_use"]),
        ("user", "tool_result", ["tool_result"]),
        ("assistant", "message", ["text"]),
    ]
    call = tr.messages[1].tool_uses()[0]
    assert call.name == "write_file" and call.id == "call_5d0fef57de91458090bd948f"
    assert call.input["content"].startswith("---\nname: user-prefers-tabs\n")
    response = tr.messages[2].blocks[0]
    assert response.id == call.id and response.name == "write_file"
    assert response.text.startswith("Successfully created and wrote to new file:")
    assert t.memory_writes(tr.messages, MemoryDir(QC_MEMORY)) == [QC_MEMORY + "/user-prefers-tabs.md", QC_MEMORY + "/MEMORY.md"]
    assert tr.messages[1].usage["promptTokenCount"] == 10190
    rendered = t.render_for_model(tr.messages)
    assert "Assistant called write_file: " in rendered and "Tool result: Successfully created" in rendered


def test_qwen_format_is_not_fooled_by_a_leading_system_line():
    lines = (FIX / "qwen-code-01-hello.jsonl").read_text().splitlines()
    system = next(line for line in lines if '"type":"system"' in line)
    tr = t.parse_lines([system, *lines])
    assert tr.format == "qwen"
    assert len(tr.messages) == 2


# --- plain JSONL and damaged input -----------------------------------------------------------------


def test_plain_role_content_lines():
    lines = [
        json.dumps({"role": "user", "content": "I'm the on-call SRE this week"}),
        json.dumps({"role": "assistant", "content": [{"type": "text", "text": "Noted."},
                                                      {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}]}),
        json.dumps({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}]}),
        json.dumps({"role": "model", "parts": [{"text": "done"}]}),
    ]
    tr = t.parse_lines(lines)
    assert tr.format == "plain"
    assert [(m.role, [b.type for b in m.blocks]) for m in tr.messages] == [
        ("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"]), ("assistant", ["text"]),
    ]
    assert all(m.uuid is None for m in tr.messages)


def test_malformed_lines_are_skipped_not_fatal():
    good = (FIX / "claude-code-01-hello.jsonl").read_bytes().splitlines()
    damaged = [b"{not json", b"[1, 2]", b"", *good, b'{"type": "user", "uuid": "x", "message": {"content": 7}}',
               good[-1][: len(good[-1]) // 2]]  # a line cut while being written
    tr = t.parse_lines(damaged)
    assert tr.skipped_lines == 4  # not JSON, not an object, content of the wrong kind, cut short
    assert [m.text for m in tr.messages][:2] == ["hello", "Hello from the fake model."]


def test_render_keeps_the_newest_part_within_budget():
    lines = [json.dumps({"role": "user", "content": f"message {i} " + "x" * 100}) for i in range(200)]
    text = t.render_for_model(t.parse_lines(lines).messages, max_chars=2_000)
    assert text.startswith("[…earlier messages omitted]")
    assert "message 199" in text and "message 0 " not in text
    assert len(text) < 2_100
