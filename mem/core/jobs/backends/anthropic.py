"""The Anthropic Messages API through the anthropic SDK: the only module that imports it.

The request is already in the Messages shape, so it goes out as the jobs wrote it; the
model's temperature is dropped for models that refuse one (and once more when a model this
module does not know refuses it). SDK errors become ``ModelError``: 429 and 529 overloaded, 401 and 403
auth, a timeout, no connection, any other status with its code. Only the configured credentials
and base URL are used, never ones the SDK would find in mem's environment. The window and the largest output
come from ``budget.MODEL_LIMITS`` (and ``MEM_CONTEXT_WINDOW``/``MEM_MAX_OUTPUT_TOKENS``).

uses: backends.protocol (ModelConfig, ModelError), budget (limits_for); anthropic, only in ``create``
"""

from __future__ import annotations

import re
from typing import Any

from mem.core.jobs.backends.protocol import ModelConfig, ModelError


def takes_temperature(model: str) -> bool:
    """Whether ``model`` accepts a sampling temperature: Claude models of generation 5 and later,
    and Opus from 4.7, answer 400 "temperature is deprecated for this model"."""
    m = re.search(r"claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2})(?!\d))?", model)
    if m is None:
        return True
    version = (int(m[2]), int(m[3] or 0))
    return version < (5, 0) and not (m[1] == "opus" and version >= (4, 7))


#: Where the Messages API is when the configuration names no base URL.
DEFAULT_BASE_URL = "https://api.anthropic.com"


def status_kind(status: int) -> str:
    """The ``ModelError`` kind of an error status of the Messages API (the SDK and the stdlib client agree)."""
    if status in (429, 529):
        return "overloaded"
    return "auth" if status in (401, 403) else "status"


class AnthropicBackend:
    """Messages API calls for one ``ModelConfig``; the SDK client is made on the first call."""

    name = "anthropic"

    def __init__(self, config: ModelConfig):
        self.config = config
        self._client: Any = None

    def limits(self):
        from mem.core.jobs.budget import Limits, limits_for

        found = limits_for(self.claude_name())
        if self.config.context_window:
            return Limits(self.config.context_window, min(found.max_output, self.config.context_window // 4))
        return found

    def claude_name(self) -> str:
        """The model's Claude name, for the limits table (a cloud's id is ``us.anthropic.claude-...-v1:0``...)."""
        return self.config.model

    def client(self):
        if self._client is None:
            import anthropic  # heavy (~2 s cold): only on the path that calls a model

            self._client = self.make_client(anthropic)
        return self._client

    def make_client(self, anthropic: Any):
        """The SDK client for this configuration (the Bedrock and Vertex backends make their own)."""
        key, token = self.config.api_key, self.config.auth_token
        # This SDK takes one credential; both (an apiKeyHelper's key, sent both ways as Claude
        # Code sends it) go as the key and a bearer header of our own.
        headers = {"authorization": f"Bearer {token}"} if key and token else None
        client = anthropic.Anthropic(
            api_key=key,
            auth_token=None if key else token,
            default_headers=headers,
            # None would let the SDK read ANTHROPIC_BASE_URL from mem's environment: the public API,
            # as the stdlib client (messages_lite) has it
            base_url=self.config.base_url or DEFAULT_BASE_URL,
            timeout=self.config.timeout,
            max_retries=self.config.max_retries,
        )
        # The SDK fills a credential it was not given from ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN
        # (every release before 2.x): with a token alone the environment's key went along, to
        # whichever server this configuration names. Only the configured credentials are sent.
        client.api_key, client.auth_token = key, None if key else token
        return client

    def create(self, **kwargs: Any):
        """``messages.create`` with the configured model; errors become ModelError."""
        import anthropic

        kwargs.setdefault("model", self.config.model)
        kwargs.setdefault("max_tokens", self.config.max_tokens)
        temperature = self.config.temperature if takes_temperature(kwargs["model"]) else None
        try:
            try:
                # extra_body: SDK 2.x has no temperature argument (the newest models refuse one)
                extra = {} if temperature is None else {"extra_body": {"temperature": temperature}}
                return self.client().messages.create(**kwargs, **extra)
            except anthropic.BadRequestError as exc:
                if temperature is None or "temperature" not in _short(exc):
                    raise
                # a model this module does not know refused it: ask again without
                return self.client().messages.create(**kwargs)
        except anthropic.APITimeoutError as exc:
            raise ModelError(f"model call timed out after {self.config.timeout:g}s", "timeout") from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError(f"cannot reach the model server: {exc}", "connection") from exc
        except anthropic.APIStatusError as exc:
            kind = status_kind(exc.status_code)
            body = getattr(exc, "body", None)
            usage = body.get("usage") if isinstance(body, dict) else None
            raise ModelError(f"model server answered {exc.status_code}: {_short(exc)}", kind,
                             status=exc.status_code, usage=usage if isinstance(usage, dict) else None) from exc


def _short(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return " ".join(str(exc).split())[:200]
