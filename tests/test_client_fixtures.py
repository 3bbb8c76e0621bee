"""Both generations of recorded clients: Claude Code 2.1.197 / 2.1.330 and qwen-code 0.15.10 / 0.24.4.

The older payloads are in tests/fixtures/hooks (from the team's shared recordings), the current
ones in tests/fixtures/<client>-code-<version>/ (scripts/record_fixtures.py). Paths in both were
moved to /home/dev/cc-run (Claude Code) and /home/dev/qc-run (qwen-code).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from mem.core import hooks, recall
from mem.core.memdir.store import MemoryDir

CC330 = FIXTURES / "claude-code-2.1.330"
QC0244 = FIXTURES / "qwen-code-0.24.4"
CC_MEMORY = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory"
QC_MEMORY = "/home/dev/qc-run/home/.qwen/projects/-home-dev-qc-run-repo/memory"

# (generation, payload file, its transcript, client, version the transcript tells, escapes hook context)
PROMPTS = [
    ("claude-2.1.197", FIXTURES / "hooks/claude-code/UserPromptSubmit-05.json",
     FIXTURES / "hooks/claude-code/transcript-05.jsonl", "claude", (2, 1, 197), False),
    ("claude-2.1.330", CC330 / "02-write-memory/hooks/001-UserPromptSubmit.json",
     CC330 / "02-write-memory/transcript.jsonl", "claude", (2, 1, 330), True),
    ("qwen-0.15.10", FIXTURES / "hooks/qwen-code/UserPromptSubmit-05-first.json",
     FIXTURES / "hooks/qwen-code/transcript-05.jsonl", "qwen", (0, 15, 10), True),
    ("qwen-0.24.4", QC0244 / "02-write-memory/hooks/002-UserPromptSubmit.json",
     QC0244 / "02-write-memory/transcript.jsonl", "qwen", (0, 24, 4), True),
]


def load(path: Path, transcript: Path | None) -> hooks.HookPayload:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["transcript_path"] = str(transcript) if transcript else "/nonexistent/no-transcript.jsonl"
    return hooks.parse_payload(json.dumps(data), events=("UserPromptSubmit",))


@pytest.mark.parametrize("gen, path, transcript, client, version, escapes", PROMPTS, ids=[p[0] for p in PROMPTS])
def test_payloads_of_both_generations(gen, path, transcript, client, version, escapes):
    payload = load(path, transcript)
    assert payload.client == client
    assert payload.prompt and payload.session_id and payload.cwd.startswith("/home/dev/")
    assert hooks.client_version(payload) == version
    assert hooks.escapes_context(payload) is escapes
    # the first prompt of a session comes before its transcript: the version is unknown, tags are not sent
    first = load(path, None)
    assert hooks.client_version(first) is None and hooks.escapes_context(first)


def test_qwen_024_is_told_from_claude_without_its_transcript_path():
    # qwen-code 0.24 sends prompt_id and permission_mode as Claude Code does; its timestamp tells it apart
    data = json.loads((QC0244 / "01-hooks/hooks/002-UserPromptSubmit.json").read_text())
    assert {"prompt_id", "permission_mode", "timestamp"} <= set(data)
    data["transcript_path"] = "/somewhere/else/session.jsonl"
    assert hooks.parse_payload(json.dumps(data)).client == "qwen"
    claude = json.loads((CC330 / "01-hooks/hooks/001-UserPromptSubmit.json").read_text())
    assert "timestamp" not in claude and hooks.parse_payload(json.dumps(claude)).client == "claude"


@pytest.mark.parametrize("transcript, memory, tool", [
    (FIXTURES / "hooks/claude-code/transcript-05.jsonl", CC_MEMORY, "Write"),
    (CC330 / "02-write-memory/transcript.jsonl", CC_MEMORY, "Write"),
    (FIXTURES / "hooks/qwen-code/transcript-05.jsonl", QC_MEMORY, "write_file"),
    (QC0244 / "02-write-memory/transcript.jsonl", QC_MEMORY, "write_file"),
], ids=["claude-2.1.197", "claude-2.1.330", "qwen-0.15.10", "qwen-0.24.4"])
def test_transcripts_of_both_generations_give_tools_and_files(transcript, memory, tool):
    facts = recall.transcript_facts(str(transcript), None, MemoryDir(memory))
    assert tool in facts.recent_tools
    assert any(p.startswith(memory + "/") and p.endswith(".md") for p in facts.touched)


def test_mem_reads_the_memory_files_each_client_writes(tmp_path, run_mem):
    for gen in (CC330, QC0244):
        d = tmp_path / gen.name
        shutil.copytree(gen / "02-write-memory/memory-dir-after", d)
        p = run_mem("scan", "--json", "--dir", str(d))
        assert p.returncode == 0, p.stderr
        row = {r["relpath"]: r for r in json.loads(p.stdout)}["release-freeze.md"]
        assert (row["type"], row["description"]) == ("project", "no deploys on Fridays during the release freeze")
        assert row["warnings"] == []
    # Claude Code 2.1.330 keeps type and its stamp under metadata
    text = (CC330 / "02-write-memory/memory-dir-after/release-freeze.md").read_text()
    assert "\nmetadata:\n  node_type: memory\n  type: project\n  originSessionId: " in text and "\n  modified: 20" in text


@pytest.mark.parametrize("version, escapes", [("2.1.197", False), ("2.1.291", False), ("2.1.292", True),
                                              ("2.1.330", True), ("3.0.0", True), ("not a version", True)])
def test_claude_escapes_hook_context_from_2_1_292(version, escapes):
    data = json.loads((CC330 / "01-hooks/hooks/001-UserPromptSubmit.json").read_text())
    data["version"] = version  # should a payload ever say it, it wins over the transcript
    assert hooks.escapes_context(hooks.parse_payload(json.dumps(data))) is escapes


def test_plain_hook_text_keeps_team_memory_marked(memdir, run_mem):
    from conftest import write_memory
    from mem.core.team.routing import TEAM_WRAPPER_OPEN

    (memdir / "team").mkdir()
    write_memory(memdir / "team", "deploys.md", name="deploys", description="staging deploys need the migration lock",
                 type="project", body="Take the migration lock before a staging deploy.\n")
    write_memory(memdir, "timeouts.md", name="timeouts", description="staging deploys time out on migrations",
                 type="project", body="Raise MIGRATION_TIMEOUT for staging deploys.\n")
    data = json.loads((CC330 / "01-hooks/hooks/001-UserPromptSubmit.json").read_text())
    data.update(cwd=str(memdir), prompt="the staging deploy hit a migration timeout and the lock")
    p = run_mem("recall", "--hook", "--offline", input=json.dumps(data))
    assert p.returncode == 0, p.stderr
    ctx = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "<system-reminder>" not in ctx and "Raise MIGRATION_TIMEOUT" in ctx
    assert TEAM_WRAPPER_OPEN in ctx and "Take the migration lock" in ctx


def test_the_version_is_the_transcript_lines_own(tmp_path):
    # a nested "version" (a tool's result, say) and a line cut by the tail read do not count
    t = tmp_path / "t.jsonl"
    pad = json.dumps({"type": "user", "version": "9.9.9", "message": {"content": "x" * hooks.VERSION_TAIL_BYTES}})
    last = json.dumps({"type": "assistant", "version": "2.1.250", "toolUseResult": {"version": "7.0.0"}})
    t.write_text(pad + "\n" + last + "\n")
    data = json.loads((CC330 / "01-hooks/hooks/001-UserPromptSubmit.json").read_text())
    data["transcript_path"] = str(t)
    payload = hooks.parse_payload(json.dumps(data))
    assert hooks.client_version(payload) == (2, 1, 250) and not hooks.escapes_context(payload)


@pytest.mark.parametrize("path, fmt, memory, tool", [
    (FIXTURES / "transcripts/claude-code-05-tool-use-write-memory.jsonl", "claude", CC_MEMORY, "Write"),
    (CC330 / "02-write-memory/transcript.jsonl", "claude", CC_MEMORY, "Write"),
    (FIXTURES / "hooks/qwen-code/transcript-05.jsonl", "qwen", QC_MEMORY, "write_file"),
    (QC0244 / "02-write-memory/transcript.jsonl", "qwen", QC_MEMORY, "write_file"),
], ids=["claude-2.1.197", "claude-2.1.330", "qwen-0.15.10", "qwen-0.24.4"])
def test_the_transcript_reader_on_both_generations(path, fmt, memory, tool):
    from mem.core import transcripts

    tr = transcripts.read_transcript(str(path))
    assert tr.format == fmt and tr.skipped_lines == 0 and tr.session_id
    humans = [m.text for m in tr.messages if m.is_human]
    assert humans and all(h.strip() for h in humans)
    assert any(memory + "/" in w and w.endswith(".md") for w in transcripts.memory_writes(tr.messages, MemoryDir(memory)))
    assert tool in transcripts.recent_successful_tools(tr.messages)


def test_the_compaction_of_claude_330_reads_as_the_older_one():
    from mem.core import transcripts

    tr = transcripts.read_transcript(str(CC330 / "03-compact/transcript.jsonl"))
    assert tr.skipped_lines == 0
    assert [m.kind for m in tr.messages][-5:] == ["compact_boundary", "compact_summary", "meta", "command", "command"]
    assert [transcripts.command_text(m) for m in tr.messages[-2:]] == ["/compact keep the deploy notes", None]
    text = transcripts.render_for_model(tr.messages[-5:])
    assert text.splitlines()[0] == "[earlier conversation was compacted]"
    assert "User ran the command /compact keep the deploy notes" in text
