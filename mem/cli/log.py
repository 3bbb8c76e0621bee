"""mem log: append to today's daily log."""

from __future__ import annotations

import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, warn_if_history_off


@click.command("log", short_help="Append a timestamped bullet to today's log under logs/.")
@click.argument("text", nargs=-1, required=True)
@memory_dir_options
@format_options
def log_cmd(text: tuple[str, ...], where: dict, fmt: str) -> None:
    """Append a timestamped bullet to today's log (logs/YYYY/MM/YYYY-MM-DD.md).

    TEXT is the words given, or - to read it from stdin. The log is
    append-only; a nightly `mem dream` distils it into topic files.

    \b
    Example:
      mem log "user prefers squash merges on this repo"
      git log -1 --format=%s | mem log -
    """
    from mem.core.memdir import dailylog

    from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

    body = read_stream_text(sys.stdin) if text == ("-",) else " ".join(text)
    memory = memory_of(where)
    entry = dailylog.append(memory, body)
    warn_if_history_off(memory)
    if fmt != "text":
        render.out_record(entry.as_dict(), fmt)
    else:
        render.out(entry.path)
