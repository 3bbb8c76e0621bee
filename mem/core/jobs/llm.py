"""The one factory for models: jobs ask for a model by purpose (``model_for("recall")``).

This module knows the rest. The backend is ``--backend`` / ``MEM_BACKEND``, else the first
configured of ``DETECTION``: bedrock and vertex (Claude Code's ``CLAUDE_CODE_USE_BEDROCK`` /
``CLAUDE_CODE_USE_VERTEX``, in the environment or its settings' env blocks, ``backends.bedrock``,
``backends.vertex``: first, because with either switch set Claude Code itself sends nothing to
the Anthropic API, whatever key is also set), anthropic (``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``, at
``ANTHROPIC_BASE_URL``), claude-settings (Claude Code's settings, ``backends.claude_settings``),
openai (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``OPENAI_MODEL``, or qwen-code's provider,
``backends.qwen``), and last claude-code (a ``claude`` executable on PATH: the user's Claude
subscription through Claude Code itself, ``backends.claude_code``; never for recall). The model is ``--model``, then ``MEM_MODEL_<JOB>`` (``MEM_MODEL_RECALL``...),
then ``MEM_MODEL``, then what the backend's configuration names (recall also honours
``ANTHROPIC_DEFAULT_SONNET_MODEL``), else ``DEFAULT_MODEL`` (the openai backend has no default:
ConfigError). Each job's budget (output tokens, temperature, timeout, SDK retries) is in
``JOBS``. The calls go through the backend, which carries the model's window and output limit.

uses: errors, credentials (which backend is configured), backends.protocol (ModelConfig, ModelError),
backends.anthropic, backends.openai, backends.bedrock, backends.vertex, backends.claude_code
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from mem.core.errors import ConfigError
from mem.core.jobs.backends.protocol import ModelConfig, ModelError, reply_text
from mem.core.jobs.backends.anthropic import takes_temperature
from mem.core.jobs.credentials import find_credentials

# their home is backends/; jobs name them here
__all__ = ["ModelConfig", "ModelError", "takes_temperature"]

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
    #: one run's total input and output tokens at most (None: no cap); ``--budget`` and
    #: ``MEM_BUDGET_<JOB>`` override them (``budget.caps_for``)
    input_budget: int | None = None
    output_budget: int | None = None


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
    # Its budget: a window holds at most 100k tokens of conversation (extract.WINDOW_TOKENS) plus
    # ~10k of prompt, and each of its 5 turns sends it again: ~600k input at worst, 41k output
    # (5 x 8,192). 1M input lets the worst window finish with room, and a Stop hook's usual few
    # thousand new tokens never come near it; a catch-up over a long session stops between windows
    # and the next run goes on from the cursor.
    "extract": JobSettings(max_tokens=8_192, temperature=None, timeout=120.0, max_retries=0,
                           max_turns=5, deadline_s=300.0, retries=2,
                           input_budget=1_000_000, output_budget=100_000),
    # One memory file and its index line, while a person waits: 4 turns of a prompt holding the
    # index and the manifest (~30k at most), 4 x 4,096 output.
    "remember": JobSettings(max_tokens=4_096, temperature=None, timeout=60.0, max_retries=0,
                            max_turns=4, deadline_s=120.0, retries=2,
                            input_budget=300_000, output_budget=20_000),
    # Edits across the session notes, each of whose sections may hold ~2,000 tokens: one turn
    # is the plan, two more to fix a refused edit. 3 turns of 80,000 characters of conversation
    # and the notes (~40k tokens at most), 3 x 8,192 output.
    "session": JobSettings(max_tokens=8_192, temperature=None, timeout=120.0, max_retries=0,
                           max_turns=3, deadline_s=180.0, retries=2,
                           input_budget=300_000, output_budget=30_000),
    # Merges rewrite whole files; a turn may hold several of them. A night's work may read the
    # whole directory and its transcripts, but not without end: one greedy run sent ~5.5M input
    # tokens in 40 turns. 1M input is ~10 turns of a full window, or 40 of a 25k conversation.
    "dream": JobSettings(max_tokens=8_192, temperature=None, timeout=300.0, max_retries=0,
                         max_turns=40, deadline_s=20 * 60.0, retries=2,
                         input_budget=1_000_000, output_budget=100_000),
}


def choose_model(purpose: str, override: str | None = None, env: Mapping[str, str] | None = None,
                 configured: str | None = None) -> str:
    """``--model``, else MEM_MODEL_<JOB>, else MEM_MODEL, else what the backend's configuration names
    (``configured``), else (recall) ANTHROPIC_DEFAULT_SONNET_MODEL, else the default."""
    env = os.environ if env is None else env
    return (override or env.get(f"MEM_MODEL_{purpose.upper()}") or env.get("MEM_MODEL") or configured
            or (purpose == "recall" and env.get("ANTHROPIC_DEFAULT_SONNET_MODEL")) or DEFAULT_MODEL)


NO_CREDENTIALS = ("no model credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or OPENAI_API_KEY / "
                  "OPENAI_BASE_URL with OPENAI_MODEL, or CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX, "
                  "or configure Claude Code or qwen-code (see mem model); "
                  "--model/MEM_MODEL choose the model")


def model_config(purpose: str, override: str | None = None, env: Mapping[str, str] | None = None, *,
                 timeout: float | None = None, backend: str | None = None, cwd: str | None = None) -> ModelConfig:
    """The settings for ``purpose``'s model calls, or ConfigError naming what is missing."""
    env = os.environ if env is None else env
    budget = JOBS[purpose]
    found = find_credentials(env, backend, cwd)
    if found is None:
        raise ConfigError(NO_CREDENTIALS if not backend and not env.get("MEM_BACKEND")
                          else f"backend {backend or env.get('MEM_BACKEND')} is not configured: {NO_CREDENTIALS}")
    if found.backend == "openai":
        model = override or env.get(f"MEM_MODEL_{purpose.upper()}") or env.get("MEM_MODEL") or found.model
        if not model:
            raise ConfigError(f"no model for the OpenAI-compatible backend ({found.source}): "
                              "set OPENAI_MODEL or MEM_MODEL, or --model")
    else:
        model = choose_model(purpose, override, env, found.recall_model if purpose == "recall" else found.model)
    if found.backend in ("bedrock", "vertex"):
        from mem.core.jobs.backends import bedrock, vertex

        (bedrock if found.backend == "bedrock" else vertex).require_extra(found.options or {})
    return ModelConfig(
        model=model,
        api_key=found.api_key,
        auth_token=found.auth_token,
        base_url=found.base_url,
        timeout=budget.timeout if timeout is None else timeout,
        max_retries=budget.max_retries,
        max_tokens=budget.max_tokens,
        temperature=budget.temperature,
        backend=found.backend,
        source=found.source,
        options=found.options,
    )


