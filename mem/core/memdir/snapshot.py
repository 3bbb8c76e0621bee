"""Snapshots of a memory directory, so destructive jobs can be undone byte for byte.

A snapshot is a copy of every file under the memory directory (bytes, mode,
mtime; symbolic links kept as links) in the state directory, never in the
memory directory itself. ``restore`` makes the memory directory identical to
a snapshot again: files written since are put back, files created since are
removed. The dream lock is left alone in both directions: its mtime is the
time of the last consolidation, not memory content.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass

from mem.core.errors import NotFoundError
from mem.core.memdir.layout import tree_files

@dataclass(frozen=True)
class Snapshot:
    id: str
    path: str  # the snapshot's directory; the copy is in path/tree
    command: str
    created: str  # ISO UTC
    files: int

    def as_dict(self) -> dict:
        return {"id": self.id, "path": self.path, "command": self.command, "created": self.created, "files": self.files}


@dataclass(frozen=True)
class Changes:
    created: list[str]
    updated: list[str]
    deleted: list[str]

    def __bool__(self) -> bool:
        return bool(self.created or self.updated or self.deleted)

    def as_dict(self) -> dict:
        return {"created": self.created, "updated": self.updated, "deleted": self.deleted}


def snapshots_dir(memory_dir: str) -> str:
    from mem.core.memdir.state import state_dir

    return os.path.join(state_dir(memory_dir, create=False), "snapshots")


@contextlib.contextmanager
def scratch_copy(root: str, prefix: str) -> Iterator[str]:
    """A throwaway copy of ``root`` for a dry run: its path inside a new temporary directory.

    Removed afterwards, with the state directory that index locks taken on it made.
    """
    import tempfile

    from mem.core.memdir.state import state_dir

    scratch = tempfile.mkdtemp(prefix=prefix)
    work = os.path.join(scratch, "memory")
    try:
        copy_tree(root, work)
        yield work
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(state_dir(work, create=False), ignore_errors=True)


def _copy(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
        st = os.lstat(src)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    else:
        shutil.copy2(src, dst)


def copy_tree(src: str, dst: str) -> None:
    """Copy a memory directory's files (bytes, mode, mtime, links as links) to ``dst``."""
    for rel, full in tree_files(src).items():
        _copy(full, os.path.join(dst, rel))
    os.makedirs(dst, exist_ok=True)


