"""The tool-use loop against a real local Messages-API server with scripted multi-turn replies."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import write_memory
from fakeapi import message, tool_use_block
from mem.core.jobs import llm
from mem.core.jobs.agent import ToolBox, run_agent
from mem.core.memdir.store import MemoryDir

GOOD = "---\nname: user-role\ndescription: the user is a data engineer\ntype: user\n---\n\nData engineer.\n"


@pytest.fixture
def root(tmp_path) -> Path:
    d = tmp_path / "memory"
    d.mkdir()
    return d


def model(timeout: float = 10) -> llm.Model:
    return llm.Model(llm.model_config("extract", timeout=timeout))


def results_sent(request: dict) -> list[dict]:
    """The tool_result blocks of the last user message of a recorded request."""
    last = request["body"]["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if b["type"] == "tool_result"]


def test_read_then_write(fake_api, root):
    (root / "MEMORY.md").write_text("")
    fake_api.reply_tool_use("read", {"file_path": "MEMORY.md"}, input_tokens=1000, output_tokens=10)
    fake_api.reply_tool_uses(("write", {"file_path": "user-role.md", "content": GOOD}),
                             ("edit", {"file_path": "MEMORY.md", "old_string": "", "new_string": "x"}),
                             input_tokens=1200, output_tokens=200)
    fake_api.reply_text("Saved user-role.md.", input_tokens=1300, output_tokens=5)
    box = ToolBox(MemoryDir(root))
    result = run_agent(model(), system="SYSTEM", messages="the conversation", toolbox=box, max_turns=5)
    assert result.stop_reason == "end_turn" and result.turns == 3
    assert result.text == "Saved user-role.md."
    assert result.created == ["user-role.md"] and result.files_written == ["user-role.md"]
    assert (root / "user-role.md").read_text() == GOOD
    assert result.usage.as_dict() == {"input_tokens": 3500, "output_tokens": 215, "cache_creation_input_tokens": 0,
                                      "cache_read_input_tokens": 0, "calls": 3}
    assert [(c.name, c.ok) for c in result.tool_calls] == [("read", True), ("write", True), ("edit", False)]
    # turn 2 saw the read result; turn 3 saw both results, the bad edit flagged as an error
    first_results = results_sent(fake_api.requests[1])
    assert len(first_results) == 1 and "is_error" not in first_results[0]
    second = results_sent(fake_api.requests[2])
    assert [r.get("is_error", False) for r in second] == [False, True]
    assert "old_string is empty" in second[1]["content"]
    # the assistant turns are sent back as they came, tool_use ids matching the results
    sent = fake_api.requests[2]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    uses = [b["id"] for b in sent[3]["content"] if b["type"] == "tool_use"]
    assert uses == [r["tool_use_id"] for r in second]


def test_request_shape_tools_and_prompt_caching(fake_api, root):
    fake_api.reply_tool_use("ls", {})
    fake_api.reply_text("done")
    box = ToolBox(MemoryDir(root))
    run_agent(model(), system="SYSTEM PROMPT", messages="USER PROMPT", toolbox=box, max_turns=3, max_tokens=1234)
    first, second = (r["body"] for r in fake_api.requests)
    assert first["system"] == [{"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}}]
    assert [t["name"] for t in first["tools"]] == ["read", "grep", "glob", "ls", "write", "edit"]
    assert all("cache_control" not in t for t in first["tools"])  # the system's mark covers them
    assert first["max_tokens"] == 1234
    assert first["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][0]["content"][0]["text"] == "USER PROMPT"
    # the newest turn carries the moving breakpoint; at most 4 in all
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    marks = sum("cache_control" in b for m in second["messages"] for b in m["content"]) + 1
    assert marks <= 4
    for tool in first["tools"]:
        assert tool["input_schema"]["type"] == "object" and tool["description"]


def test_update_of_an_existing_file(fake_api, root):
    write_memory(root, "user-role.md", name="user-role", description="the user is an engineer", body="Engineer.\n")
    (root / "MEMORY.md").write_text("- [User role](user-role.md) — engineer\n")
    fake_api.reply_tool_use("read", {"file_path": "user-role.md"})
    fake_api.reply_tool_uses(
        ("edit", {"file_path": "user-role.md", "old_string": "Engineer.", "new_string": "Data engineer, on call this week."}),
        ("edit", {"file_path": "MEMORY.md", "old_string": "— engineer", "new_string": "— data engineer"}),
    )
    fake_api.reply_text("Updated.")
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    assert result.updated == ["user-role.md", "MEMORY.md"] and result.created == []
    assert "Data engineer, on call this week." in (root / "user-role.md").read_text()
    assert (root / "MEMORY.md").read_text() == "- [User role](user-role.md) — data engineer\n"


@pytest.mark.parametrize("target", ["../../.ssh/x", "../escape.md", "ABSOLUTE", "link/evil.md", "dangling.md"])
def test_path_escapes_from_the_model_write_nothing_outside(fake_api, root, tmp_path, target):
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "dangling.md").symlink_to(tmp_path / "gone.md")
    if target == "ABSOLUTE":
        target = str(tmp_path / "abs.md")
    fake_api.reply_tool_uses(("write", {"file_path": target, "content": GOOD}),
                             ("edit", {"file_path": target, "old_string": "a", "new_string": "b"}))
    fake_api.reply_text("I could not.")
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    assert result.stop_reason == "end_turn"
    assert [c.ok for c in result.tool_calls] == [False, False]
    assert all(r.get("is_error") for r in results_sent(fake_api.requests[1]))
    assert result.files_written == []
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory", "outside"]
    assert sorted(p.name for p in root.iterdir()) == ["dangling.md", "link"]


def test_secret_in_proposed_content_is_refused(fake_api, root):
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    fake_api.reply_tool_use("write", {"file_path": "tokens.md", "content": GOOD + f"token: {key}\n"})
    fake_api.reply_tool_use("write", {"file_path": "user-role.md", "content": GOOD})
    fake_api.reply_text("Saved without the token.")
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    refusal = results_sent(fake_api.requests[1])[0]
    assert refusal["is_error"] and "contains a secret" in refusal["content"] and key not in refusal["content"]
    assert result.created == ["user-role.md"]
    assert not (root / "tokens.md").exists()
    assert key not in "".join(p.read_text() for p in root.iterdir())


def test_malformed_tool_input_is_an_error_result_and_the_run_goes_on(fake_api, root):
    fake_api.reply(message([tool_use_block("write", {"file_path": "x.md"}),
                            tool_use_block("write", {"file_path": ["x.md"], "content": GOOD}),
                            tool_use_block("nonsense", {}),
                            tool_use_block("read", "not an object")], stop_reason="tool_use"))
    fake_api.reply_text("ok")
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    assert result.stop_reason == "end_turn" and result.turns == 2
    sent = results_sent(fake_api.requests[1])
    assert [r.get("is_error") for r in sent] == [True, True, True, True]
    assert "missing required field 'content'" in sent[0]["content"]
    assert "must be a string, got list" in sent[1]["content"]
    assert "no tool named 'nonsense'" in sent[2]["content"]
    assert "expected a JSON object" in sent[3]["content"]
    assert list(root.iterdir()) == []


def test_turn_budget_exhausted(fake_api, root):
    for i in range(3):
        fake_api.reply_tool_use("ls", {})
    fake_api.reply_text("never asked for")
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=3)
    assert result.stop_reason == "max_turns" and result.turns == 3
    assert len(fake_api.requests) == 3 and fake_api.remaining == 1
    assert len(result.tool_calls) == 3  # the last turn's tools still ran


def test_tools_of_the_last_turn_run(fake_api, root):
    fake_api.reply_tool_use("write", {"file_path": "user-role.md", "content": GOOD})
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=1)
    assert result.stop_reason == "max_turns" and result.created == ["user-role.md"]


def test_wall_clock_budget(fake_api, root):
    fake_api.reply(message([tool_use_block("write", {"file_path": "user-role.md", "content": GOOD})],
                           stop_reason="tool_use"))
    fake_api.reply_text("too late", delay=3)
    started = time.monotonic()
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5, deadline_s=1.0)
    assert result.stop_reason == "deadline" and result.turns == 1 and result.error is None
    assert result.created == ["user-role.md"]
    assert time.monotonic() - started < 2.5
    assert len(fake_api.requests) == 2
    # a run whose budget is already spent makes no call at all
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5, deadline_s=0)
    assert result.stop_reason == "deadline" and result.turns == 0 and len(fake_api.requests) == 2


def test_model_error_mid_run_keeps_what_was_written(fake_api, root):
    fake_api.reply_tool_use("write", {"file_path": "user-role.md", "content": GOOD})
    fake_api.reply_status(529)
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5)
    assert result.stop_reason == "error" and result.error_kind == "overloaded"
    assert "529" in result.error
    assert result.created == ["user-role.md"] and result.turns == 1
    assert result.usage.calls == 1


def test_debug_log_names_every_turn_and_tool(fake_api, root):
    fake_api.reply_tool_use("read", {"file_path": "/etc/passwd"})
    fake_api.reply_text("done")
    lines: list[str] = []
    run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root), log=lines.append), max_turns=5,
              log=lines.append)
    assert lines[0] == "agent turn 1/5: 1 messages"
    assert lines[1].startswith('tool read {"file_path": "/etc/passwd"} -> refused: Error: refused: /etc/passwd is outside')
    assert lines[2] == "agent turn 2/5: 3 messages"


def test_transient_failures_are_retried_within_the_budget(fake_api, root):
    fake_api.reply_status(529)
    fake_api.reply_status(500)
    fake_api.reply_text("done")
    lines: list[str] = []
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), max_turns=5,
                       deadline_s=30, retries=2, log=lines.append)
    assert result.stop_reason == "end_turn" and result.turns == 1 and result.error is None
    assert len(fake_api.requests) == 3
    assert [line.split(";")[1].strip() for line in lines if "retry" in line] == ["retry 1/2 in 0.5s", "retry 2/2 in 1s"]
    # a request the server rejects is not tried again
    fake_api.reply_status(400)
    result = run_agent(model(), system="S", messages="U", toolbox=ToolBox(MemoryDir(root)), retries=2)
    assert result.stop_reason == "error" and len(fake_api.requests) == 4
