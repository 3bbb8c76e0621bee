"""The memory directory: the one write path, and locks.

Every file ``mem`` writes inside a memory directory goes through
``MemoryDir.write`` (or ``delete``): the target is resolved and contained
(no NUL, no ``..`` escape, no absolute path elsewhere, no symlink or dangling
link leading out, no control character in the name), it must be a memory file
(``layout.foreign_reason``: no ``.git/``, script or dotfile lands, by any route),
the content is scanned for secrets, and the bytes land without a run bit by temp file + fsync + rename in the same
directory. Read-modify-write of MEMORY.md happens under a lock kept in the
state directory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence

from mem.core.errors import ForeignFileError, LockedError, MemError, PathEscapeError, PinnedError, SecretError
from mem.core.memdir.files import atomic_write, fsync_dir, within, read_bytes, read_text
from mem.core.memdir.layout import INDEX_NAME, PINNED_REASON, TEAM_DIR, TEMP_FILE, foreign_reason, is_pinned
from mem.core.record import Record

STALE_TEMP_AFTER = 600


class WriteResult(Record):
    path: str  # absolute path written (symlinks inside the root resolved)
    relpath: str  # relative to the memory directory, with '/' separators
    created: bool
    changed: bool  # False when the content on disk was already identical


class MemoryDir:
    """A memory directory on disk."""

    def __init__(self, root: str | os.PathLike):
        root = os.fspath(root)
        if "\0" in root:
            raise PathEscapeError("memory directory path contains a NUL byte")
        #: The path as it was given (Claude Code's form ends with one separator): what output shows.
        self.spelled = root
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(self.root)
        self._state = None
        self._history = None
        self.last_operation = None  # the Operation the last ``operation`` block recorded, or None

    @property
    def state(self):
        """This directory's StateDir: cursors, locks, caches and history, kept outside it."""
        if self._state is None:
            from mem.core.memdir.state import StateDir

            self._state = StateDir(self)
        return self._state

    def __repr__(self) -> str:
        return f"MemoryDir({self.root!r})"

    @property
    def index_path(self) -> str:
        return os.path.join(self.root, INDEX_NAME)

    @property
    def team_dir(self) -> str:
        """Where this directory's team tier is (``team/``), whether or not it exists."""
        return os.path.join(self.root, TEAM_DIR)

    @property
    def team_enabled(self) -> bool:
        """Whether this directory holds a team tier: ``team/`` is a directory (a symbolic link does not count)."""
        path = self.team_dir
        return os.path.isdir(path) and not os.path.islink(path)

    # -- containment --

    def resolve(self, target: str) -> str:
        """The real path a write to ``target`` would touch, or PathEscapeError.

        ``target`` is relative to the memory directory or absolute inside it.
        Links inside the directory that point inside it are followed; links
        out of it, dangling links, and ``..`` escapes are refused.
        """
        if not target or "\0" in target:
            raise PathEscapeError(f"refused path {target!r}: empty or contains a NUL byte")
        if os.path.isabs(target):
            candidate = os.path.normpath(target)
            if not (within(candidate, os.path.normpath(self.root)) or within(candidate, self.real_root)):
                raise PathEscapeError(f"refused path {target}: outside the memory directory {self.root}")
        else:
            candidate = os.path.normpath(os.path.join(self.root, target))
            if not within(candidate, os.path.normpath(self.root)):
                raise PathEscapeError(f"refused path {target}: it escapes the memory directory")
        if os.path.islink(candidate) and not os.path.exists(candidate):
            raise PathEscapeError(f"refused path {target}: it is a dangling symbolic link")
        real = os.path.realpath(candidate)
        if not within(real, self.real_root) or real == self.real_root:
            raise PathEscapeError(f"refused path {target}: it resolves outside the memory directory")
        if os.path.isdir(real):
            raise PathEscapeError(f"refused path {target}: it is a directory")
        if os.path.exists(real) and not os.path.isfile(real):
            raise PathEscapeError(f"refused path {target}: it is not a regular file")
        return real

    # -- the one write path --

    def write(self, target: str, content: str | bytes, *, scan: bool = True, restamp: bool = True) -> WriteResult:
        """Atomically write ``content`` to ``target`` inside the memory directory.

        ``restamp`` False writes the bytes as given even where the file keeps
        Claude Code's ``metadata.modified`` (a restore from history, a teammate's file).
        """
        from mem.core.guards.control import has_control, printable

        if has_control(os.path.relpath(target, self.root) if os.path.isabs(target) else target):
            # A newline in a name would split the index line that points to it.
            raise PathEscapeError(f"refused path {printable(target)}: its name contains a control character")
        real = self.resolve(target)
        data = content.encode("utf-8") if isinstance(content, str) else content
        rel = os.path.relpath(real, self.real_root).replace(os.sep, "/")
        for name in {rel, _lexical_rel(target, self)} - {None}:  # a link inside may not rename a file into one
            why = foreign_reason(name)
            if why is not None:
                raise ForeignFileError(f"refused to write {printable(name)}: {why}")
            if is_pinned(name):  # also through a link into pinned/, or from pinned/ elsewhere
                raise PinnedError(f"refused to write {printable(name)}: {PINNED_REASON}")
        if scan:
            from mem.core.guards.secrets import first_secret

            text = content if isinstance(content, str) else data.decode("utf-8", "replace")
            found = first_secret(text)
            if found is not None:
                raise SecretError(rel, found.rule_id, found.label)
        try:
            old = read_bytes(real)
            created = False
        except FileNotFoundError:
            old, created = None, True
        if old == data:
            return WriteResult(real, rel, created=False, changed=False)
        if restamp and rel.endswith(".md"):
            from mem.core.memdir.frontmatter import keep_modified_true  # Claude Code's metadata.modified

            data = keep_modified_true(old, data)
        parent = os.path.dirname(real)
        self._makedirs(parent)

        def apply() -> None:
            # again under the history lock: a relocate may have removed the emptied directory meanwhile
            self._makedirs(parent)
            atomic_write(real, data, plain=True)

        self._record(rel, real, old, data, apply)
        return WriteResult(real, rel, created=created, changed=True)

    def delete(self, target: str, *, allow_index: bool = False) -> str:
        """Remove a file; a symbolic link is removed itself, never the file it points at.

        An index is never deleted, except by an undo of the operation that created it (``allow_index``).
        """
        lexical = os.path.normpath(target if os.path.isabs(target) else os.path.join(self.root, target))
        if "\0" not in target and os.path.islink(lexical):
            parent = os.path.realpath(os.path.dirname(lexical))
            if not within(parent, self.real_root):
                raise PathEscapeError(f"refused path {target}: it is outside the memory directory")
            if os.path.basename(lexical) == INDEX_NAME and not allow_index:
                raise PathEscapeError(f"refused to delete {target}: it is a memory index")
            rel = os.path.relpath(os.path.join(parent, os.path.basename(lexical)), self.real_root).replace(os.sep, "/")
            if is_pinned(rel):
                raise PinnedError(f"refused to delete {target}: {PINNED_REASON}")
            self._record(rel, lexical, os.fsencode(os.readlink(lexical)), None, lambda: _unlink(lexical), link=True)
            return lexical
        real = self.resolve(target)
        if os.path.basename(real) == INDEX_NAME and not allow_index:
            raise PathEscapeError(f"refused to delete {target}: it is a memory index")
        rel = os.path.relpath(real, self.real_root).replace(os.sep, "/")
        if is_pinned(rel) or is_pinned(_lexical_rel(target, self) or ""):
            raise PinnedError(f"refused to delete {target}: {PINNED_REASON}")
        old = read_bytes(real)
        self._record(rel, real, old, None, lambda: _unlink(real))
        return real

    # -- history --

    @property
    def history(self):
        """This directory's History (mem.core.memdir.history), kept in its state directory."""
        if self._history is None:
            from mem.core.errors import RefusedError
            from mem.core.memdir.history import History
            from mem.core.memdir.layout import DREAM_LOCK

            state = os.path.realpath(self.state.path)
            if within(state, self.real_root):
                raise RefusedError(f"the state directory {self.state.path} is inside the memory directory "
                                   f"{self.root}; point MEM_STATE_DIR elsewhere")
            self.state.ensure()  # 0700: the history holds copies of every memory
            self._history = History(self.state.history, self.real_root, exclude=("/" + DREAM_LOCK, ".*.tmp"),
                                    refuse=_secret_in)
        return self._history

    @contextlib.contextmanager
    def operation(self, command: str, args: Sequence[str] = (), *, meta: dict | None = None,
                  event: bool = True) -> Iterator[None]:
        """Record every write inside the block as one operation of the history (``last_operation`` after).

        Nested blocks on the same directory join the outer operation. Without git on PATH
        the writes still happen, unrecorded; ``mem history`` says why. A block that raises
        still records what it wrote (``revert.take_back`` undoes it where the job wants).
        When the operation commits with changes, its line in the audit trail (``mem status``)
        is written too, naming the operation, unless the caller writes a fuller one itself
        (``event=False``: the jobs, with their model's usage).
        """
        if self.real_root in _OPEN:
            yield
            return
        self.last_operation = None
        history = self.history
        if not history.available():
            yield
            return
        try:
            history.sync()  # what changed outside mem since it last looked comes first, as its own operation
        except MemError as exc:
            from mem.core.memdir.history import HistoryUnavailable

            if isinstance(exc, HistoryUnavailable) or not history.rebase_if_damaged(exc):
                raise
            history.sync()  # a damaged store is set aside: writes go on, history re-based on the files
        journal = history.begin(command, list(args), meta=meta)
        _OPEN[self.real_root] = journal
        started = time.monotonic()
        try:
            yield
        finally:
            del _OPEN[self.real_root]
            self.last_operation = journal.commit()
            if event and self.last_operation is not None and self.last_operation.changes:
                record_operation(self, self.last_operation, time.monotonic() - started)

    def pending(self) -> dict[str, bytes | None]:
        """What each file the operation in progress changed held before it (None: it did not exist).

        Files whose old content the history withheld (a secret) are left out.
        """
        from mem.core.memdir.history import REDACTED, WITHHELD

        journal = _OPEN.get(self.real_root)
        if journal is None:
            return {}
        return {path: None if oid is None else self.history.read_blob(oid)
                for path, oid in journal.befores().items() if oid not in (WITHHELD, REDACTED)}

    def _record(self, rel: str, path: str, old: bytes | None, new: bytes | None, apply: Callable[[], None],
                *, link: bool = False) -> None:
        """Carry out one change with ``apply``, as part of the operation in progress, if there is one."""
        journal = _OPEN.get(self.real_root)
        if journal is None:
            apply()
            return
        from mem.core.memdir.history import SYMLINK

        old_mode = None
        if old is not None:
            try:
                st = os.lstat(path) if link else os.stat(path)
                old_mode = SYMLINK if link else _git_mode(st.st_mode)
                journal.note_mtime(rel, st.st_mtime_ns)
            except OSError:
                pass
        new_mode = None if new is None else REGULAR_MODE  # the write path clears run bits (atomic_write plain)
        journal.write(rel, old, new, old_mode=old_mode, new_mode=new_mode, apply=apply)

    def _makedirs(self, parent: str) -> None:
        # Containment was checked on the resolved path; create what is missing.
        os.makedirs(parent, exist_ok=True)
        if not within(os.path.realpath(parent), self.real_root):
            raise PathEscapeError(f"refused directory {parent}: outside the memory directory")

    def sweep_temp_files(self, older_than: float = STALE_TEMP_AFTER) -> list[str]:
        """Remove temp files a killed writer left behind; the relpaths removed."""
        return sweep_temp_files(self.root, older_than)

    # -- MEMORY.md read-modify-write --

    @contextlib.contextmanager
    def index_lock(self) -> Iterator[None]:
        with file_lock(self.state.index_lock):
            yield

    def update_index(self, change: Callable[[str | None], str | None], *, name: str = INDEX_NAME) -> WriteResult | None:
        """Apply ``change(old_text) -> new_text`` to an index under the index lock.

        ``old_text`` is None when the file does not exist; returning None (or
        the same text) writes nothing.
        """
        with self.index_lock():
            path = os.path.join(self.root, name)
            try:
                old = read_text(path, newline="")  # a FIFO index is refused, not waited on
            except FileNotFoundError:
                old = None
            new = change(old)
            if new is None or new == old:
                return None
            return self.write(name, new)


