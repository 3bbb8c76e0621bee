"""The history of a memory directory: every change recorded, so any one can be taken back.

The store is a bare git repository in mem's state directory (never inside the
memory directory), driven through the ``git`` binary with plumbing commands
only. Git gives content-addressed, deduplicated, compressed storage with
integrity checks and garbage collection, and adds no Python dependency. The
few objects one operation adds (its blobs, its tree, its commit) are written
here as loose objects, byte for byte as git writes them, so an operation costs
few spawns; the refs, the index and the listing of the work tree stay git's.

Layout of ``<state_dir>``::

    history.git/          bare repository; its index is the recorded state of the memory directory
    history.git/index     path -> (blob, mode) as last recorded
    history.git/info/     exclude (what is never recorded), attributes (no .gitattributes converts content)
    history/journal/*.jsonl   one file per mem operation in progress (live while its PID runs
                              with the start time it recorded: a reused PID does not keep it;
                              *.dead.jsonl: given up by a process that could not record it)
    history/maintained    stamp of the last daily maintenance
    history.lock          flock held around every change to the store
    history.git.damaged-*  a store git could no longer read, set aside (history starts again)

An operation is a parentless commit under ``refs/ops/<time_ns>-<id>``, dated by
its last change (taken under the history lock, so operations running at once are
listed in the order they changed the files, whichever committed first). Its
message is the operation as one JSON object; its tree names every blob the
operation needs (``<n>.before`` / ``<n>.after``) so garbage collection keeps
exactly those. Dropping an operation is deleting its ref.

Every change is attributed to exactly one operation. A mem process records
its own writes through a ``Journal``: the change is journaled (and fsynced)
before it is applied and staged in the index after, so a process killed at
any point leaves a journal from which the next process recovers what really
happened. Changes made by anything else (an editor, the agent's own tools,
git pull) are found by comparing the work tree with the index and recorded as
``outside`` operations.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from mem.core import gitcmd
from mem.core.errors import ExitCode, MemError, NotFoundError, Notice, RefusedError, StorageError, UsageError
from mem.core.memdir.files import atomic_write, fill_and_rename, fsync_dir, pid_running, remove_dead_temps, write_all

ZERO = None  # an absent file's oid (and mode)

REGULAR = 0o100644
EXECUTABLE = 0o100755
SYMLINK = 0o120000

#: What an operation lists instead of an oid whose content was never stored or was removed.
WITHHELD = "withheld"
REDACTED = "redacted"

OUTSIDE = "outside"
MAX_AGE_DAYS = 90
MAX_BYTES = 200 * 2**20

_DAY = 86400
_NULL_OID = "0" * 40
_PIN_REF = "refs/pins/journals"
#: The name's end of a journal whose process could not record it and gave it up to the next one.
_DEAD = ".dead.jsonl"

# Every git call runs with these, whatever the user's configuration says: no
# line-ending or path mangling, real symlinks and executable bits, no automatic
# gc in the middle of an operation, no hooks, no reflogs (a reflog would keep a
# redacted or pruned version reachable).
_GIT_CONFIG = (
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.quotepath=false",
    "-c", "core.symlinks=true",
    "-c", "core.fileMode=true",
    "-c", "core.logAllRefUpdates=false",
    "-c", f"core.excludesFile={os.devnull}",
    "-c", "gc.auto=0",
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "advice.detachedHead=false",
    # Names refused only to keep a checkout safe on NTFS or HFS+ (GIT~1, ".git " ...): this store checks
    # nothing out, and update-index would skip them with a warning, recorded but never staged.
    "-c", "core.protectNTFS=false",
    "-c", "core.protectHFS=false",
)


def blob_oid(data: bytes) -> str:
    """Git's blob id of ``data``, computed here so comparisons cost no spawn."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HistoryUnavailable(MemError):
    """The git binary is missing: the history is off, as a missing API key leaves the model off (exit 3,
    as ``mem dream`` refuses), not mem going wrong."""

    exit_code = ExitCode.CONFIG
    kind = "config"

    def __init__(self, message: str = "history needs git on PATH"):
        super().__init__(message)


class Change(NamedTuple):
    path: str  # '/'-separated, relative to the memory directory
    before: str | None  # blob oid, None = the file did not exist, or WITHHELD / REDACTED
    after: str | None  # blob oid, None = the file was deleted, or WITHHELD / REDACTED
    before_mode: int | None
    after_mode: int | None


class Operation(NamedTuple):
    id: str  # the commit sha
    time: str  # ISO 8601 UTC with milliseconds, when the operation was recorded
    command: str  # "remember", "forget", ..., or "outside" for changes mem did not make
    args: list[str]
    changes: list[Change]
    interrupted: bool  # recovered from the journal of a process that died
    undoes: str | None  # for an undo: the id of the operation it took back
    meta: dict  # the caller's metadata (``undoes`` comes from here; sync adds ``withheld``)

    def as_dict(self) -> dict:
        """The operation for --json output."""
        return {
            "id": self.id,
            "time": self.time,
            "command": self.command,
            "args": list(self.args),
            "changes": [
                {"path": c.path, "action": _action(c), "before": c.before, "after": c.after}
                for c in self.changes
            ],
            "interrupted": self.interrupted,
            "undoes": self.undoes,
        }


def _action(change: Change) -> str:
    if change.before is None:
        return "created"
    return "deleted" if change.after is None else "updated"


class _JournalFile(NamedTuple):
    path: str
    id: str
    header: dict | None  # None when the process died before the header was complete
    entries: list[dict]  # without the voided ones


#: How git says the storage refused a write (it prints strerror, or its own words for a short write).
_STORAGE_SIGNS = ("No space left on device", "Out of diskspace", "Disk quota exceeded", "Read-only file system")


def _full(path: str | None) -> bool:
    """Whether the file system holding ``path`` is (all but) full: git's "couldn't write" names no cause."""
    try:
        st = os.statvfs(path) if path else None
    except OSError:
        return False
    return st is not None and st.f_bavail * st.f_frsize < _NEARLY_FULL


#: More blobs than this at once go to one pack (fast-import), fewer are written as loose objects: git's own
#: ``fastimport.unpackLimit``, below which fast-import unpacks what it wrote into loose objects anyway.
_PACK_OVER = 100

#: More index entries than this without stat data (staged by mem), and a sync refreshes the index (one spawn):
#: fewer are compared by content at each listing instead (git reads a few small files).
_REFRESH_OVER = 32
#: An index entry staged with --index-info as git writes it: ctime, mtime, dev, ino zero; a mode; uid, gid, size zero.
_NO_STAT = tuple(bytes(24) + mode.to_bytes(4, "big") + bytes(12) for mode in (REGULAR, EXECUTABLE, SYMLINK))

