"""The compaction flow of the session notes called as a function (core/hooks/compact.py)."""

from __future__ import annotations

import json
from pathlib import Path

from mem.core import hooks, session
from mem.core.hooks.compact import COMPACT_EVENTS, on_compact
from mem.core.hooks.payload import HookResult

FIX = Path(__file__).parent / "fixtures" / "session"


def _payload(name: str, cwd: Path, **changes) -> hooks.HookPayload:
    data = json.loads(json.loads((FIX / name).read_text())["stdin_raw"])
    data.update(cwd=str(cwd), **changes)
    return hooks.parse_payload(json.dumps(data), events=COMPACT_EVENTS)


def _notes(path: str) -> None:
    session.init(path, session.DEFAULT_TEMPLATE.replace(
        "Immediate next steps._\n", "Immediate next steps._\nPorting the parser; tests pass.\n", 1))


def test_precompact_resets_the_update_baseline_and_prints_nothing(tmp_path):
    payload = _payload("001-PreCompact.json", tmp_path)
    session.save_state(payload.session_id, {"tokens_at_last_update": 50_000, "initialized": True})
    assert on_compact(payload) == HookResult()
    state = session.load_state(payload.session_id)
    assert state["tokens_at_last_update"] == 0 and state["compactions"] == 1


def test_session_start_after_a_compaction_gives_the_notes(tmp_path):
    payload = _payload("003-SessionStart.json", tmp_path)
    _notes(session.notes_path(payload.session_id, str(tmp_path)))
    out = json.loads(on_compact(payload).output)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "Porting the parser; tests pass." in out["additionalContext"]


def test_notes_file_option_is_read_instead(tmp_path):
    notes = tmp_path / "elsewhere.md"
    _notes(str(notes))
    out = on_compact(_payload("003-SessionStart.json", tmp_path), str(notes)).output
    assert "Porting the parser" in out


def test_a_session_start_that_is_no_compaction_gives_nothing(tmp_path):
    payload = _payload("003-SessionStart.json", tmp_path, source="startup")
    _notes(session.notes_path(payload.session_id, str(tmp_path)))
    assert on_compact(payload) == HookResult()


def test_the_flow_reads_the_notes_and_the_state_where_the_given_environment_says(tmp_path):
    # The caller's Env, not os.environ: another CLAUDE_CONFIG_DIR holds the notes, another
    # MEM_STATE_DIR the session's update state.
    import os

    from mem.env import Env

    environ = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "other-claude"),
               "MEM_STATE_DIR": str(tmp_path / "other-state")}
    start = _payload("003-SessionStart.json", tmp_path)
    _notes(session.notes_path(start.session_id, str(tmp_path), environ))
    assert not os.path.exists(session.notes_path(start.session_id, str(tmp_path)))  # not where the process looks
    out = json.loads(on_compact(start, env=Env(environ)).output)["hookSpecificOutput"]
    assert "Porting the parser; tests pass." in out["additionalContext"]
    pre = _payload("001-PreCompact.json", tmp_path)
    assert on_compact(pre, env=Env(environ)) == HookResult()
    assert session.load_state(pre.session_id, environ)["compactions"] == 1
    assert "compactions" not in session.load_state(pre.session_id)
