"""Model calls: the only module that imports the anthropic SDK, and only when a call is made.

Credentials come from ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``), the
endpoint from ``ANTHROPIC_BASE_URL`` (any Messages-API-compatible server), the
model from ``--model`` / ``MEM_MODEL`` (recall also honours
``ANTHROPIC_DEFAULT_SONNET_MODEL``). Timeouts and retries are explicit per job.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from mem.core.errors import ConfigError, MemError

#: The newest Sonnet the pinned SDK knows (checked against its deprecation list in the tests).
DEFAULT_MODEL = "claude-sonnet-5-5"


class ModelError(MemError):
    """A model call failed: overloaded, timed out, refused, or answered nonsense."""

    def __init__(self, message: str, kind: str = "error"):
        super().__init__(message)
        self.kind = kind  # overloaded | timeout | connection | status | bad_response


class ModelConfig(NamedTuple):
    model: str
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    timeout: float
    max_retries: int


def has_credentials(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))


def choose_model(model: str | None = None, env: Mapping[str, str] | None = None, *, purpose: str = "main") -> str:
    env = os.environ if env is None else env
    if model:
        return model
    if env.get("MEM_MODEL"):
        return env["MEM_MODEL"]
    if purpose == "recall" and env.get("ANTHROPIC_DEFAULT_SONNET_MODEL"):
        return env["ANTHROPIC_DEFAULT_SONNET_MODEL"]
    return DEFAULT_MODEL


def model_config(
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    purpose: str = "main",
    timeout: float = 120.0,
    max_retries: int = 2,
) -> ModelConfig:
    """The settings for a model call, or ConfigError naming what is missing."""
    env = os.environ if env is None else env
    if not has_credentials(env):
        raise ConfigError("no model credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN); "
                          "ANTHROPIC_BASE_URL and --model/MEM_MODEL choose the server and model")
    return ModelConfig(
        model=choose_model(model, env, purpose=purpose),
        api_key=env.get("ANTHROPIC_API_KEY") or None,
        auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None,
        base_url=env.get("ANTHROPIC_BASE_URL") or None,
        timeout=timeout,
        max_retries=max_retries,
    )


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class Usage:
    """Tokens summed over calls (plain class: recall imports this module on every prompt)."""

    __slots__ = (*_TOKEN_FIELDS, "calls")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def add(self, usage: Any) -> None:
        self.calls += 1
        for name in _TOKEN_FIELDS:
            value = getattr(usage, name, None) if not isinstance(usage, dict) else usage.get(name)
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        return f"Usage({self.as_dict()})"


class Model:
    """A configured client; accumulates token usage over its calls."""

    def __init__(self, config: ModelConfig, *, debug: bool = False):
        self.config = config
        self.usage = Usage()
        self.debug = debug
        self._client: Any = None

    def client(self):
        if self._client is None:
            import anthropic  # heavy (~2 s cold): only on the path that calls a model

            self._client = anthropic.Anthropic(
                api_key=self.config.api_key,
                auth_token=self.config.auth_token,
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=self.config.max_retries,
            )
        return self._client

    def create(self, **kwargs: Any):
        """``messages.create`` with the configured model; errors become ModelError."""
        import anthropic

        kwargs.setdefault("model", self.config.model)
        started = time.monotonic()
        try:
            response = self.client().messages.create(**kwargs)
        except anthropic.APITimeoutError as exc:
            raise ModelError(f"model call timed out after {self.config.timeout:g}s", "timeout") from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError(f"cannot reach the model server: {exc}", "connection") from exc
        except anthropic.APIStatusError as exc:
            kind = "overloaded" if exc.status_code in (429, 529) else "status"
            raise ModelError(f"model server answered {exc.status_code}: {_short(exc)}", kind) from exc
        self.usage.add(getattr(response, "usage", None))
        if self.debug:
            u = getattr(response, "usage", None)
            sys.stderr.write(
                f"mem: debug: model {kwargs['model']} {time.monotonic() - started:.2f}s "
                f"in={getattr(u, 'input_tokens', '?')} out={getattr(u, 'output_tokens', '?')} "
                f"stop={getattr(response, 'stop_reason', '?')}\n"
            )
        return response


def _short(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return " ".join(str(exc).split())[:200]


def first_text(response: Any) -> str:
    for block in getattr(response, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""


def debug_enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get("MEM_DEBUG", "") not in ("", "0")
