"""The state of one memory directory at a glance: what is in it, what ran, what is due, what is wrong.

Example: collect(resolve(project="/home/u/repo")).as_dict()["dream"]["due"]

Read-only and quick: no model, no SDK import, nothing written (the state
directory is not even created). Transcripts are only stat'ed, never read.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

from mem.core.memdir.frontmatter import MEMORY_TYPES
from mem.core.memdir.layout import INDEX_NAME, LOGS_PREFIX, TEAM_PREFIX
from mem.core.memdir.store import MemoryDir

RECENT_DAYS = 7
NOTES_LIMIT = 5
SESSIONS_LIMIT = 5
SESSION_MEMORY = os.path.join("session-memory", "summary.md")


@dataclass
class Problem:
    source: str  # "scan" (a topic file), "index" (MEMORY.md) or "lint" (a poisoned memory)
    code: str
    message: str
    path: str | None = None  # relative to the memory directory
    line: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        where = self.path or INDEX_NAME
        if self.line:
            where += f":{self.line}"
        return f"{where}: {self.code}: {self.message}"


@dataclass
class Status:
    memory_dir: str
    rule: str
    layout: str
    project_root: str
    exists: bool
    memory_on: bool  # mem.clients.memory_on's answer; published as auto_memory_enabled / auto_memory_reason
    memory_on_reason: str
    state_dir: str
    memories: dict
    index: dict
    extraction: dict
    dream: dict
    operations: list[dict]  # the newest operations of the history
    snapshots: list[dict]  # the same, in the shape `mem undo` snapshots had: id, command, created, files
    session_notes: dict
    last_event: dict | None
    #: tokens of the index and instructions a session started now is given (an estimate; `mem cost` for more)
    context_tokens: int | None = None
    #: the backend the nightly dream (mem cron) will use: mem.core.cron.nightly_backend
    nightly_backend: dict | None = None
    problems: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        names = {"memory_on": "auto_memory_enabled", "memory_on_reason": "auto_memory_reason"}
        data = {names.get(k, k): v for k, v in asdict(self).items() if k != "problems"}
        data["problems"] = [p.as_dict() for p in self.problems]
        return data


def iso(seconds: float | None) -> str | None:
    if not seconds:
        return None
    from mem.core.memdir.manifest import iso_utc_ms

    return iso_utc_ms(int(seconds * 1000))


def collect(res, *, now: float | None = None, min_hours: float | None = None, min_sessions: int | None = None,
            recent_days: float = RECENT_DAYS, env=None) -> Status:
    """Everything ``mem status`` shows for a Resolution (``mem.clients.resolve``)."""
    from mem.clients import memory_on
    from mem.core.jobs import consolidation
    from mem.core.memdir.state import state_dir

    now = time.time() if now is None else now
    root = res.memory_dir
    memory = MemoryDir(root)  # the one the parts below ask
    on, why = memory_on(res, env)
    exists = os.path.isdir(root)
    sdir = state_dir(memory, env, create=False)
    headers = _headers(memory) if exists else []
    raw_index = _read(os.path.join(root, INDEX_NAME)) if exists else None
    status = Status(
        memory_dir=root,
        rule=res.rule,
        layout=res.layout,
        project_root=res.project_root,
        exists=exists,
        memory_on=on,
        memory_on_reason=why,
        state_dir=sdir,
        memories=_memories(headers),
        index=_index(memory, raw_index, headers),
        extraction=_extraction(sdir, res.transcripts_dir, now, recent_days),
        dream=_dream(memory, res.transcripts_dir, now,
                     consolidation.DEFAULT_MIN_HOURS if min_hours is None else min_hours,
                     consolidation.DEFAULT_MIN_SESSIONS if min_sessions is None else min_sessions),
        operations=(ops := _operations(memory, sdir)),
        snapshots=[{"id": op["id"], "command": op["command"], "created": op["time"], "files": len(op["changes"])}
                   for op in ops],
        session_notes=_session_notes(res.project_root, now, recent_days, env),
        last_event=_last_event(memory, env),
        nightly_backend=_nightly_backend(env),
    )
    if exists:
        status.problems = _problems(memory, raw_index, headers)
        status.context_tokens = _context_tokens(memory)
    return status


def _nightly_backend(env) -> dict | None:
    from mem.core import cron
    from mem.core.errors import MemError

    try:
        return cron.nightly_backend(env, via=cron.scheduled_via(env))
    except MemError:  # a settings file mem refuses (`mem model` says why): status still answers
        return None


def _context_tokens(memory: MemoryDir) -> int | None:
    """The session-start context as `mem prompt` renders it, in estimated tokens."""
    from mem.core import prompt
    from mem.core.jobs.budget import text_tokens

    try:
        return text_tokens(prompt.build(memory, "full").text)
    except OSError:
        return None


# --- parts ----------------------------------------------------------------------------------------


def _read(path: str) -> str | None:
    from mem.core.memdir.files import read_text

    try:
        return read_text(path, errors="replace", newline="")
    except OSError:
        return None


def _headers(memory: MemoryDir):
    from mem.core.memdir import manifest

    return manifest.scan(memory.spelled, limit=None)


def _memories(headers) -> dict:
    topics = [h for h in headers if not h.relpath.startswith(LOGS_PREFIX)]
    logs = sorted(h.relpath for h in headers if h.relpath.startswith(LOGS_PREFIX))
    by_type = {t: 0 for t in MEMORY_TYPES}
    by_type["untyped"] = 0
    for h in topics:
        by_type[h.type if h.type in by_type else "untyped"] += 1
    newest = max((h.mtime_ms for h in topics), default=0)
    latest_log = os.path.splitext(os.path.basename(logs[-1]))[0] if logs else None
    return {
        "total": len(topics),
        "by_type": by_type,
        "team": sum(1 for h in topics if h.relpath.startswith(TEAM_PREFIX)),
        "daily_logs": len(logs),
        "latest_log": latest_log,
        "newest": iso(newest / 1000) if newest else None,
    }


def _index(memory: MemoryDir, raw: str | None, headers) -> dict:
    from mem.core.memdir import index as idx

    data = {
        "path": os.path.join(memory.spelled, idx.INDEX_NAME),
        "exists": raw is not None,
        "lines": 0,
        "size_utf16": 0,
        "max_lines": idx.MAX_ENTRYPOINT_LINES,
        "max_size_utf16": idx.MAX_ENTRYPOINT_BYTES,
        "truncated": False,
        "pointers": 0,
    }
    if raw is None:
        return data
    t = idx.render_as_injected(raw)
    data.update(
        lines=t.line_count if idx.strip_frontmatter(raw).strip() else 0,
        size_utf16=t.byte_count,
        truncated=t.truncated,
        pointers=sum(1 for p in idx.parse_pointers(raw) if p.relpath),
    )
    return data


def _extraction(sdir: str, transcripts_dir: str | None, now: float, recent_days: float) -> dict:
    """The extract cursors (``<state>/extract/<session>.json``) and recent sessions they do not cover."""
    import json

    cursors = []
    try:
        names = sorted(n for n in os.listdir(os.path.join(sdir, "extract")) if n.endswith(".json"))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(sdir, "extract", name)
        try:
            st = os.stat(path)
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        sid = data.get("session") if isinstance(data.get("session"), str) else name[: -len(".json")]
        updated = _epoch(data.get("updated_at")) or st.st_mtime
        transcript = data.get("transcript") if isinstance(data.get("transcript"), str) else None
        if transcript is None and transcripts_dir:
            transcript = os.path.join(transcripts_dir, sid + ".jsonl")
        t_mtime = _mtime(transcript) if transcript else None
        cursors.append({
            "session_id": sid,
            "last_uuid": data.get("last_uuid") if isinstance(data.get("last_uuid"), str) else None,
            "updated_at": iso(updated),
            "transcript": transcript,
            "behind": bool(t_mtime and t_mtime > max(updated, st.st_mtime) + 1),
            "_updated": updated,
        })
    cursors.sort(key=lambda c: c["_updated"], reverse=True)
    covered = {c["session_id"]: c for c in cursors}
    pending = []
    for sid, mtime in _recent_transcripts(transcripts_dir, now - recent_days * 86400):
        c = covered.get(sid)
        if c is None or c["behind"]:
            pending.append({"session_id": sid, "modified": iso(mtime), "cursor": c is not None})
    last = cursors[0] if cursors else None
    for c in cursors:
        del c["_updated"]
    try:
        queued = sum(1 for n in os.listdir(os.path.join(sdir, "extract", "pending")) if n.endswith(".json"))
    except OSError:
        queued = 0
    holder = _extract_holder(sdir)
    return {
        "last": last["updated_at"] if last else None,
        "last_session": last["session_id"] if last else None,
        "cursors": len(cursors),
        "sessions": cursors[:SESSIONS_LIMIT],
        "pending": pending,
        "recent_days": recent_days,
        "queued": queued,
        "running": holder is not None,
        "running_pid": holder,
    }


def _extract_holder(sdir: str) -> int | None:
    """The PID of a running extraction: ``<state>/extract.lock`` names it while held (emptied on release)."""
    import json

    from mem.core.memdir.files import pid_running

    try:
        with open(os.path.join(sdir, "extract.lock"), encoding="utf-8") as fh:
            data = json.loads(fh.read() or "null")
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid_running(pid) else None


def _epoch(value) -> float | None:
    """An ``updated_at`` as seconds: ISO 8601 text, or a number of seconds or milliseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value / 1000 if value > 1e11 else float(value)
    if isinstance(value, str):
        from datetime import datetime, timezone

        text = value.strip().replace("Z", "+00:00")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    return None


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _recent_transcripts(transcripts_dir: str | None, since: float) -> list[tuple[str, float]]:
    """(session id, mtime) of the session transcripts modified since ``since``, newest first."""
    from mem.core.jobs.consolidation import session_transcripts

    return [(sid, ms / 1000) for sid, ms in session_transcripts(transcripts_dir) if ms / 1000 >= since]


