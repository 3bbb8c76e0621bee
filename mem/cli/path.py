"""mem path: where the memory directory is, and why."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir


@click.command("path")
@memory_dir_options
@format_options
def path_cmd(where: dict, fmt: str) -> None:
    """Print the memory directory and the rule that chose it.

    \b
    Example:
      cd "$(mem path)" && ls
      mem path --json | jq -r .rule
    """
    res = resolve_dir(where)
    data = res.as_dict()
    data["exists"] = os.path.isdir(res.memory_dir)
    if fmt == "text":
        render.out(res.memory_dir)
        if not res.auto_memory_enabled:
            render.warn(f"auto memory is off here: {res.auto_memory_reason}")
    else:
        render.out_record(data, fmt)
