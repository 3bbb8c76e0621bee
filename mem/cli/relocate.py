"""mem relocate: move one project's memory and transcripts to the project's new path."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, warn_if_history_off
from mem.core.errors import ExitCode


@click.command("relocate", short_help="Move a project's memory and transcripts from OLD to NEW.")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW", type=click.Path(file_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing; exit 1 if it would change something.")
@format_options
@click.pass_context
def relocate_cmd(ctx: click.Context, old: str, new: str, dry_run: bool, fmt: str) -> None:
    """Move the memory and transcripts of the project that was at OLD to NEW.

    For Claude Code and qwen-code alike: a folder the new path does not
    have yet is renamed (the history goes with its memory directory); a
    memory directory that already holds memories is merged through the
    write path, refusing any file that would be overwritten, and the old one
    is then emptied through its own history. A transcript is never
    overwritten. Run it with --dry-run first.

    \b
    Example:
      mem path --orphans
      mem relocate --dry-run ~/src/old-name ~/src/new-name
      mem relocate ~/src/old-name ~/src/new-name
    """
    from mem.core.relocate import apply_relocation, plan_relocation

    plan = plan_relocation(old, new)
    if fmt == "text":
        for step in plan.steps:
            render.out(step.line())
    else:
        render.out_record(plan.as_dict(), fmt)
    if dry_run:
        ctx.exit(ExitCode.CHECK_FAILED if plan.changes else ExitCode.OK)
    apply_relocation(plan, [old, new])
    render.info(f"relocated {plan.old} to {plan.new}")
    for _old, target, _merge in plan.merges:  # a renamed directory takes its history along; a merge is recorded
        warn_if_history_off(target)
        break
