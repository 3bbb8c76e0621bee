"""A real full disk (issue #31): a small tmpfs holds the memory and/or state directory, filled up.

At each fill level, remember, undo and forget either work or fail with one clean line and a
non-zero exit; no file is left half-written; an undo that failed, run again (plain `mem undo`)
once there is room, finishes the same undo and then does nothing more; once space returns the
history agrees with the disk and every memory that no command removed is still there with its
pointer. Needs root to mount; skipped with the reason otherwise.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers.historycheck import assert_history_agrees

from mem.core.memdir.history import OUTSIDE
from mem.core.memdir.layout import TEMP_FILE
from mem.core.memdir.store import MemoryDir

PAGE = 4096
POINTER = re.compile(r"^- \[[^\]]+\]\([^)]+\.md\) — .+$")


@pytest.fixture
def small_fs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(mnt: Path) -> list[Path]:
    """Fill the file system to the last byte; the filler files, one page each (big ones first)."""
    fillers = []
    for size in (256 * PAGE, PAGE, 1):
        while True:
            path = mnt / f"filler-{len(fillers)}"
            try:
                with open(path, "wb") as f:
                    f.write(b"x" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                path.unlink(missing_ok=True)
                break
            fillers.append(path)
    return fillers


def _free(fillers: list[Path], pages: int) -> None:
    """Give back about ``pages`` pages (the smallest fillers first)."""
    for _ in range(pages):
        if fillers:
            fillers.pop().unlink()


def _check_whole(memdir: Path) -> None:
    """No file half-written: every topic file has its frontmatter, every index line is a pointer, no temp file."""
    for p in memdir.rglob("*"):
        if not p.is_file():
            continue
        text = p.read_text()
        if p.name == "MEMORY.md":
            assert all(POINTER.match(line) for line in text.splitlines()), text
        elif not TEMP_FILE.match(p.name):
            assert text.startswith("---\nname: ") and "\n---\n" in text[4:] and text.endswith(".\n"), (p, text)


def _failed_cleanly(r) -> None:
    assert r.returncode != 0
    lines = r.stderr.splitlines()  # forget lists its candidates first
    errors = [line for line in lines if line.startswith("mem: error: ")]
    assert errors == lines[-1:] and "Traceback" not in r.stderr, r.stderr


def _mems(memdir: Path) -> list:
    """The operations mem made, newest first."""
    return [op for op in MemoryDir(str(memdir)).history.operations() if op.command != OUTSIDE]


def _undo_converged(memdir: Path, run_mem) -> set[str]:
    """Disk and history are as one uninterrupted plain `mem undo` leaves them, never its inverse; another does nothing.

    The newest operation is an undo of an operation that is no undo itself, and all between them are
    attempts at that same undo (cut short, or failed and taken back); its topic files are as before it.
    """
    ops = _mems(memdir)
    newest = ops[0]
    assert newest.command == "undo", newest
    target = next(op for op in ops if op.id == newest.undoes)
    assert target.command != "undo", target  # a plain undo took back an undo: the inverse
    for op in ops[1:ops.index(target)]:
        attempt = op.undoes == target.id or (
            op.meta.get("reason") and next(o for o in ops if o.id == op.undoes).undoes == target.id)
        assert attempt, [(o.id[:8], o.command, (o.undoes or "")[:8], o.interrupted) for o in ops[:8]]
    for c in target.changes:
        if c.path != "MEMORY.md":
            assert (memdir / c.path).exists() == (c.before is not None), c.path
    before = {p: p.read_bytes() for p in memdir.rglob("*") if p.is_file()}
    r = run_mem("undo")  # an undo found interrupted (its record was cut short) is finished: nothing left to change
    assert r.returncode == 0, r.stderr
    assert "already an undo" in r.stderr or f"nothing to change for {target.id[:12]}" in r.stderr, r.stderr
    assert _mems(memdir)[0].id == newest.id
    assert {p: p.read_bytes() for p in memdir.rglob("*") if p.is_file()} == before
    return {c.path for c in target.changes if c.before is None}  # the files the undo removed


@pytest.mark.parametrize("full", ["both", "state", "memory"])
def test_writes_and_undo_on_a_full_disk_fail_cleanly_and_the_history_agrees_after(small_fs, tmp_path, monkeypatch,
                                                                                   run_mem, full):
    memdir = small_fs / "memory" if full in ("both", "memory") else tmp_path / "memory"
    memdir.mkdir()
    monkeypatch.setenv("MEM_DIR", str(memdir))
    monkeypatch.setenv("MEM_STATE_DIR", str(small_fs / "state" if full in ("both", "state") else tmp_path / "state"))

    def remember(name: str):
        return run_mem("remember", "--type", "project", "--name", name, "--description", f"about {name}",
                       f"{name} fact.")

    for name in ("Alpha", "Beta", "Gamma"):
        assert remember(name).returncode == 0
    kept = {"alpha.md", "beta.md", "gamma.md"}
    fillers = _fill(small_fs)
    failures = retried = 0
    pending = False  # an undo failed: a plain `mem undo` again, before anything else, must finish that one

    def check(r) -> bool:
        nonlocal failures
        if r.returncode:
            failures += 1
            _failed_cleanly(r)
            assert r.returncode == 74, r.stderr  # the storage said no: not a bug of mem's
        return r.returncode == 0

    for level, pages in enumerate((0, 1, 1, 2, 4, 8, 16, 32, 64)):
        _free(fillers, pages)
        if pending:  # nothing else runs before the retry, as a user or a script would retry
            if check(run_mem("undo")):
                kept -= _undo_converged(memdir, run_mem)  # an older memory, when its remember failed
                pending, retried = False, retried + 1
            _check_whole(memdir)
            continue
        check(remember(f"Level {level}"))
        if not check(run_mem("undo")):
            pending = True
            _check_whole(memdir)
            continue
        kept -= _undo_converged(memdir, run_mem)
        steps = [remember(f"Again {level}")]
        if level == 3:
            steps.append(run_mem("forget", "--yes", "--offline", "beta.md"))
        for r in steps:
            check(r)
        if steps[-1].returncode == 0 and level == 3:
            kept.discard("beta.md")
        _check_whole(memdir)
    assert failures  # the disk really was full for some of them
    for path in fillers:
        path.unlink()

    r = run_mem("history", "-n", "1")  # space is back: the next command records what it must
    assert r.returncode == 0, r.stderr
    if pending:
        assert run_mem("undo").returncode == 0
        kept -= _undo_converged(memdir, run_mem)
        retried += 1
    assert retried or full == "state", "no undo failed: the retry was never tried"
    assert not [p for p in memdir.rglob("*") if TEMP_FILE.match(p.name)]
    assert_history_agrees(str(memdir))
    index = (memdir / "MEMORY.md").read_text()
    for name in kept:
        assert (memdir / name).exists() and f"({name})" in index, name
    # and it works again
    assert remember("After").returncode == 0 and run_mem("undo").returncode == 0


def test_an_undo_whose_take_back_also_failed_is_finished_by_undo_again(small_fs, tmp_path, monkeypatch, run_mem):
    """Issue #31 item 5: the disk full for the undo's last file and for its take-back too, the half-done undo
    was left newest; once there was room, a plain `mem undo` said it was already an undo, the last file never back."""
    memdir = small_fs / "memory"
    memdir.mkdir()
    monkeypatch.setenv("MEM_DIR", str(memdir))
    monkeypatch.setenv("MEM_STATE_DIR", str(tmp_path / "state"))
    for name, text in (("Gamma", "Keep me."), ("Tabs alpha", "Use tabs in Go code."),
                       ("Tabs beta", "Use tabs in Makefiles.")):
        r = run_mem("remember", "--type", "project", "--name", name, "--description", f"about {name}", text)
        assert r.returncode == 0, r.stderr
    r = run_mem("forget", "--yes", "--offline", "tabs")
    assert r.returncode == 0, r.stderr
    forget = _mems(memdir)[0]
    assert [c.path for c in forget.changes] == ["MEMORY.md", "tabs-alpha.md", "tabs-beta.md"]
    fillers = _fill(small_fs)
    _free(fillers, 1)  # room for MEMORY.md's new version (its old one is freed) and tabs-alpha.md: not tabs-beta.md
    r = run_mem("undo")
    assert r.returncode == 74, r.stderr
    half = _mems(memdir)[0]  # the take-back found no room either: the half-done undo is newest
    assert half.undoes == forget.id and [c.path for c in half.changes] == ["MEMORY.md", "tabs-alpha.md"], half
    for path in fillers:
        path.unlink()
    r = run_mem("undo")
    assert r.returncode == 0, r.stderr
    assert (memdir / "tabs-alpha.md").exists() and (memdir / "tabs-beta.md").exists(), r.stderr
    index = (memdir / "MEMORY.md").read_text()
    assert "(tabs-alpha.md)" in index and "(tabs-beta.md)" in index and "(gamma.md)" in index
    _undo_converged(memdir, run_mem)
    assert_history_agrees(str(memdir))


def test_a_journal_the_full_disk_cut_short_at_its_first_line_is_gone_and_the_write_refused(small_fs, tmp_path):
    """The journal file was made but its first line never reached the disk: the same process's recovery, at its
    commit, took it for a dead process's and removed it, and the commit then failed on the missing file (exit 70)."""
    from mem.core.memdir.history import History, blob_oid

    work = tmp_path / "memory"
    work.mkdir()
    (work / "b.md").write_bytes(b"stored already\n")
    hist = History(str(small_fs / "state"), str(work))
    hist.sync()
    fillers = _fill(small_fs)
    journal = hist.begin("remember")
    # the content is stored already (b.md's): the first thing to need space is the journal
    with pytest.raises(OSError) as info:
        journal.write("a.md", None, b"stored already\n", old_mode=None, new_mode=None,
                      apply=lambda: (work / "a.md").write_bytes(b"stored already\n"))
    assert info.value.errno == errno.ENOSPC
    assert journal.commit() is None
    assert not (work / "a.md").exists()
    assert os.listdir(os.path.join(hist.state_dir, "history", "journal")) == []
    _free(fillers, 64)
    assert hist.sync() is None
    assert hist.current_oid("b.md") == (blob_oid(b"stored already\n"), 0o100644)


