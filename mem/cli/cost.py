"""mem cost: the tokens memory adds to a project's sessions, and what its model jobs spent."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.core.wording import plural

LABEL = 15  # width of the label column


@click.command("cost", short_help="Show the tokens memory adds to sessions, and jobs' spend.")
@click.option("--sessions", "count", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="Read the newest N sessions of the project.")
@click.option("--transcript", "transcripts", multiple=True, type=click.Path(dir_okay=False), metavar="PATH",
              help="Read this transcript instead (repeatable).")
@memory_dir_options
@format_options
def cost_cmd(count: int, transcripts: tuple[str, ...], where: dict, fmt: str) -> None:
    """Show the tokens memory adds to the project's sessions, and what its model jobs spent.

    At session start (the index and instructions), per prompt (what the
    recall hook surfaced) and per tool call (the tool hook's reminders),
    read back from what Claude Code recorded of mem's hooks in the newest
    --sessions transcripts: median, 90th percentile and total. Model jobs'
    spending is summed from the usage each run recorded, and each job's
    spending cap per run (MEM_BUDGET_<JOB>, else its default) is shown
    against its largest and last run. Token counts are estimates, made as
    the jobs' budgets make them (they err high).

    \b
    Example:
      mem cost
      mem cost --sessions 50 --json | jq .per_prompt
    """
    from mem.core import cost
    from mem.core.memdir.store import MemoryDir

    resolution = resolve_dir(where)
    report = cost.cost(MemoryDir(resolution.memory_dir), resolution.transcripts_dir, sessions=count,
                       transcripts=transcripts)
    if fmt != "text":
        render.out_record(report.as_dict(), fmt)
        return
    render.out("\n".join(text_lines(report)))


def _n(value: int) -> str:
    return f"{value:,}"


def text_lines(report) -> list[str]:
    def row(label: str, text: str) -> str:
        return f"{label:<{LABEL}}{text}"

    hooked = report.hooked
    where = f"{plural(len(hooked), 'session')} with mem's hooks of the {plural(len(report.sessions), 'session')} read"
    lines = [row("memory dir", report.memory_dir),
             row("session start", f"~{_n(report.start_now)} tokens now (index and instructions)")]
    if not hooked:
        lines.append(row("sessions", f"none of the {plural(len(report.sessions), 'session')} read recorded mem's hooks"
                         + ("" if report.sessions else f" (no transcripts in {report.transcripts_dir or 'any directory'})")))
    else:
        for label, figure, what in (("  measured", "start", "start"), ("per prompt", "prompt", "prompt"),
                                    ("per tool call", "tool", "tool call")):
            s = report.spread(figure)
            if not s.count:
                lines.append(row(label, f"no {what} hook recorded"))
                continue
            lines.append(row(label, f"median {_n(s.median)}, p90 {_n(s.p90)}, total {_n(s.total)} tokens "
                                    f"over {plural(s.count, what)}"))
        per = [s.total for s in hooked]
        from mem.core.cost import Spread

        t = Spread.of(per)
        lines.append(row("per session", f"median {_n(t.median)}, p90 {_n(t.p90)} tokens ({where})"))
    if report.jobs:
        for job in report.jobs:
            lines.append(row("model jobs" if job is report.jobs[0] else "",
                             f"{job.command}: {plural(job.runs, 'run')}, {_n(job.input_tokens)} in, "
                             f"{_n(job.output_tokens)} out"))
    else:
        lines.append(row("model jobs", "none recorded"))
    from mem.core.jobs.budget import format_size

    for b in report.budgets:
        spent = (f"largest run {_n(b.largest_run_input_tokens)} in, {_n(b.largest_run_output_tokens)} out; "
                 f"last {_n(b.last_run_input_tokens or 0)} in, {_n(b.last_run_output_tokens or 0)} out"
                 if b.runs else "no run recorded")
        stopped = f"; {plural(b.stopped_at_budget, 'run')} stopped at it" if b.stopped_at_budget else ""
        lines.append(row("budget per run" if b is report.budgets[0] else "",
                         f"{b.job}: in={format_size(b.input_tokens)},out={format_size(b.output_tokens)} "
                         f"({b.source}); {spent}{stopped}"))
    lines.append("Token counts are estimates (mem's estimator, as the jobs' budgets use; it errs high).")
    return lines
