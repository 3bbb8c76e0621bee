"""No secret from a transcript reaches a model: session notes and the dream's search_transcripts redact
what they send, as extract does (the real ``mem`` against the local Messages-API server)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from mem.core import session

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets-bench"))
from secrets_bench import cases  # noqa: E402 - the labelled set, generated

SESSION = "63ec8da7-3d1c-4d82-927e-992a0039be2f"
SECRETS = [c for c in cases() if c.is_secret]
CS = "_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._\n"


def record(uuid: str, text: str, role: str = "user") -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"parentUuid": None, "isSidechain": False, "type": role, "uuid": uuid, "sessionId": SESSION,
                       "timestamp": "2026-11-25T10:00:00.000Z", "cwd": "/home/u/repo",
                       "message": {"role": role, "content": content}})


def write_transcript(path: Path) -> Path:
    lines = []
    for i, case in enumerate(SECRETS):
        lines.append(record(f"u{i}", f"here is what I use ({case.kind}):\n{case.text}"))
        lines.append(record(f"a{i}", f"Noted the {case.kind} setting.", role="assistant"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def sent_strings(api) -> str:
    """Every string of every request body, joined (JSON-escaping would hide a key's newlines)."""
    out: list[str] = []

    def walk(value):
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for request in api.requests:
        walk(request["body"])
    return "\n".join(out)


def test_session_update_sends_no_secret_from_the_transcript_or_the_notes(run_mem, tmp_path, fake_api):
    transcript = write_transcript(tmp_path / "t.jsonl")
    notes = Path(session.notes_path(SESSION, str(tmp_path)))
    session.init(str(notes), session.DEFAULT_TEMPLATE)
    held = SECRETS[0]
    notes.write_text(notes.read_text().replace(CS, CS + f"Pasted by hand: {held.text}\n"))
    fake_api.reply_tool_use("edit", {"file_path": "summary.md", "old_string": CS, "new_string": CS + "Wiring the alerts.\n"})
    fake_api.reply_text("")
    r = run_mem("session", "update", "--transcript", str(transcript), "--project", str(tmp_path), "--json",
                env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    sent = sent_strings(fake_api)
    assert "here is what I use (jwt)" in sent and "[REDACTED]" in sent  # the conversation went, redacted
    leaked = [c.kind for c in SECRETS if c.secret in sent]
    assert leaked == []
    # The file is the user's: left as it was (an edit of a file holding a secret is refused anyway).
    assert held.secret in notes.read_text()


def test_dream_search_transcripts_sends_no_secret(run_mem, tmp_path, fake_api):
    from mem.clients import resolve

    project = tmp_path / "proj"
    project.mkdir()
    res = resolve(project=str(project))
    os.makedirs(res.memory_dir)
    (Path(res.memory_dir) / "a.md").write_text("---\nname: alerts\ndescription: where alerts go\ntype: project\n---\n\nAlerts go to Slack.\n")
    (Path(res.memory_dir) / "MEMORY.md").write_text("- [Alerts](a.md) — Slack\n")
    write_transcript(Path(res.transcripts_dir) / f"{SESSION}.jsonl")
    # The worst a model can do: search for the secret itself. A private key spans lines, and a line of
    # its body alone is not recognisable as part of one: known gap, left out here.
    searched = [c for c in SECRETS if "\n" not in c.secret]
    # A prefix, never the whole secret: the model's own call (sent back in the next request) would hold it.
    calls = [("search_transcripts", {"pattern": re.escape(c.secret[:min(12, len(c.secret) - 4)])}) for c in searched]
    for start in range(0, len(calls), 10):
        fake_api.reply_tool_uses(*calls[start:start + 10])
    fake_api.reply_text("Nothing to change.")
    r = run_mem("dream", "--force", "--project", str(project), env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    results = [block for request in fake_api.requests for message in request["body"]["messages"]
               if isinstance(message["content"], list) for block in message["content"]
               if block.get("type") == "tool_result"]
    assert len(results) >= len(searched)
    found = [b for b in results if not b.get("is_error") and "[REDACTED]" in str(b["content"])]
    assert len({str(b["content"]) for b in found}) >= len(searched) // 2  # the searches found the lines
    sent = sent_strings(fake_api)
    assert [c.kind for c in searched if c.secret in sent] == []

