"""mem index: MEMORY.md as an agent is given it; lint it; rebuild it."""

from __future__ import annotations

import difflib
import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, warn_if_history_off
from mem.core.errors import ExitCode, NotFoundError, UsageError


@click.command("index")
@click.option("--print", "mode", flag_value="print", help="Print MEMORY.md exactly as an agent is given it (the default).")
@click.option("--check", "mode", flag_value="check", help="Lint the index; exit 1 on problems.")
@click.option("--rebuild", "mode", flag_value="rebuild", help="Drop stale pointers, add missing ones, keep the rest.")
@click.option("--dry-run", is_flag=True, help="With --rebuild: print a unified diff, write nothing; exit 1 if it would change something.")
@click.option("--team", is_flag=True,
              help="Work on team/MEMORY.md, the synced team index (--rebuild keeps its pointers sorted by path).")
@click.argument("file", required=False, metavar="[FILE]")
@memory_dir_options
@format_options
@click.pass_context
def index_cmd(ctx: click.Context, mode: str | None, dry_run: bool, team: bool, file: str | None, where: dict,
              fmt: str) -> None:
    """Print, lint or rebuild MEMORY.md, the index of one-line pointers.

    FILE (or - for stdin) prints or lints another index text; pointers are
    still resolved against the memory directory. When team/ exists, --rebuild
    also rebuilds team/MEMORY.md (pointers sorted by path, so every machine
    writes the same one); --team works on team/MEMORY.md alone.

    \b
    Example:
      mem index                      # what the agent sees at session start
      mem index --check
      mem index --rebuild --dry-run | less
      mem index --check --team
    """
    from mem.core.memdir import index as idx
    from mem.core.memdir import layout, manifest

    mode = mode or "print"
    if dry_run and mode != "rebuild":
        raise UsageError("--dry-run goes with --rebuild")
    if file and mode == "rebuild":
        raise UsageError("--rebuild works on the memory directory's own MEMORY.md, not FILE")
    memory_root = memory_of(where, reading=mode != "rebuild" and not file).spelled
    root = os.path.join(memory_root, layout.TEAM_DIR) if team else memory_root  # as spelled: shown in output
    name = layout.TEAM_INDEX if team else layout.INDEX_NAME
    index_path = os.path.join(root, layout.INDEX_NAME)
    raw = _read_index(file, index_path)

    if mode == "print":
        if raw is None:
            raise NotFoundError(f"no index at {index_path}")
        t = idx.render_as_injected(raw)
        if fmt == "text":
            render.out(t.content)
        else:
            data = {
                "path": index_path if not file else file,
                "content": t.content,
                "truncated": t.truncated,
                "line_count": t.line_count,
                "size_utf16": t.byte_count,
            }
            render.out_record(data, fmt)
        return

    headers = manifest.scan(root, limit=None) if os.path.isdir(root) else []
    if mode == "check":
        problems = idx.lint(raw, root, headers)
        name = file if file and file != "-" else ("<stdin>" if file == "-" else name)
        if fmt == "text":
            for p in problems:
                loc = f"{name}:{p.line}" if p.line else name
                render.out(f"{loc}: {p.code}: {p.message}")
        else:
            render.out_rows((p.as_dict() for p in problems), fmt, None)
        if problems:
            render.info(f"{len(problems)} problem{'s' * (len(problems) != 1)} in {name}")
            ctx.exit(ExitCode.CHECK_FAILED)
        render.info(f"{name}: no problems")
        return

    memory = memory_of(where)
    result = _rebuild(memory, team, dry_run, fmt)
    if not team and memory.team_enabled:
        result["team"] = _rebuild(memory, True, dry_run, fmt)
    if fmt != "text":
        render.out_record(result, fmt)
    if dry_run and (result["changed"] or result.get("team", {}).get("changed")):
        ctx.exit(ExitCode.WOULD_CHANGE)


def _rebuild(memory, team: bool, dry_run: bool, fmt: str) -> dict:
    """Rebuild (or diff) MEMORY.md, or team/MEMORY.md with ``team``; report on stderr; return the result."""
    from mem.core.memdir.index import rebuild_in_place

    done = rebuild_in_place(memory, team=team, dry_run=dry_run)
    if dry_run and fmt == "text":
        sys.stdout.writelines(difflib.unified_diff(done.old.splitlines(keepends=True), done.new.splitlines(keepends=True),
                                                   fromfile=f"a/{done.name}", tofile=f"b/{done.name}"))
    if not done.changed:
        render.info(f"{done.name} is up to date")
    else:
        verb = "would add" if dry_run else "added"
        render.info(f"{done.name}: {verb} {len(done.added)}, {'would remove' if dry_run else 'removed'} "
                    f"{len(done.removed)} pointers")
        warn_if_history_off(memory, not dry_run)
    return done.as_dict()


def _read_index(file: str | None, index_path: str) -> str | None:
    if file == "-":
        from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

        return read_stream_text(sys.stdin)
    path = file or index_path
    from mem.core.memdir.files import read_text

    try:
        return read_text(path, errors="replace", newline="")  # a FIFO or a huge file: exit 4, refused
    except FileNotFoundError:
        if file:
            raise NotFoundError(f"no such file: {file}") from None
        return None
