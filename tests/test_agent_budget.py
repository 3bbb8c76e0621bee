"""The agent loop within a token budget, against a local server that enforces the context window."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_memory
from fakeapi import message, tool_use_block
from mem.core.jobs import llm
from mem.core.jobs.agent import FINISH_NOW, ToolBox, run_agent
from mem.core.memdir.store import MemoryDir

GOOD = "---\nname: user-role\ndescription: the user is a data engineer\ntype: user\n---\n\nData engineer.\n"


@pytest.fixture
def root(tmp_path) -> Path:
    d = tmp_path / "memory"
    d.mkdir()
    body = "".join(f"{i:05d} the ingest job retries with backoff; see runbook section {i % 17}.\n" for i in range(540))
    write_memory(d, "big.md", name="big", description="a 36 KB memory", body=body)
    assert 35_000 < (d / "big.md").stat().st_size < 40_000
    return d


def window(fake_api, monkeypatch, tokens: int | None) -> int:
    """Give the server and the client the same window (the client learns it from the environment)."""
    if tokens is not None:
        fake_api.context_window = tokens
        monkeypatch.setenv("MEM_CONTEXT_WINDOW", str(tokens))
    return tokens or 200_000


def model() -> llm.Model:
    return llm.Model(llm.model_config("dream", timeout=10))


def greedy_reader(body: dict) -> dict:
    """A model that never stops: every turn it asks to read the 36 KB file twice."""
    calls = [tool_use_block("read", {"file_path": "big.md"}) for _ in range(2)]
    return message(calls, stop_reason="tool_use")


@pytest.mark.parametrize("tokens", [None, 30_000])
def test_a_greedy_reader_runs_40_turns_within_the_window(fake_api, root, monkeypatch, tokens):
    limit = window(fake_api, monkeypatch, tokens)
    fake_api.reply_tool_use("write", {"file_path": "user-role.md", "content": GOOD})
    fake_api.respond_with(greedy_reader)
    lines: list[str] = []
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=40, log=lines.append)
    assert result.error is None and result.stop_reason in ("max_turns", "budget")
    assert {r["status"] for r in fake_api.requests} == {200}  # never a 400 for a request too long
    assert fake_api.max_input_tokens + 8_192 <= limit
    assert result.created == ["user-role.md"] and (root / "user-role.md").read_text() == GOOD
    # without elision 40 turns of two 36 KB reads would need ~900,000 tokens
    sent = str(fake_api.requests[-1]["body"]["messages"])
    assert "[result of read big.md elided:" in sent and "already seen]" in sent
    assert any("elided answered tool calls and results" in line for line in lines)
    if tokens is not None:  # two reads no longer fit one turn: the second is cut, and says why
        assert any("ask for less" in str(r["body"]["messages"][-1]) for r in fake_api.requests)


def test_a_greedy_writer_ends_with_one_finish_now_turn(fake_api, root, monkeypatch):
    """Files written are elided from the history once sent, but what the model says is not: a run
    that keeps talking and writing fills the window. It ends with one request offering no tools;
    every file written before stays, and a write asked for in that last answer is not made."""
    limit = window(fake_api, monkeypatch, 30_000)
    count = iter(range(1000))

    def greedy_writer(body: dict):
        if body.get("tool_choice") == {"type": "none"}:
            late = tool_use_block("write", {"file_path": "late.md", "content": GOOD})
            return message([{"type": "text", "text": "Saved the notes."}, late], stop_reason="tool_use")
        n = next(count)
        content = GOOD.replace("user-role", f"note-{n}") + "Detail line about the pipeline.\n" * 120
        musing = f"Turn {n}: " + "I should keep a note of the deployment details as well. " * 40
        return message([{"type": "text", "text": musing},
                        tool_use_block("write", {"file_path": f"note-{n}.md", "content": content})],
                       stop_reason="tool_use")

    fake_api.respond_with(greedy_writer)
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=40)
    assert result.stop_reason == "budget" and result.error is None and result.text == "Saved the notes."
    assert {r["status"] for r in fake_api.requests} == {200}
    assert fake_api.max_input_tokens + 8_192 <= limit
    assert 3 < len(result.created) < 39 and result.turns == len(result.created) + 1
    for rel in result.created:
        assert (root / rel).is_file()
    assert not (root / "late.md").exists()
    last = fake_api.requests[-1]["body"]
    assert last["tool_choice"] == {"type": "none"} and FINISH_NOW in str(last["messages"][-1])
    assert all("tool_choice" not in r["body"] for r in fake_api.requests[:-1])
    assert "chars elided, already sent]" in str(last["messages"])  # the notes' bodies left the history


def test_a_prompt_larger_than_the_window_makes_no_call(fake_api, root, monkeypatch):
    window(fake_api, monkeypatch, 20_000)
    result = run_agent(model(), system="S", messages="word " * 60_000, toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    assert result.stop_reason == "budget" and result.turns == 0 and fake_api.requests == []
