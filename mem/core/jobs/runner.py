"""The recipe every agent job shares, written once.

A job (extract, remember, the session notes, dream) states what is its own:
its prompt, its tools, what it does with the files the model wrote. The rest is
the same for all and lives here: the model for the job's purpose (credentials
checked first: ConfigError, exit 3, before anything is written), its settings
from ``llm.JOBS`` (turns, wall-clock deadline, retries of our own loop, output
tokens), the agent loop, the usage summed over the job's runs, the event a
failure leaves in the audit log, and the error the caller raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mem.core.jobs import llm
from mem.core.jobs.agent import AgentResult, ToolBox, run_agent


class Job:
    """One run of an agent job for ``purpose`` (a key of ``llm.JOBS``)."""

    def __init__(self, purpose: str, *, model: str | None = None, deadline_s: float | None = None,
                 memory: Any = None, debug: bool = False, log: Callable[[str], None] | None = None):
        self.purpose = purpose
        self.settings = llm.JOBS[purpose]
        self.deadline_s = self.settings.deadline_s if deadline_s is None else deadline_s
        # A call may take the job's whole deadline, never more than the job's own call timeout.
        self.model = llm.model_for(purpose, model, timeout=min(self.settings.timeout, self.deadline_s), debug=debug)
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

            run = claude_agent.run_agent(self.model, system=system, messages=messages, toolbox=toolbox,
                                        max_turns=turns, deadline_s=self.deadline_s, log=self.log)
        else:
            run = run_agent(self.model, system=system, messages=messages, toolbox=toolbox, max_turns=turns,
                            deadline_s=self.deadline_s, max_tokens=self.model.config.max_tokens,
                            retries=self.settings.retries, log=self.log)
        run.timeout_if_unanswered(self.deadline_s)
        self.turns += run.turns
        for key, value in (run.usage.as_dict() if run.usage is not None else {}).items():
            self.usage[key] = self.usage.get(key, 0) + value
        return run

    def record(self, run: AgentResult, *, outcome: str = "ok", updated: list[str] | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        """One event in the memory directory's audit log for ``run``."""
        if self.memory is None:
            return
        from mem.core.memdir import events

        events.record(self.memory.root, self.purpose, created=run.created,
                      updated=run.updated if updated is None else updated, deleted=run.deleted,
                      strategy="model", tokens=run.usage.as_dict() if run.usage is not None else None,
                      duration=self.elapsed, outcome=outcome, detail={"model": self.model_name, **(detail or {})})

    def failure(self, run: AgentResult, what: str, *, detail: Mapping[str, Any] | None = None,
                after: str = "") -> llm.ModelError:
        """The error to raise for a run that failed (recorded first): ``what: why; after; it had written …``."""
        self.record(run, outcome="error", detail={**(detail or {}), "error": run.error, "turns": run.turns})
        return llm.ModelError(f"{what}: {run.error}{after}{run.written_note}", run.error_kind or "error")
