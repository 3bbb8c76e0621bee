"""Killed at every step (issue #31 item 5): undo, undo ID, remember, forget and relocate, each killed
(os._exit, as kill -9 would) just before its Nth file-system step for every N until it completes.

After each kill the command is run again; it must end where an unkilled run ends: nothing lost,
the history agreeing with the disk (every file as its newest recorded change left it, nothing
unrecorded), no temp file or journal left behind. That holds for a plain ``mem undo`` after every
kill too, even one that landed after the undo was recorded: a plain undo never takes back an undo.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.historycheck import assert_history_agrees
from helpers.inproc import run_in_process
from helpers.killpoint import KILLED, killed_at, steps

from mem.core.memdir.history import OUTSIDE
from mem.core.memdir.layout import TEMP_FILE
from mem.core.memdir.store import MemoryDir


def _mem(*argv: str, cwd: str | None = None):
    r = run_in_process(list(argv), env=dict(os.environ), cwd=cwd)
    return r


def _tree(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".consolidate-lock"}


def _reset(template: Path, live: list[Path]) -> None:
    for n, path in enumerate(live):
        shutil.rmtree(path, ignore_errors=True)
        if (template / str(n)).exists():
            shutil.copytree(template / str(n), path, symlinks=True)


def _save(template: Path, live: list[Path]) -> None:
    for n, path in enumerate(live):
        if path.exists():
            shutil.copytree(path, template / str(n), symlinks=True)


def _clean_and_agreeing(memdir: Path, state: Path) -> None:
    """No temp file or journal left; the history's newest change of every file is what the disk holds.

    Looked at as the next mem command would, once it has recovered what a killed process left.
    """
    if memdir.exists():
        assert MemoryDir(str(memdir)).history.sync() is None  # nothing on disk the history does not know
    strays = [p for root in (memdir, state) if root.exists() for p in root.rglob("*")
              if TEMP_FILE.match(p.name) or (p.name == "index.lock" and p.parent.name == "history.git")
              or (p.parent.name == "journal" and p.is_file())]
    assert not strays, strays
    if memdir.exists():
        assert_history_agrees(str(memdir))


def _kill_everywhere(argv: list[str], live: list[Path], memdir: Path, state: Path, template: Path, *,
                     retry: list[str] | None = None, cwd: str | None = None,
                     ok_again: tuple[int, ...] = (0,)) -> int:
    """Kill ``argv`` at every step; after each, run ``retry`` (default: ``argv``) and compare with an unkilled run."""
    code, total = steps(argv, dict(os.environ), cwd)
    assert code == 0 and total > 5, (code, total)
    print(f"{' '.join(argv[:2])}: killed at each of {total} steps")
    compared = live[:1]  # the memory (and transcripts): the state directory's bytes are the history's own business
    want = [_tree(p) for p in compared]
    _clean_and_agreeing(memdir, state)
    for n in range(1, total + 1):
        _reset(template, live)
        assert killed_at(n, argv, dict(os.environ), cwd) == KILLED, n
        r = _mem(*(retry or argv), cwd=cwd)
        assert r.returncode in ok_again, (n, r.stderr)
        assert [_tree(p) for p in compared] == want, f"killed at step {n} of {total}: not the unkilled end state"
        _clean_and_agreeing(memdir, state)
    return total


@pytest.fixture
def world(memdir, tmp_path):
    """Three saved memories and an agent's own note (file and pointer), kept as a template to start each run from."""
    state = Path(os.environ["MEM_STATE_DIR"])
    for name in ("Tabs", "Reviews", "Deploy"):
        r = _mem("remember", "--type", "feedback", "--name", name, "--description", f"about {name}", f"{name} fact.")
        assert r.returncode == 0, r.stderr
    (memdir / "agent.md").write_text("---\nname: agent\ndescription: the agent's own\ntype: user\n---\nNote.\n")
    with open(memdir / "MEMORY.md", "a") as f:
        f.write("- [Agent](agent.md) — the agent's own\n")
    template = tmp_path / "template"
    live = [memdir, state]
    _save(template, live)
    return memdir, state, template, live


def test_undo_killed_at_every_step_is_finished_by_undo_again(world):
    memdir, state, template, live = world
    target = next(op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE).id
    total = _kill_everywhere(["undo"], live, memdir, state, template)
    assert not (memdir / "deploy.md").exists() and "(agent.md)" in (memdir / "MEMORY.md").read_text()
    assert total > 20
    undo = next(op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE)
    assert undo.undoes == target  # the last run (killed at the last step, then retried) undid the same one


