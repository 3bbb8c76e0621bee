"""mem restore: one file as it was at an operation or a time."""

from __future__ import annotations

import click

from mem.cli.common import format_options, memory_dir_options, memory_of


@click.command("restore")
@click.argument("file", metavar="FILE")
@click.option("--at", "at", required=True, metavar="ID|TIME",
              help="An operation id (ID~: just before it), an ISO date or time (UTC unless given), or an age like 100d, 3h, 2w (always an age, never an id).")
@click.option("--dry-run", is_flag=True, help="Print the unified diff of what restore would change; change nothing; exit 1 if it would change something.")
@memory_dir_options
@format_options
def restore_cmd(file: str, at: str, dry_run: bool, where: dict, fmt: str) -> None:
    """Put FILE back as it was at an operation or a point in time.

    FILE is relative to the memory directory. What it holds now is in the
    history already, so a restore can be undone like any operation.

    \b
    Example:
      mem history feedback_testing.md
      mem restore feedback_testing.md --at 3f2a9c1e07b4
      mem restore MEMORY.md --at 2026-11-24T18:00 --dry-run
    """
    from mem.cli.undo import report
    from mem.core.memdir import revert
    memory = memory_of(where)
    result = revert.restore(memory, file, at, dry_run=dry_run)
    report(result, "restore", dry_run, fmt, memory)
