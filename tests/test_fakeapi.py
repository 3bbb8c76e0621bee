"""The fake Messages-API server itself: token counting, context windows, overload, latency, responder.

Driven with plain urllib and with the real ``anthropic`` SDK, so what the tests
of mem rely on is what a real client sees.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import anthropic
import pytest

import fakeapi
from fakeapi import FakeAnthropic, count_tokens, message, tool_use_block

MODEL = "claude-sonnet-5-5"


@pytest.fixture
def api():
    server = FakeAnthropic().start()
    yield server
    server.stop()


def sdk(api: FakeAnthropic, **kw) -> anthropic.Anthropic:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 30)
    return anthropic.Anthropic(api_key="k", base_url=api.url, **kw)


def post(api: FakeAnthropic, body, *, path: str = "/v1/messages", timeout: float = 30) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(api.url + path, data=data, method="POST",
                                 headers={"content-type": "application/json", "x-api-key": "k"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def body_with(text: str, *, max_tokens: int = 100, model: str = MODEL, **extra) -> dict:
    return {"model": model, "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}], **extra}


def body_of_tokens(n: int, *, max_tokens: int = 100, model: str = MODEL) -> dict:
    """A request that counts exactly ``n`` input tokens (n above the fixed overhead)."""
    base = count_tokens(body_with("", max_tokens=max_tokens, model=model))
    body = body_with("a" * (4 * (n - base)), max_tokens=max_tokens, model=model)
    assert count_tokens(body) == n
    return body


def per_char(text: str) -> float:
    return (count_tokens(body_with(text)) - count_tokens(body_with(""))) / len(text)


# --- the estimate -------------------------------------------------------------------------------------


def test_ascii_is_a_quarter_token_per_char_rounded_up():
    empty = count_tokens(body_with(""))
    assert empty > 0  # the fixed per-request and per-message overhead
    assert count_tokens(body_with("a" * 400)) - empty == 100
    assert count_tokens(body_with("a" * 401)) - empty == 101
    assert count_tokens(body_with("a")) - empty == 1


def test_cjk_costs_more_per_character_than_ascii():
    ascii_rate = per_char("memory " * 100)
    for text in ("記憶を保存する" * 100, "记忆保存" * 100, "메모리를저장합니다" * 100, "ひらがなカタカナ" * 100):
        assert per_char(text) >= 1.0, text[:4]
        assert per_char(text) > 3 * ascii_rate, text[:4]
    assert per_char("é" * 400) == 0.5
    assert per_char("🙂" * 100) == 2.0


def test_a_mixed_string_sums_its_parts():
    empty = count_tokens(body_with(""))
    # 8 ASCII -> 2, 4 kanji -> 4, 2 accented -> 1
    assert count_tokens(body_with("abcdefgh漢字漢字éé")) - empty == 7


def test_system_tools_tool_inputs_and_results_all_count():
    base = body_with("hi")
    n = count_tokens(base)
    big = "x" * 4000  # 1000 tokens

    assert count_tokens({**base, "system": big}) - n >= 1000
    assert count_tokens({**base, "system": [{"type": "text", "text": big, "cache_control": {"type": "ephemeral"}}]}) - n >= 1000

    tool = {"name": "read", "description": big, "input_schema": {"type": "object", "properties": {}}}
    assert count_tokens({**base, "tools": [tool]}) - n >= 1000 + fakeapi.TOOLS_SYSTEM_PROMPT

    def turn(input: dict, result) -> dict:
        return {**base, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [tool_use_block("read", input, id="t1")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": result}]},
        ]}

    small = count_tokens(turn({"file_path": "a.md"}, ""))
    assert count_tokens(turn({"file_path": "a.md", "content": big}, "")) - small >= 1000
    assert count_tokens(turn({"file_path": "a.md"}, big)) - small >= 1000
    assert count_tokens(turn({"file_path": "a.md"}, [{"type": "text", "text": big}])) - small >= 1000


def test_cjk_inside_tool_input_is_counted_as_cjk_not_as_escapes():
    base = count_tokens(body_with("", messages=[{"role": "assistant", "content": [tool_use_block("w", {"c": ""}, id="t")]}]))
    cjk = count_tokens(body_with("", messages=[{"role": "assistant", "content": [tool_use_block("w", {"c": "漢" * 400}, id="t")]}]))
    assert cjk - base == 400


def test_the_count_is_deterministic_and_ignores_cache_control():
    body = body_with("the same words", system="sys")
    assert count_tokens(body) == count_tokens(json.loads(json.dumps(body)))
    plain = {**body, "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 40}]}]}
    cached = {**body, "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 40,
                                                                    "cache_control": {"type": "ephemeral"}}]}]}
    assert count_tokens(plain) == count_tokens(cached)


def test_context_window_table():
    assert fakeapi.context_window_for("claude-sonnet-5-5") == 200_000
    assert fakeapi.context_window_for("claude-anything-new") == 200_000
    assert fakeapi.context_window_for("not-a-claude") == fakeapi.DEFAULT_CONTEXT_WINDOW


# --- usage and the request log -----------------------------------------------------------------------


def test_usage_input_tokens_is_the_count_of_the_request(api):
    api.reply_text("one")
    api.reply_text("two")
    client = sdk(api)
    short = client.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    long_messages = [{"role": "user", "content": "a long question " * 200}]
    longer = client.messages.create(model=MODEL, max_tokens=50, system="be brief", messages=long_messages)

    assert short.usage.input_tokens == count_tokens({"messages": [{"role": "user", "content": "hi"}]})
    assert longer.usage.input_tokens == count_tokens({"system": "be brief", "messages": long_messages})
    assert longer.usage.input_tokens > short.usage.input_tokens + 700
    assert [r["input_tokens"] for r in api.requests] == [short.usage.input_tokens, longer.usage.input_tokens]
    assert [r["status"] for r in api.requests] == [200, 200]
    assert api.max_input_tokens == longer.usage.input_tokens


def test_a_scripted_input_tokens_is_kept(api):
    api.reply_text("forced", input_tokens=7, output_tokens=3)
    api.reply(message([{"type": "text", "text": "forced too"}], input_tokens=0))
    client = sdk(api)
    first = client.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "x" * 4000}])
    second = client.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "x" * 4000}])
    assert (first.usage.input_tokens, first.usage.output_tokens) == (7, 3)
    assert second.usage.input_tokens == 0
    assert api.requests[0]["input_tokens"] > 1000  # the log still has the real count


def test_a_scripted_reply_can_be_used_twice_without_keeping_the_first_count(api):
    reply = message([{"type": "text", "text": "same"}])
    api.reply(reply)
    api.reply(reply)
    client = sdk(api)
    a = client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "short"}])
    b = client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "long " * 500}])
    assert a.usage.input_tokens < b.usage.input_tokens
    assert reply["usage"]["input_tokens"] is None


def test_max_input_tokens_is_zero_before_any_request(api):
    assert api.max_input_tokens == 0


# --- context window ------------------------------------------------------------------------------------


def test_prompt_over_the_window_is_a_400_with_the_real_wording_and_keeps_the_script():
    api = FakeAnthropic(context_window=1000).start()
    try:
        api.reply_text("for the small request")
        too_long = body_of_tokens(1001)
        status, doc = post(api, too_long)
        assert status == 400
        assert doc == {"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "prompt is too long: 1001 tokens > 1000 maximum"}}
        assert api.remaining == 1
        status, doc = post(api, body_with("small"))
        assert status == 200 and doc["content"][0]["text"] == "for the small request"
        assert [r["status"] for r in api.requests] == [400, 200]
        assert api.max_input_tokens == 1001
    finally:
        api.stop()


def test_input_plus_max_tokens_over_the_window_has_its_own_wording():
    api = FakeAnthropic(context_window=1000).start()
    try:
        api.reply_text("fits")
        status, doc = post(api, body_of_tokens(600, max_tokens=401))
        assert status == 400 and doc["error"]["type"] == "invalid_request_error"
        assert doc["error"]["message"] == ("input length and `max_tokens` exceed context limit: 600 + 401 > 1000, "
                                           "decrease input length or `max_tokens` and try again")
        assert api.remaining == 1
        status, doc = post(api, body_of_tokens(600, max_tokens=400))  # exactly the window: accepted
        assert status == 200 and doc["content"][0]["text"] == "fits"
    finally:
        api.stop()


def test_default_window_is_200k_for_claude_models_through_the_sdk(api):
    client = sdk(api)
    over = body_of_tokens(200_001)
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(**over)
    assert exc.value.status_code == 400
    assert exc.value.body["error"]["type"] == "invalid_request_error"
    assert "prompt is too long: 200001 tokens > 200000 maximum" in str(exc.value)

    near = body_of_tokens(198_000, max_tokens=8192)
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(**near)
    assert ("input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again") in str(exc.value)

    api.reply_text("fits")
    ok = client.messages.create(**body_of_tokens(198_000, max_tokens=2000))
    assert ok.usage.input_tokens == 198_000
    assert api.max_input_tokens == 200_001 and api.remaining == 0


def test_window_can_be_changed_on_a_running_server(api):
    api.reply_text("fits again")
    body = body_of_tokens(60_000)
    api.context_window = 50_000
    status, doc = post(api, body)
    assert status == 400 and doc["error"]["message"] == "prompt is too long: 60000 tokens > 50000 maximum"
    api.context_window = None
    status, doc = post(api, body)
    assert status == 200 and doc["content"][0]["text"] == "fits again"


def test_per_model_windows_come_from_the_table(api, monkeypatch):
    monkeypatch.setitem(fakeapi.CONTEXT_WINDOWS, "claude-tiny-1", 500)
    api.reply_text("big model answers")
    body = body_of_tokens(1000)
    status, doc = post(api, {**body, "model": "claude-tiny-1"})
    assert status == 400 and doc["error"]["message"] == "prompt is too long: 1000 tokens > 500 maximum"
    status, doc = post(api, body)
    assert status == 200 and doc["content"][0]["text"] == "big model answers"


def test_malformed_requests_are_400_and_keep_the_script(api):
    api.reply_text("kept")
    assert post(api, b"{not json")[0] == 400
    status, doc = post(api, {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert status == 400 and doc["error"]["message"] == "max_tokens: Field required"
    assert api.remaining == 1 and api.requests[0]["body"] is None and api.requests[0]["input_tokens"] is None


def test_a_body_over_the_size_limit_is_413_request_too_large():
    api = FakeAnthropic(max_request_bytes=2000).start()
    try:
        api.reply_text("kept")
        status, doc = post(api, body_with("x" * 3000))
        assert status == 413
        assert doc["error"]["type"] == "request_too_large"
        assert api.remaining == 1 and api.requests[0]["status"] == 413
        with pytest.raises(anthropic.APIStatusError) as exc:
            sdk(api).messages.create(**body_with("x" * 3000))
        assert exc.value.status_code == 413
        assert api.remaining == 1
    finally:
        api.stop()


def test_the_default_size_limit_is_32_megabytes(api):
    api.reply_text("kept")
    status, doc = post(api, b" " * (fakeapi.MAX_REQUEST_BYTES + 1))
    assert fakeapi.MAX_REQUEST_BYTES == 32_000_000
    assert status == 413 and doc["error"]["type"] == "request_too_large" and api.remaining == 1


def test_the_count_tokens_endpoint_uses_the_same_counter(api):
    messages = [{"role": "user", "content": "count me " * 50}]
    counted = sdk(api).messages.count_tokens(model=MODEL, messages=messages, system="sys")
    assert counted.input_tokens == count_tokens({"system": "sys", "messages": messages})
    assert api.remaining == 0 and api.requests[0]["status"] == 200


# --- overload ------------------------------------------------------------------------------------------


def test_overload_next_answers_529_without_consuming_the_script(api):
    api.reply_text("after the storm")
    api.overload_next(2)
    client = sdk(api)
    for _ in range(2):
        with pytest.raises(anthropic.InternalServerError) as exc:
            client.messages.create(**body_with("hi"))
        assert exc.value.status_code == 529
        assert exc.value.body["error"]["type"] == "overloaded_error"
        assert api.remaining == 1
    assert client.messages.create(**body_with("hi")).content[0].text == "after the storm"
    assert [r["status"] for r in api.requests] == [529, 529, 200]


def test_the_sdk_retries_through_an_overload(api):
    api.reply_text("eventually")
    api.overload_next(1)
    resp = sdk(api, max_retries=2).messages.create(**body_with("hi"))
    assert resp.content[0].text == "eventually"
    assert [r["status"] for r in api.requests] == [529, 200]


def test_reply_status_still_consumes_a_step(api):
    api.reply_status(529)
    api.reply_text("next")
    with pytest.raises(anthropic.APIStatusError) as exc:
        sdk(api).messages.create(**body_with("hi"))
    assert exc.value.status_code == 529 and api.remaining == 1


def test_a_too_long_prompt_is_rejected_before_an_overload_is_spent():
    api = FakeAnthropic(context_window=1000).start()
    try:
        api.overload_next(1)
        assert post(api, body_of_tokens(1001))[0] == 400
        assert post(api, body_with("hi"))[0] == 529
        assert post(api, body_with("hi"))[0] == 500  # script exhausted: the overload was used once
    finally:
        api.stop()


# --- latency and concurrency ---------------------------------------------------------------------------


def test_latency_is_added_to_every_reply(api):
    api.latency = 0.3
    api.reply_text("slow")
    api.reply_text("slower", delay=0.2)
    started = time.monotonic()
    assert post(api, body_with("hi"))[0] == 200
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    assert post(api, body_with("hi"))[0] == 200
    assert time.monotonic() - started >= 0.5
    api.overload_next(1)
    started = time.monotonic()
    assert post(api, body_with("hi"))[0] == 529
    assert time.monotonic() - started >= 0.3


def test_a_slow_reply_does_not_hold_up_other_requests(api):
    held = threading.Event()  # the slow reply waits until the quick one is in
    api.reply_text("slow", delay=held)
    api.reply_text("quick")
    slow: dict = {}
    thread = threading.Thread(target=lambda: slow.update(answer=post(api, body_with("first"))))
    thread.start()
    give_up = time.monotonic() + 10
    while not api.requests and time.monotonic() < give_up:
        time.sleep(0.01)
    assert len(api.requests) == 1  # the slow request has taken its step
    status, doc = post(api, body_with("second"))
    assert status == 200 and doc["content"][0]["text"] == "quick"
    assert thread.is_alive() and "answer" not in slow  # answered while the slow one still waits
    held.set()
    thread.join(timeout=30)
    assert slow["answer"][1]["content"][0]["text"] == "slow"


# --- responder -----------------------------------------------------------------------------------------


def greedy_reader(body: dict) -> dict:
    """An agent that never stops: reads one more file on every turn."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return message([tool_use_block("read", {"file_path": f"note-{turn}.md"})], stop_reason="tool_use")


