"""Which file a tool call touched: one answer (messages.tool_file) for every client's tool inputs, in every reader.

The readers: recall's "already touched" files (recall.transcript_facts), the extractor's "the agent
wrote memory itself" (transcripts.memory_writes), `mem evaluate`'s cases (the files read after a
prompt) and the PreToolUse matcher (toolmatch.read_call).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from mem.core import evaluate, toolmatch, transcripts
from mem.core.messages import Block, Message, tool_file
from mem.core.recall import READ_TOOLS, transcript_facts
from mem.core.memdir.store import MemoryDir

FIX = Path(__file__).parent / "fixtures"

#: Every file tool's input shape: (client, tool, the key naming its file). The recorded sessions
#: in tests/fixtures/ hold the first ones (test_recorded_calls_name_their_file checks that they do);
#: the rest are the clients' documented tools no recording has called yet.
SHAPES = [
    ("claude", "Read", "file_path"), ("claude", "Write", "file_path"), ("claude", "Edit", "file_path"),
    ("claude", "MultiEdit", "file_path"), ("claude", "NotebookEdit", "notebook_path"),
    ("qwen", "read_file", "file_path"), ("qwen", "write_file", "file_path"), ("qwen", "edit", "file_path"),
    ("qwen", "read_file", "absolute_path"),  # earlier qwen-code (and Gemini CLI) releases
    ("gemini", "read_file", "file_path"), ("gemini", "write_file", "file_path"), ("gemini", "replace", "file_path"),
    ("codex", "view_image", "path"),  # Codex changes files through exec_command, whose cmd names no key
]


def _recorded_calls() -> list[tuple[str, Block]]:
    files = [*glob.glob(str(FIX / "**" / "*.jsonl"), recursive=True),
             *glob.glob(str(FIX / "gemini-cli-*" / "home" / ".gemini" / "**" / "*.json"), recursive=True)]
    calls = []
    for f in sorted(files):
        try:
            t = transcripts.read_transcript(f)
        except (OSError, ValueError):
            continue
        calls += [(t.format, b) for m in t.messages for b in m.tool_uses()]
    for f in sorted(glob.glob(str(FIX / "**" / "*PreToolUse*.json"), recursive=True)):
        data = json.loads(Path(f).read_text())
        data = json.loads(data["stdin_raw"]) if "stdin_raw" in data else data
        calls.append(("hook", Block("tool_use", "", data["tool_name"], data["tool_input"])))
    return calls


def test_recorded_calls_name_their_file():
    calls = _recorded_calls()
    formats = {fmt for fmt, _ in calls}
    assert {"claude", "qwen", "gemini", "hook"} <= formats
    shapes = {(b.name, k) for _, b in calls for k in b.input}
    file_calls = [b for _, b in calls if b.name in toolmatch.TOOL_KINDS or b.name in transcripts.WRITE_TOOLS]
    assert file_calls
    for b in file_calls:
        if toolmatch.TOOL_KINDS.get(b.name) != "shell":
            assert tool_file(b.input) == b.input["file_path"], b
            assert any(s[1:] == (b.name, "file_path") for s in SHAPES), b.name
    assert ("Bash", "command") in shapes and tool_file({"command": "rm -rf /tmp/x"}) is None


def _write_transcript(path: Path, tool: str, tool_input: dict) -> None:
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "which style?"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": tool, "input": tool_input}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("client, tool, key", SHAPES)
def test_every_reader_gives_the_same_file(tmp_path, client, tool, key):
    memory = tmp_path / "memory"
    memory.mkdir()
    topic = str(memory / "user-prefers-tabs.md")
    tool_input = {key: topic, "content": "x"}
    assert tool_file(tool_input) == topic

    reads, writes = tool in READ_TOOLS, tool in transcripts.WRITE_TOOLS
    message = Message("a1", "assistant", [Block("tool_use", "", tool, tool_input, "t1")])
    assert transcripts.memory_writes([message], MemoryDir(memory)) == ([topic] if writes else [])

    transcript = tmp_path / "s.jsonl"
    _write_transcript(transcript, tool, tool_input)
    assert transcript_facts(str(transcript), None, MemoryDir(memory)).touched == ({topic} if reads or writes else set())

    cases = evaluate._session_cases(str(transcript), MemoryDir(memory), {"user-prefers-tabs.md"})
    assert [c.relevant for c in cases] == ([["user-prefers-tabs.md"]] if reads else [])

    call = toolmatch.read_call(tool, tool_input, str(memory))
    if tool in toolmatch.TOOL_KINDS:
        assert call.paths == ["user-prefers-tabs.md"]


def test_the_file_keys_are_asked_in_one_place():
    """No reader spells the keys itself (each did, in its own order, before messages.tool_file)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "mem"
    spelled = []
    for f in root.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("absolute_path", "notebook_path"):
                spelled.append(str(f.relative_to(root)))
    assert sorted(set(spelled)) == ["core/messages.py"]
