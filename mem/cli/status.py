"""mem status: the memory directory at a glance, and the log of what changed it."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.core.errors import UsageError
from mem.core.wording import plural

LABEL = 14  # width of the label column


@click.command("status", short_help="Show memories by type, index size, what is due, and problems.")
@click.option("--events", "show_events", is_flag=True,
              help="Show the event log instead: one line per command that changed the memory directory.")
@click.option("-n", "--limit", type=click.IntRange(min=0), default=None, metavar="N",
              help="With --events: the last N events (default 20; 0 for all).")
@click.option("--all", "all_", is_flag=True, help="With --events: every event (same as -n 0).")
@click.option("--min-hours", type=float, default=24.0, show_default=True, metavar="H",
              help="The dream time gate to judge against (as given to mem dream).")
@click.option("--min-sessions", type=int, default=5, show_default=True, metavar="N",
              help="The dream session gate to judge against (as given to mem dream).")
@memory_dir_options
@format_options
def status_cmd(show_events: bool, limit: int | None, all_: bool, min_hours: float, min_sessions: int, where: dict, fmt: str) -> None:
    """Show memories by type, index size, last extraction and dream, what is due, and problems.

    Read-only and quick: no model is called and transcripts are only stat'ed.
    With --events, the audit trail of the commands that changed this memory
    directory (extract, dream, remember, forget, log, index --rebuild, undo,
    team pull), oldest first.

    \b
    Example:
      mem status
      mem status --json | jq .dream.due
      mem status --events -n 5
    """
    if (limit is not None or all_) and not show_events:
        raise UsageError("-n/--limit and --all go with --events")
    if all_ and limit is not None:
        raise UsageError("--all and -n/--limit: give one")
    res = resolve_dir(where, reading=True)
    if show_events:
        _events(res.memory_dir, 0 if all_ else 20 if limit is None else limit, fmt)
        return
    from mem.core import status as st

    report = st.collect(res, min_hours=min_hours, min_sessions=min_sessions)
    if fmt != "text":
        render.out_record(report.as_dict(), fmt)
    else:
        render.out("\n".join(text_lines(report)))


def _events(memory_dir: str, limit: int, fmt: str) -> None:
    from mem.core.memdir import events
    from mem.core.memdir.store import MemoryDir

    rows = events.read_events(MemoryDir(memory_dir), limit=limit + 1 if limit else None)
    if limit and len(rows) > limit:
        rows = rows[1:]
        render.info(f"the last {limit} events shown; --all shows every one")
    render.out_rows(rows, fmt, event_line)
    if not rows and fmt == "text":
        render.info(f"no events for {memory_dir} in {events.events_path()}")


def event_line(e: dict) -> str:
    """``time command outcome +created ~updated -deleted``."""
    def n(key: str) -> int:
        v = e.get(key)
        return len(v) if isinstance(v, list) else 0

    return f"{e.get('time', '?')} {e.get('command', '?')} {e.get('outcome', '?')} +{n('created')} ~{n('updated')} -{n('deleted')}"


# --- the human summary ------------------------------------------------------------------------------


def _ago(iso: str | None, now: float | None = None) -> str:
    if not iso:
        return ""
    import time
    from datetime import datetime

    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return ""
    secs = (time.time() if now is None else now) - then
    if secs < 0:
        return "in the future"
    if secs < 90:
        return "just now"
    if secs < 90 * 60:
        return f"{secs / 60:.0f} min ago"
    if secs < 48 * 3600:
        return f"{secs / 3600:.1f} h ago"
    return f"{secs / 86400:.0f} days ago"


def _when(iso: str | None) -> str:
    """An ISO time to the second, with its age: 2026-03-02T10:11:12Z (3.0 h ago)."""
    if not iso:
        return "never"
    short = iso.split(".")[0] + "Z" if "." in iso else iso
    age = _ago(iso)
    return f"{short} ({age})" if age else short


def text_lines(s) -> list[str]:
    lines: list[str] = []

    def row(label: str, text: str) -> None:
        lines.append(f"{label:<{LABEL}}{text}")

    where = f"{s.memory_dir} ({s.rule})"
    row("memory dir", where if s.exists else where + ": does not exist yet")
    if not s.memory_on:
        row("auto memory", f"off: {s.memory_on_reason}")
    m = s.memories
    kinds = ", ".join(f"{n} {t}" for t, n in m["by_type"].items() if n)
    text = f"{m['total']} {'memory' if m['total'] == 1 else 'memories'}"
    if kinds:
        text += f": {kinds}"
    if m["team"]:
        text += f"; {m['team']} in team/"
    if m["daily_logs"]:
        text += f"; {plural(m['daily_logs'], 'daily log')} (latest {m['latest_log']})"
    row("memories", text)
    ix = s.index
    if ix["exists"]:
        text = (f"MEMORY.md: {plural(ix['pointers'], 'pointer')}, {ix['lines']}/{ix['max_lines']} lines, "
                f"{ix['size_utf16']:,}/{ix['max_size_utf16']:,} UTF-16 units")
        if ix["truncated"]:
            text += "; over the limit: agents see only part of it"
        row("index", text)
    else:
        row("index", "no MEMORY.md")
    ex = s.extraction
    text = "never" if not ex["last"] else f"last {_when(ex['last'])}, session {ex['last_session']}"
    if ex["pending"]:
        days = f"{ex['recent_days']:g}"
        text += f"; {plural(len(ex['pending']), 'session')} of the last {days} days not extracted"
    if ex["queued"]:
        text += f"; {ex['queued']} queued"
    row("extraction", text)
    if ex["running"]:
        row("", f"running now (pid {ex['running_pid']})")
    d = s.dream
    text = "last " + _when(d["last"]) if d["last"] else "never dreamed"
    text += f"; {'due' if d['due'] else 'not due'}: {d['reason']}"
    row("dream", text)
    if d["running"]:
        row("", f"running now (pid {d['holder_pid']})")
    nb = s.nightly_backend
    if nb is not None:
        row("", "nightly: " + (f"{nb['backend']}, {nb['model']} ({nb['credentials']})" if nb["backend"]
                               else "no model in the job's environment: mechanical (mem cron status)"))
    if s.operations:
        from mem.cli.history import line

        row("history", f"last {len(s.operations)} operations (`mem history`, `mem undo ID`):")
        for op in s.operations:
            row("", line(op))
    else:
        row("history", "none")
    sn = s.session_notes
    if sn["sessions"]:
        shown = ", ".join(f"{x['session_id']} ({_when(x['modified'])})" for x in sn["sessions"])
        row("session notes", f"{sn['recent']} in the last {sn['recent_days']:g} days: {shown}")
    else:
        row("session notes", f"none in the last {sn['recent_days']:g} days")
    if s.last_event:
        row("last change", event_line(s.last_event))
    if s.context_tokens is not None:
        row("context", f"~{s.context_tokens:,} tokens at session start (index and instructions); "
                       "per prompt: mem cost")
    row("problems", str(len(s.problems)) if s.problems else "none")
    lines += [f"  {p.text()}" for p in s.problems]
    return lines
