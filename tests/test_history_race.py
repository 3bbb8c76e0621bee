"""Undo and writers at the same time (issue #31): nothing lost, and the history agrees with the disk."""

from __future__ import annotations

import multiprocessing
import os

from mem.core.memdir.history import OUTSIDE
from mem.core.memdir.store import MemoryDir

WRITERS, SAVES, ROUNDS = 3, 8, 8


def _save(root: str, name: str) -> str:
    from mem.core.jobs.remember import RememberRequest, remember

    return remember(RememberRequest(memory=MemoryDir(root), text=f"Fact {name}.", name=name, type="project",
                             description=f"about {name}", offline=True)).operation


def _writer(root: str, w: int) -> None:
    for n in range(SAVES):
        _save(root, f"w{w}n{n}")


def _undoer(root: str) -> None:
    from mem.core.memdir import revert

    for n in range(ROUNDS):
        revert.undo(MemoryDir(root), _save(root, f"victim{n}"))


def test_undo_while_others_remember_loses_no_pointer(memdir):
    root = str(memdir)
    _save(root, "seed")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(root, w)) for w in range(WRITERS)]
    procs.append(ctx.Process(target=_undoer, args=(root,)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    index = (memdir / "MEMORY.md").read_text()
    for w in range(WRITERS):
        for n in range(SAVES):
            assert (memdir / f"w{w}n{n}.md").exists()
            assert f"(w{w}n{n}.md)" in index, f"w{w}n{n}"
    assert "victim" not in index and not list(memdir.glob("victim*"))
    memory = MemoryDir(root)
    assert memory.history.sync() is None  # the history agrees with the disk
    assert not [op for op in memory.history.operations() if op.command == OUTSIDE]  # nothing made up
