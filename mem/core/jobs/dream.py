"""mem dream: consolidate a memory directory without ever losing a memory.

The job runs in one of two modes:

* agent (a model key is set): a confined agent works through four phases —
  orient, gather, consolidate, prune and index — with read access to the
  memory directory and the project's transcripts and write access to the
  memory directory only, through the one write path;
* mechanical (``--offline``, or no key): no model; exact duplicate topic files
  are merged, near duplicates reported, the index rebuilt and linted.

Either way the change is one operation of the history, validated after
(every changed topic file parses with a valid type, the index is within its
limits and points at files that exist, no secret, daily logs only appended),
and a failed validation or a failed run takes back its own changes (only those:
a memory saved meanwhile stays).
``dry_run`` runs the whole job on a scratch copy and returns the diff.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mem.core.jobs import consolidation
from mem.core.memdir import scratch
from mem.core.errors import LockedError, MemError, RefusedError
from mem.core.memdir.layout import INDEX_NAME, LOGS_PREFIX, UNINDEXED_DIRS

SKIP_DIRS = UNINDEXED_DIRS


class ValidationError(RefusedError):
    """The consolidated directory broke a rule; the dream's own changes were taken back."""


@dataclass
class DreamResult:
    memory_dir: str
    mode: str  # agent | mechanical
    gate: consolidation.Gate | None
    ran: bool = False
    dry_run: bool = False
    changes: scratch.Changes = field(default_factory=lambda: scratch.Changes([], [], []))
    snapshot_id: str | None = None
    diff: str | None = None
    summary: str = ""
    duplicates: list[list[str]] = field(default_factory=list)  # merged groups, kept file first
    near_duplicates: list[dict] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    turns: int = 0
    tokens: dict | None = None
    duration_s: float = 0.0
    model: str | None = None

    def as_dict(self) -> dict:
        return {
            "memory_dir": self.memory_dir,
            "mode": self.mode,
            "gate": self.gate.as_dict() if self.gate else None,
            "ran": self.ran,
            "dry_run": self.dry_run,
            **self.changes.as_dict(),
            "snapshot": self.snapshot_id,
            "summary": self.summary,
            "duplicates": self.duplicates,
            "near_duplicates": self.near_duplicates,
            "lint": self.lint,
            "turns": self.turns,
            "tokens": self.tokens,
            "model": self.model,
            "duration_s": round(self.duration_s, 3),
        }


Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def run(
    memory_dir: str,
    transcripts_dir: str | None,
    *,
    mode: str,
    model=None,
    dry_run: bool = False,
    force: bool = False,
    min_hours: float = consolidation.DEFAULT_MIN_HOURS,
    min_sessions: int = consolidation.DEFAULT_MIN_SESSIONS,
    session: str | None = None,
    wait: bool = False,
    progress: Progress = _quiet,
) -> DreamResult:
    """Gate, lock, consolidate as one operation, validate. Raises LockedError / ValidationError / MemError."""
    started = time.monotonic()
    gate = consolidation.check_gate(memory_dir, transcripts_dir, min_hours=min_hours, min_sessions=min_sessions,
                                    exclude_session=session, force=force)
    result = DreamResult(memory_dir, mode, gate, dry_run=dry_run)
    if not gate.open:
        return result
    if not os.path.isdir(memory_dir):
        raise MemError(f"no memory directory at {memory_dir}")
    if dry_run:
        with scratch.scratch_copy(memory_dir, "mem-dream-") as work:
            _job(result, work, transcripts_dir, model, gate, progress)
            result.changes = scratch.compare(memory_dir, work)
            _validate_or_raise(work, memory_dir, result.changes)
            result.diff = scratch.unified_diff(memory_dir, work)
        result.ran = True
        result.duration_s = time.monotonic() - started
        return result

    prior = _acquire(memory_dir, wait)
    from mem.core.memdir.revert import take_back
    from mem.core.memdir.store import MemoryDir

    memory = MemoryDir(memory_dir)
    memory.sweep_temp_files()
    try:
        with memory.operation("dream", [mode]):
            _job(result, memory_dir, transcripts_dir, model, gate, progress)
        op = memory.last_operation
        if op is not None:
            result.snapshot_id = op.id
            result.changes = scratch.Changes(*(sorted(c.path for c in op.changes if _action(c) == a)
                                                for a in ("created", "updated", "deleted")))
            with _before(memory, op) as before:
                _validate_or_raise(memory_dir, before, result.changes)
    except BaseException:
        if memory.last_operation is not None:
            take_back(memory, memory.last_operation)  # only what this dream wrote: saves made meanwhile stay
        consolidation.rollback(memory_dir, prior)
        raise
    result.ran = True
    result.duration_s = time.monotonic() - started
    from mem.core.memdir import events

    events.record(memory_dir, "dream", created=result.changes.created, updated=result.changes.updated,
                  deleted=result.changes.deleted, strategy=mode, tokens=result.tokens,
                  duration=result.duration_s, detail={"operation": result.snapshot_id, "gate": gate.reason})
    return result


