"""mem verify: check memories' claims (paths, symbols, commands, commits, dates, links) against the repository."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir, warn_if_history_off
from mem.core.errors import ExitCode


@click.command("verify", short_help="Check what memories claim about the project against its git repo.")
@click.argument("files", nargs=-1, metavar="[FILE...]")
@click.option("--repo", metavar="DIR", type=click.Path(file_okay=False),
              help="Check against this git repository (default: the project's git root).")
@click.option("--all", "all_", is_flag=True, help="Print every claim checked, the ones still true (ok) too.")
@click.option("--fix", is_flag=True, help="Rewrite each moved path in place to where it went (recorded; mem undo takes it back).")
@click.option("--no-cache", is_flag=True, help="Check everything again instead of reusing results for unchanged memories.")
@memory_dir_options
@format_options
@click.pass_context
def verify_cmd(ctx: click.Context, files: tuple[str, ...], repo: str | None, all_: bool, fix: bool, no_cache: bool,
               where: dict, fmt: str) -> None:
    """Check what memories claim about the project against its git repository.

    Paths, symbols, make/npm/just/tox/pytest targets, commit ids, deadlines,
    relative dates and links to other memories: each claim gets a verdict
    (ok, moved, missing, expired) and the evidence. Prints the stale ones,
    grep-style `relpath:line: verdict: kind claim (evidence)`; exit 1 if any.

    \b
    Example:
      mem verify
      mem verify project_retry.md --all
      mem verify --json | jq -r '.[] | select(.verdict=="moved") | .new_place'
      mem verify --fix && mem history -n 1
    """
    from mem.core.memdir.store import MemoryDir
    from mem.core.verify import fix_moved, verify

    resolution = resolve_dir(where, reading=True)
    repo = repo or resolution.git_root
    if not repo:
        from mem.core.errors import ConfigError

        raise ConfigError(f"no repository to check against: {resolution.project_root} is not in a git "
                          f"repository; give --repo DIR or run from inside the project")
    memory = MemoryDir(resolution.memory_dir)
    report = verify(memory, repo, [_relpath(memory.root, f) for f in files] or None, use_cache=not no_cache)
    if fix:
        fixed = fix_moved(memory, report.findings)
        for f in fixed:
            render.info(f"fixed {f.memory}:{f.line}: {f.claim} -> {f.new_place}")
        warn_if_history_off(memory, bool(fixed))
        report = verify(memory, repo, [_relpath(memory.root, f) for f in files] or None, use_cache=not no_cache)
    shown = report.findings if all_ else report.stale
    render.out_rows((f.as_dict() for f in shown), fmt, lambda row: _line(row))
    stale = len(report.stale)
    render.info(f"{stale} stale of {len(report.findings)} claims in {report.memories} memories")
    if stale:
        ctx.exit(ExitCode.CHECK_FAILED)


def _line(row: dict) -> str:
    return f"{row['memory']}:{row['line']}: {row['verdict']}: {row['kind']} {row['claim']} ({row['evidence']})"


def _relpath(root: str, file: str) -> str:
    """A FILE argument as a relpath of the memory directory: given relative to it, or by a path into it."""
    import os

    if os.path.isabs(file) or (os.path.exists(file) and not os.path.exists(os.path.join(root, file))):
        rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root))
        if rel.startswith(".."):
            raise click.BadParameter(f"{file} is not inside the memory directory {root}", param_hint="FILE")
    else:
        rel = file
    if not os.path.isfile(os.path.join(root, rel)):
        raise click.BadParameter(f"no memory {file} in {root}", param_hint="FILE")
    return rel.replace(os.sep, "/")
