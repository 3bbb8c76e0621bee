"""Daily logs: ``logs/YYYY/MM/YYYY-MM-DD.md`` in the memory directory, append-only.

The path uses the local date, as Claude Code's assistant mode does. Each entry
is one timestamped bullet; continuation lines are indented under it. Appends
are serialised by a lock in the state directory and land through the one
write path (so a secret is refused and a reader never sees half an entry).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from mem.core.errors import UsageError
from mem.core.memdir.files import read_bytes
from mem.core.memdir.layout import daily_log


@dataclass(frozen=True)
class LogEntry:
    path: str
    relpath: str
    entry: str
    created: bool
    operation: str | None = None  # the history's id for the append

    def as_dict(self) -> dict:
        return {"path": self.path, "relpath": self.relpath, "entry": self.entry, "created": self.created,
                "operation": self.operation}


def format_entry(text: str, now: float | None = None) -> str:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if not lines or not any(lines):
        raise UsageError("nothing to log: the text is empty")
    stamp = time.strftime("%H:%M", time.localtime(now))
    head = f"- {stamp} {lines[0].strip()}"
    rest = [f"  {line}" if line else "" for line in lines[1:]]
    return "\n".join([head, *rest]) + "\n"


def append(store, text: str, *, now: float | None = None) -> LogEntry:
    """Append one entry to today's log of ``store`` (a MemoryDir) as one operation of its history,
    and one event of its audit log."""
    from mem.core.memdir.store import file_lock

    started = time.monotonic()
    now = time.time() if now is None else now
    rel = daily_log(now)
    entry = format_entry(text, now)
    with file_lock(store.state.log_lock):
        path = os.path.join(store.root, rel)
        try:
            old = read_bytes(path).decode("utf-8", "replace")  # a FIFO here is refused, not waited on
        except FileNotFoundError:
            old = None
        base = old or ""
        if base and not base.endswith("\n"):
            base += "\n"
        # Only the new entry is judged for secrets; what is already there stays as it was.
        from mem.core.errors import SecretError
        from mem.core.guards.secrets import first_secret

        found = first_secret(entry)
        if found is not None:
            raise SecretError(rel, found.rule_id, found.label)
        with store.operation("log", event=False):
            result = store.write(rel, base + entry, scan=False)
    op = store.last_operation
    logged = LogEntry(result.path, rel, entry, created=old is None, operation=op.id if op else None)
    from mem.core.memdir import events

    events.record(store, "log", created=[rel] if logged.created else [], updated=[] if logged.created else [rel],
                  duration=time.monotonic() - started, detail={"operation": logged.operation})
    return logged