def _action(change) -> str:
    return "created" if change.before is None else "deleted" if change.after is None else "updated"


@contextlib.contextmanager
def _before(memory, op):
    """A temporary directory holding what each file ``op`` changed held before it (for validation)."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="mem-dream-before-")
    try:
        for c in op.changes:
            if c.before is not None:
                path = os.path.join(base, c.path)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as fh:
                    fh.write(memory.history.read_blob(c.before))
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _acquire(memory_dir: str, wait: bool) -> int:
    while True:
        prior = consolidation.try_acquire(memory_dir)
        if prior is not None:
            return prior
        if not wait:
            pid, _ = consolidation.holder(memory_dir)
            raise LockedError(f"a dream is already running on {memory_dir} (pid {pid}); use --wait to wait for it")
        time.sleep(1.0)


def _job(result: DreamResult, root: str, transcripts_dir, model, gate, progress: Progress) -> None:
    if result.mode == "agent":
        from mem.core.jobs.dream_agent import consolidate

        consolidate(result, root, transcripts_dir, model, gate, progress)
    else:
        mechanical(result, root, progress)


# --- mechanical mode --------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _body_of(path: str) -> tuple[str, str | None]:
    from mem.core.memdir.frontmatter import memory_type_of, parse_frontmatter

    with open(path, encoding="utf-8", errors="replace") as fh:
        parsed = parse_frontmatter(fh.read())
    return parsed.content, memory_type_of(parsed.data)[0]


_WORD = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _shingles(text: str) -> set[tuple[str, ...]]:
    tokens = _WORD.findall(text.lower())
    if len(tokens) < 3:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}


def mechanical(result: DreamResult, root: str, progress: Progress = _quiet, *, near_threshold: float = 0.6) -> None:
    """Merge exact duplicates, report near ones, rebuild the index, lint."""
    from mem.core.memdir import index as idx
    from mem.core.memdir import manifest
    from mem.core.memdir.store import MemoryDir

    store = MemoryDir(root)
    progress("orient: scanning topic files")
    headers = [h for h in manifest.scan(root, limit=None) if not h.relpath.startswith(SKIP_DIRS)]
    groups: dict[tuple, list] = {}
    bodies: dict[str, str] = {}
    for h in headers:
        body, mtype = _body_of(h.path)
        bodies[h.relpath] = body
        if _normalise(body):
            groups.setdefault((mtype, _normalise(body)), []).append(h)
    try:
        with open(store.index_path, encoding="utf-8") as fh:
            index_text = fh.read()
    except FileNotFoundError:
        index_text = ""
    pointed = {p.relpath for p in idx.parse_pointers(index_text) if p.relpath}
    replace: dict[str, str] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        # Keep the one the index points at, else the newest (scan order is newest first).
        members = sorted(members, key=lambda h: (h.relpath not in pointed, -h.mtime_ms, h.relpath))
        keep, drop = members[0], members[1:]
        result.duplicates.append([keep.relpath] + [d.relpath for d in drop])
        for d in drop:
            progress(f"consolidate: {d.relpath} duplicates {keep.relpath}; removing it")
            store.delete(d.relpath)
            replace[d.relpath] = keep.relpath
    if replace:
        def repoint(text: str | None) -> str | None:
            if text is None:
                return None
            lines = text.split("\n")
            by_line = {p.lineno: p for p in idx.parse_pointers(text)}
            live = {p.relpath for p in by_line.values() if p.relpath and p.relpath not in replace}
            out = []
            for i, line in enumerate(lines, start=1):
                p = by_line.get(i)
                if p is not None and p.relpath in replace:
                    target = replace[p.relpath]
                    if target in live:
                        continue
                    live.add(target)
                    line = line.replace(f"]({p.target})", f"]({target})", 1)
                out.append(line)
            return "\n".join(out)

        store.update_index(repoint)
    progress("prune and index: rebuilding MEMORY.md")
    remaining = manifest.scan(root, limit=None)  # only MEMORY.md changes from here on: this is the final manifest
    rebuilt: list[str | None] = [None]

    def rebuild(text: str | None) -> str | None:
        rebuilt[0] = idx.rebuild(text, root, remaining) if (text is not None or remaining) else None
        return rebuilt[0]

    store.update_index(rebuild)
    # Near duplicates: reported, never merged without a model to judge them.
    alive = [h for h in headers if h.relpath not in replace]
    sh = {h.relpath: _shingles(bodies[h.relpath] + " " + (h.description or "")) for h in alive}
    for i, a in enumerate(alive):
        for b in alive[i + 1:]:
            sa, sb = sh[a.relpath], sh[b.relpath]
            if not sa or not sb:
                continue
            score = len(sa & sb) / len(sa | sb)
            if score >= near_threshold:
                result.near_duplicates.append({"a": a.relpath, "b": b.relpath, "similarity": round(score, 3)})
    result.lint = [f"{INDEX_NAME}{':' + str(p.line) if p.line else ''}: {p.code}: {p.message}"
                   for p in idx.lint(rebuilt[0], root, remaining)]
    result.lint += [f"{h.relpath}: {w.code}: {w.message}" for h in remaining for w in h.warnings]
    n = len(result.duplicates)
    result.summary = (f"merged {sum(len(g) - 1 for g in result.duplicates)} exact duplicate file(s) in {n} group(s); "
                      f"{len(result.near_duplicates)} near-duplicate pair(s) left for review; index rebuilt")


# --- validation -------------------------------------------------------------


def validate(root: str, before_root: str, changes: scratch.Changes | None = None) -> list[str]:
    """Rules a consolidated directory must keep; each problem as one line.

    ``changes`` is ``scratch.compare(before_root, root)`` when the caller has it already.
    """
    from mem.core.memdir import index as idx
    from mem.core.memdir import manifest
    from mem.core.memdir.frontmatter import memory_type_of, parse_frontmatter
    from mem.core.guards.secrets import first_secret

    problems = []
    changes = scratch.compare(before_root, root) if changes is None else changes
    for rel in changes.updated + changes.deleted:
        if rel.startswith(LOGS_PREFIX):
            if rel in changes.deleted:
                problems.append(f"{rel}: a daily log was deleted (logs are append-only)")
            else:
                with open(os.path.join(before_root, rel), "rb") as a, open(os.path.join(root, rel), "rb") as b:
                    if not b.read().startswith(a.read()):
                        problems.append(f"{rel}: a daily log was rewritten (logs are append-only)")
    for rel in changes.created + changes.updated:
        path = os.path.join(root, rel)
        if os.path.islink(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        found = first_secret(text)
        if found is not None:
            problems.append(f"{rel}: contains a secret ({found.label}, rule {found.rule_id})")
        if not rel.endswith(".md") or os.path.basename(rel) == idx.INDEX_NAME or rel.startswith(SKIP_DIRS):
            continue
        parsed = parse_frontmatter(text)
        if not parsed.present or parsed.error:
            problems.append(f"{rel}: frontmatter is missing or does not parse")
        elif memory_type_of(parsed.data)[0] is None:
            problems.append(f"{rel}: type must be user, feedback, project or reference")
        elif not parsed.data.get("description"):
            problems.append(f"{rel}: no description")
    try:
        with open(os.path.join(root, idx.INDEX_NAME), encoding="utf-8") as fh:
            index_text = fh.read()
    except FileNotFoundError:
        index_text = None
    if index_text is not None:
        t = idx.render_as_injected(index_text)
        if t.truncated:
            problems.append(f"MEMORY.md: over its limits ({t.line_count} lines, {t.byte_count} UTF-16 units; limits 200 and 25,000)")
        for p in idx.parse_pointers(index_text):
            if p.relpath and not os.path.isfile(os.path.join(root, p.relpath)):
                problems.append(f"MEMORY.md:{p.lineno}: points at {p.target}, which does not exist")
    elif any(not h.relpath.startswith(SKIP_DIRS) for h in manifest.scan(root, limit=None)) and os.path.exists(os.path.join(before_root, idx.INDEX_NAME)):
        problems.append(f"{INDEX_NAME}: the index was deleted")
    return problems


def _validate_or_raise(root: str, before_root: str, changes: scratch.Changes) -> None:
    problems = validate(root, before_root, changes)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        err = ValidationError(f"the consolidated memory failed validation, nothing kept: {shown}")
        err.problems = problems  # type: ignore[attr-defined]
        raise err
