"""The OpenAI-compatible backend against a local chat-completions server that enforces its window:
request translation, tool calls, malformed arguments, missing usage, 429/5xx, windows, extraction."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import write_memory
from mem.core.jobs import llm
from mem.core.jobs.agent import ToolBox, run_agent
from mem.core.memdir.store import MemoryDir

FILE = "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nWe deploy with make ship.\n"


def agent(memdir, *, max_turns=3, deadline_s=30.0, retries=0):
    model = llm.model_for("extract")
    return model, run_agent(model, system="Save what matters.", messages="The session.", toolbox=ToolBox(MemoryDir(memdir)),
                            max_turns=max_turns, deadline_s=deadline_s, retries=retries)


def test_the_backend_is_detected_from_the_environment_and_named(fake_openai):
    config = llm.model_config("extract")
    assert (config.backend, config.model, config.base_url) == ("openai", "local-model", fake_openai.url)
    assert config.source == "env OPENAI_API_KEY"


def test_a_tool_call_round_trip_in_chat_completions_shape(fake_openai, memdir):
    fake_openai.reply_tool_call("write", {"file_path": "deploy.md", "content": FILE})
    fake_openai.reply_text("Saved deploy.md.")
    model, run = agent(memdir)
    assert run.error is None and run.created == ["deploy.md"] and run.text == "Saved deploy.md."
    first, second = (r["body"] for r in fake_openai.requests if r["method"] == "POST")
    assert first["messages"][0] == {"role": "system", "content": "Save what matters."}
    assert first["messages"][1] == {"role": "user", "content": "The session."}
    assert {t["function"]["name"] for t in first["tools"]} >= {"read", "write", "edit"}
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in first["tools"])
    call = second["messages"][2]["tool_calls"][0]
    assert call["function"]["name"] == "write" and json.loads(call["function"]["arguments"])["file_path"] == "deploy.md"
    assert second["messages"][3]["role"] == "tool" and second["messages"][3]["tool_call_id"] == call["id"]
    assert "cache_control" not in json.dumps(second)
    auth = [r["headers"].get("authorization") for r in fake_openai.requests]
    assert set(auth) == {"Bearer test-openai-key-not-a-secret"}
    assert run.usage.input_tokens == sum(r["prompt_tokens"] for r in fake_openai.requests if r["method"] == "POST")


def test_a_malformed_tool_call_gets_one_corrective_turn(fake_openai, memdir):
    fake_openai.reply_malformed_tool_call("write")
    fake_openai.reply_tool_call("write", {"file_path": "deploy.md", "content": FILE})
    fake_openai.reply_text("Saved.")
    _, run = agent(memdir)
    assert run.error is None and run.created == ["deploy.md"]
    posts = [r["body"] for r in fake_openai.requests if r["method"] == "POST"]
    assert len(posts) == 3
    assert "not valid JSON" in posts[1]["messages"][-1]["content"]
    # the malformed call goes back as text: a server that parses tool_calls in history would refuse it
    echo = posts[1]["messages"][-2]
    assert echo["role"] == "assistant" and "tool_calls" not in echo and "[tool call write" in echo["content"]


def test_a_second_malformed_tool_call_fails_the_run_and_writes_nothing(fake_openai, memdir):
    fake_openai.reply_malformed_tool_call("write", '{"file_path": "deploy.md", "content": "---\\nname')
    fake_openai.reply_malformed_tool_call("write", "not json at all")
    _, run = agent(memdir)
    assert run.error_kind == "bad_response" and "not JSON" in run.error
    assert run.created == [] and sorted(p.name for p in Path(memdir).iterdir()) == []


def test_both_requests_of_a_corrective_turn_are_counted_and_charged(fake_openai, memdir):
    from mem.core.jobs.budget import Caps, Spend

    fake_openai.reply_malformed_tool_call("write")
    fake_openai.reply_tool_call("write", {"file_path": "deploy.md", "content": FILE})
    fake_openai.reply_text("Saved.")
    spend = Spend(Caps(None, None))
    model = llm.model_for("extract")
    run = run_agent(model, system="Save what matters.", messages="The session.", toolbox=ToolBox(MemoryDir(memdir)),
                    max_turns=3, deadline_s=30.0, retries=0, spend=spend)
    sent = sum(r["prompt_tokens"] for r in fake_openai.requests if r["method"] == "POST")
    assert run.error is None and len([r for r in fake_openai.requests if r["method"] == "POST"]) == 3
    assert run.usage.input_tokens == spend.input == sent


def test_a_failed_corrective_turn_is_charged_too(fake_openai, memdir):
    from mem.core.jobs.budget import Caps, Spend

    fake_openai.reply_malformed_tool_call("write", '{"file_path": "deploy.md", "content": "---\\nname')
    fake_openai.reply_malformed_tool_call("write", "not json at all")
    spend = Spend(Caps(None, None))
    model = llm.model_for("extract")
    run = run_agent(model, system="Save what matters.", messages="The session.", toolbox=ToolBox(MemoryDir(memdir)),
                    max_turns=3, deadline_s=30.0, retries=0, spend=spend)
    assert run.error_kind == "bad_response"
    assert spend.input == sum(r["prompt_tokens"] for r in fake_openai.requests if r["method"] == "POST") > 0


def test_missing_usage_is_estimated_and_says_so(fake_openai, memdir):
    fake_openai.usage = False
    fake_openai.reply_text("Nothing to save.")
    _, run = agent(memdir)
    usage = run.usage.as_dict()
    assert usage["estimated"] == 1 and usage["input_tokens"] > 0 and usage["output_tokens"] > 0


def test_rate_limit_with_retry_after_is_waited_out(fake_openai, memdir):
    fake_openai.reply_status(429, "slow down", retry_after=1)
    fake_openai.reply_status(503, "busy")
    fake_openai.reply_text("Done.")
    started = time.monotonic()
    _, run = agent(memdir, retries=2)
    assert run.error is None and run.text == "Done."
    # the server's Retry-After (1 s), not our 0.5 s, then our 1 s for the 503: our pauses alone are 1.5 s
    assert time.monotonic() - started >= 2.0


@pytest.mark.parametrize(("status", "text", "kind"), [
    (429, "rate limited", "overloaded"), (500, "boom", "status"), (401, "bad key", "auth"),
    (400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", "over_window"),
    (400, "messages: bad", "status")])
def test_errors_map_to_mem_kinds(fake_openai, status, text, kind):
    fake_openai.reply_status(status, text, retry_after=2 if status == 429 else None)
    with pytest.raises(llm.ModelError) as exc:
        llm.model_for("forget").create(messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == kind and exc.value.status == status
    assert exc.value.retry_after == (2 if status == 429 else None)
    assert "test-openai-key" not in str(exc.value)


@pytest.mark.parametrize(("answer", "said"), [
    ({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
     "200 application/json, an object with type, role, content"),
    ({"choices": []}, "200 application/json, an object with choices, usage"),  # the fake adds usage
    ("<html>gateway</html>", "200 application/json, 20 characters of text")])
def test_an_answer_that_is_not_a_chat_completion_says_what_came(fake_openai, answer, said):
    # a 200 that is not a completion (another server on the port, a body the close cut short): the error
    # says what came, by shape only (an echoing server would show the key), so a flaky run tells where it came from
    fake_openai.reply(answer)
    with pytest.raises(llm.ModelError) as exc:
        llm.model_for("forget").create(messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "bad_response"
    assert str(exc.value) == f"the model server's answer is not a chat completion ({said})"
    assert "test-openai-key" not in str(exc.value) and "gateway" not in str(exc.value)


def test_a_slow_server_is_a_timeout(fake_openai):
    fake_openai.reply_text("late", delay=3)
    with pytest.raises(llm.ModelError) as exc:
        llm.model_for("forget", timeout=0.5).create(messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "timeout"


def test_the_window_comes_from_the_server_else_the_environment(fake_openai, monkeypatch):
    fake_openai.context_window = 8_192
    limits = llm.model_for("extract").limits()
    assert limits.context_window == 8_192 and limits.max_output == 2_048
    fake_openai.models_report_window = False
    assert llm.model_for("extract").limits().context_window == 32_768  # the default
    monkeypatch.setenv("MEM_CONTEXT_WINDOW", "16000")
    assert llm.model_for("extract").limits().context_window == 16_000
    fake_openai.models_report_window = True
    assert llm.model_for("extract").limits().context_window == 8_192  # the server's, lower
    monkeypatch.setenv("MEM_CONTEXT_WINDOW", "4000")
    assert llm.model_for("extract").limits().context_window == 4_000  # the user asked for less


def test_an_agent_in_a_small_window_never_sends_an_over_window_request(fake_openai, memdir):
    fake_openai.context_window = 8_192
    for i in range(12):
        write_memory(memdir, f"m{i}.md", name=f"m{i}", description="a memory", type="project")
        (memdir / f"m{i}.md").write_text(FILE + "x" * 6_000)
    fake_openai.respond_with(lambda body: {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{len(body['messages'])}", "type": "function",
             "function": {"name": "read", "arguments": json.dumps({"file_path": f"m{len(body['messages']) % 12}.md"})}}]}}]})
    _, run = agent(memdir, max_turns=10)
    posts = [r for r in fake_openai.requests if r["method"] == "POST"]
    assert {r["status"] for r in posts} == {200}
    assert max(r["prompt_tokens"] + r["body"]["max_tokens"] for r in posts) <= 8_192
    assert run.turns >= 3


def test_streamed_answers_are_served_too(fake_openai):
    # the fake speaks SSE when asked (a client that streams would see the same answer)
    import http.client

    fake_openai.reply_tool_call("read", {"file_path": "a.md"})
    host, port = fake_openai._server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"model": "local-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
        headers={"content-type": "application/json"})
    events = [line[6:] for line in conn.getresponse().read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    args = "".join(c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("arguments", "")
                   for c in map(json.loads, events[:-1]))
    assert json.loads(args) == {"file_path": "a.md"}


def test_a_multi_mb_session_through_a_32k_window_reaches_the_model_whole(fake_openai, memdir, tmp_path):
    from mem.core.jobs import extract as ex
    from sessions import write_session

    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=3_000_000)
    assert len(facts) >= 10 and path.stat().st_size > 3_000_000
    fake_openai.context_window = 32_768  # reported by /v1/models, as vLLM does
    fake_openai.respond_with(lambda body: {"choices": [{"index": 0, "finish_reason": "stop",
                                                        "message": {"role": "assistant", "content": "Nothing new."}}]})
    result = ex.extract(ex.ExtractRequest(MemoryDir(memdir), transcript=str(path)))
    posts = [r for r in fake_openai.requests if r["method"] == "POST"]
    assert {r["status"] for r in posts} == {200}  # not one request over the window
    assert max(r["prompt_tokens"] + r["body"]["max_tokens"] for r in posts) <= 32_768
    sent = [r["body"]["messages"][1]["content"] for r in posts]
    assert result.windows == len(sent) > 5
    assert [f for f in facts if not any(f in p for p in sent)] == []
    assert result.usage["calls"] == len(sent)


@pytest.mark.parametrize("flavour", ["llama.cpp", "ollama"])
def test_the_window_from_llama_cpp_props_or_ollama_show(fake_openai, flavour):
    fake_openai.models_report_window = False
    fake_openai.flavour = flavour
    fake_openai.context_window = 12_288
    assert llm.model_for("extract").limits().context_window == 12_288
