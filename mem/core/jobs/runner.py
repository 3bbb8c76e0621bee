"""The recipe every agent job shares, written once.

A job (extract, remember, the session notes, dream) states what is its own:
its prompt, its tools, what it does with the files the model wrote. The rest is
the same for all and lives here: the model for the job's purpose (credentials
checked first: ConfigError, exit 3, before anything is written), its settings
from ``llm.JOBS`` (turns, wall-clock deadline, retries of our own loop, output
tokens), the spending cap of the whole run (``budget.Spend``: the job's default from
``llm.JOBS``, ``MEM_BUDGET_<JOB>``, ``--budget``; every request checked against it first), the
agent loop, the usage summed over the job's runs, the event a run or a failure leaves in the audit
log, and the error the caller raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mem.core.errors import ConfigError, UsageError
from mem.core.jobs import llm
from mem.core.jobs.agent import AgentResult, ToolBox, run_agent
from mem.core.jobs.budget import Caps, Spend, caps_for

#: The stop reason of a run that stopped at its job's spending cap (not an error: what it did stays).
RUN_BUDGET = "run_budget"


def spend_for(purpose: str, budget: str | None = None, env: Mapping[str, str] | None = None) -> Spend:
    """The spending cap of one run of ``purpose``: ``budget`` (the ``--budget`` text), else
    ``MEM_BUDGET_<JOB>``, else the job's default. A value that does not parse: UsageError for
    ``--budget`` (exit 2), ConfigError for the environment variable (exit 3)."""
    settings = llm.JOBS[purpose]
    try:
        caps, source = caps_for(purpose, budget, Caps(settings.input_budget, settings.output_budget), env)
    except ValueError as exc:
        raise (UsageError if budget is not None else ConfigError)(str(exc)) from None
    return Spend(caps, source)


class Job:
    """One run of an agent job for ``purpose`` (a key of ``llm.JOBS``)."""

    def __init__(self, purpose: str, *, model: str | None = None, deadline_s: float | None = None,
                 memory: Any = None, debug: bool = False, log: Callable[[str], None] | None = None,
                 budget: str | None = None):
        self.purpose = purpose
        self.settings = llm.JOBS[purpose]
        self.spend = spend_for(purpose, budget)
        self.deadline_s = self.settings.deadline_s if deadline_s is None else deadline_s
        # A call may take the job's whole deadline, never more than the job's own call timeout.
        # with ``debug``, each model call's line goes to ``log`` too
        self.model = llm.model_for(purpose, model, timeout=min(self.settings.timeout, self.deadline_s),
                                   log=log if debug else None)
        self.memory = memory  # the MemoryDir whose audit log records the job, if it writes one
        self.log = log
        self.started = time.monotonic()
        self.turns = 0
        self.usage: dict[str, int] = {}

    @property
    def model_name(self) -> str:
        return self.model.config.model

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def agent(self, system: str, messages: str | list[dict], toolbox: ToolBox, *,
              max_turns: int | None = None) -> AgentResult:
        """Let the model work with ``toolbox`` within the job's budget; usage and turns are summed.

        A deadline reached before the model's first answer comes back as a timeout error.
        """
        turns = self.settings.max_turns if max_turns is None else max_turns
        if self.model.config.backend == "claude-code":  # Claude Code runs the loop: one session
            from mem.core.jobs import claude_agent

            run = self._claude_code(claude_agent, system, messages, toolbox, turns)
        else:
            run = run_agent(self.model, system=system, messages=messages, toolbox=toolbox, max_turns=turns,
                            deadline_s=self.deadline_s, max_tokens=self.model.config.max_tokens,
                            retries=self.settings.retries, log=self.log, spend=self.spend)
        run.timeout_if_unanswered(self.deadline_s)
        self.turns += run.turns
        for key, value in (run.usage.as_dict() if run.usage is not None else {}).items():
            self.usage[key] = self.usage.get(key, 0) + value
        return run

    def _claude_code(self, claude_agent: Any, system: str, messages: str | list[dict], toolbox: ToolBox,
                     turns: int) -> AgentResult:
        """One Claude Code session, started only when its first request fits what is left of the cap.

        Claude Code runs the loop itself, so its later requests are not checked one by one: the
        session's usage is charged when it ends, and the next session is refused if it went over.
        """
        from mem.core.jobs.budget import request_tokens

        first = request_tokens({"system": system, "messages": [{"role": "user", "content": messages}]
                                if isinstance(messages, str) else messages, "tools": toolbox.definitions()})
        if self.spend.allow(first, self.model.config.max_tokens) is None:
            history = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
            return AgentResult(text="", turns=0, stop_reason=RUN_BUDGET, messages=history)
        run = claude_agent.run_agent(self.model, system=system, messages=messages, toolbox=toolbox,
                                     max_turns=turns, deadline_s=self.deadline_s, log=self.log)
        if run.usage is not None and run.usage.calls:
            self.spend.charge(run.usage.as_dict())
        return run

    @property
    def stopped_at_budget(self) -> bool:
        """The run stopped because its next request would have gone over the job's cap."""
        return self.spend.stopped is not None

    def budget_note(self) -> str:
        """``stopped at its budget (input: 1,000,000 tokens; spent 987,654 in, 12,345 out)``."""
        from mem.core.jobs.budget import format_size

        cap = self.spend.caps.input if self.spend.stopped == "input" else self.spend.caps.output
        return (f"stopped at its budget ({self.spend.stopped} {format_size(cap)} tokens, {self.spend.source}; "
                f"spent {self.spend.input:,} in, {self.spend.output:,} out)")

    def record(self, run: AgentResult, *, outcome: str = "ok", updated: list[str] | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        """One event in the memory directory's audit log for ``run``; a run stopped at the job's
        cap is recorded with outcome ``budget`` and the cap and spend in ``detail.budget``."""
        if self.memory is None:
            return
        from mem.core.memdir import events

        if outcome == "ok" and self.stopped_at_budget:
            outcome = "budget"
        events.record(self.memory, self.purpose, created=run.created,
                      updated=run.updated if updated is None else updated, deleted=run.deleted,
                      strategy="model", tokens=run.usage.as_dict() if run.usage is not None else None,
                      duration=self.elapsed, outcome=outcome,
                      detail={"model": self.model_name, "budget": self.spend.as_dict(), **(detail or {})})

    def failure(self, run: AgentResult, what: str, *, detail: Mapping[str, Any] | None = None,
                after: str = "") -> llm.ModelError:
        """The error to raise for a run that failed (recorded first): ``what: why; after; it had written …``."""
        self.record(run, outcome="error", detail={**(detail or {}), "error": run.error, "turns": run.turns})
        return llm.ModelError(f"{what}: {run.error}{after}{run.written_note}", run.error_kind or "error")