#: The store's info/attributes: no attribute of the memory directory's own changes how git reads a file's content.
_ATTRIBUTES = b"* -text -crlf -eol -ident -filter -working-tree-encoding\n"

#: Less free space than this where the store is, and a failed git is put down to the full disk.
_NEARLY_FULL = 256 * 1024


def _run(args: list[str], *, input: bytes | None, env: dict, cwd: str, pass_fds: tuple[int, ...]) -> bytes:
    """Spawn git once and return its stdout: the only place this module starts a process."""
    try:
        proc = gitcmd.run(args, input=input, env=env, cwd=cwd, pass_fds=pass_fds)
    except FileNotFoundError:
        raise HistoryUnavailable() from None
    if proc.returncode:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        message = f"history: git: {detail[0] if detail else f'exit status {proc.returncode}'}"
        if any(sign in line for line in detail for sign in _STORAGE_SIGNS) or _full(env.get("GIT_DIR")):
            raise StorageError(message)  # exit 74, as an OSError of our own for a full disk is
        raise MemError(message)
    return proc.stdout


class History:
    """The recorded history of one memory directory."""

    def __init__(self, state_dir: str, work_tree: str, *, exclude: Sequence[str] = (),
                 refuse: Callable[[str, bytes], str | None] | None = None):
        self.state_dir = os.path.abspath(state_dir)
        self.work_tree = os.path.abspath(work_tree)
        self.git_dir = os.path.join(self.state_dir, "history.git")
        self._index_file = os.path.join(self.git_dir, "index")
        self._exclude_file = os.path.join(self.git_dir, "info", "exclude")
        self._attributes_file = os.path.join(self.git_dir, "info", "attributes")
        self._journal_dir = os.path.join(self.state_dir, "history", "journal")
        self._stamp = os.path.join(self.state_dir, "history", "maintained")
        self._lock_path = os.path.join(self.state_dir, "history.lock")
        # .git always: a memory directory that is itself a repository must not record its own .git; in any
        # case, as update-index refuses to stage one (".GIT" was recorded as created again at every sync)
        self._exclude = "".join(f"{pattern}\n" for pattern in (*exclude, ".[gG][iI][tT]"))
        self._refuse = refuse
        self._lock_fd: int | None = None
        # The index as this process last listed or staged it, under the lock: (its checksum, path -> (oid, mode)).
        self._known: tuple[bytes, dict[str, tuple[str, int]]] | None = None

    def __repr__(self) -> str:
        return f"History({self.state_dir!r}, {self.work_tree!r})"

    # -- public API --

    def available(self) -> bool:
        """Whether git is there to keep a history at all."""
        return gitcmd.binary() is not None

    def begin(self, command: str, args: Sequence[str] = (), *, meta: dict | None = None) -> Journal:
        """Start recording one mem operation (nothing is spawned or written until its first write)."""
        return Journal(self, command, args, meta or {})

    def sync(self) -> Operation | None:
        """Record what changed in the memory directory without mem, as one "outside" operation."""
        with self._locked():
            return self._sync(self._recover())

    def rebase_if_damaged(self, error: MemError) -> str | None:
        """After ``error`` from the store: if the store is damaged, move it aside and start anew; where it went.

        A store git cannot read (a torn index, broken refs or objects) must not block every write:
        it is kept aside for inspection, told as a ``Notice`` warning with the fix, and the next sync records
        the files as they are as the first operation of a new history. None: the store reads fine.
        """
        with self._locked():
            if not os.path.isdir(self.git_dir) or self.damaged() is None:
                return None
            aside = f"{self.git_dir}.damaged-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
            os.rename(self.git_dir, aside)
            # journals name versions in the damaged store: they go with it
            if os.path.isdir(self._journal_dir):
                os.rename(self._journal_dir, os.path.join(aside, "mem-journal"))
                os.makedirs(self._journal_dir)
        import warnings

        # told by the command that ran into it (the CLI prints a Notice on stderr), not written here
        warnings.warn(Notice(f"the history store was damaged ({error}); it is kept at {aside} and history starts "
                             f"again from the files as they are (inspect it with `git --git-dir {aside} fsck`, then "
                             "delete it; `mem doctor` lists it)"), stacklevel=2)
        return aside

    def damaged(self) -> str | None:
        """Why git cannot read the store (a torn index, broken refs or objects); None when it reads or is not made yet."""
        if not os.path.exists(self._exclude_file):
            return None
        try:
            self._git("ls-files", "-s")
            self._git("for-each-ref", "--format=%(objectname) %(contents:subject)", "refs/ops/")
        except HistoryUnavailable:
            raise
        except MemError as exc:
            return str(exc)
        return None

    def set_aside(self) -> list[str]:
        """The damaged stores ``rebase_if_damaged`` kept for inspection, oldest first."""
        parent, name = os.path.split(self.git_dir)
        try:
            return sorted(os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(f"{name}.damaged-"))
        except FileNotFoundError:
            return []

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the history lock: no recorded change of the directory lands meanwhile (a relocate
        removing the directories it emptied, while a writer of the old session saves)."""
        with self._locked():
            yield

    def operations(self, path: str | None = None, limit: int | None = None) -> list[Operation]:
        """Recorded operations, newest first; with ``path``, only those that changed it."""
        ops = [op for _, op in self._records()]
        if path is not None:
            ops = [op for op in ops if any(c.path == path for c in op.changes)]
        return ops if limit is None else ops[:limit]

    def find(self, ref: str) -> Operation:
        """The operation whose id starts with ``ref`` (at least 4 hex digits, unique)."""
        return _pick(self._records(), ref)[1]

    def read_blob(self, oid: str) -> bytes:
        """The stored content of one version."""
        if oid in (None, WITHHELD, REDACTED):
            raise NotFoundError(f"that version has no content in the history ({oid or 'absent'})")
        return self._cat([oid])[oid]

    def diff(self, op: Operation, *, extra: dict[str, bytes] | None = None) -> str:
        """The operation as a unified diff with git-style headers; ``extra`` gives blobs not stored (yet)."""
        extra = extra or {}
        blobs = {**self._cat([o for c in op.changes for o in (c.before, c.after) if _stored(o) and o not in extra]),
                 **extra}
        return "".join(_file_diff(c, blobs) for c in op.changes)

    def current_oid(self, relpath: str) -> tuple[str | None, int | None]:
        """What the recorded state says ``relpath`` holds: (oid, mode), or (None, None)."""
        if not os.path.exists(self._exclude_file):
            return None, None
        return self._index([relpath]).get(relpath, (None, None))

    def prune(self, *, max_age_days: float = MAX_AGE_DAYS, max_bytes: int = MAX_BYTES,
              now: float | None = None) -> list[str]:
        """Drop operations older than ``max_age_days``, then the oldest while the store exceeds ``max_bytes``.

        Never by count: a busy day must not push out last week. Returns the
        dropped ids, oldest first; their versions are gone from disk after.
        """
        with self._locked():
            return self._prune(max_age_days, max_bytes, time.time() if now is None else now, self._recover())

    def redact(self, op_id: str, path: str) -> list[str]:
        """Remove every stored copy of the version of ``path`` that ``op_id`` wrote; returns the rewritten ids."""
        with self._locked():
            live = self._recover()
            records = self._records()
            op = _pick(records, op_id)[1]
            change = next((c for c in op.changes if c.path == path), None)
            if change is None:
                raise NotFoundError(f"operation {op.id[:12]} did not change {path}")
            oid = change.after
            if not _stored(oid):
                raise UsageError(f"operation {op.id[:12]} left no stored version of {path} to redact")
            if any(held == oid for held, _ in self._index().values()):
                raise RefusedError(f"refused to redact {path} as of {op.id[:12]}: the file still holds that version "
                                   "(change or delete it first)")
            if any(oid in (e["before"], e["after"]) for j in live for e in j.entries):
                raise RefusedError(f"refused to redact {path} as of {op.id[:12]}: a running mem operation "
                                   "holds that version; try again when it has ended")

            def scrub(value: str | None) -> str | None:
                return REDACTED if value == oid else value

            rewritten = [
                (ref, old._replace(changes=[c._replace(before=scrub(c.before), after=scrub(c.after))
                                            for c in old.changes]))
                for ref, old in records
                if any(oid in (c.before, c.after) for c in old.changes)
            ]
            new_ids = self._write_ops(rewritten)
            self._gc(live, prune_now=True)
            if self._git("cat-file", "--batch-check", input=f"{oid}\n".encode()).split()[1] != b"missing":
                raise MemError(f"history: {oid[:12]} is still in the object store after redaction")
            return new_ids

    def maintain(self) -> None:
        """Once a day: prune with the default limits and let git pack what accumulated."""
        with contextlib.suppress(FileNotFoundError):
            if time.time() - os.stat(self._stamp).st_mtime < _DAY:
                return
        with self._locked():
            # Stamped first: a maintenance that fails is retried tomorrow, not on every command.
            _touch(self._stamp)
            live = self._recover()
            self._prune(MAX_AGE_DAYS, MAX_BYTES, time.time(), live)
            self._gc(live, prune_now=False)

    # -- git --

    def _git(self, *args: str, input: bytes | None = None, env: dict[str, str | None] | None = None) -> bytes:
        """Run git on the store; ``env`` adds variables (None removes one)."""
        # A memory directory not made yet (a project no client has opened) holds nothing: git is shown
        # an empty directory of the store's own instead, which it accepts where it refuses a missing path.
        work_tree = self.work_tree if os.path.isdir(self.work_tree) else self._empty_tree()
        full_env: dict[str, str | None] = dict(
            GIT_DIR=self.git_dir,
            GIT_WORK_TREE=work_tree,
            GIT_INDEX_FILE=self._index_file,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_AUTHOR_NAME="mem",
            GIT_AUTHOR_EMAIL="mem@localhost",
            GIT_COMMITTER_NAME="mem",
            GIT_COMMITTER_EMAIL="mem@localhost",
            # a path with * or [ in it is a name, never a pattern
            GIT_LITERAL_PATHSPECS="1",
            LC_ALL="C",
        )
        full_env.update(env or {})
        # From the top of the work tree git prints paths relative to it; without one it needs none.
        cwd = work_tree
        # The lock's descriptor goes to the child: a git that outlives a killed mem keeps the lock until it exits.
        fds = () if self._lock_fd is None else (self._lock_fd,)
        return _run([*_GIT_CONFIG, *args], input=input, env=full_env, cwd=cwd, pass_fds=fds)

    def _empty_tree(self) -> str:
        """An empty directory in the state dir, the work tree while the memory directory does not exist."""
        path = os.path.join(self.state_dir, "history", "empty")
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the history lock; the store exists inside."""
        os.makedirs(self._journal_dir, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd = fd
            self._ensure_store()
            # Every git that writes the index runs under this lock, so an index.lock seen now was left by a killed git.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._index_file + ".lock")
            yield
        finally:
            self._lock_fd = None
            os.close(fd)

    def _ensure_store(self) -> None:
        try:
            with open(self._exclude_file) as f:
                if f.read() == self._exclude and os.path.exists(self._attributes_file):
                    return
        except FileNotFoundError:
            # The exclude file is written last, so a store without one is new or was cut short (init is idempotent).
            self._git("init", "--bare", "--quiet", "--template=", self.git_dir, env={"GIT_WORK_TREE": None})
            _touch(self._stamp)
        os.makedirs(os.path.dirname(self._exclude_file), exist_ok=True)
        # Git hashes a work-tree file through the attributes a .gitattributes there gives it (line endings,
        # $Id$, encodings) when it compares the file with the index: an edit that changes only those would
        # be listed as no change. This file outranks every .gitattributes: a file's bytes are its content.
        atomic_write(self._attributes_file, _ATTRIBUTES)
        remove_dead_temps(self._attributes_file)
        atomic_write(self._exclude_file, self._exclude.encode())
        remove_dead_temps(self._exclude_file)  # of a process killed while it wrote the file

    def _index(self, paths: Sequence[str] | None = None) -> dict[str, tuple[str, int]]:
        """Recorded (oid, mode) by path: all of them, or just ``paths``."""
        entries = self._cached_index()
        if entries is None:
            out = self._git("ls-files", "-z", "-s", *(["--", *paths] if paths else []))
            entries = dict(_parse_staged(rec) for rec in out.split(b"\0") if rec)
            if paths is None:
                self._remember_index(entries)
        # a directory as pathspec matches what is under it
        return dict(entries) if paths is None else {p: entries[p] for p in paths if p in entries}

    def _index_around(self, path: str) -> dict[str, tuple[str, int]]:
        """Recorded (oid, mode) of ``path``, of what is under it and of each directory above it: the entries
        git drops when ``path`` is staged as a file (an index holds no file and directory of one name)."""
        parts = path.split("/")
        above = ["/".join(parts[:n]) for n in range(1, len(parts))]
        entries = self._cached_index()
        if entries is None:
            # a directory as pathspec matches what is under it
            out = self._git("ls-files", "-z", "-s", "--", path, *above)
            entries = dict(_parse_staged(rec) for rec in out.split(b"\0") if rec)
        found = {p: entries[p] for p in (path, *above) if p in entries}
        if path not in entries:  # recorded as a file, nothing can be recorded under it
            under = path + "/"
            found.update((p, state) for p, state in entries.items() if p.startswith(under))
        return found

    def _index_checksum(self) -> bytes | None:
        """The index file's trailing checksum (git's SHA-1 of all it holds), b"" when there is no index file
        (git reads none as empty); None when it cannot tell (git is asked)."""
        try:
            with open(self._index_file, "rb") as f:
                f.seek(-20, os.SEEK_END)
                tail = f.read(20)
        except FileNotFoundError:
            return b""
        except OSError:  # too short to hold a checksum: git says what is wrong with it
            return None
        return tail if len(tail) == 20 and any(tail) else None  # index.skipHash writes zeros

    def _cached_index(self) -> dict[str, tuple[str, int]] | None:
        """The index's entries without a spawn, when it holds exactly what this process last listed or staged.

        Known by content, not by time or inode: the checksum git ends the file with is a hash of all
        it holds, so the same checksum is the same entries, whoever wrote the file since.
        """
        if self._known is None:
            return None
        checksum = self._index_checksum()
        return self._known[1] if checksum == self._known[0] else None

    def _remember_index(self, entries: dict[str, tuple[str, int]]) -> None:
        """Keep ``entries`` as what the index holds now: only under the lock (no git writes it meanwhile)."""
        checksum = self._index_checksum() if self._lock_fd is not None else None
        self._known = None if checksum is None else (checksum, entries)

    def _store(self, blobs: dict[str, bytes]) -> None:
        """Write blobs with exactly these bytes, durable before the journal line that names them is.

        A few are written here as loose objects, as git itself would write them (no spawn); a batch
        larger than git's ``fastimport.unpackLimit`` goes to one pack through fast-import.
        """
        if len(blobs) > _PACK_OVER:
            self._git("fast-import", "--quiet",
                      input=b"".join(b"blob\ndata %d\n%s\n" % (len(data), data) for data in blobs.values()))
            return
        dirs = {self._loose(b"blob", data, durable=True)[1] for data in blobs.values()} - {None}
        for directory in sorted(dirs):
            fsync_dir(directory)
        if dirs:
            # and objects/ itself, whoever made the blob's directory (git prune removes empty ones, and a tree or
            # commit written without an fsync may have made it): its entry must last as long as the blob
            fsync_dir(os.path.join(self.git_dir, "objects"))

    def _loose(self, kind: bytes, data: bytes, *, durable: bool) -> tuple[str, str | None]:
        """Write one object as a loose object of the store: (its id, the directory it was added to; None: it was there).

        As git writes one: zlib of ``<kind> <size>\\0<data>`` at ``objects/<2 hex>/<38 hex>``, through a
        ``tmp_obj_`` file in that directory (one a killed process leaves is git's to prune), read-only.
        An object already there is freshened where this user may, as git does, so a prune's grace period counts
        from now.
        """
        raw = b"%s %d\0" % (kind, len(data)) + data
        oid = hashlib.sha1(raw).hexdigest()
        directory = os.path.join(self.git_dir, "objects", oid[:2])
        path = os.path.join(directory, oid[2:])
        try:
            os.utime(path)
            return oid, None
        except FileNotFoundError:
            pass
        except OSError:  # there, but not this user's to touch (a `sudo mem` wrote it): there is enough, as fast-import
            return oid, None  # takes it (the history lock, not the time, keeps what a running operation needs from gc)
        os.makedirs(directory, exist_ok=True)  # a durable object's caller fsyncs objects/ too (_store)
        tmp = os.path.join(directory, f"tmp_obj_{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        # zlib level 1: git's core.looseCompression default, best speed
        fill_and_rename(fd, tmp, path, zlib.compress(raw, 1), durable=durable)
        return oid, directory

    def _stage(self, states: dict[str, tuple[str | None, int | None]]) -> None:
        """Set the recorded state of each path to (oid, mode); (None, None) removes it."""
        before = self._cached_index()  # under the lock: what the index holds as update-index reads it
        self._known = None
        self._git("update-index", "-z", "--index-info", input=b"".join(
            os.fsencode(f"0 {_NULL_OID}\t{path}" if oid is None else f"{mode:o} {oid}\t{path}") + b"\0"
            for path, (oid, mode) in states.items()))
        if before is not None:
            after = dict(before)
            for path, (oid, mode) in states.items():
                if oid is None:
                    after.pop(path, None)
                else:
                    after[path] = (oid, mode)
            self._remember_index(after)

    def _cat(self, oids: Sequence[str]) -> dict[str, bytes]:
        """The content of each blob: read here where it is a loose object, from git (one spawn) for the rest."""
        wanted = list(dict.fromkeys(oids))
        blobs = {oid: data for oid in wanted if (data := self._read_loose(oid)) is not None}
        packed = [oid for oid in wanted if oid not in blobs]
        if not packed:
            return blobs
        out = self._git("cat-file", "--batch", input="".join(f"{oid}\n" for oid in packed).encode())
        pos = 0
        for oid in packed:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if header[1] == b"missing":
                raise NotFoundError(f"version {oid[:12]} is not in the history")
            size = int(header[2])
            blobs[oid] = out[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return blobs

    def _read_loose(self, oid: str) -> bytes | None:
        """A blob's content from its loose object, checked against its id; None when it is not one (packed,
        pruned meanwhile, damaged: git is asked, and says which)."""
        if len(oid) != 40 or oid.strip("0123456789abcdef"):
            return None
        try:
            with open(os.path.join(self.git_dir, "objects", oid[:2], oid[2:]), "rb") as f:
                raw = zlib.decompress(f.read())
        except (OSError, zlib.error):
            return None
        header, _, data = raw.partition(b"\0")
        if header != b"blob %d" % len(data) or hashlib.sha1(raw).hexdigest() != oid:
            return None
        return data

    def _mktree(self, tree: list[tuple[str, str]]) -> str:
        """A tree of (name, blob oid), its entries in git's order (names hold no '/': byte order); its oid."""
        data = b"".join(b"100644 %s\0%s" % (name.encode(), bytes.fromhex(oid)) for name, oid in sorted(tree))
        return self._loose(b"tree", data, durable=False)[0]

    def _commit_tree(self, tree: str, message: str, seconds: int) -> str:
        """A parentless commit of ``tree``, by mem, dated ``seconds`` (UTC), as ``git commit-tree`` makes it; its oid."""
        who = f"mem <mem@localhost> {seconds} +0000"
        data = f"tree {tree}\nauthor {who}\ncommitter {who}\n\n{message}".encode()
        return self._loose(b"commit", data, durable=False)[0]

    def _records(self) -> list[tuple[str, Operation]]:
        """(ref, operation) for every recorded operation, newest first (one spawn)."""
        if not os.path.exists(self._exclude_file):
            return []
        out = self._git("for-each-ref", "--sort=-refname", "--format=%(refname) %(objectname) %(contents)",
                        "refs/ops/")
        records = []
        # The message is JSON with ASCII escapes, so one record is one line (git adds a blank one after each).
        for line in out.decode().splitlines():
            if line:
                ref, oid, message = line.split(" ", 2)
                records.append((ref, _parse_message(oid, message)))
        return records

    # -- recording --

    def _record_entries(self, header: dict, entries: list[dict], journal_id: str, *,
                        interrupted: bool) -> tuple[Operation | None, Operation | None]:
        """Commit a journal's entries: the outside changes it found, then its own; returns (outside, own).

        The operations are dated by the journal's last change, not by the commit: two operations
        running at once commit in either order, and the history must list them in the order their
        changes happened (the newest change of a file is what it holds).
        """
        outside, own = _net_changes(entries)
        specs = []
        if outside:
            specs.append((OUTSIDE, [], {}, outside))
        if own:
            specs.append((header["command"], header["args"], header["meta"], own))
        changed_at = [e["at"] for e in entries if isinstance(e.get("at"), int)]  # a journal before "at": commit time
        ops = self._commit(specs, journal_id, interrupted=interrupted, at=max(changed_at, default=None))
        return (ops[0] if outside else None), (ops[-1] if own else None)

    def _commit(self, specs: list[tuple[str, list[str], dict, list[Change]]], suffix: str, *,
                interrupted: bool, at: int | None = None) -> list[Operation]:
        """Record operations (command, args, meta, changes) in this order, all or none, dated ``at`` (ns; default now)."""
        now = time.time_ns() if at is None else at
        records = [
            (f"refs/ops/{now + n:020d}-{suffix}",
             Operation("", _iso(now + n), command, list(args), changes, interrupted, meta.get("undoes"), meta))
            for n, (command, args, meta, changes) in enumerate(specs)
        ]
        ids = self._write_ops(records)
        return [op._replace(id=oid) for (_, op), oid in zip(records, ids)]

    def _write_ops(self, records: list[tuple[str, Operation]]) -> list[str]:
        """Commit each operation and point its ref at it, the refs moving in one transaction."""
        if not records:
            return []
        ids = []
        for ref, op in records:
            tree = self._mktree([(f"{n}.{side}", oid)
                                 for n, c in enumerate(op.changes)
                                 for side, oid in (("before", c.before), ("after", c.after)) if _stored(oid)])
            # dated by the ref, so rewriting an operation (redact) keeps its date
            message = json.dumps(_message(op), separators=(",", ":")) + "\n"
            ids.append(self._commit_tree(tree, message, _ref_ns(ref) // 10**9))
        self._git("update-ref", "--stdin",
                  input="".join(f"update {ref} {oid}\n" for (ref, _), oid in zip(records, ids)).encode())
        return ids

    # -- outside changes --

    def _sync(self, live: list[_JournalFile]) -> Operation | None:
        have_tree = os.path.isdir(self.work_tree)
        # One listing gives the index (H), modified (C), deleted (R) and new, not excluded, files (?).
        # Modified is judged by stat data (ctime included, which no tool can set back); an entry staged
        # with --index-info has none, and git compares its file's content instead (ie_modified), until a
        # refresh gives it stat data: run once such entries are many (_refresh_if_many).
        # Only our own exclude file: a .gitignore a user keeps in the memory directory hides nothing.
        out = self._git("ls-files", "-z", "-t", "-s",
                        *(["--modified", "--deleted", "--others", f"--exclude-from={self._exclude_file}"]
                          if have_tree else []))
        index: dict[str, tuple[str, int]] = {}
        changed: set[str] = set()
        for rec in out.split(b"\0"):
            if not rec:
                continue
            tag, rest = rec[:1], rec[2:]
            if tag == b"?":
                changed.update(self._untracked(os.fsdecode(rest)))
                continue
            path, state = _parse_staged(rest)
            if tag == b"H":
                index[path] = state
            else:
                changed.add(path)
        self._remember_index(dict(index))  # every entry is listed once as H: the whole index
        if not have_tree:
            changed = set(index)
        # a running mem process records its own writes
        changed -= {e["path"] for j in live for e in j.entries}

        changes, blobs, withheld = [], {}, []
        for path in sorted(changed):
            data, mode = _read(self.work_tree, path)
            after = None if data is None else blob_oid(data)
            before, before_mode = index.get(path, (None, None))
            if (after, mode) == (before, before_mode):
                continue  # touched, not changed
            if data is not None and self._refused(path, data):
                withheld.append(path)
                continue
            if data is not None:
                blobs[after] = data
            changes.append(Change(path, before, after, before_mode, mode))
        if not changes:
            self._refresh_if_many(have_tree)
            return None
        self._store(blobs)
        # Journaled before it is staged: a sync killed between staging and committing leaves a journal
        # the next process commits (as it does a killed mem operation's), so the change is never lost.
        meta = {"withheld": withheld} if withheld else {}
        journal_id = os.urandom(4).hex()
        journal = os.path.join(self._journal_dir, f"{journal_id}.jsonl")
        header = {"pid": os.getpid(), "pid_start": _process_start(os.getpid()), "command": OUTSIDE, "args": [],
                  "meta": meta, "started": _iso(time.time_ns())}
        with open(journal, "xb") as f:
            f.write("".join(json.dumps(line) + "\n" for line in [header, *(
                {"kind": OUTSIDE, **c._asdict()} for c in changes)]).encode())
            f.flush()
            os.fsync(f.fileno())
        fsync_dir(self._journal_dir)
        self._stage({c.path: (c.after, c.after_mode) for c in changes})
        op = self._commit([(OUTSIDE, [], meta, changes)], journal_id, interrupted=False)[0]
        os.unlink(journal)
        self._refresh_if_many(have_tree)  # the changes just staged carry no stat data either
        return op

    def _refresh_if_many(self, have_tree: bool) -> None:
        """Give stat data to the entries staged without any, once there are more than a few.

        Until then every listing reads their files (git compares their content); after, it compares stat
        data. Counted in the index file as git writes such an entry: no time, device, inode, owner or size.
        A count that is off only moves the refresh: a listing is exact with stat data or without.
        """
        if not have_tree:
            return
        try:
            with open(self._index_file, "rb") as f:
                data = f.read()
        except OSError:
            return
        if sum(data.count(pattern) for pattern in _NO_STAT) <= _REFRESH_OVER:
            return
        known = self._cached_index()
        self._known = None
        self._git("update-index", "-q", "--refresh", "--ignore-missing")
        if known is not None:
            self._remember_index(known)  # a refresh changes stat data, never what an entry records

    def _untracked(self, path: str) -> list[str]:
        """The files git reports as untracked at ``path``."""
        if not path.endswith("/"):
            return [path]
        # A nested git repository: git lists only its directory, so walk it (skipping its .git).
        found = []
        for root, dirs, files in os.walk(os.path.join(self.work_tree, path)):
            dirs[:] = [d for d in dirs if d != ".git"]
            found += [os.path.relpath(os.path.join(root, f), self.work_tree).replace(os.sep, "/") for f in files]
        return found

    def _refused(self, path: str, data: bytes) -> bool:
        return self._refuse is not None and self._refuse(path, data) is not None

    # -- journals --

    def _recover(self) -> list[_JournalFile]:
        """Commit what the journals of dead processes did, and return the journals still live."""
        journals = [_read_journal(os.path.join(self._journal_dir, name))
                    for name in sorted(os.listdir(self._journal_dir)) if name.endswith(".jsonl")]
        live = [j for j in journals if j.header is not None and not j.path.endswith(_DEAD) and _alive(j.header)]
        dead = [j for j in journals if j not in live]
        pending = [j for j in dead if j.entries]
        if pending:
            # A process killed after its refs were written but before it removed its journal: already recorded.
            out = self._git("for-each-ref", "--format=%(refname)", *(f"refs/ops/*-{j.id}" for j in pending))
            done = {ref.rsplit("-", 1)[1] for ref in out.decode().split()}
            pending = sorted((j for j in pending if j.id not in done), key=lambda j: j.header["started"])
        if pending:
            paths = sorted({e["path"] for j in pending for e in j.entries})
            index = self._index(paths)
            disk = {}
            for path in paths:
                data, mode = _read(self.work_tree, path)
                disk[path] = (None if data is None else blob_oid(data), mode)
            for j in pending:
                happened, stage = _happened(j.entries, disk, index)
                if stage:
                    self._stage(stage)
                    index.update(stage)
                self._record_entries(j.header, happened, j.id, interrupted=True)
        for j in dead:
            # a write killed between its temp file and the rename left the temp file: this journal named it
            for path in sorted({e["path"] for e in j.entries}):
                remove_dead_temps(os.path.join(self.work_tree, path))
            os.unlink(j.path)
        return live

    # -- dropping --

    def _prune(self, max_age_days: float, max_bytes: int, now: float, live: list[_JournalFile]) -> list[str]:
        records = self._records()[::-1]  # oldest first
        if not records:
            return []
        cutoff = int((now - max_age_days * _DAY) * 10**9)
        dropped = [r for r in records if _ref_ns(r[0]) < cutoff]
        kept = records[len(dropped):]
        # The store's size: every version it keeps (current and past), uncompressed.
        index = self._index()
        holders: dict[str, int] = {}
        for oid, _ in index.values():
            holders[oid] = holders.get(oid, 0) + 1
        for _, op in kept:
            for oid in _op_blobs(op):
                holders[oid] = holders.get(oid, 0) + 1
        sizes = self._sizes(list(holders))
        total = sum(sizes.values())
        # what the current files take cannot be freed by dropping history
        floor = sum(sizes[oid] for oid in {oid for oid, _ in index.values()})
        while kept and total > max(max_bytes, floor):
            record = kept.pop(0)
            dropped.append(record)
            for oid in _op_blobs(record[1]):
                holders[oid] -= 1
                if not holders[oid]:
                    total -= sizes[oid]
        if dropped:
            self._git("update-ref", "--stdin",
                      input="".join(f"delete {ref} {op.id}\n" for ref, op in dropped).encode())
            self._gc(live, prune_now=True)
        return [op.id for _, op in dropped]

    def _sizes(self, oids: list[str]) -> dict[str, int]:
        if not oids:
            return {}
        out = self._git("cat-file", "--batch-check", input="".join(f"{oid}\n" for oid in oids).encode())
        sizes = {}
        for line in out.decode().splitlines():
            oid, kind, *size = line.split()
            sizes[oid] = int(size[0]) if kind == "blob" else 0
        return sizes

    def _gc(self, live: list[_JournalFile], *, prune_now: bool) -> None:
        """Let git collect garbage, keeping what running mem processes have journaled but not yet committed."""
        pins = sorted({oid for j in live for e in j.entries for oid in (e["before"], e["after"]) if _stored(oid)})
        if pins:
            tree = self._mktree([(str(n), oid) for n, oid in enumerate(pins)])
            self._git("update-ref", _PIN_REF, tree)
        try:
            if prune_now:
                # --prune=now repacks with -a, so unreachable objects in packs go too, not only loose ones
                self._git("gc", "--prune=now", "--quiet")
            else:
                # in the foreground: a detached gc would hold the lock it inherited long after we return
                self._git("-c", "gc.auto=6700", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
        finally:
            if pins:
                self._git("update-ref", "-d", _PIN_REF)


class Journal:
    """One mem operation in progress: its writes, journaled before they happen."""

    def __init__(self, history: History, command: str, args: Sequence[str], meta: dict):
        self._history = history
        self._header = {"pid": os.getpid(), "pid_start": _process_start(os.getpid()), "command": command,
                        "args": list(args), "meta": dict(meta)}
        self._reset()

    def _reset(self) -> None:
        self._id = os.urandom(4).hex()
        self._path: str | None = None
        self._count = 0  # entries in the file, voided ones included (void lines refer to them by number)
        self._entries: list[dict] = []

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # on an exception too: what was written was written
        self.commit()

    def write(self, path: str, old: bytes | None, new: bytes | None, *, old_mode: int | None,
              new_mode: int | None, apply: Callable[[], None]) -> None:
        """Record and perform one change of ``path`` from ``old`` to ``new``.

        ``apply`` performs it (the caller's atomic rename or unlink); it runs
        under the history lock, so it must not call back into the history.
        """
        h = self._history
        old_mode = None if old is None else old_mode or REGULAR
        new_mode = None if new is None else new_mode or REGULAR
        old_oid = None if old is None else blob_oid(old)
        new_oid = None if new is None else blob_oid(new)
        with h._locked():
            h._recover()
            lines, blobs, stage = [], {}, {}
            around = h._index_around(path)
            recorded = around.pop(path, (None, None))
            if new is not None:
                for other, (oid, mode) in sorted(around.items()):
                    if _read(h.work_tree, other) == (None, None):
                        # Recorded as a file where mem now writes a directory's (or under a file's name): the editor
                        # replaced one with the other since. Staging ``path`` drops it: its deletion is history first.
                        lines.append({"kind": OUTSIDE, "path": other, "before": oid, "after": None,
                                      "before_mode": mode, "after_mode": None})
                        stage[other] = (None, None)
            if recorded != (old_oid, old_mode):
                # Changed by something else since it was recorded: that change is history too, and not ours.
                withheld = old is not None and h._refused(path, old)
                if old is not None and not withheld:
                    blobs[old_oid] = old
                old_oid = WITHHELD if withheld else old_oid
                lines.append({"kind": OUTSIDE, "path": path, "before": recorded[0], "after": old_oid,
                              "before_mode": recorded[1], "after_mode": old_mode})
            # New content holding a secret (the write path scans what it adds; a daily log appended to
            # keeps what an editor put in it) is written, and never stored: the version is withheld.
            new_withheld = new is not None and h._refused(path, new)
            if new is not None and not new_withheld:
                blobs[new_oid] = new
            lines.append({"path": path, "before": old_oid, "after": WITHHELD if new_withheld else new_oid,
                          "before_mode": old_mode, "after_mode": new_mode})
            # when, in the order the history lock gives every change of the directory: the operation's date
            at = time.time_ns()
            lines = [{**line, "at": at} for line in lines]
            h._store(blobs)
            first = self._count
            self._append(lines)
            try:
                apply()
            except BaseException:
                # Not applied: the journal forgets it, and a sync records whatever the file holds.
                self._append([{"void": n} for n in range(first, first + len(lines))])
                del self._entries[-len(lines):]
                raise
            if not new_withheld:  # a withheld version stays unrecorded, as a sync leaves one
                stage[path] = (new_oid, new_mode)
            if stage:
                h._stage(stage)

    def befores(self) -> dict[str, str | None]:
        """path -> the blob it held before this operation first changed it (None: it did not exist)."""
        out: dict[str, str | None] = {}
        for entry in self._entries:
            if entry.get("kind") != OUTSIDE:
                out.setdefault(entry["path"], entry["before"])
        return out

    def note_mtime(self, path: str, mtime_ns: int) -> None:
        """Keep the modification time ``path`` had before this operation first changed it (undo puts it back)."""
        self._header["meta"].setdefault("mtimes", {}).setdefault(path, mtime_ns)

    def commit(self) -> Operation | None:
        """Record the operation (None when it changed nothing) and end the journal."""
        if self._path is None:
            return None
        h = self._history
        with h._locked():
            h._recover()
            own = None
            if self._entries:
                try:
                    _, own = h._record_entries(self._header, self._entries, self._id, interrupted=False)
                except BaseException:
                    # Not recorded now (a full disk): the next process records it from the journal, even while
                    # this one lives on (a test, a long-running watcher), so the journal is marked dead.
                    with contextlib.suppress(OSError):
                        os.rename(self._path, self._path[:-len(".jsonl")] + _DEAD)
                    self._reset()
                    raise
            os.unlink(self._path)
        self._reset()
        with contextlib.suppress(MemError, OSError):
            h.maintain()  # the operation is recorded: a failed clean-up must not say otherwise (retried tomorrow)
        return own

    def abort(self) -> None:
        """End a journal whose job failed: nothing to record if nothing was written, else what was written."""
        self.commit()

    def _append(self, lines: list[dict]) -> None:
        """Add lines to the journal file and make them durable before anything they describe happens."""
        creating = self._path is None
        if creating:
            self._path = os.path.join(self._history._journal_dir, f"{self._id}.jsonl")
            lines = [{**self._header, "started": _iso(time.time_ns())}, *lines]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if creating else 0),
                     0o666)
        end = None
        try:
            end = os.fstat(fd).st_size
            write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            if creating:
                # Not journaled (a full disk), so nothing happens: no journal either, not even an empty one, which
                # any recovery (this process's own, at its commit) would take for a dead process's and remove.
                with contextlib.suppress(OSError):
                    os.unlink(self._path)
                self._path = None
            elif end is not None:
                # Not journaled either, and what part of it reached the file goes: a recovery reads a journal
                # up to its first torn line, so a torn line here would hide every line appended after it.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
            raise
        finally:
            os.close(fd)
        if creating:
            fsync_dir(os.path.dirname(self._path))
        entries = [line for line in lines if "path" in line]
        self._entries += entries
        self._count += len(entries)


# -- helpers --


def _net_changes(entries: list[dict]) -> tuple[list[Change], list[Change]]:
    """A journal's entries as (outside changes, own changes), one per path, no-ops dropped.

    Per path, everything up to the last outside entry is the outside change:
    the editor's version replaced whatever mem had written before it, so the
    outside change runs from the first recorded state, and mem's own change
    from the editor's version. Each path's changes then chain across the two.
    """
    spans: dict[str, tuple] = {}  # path -> (outside (before, after) or None, own (before, after) or None)
    for e in entries:
        path = e["path"]
        before, after = (e["before"], e["before_mode"]), (e["after"], e["after_mode"])
        outside, own = spans.get(path, (None, None))
        if e.get("kind") == OUTSIDE:
            start = outside[0] if outside else own[0] if own else before
            spans[path] = ((start, after), None)
        else:
            spans[path] = (outside, (own[0] if own else before, after))
    result: tuple[list[Change], list[Change]] = ([], [])
    for path in sorted(spans):
        for changes, span in zip(result, spans[path]):
            # two versions withheld for a secret look alike but are not: a write happened, so it is a change
            if span is not None and (span[0] != span[1] or span[0][0] in (WITHHELD, REDACTED)):
                (before, before_mode), (after, after_mode) = span
                changes.append(Change(path, before, after, before_mode, after_mode))
    return result


def _happened(entries: list[dict], disk: dict[str, tuple], index: dict[str, tuple]) -> tuple[list[dict], dict]:
    """The entries of a dead process's journal that took effect, and what to stage for them.

    A change was applied before it was staged, so per path the last entry whose
    result the file holds happened (the index may not know yet); failing that,
    the last one the index holds (the file changed since: a sync records it).
    Entries after that did not happen.
    """
    last: dict[str, int] = {}
    stage = {}
    for path in {e["path"] for e in entries}:
        recorded = index.get(path, (None, None))
        for target in (disk[path], recorded):
            hits = [n for n, e in enumerate(entries) if e["path"] == path and (e["after"], e["after_mode"]) == target]
            if hits:
                last[path] = hits[-1]
                if target == disk[path] and target != recorded:
                    stage[path] = target
                break
    return [e for n, e in enumerate(entries) if n <= last.get(e["path"], -1)], stage


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat field 22), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read()
        # the command name (field 2) may hold spaces and parentheses: count fields after the last ')'
        return stat_line[stat_line.rindex(b")") + 2:].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return None


def _alive(header: dict) -> bool:
    """Whether the process that wrote a journal still runs: its PID, and the same start time (PIDs are reused)."""
    if not pid_running(header["pid"]):
        return False
    started = header.get("pid_start")
    return started is None or _process_start(header["pid"]) in (None, started)


def _read_journal(path: str) -> _JournalFile:
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            break  # the last line of a process killed mid-write
    header = records[0] if records and "pid" in records[0] else None
    entries = [r for r in records[1:] if "path" in r]
    void = {r["void"] for r in records[1:] if "void" in r}
    name = os.path.basename(path)
    return _JournalFile(path, name[:-len(_DEAD if name.endswith(_DEAD) else ".jsonl")], header,
                        [e for n, e in enumerate(entries) if n not in void])


def _read(work_tree: str, relpath: str) -> tuple[bytes | None, int | None]:
    """A file of the work tree (``History.work_tree``): its content and mode as git would record them; (None, None)
    when there is no file."""
    full = os.path.join(work_tree, relpath)
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(full)), SYMLINK
        if not stat.S_ISREG(st.st_mode):
            return None, None
        with open(full, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    return data, EXECUTABLE if st.st_mode & stat.S_IXUSR else REGULAR


def _parse_staged(rec: bytes) -> tuple[str, tuple[str, int]]:
    """``<mode> <oid> <stage>\\t<path>`` from ls-files -s."""
    meta, path = rec.split(b"\t", 1)
    mode, oid, _ = meta.split()
    return os.fsdecode(path), (oid.decode(), int(mode, 8))


def _parse_message(oid: str, message: str) -> Operation:
    d = json.loads(message)
    return Operation(oid, d["time"], d["command"], d["args"], [Change(**c) for c in d["changes"]],
                     d["interrupted"], d["meta"].get("undoes"), d["meta"])


def _message(op: Operation) -> dict:
    return {"time": op.time, "command": op.command, "args": op.args, "meta": op.meta,
            "changes": [c._asdict() for c in op.changes], "interrupted": op.interrupted}


def _pick(records: list[tuple[str, Operation]], ref: str) -> tuple[str, Operation]:
    prefix = ref.lower()
    if len(prefix) < 4 or any(ch not in "0123456789abcdef" for ch in prefix):
        raise UsageError(f"not an operation id: {ref!r} (give at least 4 hex digits)")
    hits = [r for r in records if r[1].id.startswith(prefix)]
    if not hits:
        raise NotFoundError(f"no operation {ref} in the history")
    if len(hits) > 1:
        raise UsageError(f"operation id {ref} is ambiguous: " + ", ".join(op.id[:12] for _, op in hits))
    return hits[0]


def _stored(oid: str | None) -> bool:
    """Whether an oid in an operation names content the store keeps."""
    return oid is not None and oid not in (WITHHELD, REDACTED)


def _op_blobs(op: Operation) -> set[str]:
    return {oid for c in op.changes for oid in (c.before, c.after) if _stored(oid)}


def _ref_ns(ref: str) -> int:
    return int(ref.rsplit("/", 1)[1].split("-", 1)[0])


def _iso(ns: int) -> str:
    seconds, rest = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 10**6:03d}Z"


def _touch(path: str) -> None:
    with open(path, "ab"):
        pass
    os.utime(path)


# -- diff --


def _file_diff(c: Change, blobs: dict[str, bytes]) -> str:
    a, b = _quoted("a/" + c.path), _quoted("b/" + c.path)
    out = [f"diff --git {a} {b}\n"]
    if c.before is None:
        out.append(f"new file mode {c.after_mode:o}\n")
    elif c.after is None:
        out.append(f"deleted file mode {c.before_mode:o}\n")
    elif c.before_mode != c.after_mode:
        out += [f"old mode {c.before_mode:o}\n", f"new mode {c.after_mode:o}\n"]
    if c.before == c.after:
        return "".join(out)  # the mode alone changed
    old_label = "/dev/null" if c.before is None else a
    new_label = "/dev/null" if c.after is None else b
    missing = [oid for oid in (c.before, c.after) if oid in (WITHHELD, REDACTED)]
    if missing:
        out.append(f"Files {old_label} and {new_label} differ (content {missing[0]})\n")
        return "".join(out)
    old_text = _text(blobs[c.before]) if c.before else ""
    new_text = _text(blobs[c.after]) if c.after else ""
    if old_text is None or new_text is None:
        out.append(f"Binary files {old_label} and {new_label} differ\n")
        return "".join(out)
    import difflib  # only diff needs it

    for line in difflib.unified_diff(_lines(old_text), _lines(new_text), old_label, new_label):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _text(data: bytes) -> str | None:
    """The content as text, or None when git would call it binary."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    """Lines split at \\n only (str.splitlines also splits at \\r, \\f, U+2028...)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
              '"': '\\"', "\\": "\\\\"}


def _quoted(name: str) -> str:
    """A path as git prints it in a diff header: C-quoted when it holds a quote, backslash or control character."""
    if not any(ch in _C_ESCAPES or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        return name
    return '"' + "".join(
        _C_ESCAPES.get(ch) or (f"\\{ord(ch):03o}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch) for ch in name
    ) + '"'
