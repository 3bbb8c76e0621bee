"""What memory costs a project, in tokens: at session start, per prompt, per tool call, and in model jobs.

The context figures come from what the client recorded: Claude Code writes every hook's stdout
into the session's transcript (an ``attachment`` line of type ``hook_success`` with the command
and its output), so the text mem's hooks injected is read back exactly and counted. A session
whose transcript holds no such line (qwen-code records no hook output; a session from before
the hooks were installed) counts as a session without hook context. What the memory would cost
a session started now is counted from the index and instructions as `mem prompt` renders them.
Model jobs' spending is summed from the usage each run recorded in the audit trail, and set
against each job's spending cap per run (``BudgetUse``: the cap as configured now, the largest and
the last run's spend, the runs that stopped at their cap).

Every token count is an estimate made with the estimator the jobs' budgets use
(jobs/budget.text_tokens), which errs high; the report says so.

uses: transcripts, hooks.payload (subcommand), memdir.events, prompt, jobs.budget, jobs.llm (JOBS)
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from mem.core.memdir.store import MemoryDir

#: Hook events whose context is counted, and the figure each feeds.
EVENTS = {"SessionStart": "start", "UserPromptSubmit": "prompt", "PreToolUse": "tool"}
#: Sessions read by default: the newest this many transcripts.
DEFAULT_SESSIONS = 20
#: A transcript line longer than this is passed over unread (a hook's line is a few kilobytes).
MAX_LINE_BYTES = 16 * 1024 * 1024


class Spread(NamedTuple):
    """Tokens per occurrence: how many, their median, 90th percentile, mean and total."""

    count: int
    median: int
    p90: int
    mean: int
    total: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        if not values:
            return cls(0, 0, 0, 0, 0)
        ordered = sorted(values)
        return cls(len(ordered), _percentile(ordered, 50), _percentile(ordered, 90),
                   round(sum(ordered) / len(ordered)), sum(ordered))

    def as_dict(self) -> dict:
        return self._asdict()


def _percentile(ordered: Sequence[int], pct: int) -> int:
    """The nearest-rank percentile of sorted values (the median of [1, 2, 3, 4] is 2)."""
    rank = max(1, -(-pct * len(ordered) // 100))
    return ordered[rank - 1]


class SessionCost(NamedTuple):
    session_id: str
    transcript: str
    prompts: int  # the user's prompts in the session
    start: list[int]  # tokens mem's SessionStart hooks injected, per start (a resume or compaction starts again)
    prompt: list[int]  # tokens mem's prompt hook injected, per prompt it ran on (0 when it added nothing)
    tool: list[int]  # tokens mem's tool hook injected, per tool call it ran on
    hooked: bool  # the transcript recorded mem's hooks at all

    @property
    def total(self) -> int:
        return sum(self.start) + sum(self.prompt) + sum(self.tool)

    def as_dict(self) -> dict:
        return {"session_id": self.session_id, "transcript": self.transcript, "prompts": self.prompts,
                "start_tokens": self.start, "prompt_tokens": self.prompt, "tool_tokens": self.tool,
                "total_tokens": self.total, "hooked": self.hooked}


class JobSpend(NamedTuple):
    command: str
    runs: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    def as_dict(self) -> dict:
        return self._asdict()


class BudgetUse(NamedTuple):
    """One job's spending cap per run (as configured now) against what its recorded runs spent."""

    job: str
    input_tokens: int | None  # the cap (None: none)
    output_tokens: int | None
    source: str  # default | MEM_BUDGET_<JOB> | "MEM_BUDGET_<JOB> (invalid: ...)"
    runs: int  # runs that recorded their spend against a cap
    largest_run_input_tokens: int
    largest_run_output_tokens: int
    last_run_input_tokens: int | None
    last_run_output_tokens: int | None
    stopped_at_budget: int  # runs that stopped at their cap

    def as_dict(self) -> dict:
        return self._asdict()


