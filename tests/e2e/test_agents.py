"""The real Codex CLI and Gemini CLI, end to end: a session recorded again and read by mem, and mem's hooks in each.

Skipped unless MEM_E2E=1 (they install the clients from npm): run ``make e2e``.
scripts/record_agents.py drives the client against tests/e2e/fakeagents.py and
writes what tests/fixtures holds, here into a temporary directory.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts import record_agents  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("MEM_E2E") != "1", reason="end-to-end: set MEM_E2E=1 (make e2e)")
SESSION_GLOB = {"codex": "rollout-*.jsonl", "gemini": "session-*.jsonl"}


@pytest.mark.parametrize("client", sorted(record_agents.PINNED))
def test_a_session_the_client_writes_is_read_whole(client, tmp_path):
    from mem.core.transcripts import read_transcript, render_for_model

    out = record_agents.record(client, record_agents.PINNED[client], "", tmp_path)
    t = read_transcript(str(next((out / "home").rglob(SESSION_GLOB[client]))))
    assert t.format == client
    text = render_for_model(t.messages)
    for fact in record_agents.FACTS.values():
        assert fact in text, fact


@pytest.mark.parametrize("client", sorted(record_agents.PINNED))
def test_mem_hooks_reach_the_model_and_extract_after_the_turn(client, tmp_path):
    out = record_agents.record(client, record_agents.PINNED[client], "hooks", tmp_path)
    requests = (out / "requests.json").read_text()
    assert "MIGRATION_TIMEOUT=900" in requests  # recall's context
    assert "You have a long-term memory" in requests  # the full SessionStart text
    assert "messages read" in (out / "hooks" / "Stop.stderr").read_text()  # extraction ran on the session file
    assert json.loads((out / "meta.json").read_text())["returncode"] == 0


@pytest.mark.parametrize("client", sorted(record_agents.PINNED))
def test_the_hooks_mem_installs_fire_in_the_client(client, tmp_path):
    """`mem hooks install --client codex|gemini`, then one headless session: every hook fired."""
    exe = record_agents.CACHE / f"{client}-{record_agents.PINNED[client]}" / "node_modules" / ".bin" / client
    if not exe.exists():
        pytest.skip(f"{client} {record_agents.PINNED[client]} is not installed (the tests above install it)")
    out = record_agents.record(client, record_agents.PINNED[client], "installed", tmp_path)
    assert json.loads((out / "meta.json").read_text())["returncode"] == 0
    assert "MIGRATION_TIMEOUT=900" in (out / "requests.json").read_text()  # recall's context reached the model
    fired = {e["event"]: e["last_fired"] is not None for e in json.loads((out / "fired.json").read_text())["entries"]}
    assert fired and all(fired.values()), fired


@pytest.mark.parametrize("client", sorted(record_agents.PINNED))
def test_a_memory_the_client_saves_its_own_way_is_found(client, tmp_path):
    """Codex's ad-hoc note (and its consolidation agent's summary), Gemini CLI's private project memory."""
    from mem.clients import named

    out = record_agents.record(client, record_agents.PINNED[client], "memories", tmp_path)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["returncode"] == 0
    home = out / "home"
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    found = named(client).own_memories(meta["repo"], env)
    assert any(record_agents.FACTS["prompt"] in m.body for m in found), found
