"""The one factory for models: jobs ask for a model by purpose (``model_for("recall")``).

This module knows the rest: credentials come from ``ANTHROPIC_API_KEY`` (or
``ANTHROPIC_AUTH_TOKEN``), the endpoint from ``ANTHROPIC_BASE_URL`` (any
Messages-API-compatible server), the model from ``--model``, then
``MEM_MODEL_<JOB>`` (``MEM_MODEL_RECALL``...), then ``MEM_MODEL`` (recall also
honours ``ANTHROPIC_DEFAULT_SONNET_MODEL``), and each job's budget (output
tokens, temperature, timeout, SDK retries) from ``JOBS``. The calls themselves
go through a backend (``mem.core.jobs.backends``), which carries the model's
window and output limit.

uses: errors, backends (ModelConfig, ModelError), backends.anthropic
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from mem.core.errors import ConfigError
from mem.core.jobs.backends import ModelConfig, ModelError, reply_text
from mem.core.jobs.backends.anthropic import takes_temperature

__all__ = ["ModelConfig", "ModelError", "takes_temperature"]  # their home is backends/; jobs name them here

#: The newest Sonnet the pinned SDK knows (checked against its deprecation list in the tests).
DEFAULT_MODEL = "claude-sonnet-5-5"


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
    """A configured backend for one job; accumulates token usage over its calls."""

    def __init__(self, config: ModelConfig, *, debug: bool = False):
        self.config = config
        self.usage = Usage()
        self.debug = debug
        self.backend = _backend(config)
        self._limits: Any = None

    def limits(self):
        """The model's window and largest output (``budget.Limits``), asked of the backend once."""
        if self._limits is None:
            self._limits = self.backend.limits()
        return self._limits

    def create(self, **kwargs: Any):
        """One request in the Messages shape (system, messages, tools, max_tokens...) to the backend;
        its reply (content, usage, stop_reason); errors are ModelError."""
        started = time.monotonic()
        response = self.backend.create(**kwargs)
        self.usage.add(getattr(response, "usage", None))
        if self.debug:
            u = getattr(response, "usage", None)
            sys.stderr.write(
                f"mem: debug: model {kwargs.get('model') or self.config.model} {time.monotonic() - started:.2f}s "
                f"in={getattr(u, 'input_tokens', '?')} out={getattr(u, 'output_tokens', '?')} "
                f"stop={getattr(response, 'stop_reason', '?')}\n"
            )
        return response


def _backend(config: ModelConfig):
    from mem.core.jobs.backends.anthropic import AnthropicBackend

    return AnthropicBackend(config)


def first_text(response: Any) -> str:
    return reply_text(response)


def debug_enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get("MEM_DEBUG", "") not in ("", "0")
