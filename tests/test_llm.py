"""The model client against a real local Messages-API server."""

from __future__ import annotations

import pytest

from mem.core.jobs import llm
from mem.core.errors import ConfigError, ExitCode


def test_default_model_is_known_and_not_deprecated():
    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import model_param

    assert llm.DEFAULT_MODEL not in DEPRECATED_MODELS
    assert llm.DEFAULT_MODEL in model_param.ModelParam.__args__[0].__args__


def test_model_choice_order(monkeypatch):
    env = {"MEM_MODEL": "m-env", "ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}
    assert llm.choose_model("m-flag", env) == "m-flag"
    assert llm.choose_model(None, env) == "m-env"
    assert llm.choose_model(None, {"ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}, purpose="recall") == "m-sonnet"
    assert llm.choose_model(None, {"ANTHROPIC_DEFAULT_SONNET_MODEL": "m-sonnet"}) == llm.DEFAULT_MODEL


def test_missing_key_is_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError) as exc:
        llm.model_config(env={})
    assert exc.value.exit_code == ExitCode.CONFIG
    assert "ANTHROPIC_API_KEY" in str(exc.value)


def test_call_usage_and_request_shape(fake_api):
    fake_api.reply_text("hello", input_tokens=7, output_tokens=3)
    model = llm.Model(llm.model_config(timeout=5, max_retries=0))
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
    model = llm.Model(llm.model_config(timeout=0.5, max_retries=0))
    fake_api.reply_status(529)
    with pytest.raises(llm.ModelError) as exc:
        model.create(max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "overloaded"
    fake_api.reply_text("late", delay=2)
    with pytest.raises(llm.ModelError) as exc:
        model.create(max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert exc.value.kind == "timeout"