def test_a_plain_undo_retried_after_a_kill_once_the_undo_is_recorded_does_not_take_it_back(world):
    """Issue #31 item 5: killed after the undo was recorded, `mem undo` again took back the undo (a redo)."""
    memdir, state, template, live = world
    target = next(op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE).id
    total = steps(["undo"], dict(os.environ))[1]
    _reset(template, live)
    assert killed_at(total, ["undo"], dict(os.environ)) == KILLED  # the last step: after the undo is recorded
    undone = _tree(memdir)
    newest = next(op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE)
    assert newest.undoes == target and not newest.interrupted and not (memdir / "deploy.md").exists()
    r = _mem("undo")
    assert r.returncode == 0 and "already an undo" in r.stderr, r.stderr
    assert _tree(memdir) == undone


def test_undo_id_killed_at_every_step_is_finished_by_undo_id_again(world):
    memdir, state, template, live = world
    ops = [op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE]
    target = ops[1].id  # Reviews: not the newest
    _kill_everywhere(["undo", target[:12]], live, memdir, state, template)
    index = (memdir / "MEMORY.md").read_text()
    assert not (memdir / "reviews.md").exists() and "(deploy.md)" in index and "(agent.md)" in index


def test_remember_killed_at_every_step_is_finished_by_remember_again(world):
    memdir, state, template, live = world
    argv = ["remember", "--type", "user", "--name", "New", "--description", "a new one", "A new fact."]
    # once it went through, remember again refuses to replace new.md (exit 4)
    _kill_everywhere(argv, live, memdir, state, template, ok_again=(0, 4))
    assert "(new.md)" in (memdir / "MEMORY.md").read_text()


def test_forget_killed_at_every_step_is_finished_by_forget_again(world):
    memdir, state, template, live = world
    argv = ["forget", "--yes", "--offline", "tabs.md"]
    # once it went through, forget again finds nothing to forget (exit 1)
    _kill_everywhere(argv, live, memdir, state, template, ok_again=(0, 1))
    assert not (memdir / "tabs.md").exists() and "(tabs.md)" not in (memdir / "MEMORY.md").read_text()


def test_relocate_merge_killed_at_every_step_is_finished_by_relocate_again(tmp_path):
    from conftest import git, write_memory
    from mem import clients

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    git("init", "-q", cwd=old)
    memory = Path(clients.resolve(project=str(old)).memory_dir)
    write_memory(memory, "user_role.md", name="role", description="the user's role")
    (memory / "MEMORY.md").write_text("- [Role](user_role.md) — the user's role\n")
    shutil.move(old, new)
    new_memory = Path(clients.resolve(project=str(new)).memory_dir)
    write_memory(new_memory, "project_new.md", name="new", description="written after the move", type="project")
    (new_memory / "MEMORY.md").write_text("- [New](project_new.md) — written after the move\n")
    state = Path(os.environ["MEM_STATE_DIR"])
    projects = new_memory.parent.parent
    template = tmp_path / "template"
    live = [projects, state]
    _save(template, live)
    # once it went through, the old folder is gone: relocate again finds nothing to move (exit 1)
    _kill_everywhere(["relocate", str(old), str(new)], live, new_memory, state, template, ok_again=(0, 1))
    assert not memory.exists() and (new_memory / "project_new.md").exists() and (new_memory / "user_role.md").exists()
    assert "(user_role.md)" in (new_memory / "MEMORY.md").read_text()


def test_a_live_writers_temp_file_is_locked_until_it_is_renamed(tmp_path, monkeypatch):
    """remove_dead_temps takes only what nobody holds: the writer holds its lock through the rename
    (found by a second reading: closing the file let go of the lock before chmod and rename)."""
    import fcntl

    from mem.core.memdir import files

    target = tmp_path / "a.md"
    target.write_text("old\n")
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        fd = os.open(src, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("free")
        except BlockingIOError:
            seen.append("held")
        finally:
            os.close(fd)
        seen.append(files.remove_dead_temps(str(target)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    files.atomic_write(str(target), b"new\n")
    assert seen == ["held", []] and target.read_text() == "new\n"


def test_a_users_own_tmp_file_beside_a_memory_is_not_taken_for_a_dead_temp(tmp_path):
    from mem.core.memdir import files

    (tmp_path / "notes.md").write_text("x\n")
    mine = tmp_path / ".notes.md.backup01.tmp"
    mine.write_text("my draft\n")
    dead = tmp_path / ".notes.md.0a1b2c3d.tmp"
    dead.write_text("half\n")
    assert files.remove_dead_temps(str(tmp_path / "notes.md")) == [dead.name]
    assert mine.read_text() == "my draft\n"
