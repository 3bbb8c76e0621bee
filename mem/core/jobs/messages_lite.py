"""One Messages API request over the standard library, for the recall hook.

``mem recall --hook`` runs on every prompt; ``import anthropic`` alone costs
1.3-2.8 s here, http.client about 20 ms. This client sends the selector's one
request as the SDK would send it for ``llm.Model.create`` — the same base URL
(``ANTHROPIC_BASE_URL``, else the public API), credentials, model, output
budget and temperature from ``llm.model_config`` — with no retry, and maps
failures to the same ``ModelError`` kinds. Everything else stays on the SDK.

``deadline`` (a ``time.monotonic()`` instant) bounds the whole exchange:
connecting, sending, waiting for and reading the answer each get only the
time left, so a slow server costs at most the deadline.

uses: backends.http (exchange), backends.anthropic (DEFAULT_BASE_URL, status_kind), llm (ModelConfig, ModelError, Usage, takes_temperature)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mem.core.jobs.backends.http import error_text as _error_text
from mem.core.jobs.backends.http import exchange
from mem.core.jobs.backends.anthropic import DEFAULT_BASE_URL, status_kind
from mem.core.jobs.llm import ModelConfig, ModelError, Usage, takes_temperature
#: The Messages API version every SDK release pyproject.toml admits understands.
API_VERSION = "2023-06-01"


class Reply:
    """A Messages API response as JSON, with the two things recall reads from it."""

    __slots__ = ("data",)

    def __init__(self, data: dict):
        self.data = data

    @property
    def text(self) -> str:
        """The first text block, as ``llm.first_text`` gives for an SDK response."""
        for block in self.data.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return block["text"]
        return ""

    @property
    def usage(self) -> dict:
        usage = self.data.get("usage")
        return usage if isinstance(usage, dict) else {}


def create(config: ModelConfig, *, deadline: float | None = None, usage: Usage | None = None,
           log: Callable[[str], None] | None = None, **body: Any) -> Reply:
    """POST /v1/messages with ``body`` (model and max_tokens from ``config`` unless given).

    The exchange ends by ``deadline`` or ``config.timeout`` from now,
    whichever comes first. Raises ModelError with kind overloaded (429, 529),
    auth (401, 403), status (any other error status), timeout, connection or bad_response (an
    answer that is not a message).
    """
    started = time.monotonic()
    deadline = started + config.timeout if deadline is None else min(deadline, started + config.timeout)
    budget = max(0.0, deadline - started)
    body.setdefault("model", config.model)
    body.setdefault("max_tokens", config.max_tokens)
    if config.temperature is not None and takes_temperature(body["model"]):
        status, data = _post(config, {**body, "temperature": config.temperature}, deadline, budget)
        if status == 400 and "temperature" in _error_text(data):
            status, data = _post(config, body, deadline, budget)  # a model this module does not know refused it
    else:
        status, data = _post(config, body, deadline, budget)
    if status != 200:
        raise ModelError(f"model server answered {status}: {_error_text(data)}", status_kind(status), status=status)
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ModelError("the model server's answer is not a message", "bad_response")
    reply = Reply(data)
    if usage is not None:
        usage.add(reply.usage)
    if log is not None:
        u = reply.usage
        log(f"model {body['model']} {time.monotonic() - started:.2f}s (stdlib client) "
            f"in={u.get('input_tokens', '?')} out={u.get('output_tokens', '?')} stop={data.get('stop_reason', '?')}")
    return reply


def _post(config: ModelConfig, body: dict, deadline: float, budget: float) -> tuple[int, Any]:
    """(status, the answer's JSON, or its text when it is not JSON)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "anthropic-version": API_VERSION,
        "user-agent": "mem (stdlib client)",
    }
    if config.api_key:
        headers["x-api-key"] = config.api_key
    if config.auth_token:
        headers["authorization"] = f"Bearer {config.auth_token}"
    answer = exchange("POST", config.base_url or DEFAULT_BASE_URL, "/v1/messages", headers, body,
                      deadline=deadline, budget=budget)
    return answer.status, answer.data
