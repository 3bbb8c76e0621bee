"""The dream gates and lock, as Claude Code's autoDream keeps them.

``.consolidate-lock`` in the memory directory: its body is the holder's PID,
its mtime is the time of the last consolidation. A holder is live while the
mtime is under an hour old and the PID runs; a failed run rolls the mtime back.
Sessions are counted from uuid-named transcripts newer than the last
consolidation.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mem.core.memdir.layout import DREAM_LOCK
from mem.core.memdir.files import pid_running, read_text

if TYPE_CHECKING:
    from mem.core.memdir.store import MemoryDir

LOCK_NAME = DREAM_LOCK
HOLDER_STALE_S = 60 * 60
DEFAULT_MIN_HOURS = 24.0
DEFAULT_MIN_SESSIONS = 5
_SESSION_FILE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$", re.I)


def lock_path(memory: MemoryDir) -> str:
    return os.path.join(memory.root, LOCK_NAME)


def last_consolidated_ms(memory: MemoryDir) -> int:
    try:
        return os.stat(lock_path(memory)).st_mtime_ns // 1_000_000
    except OSError:
        return 0


def holder(memory: MemoryDir) -> tuple[int | None, int]:
    """(PID in the lock or None, lock mtime in ms or 0)."""
    path = lock_path(memory)
    try:
        st = os.stat(path)
        body = read_text(path, 64, errors="replace", head=True).strip()  # a FIFO here is refused, not waited on
    except OSError:
        return None, 0
    m = re.match(r"[+-]?\d+", body)  # parseInt semantics: leading digits
    return (int(m.group()) if m else None), st.st_mtime_ns // 1_000_000


def is_held(memory: MemoryDir, now: float | None = None) -> bool:
    pid, mtime_ms = holder(memory)
    now_ms = (time.time() if now is None else now) * 1000
    return bool(mtime_ms) and now_ms - mtime_ms < HOLDER_STALE_S * 1000 and pid_running(pid)


def try_acquire(memory: MemoryDir) -> int | None:
    """Take the lock; the prior mtime in ms (0 if none), or None when a live holder has it."""
    if is_held(memory):
        return None
    prior = last_consolidated_ms(memory)
    os.makedirs(memory.root, exist_ok=True)
    mine = str(os.getpid())
    _write(memory, mine)
    pid, _ = holder(memory)
    if pid != os.getpid():
        return None  # lost a race
    return prior


def _write(store, body: str) -> None:
    from mem.core.memdir.store import atomic_write

    # Always rewrite, even with the same PID: the mtime is the stamp.
    atomic_write(store.resolve(LOCK_NAME), body.encode())


def rollback(memory: MemoryDir, prior_ms: int) -> None:
    """Put the last-consolidated time back after a failed run."""
    path = lock_path(memory)
    if prior_ms == 0:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    _write(memory, "")
    os.utime(path, (prior_ms / 1000, prior_ms / 1000))


def session_transcripts(transcripts_dir: str | None) -> list[tuple[str, int]]:
    """(session id, mtime in ms) of every uuid-named transcript, newest first."""
    if not transcripts_dir:
        return []
    found = []
    try:
        entries = list(os.scandir(transcripts_dir))
    except OSError:
        return []
    for e in entries:
        if not _SESSION_FILE.match(e.name):
            continue
        try:
            if not e.is_file():
                continue
            mtime_ms = e.stat().st_mtime_ns // 1_000_000
        except OSError:
            continue
        found.append((e.name[: -len(".jsonl")], mtime_ms))
    return sorted(found, key=lambda item: item[1], reverse=True)


def sessions_since(transcripts_dir: str | None, since_ms: int, exclude: str | None = None) -> list[str]:
    """Session ids with a transcript touched after ``since_ms``, newest first."""
    return [sid for sid, mtime_ms in session_transcripts(transcripts_dir) if mtime_ms > since_ms and sid != exclude]


@dataclass(frozen=True)
class Gate:
    open: bool
    reason: str
    hours_since: float | None  # None when never consolidated
    sessions: list[str]
    min_hours: float
    min_sessions: int
    last_consolidated_ms: int
    held: bool

    def as_dict(self) -> dict:
        return {
            "open": self.open,
            "reason": self.reason,
            "hours_since_last": None if self.hours_since is None else round(self.hours_since, 2),
            "last_consolidated": None if not self.last_consolidated_ms else _iso(self.last_consolidated_ms),
            "sessions_since": len(self.sessions),
            "session_ids": self.sessions,
            "min_hours": self.min_hours,
            "min_sessions": self.min_sessions,
            "lock_held": self.held,
        }


def _iso(ms: int) -> str:
    from mem.core.jscompat import iso_utc_ms

    return iso_utc_ms(ms)


def check_gate(memory: MemoryDir, transcripts_dir: str | None, *, min_hours: float = DEFAULT_MIN_HOURS,
               min_sessions: int = DEFAULT_MIN_SESSIONS, exclude_session: str | None = None,
               force: bool = False, now: float | None = None) -> Gate:
    now = time.time() if now is None else now
    last = last_consolidated_ms(memory)
    hours = None if not last else (now * 1000 - last) / 3_600_000
    sessions = sessions_since(transcripts_dir, last, exclude_session)
    held = is_held(memory, now)
    common = dict(hours_since=hours, sessions=sessions, min_hours=min_hours, min_sessions=min_sessions,
                  last_consolidated_ms=last, held=held)
    if force:
        return Gate(True, "forced", **common)
    if hours is not None and hours < min_hours:
        return Gate(False, f"last consolidation was {hours:.1f} h ago (gate: {min_hours:g} h)", **common)
    if len(sessions) < min_sessions:
        return Gate(False, f"{len(sessions)} session{'s' * (len(sessions) != 1)} since the last consolidation (gate: {min_sessions})", **common)
    return Gate(True, f"{len(sessions)} sessions since the last consolidation"
                + ("" if hours is None else f", {hours:.1f} h ago"), **common)
