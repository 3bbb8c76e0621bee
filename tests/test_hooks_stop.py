"""The Stop hook's flow called as a function (core/hooks/stop.py): no click, no stdin, no process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem.core import hooks
from mem.core.errors import ConfigError, NotFoundError
from mem.core.hooks.stop import StopOptions, on_stop
from mem.core.jobs.extract import read_cursor
from mem.core.memdir.store import MemoryDir

FIX = Path(__file__).parent / "fixtures" / "transcripts"
GOOD = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"


def _line(uuid: str, role: str, text: str) -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": role, "uuid": uuid, "sessionId": "sess-1",
                       "message": {"role": role, "content": content}}) + "\n"


@pytest.fixture
def transcript(tmp_path) -> Path:
    p = tmp_path / "sess-1.jsonl"
    p.write_text(_line("u1", "user", "remember that I prefer tabs") + _line("a1", "assistant", "Noted."))
    return p


def _payload(transcript: Path, cwd: Path) -> hooks.HookPayload:
    data = json.loads((FIX / "claude-code-05-Stop.json").read_text())
    data.update(transcript_path=str(transcript), cwd=str(cwd))
    return hooks.parse_payload(json.dumps(data), require=("session_id", "transcript_path"))


def test_on_stop_extracts_under_the_payloads_session(fake_api, memdir, transcript, tmp_path):
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_text("Saved.")
    payload = _payload(transcript, tmp_path)
    result = on_stop(payload, {})
    assert result.output == ""  # a Stop hook's stdout is read by the client
    assert result.messages == ("Saved 1 memory: user-prefers-tabs.md", "added 1 pointer to MEMORY.md")
    assert (memdir / "user-prefers-tabs.md").read_text() == GOOD
    assert read_cursor(MemoryDir(str(memdir)), payload.session_id)["last_uuid"] == "a1"


def test_on_stop_session_option_wins_over_the_payload(fake_api, memdir, transcript, tmp_path):
    fake_api.reply_text("Nothing.")
    on_stop(_payload(transcript, tmp_path), {}, StopOptions(session="mine"))
    assert read_cursor(MemoryDir(str(memdir)), "mine")["last_uuid"] == "a1"


def test_on_stop_skips_where_auto_memory_is_off(fake_api, transcript, tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    result = on_stop(_payload(transcript, tmp_path), {})
    assert result.messages == ("skipped: auto memory is turned off for this project",)
    assert fake_api.requests == []


def test_on_stop_without_credentials_raises_before_reading(memdir, tmp_path):
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        on_stop(_payload(tmp_path / "not-read.jsonl", tmp_path), {})
    assert list(memdir.iterdir()) == []


def test_on_stop_missing_transcript(fake_api, memdir, tmp_path):
    with pytest.raises(NotFoundError, match="no such transcript"):
        on_stop(_payload(tmp_path / "gone.jsonl", tmp_path), {})
    assert fake_api.requests == []


# --- the session notes on Stop (on_stop_notes) -------------------------------------------------------

SESSION_FIX = Path(__file__).parent / "fixtures" / "session"
SID = "63ec8da7-3d1c-4d82-927e-992a0039be2f"


def _notes_payload(cwd: Path, transcript: Path) -> hooks.HookPayload:
    return hooks.parse_payload(json.dumps({"session_id": SID, "hook_event_name": "Stop", "cwd": str(cwd),
                                           "transcript_path": str(transcript)}),
                               require=("session_id", "transcript_path"))


def test_on_stop_notes_updates_only_when_due(fake_api, tmp_path):
    from mem.core import session
    from mem.core.hooks.stop import on_stop_notes

    session.init(session.notes_path(SID, str(tmp_path)), session.DEFAULT_TEMPLATE)
    result = on_stop_notes(_notes_payload(tmp_path, SESSION_FIX / "06-compact.jsonl"))
    assert result.output == "" and result.messages == ("not updating: not_due",)
    assert fake_api.requests == []  # the recorded session is far below the update threshold


def test_on_stop_notes_missing_transcript(tmp_path):
    from mem.core.hooks.stop import on_stop_notes

    with pytest.raises(NotFoundError, match="no transcript at"):
        on_stop_notes(_notes_payload(tmp_path, tmp_path / "gone.jsonl"))


def test_session_notes_stop_hook_keeps_stdout_empty_with_json(run_mem, tmp_path, fake_api):
    from mem.core import session

    session.init(session.notes_path(SID, str(tmp_path)), session.DEFAULT_TEMPLATE)
    payload = json.dumps({"session_id": SID, "hook_event_name": "Stop", "cwd": str(tmp_path),
                          "transcript_path": str(SESSION_FIX / "06-compact.jsonl")})
    r = run_mem("session", "update", "--hook", "--json", input=payload)
    assert r.returncode == 0 and r.stdout == "" and "not updating" in r.stderr  # the client reads a Stop hook's stdout


def test_on_stop_asks_the_environment_it_is_given(transcript, tmp_path):
    # The caller's Env, not os.environ: its switch turns auto memory off for the project (no
    # credentials needed to say so), and without it the missing credentials are its to report.
    import os

    from mem.env import Env

    environ = {k: v for k, v in os.environ.items() if k != "MEM_DIR"}
    result = on_stop(_payload(transcript, tmp_path), {}, env=Env({**environ, "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}))
    assert result.messages == ("skipped: auto memory is turned off for this project",)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        on_stop(_payload(transcript, tmp_path), {}, env=Env(environ))
