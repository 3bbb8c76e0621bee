"""mem session: location, template, thresholds, truncation, structure checks, hooks."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mem.core import session, transcripts
from mem.core.paths import sanitize_path

FIX = Path(__file__).parent / "fixtures" / "session"


def test_template_is_claudes_exactly():
    t = session.DEFAULT_TEMPLATE
    assert t.startswith("\n# Session Title\n_A short and distinctive 5-10 word")
    headers = [line for line in t.split("\n") if line.startswith("# ")]
    assert headers == ["# Session Title", "# Current State", "# Task specification", "# Files and Functions", "# Workflow",
                       "# Errors & Corrections", "# Codebase and System Documentation", "# Learnings", "# Key results", "# Worklog"]
    assert len(session.structure(t)) == 20
    assert t.endswith("_Step by step, what was attempted, done? Very terse summary for each step_\n")


def test_location_modes_and_exclusive_create(tmp_path, isolated_env):
    project = tmp_path / "my proj"
    project.mkdir()
    path = session.notes_path("abc-123", str(project))
    assert path == str(isolated_env / ".claude" / "projects" / sanitize_path(str(project)) / "abc-123" / "session-memory" / "summary.md")
    assert session.init(path, session.DEFAULT_TEMPLATE)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    Path(path).write_text("mine")
    assert not session.init(path, session.DEFAULT_TEMPLATE)
    assert Path(path).read_text() == "mine"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 200])
def test_session_ids_that_could_escape_are_refused(bad):
    from mem.core.errors import UsageError

    with pytest.raises(UsageError):
        session.notes_path(bad, "/tmp")


def test_custom_template_and_prompt(isolated_env):
    cfg = isolated_env / ".claude" / "session-memory" / "config"
    cfg.mkdir(parents=True)
    (cfg / "template.md").write_text("# Mine\n_desc_\n")
    (cfg / "prompt.md").write_text("Notes at {{notesPath}}: {{currentNotes}} {{other}}")
    assert session.load_template() == "# Mine\n_desc_\n"
    prompt = session.substitute(session.custom_prompt(), {"notesPath": "/p", "currentNotes": r"$1 \1 {{notesPath}}"})
    assert prompt == r"Notes at /p: $1 \1 {{notesPath}} {{other}}"  # one pass, literal, unknown names kept


def test_truncate_exact_boundaries():
    body_fit = "x" * 7999  # one line: 7999 units plus nothing → fits (<= 8000)
    text = "intro line\n# A\n" + body_fit + "\n# B\nshort"
    out, cut = session.truncate_for_compact(text)
    assert not cut and out == text
    exactly = "\n".join(["y" * 99] * 80)  # 80 lines * 100 - 1 = 7999 units
    assert session.truncate_for_compact("# A\n" + exactly)[0] == "# A\n" + exactly
    long = "\n".join(["z" * 99] * 81)  # 8099 units: over
    out, cut = session.truncate_for_compact("# A\n" + long + "\n# B\nb")
    assert cut
    lines = out.split("\n")
    # Lines are kept while count + len + 1 <= 8000: 80 lines of 100 = 8000.
    assert lines[0] == "# A" and lines[1:81] == ["z" * 99] * 80
    assert lines[81:] == ["", "[... section truncated for length ...]", "# B", "b"]


def test_section_sizes_and_reminders():
    text = "# Small\nabc\n# Big\n" + "w" * 8400 + "\n# Empty\n"
    sizes = session.section_sizes(text)
    assert [(s.header, s.tokens) for s in sizes] == [("# Small", 1), ("# Big", 2100), ("# Empty", 0)]
    rem = session.size_reminders(text)
    assert rem.startswith("\n\nIMPORTANT: The following sections exceed the per-section limit and MUST be condensed:\n")
    assert '- "# Big" is ~2100 tokens (limit: 2000)' in rem
    huge = "".join(f"# S{i}\n" + "q" * 7000 + "\n" for i in range(8))
    rem = session.size_reminders(huge)
    assert rem.startswith("\n\nCRITICAL: The session memory file is currently ~14")
    assert "Oversized sections to condense:" not in rem  # each section is 1750 tokens: none over


def test_structure_check():
    t = session.DEFAULT_TEMPLATE
    filled = t.replace("_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\n",
                       "_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\nWriting tests.\n")
    assert session.check_structure(t, filled) == []
    assert session.check_structure(t, filled.replace("# Workflow\n", "")) != []
    assert session.check_structure(t, filled + "\n# Extra\n_new_\n") != []
    assert any("changed" in p for p in session.check_structure(t, filled.replace("_Step by step", "_Step-by-step")))
    a, b = "# Workflow", "# Learnings"
    swapped = filled.replace(a, "@@").replace(b, a).replace("@@", b)
    assert session.check_structure(t, swapped)


def test_estimate_tokens_from_recorded_transcript():
    t = transcripts.read_transcript(str(FIX / "06-compact.jsonl"))
    last = max(i for i, m in enumerate(t.messages) if m.role == "assistant" and m.usage)
    u = t.messages[last].usage
    base = u["input_tokens"] + u["output_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
    est = session.estimate_tokens(t.messages)
    assert est > base  # the compact summary and later lines come after the last usage
    assert est - base == round(sum(session._message_chars(m) for m in t.messages[last + 1:]) / 4)


def _claude_lines(usage_tokens: int, tool_calls: int, end_with_tool: bool, extra_chars: int = 0):
    lines = [{"type": "user", "uuid": "u0", "sessionId": "s", "message": {"role": "user", "content": "go"}}]
    for i in range(tool_calls):
        lines.append({"type": "assistant", "uuid": f"a{i}", "message": {"id": f"m{i}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}]}})
        lines.append({"type": "user", "uuid": f"r{i}", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}})
    content = [{"type": "tool_use", "id": "tz", "name": "Read", "input": {}}] if end_with_tool else [{"type": "text", "text": "done"}]
    lines.append({"type": "assistant", "uuid": "last", "message": {"id": "mz", "role": "assistant", "content": content,
                                                                  "usage": {"input_tokens": usage_tokens, "output_tokens": 0}}})
    if extra_chars:
        lines.append({"type": "user", "uuid": "x", "message": {"role": "user", "content": "c" * extra_chars}})
    return [json.dumps(x) for x in lines]


@pytest.mark.parametrize("tokens,tools,end_tool,due", [
    (9_999, 5, False, False),     # below the 10,000 needed to start
    (10_000, 0, False, True),     # starts; turn ended without a tool call
    (10_000, 1, True, False),     # still in a tool loop with 2 calls (needs 3)
    (10_000, 2, True, True),      # 3 tool calls, the last one in the final turn
])
def test_due_thresholds(tokens, tools, end_tool, due):
    t = transcripts.parse_lines(_claude_lines(tokens, tools, end_tool))
    st = session.status("s", "/nonexistent", t)
    assert st.due is due, st.reason


def test_due_needs_5000_new_tokens_after_an_update():
    t = transcripts.parse_lines(_claude_lines(12_000, 0, False))
    session.record_update("s", t, 12_000)
    assert not session.status("s", "/x", t).due
    t2 = transcripts.parse_lines(_claude_lines(16_999, 0, False))
    assert not session.status("s", "/x", t2).due  # 4,999 new
    t3 = transcripts.parse_lines(_claude_lines(17_000, 0, False))
    assert session.status("s", "/x", t3).due


def test_cli_init_show_status_compact(run_mem, tmp_path):
    r = run_mem("session", "init", "--session", "s1", "--project", str(tmp_path))
    assert r.returncode == 0
    path = r.stdout.strip()
    assert Path(path).read_text() == session.DEFAULT_TEMPLATE
    assert run_mem("session", "show", "--session", "s1", "--project", str(tmp_path)).stdout == session.DEFAULT_TEMPLATE
    assert run_mem("session", "path", "--session", "s1", "--project", str(tmp_path)).stdout.strip() == path
    r = run_mem("session", "status", "--transcript", str(FIX / "06-compact.jsonl"), "--project", str(tmp_path), "--json")
    doc = json.loads(r.stdout)
    assert doc["session_id"] == "63ec8da7-3d1c-4d82-927e-992a0039be2f" and doc["initialized"] is False and doc["due"] is False
    r = run_mem("session", "compact", "--session", "s1", "--project", str(tmp_path))
    assert r.returncode == 0 and r.stdout.startswith("\n# Session Title")
    r = run_mem("session", "show", "--session", "nope", "--project", str(tmp_path))
    assert r.returncode == 1 and "no session notes" in r.stderr
    wrong = tmp_path / "summary.md"
    wrong.write_text("# Not a transcript\n\nJust notes.\n")
    r = run_mem("session", "status", "--transcript", str(wrong), "--project", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith(f"mem: error: {wrong} is not a transcript")


def test_compact_hooks(run_mem, tmp_path, isolated_env):
    payload = json.loads(json.loads((FIX / "003-SessionStart.json").read_text())["stdin_raw"])
    payload["cwd"] = str(tmp_path)
    path = session.notes_path(payload["session_id"], str(tmp_path))
    session.init(path, session.DEFAULT_TEMPLATE.replace("# Current State\n_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\n",
                                                         "# Current State\n_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\nPorting the parser; tests pass.\n"))
    r = run_mem("session", "compact", "--hook", input=json.dumps(payload))
    assert r.returncode == 0, r.stderr
    ctx = json.loads(r.stdout)["hookSpecificOutput"]
    assert ctx["hookEventName"] == "SessionStart" and "Porting the parser; tests pass." in ctx["additionalContext"]
    assert len(ctx["additionalContext"]) < 10_000
    pre = json.loads(json.loads((FIX / "001-PreCompact.json").read_text())["stdin_raw"])
    pre["cwd"] = str(tmp_path)
    session.save_state(pre["session_id"], {"tokens_at_last_update": 50_000, "initialized": True})
    r = run_mem("session", "compact", "--hook", input=json.dumps(pre))
    assert r.returncode == 0 and r.stdout == ""
    assert session.load_state(pre["session_id"])["tokens_at_last_update"] == 0
    r = run_mem("session", "compact", "--hook", "--bogus", input="{}")
    assert r.returncode == 0 and r.stdout == "" and r.stderr.startswith("mem: hook:")


def test_compact_context_fits_a_hook_when_notes_are_huge(tmp_path):
    p = tmp_path / "summary.md"
    p.write_text("".join(f"# S{i}\n_d_\n" + ("line of notes\n" * 700) for i in range(6)))
    text = session.compact_context(str(p))
    assert len(text) <= 9_500 and str(p) in text[-300:]
