"""Model calls: the only module that imports the anthropic SDK, and only when a call is made.

Jobs ask for a model by purpose (``model_for("recall")``); this module knows
the rest. Credentials come from ``ANTHROPIC_API_KEY`` (or
``ANTHROPIC_AUTH_TOKEN``), the endpoint from ``ANTHROPIC_BASE_URL`` (any
Messages-API-compatible server), the model from ``--model``, then
``MEM_MODEL_<JOB>`` (``MEM_MODEL_RECALL``...), then ``MEM_MODEL`` (recall also
honours ``ANTHROPIC_DEFAULT_SONNET_MODEL``), and each job's budget (output
tokens, temperature, timeout, SDK retries) from ``JOBS``.
"""

from __future__ import annotations

import os
import re
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


class JobSettings(NamedTuple):
    max_tokens: int  # the longest answer the job needs, with room
    temperature: float | None  # None: the server's default
    timeout: float  # seconds per call, unless the caller gives its own
    max_retries: int  # the SDK's own retries: 0 where our loop retries within a deadline
    max_turns: int = 1  # model calls an agent run may make
    deadline_s: float = 0.0  # wall-clock budget of one run of the job (default: one call's timeout)
    retries: int = 0  # our agent loop's retries of a failed call, inside the deadline


#: Each job's budget. Selectors (recall, forget) run at temperature 0: the same manifest and
#: request should get the same pick. The agent jobs retry inside run_agent's wall-clock deadline,
#: so the SDK must not retry on its own and overrun it.
JOBS: dict[str, JobSettings] = {
    # A JSON list of at most 5 file names (~100 tokens). No retry: the offline ranker answers
    # instead, and the user is waiting for their prompt.
    "recall": JobSettings(max_tokens=256, temperature=0.0, timeout=5.0, max_retries=0, deadline_s=5.0),
    # Up to 50 candidates of ~35 tokens each (file, entry, confidence, a short reason). One call
    # with no loop of ours, so one SDK retry.
    "forget": JobSettings(max_tokens=2_048, temperature=0.0, timeout=60.0, max_retries=1, deadline_s=60.0),
    # One turn may write several whole memory files and their index lines; a window of a long
    # session gets five turns and five minutes.
    "extract": JobSettings(max_tokens=8_192, temperature=None, timeout=120.0, max_retries=0,
                           max_turns=5, deadline_s=300.0, retries=2),
    # One memory file and its index line, while a person waits.
    "remember": JobSettings(max_tokens=4_096, temperature=None, timeout=60.0, max_retries=0,
                            max_turns=4, deadline_s=120.0, retries=2),
    # Edits across the session notes, each of whose sections may hold ~2,000 tokens: one turn
    # is the plan, two more to fix a refused edit.
    "session": JobSettings(max_tokens=8_192, temperature=None, timeout=120.0, max_retries=0,
                           max_turns=3, deadline_s=180.0, retries=2),
    # Merges rewrite whole files; a turn may hold several of them. A night's work may read the
    # whole directory and its transcripts.
    "dream": JobSettings(max_tokens=8_192, temperature=None, timeout=300.0, max_retries=0,
                         max_turns=40, deadline_s=20 * 60.0, retries=2),
}


class ModelConfig(NamedTuple):
    model: str
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    timeout: float
    max_retries: int
    max_tokens: int
    temperature: float | None


def has_credentials(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))


def choose_model(purpose: str, override: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``--model``, else MEM_MODEL_<JOB>, else MEM_MODEL, else (recall) ANTHROPIC_DEFAULT_SONNET_MODEL, else the default."""
    env = os.environ if env is None else env
    return (override or env.get(f"MEM_MODEL_{purpose.upper()}") or env.get("MEM_MODEL")
            or (purpose == "recall" and env.get("ANTHROPIC_DEFAULT_SONNET_MODEL")) or DEFAULT_MODEL)


def model_config(purpose: str, override: str | None = None, env: Mapping[str, str] | None = None, *,
                 timeout: float | None = None) -> ModelConfig:
    """The settings for ``purpose``'s model calls, or ConfigError naming what is missing."""
    env = os.environ if env is None else env
    budget = JOBS[purpose]
    if not has_credentials(env):
        raise ConfigError("no model credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN); "
                          "ANTHROPIC_BASE_URL and --model/MEM_MODEL choose the server and model")
    return ModelConfig(
        model=choose_model(purpose, override, env),
        api_key=env.get("ANTHROPIC_API_KEY") or None,
        auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None,
        base_url=env.get("ANTHROPIC_BASE_URL") or None,
        timeout=budget.timeout if timeout is None else timeout,
        max_retries=budget.max_retries,
        max_tokens=budget.max_tokens,
        temperature=budget.temperature,
    )


def takes_temperature(model: str) -> bool:
    """Whether ``model`` accepts a sampling temperature: Claude models of generation 5 and later,
    and Opus from 4.7, answer 400 "temperature is deprecated for this model"."""
    m = re.search(r"claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2})(?!\d))?", model)
    if m is None:
        return True
    version = (int(m[2]), int(m[3] or 0))
    return version < (5, 0) and not (m[1] == "opus" and version >= (4, 7))


def model_for(purpose: str, override: str | None = None, *, timeout: float | None = None,
              debug: bool | None = None) -> Model:
    """A client for ``purpose`` (a key of JOBS); ConfigError (exit 3) without credentials."""
    return Model(model_config(purpose, override, timeout=timeout), debug=debug_enabled() if debug is None else debug)


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
        kwargs.setdefault("max_tokens", self.config.max_tokens)
        temperature = self.config.temperature if takes_temperature(kwargs["model"]) else None
        started = time.monotonic()
        try:
            try:
                # extra_body: SDK 2.x has no temperature argument (the newest models refuse one)
                extra = {} if temperature is None else {"extra_body": {"temperature": temperature}}
                response = self.client().messages.create(**kwargs, **extra)
            except anthropic.BadRequestError as exc:
                if temperature is None or "temperature" not in _short(exc):
                    raise
                temperature = None  # a model this module does not know refused it: ask again without
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