def test_the_script_comes_first_then_the_responder(api):
    api.reply_text("scripted")
    api.respond_with(lambda body: message([{"type": "text", "text": "responder saw " + body["messages"][-1]["content"]}]))
    client = sdk(api)
    assert client.messages.create(**body_with("one")).content[0].text == "scripted"
    second = client.messages.create(**body_with("two"))
    assert second.content[0].text == "responder saw two"
    assert second.usage.input_tokens == api.requests[1]["input_tokens"] > 0
    api.respond_with(None)
    with pytest.raises(anthropic.InternalServerError) as exc:
        client.messages.create(**body_with("three"))
    assert exc.value.status_code == 500 and "script exhausted" in str(exc.value)


def test_a_greedy_agent_runs_until_the_context_window_stops_it():
    api = FakeAnthropic(context_window=20_000).start()
    try:
        api.respond_with(greedy_reader)
        client = sdk(api)
        messages: list[dict] = [{"role": "user", "content": "Save what matters."}]
        turns = 0
        with pytest.raises(anthropic.BadRequestError) as exc:
            for turns in range(1, 200):
                resp = client.messages.create(model=MODEL, max_tokens=1000, messages=messages,
                                              tools=[{"name": "read", "input_schema": {"type": "object"}}])
                [call] = resp.content
                assert call.type == "tool_use" and call.input == {"file_path": f"note-{turns - 1}.md"}
                messages.append({"role": "assistant", "content": [c.model_dump() for c in resp.content]})
                messages.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call.id, "content": "file body. " * 200}]})
        assert "exceed context limit" in str(exc.value) or "prompt is too long" in str(exc.value)
        counts = [r["input_tokens"] for r in api.requests]
        assert counts == sorted(counts) and len(set(counts)) == len(counts)  # the context only grows
        assert 30 < turns < 60  # ~510 tokens a turn into a 19,000-token budget
        assert all(r["status"] == 200 for r in api.requests[:-1]) and api.requests[-1]["status"] == 400
        assert counts[-2] + 1000 <= 20_000 < counts[-1] + 1000
    finally:
        api.stop()


def test_the_responder_can_answer_a_status_and_its_errors_are_500s(api):
    api.respond_with(lambda body: (429, fakeapi.error_body("rate_limit_error", "slow down")))
    with pytest.raises(anthropic.RateLimitError) as exc:
        sdk(api).messages.create(**body_with("hi"))
    assert exc.value.status_code == 429

    def broken(body):
        raise KeyError("oops")

    api.respond_with(broken)
    with pytest.raises(anthropic.InternalServerError) as exc:
        sdk(api).messages.create(**body_with("hi"))
    assert exc.value.status_code == 500 and "responder raised" in str(exc.value)
    assert len(api.errors) == 1 and isinstance(api.errors[0], KeyError)


def test_the_responder_gets_a_copy_of_the_body(api):
    def meddler(body):
        body["messages"].clear()
        return message([{"type": "text", "text": "ok"}])

    api.respond_with(meddler)
    post(api, body_with("keep me"))
    assert api.requests[0]["body"]["messages"] == [{"role": "user", "content": "keep me"}]
