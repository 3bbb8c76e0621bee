"""The model selector against a real local Messages-API server, and its fallbacks to the offline ranker."""

from __future__ import annotations

import json
import time

import pytest

from conftest import write_memory
from mem.core.memdir.store import MemoryDir
from mem.core.jobs import llm
from mem.core import recall
from mem.core.recall.model import SELECTION_SCHEMA
from mem.core.memdir import manifest


@pytest.fixture
def memories(memdir):
    write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n", mtime=1_700_000_000)
    write_memory(memdir, "tabs.md", name="tabs", description="user prefers tabs", body="Tabs.\n", mtime=1_700_000_100)
    write_memory(memdir, "sub/grafana.md", name="grafana", description="the latency dashboard",
                 type="reference", body="grafana.internal\n", mtime=1_700_000_200)
    return memdir


QUERY = "the staging deploy failed on a migration timeout"


def ask(memory_dir, *args, **kw):
    """Recall that asks the model whatever the ranker thinks (the routing has its own tests)."""
    return recall.recall(MemoryDir(memory_dir), *args, always_ask=True, **kw)


def test_a_good_selection(memories, fake_api):
    fake_api.reply_text(json.dumps({"selected_memories": ["sub/grafana.md", "staging.md"]}),
                        input_tokens=321, output_tokens=12)
    r = ask(str(memories), QUERY, recent_tools=["Bash", "Read"], model="claude-test-model")
    assert r.strategy == "model" and r.fallback_reason is None
    assert [s.relpath for s in r.selected] == ["sub/grafana.md", "staging.md"]  # the model's order
    assert all(s.score is None for s in r.selected)
    assert r.model == "claude-test-model"
    assert r.tokens["input_tokens"] == 321 and r.tokens["output_tokens"] == 12 and r.tokens["calls"] == 1

    body = fake_api.requests[0]["body"]
    assert body["model"] == "claude-test-model"
    assert body["max_tokens"] == 256
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SELECTION_SCHEMA}}
    assert body["output_config"]["format"]["schema"]["required"] == ["selected_memories"]
    (msg,) = body["messages"]
    mani = manifest.format_manifest(manifest.scan(str(memories)))
    # the manifest in a cached block before the query, which changes with every prompt
    assert msg == {"role": "user", "content": [
        {"type": "text", "text": f"Available memories:\n{mani}", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": f"Query: {QUERY}\n\nRecently used tools: Bash, Read"}]}
    # the manifest is exactly what `mem scan` prints
    assert "- [reference] sub/grafana.md (2023-11-14T22:16:40.000Z): the latency dashboard" in msg["content"][0]["text"]


def test_the_selector_prompt_says_what_it_must(memories, fake_api):
    fake_api.reply_text('{"selected_memories": []}')
    ask(str(memories), QUERY)
    system = fake_api.requests[0]["body"]["system"]
    text = system if isinstance(system, str) else " ".join(b["text"] for b in system)
    low = text.lower()
    assert "at most 5" in low
    assert "clearly help" in low
    assert "empty list" in low
    assert "not by shared words" in low
    assert "overview of the project" in low and "user in general" in low
    assert "recently used tools" in low and "warnings" in low and "gotchas" in low
    assert '{"selected_memories"' in text


def test_an_empty_selection_is_an_answer(memories, fake_api):
    fake_api.reply_text('{"selected_memories": []}')
    r = ask(str(memories), QUERY)
    assert (r.strategy, r.selected, r.fallback_reason) == ("model", [], None)


def test_names_not_in_the_manifest_are_dropped(memories, fake_api):
    fake_api.reply_text(json.dumps({"selected_memories": ["staging.md", "../etc/passwd", "nope.md", 7]}))
    r = ask(str(memories), QUERY)
    assert r.strategy == "model"
    assert [s.relpath for s in r.selected] == ["staging.md"]
    assert r.rejected == ["../etc/passwd", "nope.md", "7"]


def test_only_unknown_names_fall_back_to_the_offline_ranker(memories, fake_api):
    fake_api.reply_text(json.dumps({"selected_memories": ["invented.md"]}))
    r = ask(str(memories), QUERY)
    assert (r.strategy, r.fallback_reason) == ("offline", "unknown_names")
    assert [s.relpath for s in r.selected] == ["staging.md"]


@pytest.mark.parametrize("reply", ["not json at all", '{"selected": ["staging.md"]}', '["staging.md"]',
                                   '{"selected_memories": "staging.md"}'])
def test_malformed_answers_fall_back(memories, fake_api, reply):
    fake_api.reply_text(reply)
    r = ask(str(memories), QUERY)
    assert (r.strategy, r.fallback_reason) == ("offline", "bad_response")
    assert [s.relpath for s in r.selected] == ["staging.md"]
    assert r.tokens is None


def test_overload_falls_back_without_retrying(memories, fake_api):
    fake_api.reply_status(529)
    fake_api.reply_text('{"selected_memories": ["tabs.md"]}')  # a retry would get this
    r = ask(str(memories), QUERY)
    assert (r.strategy, r.fallback_reason) == ("offline", "overloaded")
    assert [s.relpath for s in r.selected] == ["staging.md"]
    assert len(fake_api.requests) == 1


def test_a_timeout_falls_back_in_time(memories, fake_api):
    fake_api.reply_text('{"selected_memories": ["tabs.md"]}', delay=6)
    started = time.monotonic()
    r = ask(str(memories), QUERY, timeout=0.5)
    assert time.monotonic() - started < 4  # the answer would have taken 6 s
    assert (r.strategy, r.fallback_reason) == ("offline", "timeout")
    assert [s.relpath for s in r.selected] == ["staging.md"]


def test_no_credentials_means_offline(memories, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    r = ask(str(memories), QUERY)
    assert (r.strategy, r.fallback_reason) == ("offline", "no_credentials")


def test_offline_never_calls_the_model(memories, fake_api):
    r = recall.recall(MemoryDir(memories), QUERY, offline=True)
    assert r.strategy == "offline" and r.fallback_reason is None
    assert fake_api.requests == []


def test_already_surfaced_memories_leave_the_manifest(memories, fake_api):
    fake_api.reply_text('{"selected_memories": ["staging.md"]}')
    ask(str(memories), QUERY, session_id="s")
    fake_api.reply_text('{"selected_memories": ["tabs.md"]}')
    r = ask(str(memories), "and the tabs question from before", session_id="s")
    content = fake_api.requests[1]["body"]["messages"][0]["content"][0]["text"]
    assert "staging.md" not in content and "tabs.md" in content and "sub/grafana.md" in content
    assert [s.relpath for s in r.selected] == ["tabs.md"]
    # a name already surfaced is not in the manifest, so it is rejected
    fake_api.reply_text('{"selected_memories": ["staging.md", "sub/grafana.md"]}')
    r = ask(str(memories), "what about the latency dashboard", session_id="s")
    assert [s.relpath for s in r.selected] == ["sub/grafana.md"] and r.rejected == ["staging.md"]


def test_model_choice_for_recall(memories, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_DEFAULT_SONNET_MODEL", "sonnet-from-env")
    fake_api.reply_text('{"selected_memories": []}')
    ask(str(memories), QUERY)
    assert fake_api.requests[-1]["body"]["model"] == "sonnet-from-env"
    monkeypatch.setenv("MEM_MODEL", "mem-model")
    fake_api.reply_text('{"selected_memories": []}')
    ask(str(memories), QUERY)
    assert fake_api.requests[-1]["body"]["model"] == "mem-model"


def test_the_installed_command_falls_back_and_says_why(memories, fake_api, run_mem):
    fake_api.reply_status(529)
    p = run_mem("recall", "--json", "--always-ask", QUERY)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert (data["strategy"], data["fallback_reason"]) == ("offline", "overloaded")
    assert [s["relpath"] for s in data["selected"]] == ["staging.md"]
    assert "model selector failed (overloaded)" in p.stderr


def test_the_installed_command_reports_tokens(memories, fake_api, run_mem):
    fake_api.reply_text('{"selected_memories": ["tabs.md"]}', input_tokens=50, output_tokens=7)
    p = run_mem("recall", "--json", "--always-ask", "--recent-tools", "Bash,Edit", "--recent-tools", "Read", "which indentation style")
    data = json.loads(p.stdout)
    assert data["strategy"] == "model" and data["tokens"]["input_tokens"] == 50
    assert data["recent_tools"] == ["Bash", "Edit", "Read"]
    assert fake_api.requests[0]["body"]["messages"][0]["content"][-1]["text"].endswith("Recently used tools: Bash, Edit, Read")


def test_the_installed_command_takes_the_recall_model_setting(memories, fake_api, run_mem):
    fake_api.reply_text('{"selected_memories": ["tabs.md"]}')
    p = run_mem("recall", "--json", "--always-ask", "which indentation style",
                env={"MEM_MODEL": "slow-model", "MEM_MODEL_RECALL": "claude-haiku-4-5"})
    assert p.returncode == 0, p.stderr
    body = fake_api.requests[0]["body"]
    assert body["model"] == "claude-haiku-4-5" and json.loads(p.stdout)["model"] == "claude-haiku-4-5"
    assert (body["temperature"], body["max_tokens"]) == (0.0, 256)
