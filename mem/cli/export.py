"""mem export: the memory directory as one portable archive, or as one Markdown file."""

from __future__ import annotations

import sys

import click

from mem import render
from mem.cli.common import memory_dir_options, resolve_dir
from mem.core.errors import UsageError
from mem.core.wording import plural

FORMATS = ("tar.gz", "agents-md", "gemini-md")


@click.command("export", short_help="Write the memory directory as one archive with a manifest.")
@click.option("-o", "--output", metavar="FILE",
              help="Write here (default: stdout; an archive is refused on a terminal).")
@click.option("--format", "form", type=click.Choice(FORMATS), default="tar.gz", show_default=True,
              help="tar.gz: the files with a manifest, for mem import; agents-md / gemini-md: the memories "
                   "as one Markdown block for AGENTS.md (Codex) or GEMINI.md (Gemini CLI).")
@click.option("--logs", is_flag=True, help="Include the daily logs (logs/).")
@click.option("--team", is_flag=True, help="Include team memory (team/).")
@memory_dir_options
def export_cmd(output: str | None, form: str, logs: bool, team: bool, where: dict) -> None:
    """Write the memory directory as one archive: topic files, MEMORY.md and a manifest.

    The manifest (mem-manifest.json) lists each file's sha256, size and
    mtime and the layout it was written in (claude or qwen); mem import
    checks all of it. The archive is reproducible: the same files give the
    same bytes.

    \b
    Example:
      mem export -o memory.tar.gz
      mem export --format agents-md >> AGENTS.md
      mem export --project ~/src/app | ssh laptop 'cd src/app && mem import -'
    """
    from mem.clients import of_layout
    from mem.core import portable
    from mem.core.memdir.store import MemoryDir

    res = resolve_dir(where, reading=True)
    if form != "tar.gz":
        if logs:
            raise UsageError("--logs goes with the tar.gz format only")
        text = portable.render_markdown(MemoryDir(res.memory_dir), form, team=team)
        if output and output != "-":
            from mem.core.memdir.files import atomic_write

            atomic_write(output, text.encode("utf-8"))
        else:
            render.out(text, nl=False)
        return
    layout = of_layout(res.layout).LAYOUT
    if not output or output == "-":
        if sys.stdout.isatty():
            raise UsageError("refusing to write an archive to a terminal: give -o FILE or redirect stdout")
        manifest = portable.export_archive(MemoryDir(res.memory_dir), sys.stdout.buffer, layout=layout, logs=logs, team=team)
        sys.stdout.buffer.flush()
    else:
        manifest = portable.export_archive(MemoryDir(res.memory_dir), output, layout=layout, logs=logs, team=team)
    render.info(f"exported {plural(len(manifest['files']), 'file')} from {res.memory_dir}"
                + (f" to {output}" if output and output != "-" else ""))