class CostReport(NamedTuple):
    memory_dir: str
    transcripts_dir: str | None
    start_now: int  # the index and instructions a session would get now
    sessions: list[SessionCost]
    jobs: list[JobSpend]
    budgets: list[BudgetUse] = []

    @property
    def hooked(self) -> list[SessionCost]:
        return [s for s in self.sessions if s.hooked]

    def spread(self, figure: str) -> Spread:
        return Spread.of([t for s in self.hooked for t in getattr(s, figure)])

    def as_dict(self) -> dict:
        return {
            "memory_dir": self.memory_dir,
            "transcripts_dir": self.transcripts_dir,
            "estimated": True,
            "session_start_now_tokens": self.start_now,
            "sessions_read": len(self.sessions),
            "sessions_with_hooks": len(self.hooked),
            "session_start": self.spread("start").as_dict(),
            "per_prompt": self.spread("prompt").as_dict(),
            "per_tool_call": self.spread("tool").as_dict(),
            "per_session": Spread.of([s.total for s in self.hooked]).as_dict(),
            "jobs": [j.as_dict() for j in self.jobs],
            "budgets": [b.as_dict() for b in self.budgets],
            "sessions": [s.as_dict() for s in self.sessions],
        }


def is_mem_hook(command: str) -> str | None:
    """The subcommand of a hook command line that runs mem with ``--hook`` ("recall", "prompt"...), else None."""
    from mem.core.hooks.payload import subcommand

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or "--hook" not in words:
        return None
    program = os.path.basename(words[0])
    if program in ("python", "python3") or program.startswith("python3."):
        words = words[2:] if words[1:2] == ["-m"] and words[2:3] == ["mem"] else []
        if not words:
            return None
    elif not (program == "mem" or program.startswith("mem-py") or program == "mem.pyz"):
        return None
    return subcommand(words[1:]) or None


def hook_context(stdout: str) -> str:
    """The text a hook's stdout added to the context: JSON ``additionalContext``, else plain stdout."""
    text = stdout.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return text  # plain stdout is injected as it is
    if isinstance(data, dict):
        specific = data.get("hookSpecificOutput")
        if isinstance(specific, dict) and isinstance(specific.get("additionalContext"), str):
            return specific["additionalContext"]
        return ""
    return text


def session_cost(path: str) -> SessionCost:
    """The context mem's hooks added in one Claude Code transcript, read from its hook records."""
    from mem.core.jobs.budget import text_tokens
    from mem.core.memdir.files import read_lines

    figures: dict[str, list[int]] = {"start": [], "prompt": [], "tool": []}
    prompts = 0
    session_id = os.path.splitext(os.path.basename(path))[0]
    hooked = False
    for raw in read_lines(path, MAX_LINE_BYTES):
        if b'"hook_success"' not in raw and b'"type":"user"' not in raw and b'"type": "user"' not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("type") == "user":
            prompts += _is_prompt(record)
            continue
        attachment = record.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "hook_success":
            continue
        figure = EVENTS.get(str(attachment.get("hookEvent")))
        command = attachment.get("command")
        if figure is None or not isinstance(command, str) or is_mem_hook(command) is None:
            continue
        hooked = True
        stdout = attachment.get("stdout")
        figures[figure].append(text_tokens(hook_context(stdout if isinstance(stdout, str) else "")))
    return SessionCost(session_id, path, prompts, figures["start"], figures["prompt"], figures["tool"], hooked)


def _is_prompt(record: dict) -> bool:
    """A user line that is the user's own prompt: not a tool result, a meta line or a compact summary."""
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("toolUseResult") is not None:
        return False
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return not content.startswith("<command-name>") and not content.startswith("<local-command")
    if isinstance(content, list):
        return any(isinstance(b, dict) and b.get("type") == "text" for b in content) and \
            not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return False


