"""mem import: an archive, or another memory directory, merged into this one."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir, undo_note
from mem.core.errors import ExitCode, UsageError
from mem.core.wording import plural


class _Bytes(click.ParamType):
    """A size in bytes: 1048576, 64K, 64M, 1G (powers of 1024)."""

    name = "bytes"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            n = int(text[:-1] if scale != 1 else text) * scale
        except ValueError:
            n = -1
        if n < 0:
            self.fail(f"{value!r} is not a size (a number of bytes, or with K, M or G)", param, ctx)
        return n


BYTES = _Bytes()


@click.command("import", short_help="Merge a mem export archive (or a memory directory) into this one.")
@click.argument("source", required=False, metavar="FILE|DIR")
@click.option("--from-project", metavar="PATH", type=click.Path(file_okay=False),
              help="Import the memory directory of the project at PATH.")
@click.option("--client", type=click.Choice(("codex", "gemini")),
              help="Import the memories Codex CLI or Gemini CLI keeps in its own files (mem scan --client lists them), "
                   "each as a topic file with mem's frontmatter.")
@click.option("--dry-run", is_flag=True, help="Print the plan and write nothing; exit 1 if it would change something.")
@click.option("--on-conflict", "policy", type=click.Choice(("keep", "theirs", "both")),
              help="For a file both sides have with different content: keep ours, take theirs (kept in the "
                   "history), or both (theirs under a new name). Without it, a conflict refuses the import.")
@click.option("--logs", is_flag=True, help="From a directory: include its daily logs (an archive brings what it has).")
@click.option("--team", is_flag=True, help="From a directory: include its team/ memory.")
@click.option("--force", is_flag=True, help="Import memories that read as a permission grant or a rule bypass.")
@click.option("--skip-foreign", is_flag=True,
              help="Leave out files that are not memory files (.git/, scripts, dotfiles, CLAUDE.md) instead of "
                   "refusing the import; each one is named.")
@click.option("--max-archive-size", "max_archive", type=BYTES, default="64M", show_default=True, metavar="BYTES",
              help="Refuse an archive larger than this as it arrives (compressed).")
@click.option("--max-expanded-size", "max_expanded", type=BYTES, default="128M", show_default=True, metavar="BYTES",
              help="Refuse an archive whose files come to more than this once expanded.")
@click.option("--max-members", type=click.IntRange(min=1), default=10_000, show_default=True, metavar="N",
              help="Refuse an archive with more members than this.")
@click.option("--max-header-size", "max_header", type=BYTES, default="64K", show_default=True, metavar="BYTES",
              help="Refuse an archive with a tar header (pax extended header, GNU long name) larger than this.")
@click.option("--timeout", type=click.FloatRange(min=0), default=120.0, show_default=True, metavar="SECONDS",
              help="Refuse an import whose reading and checking takes longer than this (0: no limit).")
@memory_dir_options
@format_options
@click.pass_context
def import_cmd(ctx: click.Context, source: str | None, from_project: str | None, client: str | None, dry_run: bool,
               policy: str | None,
               logs: bool, team: bool, force: bool, skip_foreign: bool, max_archive: int, max_expanded: int, max_members: int, max_header: int,
               timeout: float, where: dict, fmt: str) -> None:
    """Merge an archive from mem export (or a memory directory) into this one.

    Everything is checked before the first write: the manifest and each
    file's sha256, paths (absolute, .., links and devices are refused),
    that every file is a memory file (topic *.md files, MEMORY.md, logs/,
    team/, pinned/: no dotfile, .git/, script or CLAUDE.md), secrets,
    frontmatter, and the indexes and topic files for text that reads as a
    grant. Files in pinned/ (hand-curated; ours, theirs, or reached through
    a link) are left out and named. Then the files land through the write path as one
    operation (mem undo takes it back) and the indexes are merged: their
    pointers are added to ours, ours are never replaced. Frontmatter
    written for Claude Code is converted for qwen-code. - reads an archive
    from stdin. An archive past a limit (its size, its expanded size, its
    member count, a tar header's size, the time the checks take) is refused
    whole; each --max-* flag and --timeout moves one.

    --client codex takes what Codex CLI keeps in $CODEX_HOME/memories_v2 (or
    memories): each ad-hoc note (what you asked it to remember), its memory
    summary, each task group of its MEMORY.md. --client gemini takes the
    facts its save_memory kept in ~/.gemini/GEMINI.md and this project's
    private memory (~/.gemini/tmp/<project>/memory/). Each becomes one
    topic file, named after the client (codex-*.md, gemini-*.md), checked
    and written as any import is; the client's files are not changed.

    \b
    Example:
      mem import memory.tar.gz --dry-run
      mem import memory.tar.gz --on-conflict both
      mem import --from-project ~/src/old-name
      mem import --client codex --dry-run
    """
    import os
    import sys

    from mem.clients import of_layout
    from mem.core import portable
    from mem.core.guards.control import printable
    from mem.core.memdir.store import MemoryDir
    from mem.clients import resolve

    if sum(x is not None for x in (source, from_project, client)) != 1:
        raise UsageError("give one of FILE|DIR, --from-project PATH or --client NAME")
    limits = portable.Limits(max_archive, max_members, max_header, max_expanded, timeout)
    res = resolve_dir(where)
    memory = MemoryDir(res.memory_dir)
    if from_project is not None:
        theirs = resolve(project=from_project, layout=where["layout"], settings_file=where.get("settings_file"))
        if os.path.normpath(theirs.memory_dir) == os.path.normpath(res.memory_dir):
            raise UsageError(f"{from_project} uses this very memory directory")
        src = portable.load_source(theirs.memory_dir, layout=of_layout(theirs.layout).LAYOUT,
                                   logs=logs, team=team)
    elif client is not None:
        from mem.clients import as_files, named
        from mem.core.paths import project_root

        found = named(client).own_memories(project_root(where.get("project") or os.getcwd()))
        if not found:
            render.info(f"no memories of {client}'s own found (mem scan --client {client})")
            return
        src = portable.Source("client", f"{client}'s memories", "claude", as_files(found))
    elif source == "-":
        src = portable.read_archive("-", sys.stdin.buffer, limits)
    else:
        src = portable.load_source(source, logs=logs, team=team, limits=limits)
    target = of_layout(res.layout).LAYOUT
    plan = portable.plan_import(memory, src, policy=policy, target_layout=target, force=force,
                                skip_foreign=skip_foreign)
    for rel, why in plan.skipped:
        render.info(f"skipped {printable(rel)}: {why}")
    if dry_run:
        _show(plan.as_dict(), plan.steps, fmt)
        ctx.exit(ExitCode.CHECK_FAILED if plan.changes else ExitCode.OK)
    if not plan.changes:
        _show(plan.as_dict(), plan.steps, fmt)
        render.info(f"nothing to import: {res.memory_dir} already has all of it")
        return
    args = [source] if source else [f"--from-project={from_project}"] if from_project else [f"--client={client}"]
    result = portable.apply_import(memory, plan, args)
    _show(result.as_dict(), plan.steps, fmt)
    for rel in result.indexed:
        render.info(f"indexed {rel}")
    kept = sum(1 for s in plan.steps if s.action == "keep")
    render.info(f"imported {plural(len(result.written), 'file')} into {res.memory_dir}"
                + (f"; kept ours for {plural(kept, 'conflicting file')}" if kept else "")
                + f"; {undo_note(memory, memory.last_operation)}")


def _show(data: dict, steps, fmt: str) -> None:
    if fmt == "text":
        for s in steps:
            render.out(s.line())
    else:
        render.out_record(data, fmt)
