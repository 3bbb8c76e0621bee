"""mem session update with a model, against a real local Messages-API server."""

from __future__ import annotations

import json
from pathlib import Path

from mem.core import session

FIX = Path(__file__).parent / "fixtures" / "session"
CS = "_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\n"


def setup_notes(tmp_path):
    path = session.notes_path("63ec8da7-3d1c-4d82-927e-992a0039be2f", str(tmp_path))
    session.init(path, session.DEFAULT_TEMPLATE)
    return Path(path)


def run_update(run_mem, tmp_path, fake_api, *extra):
    return run_mem("session", "update", "--transcript", str(FIX / "06-compact.jsonl"), "--project", str(tmp_path), *extra,
                   env={"ANTHROPIC_BASE_URL": fake_api.url})


def test_normal_update_edits_only_below_headers(run_mem, tmp_path, fake_api):
    notes = setup_notes(tmp_path)
    fake_api.reply_tool_use("edit", {"file_path": "summary.md", "old_string": CS, "new_string": CS + "Saving the tabs preference.\n"})
    fake_api.reply_text("")
    r = run_update(run_mem, tmp_path, fake_api, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["updated"] is True
    assert "Saving the tabs preference.\n" in notes.read_text()
    body = fake_api.requests[0]["body"]
    assert [t["name"] for t in body["tools"]] == ["edit"]
    text = body["messages"][0]["content"][0]["text"]
    assert "<current_notes_content>" in text and str(notes) in text and "remember that I prefer tabs" in text
    # the conversation first; the rules, then the order to edit, last
    assert text.startswith("The conversation so far:\n\n<conversation>\n")
    assert text.index("</conversation>") < text.index("<current_notes_content>") < text.index("Rules for bringing")
    assert text.rstrip().endswith(f"Now update {notes} with the edit tool: make all your edits in one turn, then stop.")
    assert (body["max_tokens"], body["model"]) == (8_192, "claude-sonnet-5-5")


def test_deleting_a_header_is_rejected_and_restored(run_mem, tmp_path, fake_api):
    notes = setup_notes(tmp_path)
    before = notes.read_bytes()
    fake_api.reply_tool_use("edit", {"file_path": "summary.md", "old_string": "# Workflow\n", "new_string": ""})
    fake_api.reply_text("")
    r = run_update(run_mem, tmp_path, fake_api)
    assert r.returncode == 4 and "structure" in r.stderr
    assert notes.read_bytes() == before


def test_adding_a_section_is_rejected_and_restored(run_mem, tmp_path, fake_api):
    notes = setup_notes(tmp_path)
    before = notes.read_bytes()
    last = "_Step by step, what was attempted, done? Very terse summary for each step_\n"
    fake_api.reply_tool_use("edit", {"file_path": "summary.md", "old_string": last, "new_string": last + "\n# My section\n_new_\n"})
    fake_api.reply_text("")
    r = run_update(run_mem, tmp_path, fake_api)
    assert r.returncode == 4
    assert notes.read_bytes() == before


def test_other_files_are_out_of_reach(run_mem, tmp_path, fake_api):
    notes = setup_notes(tmp_path)
    fake_api.reply_tool_use("edit", {"file_path": "../../other.md", "old_string": "a", "new_string": "b"})
    fake_api.reply_text("")
    r = run_update(run_mem, tmp_path, fake_api, "--json")
    assert r.returncode == 0, r.stderr
    result = fake_api.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert notes.read_text() == session.DEFAULT_TEMPLATE


def test_if_due_skips_without_a_model_call(run_mem, tmp_path, fake_api):
    setup_notes(tmp_path)
    r = run_update(run_mem, tmp_path, fake_api, "--if-due", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["skipped"] == "not_due"
    assert fake_api.requests == []


def test_custom_prompt_is_used(run_mem, tmp_path, fake_api, isolated_env):
    cfg = isolated_env / ".claude" / "session-memory" / "config"
    cfg.mkdir(parents=True)
    (cfg / "prompt.md").write_text("CUSTOM for {{notesPath}} {{unknown}}")
    setup_notes(tmp_path)
    fake_api.reply_text("")
    assert run_update(run_mem, tmp_path, fake_api).returncode == 0
    text = fake_api.requests[0]["body"]["messages"][0]["content"][0]["text"]
    assert "</conversation>\n\nCUSTOM for /" in text and "{{unknown}}" in text


def test_no_key_is_exit_3(run_mem, tmp_path):
    setup_notes(tmp_path)
    r = run_mem("session", "update", "--transcript", str(FIX / "06-compact.jsonl"), "--project", str(tmp_path))
    assert r.returncode == 3 and "ANTHROPIC_API_KEY" in r.stderr


def test_stop_hook_runs_only_when_due_and_never_fails(run_mem, tmp_path, fake_api):
    setup_notes(tmp_path)
    payload = {"session_id": "63ec8da7-3d1c-4d82-927e-992a0039be2f", "hook_event_name": "Stop", "cwd": str(tmp_path),
               "transcript_path": str(FIX / "06-compact.jsonl"), "stop_hook_active": False}
    r = run_mem("session", "update", "--hook", input=json.dumps(payload), env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0 and r.stdout == "" and "not updating" in r.stderr
    assert fake_api.requests == []  # the recorded session is far below 10,000 tokens
    r = run_mem("session", "update", "--hook", input="not json")
    assert r.returncode == 0 and r.stdout == "" and r.stderr.startswith("mem: hook:")
