"""The model client against a real local Messages-API server."""

from __future__ import annotations

import json

import pytest

from mem.core.jobs import llm, messages_lite
from mem.core.errors import ConfigError, ExitCode


def test_default_model_is_known_and_not_deprecated():
    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import model_param

    assert llm.DEFAULT_MODEL not in DEPRECATED_MODELS
    assert llm.DEFAULT_MODEL in model_param.ModelParam.__args__[0].__args__


def test_model_choice_order():
    env = {"MEM_MODEL_RECALL": "m-recall", "MEM_MODEL": "m-env", "ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}
    assert llm.choose_model("recall", "m-flag", env) == "m-flag"
    assert llm.choose_model("recall", None, env) == "m-recall"
    assert llm.choose_model("extract", None, env) == "m-env"
    assert llm.choose_model("recall", None, {"MEM_MODEL": "m-env", "ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}) == "m-env"
    assert llm.choose_model("recall", None, {"ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}) == "m-sonnet"
    assert llm.choose_model("extract", None, {"ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}) == llm.DEFAULT_MODEL
    assert llm.choose_model("forget", None, {"MEM_MODEL_FORGET": "m-forget", "MEM_MODEL_RECALL": "m-recall"}) == "m-forget"


def test_every_job_has_a_budget_and_selectors_run_cold():
    assert set(llm.JOBS) == {"recall", "forget", "extract", "remember", "session", "dream"}
    assert {job for job, b in llm.JOBS.items() if b.temperature == 0} == {"recall", "forget"}
    # the agent jobs retry inside their own deadline loop: the SDK must not
    assert all(llm.JOBS[job].max_retries == 0 for job in ("recall", "extract", "remember", "session", "dream"))


def test_budget_reaches_the_request(fake_api, monkeypatch):
    monkeypatch.setenv("MEM_MODEL", "claude-haiku-4-5")
    for _ in range(3):
        fake_api.reply_text("{}")
    llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    llm.model_for("forget").create(messages=[{"role": "user", "content": "hi"}])
    llm.model_for("extract").create(messages=[{"role": "user", "content": "hi"}])
    recall_body, forget_body, extract_body = (r["body"] for r in fake_api.requests)
    assert (recall_body["max_tokens"], recall_body["temperature"]) == (256, 0.0)
    assert (forget_body["max_tokens"], forget_body["temperature"]) == (2_048, 0.0)
    assert extract_body["max_tokens"] == 8_192 and "temperature" not in extract_body


@pytest.mark.parametrize("model, takes", [("claude-haiku-4-5", True), ("claude-sonnet-4-5-20250929", True),
                                          ("claude-3-5-haiku-20241022", True), ("claude-opus-4-1", True),
                                          ("some-other-server-model", True), ("claude-sonnet-5-5", False),
                                          ("claude-opus-4-7", False), ("claude-haiku-6-0", False)])
def test_which_models_take_a_temperature(model, takes):
    assert llm.takes_temperature(model) is takes


def test_the_default_model_gets_no_temperature(fake_api):
    fake_api.reply_text("{}")
    llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert fake_api.requests[0]["body"]["model"] == llm.DEFAULT_MODEL
    assert "temperature" not in fake_api.requests[0]["body"]


def test_a_model_that_refuses_a_temperature_is_asked_again_without(fake_api, monkeypatch):
    monkeypatch.setenv("MEM_MODEL_RECALL", "their-model")
    fake_api.reply_status(400, "`temperature` is deprecated for this model.")
    fake_api.reply_text("ok")
    assert llm.first_text(llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])) == "ok"
    first, second = (r["body"] for r in fake_api.requests)
    assert first["temperature"] == 0.0 and "temperature" not in second
    fake_api.reply_status(400, "messages: bad")
    with pytest.raises(llm.ModelError):  # any other refusal is not retried
        llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert len(fake_api.requests) == 3


def test_missing_key_is_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError) as exc:
        llm.model_config("extract", env={})
    assert exc.value.exit_code == ExitCode.CONFIG
    assert "ANTHROPIC_API_KEY" in str(exc.value)


def test_call_usage_and_request_shape(fake_api):
    fake_api.reply_text("hello", input_tokens=7, output_tokens=3)
    model = llm.model_for("recall", timeout=5)
    resp = model.create(max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert llm.first_text(resp) == "hello"
    assert model.usage.as_dict() == {"input_tokens": 7, "output_tokens": 3, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 0, "calls": 1}
    req = fake_api.requests[0]
    assert req["path"].startswith("/v1/messages")
    assert req["body"]["model"] == llm.DEFAULT_MODEL
    auth = req["headers"].get("x-api-key") or req["headers"].get("authorization", "")
    assert auth.endswith("test-key-not-a-secret")


def test_overload_and_timeout_become_model_errors(fake_api):
    model = llm.model_for("recall", timeout=0.5)
    fake_api.reply_status(529)
    with pytest.raises(llm.ModelError) as exc:
        model.create(max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "overloaded"
    fake_api.reply_text("late", delay=2)
    with pytest.raises(llm.ModelError) as exc:
        model.create(max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "timeout"


@pytest.mark.parametrize("configured", ["token", "key"])
def test_only_the_configured_credential_is_sent(fake_api, monkeypatch, configured):
    # Claude Code's settings gave one credential; mem's environment holds others, which must not
    # go to the configured server along with it (the SDK fills a credential it was not given)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-not-configured")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "env-token-not-configured")
    c = llm.model_config("extract")._replace(api_key="key-1" if configured == "key" else None,
                                             auth_token="token-2" if configured == "token" else None)
    fake_api.reply_text("sdk")
    fake_api.reply_text("stdlib")
    llm.Model(c).create(messages=[{"role": "user", "content": "hi"}])
    messages_lite.create(c, messages=[{"role": "user", "content": "hi"}])
    for sent in (json.dumps(r["headers"]) for r in fake_api.requests):
        assert "not-configured" not in sent
        assert ("key-1" if configured == "key" else "Bearer token-2") in sent


def test_no_base_url_configured_is_the_public_api_not_the_environments(monkeypatch):
    from mem.core.jobs.backends.anthropic import AnthropicBackend

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/elsewhere")
    c = llm.ModelConfig("claude-sonnet-5-5", None, "token-2", None, 5.0, 0, 16, None)
    assert str(AnthropicBackend(c).client().base_url).startswith("https://api.anthropic.com")
