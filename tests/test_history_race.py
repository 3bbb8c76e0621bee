"""Undo and relocate while writers save (issue #31), looped: nothing lost, and the history agreeing with the disk.

Each round starts from a fresh directory; the races are probabilistic, so they run several rounds.
One interleaving they found is pinned at the end: two operations committing in the other order
than they changed MEMORY.md.
Before the fixes of issue #31, one round lost 2 pointers of 60 saves (undo) and 4-5 memories of 4-5
saved during a move (relocate), in 3 of 3 runs.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
from pathlib import Path

import pytest
from helpers.historycheck import assert_history_agrees

from mem.core.memdir.history import OUTSIDE
from mem.core.memdir.store import MemoryDir

WRITERS, SAVES, ROUNDS = 2, 6, 6
ITERATIONS = 3


def _save(root: str, name: str) -> str:
    from mem.core.jobs.remember import RememberRequest, remember

    return remember(RememberRequest(memory=MemoryDir(root), text=f"Fact {name}.", name=name, type="project",
                                    description=f"about {name}", offline=True)).operation


def _writer(root: str, w: int, prefix: str = "w") -> None:
    for n in range(SAVES):
        _save(root, f"{prefix}{w}n{n}")


def _undoer(root: str) -> None:
    from mem.core.memdir import revert

    for n in range(ROUNDS):
        revert.undo(MemoryDir(root), _save(root, f"victim{n}"))


def _run_all(procs) -> None:
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_undo_while_others_remember_loses_no_pointer(tmp_path, iteration):
    memdir = tmp_path / f"memory-{iteration}"
    memdir.mkdir()
    root = str(memdir)
    _save(root, "seed")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(root, w)) for w in range(WRITERS)]
    procs.append(ctx.Process(target=_undoer, args=(root,)))
    _run_all(procs)
    index = (memdir / "MEMORY.md").read_text()
    for w in range(WRITERS):
        for n in range(SAVES):
            assert (memdir / f"w{w}n{n}.md").exists()
            assert f"(w{w}n{n}.md)" in index, f"w{w}n{n}"
    assert "victim" not in index and not list(memdir.glob("victim*"))
    assert_history_agrees(root)
    assert not [op for op in MemoryDir(root).history.operations() if op.command == OUTSIDE]  # nothing made up


def _relocate(old: str, new: str) -> None:
    from mem.core.relocate import apply_relocation, plan_relocation

    apply_relocation(plan_relocation(old, new))


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_relocate_while_the_old_session_saves_loses_nothing(tmp_path, iteration):
    from conftest import git, write_memory

    from mem import clients

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    git("init", "-q", cwd=old)
    memory = Path(clients.resolve(project=str(old)).memory_dir)
    for n in range(4):
        write_memory(memory, f"topic_{n}.md", name=f"topic {n}", description=f"topic {n}")
    (memory / "MEMORY.md").write_text("".join(f"- [Topic {n}](topic_{n}.md) — topic {n}\n" for n in range(4)))
    shutil.move(old, new)
    new_memory = Path(clients.resolve(project=str(new)).memory_dir)
    write_memory(new_memory, "project_new.md", name="new", description="written after the move", type="project")
    (new_memory / "MEMORY.md").write_text("- [New](project_new.md) — written after the move\n")
    ctx = multiprocessing.get_context("fork")
    # the agent, still in the old session, saves while the move runs
    procs = [ctx.Process(target=_writer, args=(str(memory), w, "late")) for w in range(WRITERS)]
    procs.append(ctx.Process(target=_relocate, args=(str(old), str(new))))
    _run_all(procs)
    dirs = [d for d in (memory, new_memory) if d.exists()]
    for w in range(WRITERS):
        for n in range(SAVES):
            name = f"late{w}n{n}.md"
            home = [d for d in dirs if (d / name).exists()]
            assert len(home) == 1, (name, home)  # in one directory, not lost, not doubled
            assert f"({name})" in (home[0] / "MEMORY.md").read_text(), name  # with its pointer there
    for n in range(4):
        assert (new_memory / f"topic_{n}.md").exists() and f"(topic_{n}.md)" in (new_memory / "MEMORY.md").read_text()
    for d in dirs:
        assert_history_agrees(str(d))


def _hold_open(root: str, wrote, go) -> None:
    memory = MemoryDir(root)
    with memory.operation("remember", ["slow"]):
        memory.update_index(lambda old: old + "- [Slow](slow.md) — committed last\n")
        wrote.set()
        assert go.wait(60)  # the operation commits only after the other one has changed the index and committed


def _after_it(root: str, wrote, go) -> None:
    assert wrote.wait(60)
    memory = MemoryDir(root)
    with memory.operation("remember", ["quick"]):
        memory.update_index(lambda old: old + "- [Quick](quick.md) — changed the index second, committed first\n")
    go.set()


def test_operations_that_commit_out_of_order_are_listed_in_the_order_they_changed_the_files(tmp_path):
    # The race above, pinned: a writer's operation commits (spawning git) after it let go of the index
    # lock, so another writer's later change of MEMORY.md can be committed first. Dated by its commit,
    # the slow operation was listed as the newest change of MEMORY.md while the disk held the quick one's
    # (the race test failed 2 of 7 runs at load 5), and `mem restore MEMORY.md --at 0s` put back an index
    # without the quick memory's pointer.
    from mem.core.memdir.history import blob_oid
    from mem.core.memdir.revert import version_at

    root = str(tmp_path / "memory")
    os.mkdir(root)
    MemoryDir(root).write("MEMORY.md", "- [Seed](seed.md) — first\n")
    ctx = multiprocessing.get_context("fork")
    wrote, go = ctx.Event(), ctx.Event()
    _run_all([ctx.Process(target=_hold_open, args=(root, wrote, go)), ctx.Process(target=_after_it, args=(root, wrote, go))])
    history = MemoryDir(root).history
    assert [op.args for op in history.operations("MEMORY.md")][:2] == [["quick"], ["slow"]]
    assert version_at(history, "MEMORY.md", "0s")[0] == blob_oid((tmp_path / "memory" / "MEMORY.md").read_bytes())
    assert_history_agrees(root)