def _dream(memory: MemoryDir, transcripts_dir: str | None, now: float, min_hours: float, min_sessions: int) -> dict:
    from mem.core.jobs import consolidation

    gate = consolidation.check_gate(memory, transcripts_dir, min_hours=min_hours, min_sessions=min_sessions, now=now)
    pid, _ = consolidation.holder(memory)
    return {
        "last": iso(gate.last_consolidated_ms / 1000) if gate.last_consolidated_ms else None,
        "hours_since": None if gate.hours_since is None else round(gate.hours_since, 2),
        "due": gate.open,
        "reason": gate.reason,
        "sessions_since": len(gate.sessions),
        "min_hours": min_hours,
        "min_sessions": min_sessions,
        "running": gate.held,
        "holder_pid": pid if gate.held else None,
    }


def _operations(memory: MemoryDir, sdir: str, limit: int = 5) -> list[dict]:
    """The newest operations recorded (none without a history; status never starts one)."""
    from mem.core.memdir.history import History

    history = History(sdir, memory.spelled)  # the state dir as ``env`` places it
    if not os.path.isdir(history.git_dir) or not history.available():
        return []
    return [op.as_dict() for op in history.operations(limit=limit)]


def _session_notes(project_root: str, now: float, recent_days: float, env) -> dict:
    """Claude Code's session notes (``<project dir>/<session>/session-memory/summary.md``) touched lately."""
    from mem.clients.claude import transcripts_dir

    project_dir = transcripts_dir(project_root, env)
    since = now - recent_days * 86400
    found = []
    try:
        entries = list(os.scandir(project_dir))
    except OSError:
        entries = []
    for e in entries:
        try:
            if not e.is_dir():
                continue
            st = os.stat(os.path.join(e.path, SESSION_MEMORY))
        except OSError:
            continue
        if st.st_mtime >= since:
            found.append((st.st_mtime, e.name, st.st_size))
    found.sort(reverse=True)
    return {
        "dir": project_dir,
        "recent": len(found),
        "recent_days": recent_days,
        "sessions": [
            {"session_id": sid, "path": os.path.join(project_dir, sid, SESSION_MEMORY), "modified": iso(m), "size": size}
            for m, sid, size in found[:NOTES_LIMIT]
        ],
    }


