"""Taking changes back: undo one recorded operation, or restore one file as it was.

Example: undo(MemoryDir("/m")) takes back the newest operation mem made there; undo(memory, "a1b2c3")
that one only. Both are operations of their own, so an undo can be undone, by its id: a plain
undo never takes back an undo, so running it again (after a kill, a full disk) finishes the same
undo and then does nothing.

An undo puts back the "before" of each file the operation changed, and only those files. A file
mem keeps line by line (an index, a daily log) is merged instead: the lines the operation added
are removed and the lines it removed put back, every other line kept, so an agent's own pointer
written since survives. It refuses (exit 4) when a topic file, or one of the lines the operation
changed, has changed since (by mem or anything else), naming it, unless forced; what is overwritten
then is already in the history, since outside changes are recorded first. Undo and restore plan and
write under the index lock, so a writer cannot slip a pointer in between. Changes made outside mem are never undone by mem: ``restore`` takes a file back to any
recorded version instead, which the user asks for by name.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import NamedTuple

from mem.core.errors import MemError, NotFoundError, RefusedError, UsageError
from mem.core.memdir.files import read_bytes
from mem.core.memdir.history import OUTSIDE, REDACTED, SYMLINK, WITHHELD, Change, Operation, blob_oid


class Step(NamedTuple):
    """One file put back: from what it holds now to what it held."""

    path: str
    now: str | None  # blob oid on disk now (None: absent)
    now_mode: int | None
    target: str | None  # blob oid to put back (None: remove the file)
    target_mode: int | None
    mtime_ns: int | None = None  # the modification time the target version had, when recorded
    data: bytes | None = None  # the content to write when it is not in the history (a merged index)
    merged: bool = False  # the target is the file as it is now with the operation's own lines taken back


class RevertResult(NamedTuple):
    taken_back: Operation | None  # the operation undone (None for a restore)
    steps: list[Step]
    conflicts: list[str]  # files changed since, each "path: why"
    diff: str
    operation: Operation | None  # the operation this recorded (None for a dry run or no change)
    newest_undo: Operation | None = None  # a plain undo found this finished undo newest, so took nothing back

    def as_dict(self) -> dict:
        return {
            "undoes": self.taken_back.id if self.taken_back else None,
            "files": [s.path for s in self.steps],
            "conflicts": self.conflicts,
            "operation": self.operation.as_dict() if self.operation else None,
            "written": self.operation is not None,
            "newest_undo": None if self.newest_undo is None else {
                "id": self.newest_undo.id, "time": self.newest_undo.time, "undoes": self.newest_undo.undoes},
        }


def _on_disk(memory, relpath: str) -> tuple[str | None, int | None]:
    path = os.path.join(memory.root, relpath)
    try:
        if os.path.islink(path):
            return blob_oid(os.fsencode(os.readlink(path))), SYMLINK
        data = read_bytes(path)
        return blob_oid(data), 0o100755 if os.stat(path).st_mode & 0o100 else 0o100644
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None, None


def newest_undoable(ops: Sequence[Operation]) -> Operation:
    """The newest operation mem made (changes made outside mem are not mem's to take back)."""
    for op in ops:
        if op.command != OUTSIDE:
            return op
    raise NotFoundError("nothing to undo: no operation of mem's is recorded")


def plan_undo(memory, op: Operation, history=None, *, finishing: bool = False) -> tuple[list[Step], list[str]]:
    """The steps that take ``op`` back in ``memory`` (a MemoryDir), and the files that changed since it
    (the conflicts).

    With ``history``, a line-kept file (an index, a daily log) that changed since is merged.
    ``finishing``: an undo of ``op`` was cut short, so a line of its own already gone was taken back by it.
    """
    steps, conflicts = [], []
    for c in op.changes:
        if c.before in (WITHHELD, REDACTED):
            conflicts.append(f"{c.path}: its earlier version is not kept ({c.before})")
            continue
        now, now_mode = _on_disk(memory, c.path)
        mtime = op.meta.get("mtimes", {}).get(c.path)
        if now == c.before and now != c.after:  # already put back (an undo cut short and retried): nothing to do
            steps.append(Step(c.path, now, now_mode, c.before, c.before_mode, mtime))
            continue
        if now != c.after and history is not None and now_mode != SYMLINK and _line_kept(c.path) \
                and c.after not in (WITHHELD, REDACTED):
            merged, clashes = _merge_back(history, memory, c, now, finishing=finishing)
            if clashes:
                conflicts += [f"{c.path}: {why} since {op.id[:12]}" for why in clashes]
            else:
                oid = None if merged is None else blob_oid(merged)
                steps.append(Step(c.path, now, now_mode, oid, now_mode if c.before_mode is None else c.before_mode,
                                  mtime, merged, True))
                continue
        elif now != c.after:
            conflicts.append(f"{c.path}: {'deleted' if now is None else 'changed'} since {op.id[:12]}")
        steps.append(Step(c.path, now, now_mode, c.before, c.before_mode, mtime))
    return steps, conflicts


def _line_kept(relpath: str) -> bool:
    """Whether mem keeps ``relpath`` as a list of lines (an index of pointers, an append-only daily log)."""
    from mem.core.memdir.layout import is_index, is_log

    return is_index(relpath) or is_log(relpath)


def _merge_back(history, memory, c: Change, now: str | None, *,
                finishing: bool = False) -> tuple[bytes | None, list[str]]:
    """The file as it is now with ``c`` taken back line by line: (content, or None to remove it; clashes).

    The lines ``c`` added are removed, the lines it removed put back after the line they
    followed; every other line stays. A line ``c`` added that is gone or changed since is
    a clash (named), as is content that is not text.
    """
    import difflib

    from mem.core.memdir.files import read_bytes

    try:
        current = b"" if now is None else read_bytes(os.path.join(memory.root, c.path))
    except (OSError, MemError):
        return None, ["unreadable"]
    after = b"" if c.after is None else history.read_blob(c.after)
    before = b"" if c.before is None else history.read_blob(c.before)
    texts = []
    for data in (before, after, current):
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            return None, ["changed (not text, so not merged)"]
    old, new, cur = (t.split("\n") for t in texts)
    old, new, cur = (lines[:-1] if lines and lines[-1] == "" else lines for lines in (old, new, cur))
    clashes: list[str] = []
    result = list(cur)
    added, put_back = [], []  # lines to remove; (line, the line it followed in ``old`` or None) to put back
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            added += new[j1:j2]
        if tag in ("replace", "delete"):
            put_back += [(old[k], old[k - 1] if k else None) for k in range(i1, i2)]
    for line in added:
        if line in result:
            result.remove(line)
        elif line.strip() and not finishing:
            clashes.append(f"line {line.strip()[:60]!r} changed")
    for line, anchor in put_back:
        if line.strip() and line in result:
            continue  # put back by someone else already
        if anchor is None:
            result.insert(0, line)
        elif anchor in result:
            result.insert(len(result) - result[::-1].index(anchor), line)
        else:
            result.append(line)
    if clashes:
        return None, clashes
    if (c.before is None or now is None) and not any(line.strip() for line in result):
        return None, []  # nothing of anyone's left: no file (as before the operation, or as now)
    ends = texts[2].endswith("\n") or (not texts[2] and texts[0].endswith("\n"))
    return ("\n".join(result) + ("\n" if ends and result else "")).encode("utf-8"), []


def _apply(memory, steps: list[Step]) -> None:
    history = memory.history
    for s in steps:
        if s.now == s.target:
            continue
        if s.target is None:
            if s.now is not None:
                memory.delete(s.path, allow_index=True)
            continue
        if s.target_mode == SYMLINK:
            raise RefusedError(f"{s.path}: a symbolic link is not put back by mem; recreate it by hand")
        # The user's own earlier bytes: contained and atomic, but not judged for secrets again.
        data = s.data if s.data is not None else history.read_blob(s.target)
        written = memory.write(s.path, data, scan=False, restamp=False)
        if s.mtime_ns is not None:  # recall orders memories by it: a restored memory keeps its age
            os.utime(written.path, ns=(s.mtime_ns, s.mtime_ns))


def _diff(memory, steps: list[Step]) -> str:
    """The steps as a unified diff; a version holding a secret is named, never shown (nor looked for in the history)."""
    from mem.core.guards.secrets import first_secret

    def shown(oid: str | None, data: bytes | None) -> str | None:
        if data is not None and first_secret(data.decode("utf-8", "replace")) is not None:
            return WITHHELD
        if data is not None:
            extra[oid] = data
        return oid

    extra: dict[str, bytes] = {}
    changes = []
    for s in steps:
        if s.now == s.target:
            continue
        # what the file holds now is not in the history when it holds a secret: read it from the disk
        now = shown(s.now, _current(memory, s.path, s.now))
        target = shown(s.target, s.data)
        changes.append(Change(s.path, now, target, s.now_mode, s.target_mode))
    return memory.history.diff(Operation("", "", "", [], changes, False, None, {}), extra=extra)


def _current(memory, relpath: str, oid: str | None) -> bytes | None:
    """The bytes ``relpath`` holds when they are still version ``oid`` (a link: its target), else None."""
    if oid is None:
        return None
    path = os.path.join(memory.root, relpath)
    try:
        data = os.fsencode(os.readlink(path)) if os.path.islink(path) else read_bytes(path)
    except (OSError, MemError):
        return None
    return data if blob_oid(data) == oid else None


def undo(memory, ref: str | None = None, *, force: bool = False, dry_run: bool = False) -> RevertResult:
    """Take back operation ``ref`` (default: the newest of mem's), as an operation of its own."""
    history = memory.history
    if not history.available():
        from mem.core.memdir.history import HistoryUnavailable

        raise HistoryUnavailable("undo needs git on PATH: mem's history is kept in git, so without it no change "
                                 "can be taken back (nothing was changed)")
    # Under the index lock: a writer adding its pointer now waits, so the MEMORY.md planned is the one written.
    with memory.index_lock():
        history.sync()  # what changed outside mem is recorded before anything is put back
        ops = history.operations()
        op = history.find(ref) if ref else _retried(history, newest_undoable(ops))
        if op is None:  # the newest is a finished undo: a plain undo never takes one back (a retry converges)
            return RevertResult(None, [], [], "", None, newest_undoable(ops))
        if op.command == OUTSIDE:
            raise RefusedError(f"operation {op.id[:12]} was made outside mem; mem undoes only its own changes "
                               f"(`mem restore FILE --at {op.id[:12]}~` takes a file back by hand)")
        steps, conflicts = plan_undo(memory, op, history, finishing=_cut_short(ops, op))
        if conflicts and not force:
            raise RefusedError(f"cannot undo {op.id[:12]} ({op.command}): " + "; ".join(conflicts)
                               + " (--force puts the earlier versions back all the same)")
        diff = _diff(memory, steps)
        if dry_run:
            return RevertResult(op, steps, conflicts, diff, None)
        started = time.monotonic()
        # the files it is to change: a record that names fewer was cut short (its take-back failed too)
        plan = sorted({s.path for s in steps if s.now != s.target})
        _all_or_nothing(memory, "undo", [op.id[:12]], {"undoes": op.id, "plan": plan}, steps)
    _event(memory, "undo", started, {"undoes": op.id, "forced": bool(conflicts)})
    return RevertResult(op, steps, conflicts, diff, memory.last_operation)


def why_not_undoable(memory, op: Operation | None) -> str | None:
    """Why ``mem undo`` of ``op`` (just recorded) would not bring its files back, or None when it would.

    A command says "mem undo brings it back" only when this is None: with no git on PATH
    nothing is recorded (history is off), and a version withheld for a secret is not kept.
    """
    if op is None:
        return ("history is off (git is not on PATH), so nothing was recorded"
                if not memory.history.available() else "nothing was recorded in the history")
    _steps, conflicts = plan_undo(memory, op, memory.history)
    return "; ".join(conflicts) or None


def _retried(history, op: Operation) -> Operation | None:
    """What a plain ``mem undo`` takes back, ``op`` being the newest of mem's operations; None for nothing.

    A plain undo never takes back an undo, so running it again converges. An undo killed half way
    (recovered, interrupted), one that failed and was taken back (a full disk), or one that failed
    and whose take-back failed too (its record names fewer files than it planned): the retry
    finishes the same undo. Any other undo (finished, a redo made with its id, the take-back of a
    failed job) is newest already: nothing (``mem undo ID`` names what to take back).
    """
    if op.command != "undo" or not op.undoes:
        return op
    if op.interrupted or set(op.meta.get("plan", ())) - {c.path for c in op.changes}:
        return history.find(op.undoes)
    if op.meta.get("reason") == _FAILED:
        partial = history.find(op.undoes)
        if partial.command == "undo" and partial.undoes:
            return history.find(partial.undoes)
    return None


_FAILED = "the job failed"


def _cut_short(ops: Sequence[Operation], op: Operation) -> bool:
    """Whether ``op`` is undone, or was being undone when that undo was killed (this undo finishes it).

    Then a line of its own already gone was taken back by that undo, not changed by someone else.
    An undo that was itself undone since (a redo), or taken back after it failed, does not count.
    """
    for n, o in enumerate(ops):  # newest first
        if o.undoes == op.id and o.command == "undo":
            return not any(later.undoes == o.id for later in ops[:n])
    return False


def _all_or_nothing(memory, command: str, args: list[str], meta: dict, steps: list[Step]) -> None:
    """Apply ``steps`` as one operation; if one fails (a full disk), take back those already applied.

    Otherwise a retried ``mem undo`` would find the half-done undo newest, and go the other way.
    """
    try:
        with memory.operation(command, args, meta=meta, event=False):
            _apply(memory, steps)
    except BaseException:
        if memory.last_operation is not None:
            _take_back(memory, memory.last_operation)  # the caller holds the index lock
        raise


def _event(memory, command: str, started: float, detail: dict) -> None:
    """The audit trail's line for an undo or a restore, naming the operation it recorded."""
    from mem.core.memdir import events
    from mem.core.memdir.store import record_operation

    op = memory.last_operation
    if op is None:  # nothing was recorded (no git): the line still says what was asked
        events.record(memory, command, duration=time.monotonic() - started, detail={**detail, "operation": None})
        return
    record_operation(memory, op, time.monotonic() - started, detail)


def take_back(memory, op: Operation) -> Operation | None:
    """Undo ``op`` after its job failed: every file that still holds what it wrote goes back; the rest stay.

    An index goes back line by line: the pointers the job added leave, everyone else's stay.
    Planned and written under the index lock (the caller must not hold it).
    """
    with memory.index_lock():
        return _take_back(memory, op)


def _take_back(memory, op: Operation) -> Operation | None:
    steps, _conflicts = plan_undo(memory, op, memory.history)
    # a file that still holds what it wrote, or an index whose own lines can be merged out (no dangling pointer)
    mine = [s for s in steps if s.merged or s.now == next(c.after for c in op.changes if c.path == s.path)]
    gone = {s.path for s in mine if s.target is None and s.now is not None}
    started = time.monotonic()
    with memory.operation("undo", [op.id[:12]], meta={"undoes": op.id, "reason": _FAILED}, event=False):
        _apply(memory, mine)
        _drop_pointers_to(memory, gone)
    _event(memory, "undo", started, {"undoes": op.id, "reason": f"{op.command} failed"})
    return memory.last_operation


def _drop_pointers_to(memory, gone: set[str]) -> None:
    """Drop the index's pointers to files just removed (its line of one changed since, so it was not merged out).

    A failed job leaves no pointer to nothing. The caller holds the index lock.
    """
    from mem.core.memdir.index import drop_pointers
    from mem.core.memdir.layout import INDEX_NAME

    if not gone:
        return
    try:
        text = read_bytes(os.path.join(memory.root, INDEX_NAME)).decode("utf-8")
    except (OSError, MemError, UnicodeDecodeError):
        return
    kept = drop_pointers(text, gone)
    if kept is not None:
        memory.write(INDEX_NAME, kept, scan=False)


_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(text: str, now: float | None = None) -> float:
    """A point in time: ISO 8601 (date, or date and time; UTC unless it says otherwise) or an age like 2h, 3d."""
    from datetime import datetime, timezone

    m = _RELATIVE.match(text.strip())
    if m:
        return (time.time() if now is None else now) - int(m.group(1)) * _UNITS[m.group(2)]
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--at {text!r}: expected an operation id, an ISO date or time, or an age like 3d") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _op_time(op: Operation) -> float:
    from datetime import datetime

    return datetime.fromisoformat(op.time.replace("Z", "+00:00")).timestamp()


def version_at(history, relpath: str, at: str) -> tuple[str | None, int | None, Operation | None]:
    """(oid, mode, the operation that wrote it) of ``relpath`` at ``at``: an operation id (ID~ is just before it) or a time."""
    ops = history.operations()  # newest first
    before = at.endswith("~")
    ref = at[:-1] if before else at
    # an age (100d: all hex, but no operation id is read from it) is a time
    if re.fullmatch(r"[0-9a-f]{4,40}", ref) and not _RELATIVE.match(ref):
        target = history.find(ref)
        position = next(i for i, op in enumerate(ops) if op.id == target.id) + (1 if before else 0)
        candidates = ops[position:]
    else:
        when = parse_when(ref)
        candidates = [op for op in ops if _op_time(op) <= when]
    for op in candidates:
        for c in op.changes:
            if c.path == relpath:
                if c.after in (WITHHELD, REDACTED):
                    raise NotFoundError(f"{relpath}: the version at {at} is not kept ({c.after})")
                return c.after, c.after_mode, op
    raise NotFoundError(f"no recorded version of {relpath} at {at}")


def restore(memory, relpath: str, at: str, *, dry_run: bool = False) -> RevertResult:
    """Put ``relpath`` back as it was at ``at``, as an operation of its own."""
    history = memory.history
    relpath = relpath.replace(os.sep, "/").lstrip("/")
    with memory.index_lock():  # planned and written with no writer in between
        history.sync()
        oid, mode, _op = version_at(history, relpath, at)
        now, now_mode = _on_disk(memory, relpath)
        steps = [Step(relpath, now, now_mode, oid, mode)]
        diff = _diff(memory, steps)
        if dry_run or now == oid:
            return RevertResult(None, steps, [], diff, None)
        started = time.monotonic()
        _all_or_nothing(memory, "restore", [relpath, at], {}, steps)
    _event(memory, "restore", started, {"file": relpath, "at": at})
    return RevertResult(None, steps, [], diff, memory.last_operation)
