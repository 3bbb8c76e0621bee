"""The audit trail: one JSON line per command that changed a memory directory.

Kept in the state directory (``<state>/events.jsonl``), never in the memory
directory. Appends are single ``write`` calls on an O_APPEND descriptor, so
concurrent writers do not interleave lines. Logging never fails a command.
Past ``MAX_BYTES`` the log becomes ``events.jsonl.1`` (replacing the one
before) and a new one starts, so the trail stays bounded and quick to read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from mem.core.jscompat import now_iso

MAX_BYTES = 8 * 1024 * 1024


def events_path(env: Mapping[str, str] | None = None) -> str:
    from mem.core.memdir.state import events_log

    return events_log(env)


def record(
    memory,
    command: str,
    *,
    created: Iterable[str] = (),
    updated: Iterable[str] = (),
    deleted: Iterable[str] = (),
    strategy: str | None = None,
    tokens: Mapping[str, int] | None = None,
    duration: float | None = None,
    outcome: str = "ok",
    detail: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Append one event about ``memory`` (a MemoryDir); False (and no exception) if the log cannot be written."""
    event = {
        "time": now_iso(),
        "command": command,
        "memory_dir": memory.root,
        "created": sorted(created),
        "updated": sorted(updated),
        "deleted": sorted(deleted),
        "strategy": strategy,
        "tokens": dict(tokens) if tokens else None,
        "duration_s": None if duration is None else round(duration, 3),
        "outcome": outcome,
        "pid": os.getpid(),
    }
    if detail:
        event["detail"] = dict(detail)
    line = (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    try:
        path = events_path(env)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            if os.fstat(fd).st_size > MAX_BYTES:
                _rotate(path, fd)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _rotate(path: str, fd: int) -> None:
    """Move the full log aside, once, however many writers see it full.

    Only the holder of the lock on the live file renames it, and only while
    ``path`` still names that file; writers that opened it before the rename
    append to ``.1``, so no line is lost.
    """
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another writer is rotating it
    if os.stat(path).st_ino == os.fstat(fd).st_ino:
        os.replace(path, path + ".1")


def read_events(memory=None, *, limit: int | None = None,
                env: Mapping[str, str] | None = None) -> list[dict]:
    """Events, oldest first; only those of ``memory`` (a MemoryDir) when given; the last ``limit``.

    Reads the live log and the one rotated before it, newest line first, and
    stops as soon as ``limit`` events are found.
    """
    path = events_path(env)
    want = None if memory is None else os.path.normpath(memory.root)
    newest_first: list[dict] = []
    for name in (path, path + ".1"):
        try:
            with open(name, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        for raw in reversed(data.splitlines()):
            try:
                event = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if want is not None and os.path.normpath(str(event.get("memory_dir", ""))) != want:
                continue
            newest_first.append(event)
            if limit and len(newest_first) >= limit:
                return newest_first[::-1]
    return newest_first[::-1]