def newest_transcripts(directory: str | None, count: int) -> list[str]:
    """The ``count`` newest ``*.jsonl`` transcripts directly in ``directory``, newest first."""
    if not directory or not os.path.isdir(directory):
        return []
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                found.append((entry.stat().st_mtime_ns, entry.path))
    return [p for _, p in sorted(found, reverse=True)[:count]]


def job_spend(memory: MemoryDir, env=None) -> list[JobSpend]:
    """Model usage recorded by each command that ran a model on this memory directory, summed per command."""
    from mem.core.memdir.events import read_events

    sums: dict[str, list[int]] = {}
    for event in read_events(memory, env=env):
        tokens = event.get("tokens")
        if not isinstance(tokens, dict):
            continue
        row = sums.setdefault(str(event.get("command")), [0, 0, 0, 0, 0])
        row[0] += 1
        for i, key in enumerate(("input_tokens", "output_tokens", "cache_read_input_tokens",
                                 "cache_creation_input_tokens"), 1):
            value = tokens.get(key)
            row[i] += value if isinstance(value, int) and value > 0 else 0
    return [JobSpend(command, *row) for command, row in sorted(sums.items())]


def budget_use(memory: MemoryDir, env=None) -> list[BudgetUse]:
    """Every capped job's cap per run (``--budget`` aside: MEM_BUDGET_<JOB>, else its default) against
    the spend its runs recorded (``detail.budget`` of their events, summed over a run's windows)."""
    from mem.core.jobs.budget import Caps, caps_for
    from mem.core.jobs.llm import JOBS
    from mem.core.memdir.events import read_events

    runs: dict[str, list[tuple[int, int, bool, str | None]]] = {}
    for event in read_events(memory, env=env):
        detail = event.get("detail")
        spent = detail.get("budget") if isinstance(detail, dict) else None
        if not isinstance(spent, dict):
            continue
        spent_in, spent_out = spent.get("spent_input_tokens"), spent.get("spent_output_tokens")
        # A run of several windows records an event per window, each with the run's spend so far:
        # consecutive events of one process and job with growing spend are one run.
        row = runs.setdefault(str(event.get("command")), [])
        key = f"{event.get('pid')}"
        value = (spent_in if isinstance(spent_in, int) else 0, spent_out if isinstance(spent_out, int) else 0,
                 event.get("outcome") == "budget", key)
        if row and row[-1][3] == key and value[0] >= row[-1][0] and value[1] >= row[-1][1] and not row[-1][2]:
            row[-1] = value
        else:
            row.append(value)
    out = []
    for job, settings in JOBS.items():
        default = Caps(settings.input_budget, settings.output_budget)
        if default == Caps(None, None):
            continue
        try:
            caps, source = caps_for(job, None, default, env)
        except ValueError as exc:
            caps, source = default, f"MEM_BUDGET_{job.upper()} (invalid: {exc}; the default applies)"
        rows = runs.get(job, [])
        out.append(BudgetUse(job, caps.input, caps.output, source, len(rows),
                             max((r[0] for r in rows), default=0), max((r[1] for r in rows), default=0),
                             rows[-1][0] if rows else None, rows[-1][1] if rows else None,
                             sum(1 for r in rows if r[2])))
    return out


def cost(memory: MemoryDir, transcripts_dir: str | None, *, sessions: int = DEFAULT_SESSIONS,
         transcripts: Iterable[str] = ()) -> CostReport:
    """The report for one memory directory: the newest ``sessions`` transcripts of ``transcripts_dir``
    (or the ``transcripts`` named), and every model job's recorded usage."""
    from mem.core import prompt
    from mem.core.jobs.budget import text_tokens

    paths = list(transcripts) or newest_transcripts(transcripts_dir, sessions)
    start_now = text_tokens(prompt.build(memory, "full").text)
    return CostReport(memory.spelled, transcripts_dir, start_now, [session_cost(p) for p in paths],
                      job_spend(memory), budget_use(memory))
