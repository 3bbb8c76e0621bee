"""mem dream: consolidate a memory directory without ever losing a memory.

The job runs in one of two modes:

* agent (a model key is set): a confined agent works through four phases —
  orient, gather, consolidate, prune and index — with read access to the
  memory directory and the project's transcripts and write access to the
  memory directory only, through the one write path;
* mechanical (``--offline``, or no key): no model; exact duplicate topic files
  (same type, body, name and description) are merged into the oldest.

Either way the index is then repaired (``heal_index``: dangling pointers out,
missing ones in, an over-limit index fitted with its prose moved to a topic
file), the directory checked (``dream_checks``: near-duplicates, stale and
relative dates, contradictions, reported as findings; with a repository, the
memories' claims checked against it by ``mem.core.verify``, each stale one a
``stale-claim`` finding, which the agent is also given to act on), and the change, one
operation of the history, validated (every changed topic file parses with a
valid type, the index is no further over its limits than before and points at
files that exist, no secret, daily logs only appended, no link left to a
deleted file). The agent gets one more round to fix a failed validation; a
failure after that, or a failed run, takes back the dream's own changes (only
those: a memory saved meanwhile stays).
``dry_run`` runs the whole job on a scratch copy and returns the diff.
An agent that reaches the run's spending cap (``--budget``, ``MEM_BUDGET_DREAM``) stops there,
and what it did goes through the same repair and validation and is kept: the result's
``budget`` and the event's outcome (``budget``) say so.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from mem.core.jobs import consolidation
from mem.core.memdir import scratch
from mem.core.memdir.files import read_text
from mem.core.errors import LockedError, MemError, RefusedError
from mem.core.memdir.layout import INDEX_NAME, INDEX_NOTES, LOGS_PREFIX, UNINDEXED_DIRS
from mem.core.memdir.store import MemoryDir
from mem.core.wording import plural

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
    findings: list = field(default_factory=list)  # dream_checks.Finding
    lint: list[str] = field(default_factory=list)
    turns: int = 0
    tokens: dict | None = None
    duration_s: float = 0.0
    model: str | None = None
    budget: dict | None = None  # the agent run's cap and spend (budget.Spend.as_dict)
    #: the agent's changes the tools refused for safety (a pinned file, a path outside, a secret): {tool, path, reason}
    refused: list[dict] = field(default_factory=list)

    @property
    def stopped_at_budget(self) -> bool:
        """The agent stopped at the run's spending cap; what it did was kept and validated."""
        return bool(self.budget and self.budget.get("stopped"))

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
            "findings": [f.as_dict() for f in self.findings],
            "lint": self.lint,
            "turns": self.turns,
            "tokens": self.tokens,
            "model": self.model,
            "stopped_at_budget": self.stopped_at_budget,
            "budget": self.budget,
            "refused": self.refused,
            "duration_s": round(self.duration_s, 3),
        }


Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def run(
    memory: MemoryDir,
    transcripts_dir: str | None,
    *,
    mode: str,
    model: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    min_hours: float = consolidation.DEFAULT_MIN_HOURS,
    min_sessions: int = consolidation.DEFAULT_MIN_SESSIONS,
    session: str | None = None,
    wait: bool = False,
    today: date | None = None,
    progress: Progress = _quiet,
    repo: str | None = None,
    budget: str | None = None,
) -> DreamResult:
    """Gate, lock, consolidate as one operation, validate. Raises LockedError / ValidationError / MemError.

    ``today`` is the date stale dates are judged against (default: the local date).
    ``repo``, the project's git repository, is what the memories' claims are checked against
    (``stale-claim`` findings; none without it). ``model`` names the agent's model (default: the
    job's, see ``llm.choose_model``). ``budget``: the agent's spending cap, as ``--budget`` gives it
    (default: ``MEM_BUDGET_DREAM``, else the job's); a run that reaches it stops, and what it did is
    repaired, validated and kept like any other (the event's outcome is ``budget``).
    """
    started = time.monotonic()
    memory_dir = memory.root
    gate = consolidation.check_gate(memory, transcripts_dir, min_hours=min_hours, min_sessions=min_sessions,
                                    exclude_session=session, force=force)
    result = DreamResult(memory_dir, mode, gate, dry_run=dry_run)
    if not gate.open:
        return result
    if not os.path.isdir(memory_dir):
        raise MemError(f"no memory directory at {memory_dir}")
    today = today or date.today()
    if dry_run:
        with scratch.scratch_copy(memory, "mem-dream-") as copy:
            _consolidate(result, copy, transcripts_dir, model, gate, progress, today, repo,
                         lambda: contextlib.nullcontext((memory_dir, scratch.compare(memory_dir, copy.root))), budget)
            result.changes = scratch.compare(memory_dir, copy.root)
            result.diff = scratch.unified_diff(memory_dir, copy.root)
        result.ran = True
        result.duration_s = time.monotonic() - started
        return result

    if not memory.history.available():
        # The dream validates and takes back its own changes through the history: without it, it could do neither.
        from mem.core.errors import ConfigError

        raise ConfigError("dream needs git on PATH: its changes are validated and, on failure, taken back through "
                          "the history, which is off without git (mem dream --dry-run shows what it would do)")
    prior = _acquire(memory, wait)
    from mem.core.memdir.revert import take_back

    memory.sweep_temp_files()
    try:
        with memory.operation("dream", [mode], event=False):
            _consolidate(result, memory, transcripts_dir, model, gate, progress, today, repo,
                         lambda: _before(memory), budget)
        op = memory.last_operation
        if op is not None:
            result.snapshot_id = op.id
            result.changes = scratch.Changes(*(sorted(c.path for c in op.changes if _action(c) == a)
                                                for a in ("created", "updated", "deleted")))
    except BaseException:
        if memory.last_operation is not None:
            take_back(memory, memory.last_operation)  # only what this dream wrote: saves made meanwhile stay
        consolidation.rollback(memory, prior)
        raise
    result.ran = True
    result.duration_s = time.monotonic() - started
    from mem.core.memdir import events

    events.record(memory, "dream", created=result.changes.created, updated=result.changes.updated,
                  deleted=result.changes.deleted, strategy=mode, tokens=result.tokens,
                  duration=result.duration_s, outcome="budget" if result.stopped_at_budget else "ok",
                  detail={"operation": result.snapshot_id, "gate": gate.reason,
                          **({"budget": result.budget} if result.budget else {})})
    return result


