"""Issue 8: with a team/ directory, extraction routes memories by scope."""

from __future__ import annotations

import json
from pathlib import Path

from fakeapi import first_user_text

FIX = Path(__file__).parent / "fixtures" / "transcripts"
PROJECT = "---\nname: release-train\ndescription: staging deploys ship with the thursday release train\ntype: project\n---\n\nStaging deploys ship with the Thursday release train.\n"
USER = "---\nname: user-role\ndescription: the user is a backend engineer\ntype: user\n---\n\nBackend engineer.\n"


def test_team_memory_goes_to_team_with_its_own_index(run_mem, memdir, fake_api):
    (memdir / "team").mkdir()
    fake_api.reply_tool_uses(("write", {"file_path": "team/release-train.md", "content": PROJECT}),
                             ("write", {"file_path": "user-role.md", "content": USER}),
                             ("write", {"file_path": "logs/2026/01/2026-01-01.md", "content": "- 10:00 x\n"}))
    fake_api.reply_text("Saved two memories.")
    r = run_mem("extract", "--transcript", str(FIX / "claude-code-01-hello.jsonl"), "--json",
                env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert sorted(doc["created"]) == ["team/release-train.md", "user-role.md"]
    assert (memdir / "team" / "MEMORY.md").read_text().startswith("- [Release train](release-train.md) — ")
    assert "](user-role.md)" in (memdir / "MEMORY.md").read_text()
    assert "release-train" not in (memdir / "MEMORY.md").read_text()
    assert not (memdir / "logs").exists()  # daily logs stay out of reach
    body = fake_api.requests[0]["body"]
    prompt = first_user_text(body)
    assert "## Private and team memory" in prompt and "team/MEMORY.md" in prompt
    assert "Do not write under logs/." in body["system"][0]["text"]


def test_without_team_dir_team_is_off_limits(run_mem, memdir, fake_api):
    fake_api.reply_tool_uses(("write", {"file_path": "team/release-train.md", "content": PROJECT}))
    fake_api.reply_text("done")
    r = run_mem("extract", "--transcript", str(FIX / "claude-code-01-hello.jsonl"), "--json",
                env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    assert not (memdir / "team").exists()
    assert "Private and team memory" not in first_user_text(fake_api.requests[0]["body"])
