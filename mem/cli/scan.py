"""mem scan: list the memories (the manifest)."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.core.errors import ExitCode


@click.command("scan")
@click.option("--all", "all_", is_flag=True, help="List every topic file, not only the newest 200.")
@click.option("--check", is_flag=True, help="Report problems (frontmatter, type, description, index, secrets); exit 1 if any.")
@memory_dir_options
@format_options
@click.pass_context
def scan_cmd(ctx: click.Context, all_: bool, check: bool, where: dict, fmt: str) -> None:
    """List topic files newest first, one manifest line each.

    The text output is the manifest exactly as Claude Code's recall selector
    sees it: `- [type] relpath (mtime): description`.

    \b
    Example:
      mem scan | head -5
      mem scan --check || echo "memory needs attention"
    """
    from mem.core import manifest

    root = resolve_dir(where).memory_dir
    if not os.path.isdir(root):
        render.info(f"no memory directory at {root}")
        headers = []
    else:
        headers = manifest.scan(root, limit=None if all_ else manifest.MAX_MEMORY_FILES)
    if check:
        manifest.check(root, headers)
    if fmt != "text":
        render.out_rows((h.as_dict() for h in headers), fmt, None)
    elif check:
        for h in headers:
            for w in h.warnings:
                render.out(f"{h.relpath}: {w.code}: {w.message}")
    else:
        for h in headers:
            render.out(h.manifest_line())
    if check:
        bad = sum(1 for h in headers if h.warnings)
        problems = sum(len(h.warnings) for h in headers)
        if problems:
            render.info(f"{problems} problem{'s' * (problems != 1)} in {bad} of {len(headers)} files")
            ctx.exit(ExitCode.CHECK_FAILED)
        render.info(f"{len(headers)} files, no problems")