#: The operation in progress on each memory directory (by real path) in this process.
_OPEN: dict = {}


def record_operation(memory: MemoryDir, op, duration: float | None = None, detail: dict | None = None) -> None:
    """The audit trail's line for a recorded operation: what it created, updated and deleted, and its id."""
    from mem.core.memdir import events

    by: dict[str, list[str]] = {"created": [], "updated": [], "deleted": []}
    for c in op.changes:
        by["created" if c.before is None else "deleted" if c.after is None else "updated"].append(c.path)
    events.record(memory, op.command, **by, duration=duration,
                  detail={**(detail or {}), "operation": op.id, **({"args": list(op.args)} if op.args else {})})


def _lexical_rel(target: str, memory: MemoryDir) -> str | None:
    """``target`` relative to ``memory``'s root as spelled (links not followed), or None when it is not under it."""
    path = os.path.normpath(target if os.path.isabs(target) else os.path.join(memory.root, target))
    rel = os.path.relpath(path, memory.root)
    return None if rel.startswith("..") else rel.replace(os.sep, "/")


REGULAR_MODE = 0o100644


def _git_mode(st_mode: int) -> int:
    return 0o100755 if st_mode & 0o100 else 0o100644


def _secret_in(relpath: str, data: bytes) -> str | None:
    """Why content must never enter the history, or None."""
    from mem.core.guards.secrets import first_secret

    found = first_secret(data.decode("utf-8", "replace"))
    return None if found is None else f"{found.label} (rule {found.rule_id})"


def _unlink(path: str) -> None:
    os.unlink(path)
    fsync_dir(os.path.dirname(path))


def sweep_temp_files(directory: str, older_than: float = STALE_TEMP_AFTER, *, recursive: bool = True) -> list[str]:
    """Remove the temp files ``atomic_write`` calls that were killed left under ``directory`` (a memory
    directory's root, the manifest cache's folder); their relpaths.

    A write takes milliseconds, so a temp file older than ``older_than``
    seconds belongs to a process that died between write and rename.
    """
    import time

    removed = []
    limit = time.time() - older_than
    for dirpath, _dirnames, filenames in os.walk(directory):
        for name in filenames:
            if not TEMP_FILE.match(name):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                if st.st_mtime < limit and not os.path.islink(path):
                    os.unlink(path)
                    removed.append(os.path.relpath(path, directory).replace(os.sep, "/"))
            except OSError:
                continue
        if not recursive:
            break
    return removed


@contextlib.contextmanager
def file_lock(path: str, *, wait: bool = True) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (released when the process dies)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockedError(f"{path} is locked by another mem process") from exc
            raise MemError(f"cannot lock {path}: {exc.strerror}") from exc
        yield
    finally:
        os.close(fd)
