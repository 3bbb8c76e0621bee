"""mem undo: take back one recorded operation, touching nothing else."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, undo_note
from mem.core.errors import ExitCode


@click.command("undo")
@click.argument("operation", required=False, metavar="[ID]")
@click.option("--force", is_flag=True, help="Put the earlier versions back even over files that changed since.")
@click.option("--dry-run", is_flag=True, help="Print the unified diff of what undo would change; change nothing; exit 1 if it would change something.")
@memory_dir_options
@format_options
def undo_cmd(operation: str | None, force: bool, dry_run: bool, where: dict, fmt: str) -> None:
    """Take back the newest operation mem made, or the one named by ID.

    Only the files that operation changed are put back, each to what it held
    before. MEMORY.md and daily logs are merged line by line: the lines the
    operation added are removed and those it removed put back, every other
    line (the agent's own pointers) kept. If a topic file, or one of the
    operation's own lines, has changed since, undo refuses and names it (exit
    4) unless --force. Changes made outside mem (an editor, the agent's own
    Write tool) are never undone; `mem restore` takes one file back by hand.
    The undo is an operation of its own: `mem undo UNDO-ID` redoes. A plain
    `mem undo` never takes back an undo: when the newest operation is one,
    it says so and changes nothing (exit 0), so running it again after a
    kill or a full disk finishes the same undo, never its inverse.

    \b
    Example:
      mem history -n 5
      mem undo --dry-run | less
      mem undo 3f2a9c1e07b4
    """
    from mem.core.memdir import revert
    memory = memory_of(where)
    result = revert.undo(memory, operation, force=force, dry_run=dry_run)
    report(result, "undo", dry_run, fmt, memory)


def report(result, verb: str, dry_run: bool, fmt: str, memory) -> None:
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    elif dry_run:
        render.out(result.diff, nl=False)
    if result.newest_undo is not None:  # nothing done, nothing would be: exit 0, as a retry wants
        render.info(already_undone(memory, result.newest_undo))
        return
    for conflict in result.conflicts:
        render.warn(f"overwrote {conflict}")
    if dry_run:
        if result.diff:  # it would change something: exit 1, as diff(1) does
            raise click.exceptions.Exit(ExitCode.WOULD_CHANGE)
        return
    op = result.operation
    what = f"{result.taken_back.id[:12]} ({result.taken_back.command})" if result.taken_back else ""
    if op is None:
        render.info(f"{verb}: nothing to change" + (f" for {what}" if what else ""))
    else:
        files = ", ".join(c.path for c in op.changes)
        # a plain undo never takes back an undo: name the id that does
        note = undo_note(memory, op, f"`mem undo {op.id[:12]}` takes it back") if verb == "undo" \
            else undo_note(memory, op)
        render.info(f"{verb} {what + ': ' if what else ''}{files} (operation {op.id[:12]}; {note})")


def already_undone(memory, newest) -> str:
    """The line for a plain undo that found an undo newest: what it undid, and how to go on."""
    undone = memory.history.find(newest.undoes)
    failed = ", which failed" if newest.meta.get("reason") else ""
    return (f"undo: nothing done: the newest operation, {newest.id[:12]} ({newest.time}), is already an undo "
            f"of {undone.id[:12]} ({undone.command}{failed}); `mem undo ID` takes back an older operation, "
            f"`mem undo {newest.id[:12]}` redoes {undone.id[:12]}")
