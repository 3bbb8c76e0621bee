"""The recall selector through the OpenAI-compatible backend: the same stdlib path as the hook,
within its deadline, with no SDK imported."""

from __future__ import annotations

import json
import time

import pytest

from conftest import write_memory
from mem.core import recall
from mem.core.recall.model import SELECTION_SCHEMA
from mem.core.memdir.store import MemoryDir

QUERY = "the staging deploy failed on a migration timeout"


@pytest.fixture
def memories(memdir):
    write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    write_memory(memdir, "tabs.md", name="tabs", description="user prefers tabs", body="Tabs.\n")
    return memdir


def test_the_selector_asks_the_chat_completions_server(memories, fake_openai):
    fake_openai.reply_text(json.dumps({"selected_memories": ["tabs.md"]}))
    r = recall.recall(MemoryDir(str(memories)), QUERY, always_ask=True)
    assert (r.strategy, r.model, [s.relpath for s in r.selected]) == ("model", "local-model", ["tabs.md"])
    assert r.tokens["calls"] == 1 and r.tokens["input_tokens"] == fake_openai.requests[0]["prompt_tokens"]
    body = fake_openai.requests[0]["body"]
    assert body["messages"][0]["role"] == "system" and "Query: " + QUERY in body["messages"][1]["content"]
    assert body["response_format"]["json_schema"]["schema"] == SELECTION_SCHEMA
    assert body["max_tokens"] == 256 and body["temperature"] == 0.0


def test_a_server_without_structured_output_is_asked_again_without(memories, fake_openai):
    fake_openai.reply_status(400, "response_format json_schema is not supported")
    fake_openai.reply_text('{"selected_memories": ["staging.md"]}')
    r = recall.recall(MemoryDir(str(memories)), QUERY, always_ask=True)
    assert r.strategy == "model" and [s.relpath for s in r.selected] == ["staging.md"]
    assert "response_format" not in fake_openai.requests[1]["body"]


def test_a_slow_server_falls_back_by_the_deadline(memories, fake_openai):
    fake_openai.reply_text('{"selected_memories": ["tabs.md"]}', delay=5)
    started = time.monotonic()
    r = recall.recall(MemoryDir(str(memories)), QUERY, always_ask=True, deadline=time.monotonic() + 0.5)
    assert time.monotonic() - started < 2.5
    assert (r.strategy, r.fallback_reason) == ("offline", "timeout")


def test_the_hook_uses_it_and_loads_no_sdk(memories, fake_openai):
    from test_imports import probe

    fake_openai.reply_text('{"selected_memories": ["tabs.md"]}')
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memories),
                          "hook_event_name": "UserPromptSubmit", "prompt": "which indentation style do I like?"})
    out, loaded = probe("recall", "--hook", "--always-ask", "--dir", str(memories), input=payload,
                        heavy=("anthropic", "httpx", "pydantic", "openai", "http", "email", "ssl"))
    assert "tabs.md" in json.loads(out)["hookSpecificOutput"]["additionalContext"] and loaded == []
    (post,) = [r for r in fake_openai.requests if r["method"] == "POST"]
    assert post["path"] == "/v1/chat/completions" and post["status"] == 200