def model_for(purpose: str, override: str | None = None, *, timeout: float | None = None,
              log: Callable[[str], None] | None = None, backend: str | None = None) -> Model:
    """A client for ``purpose`` (a key of JOBS); ConfigError (exit 3) without credentials.
    ``log`` takes each call's debug line (the CLI gives it with --debug or MEM_DEBUG=1)."""
    return Model(model_config(purpose, override, timeout=timeout, backend=backend), log=log)


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class Usage:
    """Tokens summed over calls (plain class: recall imports this module on every prompt)."""

    __slots__ = (*_TOKEN_FIELDS, "calls", "estimated")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def add(self, usage: Any) -> None:
        self.calls += 1
        if isinstance(usage, dict) and usage.get("estimated"):
            self.estimated += 1  # the server reported none: mem's estimate
        for name in _TOKEN_FIELDS:
            value = getattr(usage, name, None) if not isinstance(usage, dict) else usage.get(name)
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict:
        """The sums; ``estimated`` (calls whose usage mem estimated) only when there were some."""
        out = {name: getattr(self, name) for name in (*_TOKEN_FIELDS, "calls")}
        if self.estimated:
            out["estimated"] = self.estimated
        return out

    def __repr__(self) -> str:
        return f"Usage({self.as_dict()})"


class Model:
    """A configured backend for one job; accumulates token usage over its calls."""

    def __init__(self, config: ModelConfig, *, log: Callable[[str], None] | None = None):
        self.config = config
        self.usage = Usage()
        self.log = log  # each call's debug line; None: not asked for
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
        if self.log is not None:
            u = getattr(response, "usage", None)
            u = u if isinstance(u, dict) else {k: getattr(u, k, "?") for k in ("input_tokens", "output_tokens")}
            self.log(
                f"model {kwargs.get('model') or self.config.model} ({self.config.backend}) "
                f"{time.monotonic() - started:.2f}s in={u.get('input_tokens', '?')} out={u.get('output_tokens', '?')} "
                f"stop={getattr(response, 'stop_reason', '?')}"
            )
        return response


def _backend(config: ModelConfig):
    if config.backend == "bedrock":
        from mem.core.jobs.backends.bedrock import BedrockBackend

        return BedrockBackend(config)
    if config.backend == "vertex":
        from mem.core.jobs.backends.vertex import VertexBackend

        return VertexBackend(config)
    if config.backend == "claude-code":
        from mem.core.jobs.backends.claude_code import ClaudeCodeBackend

        return ClaudeCodeBackend(config)
    if config.backend == "openai":
        from mem.core.jobs.backends.openai import OpenAIBackend

        return OpenAIBackend(config)
    from mem.core.jobs.backends.anthropic import AnthropicBackend

    return AnthropicBackend(config)


def first_text(response: Any) -> str:
    return reply_text(response)


# --- which model each job uses, and whether it answers (mem model) --------------------------------


def describe(env: Mapping[str, str] | None = None, backend: str | None = None, cwd: str | None = None) -> list[dict]:
    """Per job: the backend, the model, where the credentials came from and why this backend
    (``mem model``); ConfigError when none is configured. The secret is never part of it, and
    Claude Code's apiKeyHelper is not run."""
    env = os.environ if env is None else env
    found = find_credentials(env, backend, cwd, run_helper=False)
    if found is None:
        raise ConfigError(NO_CREDENTIALS)
    rows = []
    for job in JOBS:
        if found.backend == "openai":
            model = env.get(f"MEM_MODEL_{job.upper()}") or env.get("MEM_MODEL") or found.model
        else:
            model = choose_model(job, None, env, found.recall_model if job == "recall" else found.model)
        rows.append({"job": job, "backend": found.backend, "model": model, "base_url": found.base_url,
                     "credentials": found.source, "reason": found.reason})
    return rows


def probe(backend: str, env: Mapping[str, str] | None = None, cwd: str | None = None,
          timeout: float = 30.0) -> dict:
    """One tiny request to ``backend`` with the recall job's model: its latency, or the error (one line)."""
    started = time.monotonic()
    row: dict[str, Any] = {"backend": backend, "model": None, "ok": False, "latency_s": None, "error": None}
    try:
        config = model_config("recall", env=env, timeout=timeout, backend=backend, cwd=cwd)
        row["model"] = config.model
        started = time.monotonic()
        Model(config._replace(max_tokens=16)).create(
            system="Answer with the single word OK.", messages=[{"role": "user", "content": "Are you there?"}])
    except (ModelError, ConfigError) as exc:
        row["error"] = " ".join(str(exc).split())
        return row
    row["ok"], row["latency_s"] = True, round(time.monotonic() - started, 3)
    return row
