"""Extraction of long sessions: windows in order, each within the context window, the cursor moved
only past what a model was shown; against the local server that enforces the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem.core.memdir.store import MemoryDir

from fakeapi import error_body, message
from mem.core.jobs import extract as ex
from mem.core.jobs.llm import ModelError
from mem.core.transcripts import read_transcript
from sessions import write_session


OUTPUT = 8_192  # what the extraction agent reserves for the model's answer


def window(fake_api, monkeypatch, tokens: int) -> None:
    fake_api.context_window = tokens
    monkeypatch.setenv("MEM_CONTEXT_WINDOW", str(tokens))


def nothing(body: dict) -> dict:
    return message([{"type": "text", "text": "Nothing worth saving."}])


def prompts(requests: list[dict]) -> list[str]:
    return ["\n\n".join(b["text"] for b in r["body"]["messages"][0]["content"] if b.get("type") == "text") for r in requests]


def request(memdir: Path, path: Path) -> ex.ExtractRequest:
    return ex.ExtractRequest(MemoryDir(memdir), transcript=str(path))


def test_a_5_mb_session_reaches_the_model_whole_in_windows(fake_api, memdir, tmp_path, monkeypatch):
    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=5_000_000)
    assert len(facts) >= 15 and path.stat().st_size > 5_000_000
    window(fake_api, monkeypatch, 40_000)
    fake_api.respond_with(nothing)
    result = ex.extract(request(memdir, path))
    assert {r["status"] for r in fake_api.requests} == {200}  # not one request over the window
    assert fake_api.max_input_tokens + OUTPUT <= 40_000
    sent = prompts(fake_api.requests)
    assert result.windows == len(sent) > 5
    missing = [f for f in facts if not any(f in p for p in sent)]
    assert missing == []
    # in order: each fact reaches its first request no earlier than the one before it
    first = [next(i for i, p in enumerate(sent) if f in p) for f in facts]
    assert first == sorted(first)
    # every user prompt is there whole, fan-out turns included
    for turn in (4, 8, 12, 5 * len(facts)):
        assert any(f"Continue with step {turn}: look at the handlers and tidy what you find." in p for p in sent) \
            or any(f"Now continue with step {turn}." in p for p in sent)
    for i, p in enumerate(sent, start=1):
        assert "This conversation took place " in p and "2026-03-1" in p
        assert f"It is part {i} of {len(sent)} of the new messages" in p
    last = read_transcript(str(path)).messages[-1].uuid
    assert result.cursor_after == last and ex.read_cursor(MemoryDir(memdir), result.session)["last_uuid"] == last
    assert result.usage["calls"] == len(sent)


def test_a_failed_window_leaves_the_cursor_after_the_last_good_one(fake_api, memdir, tmp_path, monkeypatch):
    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=1_000_000, fact_every=2)
    window(fake_api, monkeypatch, 30_000)
    answered = []

    def first_then_overloaded(body: dict):
        if answered:
            return 529, error_body("overloaded_error", "Overloaded")
        answered.append(body)
        return nothing(body)

    fake_api.respond_with(first_then_overloaded)
    with pytest.raises(ModelError) as exc:
        ex.extract(request(memdir, path))
    assert "window 2 of" in str(exc.value) and "the cursor stays after window 1 of" in str(exc.value)
    assert {r["status"] for r in fake_api.requests} == {200, 529}
    messages = read_transcript(str(path)).messages
    cursor = ex.read_cursor(MemoryDir(memdir), messages[0].session_id)["last_uuid"]
    k = next(i for i, m in enumerate(messages) if m.uuid == cursor)
    assert 0 < k < len(messages) - 1
    shown = prompts(fake_api.requests[:1])[0]
    before = [f for f in facts if any(f in m.text for m in messages[:k + 1])]
    after = [f for f in facts if f not in before]
    assert before and after
    assert all(f in shown for f in before) and not any(f in shown for f in after)
    # the next run starts right after the cursor, and covers the rest
    fake_api.requests.clear()
    fake_api.respond_with(nothing)
    again = ex.extract(request(memdir, path))
    sent = prompts(fake_api.requests)
    assert again.cursor_before == cursor and again.cursor_after == messages[-1].uuid
    assert not any(f in p for f in before for p in sent)
    assert all(any(f in p for p in sent) for f in after)


def test_a_message_larger_than_a_window_is_split_not_cut(fake_api, memdir, tmp_path, monkeypatch):
    window(fake_api, monkeypatch, 30_000)
    paste = " ".join(f"log line {i:06d} ok" for i in range(12_000))  # ~ 60,000 tokens of one prompt
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s", "timestamp": "2026-03-12T10:00:00.000Z",
              "message": {"role": "user", "content": f"here is the log: {paste} -- remember the log ends cleanly"}},
             {"type": "assistant", "uuid": "a1", "sessionId": "s", "timestamp": "2026-03-12T10:01:00.000Z",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "Read it."}]}}]
    path = tmp_path / "paste.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake_api.respond_with(nothing)
    result = ex.extract(request(memdir, path))
    sent = prompts(fake_api.requests)
    assert result.windows == len(sent) >= 3 and {r["status"] for r in fake_api.requests} == {200}
    for i in range(0, 12_000, 997):
        assert any(f"log line {i:06d} ok" in p for p in sent), i
    assert "remember the log ends cleanly" in sent[-1] and "[continued from the previous part]" in sent[1]
    assert all("This conversation took place on 2026-03-12. Read relative dates" in p for p in sent)
    assert result.cursor_after == "a1"


def test_a_window_that_fails_on_a_split_message_does_not_move_the_cursor(fake_api, memdir, tmp_path, monkeypatch):
    window(fake_api, monkeypatch, 30_000)
    lines = [{"type": "user", "uuid": uid, "sessionId": "plain", "message": {"role": "user", "content": text}}
             for uid, text in (("p1", "first, a short note: deploys happen on Fridays"), ("p2", "x " * 100_000))]
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake_api.reply_text("Nothing.")
    fake_api.respond_with(lambda body: (529, error_body("overloaded_error", "Overloaded")))
    with pytest.raises(ModelError):
        ex.extract(ex.ExtractRequest(MemoryDir(memdir), transcript=str(path), session="plain"))
    cursor = ex.read_cursor(MemoryDir(memdir), "plain")
    # window 1 showed p1 whole and only the start of p2: the cursor is at p1, not past p2
    assert cursor is not None and cursor["last_uuid"] == "p1"