def take(memory_dir: str, command: str, *, keep: int | None = 20) -> Snapshot:
    """Copy the memory directory into a new snapshot; keep only the newest ``keep``."""
    base = snapshots_dir(memory_dir)
    os.makedirs(base, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() // 1000 % 1_000_000:06d}Z"
    sid = f"{stamp}-{re.sub(r'[^a-z0-9]+', '-', command.lower()).strip('-') or 'snapshot'}"
    work = os.path.join(base, "." + sid + ".partial")
    files = tree_files(memory_dir)
    copy_tree(memory_dir, os.path.join(work, "tree"))
    meta = {"id": sid, "command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "memory_dir": memory_dir, "files": len(files)}
    with open(os.path.join(work, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
    final = os.path.join(base, sid)
    os.rename(work, final)  # a snapshot exists whole or not at all
    if keep is not None:
        prune(memory_dir, keep)
    return Snapshot(sid, final, command, meta["created"], len(files))


def list_snapshots(memory_dir: str) -> list[Snapshot]:
    """Complete snapshots, newest first."""
    base = snapshots_dir(memory_dir)
    try:
        names = sorted((n for n in os.listdir(base) if not n.startswith(".")), reverse=True)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(base, name, "meta.json"), encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError):
            continue
        out.append(Snapshot(name, os.path.join(base, name), meta.get("command", "?"), meta.get("created", "?"), meta.get("files", 0)))
    return out


def find(memory_dir: str, snapshot_id: str | None = None) -> Snapshot:
    snaps = list_snapshots(memory_dir)
    if not snaps:
        raise NotFoundError(f"no snapshots of {memory_dir}")
    if snapshot_id is None:
        return snaps[0]
    for s in snaps:
        if s.id == snapshot_id or s.id.startswith(snapshot_id):
            return s
    raise NotFoundError(f"no snapshot {snapshot_id!r} of {memory_dir}")


def prune(memory_dir: str, keep: int) -> list[str]:
    removed = []
    for s in list_snapshots(memory_dir)[max(keep, 0):]:
        shutil.rmtree(s.path, ignore_errors=True)
        removed.append(s.id)
    return removed


def _same(a: str, b: str) -> bool:
    if os.path.islink(a) or os.path.islink(b):
        return os.path.islink(a) and os.path.islink(b) and os.readlink(a) == os.readlink(b)
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def compare(old_root: str, new_root: str) -> Changes:
    old, new = tree_files(old_root), tree_files(new_root)
    return Changes(
        created=sorted(set(new) - set(old)),
        updated=sorted(r for r in set(old) & set(new) if not _same(old[r], new[r])),
        deleted=sorted(set(old) - set(new)),
    )


def unified_diff(old_root: str, new_root: str) -> str:
    """A unified diff of two trees (text files; binary ones are named only)."""
    old, new = tree_files(old_root), tree_files(new_root)
    chunks = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a and b and _same(a, b):
            continue
        a_lines, b_lines = _lines(a), _lines(b)
        if a_lines is None or b_lines is None:
            chunks.append(f"Binary files {'a/' + rel if a else '/dev/null'} and {'b/' + rel if b else '/dev/null'} differ\n")
            continue
        chunks.extend(difflib.unified_diff(a_lines, b_lines, fromfile=f"a/{rel}" if a else "/dev/null",
                                           tofile=f"b/{rel}" if b else "/dev/null"))
        if chunks and not chunks[-1].endswith("\n"):
            chunks[-1] += "\n\\ No newline at end of file\n"
    return "".join(chunks)


def _lines(path: str | None) -> list[str] | None:
    if path is None:
        return []
    if os.path.islink(path):
        return [f"-> {os.readlink(path)}\n"]
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def restore(memory_dir: str, snapshot: Snapshot) -> Changes:
    """Make the memory directory identical to ``snapshot``; return what changed."""
    from mem.core.memdir.store import MemoryDir

    tree = os.path.join(snapshot.path, "tree")
    store = MemoryDir(memory_dir)
    os.makedirs(memory_dir, exist_ok=True)
    changes = compare(memory_dir, tree)  # from the current state to the snapshot
    current = tree_files(memory_dir)
    saved = tree_files(tree)
    for rel in changes.created:  # present in the snapshot, missing now
        _put(store, memory_dir, rel, saved[rel])
    for rel in changes.updated:
        if os.path.islink(current[rel]) or os.path.islink(saved[rel]):
            os.unlink(current[rel])
        _put(store, memory_dir, rel, saved[rel])
    for rel in changes.deleted:  # created since the snapshot
        os.unlink(current[rel])
    for rel, src in saved.items():  # mtimes too: recall orders by them
        dst = os.path.join(memory_dir, rel)
        if os.path.lexists(dst):
            st = os.lstat(src)
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    _remove_empty_dirs(memory_dir, tree)
    return changes


def _put(store, memory_dir: str, rel: str, src: str) -> None:
    dst = os.path.join(memory_dir, rel)
    if os.path.islink(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.symlink(os.readlink(src), dst)
        return
    with open(src, "rb") as fh:
        data = fh.read()
    # The user's own earlier bytes: contained and atomic, but not re-judged for secrets.
    store.write(rel, data, scan=False)
    os.chmod(dst, os.stat(src).st_mode & 0o7777)


def _remove_empty_dirs(memory_dir: str, tree: str) -> None:
    for dirpath, _dirnames, _filenames in os.walk(memory_dir, topdown=False):
        if dirpath == memory_dir or os.listdir(dirpath):
            continue
        rel = os.path.relpath(dirpath, memory_dir)
        if not os.path.isdir(os.path.join(tree, rel)):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
