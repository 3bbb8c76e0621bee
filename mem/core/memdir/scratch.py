"""Scratch copies of a memory directory for dry runs, and the comparison of two trees.

A dry run (``mem dream --dry-run``, ``mem forget --dry-run``) does the whole job on a
throwaway copy (bytes, mode, mtime; symbolic links kept as links) and reports the
difference as a unified diff; the memory directory itself is never touched.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mem.core.memdir.layout import tree_files

if TYPE_CHECKING:
    from mem.core.memdir.store import MemoryDir


@dataclass(frozen=True)
class Changes:
    created: list[str]
    updated: list[str]
    deleted: list[str]

    def __bool__(self) -> bool:
        return bool(self.created or self.updated or self.deleted)

    def as_dict(self) -> dict:
        return {"created": self.created, "updated": self.updated, "deleted": self.deleted}


@contextlib.contextmanager
def scratch_copy(memory: MemoryDir, prefix: str) -> Iterator[MemoryDir]:
    """A throwaway copy of ``memory`` for a dry run: the MemoryDir of the copy, inside a new temporary directory.

    Removed afterwards, with the state directory that index locks taken on it made.
    """
    import tempfile

    from mem.core.memdir.state import state_dir
    from mem.core.memdir.store import MemoryDir

    scratch = tempfile.mkdtemp(prefix=prefix)
    work = os.path.join(scratch, "memory")
    copy = MemoryDir(work)
    try:
        copy_tree(memory.root, work)
        yield copy
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(state_dir(copy, create=False), ignore_errors=True)


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
    from mem.core.memdir.files import read_bytes

    data = read_bytes(path)
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None
