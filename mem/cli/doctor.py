"""mem doctor: check what a user would otherwise debug by hand, one line per check with its fix."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir


@click.command("doctor", short_help="Check directories, hooks, cron, key, man pages and completions.")
@memory_dir_options
@format_options
def doctor_cmd(where: dict, fmt: str) -> int:
    """Check what you would otherwise debug by hand, one line per check with its fix.

    The memory directory and its parents, the state directory, the history
    (git on PATH, the store readable, a damaged store set aside), the hooks of Claude Code, qwen-code, Codex CLI and Gemini CLI
    (mem hooks status: installed, runnable, last fired; for the last two a
    note, not a failure, while none is installed), the nightly dream (mem
    cron status: scheduled, a daemon to fire it, the last run), whether a
    model key is set (never its value), whether man finds mem's man pages,
    and whether bash-completion and an interactive zsh find mem's completion
    (mem complete --install puts it where they look). Exit 1 when a check
    fails; notes (no key, no cron job, a client never run here, a shell you
    do not use) do not fail.

    \b
    Example:
      mem doctor
      mem doctor --json | jq -r '.checks[] | select(.state=="fail") | .fix'
    """
    from mem.core import doctor
    from mem.core.memdir.store import MemoryDir

    resolution = resolve_dir(where)
    checks = doctor.run(MemoryDir(resolution.memory_dir), where.get("project"))
    failed = [c for c in checks if c.state == doctor.FAIL]
    if fmt != "text":
        render.out_record({"checks": [c.as_dict() for c in checks], "ok": not failed}, fmt)
        return 1 if failed else 0
    for c in checks:
        fix = f"  -> {c.fix}" if c.fix and c.state != doctor.OK else ""
        render.out(f"{c.state:4}  {c.name}: {c.detail}{fix}")
    return 1 if failed else 0
