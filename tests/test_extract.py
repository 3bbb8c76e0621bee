"""Extraction in process: cursor, mutual exclusion with the agent, prompt, index, lock and queue."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

from mem.core.memdir.store import MemoryDir

from conftest import write_memory
from fakeapi import first_user_text
from mem.core.memdir import events
from mem.core.jobs import extract as ex
from mem.core.errors import ConfigError, ExitCode, LockedError
from mem.core.jobs.llm import ModelError

FIX = Path(__file__).parent / "fixtures" / "transcripts"
CC_MEMORY = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory"
GOOD = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"


def plain(*turns: tuple[str, str]) -> str:
    return "".join(json.dumps({"role": r, "content": c}) + "\n" for r, c in turns)


def claude_line(uuid: str, role: str, text: str, session: str = "sess-1") -> str:
    return json.dumps({"type": role, "uuid": uuid, "sessionId": session,
                       "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}}) + "\n"


def user_prompt(request: dict) -> str:
    return first_user_text(request["body"])


@pytest.fixture
def transcript(tmp_path) -> Path:
    p = tmp_path / "sess-1.jsonl"
    p.write_text(claude_line("u1", "user", "I'm a data engineer; remember that I prefer tabs")
                 + claude_line("a1", "assistant", "Noted."))
    return p


def request(memdir: Path, transcript: Path, **kw) -> ex.ExtractRequest:
    return ex.ExtractRequest(MemoryDir(memdir), transcript=str(transcript), **kw)


def test_first_run_saves_indexes_and_moves_the_cursor(fake_api, memdir, transcript):
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD},
                            input_tokens=900, output_tokens=80)
    fake_api.reply_text("Saved one memory.", input_tokens=1000, output_tokens=8)
    result = ex.extract(request(memdir, transcript))
    assert result.saved == ["user-prefers-tabs.md"] and result.created == ["user-prefers-tabs.md"]
    assert result.indexed == ["user-prefers-tabs.md"]  # the model forgot the pointer; we added it
    assert result.written == ["user-prefers-tabs.md", "MEMORY.md"]
    assert (memdir / "MEMORY.md").read_text() == "- [User prefers tabs](user-prefers-tabs.md) — the user wants tabs, not spaces\n"
    assert result.session == "sess-1" and result.messages == 2
    assert (result.cursor_before, result.cursor_after, result.cursor_reset) == (None, "a1", False)
    assert result.turns == 2 and result.stop_reason == "end_turn"
    assert result.usage == {"input_tokens": 1900, "output_tokens": 88, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0, "calls": 2}
    cursor = ex.read_cursor(MemoryDir(memdir), "sess-1")
    assert cursor["last_uuid"] == "a1" and cursor["transcript"] == str(transcript)
    # bookkeeping stays out of the memory dir
    assert sorted(p.name for p in memdir.iterdir()) == ["MEMORY.md", "user-prefers-tabs.md"]
    [event] = events.read_events(MemoryDir(memdir))
    assert event["command"] == "extract" and event["strategy"] == "model"
    assert event["created"] == ["user-prefers-tabs.md"] and event["updated"] == ["MEMORY.md"]
    assert event["tokens"]["input_tokens"] == 1900 and event["detail"]["session"] == "sess-1"


def test_only_messages_after_the_cursor_are_sent(fake_api, memdir, transcript):
    fake_api.reply_text("Nothing worth saving.")
    first = ex.extract(request(memdir, transcript))
    assert first.saved == [] and first.indexed == []
    # nothing new: no model call at all
    again = ex.extract(request(memdir, transcript))
    assert again.skipped == "no_new_messages" and len(fake_api.requests) == 1
    with transcript.open("a") as fh:
        fh.write(claude_line("u2", "user", "the release freeze starts next Thursday"))
        fh.write(claude_line("a2", "assistant", "OK."))
    fake_api.reply_text("Nothing.")
    third = ex.extract(request(memdir, transcript))
    assert third.messages == 2 and third.cursor_before == "a1" and third.cursor_after == "a2"
    prompt = user_prompt(fake_api.requests[1])
    assert "release freeze" in prompt and "data engineer" not in prompt
    # --all ignores the cursor
    fake_api.reply_text("Nothing.")
    assert ex.extract(request(memdir, transcript, ignore_cursor=True)).messages == 4


def test_cursor_message_gone_sends_everything(fake_api, memdir, transcript):
    ex.write_cursor(MemoryDir(memdir), "sess-1", "compacted-away", str(transcript))
    fake_api.reply_text("Nothing.")
    result = ex.extract(request(memdir, transcript))
    assert result.cursor_reset and result.messages == 2 and result.cursor_after == "a1"


def test_agent_wrote_memory_skips_the_model(fake_api, memdir, tmp_path):
    text = (FIX / "claude-code-05-tool-use-write-memory.jsonl").read_text().replace(CC_MEMORY, str(memdir))
    t = tmp_path / "t.jsonl"
    t.write_text(text)
    result = ex.extract(request(memdir, t))
    assert result.skipped == "agent_wrote_memory"
    assert result.agent_wrote == ["MEMORY.md", "user-prefers-tabs.md"]
    assert result.cursor_after == "2f99db88-e0b7-4f79-8878-dc4a99ad5f87"
    assert fake_api.requests == []
    assert ex.read_cursor(MemoryDir(memdir), "63ec8da7-3d1c-4d82-927e-992a0039be2f")["last_uuid"] == result.cursor_after
    # after /compact, the messages since the cursor are compaction artefacts only: nothing to do
    compacted = (FIX / "claude-code-06-compact.jsonl").read_text().replace(CC_MEMORY, str(memdir))
    t.write_text(compacted)
    after = ex.extract(request(memdir, t))
    assert after.skipped == "no_new_messages" and fake_api.requests == []
    assert after.cursor_after == "9fb14d94-1db4-498b-b26d-e543060f1904"


def test_a_write_into_another_memory_dir_does_not_count(fake_api, memdir, tmp_path):
    t = tmp_path / "t.jsonl"
    t.write_text((FIX / "claude-code-05-tool-use-write-memory.jsonl").read_text())  # paths of the recording
    fake_api.reply_text("Nothing.")
    assert ex.extract(request(memdir, t)).skipped is None
    assert len(fake_api.requests) == 1


def test_qwen_transcript(fake_api, memdir, tmp_path):
    fake_api.reply_text("Nothing.")
    result = ex.extract(request(memdir, FIX / "qwen-code-04-hooks-json.jsonl"))
    assert result.session == "6fcacb87-06b4-47d3-9f18-68bf0816f4bf"
    assert result.cursor_after == "855c16a4-60b7-49fe-a785-0e047647e322"
    assert "User: hello hooks json" in user_prompt(fake_api.requests[0])


def test_plain_transcript_from_stdin_has_a_content_cursor(fake_api, memdir):
    data = plain(("user", "call me Sam"), ("assistant", "Hi Sam."))
    fake_api.reply_text("Nothing.")
    first = ex.extract(ex.ExtractRequest(MemoryDir(memdir), data=data.encode(), session="script-1"))
    assert first.messages == 2 and first.cursor_after.startswith("sha256:")
    more = data + plain(("user", "I review PRs on Fridays"))
    fake_api.reply_text("Nothing.")
    second = ex.extract(ex.ExtractRequest(MemoryDir(memdir), data=more.encode(), session="script-1"))
    assert second.messages == 1 and second.transcript == "-"
    assert "Fridays" in user_prompt(fake_api.requests[1]) and "Sam" not in user_prompt(fake_api.requests[1])
    # without a session there is no cursor to keep
    fake_api.reply_text("Nothing.")
    third = ex.extract(ex.ExtractRequest(MemoryDir(memdir), data=data.encode()))
    assert third.session is None and third.cursor_after is None


def test_prompt_has_date_manifest_index_and_redacted_conversation(fake_api, memdir, tmp_path):
    write_memory(memdir, "feedback-tests.md", name="feedback-tests", description="integration tests hit a real DB",
                 type="feedback", mtime=1_700_000_000)
    write_memory(memdir, "logs/2026/11/2026-11-20.md", name="log", description="daily log")
    (memdir / "MEMORY.md").write_text("# Notes\nAsk before touching prod.\n- [Tests](feedback-tests.md) — real DB\n"
                                      "- [Gone](gone.md) — deleted since\n")
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    t = tmp_path / "t.jsonl"
    t.write_text(plain(("user", f"my token is {key}, and the deploy dashboard is at grafana/d/deploys")))
    fake_api.reply_text("Nothing.")
    ex.extract(request(memdir, t))
    body = fake_api.requests[0]["body"]
    prompt = user_prompt(fake_api.requests[0])
    assert f"Today is {datetime.date.today().isoformat()}." in prompt
    assert "- [feedback] feedback-tests.md (2023-11-14T22:13:20.000Z): integration tests hit a real DB" in prompt
    assert "logs/2026" not in prompt
    # the index only where it says more than the manifest: its note and its dangling pointer
    assert "- [Tests](feedback-tests.md) — real DB" not in prompt
    assert "1 of its 4 lines points to a file listed above (not repeated here). Its other lines:" in prompt
    assert "# Notes\nAsk before touching prod.\n- [Gone](gone.md) — deleted since" in prompt
    assert key not in json.dumps(body) and "[REDACTED]" in prompt
    assert "grafana/d/deploys" in prompt
    system = body["system"][0]["text"]
    for must in ("user", "feedback", "project", "reference", "**Why:**", "**How to apply:**", "absolute dates",
                 "CLAUDE.md", "git history", "credentials", "metadata.type", "MEMORY.md", "at most 5 turns",
                 "confirmations", "permission"):
        assert must in system, must


def test_model_error_keeps_the_cursor_and_fails(fake_api, memdir, transcript):
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_status(529)
    with pytest.raises(ModelError) as exc:
        ex.extract(request(memdir, transcript))
    assert exc.value.exit_code == ExitCode.FAILURE
    assert "cursor stays" in str(exc.value) and "user-prefers-tabs.md" in str(exc.value)
    assert ex.read_cursor(MemoryDir(memdir), "sess-1") is None
    [event] = events.read_events(MemoryDir(memdir))
    assert event["outcome"] == "error" and event["created"] == ["user-prefers-tabs.md"]
    # the lock was let go
    assert ex.RunLock(MemoryDir(memdir)).acquire()


def test_no_credentials_is_a_config_error_before_anything(memdir, transcript, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError) as exc:
        ex.extract(request(memdir, transcript))
    assert "ANTHROPIC_API_KEY" in str(exc.value)
    assert list(memdir.iterdir()) == []


def test_update_does_not_duplicate_the_pointer(fake_api, memdir, transcript):
    write_memory(memdir, "user-prefers-tabs.md", name="user-prefers-tabs", description="tabs")
    (memdir / "MEMORY.md").write_text("# Memory\n- [Tabs](./user-prefers-tabs.md) — tabs")  # no final newline
    fake_api.reply_tool_use("read", {"file_path": "user-prefers-tabs.md"})
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_text("Updated.")
    result = ex.extract(request(memdir, transcript))
    assert result.updated == ["user-prefers-tabs.md"] and result.indexed == []
    assert (memdir / "MEMORY.md").read_text() == "# Memory\n- [Tabs](./user-prefers-tabs.md) — tabs"


# --- lock and queue ----------------------------------------------------------------------------------


def test_running_extraction_queues_the_next_latest_wins(fake_api, memdir, transcript, tmp_path):
    holder = ex.RunLock(MemoryDir(memdir))
    assert holder.acquire(info={"session": "other"})
    first = ex.extract(request(memdir, transcript, max_turns=2))
    assert first.queued and first.holder["pid"] == os.getpid() and first.holder["alive"]
    second = ex.extract(request(memdir, transcript, max_turns=3))  # same session: replaces the first
    assert second.queued
    other = tmp_path / "other.jsonl"
    other.write_text(claude_line("o1", "user", "hello", session="sess-2"))
    assert ex.extract(request(memdir, other)).queued
    assert len(os.listdir(os.path.join(ex.extract_state_dir(MemoryDir(memdir)), "pending"))) == 2
    with pytest.raises(LockedError) as exc:
        ex.extract(request(memdir, transcript), queue=False)
    assert exc.value.exit_code == ExitCode.LOCKED and f"pid {os.getpid()}" in str(exc.value)
    with pytest.raises(LockedError):
        ex.extract(request(memdir, transcript), wait=True, wait_limit=0.3)
    # the holder finishes: the queue is drained, one trailing run per session
    fake_api.reply_text("Nothing.")
    fake_api.reply_text("Nothing.")
    trailing = ex._drain(holder, log=None, debug=False)
    assert [(t.session, t.error) for t in trailing] == [("sess-1", None), ("sess-2", None)]
    assert len(fake_api.requests) == 2
    assert not ex.has_pending(MemoryDir(memdir)) and not holder.held


def test_queued_request_runs_itself_when_the_holder_is_gone(fake_api, memdir, transcript):
    fake_api.reply_text("Nothing.")
    ex.enqueue(request(memdir, transcript))  # left by a run that died
    result = ex.extract(request(memdir, transcript))
    # the left-over request for the same session ran first, then ours found nothing new
    assert result.session == "sess-1"
    assert len(fake_api.requests) == 1


def test_stdin_request_is_spooled_in_the_queue(fake_api, memdir):
    holder = ex.RunLock(MemoryDir(memdir))
    holder.acquire()
    data = plain(("user", "I am the release manager"))
    assert ex.extract(ex.ExtractRequest(MemoryDir(memdir), data=data.encode(), session="s")).queued
    fake_api.reply_text("Nothing.")
    [t] = ex._drain(holder, log=None, debug=False)
    assert t.transcript == "-" and t.messages == 1
    assert "release manager" in user_prompt(fake_api.requests[0])
    assert os.listdir(os.path.join(ex.extract_state_dir(MemoryDir(memdir)), "pending")) == []


def test_lock_file_says_who_holds_it(memdir):
    lock = ex.RunLock(MemoryDir(memdir))
    assert lock.acquire(info={"session": "s1", "transcript": "/t.jsonl"})
    info = ex.RunLock(MemoryDir(memdir)).holder()
    assert info["pid"] == os.getpid() and info["session"] == "s1" and info["stale"] is False
    assert not ex.RunLock(MemoryDir(memdir)).acquire()
    lock.release()
    assert ex.RunLock(MemoryDir(memdir)).holder() is None


def test_session_keys_are_file_safe():
    assert ex._session_key("63ec8da7-3d1c-4d82-927e-992a0039be2f") == "63ec8da7-3d1c-4d82-927e-992a0039be2f"
    key = ex._session_key("../../etc/passwd")
    assert "/" not in key and not key.startswith(".")
    assert ex._session_key("a/b") != ex._session_key("a-b")


def test_time_budget_spent_before_the_model_answers_keeps_the_cursor(fake_api, memdir, transcript):
    fake_api.reply_text("late", delay=3)
    with pytest.raises(ModelError) as exc:
        ex.extract(request(memdir, transcript, timeout=1))
    assert "timed out" in str(exc.value) or "time budget" in str(exc.value)
    assert ex.read_cursor(MemoryDir(memdir), "sess-1") is None


def test_extract_uses_its_own_model_setting_not_recalls(fake_api, memdir, transcript, monkeypatch):
    monkeypatch.setenv("MEM_MODEL_RECALL", "fast-recall-model")
    monkeypatch.setenv("MEM_MODEL", "everyone-model")
    fake_api.reply_text("Nothing worth saving.")
    ex.extract(request(memdir, transcript))
    body = fake_api.requests[-1]["body"]
    assert body["model"] == "everyone-model" and body["max_tokens"] == 8_192
    monkeypatch.setenv("MEM_MODEL_EXTRACT", "extract-model")
    fake_api.reply_text("Nothing worth saving.")
    ex.extract(request(memdir, transcript, ignore_cursor=True))
    assert fake_api.requests[-1]["body"]["model"] == "extract-model"


def test_the_stable_part_is_cached_apart_from_the_conversation(fake_api, memdir, transcript):
    write_memory(memdir, "feedback-tests.md", name="feedback-tests", description="integration tests hit a real DB",
                 type="feedback")
    fake_api.reply_tool_use("read", {"file_path": "feedback-tests.md"})
    fake_api.reply_text("Nothing.")
    ex.extract(request(memdir, transcript))
    first, second = (r["body"] for r in fake_api.requests)
    stable, conversation = first["messages"][0]["content"]
    assert stable["cache_control"] == {"type": "ephemeral"}
    assert "## Existing memories" in stable["text"] and "feedback-tests.md" in stable["text"]
    assert "## MEMORY.md, the index" in stable["text"] and "I prefer tabs" not in stable["text"]
    assert conversation["text"].startswith("## The conversation (2 messages") and "I prefer tabs" in conversation["text"]
    # the API takes at most 4 cache marks: system, the stable part, the conversation, the newest turn
    for body in (first, second):
        marks = sum("cache_control" in b for b in body["system"]) + sum("cache_control" in t for t in body["tools"])
        marks += sum("cache_control" in b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"])
        assert marks <= 4, body


def test_the_prompt_says_when_the_conversation_happened(fake_api, memdir, tmp_path):
    t = tmp_path / "dated.jsonl"
    lines = [json.loads(claude_line("u1", "user", "we froze releases until 2026-12-15")),
             json.loads(claude_line("a1", "assistant", "Noted."))]
    lines[0]["timestamp"], lines[1]["timestamp"] = "2026-03-02T23:59:00.000Z", "2026-03-03T00:01:00.000Z"
    t.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fake_api.reply_text("Nothing.")
    ex.extract(request(memdir, t))
    assert "This conversation took place between 2026-03-02 and 2026-03-03." in user_prompt(fake_api.requests[0])


def test_the_instructions_cover_judgements_the_index_limit_forgetting_and_the_body_style(fake_api, memdir, transcript):
    from mem.core.jobs import guidance

    fake_api.reply_text("Nothing.")
    ex.extract(request(memdir, transcript))
    system = fake_api.requests[0]["body"]["system"][0]["text"]
    assert "judgements of the user" in system and "competence" in system
    assert "first 200 lines" in system
    assert "you cannot delete files" in system and "edit the passage out" in system
    assert guidance.BODY_EXAMPLE in system and "leave \nboth out" not in system and "rather than invent one" in system
    assert "lower-case kebab case" in system


def test_the_body_example_passes_the_poisoning_guard(run_mem, memdir):
    from mem.core.jobs import guidance

    (memdir / "feedback-postgres.md").write_text("---\nname: feedback-postgres\ndescription: tests use a real "
                                                 "Postgres\ntype: feedback\n---\n\n" + guidance.BODY_EXAMPLE + "\n")
    r = run_mem("lint")
    assert r.returncode == 0, r.stdout + r.stderr
