"""mem remember: write one memory."""

from __future__ import annotations

import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, warn_if_history_off
from mem.cli.model import backend_option, budget_option

TYPES = ("user", "feedback", "project", "reference")  # frontmatter.MEMORY_TYPES, without importing it here


@click.command("remember", short_help="Write one memory (TEXT, or - for stdin) and its index line.")
@click.argument("text", nargs=-1, required=True)
@click.option("--type", "memory_type", type=click.Choice(TYPES), help="The memory's type.")
@click.option("--name", metavar="NAME", help="The memory's name; the file is its slug plus .md.")
@click.option("--description", metavar="TEXT", help="One line saying what the memory holds (recall chooses by it).")
@click.option("--file", "file_", metavar="REL", help="Write this file (relative to the memory directory) instead of the name's slug.")
@click.option("--update", is_flag=True, help="The file may exist: replace its body and the keys given, keep the rest.")
@click.option("--force", is_flag=True, help="Save text that reads as a permission grant or a rule bypass (a warning instead of exit 4).")
@click.option("--team/--private", "team", default=None,
              help="With a team/ directory: save into team/ (shared) or outside it (default: by type); "
                   "for qwen-code, into .qwen/team-memory in the repository or the project's own directory.")
@click.option("--offline", is_flag=True, help="Never call a model: --type, --name and --description are required.")
@backend_option
@click.option("--model", metavar="NAME", help="The model to use (default: MEM_MODEL_REMEMBER, MEM_MODEL, else the newest Sonnet).")
@click.option("--max-turns", type=click.IntRange(1, 20), default=4, show_default=True, metavar="N",
              help="Model turns the agent may take.")
@click.option("--timeout", type=click.FloatRange(min=1), default=120, show_default=True, metavar="SECONDS",
              help="Wall-clock budget for the model's work.")
@budget_option("remember")
@memory_dir_options
@format_options
def remember_cmd(text: tuple[str, ...], memory_type: str | None, name: str | None, description: str | None,
                 file_: str | None, update: bool, force: bool, team: bool | None, offline: bool, model: str | None,
                 max_turns: int, timeout: float, budget: str | None, where: dict, fmt: str) -> None:
    """Write one memory: TEXT (or - for stdin) as a topic file plus its index line.

    With --type, --name and --description the text is saved as given. Without
    them, a model (ANTHROPIC_API_KEY) picks the type, file and description, or
    updates the memory that already covers the subject. Secrets are refused.
    Text that starts with a dash goes after -- (or on stdin, with -); it is
    never repeated in an error.

    \b
    Example:
      mem remember --type feedback --name "Test database" \\
          --description "integration tests hit a real Postgres" \\
          "Integration tests must use a real database, never mocks."
      mem remember "I review PRs on Tuesdays; don't ping me before"
      mem remember -- "-v makes the integration tests print each query"
      pbpaste | mem remember --type reference --name Runbooks --description "where runbooks live" -
    """
    from mem.cli.common import current_env
    from mem.core.jobs.remember import RememberRequest, remember

    from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

    body = read_stream_text(sys.stdin) if text == ("-",) else " ".join(text)
    memory, scope = memory_of(where), None if team is None else ("team" if team else "private")
    if team is not None and not where.get("dir"):
        memory, scope = _separate_team_tier(where, team, memory, scope)
    request = RememberRequest(memory, body, type=memory_type, name=name, description=description, file=file_,
                              update=update, force=force, scope=scope,
                              offline=offline, model=model, max_turns=max_turns, timeout=timeout, budget=budget)
    debug = current_env().debug
    result = remember(request, log=render.debug if debug else None, debug=debug)
    for warning in result.warnings:
        render.warn(f"saved although {warning}")
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    else:
        for path in result.paths:
            render.out(path)
    changed = set(result.created) | set(result.updated)
    for rel in result.saved:
        verb = "Saved" if rel in result.created else "Updated" if rel in changed else "Unchanged:"
        where_ = f" ({result.scope})" if result.scope else ""
        render.info(f"{verb} {rel}{where_}")
    if result.strategy == "model" and result.summary:
        render.info(f"model: {' '.join(result.summary.split())}")
    warn_if_history_off(request.memory, bool(changed))
    if result.stopped_at_budget:
        from mem.core.errors import ExitCode

        render.info("the model stopped at its budget; what it saved is kept")
        click.get_current_context().exit(int(ExitCode.BUDGET))


def _separate_team_tier(where: dict, team: bool, memory, scope: str | None):
    """(memory directory, scope) for --team / --private where the client keeps team memory in a
    directory of its own (qwen-code 0.24's .qwen/team-memory): --team writes there, through the
    same write path; --private writes to the project's directory. Else both unchanged."""
    from mem.cli.common import resolve_dir
    from mem.clients import team_tier

    tier = team_tier(resolve_dir(where))
    if not tier.separate:
        return memory, scope
    if not team:
        return memory, None
    import os

    from mem.core.errors import RefusedError
    from mem.core.memdir.store import MemoryDir

    if os.path.islink(tier.memory_dir):
        raise RefusedError(f"{tier.memory_dir} is a symbolic link: team memory is written only inside the repository")
    if not tier.on:
        render.warn(f"team memory is off here ({tier.reason}): the client does not read {tier.memory_dir} yet")
    return MemoryDir(tier.memory_dir), None
