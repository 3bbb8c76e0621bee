"""mem path: where the memory directory is, and why; or the memory folders whose project is gone."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.core.errors import ExitCode


@click.command("path")
@click.option("--orphans", is_flag=True,
              help="List the memory folders (Claude Code and qwen-code) whose project no longer exists where it was.")
@click.option("--user", "user_level", is_flag=True, help="Print the user-level memory directory (every project's; qwen-code 0.24's ~/.qwen/memories for its projects).")
@click.option("--team", "team_level", is_flag=True,
              help="Print the team memory directory (team/; qwen-code 0.24's .qwen/team-memory in the repository for its projects).")
@memory_dir_options
@format_options
@click.pass_context
def path_cmd(ctx: click.Context, orphans: bool, user_level: bool, team_level: bool, where: dict, fmt: str) -> None:
    """Print the memory directory and the rule that chose it.

    With --orphans, list the project folders whose project is gone (moved or
    renamed): the path it had (from the transcripts' cwd, else decoded from
    the folder's name), size and last use; exit 1 when there are none. mem
    relocate OLD NEW moves one to its new path.

    \b
    Example:
      cd "$(mem path)" && ls
      mem path --json | jq -r .rule
      mem path --orphans
      mem remember --dir "$(mem path --team)" "Bugs are tracked in TRK"
    """
    if orphans:
        _orphans(ctx, fmt)
        return
    if user_level and team_level:
        raise click.UsageError("--user and --team name different directories: give one")
    if team_level:
        from mem.clients import team_tier

        tier = team_tier(resolve_dir(where))
        if fmt == "text":
            render.out(tier.memory_dir)
            if not tier.on:
                render.warn(f"team memory is off here: {tier.reason}")
        else:
            render.out_record({**tier.as_dict(), "exists": os.path.isdir(tier.memory_dir)}, fmt)
        return
    if user_level:
        from mem.clients import user_memory_dir

        d = user_memory_dir(resolve_dir(where))[0]
        if fmt == "text":
            render.out(d)
        else:
            render.out_record({"memory_dir": d, "exists": os.path.isdir(d)}, fmt)
        return
    from mem.clients import earlier_memory_dir, memory_on

    res = resolve_dir(where)
    data = res.as_dict()
    data["exists"] = os.path.isdir(res.memory_dir)
    data["memory_on"], data["memory_on_reason"] = memory_on(res)
    # the names mem status publishes the answer under, and path did before memory_on
    data["auto_memory_enabled"], data["auto_memory_reason"] = data["memory_on"], data["memory_on_reason"]
    data["earlier_memory_dir"] = earlier_memory_dir(res)
    if fmt == "text":
        render.out(res.memory_dir)
        if not data["memory_on"]:
            render.warn(f"auto memory is off here: {data['memory_on_reason']}")
        if data["earlier_memory_dir"]:
            render.info(f"this worktree's memories may still be in {data['earlier_memory_dir']}, where qwen-code "
                        "before 0.24 kept every worktree's: mem import --layout qwen --from-project "
                        f"{res.canonical_git_root} copies them here")
    else:
        render.out_record(data, fmt)


def _orphans(ctx: click.Context, fmt: str) -> None:
    from mem.core.memdir.index import format_file_size
    from mem.core.relocate import orphans

    found = orphans()

    def text(o: dict) -> str:
        path = o["recorded_path"] or "(unknown: no transcript names it)"
        used = (o["last_used"] or "-")[:10]
        return f"{path}\t{format_file_size(o['size'])}\t{used}\t{o['client']}\t{o['memory_dir'] or o['folder']}"

    render.out_rows([o.as_dict() for o in found], fmt, text)
    if not found:
        render.info("no orphaned memory: every project folder's project is where it was")
        ctx.exit(ExitCode.NOT_FOUND)