def _action(change) -> str:
    return "created" if change.before is None else "deleted" if change.after is None else "updated"


@contextlib.contextmanager
def _before(memory):
    """(a temporary directory holding what each file the operation in progress changed held before, the changes)."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="mem-dream-before-")
    created, updated, deleted = [], [], []
    try:
        for rel, old in sorted(memory.pending().items()):
            path = os.path.join(memory.root, rel)
            now = _read_bytes(path)
            if old is None:
                if now is not None:
                    created.append(rel)
                continue
            target = os.path.join(base, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(old)
            if now is None:
                deleted.append(rel)
            elif now != old:
                updated.append(rel)
        yield base, scratch.Changes(created, updated, deleted)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _read_bytes(path: str) -> bytes | None:
    from mem.core.memdir.files import read_bytes  # typed and capped: a FIFO index hung the dream

    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


def _acquire(memory: MemoryDir, wait: bool) -> int:
    while True:
        prior = consolidation.try_acquire(memory)
        if prior is not None:
            return prior
        if not wait:
            pid, _ = consolidation.holder(memory)
            raise LockedError(f"a dream is already running on {memory.root} (pid {pid}); use --wait to wait for it")
        time.sleep(1.0)


def _consolidate(result: DreamResult, memory: MemoryDir, transcripts_dir, model, gate, progress: Progress,
                 today: date, repo: str | None, before: Callable[[], contextlib.AbstractContextManager],
                 budget: str | None = None) -> None:
    """The job, the index repaired, the checks, validation; the agent gets one more round to fix what fails.
    ``memory``: the directory consolidated (a scratch copy's for --dry-run)."""
    if result.mode == "agent":
        from mem.core.jobs.dream_agent import consolidate

        again = consolidate(result, memory, transcripts_dir, model, gate, progress,
                            stale=stale_claims(memory, repo, today, progress), budget=budget)
        heal_index(memory, result, progress)
        problems = _problems(memory, before)
        if problems:
            progress(f"validate: {plural(len(problems), 'problem')}; asking the agent to fix them")
            again(problems)
            heal_index(memory, result, progress)
            problems = _problems(memory, before)
    else:
        mechanical(result, memory, progress)
        problems = _problems(memory, before)
    result.findings += check(memory, today) + stale_claims(memory, repo, today, progress)
    if result.mode == "mechanical" and result.findings:
        result.summary += f"; {plural(len(result.findings), 'finding')}"
    result.near_duplicates = [{"a": f.files[0], "b": f.files[1], "similarity": f.similarity}
                              for f in result.findings if f.kind == "near-duplicate"]
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        err = ValidationError(f"the consolidated memory failed validation, nothing kept: {shown}")
        err.problems = problems  # type: ignore[attr-defined]
        raise err


def _problems(memory: MemoryDir, before: Callable[[], contextlib.AbstractContextManager]) -> list[str]:
    with before() as (before_root, changes):
        return validate(memory, before_root, changes)


# --- mechanical mode --------------------------------------------------------


def _memories(memory: MemoryDir) -> list:
    """The topic files the dream looks after (team/ and logs/ are not its to change), as the checks see them."""
    from mem.core.jobs.dream_checks import Memory
    from mem.core.memdir import manifest
    from mem.core.memdir.frontmatter import parse_frontmatter

    out = []
    for h in manifest.scan(memory.root, limit=None):
        if h.relpath.startswith(SKIP_DIRS):
            continue
        try:
            body = parse_frontmatter(read_text(h.path, errors="replace")).content
        except OSError:
            continue  # gone, or past the size cap: not this dream's to merge
        out.append(Memory(h.relpath, h.name or "", h.description or "", h.type, body, h.mtime_ms))
    return out


def mechanical(result: DreamResult, store: MemoryDir, progress: Progress = _quiet) -> None:
    """Merge exact duplicates, repair and fit the index, lint."""
    from mem.core.memdir import index as idx
    from mem.core.memdir import manifest
    from mem.core.memdir.layout import is_pinned

    from mem.core.jobs.dream_checks import normalise

    index_before = _read_bytes(store.index_path)
    progress("orient: scanning topic files")
    groups: dict[tuple, list] = {}
    for m in _memories(store):
        if normalise(m.body):
            key = (m.type, normalise(m.body), normalise(m.name), normalise(m.description))
            groups.setdefault(key, []).append(m)
    replace: dict[str, str] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        # Keep the oldest: a merge keeps the older date (recall shows a memory's age); pointers follow it.
        # A pinned file is never merged away: it is the one kept, and a second pinned one stays too.
        members = sorted(members, key=lambda m: (not is_pinned(m.relpath), m.mtime_ms, m.relpath))
        keep, drop = members[0], [m for m in members[1:] if not is_pinned(m.relpath)]
        if not drop:
            continue
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
    rebuilt = heal_index(store, result, progress)
    remaining = manifest.scan(store.root, limit=None)
    result.lint = [f"{INDEX_NAME}{':' + str(p.line) if p.line else ''}: {p.code}: {p.message}"
                   for p in idx.lint(rebuilt, store.root, remaining)]
    result.lint += [f"{h.relpath}: {w.code}: {w.message}" for h in remaining for w in h.warnings]
    merged = sum(len(g) - 1 for g in result.duplicates)
    would = "would " if result.dry_run else ""
    index_changed = _read_bytes(store.index_path) != index_before
    result.summary = (f"{would}{'merge' if would else 'merged'} {plural(merged, 'exact duplicate file')}"
                      f" in {plural(len(result.duplicates), 'group')}; "
                      + (f"{would}{'repair' if would else 'repaired'} {INDEX_NAME}" if index_changed
                         else f"{INDEX_NAME} needs no repair"))


NOTES_DESCRIPTION = "Notes written by hand in the memory index, moved here by mem dream to keep the index within its limits"


def heal_index(store, result: DreamResult, progress: Progress = _quiet) -> str | None:
    """Repair the index mechanically; its new text.

    Pointers to missing files go, pointers to unlisted topic files come; an
    index over its limits is fitted (``index.fit``): its hand-written prose
    moves, verbatim, into the topic file ``INDEX_NOTES`` (pointed to from the
    top) and every topic file's pointer is placed where an agent sees it, or
    reported as unreachable when there are more than fit.
    """
    from mem.core.jobs.dream_checks import Finding
    from mem.core.memdir import index as idx
    from mem.core.memdir import manifest

    progress(f"prune and index: repairing {INDEX_NAME}")
    headers = manifest.scan(store.root, limit=None)
    notes_pointer = f"- [Index notes]({INDEX_NOTES}) — notes moved out of the index"
    final: list[str | None] = [None]

    def change(text: str | None) -> str | None:
        if text is None and not idx.indexed_topics(headers):
            return None
        final[0] = idx.rebuild(text, store.root, headers)
        if not idx.render_as_injected(final[0]).truncated:
            return final[0]
        fitted = idx.fit(final[0], headers, notes_pointer)
        if fitted.prose:
            _keep_notes(store, fitted.prose)
            result.findings.append(Finding("prose-moved", [INDEX_NAME, INDEX_NOTES],
                                           [f"{plural(len(fitted.prose), 'hand-written line')} moved out of the index",
                                            *fitted.prose[:2]], fixed=True))
        result.findings = [f for f in result.findings if f.kind != "unreachable"]  # this repair says it anew
        if fitted.unreachable:
            result.findings.append(Finding("unreachable", fitted.unreachable,
                                           [f"{plural(len(fitted.unreachable), 'topic file')} not fitting in what an agent "
                                            "is given of the index"]))
        final[0] = fitted.text
        return final[0]

    if store.update_index(change) is None:  # nothing to change: the index as it is
        text = _read_bytes(store.index_path)
        return None if text is None else text.decode("utf-8", "replace")
    return final[0]


def _keep_notes(store, prose: list[str]) -> None:
    """Add ``prose`` to the index notes topic file (made with its frontmatter the first time)."""
    old = _read_bytes(os.path.join(store.root, INDEX_NOTES))
    if old is None:
        head = f"---\nname: index notes\ndescription: {NOTES_DESCRIPTION}\ntype: reference\n---\n\n"
    else:
        head = old.decode("utf-8", "replace").rstrip("\n") + "\n\n"
    store.write(INDEX_NOTES, head + "\n".join(prose) + "\n")


def check(memory: MemoryDir, today: date) -> list:
    """The checks' findings on the directory as the dream leaves it (see ``dream_checks``)."""
    from mem.core.jobs import dream_checks

    return dream_checks.findings(_memories(memory), today)


def stale_claims(memory: MemoryDir, repo: str | None, today: date, progress: Progress = _quiet) -> list:
    """One ``stale-claim`` finding per claim of a memory that ``mem.core.verify`` finds stale against ``repo``.

    Example: stale_claims(memory, "/src/app", today)[0].evidence ==
        ["line 7: src/net/retry.py: moved (renamed in 3f2a9c1 -> lib/net/retry.py)"]
    No repository, or one that cannot be read: no findings (the rest of the dream goes on).
    """
    from mem.core.jobs.dream_checks import Finding
    from mem.core.verify import verify

    if not repo:
        return []
    try:
        report = verify(memory, repo, today=today)
    except (MemError, OSError) as exc:
        progress(f"verify: not checking claims against {repo}: {exc}")
        return []
    return [Finding("stale-claim", [f.memory], [stale_claim_line(f)]) for f in report.stale
            if not f.memory.startswith(SKIP_DIRS)]


def stale_claim_line(f) -> str:
    """``line N: <claim>: <verdict> (<evidence>)``; a moved path's new place is always in it."""
    evidence = f.evidence
    if f.new_place and f.new_place not in evidence:
        evidence += f" -> {f.new_place}"
    return f"line {f.line}: {f.claim}: {f.verdict} ({evidence})"


# --- validation -------------------------------------------------------------


def validate(memory: MemoryDir, before_root: str, changes: scratch.Changes | None = None) -> list[str]:
    """Rules a consolidated directory must keep; each problem as one line.

    ``changes`` is ``scratch.compare(before_root, memory.root)`` when the caller has it already.
    """
    from mem.core.memdir import index as idx
    from mem.core.memdir import manifest
    from mem.core.memdir.frontmatter import memory_type_of, parse_frontmatter
    from mem.core.guards.secrets import first_secret

    root = memory.root
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
        text = read_text(path, errors="replace")
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
    problems += _links_to_deleted(memory, changes)
    try:
        index_text = read_text(os.path.join(root, idx.INDEX_NAME), inside=root)
    except FileNotFoundError:
        index_text = None
    if index_text is not None:
        t = idx.render_as_injected(index_text)
        if _worse_index(_index_before(before_root, changes, index_text), index_text, memory):
            problems.append(f"{INDEX_NAME}: over its limits ({t.line_count} lines, {t.byte_count} UTF-16 units; "
                            "limits 200 and 25,000), and worse than before")
        for p in idx.parse_pointers(index_text):
            if p.relpath and not os.path.isfile(os.path.join(root, p.relpath)):
                problems.append(f"MEMORY.md:{p.lineno}: points at {p.target}, which does not exist")
    elif any(not h.relpath.startswith(SKIP_DIRS) for h in manifest.scan(root, limit=None)) and os.path.exists(os.path.join(before_root, idx.INDEX_NAME)):
        problems.append(f"{INDEX_NAME}: the index was deleted")
    return problems


_LINK = re.compile(r"\]\((<[^>]*>|[^)\s]+)")


def _links_to_deleted(memory: MemoryDir, changes: scratch.Changes) -> list[str]:
    """Topic files left linking to a file this dream deleted (a merge must carry its links over)."""
    from mem.core.memdir.layout import is_index, is_memory, tree_files

    gone = set(changes.deleted)
    if not gone:
        return []
    problems = []
    for rel, path in sorted(tree_files(memory.root).items()):
        if not is_memory(rel) or is_index(rel) or rel.startswith(SKIP_DIRS) or os.path.islink(path):
            continue
        text = read_text(path, errors="replace")
        for m in _LINK.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1).strip("<>").split("#")[0]))
            if target.replace(os.sep, "/") in gone:
                problems.append(f"{rel}: links to {m.group(1)}, which this dream deleted")
    return problems


def _index_before(before_root: str, changes: scratch.Changes, index_text: str) -> str | None:
    """The index as it was before the dream (None: there was none)."""
    if INDEX_NAME in changes.created:
        return None
    if INDEX_NAME not in changes.updated:
        return index_text
    return read_text(os.path.join(before_root, INDEX_NAME), inside=before_root)


def _worse_index(before: str | None, after: str, memory: MemoryDir) -> bool:
    """An index over its limits is a problem when the dream made it so or made it larger.

    Not when it holds nothing but pointers to topic files: then there are more
    topic files than fit, and the dream reports which are out of sight.
    """
    from mem.core.memdir import index as idx

    t = idx.render_as_injected(after)
    if not t.truncated:
        return False
    pointers = [p for p in idx.parse_pointers(after) if p.relpath and os.path.isfile(os.path.join(memory.root, p.relpath))]
    if len(pointers) == sum(1 for line in after.split("\n") if line.strip()):
        return False
    if before is None:
        return True
    b = idx.render_as_injected(before)
    return not b.truncated or t.line_count > b.line_count or t.byte_count > b.byte_count
