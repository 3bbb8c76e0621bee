"""Whether a memory directory's history agrees with its disk, as the next mem command would find it.

Example: assert_history_agrees("/m") passes when nothing on disk is unrecorded and every file
holds what its newest recorded change left in it (and no recorded file is missing).
"""

from __future__ import annotations

import os

from mem.core.memdir.history import blob_oid
from mem.core.memdir.layout import TEMP_FILE
from mem.core.memdir.store import MemoryDir


def disk_oids(root: str) -> dict[str, str]:
    """relpath -> blob oid of every file the history records (the dream lock and temp files are not)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name == ".consolidate-lock" or TEMP_FILE.match(name):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root).replace(os.sep, "/")] = blob_oid(f.read())
    return out


def assert_history_agrees(root: str) -> None:
    history = MemoryDir(str(root)).history
    assert history.sync() is None, "a change on disk the history had not recorded"
    newest: dict[str, str | None] = {}
    for op in reversed(history.operations()):  # oldest first
        for c in op.changes:
            newest[c.path] = c.after
    assert {p: o for p, o in newest.items() if o is not None} == disk_oids(str(root))
