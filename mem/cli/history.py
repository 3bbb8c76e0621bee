"""mem history: every change to the memory directory, newest first."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of
from mem.core.errors import ExitCode
from mem.core.guards.control import printable
from mem.core.wording import plural


@click.command("history", short_help="List the operations recorded for this memory directory.")
@click.argument("file", required=False, metavar="[FILE]")
@click.option("-n", "limit", type=click.IntRange(min=1), metavar="N", help="Show at most N operations.")
@click.option("--diff", "diff_id", metavar="ID", help="Print the unified diff of one operation.")
@click.option("--prune", is_flag=True, help="Drop operations past the retention limits now (90 days, 200 MiB).")
@click.option("--redact", "redact_id", metavar="ID", help="Remove the version of FILE that operation ID wrote, everywhere.")
@memory_dir_options
@format_options
def history_cmd(file: str | None, limit: int | None, diff_id: str | None, prune: bool, redact_id: str | None,
                where: dict, fmt: str) -> None:
    """List the operations recorded for this memory directory, newest first.

    Every command that writes memory records one operation (its files, before
    and after); changes made by anything else are recorded as `outside` the
    next time mem runs. One line an operation: id, time, command, files
    (+ created, ~ updated, - deleted). With FILE, only the operations that
    changed it. Kept 90 days and up to 200 MiB, in the state directory.

    \b
    Example:
      mem history -n 10
      mem history --diff 3f2a9c1e07b4 | less
      mem history --json | jq -r '.[] | select(.command=="dream") | .id'
      mem history --redact 3f2a9c1e07b4 notes.md
    """
    memory = memory_of(where, reading=True)
    history = memory.history
    if not history.available():
        from mem.core.memdir.history import HistoryUnavailable

        raise HistoryUnavailable()
    if redact_id:
        if not file:
            raise click.UsageError("--redact ID needs the FILE whose version to remove")
        rewritten = history.redact(redact_id, _relpath(file))
        render.info(f"removed that version of {file} from {plural(len(rewritten), 'operation')}")
        return
    if prune:
        dropped = history.prune()
        render.info(f"pruned {plural(len(dropped), 'operation')}")
        return
    history.sync()
    if diff_id:
        render.out(history.diff(history.find(diff_id)), nl=False)
        return
    ops = history.operations(_relpath(file) if file else None, limit)
    render.out_rows([op.as_dict() for op in ops], fmt, line)
    if not ops:
        # exit 1 alone said nothing: a fresh machine's first `mem history` looked broken
        render.info(f"no change recorded{' to ' + file if file else ''} in {memory.root} yet")
        raise click.exceptions.Exit(ExitCode.NOT_FOUND)


def _relpath(file: str) -> str:
    return file.replace("\\", "/").lstrip("/")


def line(op: dict) -> str:
    """One operation as a line: id, time, command and arguments, files with their action."""
    sign = {"created": "+", "updated": "~", "deleted": "-"}
    files = " ".join(sign[c["action"]] + c["path"] for c in op["changes"])
    args = (" " + " ".join(op["args"])) if op["args"] else ""
    flags = " (interrupted)" if op["interrupted"] else ""
    # names made outside mem may hold an escape sequence or a newline: escaped, as ls -b does (JSON stays exact)
    return printable(f"{op['id'][:12]}  {op['time']}  {op['command']}{args}{flags}  {files}")