def _last_event(memory: MemoryDir, env) -> dict | None:
    from mem.core.memdir import events

    got = events.read_events(memory, limit=1, env=env)
    return got[-1] if got else None


def _problems(memory: MemoryDir, raw_index: str | None, headers) -> list[Problem]:
    from mem.core.memdir import index as idx
    from mem.core.memdir.problems import NOT_INDEXED

    root = memory.spelled
    problems: list[Problem] = []
    idx.check_headers(memory, headers)
    for h in sorted(headers, key=lambda h: h.relpath):
        for w in h.warnings:
            # The index lint below reports the top-level index's missing pointers once.
            if w.code == NOT_INDEXED and not h.relpath.startswith(TEAM_PREFIX):
                continue
            problems.append(Problem("scan", w.code, w.message, h.relpath))
    for p in idx.lint(raw_index, root, headers):
        problems.append(Problem("index", p.code, p.message, p.relpath if p.line is None else idx.INDEX_NAME, p.line))
    problems += _poisoned(headers)
    return problems


def _poisoned(headers) -> list[Problem]:
    """Memories ``mem lint`` flags as poisoned (permission grants, rule bypasses...), one problem each."""
    from mem.core.guards.poison import scan_text
    from mem.core.memdir.files import read_text

    out = []
    for h in sorted(headers, key=lambda h: h.relpath):
        try:
            report = scan_text(read_text(h.path, errors="replace"))
        except OSError:
            continue
        if not report.flagged:
            continue
        worst = max(report.findings, key=lambda f: f.weight)
        more = len(report.findings) - 1
        extra = f" and {more} more finding{'s' * (more != 1)}" if more else ""
        out.append(Problem("lint", worst.category, f"{worst.message}: \u201c{worst.quote}\u201d{extra} "
                           f"(score {report.score:g}; mem lint explains)", h.relpath, worst.line))
    return out
