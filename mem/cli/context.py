"""mem context: the CLAUDE.md files and memory index an agent loads for a directory."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.core.errors import ExitCode, UsageError

FORMATS = ("claude", "agents-md")


@click.command("context")
@click.option(
    "--format", "form", type=click.Choice(FORMATS), default="claude", show_default=True,
    help="claude: the text Claude Code loads; agents-md: one Markdown block for an agent without hooks.",
)
@click.option("--external-includes", is_flag=True,
              help="Follow @includes outside the project directory even where Claude Code waits for approval.")
@click.option("--no-memory", is_flag=True, help="Leave out MEMORY.md and team/MEMORY.md: only the instruction files.")
@memory_dir_options
@format_options
@click.pass_context
def context_cmd(ctx: click.Context, form: str, external_includes: bool, no_memory: bool, where: dict, fmt: str) -> None:
    """Print the instruction context an agent loads here, in load order.

    Managed, user, project (CLAUDE.md, .claude/CLAUDE.md, .claude/rules/*.md
    from the top directory down to this one) and local (CLAUDE.local.md)
    instruction files, then the memory index, each as "Contents of PATH
    (description):" with @includes followed, as Claude Code loads them.
    Missing or unreadable includes and truncated files are reported on stderr.

    \b
    Example:
      mem context | less
      mem context --project ~/src/app --json | jq -r '.files[] | "\\(.kind) \\(.path)"'
      mem context --format agents-md > AGENTS.md
    """
    from mem.clients import memory_on
    from mem.core import context as cx

    if fmt != "text" and form == "agents-md":
        raise UsageError("--format agents-md prints text; it does not go with --json or --jsonl")
    res = resolve_dir(where)
    on, why = memory_on(res)
    use_memory = not no_memory and on and res.layout != "agent"
    if not no_memory and res.layout == "agent":
        render.info("an agent's MEMORY.md is part of that agent's own prompt, not of this context: left out")
    elif not no_memory and not on:
        render.info(f"auto memory is off ({why}): MEMORY.md left out")
    from mem.clients import team_tier
    from mem.core.memdir.store import MemoryDir

    tier = team_tier(res)
    loaded = cx.load_context(
        res.project_root, memory=MemoryDir(res.memory_dir), auto_memory=use_memory,
        external_includes=True if external_includes else None,
        team_dir=tier.memory_dir if tier.separate and tier.on else None,
    )
    for s in loaded.skipped:
        if s.reason in cx.NOTEWORTHY:
            render.warn(s.line())
    for f in loaded.files:
        if f.truncated and f.kind in cx.INSTRUCTION_KINDS:
            render.warn(f"{f.path}: {f.chars:,} characters, over the {cx.MAX_MEMORY_CHARACTER_COUNT:,} limit: truncated")
    if fmt == "json":
        render.out_json(loaded.as_dict())
    elif fmt == "jsonl":
        render.out_jsonl(f.as_dict() for f in loaded.files)
    elif loaded.files:
        render.out(cx.render_agents_md(loaded) if form == "agents-md" else loaded.render())
    if not loaded.files:
        render.info(f"no instruction files or memory index for {res.project_root}")
        ctx.exit(ExitCode.NOT_FOUND)