def test_a_journal_line_the_full_disk_tore_hides_no_later_line_from_recovery(small_fs, tmp_path):
    """An append the full disk cut short mid-line is taken back: a later write of the same operation, in a
    process that then dies, is recovered as that operation's change, not as somebody else's (a recovery reads
    a journal up to its first torn line)."""
    from mem.core.memdir.history import History

    work = tmp_path / "memory"
    work.mkdir()
    same = b"stored already\n"  # every write below stores nothing new: the journal is what needs space
    (work / "seed.md").write_bytes(same)
    state = small_fs / "state"
    History(str(state), str(work)).sync()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            hist = History(str(state), str(work))
            journal = hist.begin("remember")

            def put(name: str) -> None:
                journal.write(name, None, same, old_mode=None, new_mode=None,
                              apply=lambda: (work / name).write_bytes(same))

            put("first.md")
            (path,) = (state / "history" / "journal").glob("*.jsonl")  # this operation's journal
            n = 0
            while PAGE - os.path.getsize(path) % PAGE > 150:  # up to the end of a page
                n += 1
                put(f"f{n}.md")
            room = PAGE - os.path.getsize(path) % PAGE
            fillers = _fill(small_fs)
            try:  # a line longer than the page's room: its head is written, its tail finds no page
                put("t" * (room + 40) + ".md")
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
            else:
                raise AssertionError("the append found room")
            _free(fillers, 64)
            put("after.md")
            code = 0
        finally:
            os._exit(code)  # dies with its operation uncommitted
    assert os.waitpid(pid, 0)[1] == 0
    hist = History(str(state), str(work))
    assert hist.sync() is None  # nothing on disk the history does not know
    (op,) = [op for op in hist.operations() if op.command == "remember"]
    assert op.interrupted and "after.md" in {c.path for c in op.changes}
    assert all(not c.path.startswith("ttt") for c in op.changes)
