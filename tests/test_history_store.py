"""The history store: real files, the real git binary, kill -9 at random points."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mem.core.errors import MemError, NotFoundError, RefusedError, UsageError
from mem.core.memdir import history as history_mod
from mem.core.memdir.history import (
    OUTSIDE,
    REDACTED,
    WITHHELD,
    History,
    HistoryUnavailable,
    Operation,
    blob_oid,
)

REPO = Path(__file__).resolve().parent.parent
REGULAR, EXECUTABLE, SYMLINK = 0o100644, 0o100755, 0o120000


def refuse_secrets(path: str, data: bytes) -> str | None:
    return "a secret" if b"SECRET" in data else None


@pytest.fixture
def root(tmp_path) -> Path:
    d = tmp_path / "memory"
    d.mkdir()
    return d


@pytest.fixture
def hist(tmp_path, root) -> History:
    return History(str(tmp_path / "state"), str(root), exclude=[".*.tmp"], refuse=refuse_secrets)


# -- helpers --


def git(h: History, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=h.git_dir, GIT_INDEX_FILE=os.path.join(h.git_dir, "index"),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return subprocess.run(["git", *args], env=env, input=input, capture_output=True, check=False)


def in_store(h: History, oid: str) -> bool:
    return git(h, "cat-file", "-e", oid).returncode == 0


def recorded(h: History) -> dict[str, tuple[str, int]]:
    """The index, read by git itself."""
    out = git(h, "ls-files", "-z", "-s").stdout
    result = {}
    for rec in filter(None, out.split(b"\0")):
        meta, path = rec.split(b"\t", 1)
        mode, oid, _ = meta.split()
        result[os.fsdecode(path)] = (oid.decode(), int(mode, 8))
    return result


def on_disk(root: Path) -> dict[str, tuple[str, int]]:
    result = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            if name.startswith(".") and name.endswith(".tmp"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                result[rel] = (blob_oid(os.fsencode(os.readlink(full))), SYMLINK)
            else:
                result[rel] = (blob_oid(Path(full).read_bytes()), EXECUTABLE if st.st_mode & 0o100 else REGULAR)
    return result


def replayed(h: History) -> dict[str, tuple[str, int]]:
    """Replay every operation oldest first from nothing; each change must start where the last left off."""
    state: dict[str, tuple] = {}
    for op in reversed(h.operations()):
        for c in op.changes:
            assert state.get(c.path, (None, None)) == (c.before, c.before_mode), (op.command, c)
            state[c.path] = (c.after, c.after_mode)
    return {path: s for path, s in state.items() if s[0] is not None}


def assert_consistent(h: History, root: Path) -> None:
    assert recorded(h) == on_disk(root)
    assert replayed(h) == recorded(h)
    assert os.listdir(os.path.join(h.state_dir, "history", "journal")) == []


def put(journal, root: Path, rel: str, new: bytes | None, mode: int = REGULAR) -> None:
    """Write through the journal the way the write path does: temp file, then rename."""
    path = root / rel
    old = path.read_bytes() if path.exists() else None
    old_mode = None if old is None else (EXECUTABLE if path.stat().st_mode & 0o100 else REGULAR)

    def apply():
        if new is None:
            path.unlink()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{os.urandom(4).hex()}.tmp"
        tmp.write_bytes(new)
        tmp.chmod(mode & 0o777)
        os.replace(tmp, path)

    journal.write(rel, old, new, old_mode=old_mode, new_mode=None if new is None else mode, apply=apply)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def child_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO)}


# -- recording mem's own writes --


def test_journal_records_created_updated_deleted_with_content_and_diff(hist, root):
    (root / "keep.md").write_bytes(b"one\ntwo\nthree\n")
    (root / "gone.md").write_bytes(b"bye\n")
    baseline = hist.sync()
    assert {c.path for c in baseline.changes} == {"keep.md", "gone.md"}

    with hist.begin("remember", ["--type", "user"]) as j:
        put(j, root, "keep.md", b"one\nTWO\nthree\n")
        put(j, root, "new.md", b"fresh")
        put(j, root, "gone.md", None)
    ops = hist.operations()
    assert [op.command for op in ops] == ["remember", "outside"]
    op = ops[0]
    assert op.args == ["--type", "user"] and not op.interrupted and op.undoes is None
    actions = {c["path"]: c["action"] for c in op.as_dict()["changes"]}
    assert actions == {"keep.md": "updated", "new.md": "created", "gone.md": "deleted"}
    by_path = {c.path: c for c in op.changes}
    assert hist.read_blob(by_path["keep.md"].before) == b"one\ntwo\nthree\n"
    assert hist.read_blob(by_path["keep.md"].after) == b"one\nTWO\nthree\n"
    assert hist.read_blob(by_path["gone.md"].before) == b"bye\n"
    assert by_path["gone.md"].after is None and by_path["new.md"].before is None
    assert hist.current_oid("new.md") == (blob_oid(b"fresh"), REGULAR)
    assert hist.current_oid("gone.md") == (None, None)

    diff = hist.diff(op)
    assert "--- a/keep.md\n+++ b/keep.md\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n" in diff
    assert "--- /dev/null\n+++ b/new.md\n@@ -0,0 +1 @@\n+fresh\n\\ No newline at end of file\n" in diff
    assert "deleted file mode 100644\n--- a/gone.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" in diff
    assert_consistent(hist, root)


def test_diff_of_binary_content_and_odd_names(hist, root):
    with hist.begin("remember") as j:
        put(j, root, "img.bin", b"\x89PNG\x00\xff")
        put(j, root, 'quote"d.md', b"x\n")
    diff = hist.diff(hist.operations()[0])
    assert "Binary files /dev/null and b/img.bin differ\n" in diff
    assert '+++ "b/quote\\"d.md"\n' in diff


def test_an_operation_that_changes_nothing_records_nothing(hist, root):
    (root / "a.md").write_bytes(b"same\n")
    hist.sync()
    j = hist.begin("remember")
    put(j, root, "a.md", b"same\n")
    assert j.commit() is None
    j = hist.begin("dream")
    put(j, root, "a.md", b"changed\n")
    put(j, root, "b.md", b"temporary\n")
    put(j, root, "a.md", b"same\n")
    put(j, root, "b.md", None)
    assert j.commit() is None
    assert [op.command for op in hist.operations()] == ["outside"]
    assert_consistent(hist, root)


def test_a_failed_apply_is_not_recorded(hist, root):
    def boom():
        raise OSError("disk full")

    j = hist.begin("remember")
    put(j, root, "ok.md", b"fine\n")
    with pytest.raises(OSError, match="disk full"):
        j.write("bad.md", None, b"never\n", old_mode=None, new_mode=REGULAR, apply=boom)
    op = j.commit()
    assert [c.path for c in op.changes] == ["ok.md"]
    assert hist.current_oid("bad.md") == (None, None)
    assert_consistent(hist, root)


def test_abort_without_writes_leaves_nothing_and_with_writes_records_them(hist, root):
    hist.begin("remember").abort()
    assert hist.operations() == []
    j = hist.begin("remember")
    put(j, root, "a.md", b"a\n")
    j.abort()
    assert [op.command for op in hist.operations()] == ["remember"]
    assert_consistent(hist, root)


def test_context_manager_records_what_was_written_before_an_exception(hist, root):
    with pytest.raises(RuntimeError), hist.begin("dream") as j:
        put(j, root, "a.md", b"a\n")
        raise RuntimeError("model went away")
    assert [c.path for c in hist.operations()[0].changes] == ["a.md"]


# -- changes mem did not make --


def test_an_outside_edit_is_recorded_before_the_mem_write_that_follows_it(hist, root):
    with hist.begin("remember") as j:
        put(j, root, "a.md", b"v1\n")
        put(j, root, "b.md", b"b1\n")
    (root / "a.md").write_bytes(b"edited by hand\n")
    (root / "b.md").write_bytes(b"b edited\n")
    (root / "c.md").write_bytes(b"new by hand\n")

    with hist.begin("forget", ["a"]) as j:
        put(j, root, "a.md", b"v3\n")
    ops = hist.operations()
    assert [op.command for op in ops] == ["forget", "outside", "remember"]
    outside = ops[1].changes
    assert [(c.path, c.before, c.after) for c in outside] == [("a.md", blob_oid(b"v1\n"), blob_oid(b"edited by hand\n"))]
    assert hist.read_blob(outside[0].after) == b"edited by hand\n"
    assert [(c.path, c.before, c.after) for c in ops[0].changes] == [
        ("a.md", blob_oid(b"edited by hand\n"), blob_oid(b"v3\n"))]

    synced = hist.sync()
    assert synced.command == "outside"
    assert {(c.path, c.before, c.after) for c in synced.changes} == {
        ("b.md", blob_oid(b"b1\n"), blob_oid(b"b edited\n")),
        ("c.md", None, blob_oid(b"new by hand\n")),
    }
    assert hist.sync() is None
    assert_consistent(hist, root)


def test_an_outside_edit_that_keeps_size_and_mtime_is_still_seen(hist, root):
    """The sync compares stat data once a file's recorded bytes were read back; an edit that puts
    the same size and mtime back still changes the inode's ctime, which no tool can set."""
    with hist.begin("remember") as j:
        put(j, root, "a.md", b"version one\n")
    assert hist.sync() is None  # reads a.md back once and keeps its stat data
    st = os.stat(root / "a.md")
    time.sleep(0.01)
    (root / "a.md").write_bytes(b"version two\n")  # same size
    os.utime(root / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    synced = hist.sync()
    assert synced is not None and [(c.path, c.after) for c in synced.changes] == [("a.md", blob_oid(b"version two\n"))]
    assert hist.sync() is None
    assert_consistent(hist, root)


def test_an_outside_edit_between_two_writes_of_one_journal_keeps_every_path_chained(hist, root):
    j = hist.begin("dream")
    put(j, root, "a.md", b"mem 1\n")
    (root / "a.md").write_bytes(b"user\n")
    put(j, root, "a.md", b"mem 2\n")
    own = j.commit()
    outside = hist.operations()[1]
    assert outside.command == "outside"
    assert [(c.before, c.after) for c in outside.changes] == [(None, blob_oid(b"user\n"))]
    assert [(c.before, c.after) for c in own.changes] == [(blob_oid(b"user\n"), blob_oid(b"mem 2\n"))]
    assert_consistent(hist, root)


def test_first_sync_is_the_baseline_and_a_missing_or_empty_tree_is_fine(tmp_path):
    h = History(str(tmp_path / "state"), str(tmp_path / "missing"))
    assert h.sync() is None
    root = tmp_path / "missing"
    root.mkdir()
    assert h.sync() is None
    (root / "a.md").write_text("a\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.md").write_text("b\n")
    op = h.sync()
    assert {(c.path, c.before) for c in op.changes} == {("a.md", None), ("sub/b.md", None)}
    for entry in root.rglob("*.md"):
        entry.unlink()
    (root / "sub").rmdir()
    root.rmdir()
    op = h.sync()
    assert {(c.path, c.after) for c in op.changes} == {("a.md", None), ("sub/b.md", None)}
    assert recorded(h) == {}


def test_excluded_files_and_a_nested_repository(tmp_path, root):
    h = History(str(tmp_path / "state"), str(root), exclude=["logs/", ".*.tmp"])
    (root / "logs").mkdir()
    (root / "logs" / "today.md").write_text("log\n")
    (root / ".a.md.12345678.tmp").write_text("half written\n")
    nested = root / "team"
    nested.mkdir()
    subprocess.run(["git", "init", "-q", str(nested)], check=True, env={**os.environ, "GIT_DIR": str(nested / ".git")})
    (nested / "shared.md").write_text("shared\n")
    op = h.sync()
    assert [c.path for c in op.changes] == ["team/shared.md"]
    assert h.sync() is None
    (nested / "shared.md").write_text("shared, edited\n")
    (nested / "more.md").write_text("more\n")
    assert {c.path for c in h.sync().changes} == {"team/shared.md", "team/more.md"}


def test_a_file_replaced_by_a_directory_of_the_same_name_and_back(hist, root):
    (root / "x").write_text("file\n")
    hist.sync()
    (root / "x").unlink()
    (root / "x").mkdir()
    (root / "x" / "y.md").write_text("y\n")
    assert {(c.path, c.after is None) for c in hist.sync().changes} == {("x", True), ("x/y.md", False)}
    assert_consistent(hist, root)
    (root / "x" / "y.md").unlink()
    (root / "x").rmdir()
    (root / "x").write_text("file again\n")
    assert {(c.path, c.after is None) for c in hist.sync().changes} == {("x", False), ("x/y.md", True)}
    assert_consistent(hist, root)


def test_modes_symlinks_and_odd_paths(hist, root):
    (root / "target.md").write_text("t\n")
    os.symlink("target.md", root / "link.md")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    names = ["with space.md", "new\nline.md", "ünï/cødé.md", "star*[x].md"]
    for name in names:
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(name)
    op = hist.sync()
    assert {c.path for c in op.changes} == {"target.md", "link.md", "run.sh", *names}
    assert hist.current_oid("link.md") == (blob_oid(b"target.md"), SYMLINK)
    assert hist.current_oid("run.sh") == (blob_oid(b"#!/bin/sh\n"), EXECUTABLE)
    for name in names:
        assert hist.current_oid(name) == (blob_oid(name.encode()), REGULAR)

    with hist.begin("remember") as j:
        put(j, root, "new\nline.md", b"rewritten\n")
        put(j, root, "star*[x].md", None)
    op = hist.operations()[0]
    assert {c.path for c in op.changes} == {"new\nline.md", "star*[x].md"}
    assert hist.operations(path="new\nline.md", limit=1) == [op]
    assert '--- "a/new\\nline.md"\n' in hist.diff(op)

    (root / "run.sh").chmod(0o644)
    os.unlink(root / "link.md")
    os.symlink("elsewhere.md", root / "link.md")
    op = hist.sync()
    by_path = {c.path: c for c in op.changes}
    assert (by_path["run.sh"].before_mode, by_path["run.sh"].after_mode) == (EXECUTABLE, REGULAR)
    assert by_path["run.sh"].before == by_path["run.sh"].after
    assert "old mode 100755\nnew mode 100644\n" in hist.diff(op)
    assert hist.read_blob(by_path["link.md"].after) == b"elsewhere.md"
    assert_consistent(hist, root)


def test_refused_content_never_enters_the_store(hist, root):
    (root / "note.md").write_text("plain\n")
    (root / "leak.md").write_text("key: SECRET\n")
    op = hist.sync()
    assert [c.path for c in op.changes] == ["note.md"]
    assert op.meta == {"withheld": ["leak.md"]}
    assert not in_store(hist, blob_oid(b"key: SECRET\n"))
    assert "leak.md" not in recorded(hist)
    assert hist.sync() is None  # the refused file alone records nothing

    # the same content found by a mem write: the outside change is listed, its content withheld
    with hist.begin("forget") as j:
        put(j, root, "leak.md", None)
    outside, own = hist.operations()[1], hist.operations()[0]
    assert [(c.path, c.before, c.after) for c in outside.changes] == [("leak.md", None, WITHHELD)]
    assert [(c.path, c.before, c.after) for c in own.changes] == [("leak.md", WITHHELD, None)]
    assert "content withheld" in hist.diff(own)
    assert not in_store(hist, blob_oid(b"key: SECRET\n"))
    assert_consistent(hist, root)


# -- concurrency and crashes --


def test_interleaved_journals_in_one_process_are_attributed_separately(hist, root):
    first = hist.begin("dream")
    second = hist.begin("remember")
    put(first, root, "a.md", b"a\n")
    put(second, root, "b.md", b"b\n")
    put(first, root, "c.md", b"c\n")
    assert hist.sync() is None
    assert {c.path for c in second.commit().changes} == {"b.md"}
    assert {c.path for c in first.commit().changes} == {"a.md", "c.md"}
    assert [op.command for op in hist.operations()] == ["dream", "remember"]
    assert_consistent(hist, root)


CHILD_WRITES_AND_WAITS = textwrap.dedent("""
    import os, sys
    from mem.core.memdir.history import History
    h = History(sys.argv[1], sys.argv[2], exclude=[".*.tmp"])
    path = os.path.join(sys.argv[2], "child.md")
    def apply():
        with open(path, "wb") as f:
            f.write(b"from the child\\n")
    j = h.begin("child")
    j.write("child.md", None, b"from the child\\n", old_mode=None, new_mode=0o100644, apply=apply)
    print("written", flush=True)
    sys.stdin.readline()
    j.commit()
""")


def test_a_journal_in_another_process_is_attributed_to_it(hist, root):
    proc = subprocess.Popen([sys.executable, "-c", CHILD_WRITES_AND_WAITS, hist.state_dir, hist.work_tree],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env())
    assert proc.stdout.readline() == b"written\n"
    with hist.begin("remember") as j:
        put(j, root, "parent.md", b"from the parent\n")
    (root / "hand.md").write_text("by hand\n")
    assert [c.path for c in hist.sync().changes] == ["hand.md"]
    proc.communicate(b"go\n")
    assert proc.returncode == 0
    attributed = {c.path: op.command for op in hist.operations() for c in op.changes}
    assert attributed == {"child.md": "child", "parent.md": "remember", "hand.md": "outside"}
    assert_consistent(hist, root)


def test_sync_leaves_paths_of_a_live_journal_to_it_and_recovers_them_when_it_dies(hist, root):
    hist.sync()  # creates the store
    content = b"applied, not yet staged\n"
    oid = git(hist, "hash-object", "-w", "--stdin", input=content).stdout.decode().strip()
    sleeper = subprocess.Popen(["sleep", "60"])
    journal = Path(hist.state_dir, "history", "journal", "0badcafe.jsonl")
    journal.write_text(
        json.dumps({"pid": sleeper.pid, "command": "dream", "args": ["--deep"], "meta": {},
                    "started": "2026-01-01T00:00:00.000Z"}) + "\n"
        + json.dumps({"path": "busy.md", "before": None, "after": oid, "before_mode": None,
                      "after_mode": REGULAR}) + "\n")
    (root / "busy.md").write_bytes(content)
    (root / "other.md").write_text("other\n")
    try:
        assert [c.path for c in hist.sync().changes] == ["other.md"]
        assert hist.current_oid("busy.md") == (None, None)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert hist.sync() is None  # the dead journal is recovered under its own command
    op = hist.operations()[0]
    assert (op.command, op.args, op.interrupted) == ("dream", ["--deep"], True)
    assert [(c.path, c.after) for c in op.changes] == [("busy.md", oid)]
    assert_consistent(hist, root)


def test_a_journal_whose_pid_was_reused_is_recovered_not_kept_live(hist, root):
    """Issue #31: a dead process's PID reused by another kept its journal live, so edits to its files went unrecorded."""
    hist.sync()
    content = b"applied, not yet staged\n"
    oid = git(hist, "hash-object", "-w", "--stdin", input=content).stdout.decode().strip()
    reuser = subprocess.Popen(["sleep", "60"])  # holds the PID now; the journal's writer started at another time
    journal = Path(hist.state_dir, "history", "journal", "0badcafe.jsonl")
    journal.write_text(
        json.dumps({"pid": reuser.pid, "pid_start": "1", "command": "remember", "args": [], "meta": {},
                    "started": "2026-01-01T00:00:00.000Z"}) + "\n"
        + json.dumps({"path": "busy.md", "before": None, "after": oid, "before_mode": None,
                      "after_mode": REGULAR}) + "\n")
    (root / "busy.md").write_bytes(content)
    try:
        hist.sync()
        (root / "busy.md").write_text("edited by hand\n")
        op = hist.sync()
        assert op is not None and [c.path for c in op.changes] == ["busy.md"]  # the edit is recorded
        assert not journal.exists()
    finally:
        reuser.kill()
        reuser.wait()
    assert_consistent(hist, root)


def pretend_dead(journal) -> None:
    """Make a journal look like one whose process was killed (its pid no longer runs)."""
    path = Path(journal._path)
    header, *rest = path.read_text().splitlines()
    path.write_text("\n".join([json.dumps({**json.loads(header), "pid": dead_pid()}), *rest]) + "\n")


def test_a_dead_journal_whose_file_was_edited_since_keeps_what_it_staged(hist, root):
    (root / "a.md").write_bytes(b"a\n")
    hist.sync()
    j = hist.begin("remember")
    put(j, root, "a.md", b"written by mem\n")  # applied and staged, then the process dies
    pretend_dead(j)
    (root / "a.md").write_bytes(b"edited afterwards\n")
    op = hist.sync()
    interrupted = hist.operations()[1]
    assert (interrupted.command, interrupted.interrupted) == ("remember", True)
    assert [(c.before, c.after) for c in interrupted.changes] == [(blob_oid(b"a\n"), blob_oid(b"written by mem\n"))]
    assert [(c.before, c.after) for c in op.changes] == [(blob_oid(b"written by mem\n"), blob_oid(b"edited afterwards\n"))]
    assert_consistent(hist, root)


def test_a_journal_whose_refs_were_written_is_not_recorded_twice(hist, root):
    j = hist.begin("remember")
    put(j, root, "a.md", b"a\n")
    journal = Path(hist.state_dir, "history", "journal", f"{j._id}.jsonl")
    saved = journal.read_text()
    j.commit()
    # as if killed between writing the refs and removing the journal
    journal.write_text(saved)
    j._path = str(journal)
    pretend_dead(j)
    assert hist.sync() is None
    assert len(hist.operations()) == 1
    assert_consistent(hist, root)


def test_a_journal_cut_off_mid_line_is_recovered(hist, root):
    hist.sync()
    journal = Path(hist.state_dir, "history", "journal", "12345678.jsonl")
    journal.write_text(json.dumps({"pid": dead_pid(), "command": "remember", "args": [], "meta": {},
                                   "started": "2026-01-01T00:00:00.000Z"}) + "\n" + '{"path": "a.m')
    assert hist.sync() is None
    assert_consistent(hist, root)


CHILD_WRITES_UNTIL_KILLED = textwrap.dedent("""
    import os, random, sys
    from mem.core.memdir.history import History
    state, root, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    h = History(state, root, exclude=[".*.tmp"])
    print("ready", flush=True)

    def put(j, rel, new):
        path = os.path.join(root, rel)
        old = open(path, "rb").read() if os.path.exists(path) else None
        def apply():
            if new is None:
                os.unlink(path)
                return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
            with open(tmp, "wb") as f:
                f.write(new)
            os.replace(tmp, path)
        j.write(rel, old, new, old_mode=None if old is None else 0o100644,
                new_mode=None if new is None else 0o100644, apply=apply)

    j = h.begin("child", [str(seed)])
    for n in range(6):
        rel = rng.choice(["a.md", "b.md", "sub/c.md", "sub/d e.md"])
        delete = os.path.exists(os.path.join(root, rel)) and rng.random() < 0.25
        put(j, rel, None if delete else f"{seed}-{n}\\n".encode())
    j.commit()
    print("done", flush=True)
""")


def test_kill_9_at_any_point_leaves_files_old_or_new_and_the_history_consistent(hist, root):
    hist.sync()

    def run(seed: int, delay: float | None) -> float:
        proc = subprocess.Popen([sys.executable, "-c", CHILD_WRITES_UNTIL_KILLED, hist.state_dir,
                                 hist.work_tree, str(seed)], stdout=subprocess.PIPE, env=child_env())
        assert proc.stdout.readline() == b"ready\n"
        started = time.monotonic()
        if delay is None:
            assert proc.stdout.readline() == b"done\n"
        else:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        proc.wait()  # a zombie would still count as running
        proc.stdout.close()
        assert proc.returncode in (0, -signal.SIGKILL)
        return time.monotonic() - started

    duration = run(0, None)  # how long one whole operation takes here
    rng = random.Random(1234)
    for seed in range(1, 41):
        run(seed, rng.uniform(0, duration))
        hist.sync()
        assert_consistent(hist, root)
    ops = hist.operations()
    assert any(op.interrupted for op in ops), "no kill landed inside an operation"
    assert {op.command for op in ops} == {"child"}  # nothing the children did passed for an outside change


def test_a_stale_index_lock_left_by_a_killed_git_does_not_block_writes(hist, root):
    hist.sync()
    Path(hist.git_dir, "index.lock").write_bytes(b"")
    with hist.begin("remember") as j:
        put(j, root, "a.md", b"a\n")
    assert hist.current_oid("a.md") == (blob_oid(b"a\n"), REGULAR)
    assert not Path(hist.git_dir, "index.lock").exists()


# -- reading --


def test_find_by_prefix_and_its_errors(hist, root):
    with hist.begin("remember") as j:
        put(j, root, "a.md", b"a\n")
    op = hist.operations()[0]
    assert hist.find(op.id[:4]) == op
    assert hist.find(op.id.upper()) == op
    with pytest.raises(UsageError, match="at least 4 hex"):
        hist.find(op.id[:3])
    with pytest.raises(UsageError):
        hist.find("zzzz")
    with pytest.raises(NotFoundError):
        hist.find(next(p for p in ("0000", "1111") if not op.id.startswith(p)))

    # Operations whose ids share a 4-digit prefix: made with fixed times, so how many it takes never changes.
    seen: dict[str, str] = {}
    n = 0
    while True:
        batch = [(f"refs/ops/{1_767_225_600 * 10**9 + n + k:020d}-00000000",
                  Operation("", "2026-01-01T00:00:00.000Z", "remember", [str(n + k)], [], False, None, {}))
                 for k in range(100)]
        ids = hist._write_ops(batch)
        n += 100
        clash = next((oid for oid in ids if oid[:4] in seen), None)
        for oid in ids:
            seen.setdefault(oid[:4], oid)
        if clash:
            break
    with pytest.raises(UsageError, match="ambiguous"):
        hist.find(clash[:4])
    assert hist.find(clash).id == clash


def test_read_blob_of_content_not_kept_is_not_found(hist):
    with pytest.raises(NotFoundError):
        hist.read_blob(REDACTED)
    hist.sync()
    with pytest.raises(NotFoundError):
        hist.read_blob(blob_oid(b"never stored"))


# -- dropping --


def test_prune_by_age_drops_old_operations_and_their_versions(hist, root):
    versions = [b"v1\n", b"v2\n", b"v3\n"]
    ops = []
    for n, content in enumerate(versions):
        with hist.begin("remember") as j:
            put(j, root, "a.md", content)
        ops.append(hist.operations()[0])
        if n == 1:
            time.sleep(0.01)
            between = time.time()
            time.sleep(0.01)
    git(hist, "gc", "--quiet")  # packed versions must go too, not only loose ones
    dropped = hist.prune(max_age_days=2, now=between + 2 * 86400)
    assert dropped == [ops[0].id, ops[1].id]
    assert hist.operations() == [ops[2]]
    assert not in_store(hist, blob_oid(b"v1\n"))  # nothing refers to it any more
    assert in_store(hist, blob_oid(b"v2\n"))  # the kept operation's before
    assert in_store(hist, blob_oid(b"v3\n"))  # the file holds it
    assert hist.prune(max_age_days=2, now=between + 2 * 86400) == []
    assert hist.read_blob(hist.operations()[0].changes[0].before) == b"v2\n"
    assert recorded(hist) == on_disk(root)


def test_prune_by_size_drops_the_oldest_first(hist, root):
    rng = random.Random(7)
    contents = [rng.randbytes(100_000) for _ in range(3)]
    ops = []
    for content in contents:
        with hist.begin("remember") as j:
            put(j, root, "big.bin", content)
        ops.append(hist.operations()[0])
    dropped = hist.prune(max_bytes=250_000)
    # dropping the first frees nothing (the second still starts from its version), the second frees it
    assert dropped == [ops[0].id, ops[1].id]
    assert hist.operations() == [ops[2]]
    assert not in_store(hist, blob_oid(contents[0]))
    assert in_store(hist, blob_oid(contents[1])) and in_store(hist, blob_oid(contents[2]))
    assert hist.prune(max_bytes=250_000) == []
    assert hist.prune(max_bytes=0) == [ops[2].id]  # the current files stay whatever the limit
    assert in_store(hist, blob_oid(contents[2]))


def test_prune_keeps_what_a_running_operation_still_needs(hist, root):
    with hist.begin("remember") as j:
        put(j, root, "a.md", b"old\n")
    running = hist.begin("dream")
    put(running, root, "a.md", b"new\n")  # its before is now held by the old operation alone
    assert len(hist.prune(max_age_days=0, now=time.time() + 1)) == 1
    assert in_store(hist, blob_oid(b"old\n"))
    op = running.commit()
    assert hist.read_blob(op.changes[0].before) == b"old\n"
    assert git(hist, "for-each-ref", "refs/pins/").stdout == b""


def test_redact_removes_every_copy_of_a_version(hist, root):
    with hist.begin("remember") as j:
        put(j, root, "notes.md", b"password: hunter2\n")
    wrote = hist.operations()[0]
    with pytest.raises(RefusedError, match="still holds that version"):
        hist.redact(wrote.id, "notes.md")
    with hist.begin("forget") as j:
        put(j, root, "notes.md", b"nothing to see\n")
    fixed = hist.operations()[0]
    leaked = blob_oid(b"password: hunter2\n")
    git(hist, "gc", "--quiet")
    assert in_store(hist, leaked)

    rewritten = hist.redact(wrote.id[:8], "notes.md")
    assert len(rewritten) == 2
    assert not in_store(hist, leaked)
    every_object = git(hist, "cat-file", "--batch-all-objects", "--batch-check").stdout.decode()
    assert leaked not in every_object and blob_oid(b"nothing to see\n") in every_object
    after_fix, after_wrote = hist.operations()
    assert (after_wrote.command, after_wrote.time) == ("remember", wrote.time)
    assert [(c.path, c.after) for c in after_wrote.changes] == [("notes.md", REDACTED)]
    assert [(c.before, c.after) for c in after_fix.changes] == [(REDACTED, blob_oid(b"nothing to see\n"))]
    assert {after_fix.id, after_wrote.id} == set(rewritten) and fixed.id not in rewritten
    assert "content redacted" in hist.diff(after_fix)
    with pytest.raises(UsageError):
        hist.redact(after_wrote.id, "notes.md")
    with pytest.raises(NotFoundError):
        hist.redact(after_wrote.id, "other.md")
    assert_consistent(hist, root)


# -- cost --


def count_spawns(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = history_mod._run

    def counting(argv, **kwargs):
        calls.append(argv)
        return real(argv, **kwargs)

    monkeypatch.setattr(history_mod, "_run", counting)
    return calls


def test_a_thousand_files_cost_one_operation_and_a_quiet_sync_two_spawns(hist, root, monkeypatch):
    for n in range(1000):
        d = root / f"dir{n % 10}"
        d.mkdir(exist_ok=True)
        (d / f"note {n}.md").write_text(f"note {n}\n")
    op = hist.sync()
    assert len(op.changes) == 1000 and all(c.before is None for c in op.changes)
    calls = count_spawns(monkeypatch)
    assert hist.sync() is None
    assert len(calls) <= 2
    assert_consistent(hist, root)


def test_spawns_per_write_and_commit(hist, root, monkeypatch):
    (root / "a.md").write_text("a\n")
    hist.sync()
    calls = count_spawns(monkeypatch)
    j = hist.begin("remember")
    assert calls == []
    put(j, root, "a.md", b"a2\n")
    assert len(calls) == 1  # update-index: the blob is written here, the index known from the sync's listing
    calls.clear()
    j.commit()
    assert len(calls) == 1  # update-ref: the tree and the commit are written here too
    calls.clear()
    assert hist.operations() and len(calls) == 1


def test_without_git_the_history_says_so(hist, monkeypatch, tmp_path):
    from mem.core import gitcmd

    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    gitcmd.binary.cache_clear()
    try:
        assert not hist.available()
        with pytest.raises(HistoryUnavailable, match="history needs git on PATH"):
            hist.sync()
    finally:
        monkeypatch.undo()
        gitcmd.binary.cache_clear()


def test_git_failures_are_one_line_errors(hist):
    hist.sync()
    with pytest.raises(MemError) as info:
        hist._git("cat-file", "-t", "not-an-object")
    assert "\n" not in str(info.value) and "git" in str(info.value)


def test_a_gitignore_in_the_memory_directory_hides_nothing(tmp_path):
    work = tmp_path / "memory"
    work.mkdir()
    (work / ".gitignore").write_text("*.md\n")
    (work / "note.md").write_text("kept\n")
    h = History(str(tmp_path / "state"), str(work))
    op = h.sync()
    assert op is not None and sorted(c.path for c in op.changes) == [".gitignore", "note.md"]


def test_a_sync_killed_between_staging_and_committing_loses_no_outside_change(hist, root, tmp_path):
    """Issue #31: the outside change was staged, the process killed before its commit, and the record lost for good."""
    hist.sync()
    (root / "edited.md").write_text("an editor's change\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "git").write_text("#!/bin/sh\n"
                                 'for a in "$@"; do [ "$a" = update-ref ] && { kill -9 $PPID; exit 1; }; done\n'
                                 f'exec {real_git} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    code = textwrap.dedent(f"""
        from mem.core.memdir.history import History
        History({hist.state_dir!r}, {str(root)!r}, exclude=[".*.tmp"]).sync()
    """)
    env = {**child_env(), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    hist.sync()
    op = next(op for op in hist.operations() if any(c.path == "edited.md" for c in op.changes))
    assert op.command == OUTSIDE
    assert_consistent(hist, root)


def test_the_objects_mem_writes_itself_are_the_ones_git_would_write(hist, root):
    """Blobs, trees and commits are written as loose objects without a spawn: byte for byte git's own."""
    (root / "a.md").write_text("a\n")
    hist.sync()
    with hist.begin("remember", ["b"]) as j:
        put(j, root, "a.md", b"a2\n")
        put(j, root, "b.md", b"\xff binary \0 b\n")
    (root / "a.md").unlink()
    hist.sync()
    assert git(hist, "fsck", "--strict", "--no-dangling").returncode == 0
    for op in hist.operations():
        commit = git(hist, "cat-file", "commit", op.id).stdout.decode()
        tree_line, author, _committer, _, message = commit.split("\n", 4)
        tree = tree_line.split()[1]
        listing = git(hist, "ls-tree", tree).stdout
        assert git(hist, "mktree", input=listing).stdout.decode().strip() == tree
        date = author.rsplit(" ", 2)[1]
        env = {"GIT_AUTHOR_DATE": f"{date} +0000", "GIT_COMMITTER_DATE": f"{date} +0000",
               "GIT_AUTHOR_NAME": "mem", "GIT_AUTHOR_EMAIL": "mem@localhost",
               "GIT_COMMITTER_NAME": "mem", "GIT_COMMITTER_EMAIL": "mem@localhost"}
        again = subprocess.run(["git", "commit-tree", tree], input=message.encode(), capture_output=True, check=True,
                               env={**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
                                    "GIT_DIR": hist.git_dir, "GIT_CONFIG_NOSYSTEM": "1",
                                    "GIT_CONFIG_GLOBAL": os.devnull, **env})
        assert again.stdout.decode().strip() == op.id
        for c in op.changes:
            for oid in (c.before, c.after):
                if oid:
                    assert git(hist, "cat-file", "-t", oid).stdout == b"blob\n"
    objects = Path(hist.git_dir, "objects")
    loose = [p for p in objects.glob("??/*")]
    assert loose and all(stat.S_IMODE(p.stat().st_mode) & 0o222 == 0 for p in loose)  # read-only, as git's
    assert not [p for p in loose if p.name.startswith("tmp_")]


def test_a_write_sees_what_another_writer_staged_since_this_one_last_read_the_index(hist, root):
    """The index is known without a spawn only while its checksum is the one this process left: another
    writer's staging in between is read back, not taken for an outside change."""
    (root / "a.md").write_text("a1\n")
    hist.sync()
    other = History(hist.state_dir, str(root), exclude=[".*.tmp"], refuse=refuse_secrets)
    with hist.begin("remember", ["first"]) as mine:
        put(mine, root, "b.md", b"b\n")  # this process now knows the index as it left it
        with other.begin("remember", ["other"]) as theirs:
            put(theirs, root, "a.md", b"a2\n")
        put(mine, root, "a.md", b"a3\n")
    assert [op.command for op in hist.operations()] == ["remember", "remember", OUTSIDE]
    assert [c.after for c in hist.operations()[0].changes if c.path == "a.md"] == [blob_oid(b"a3\n")]
    assert_consistent(hist, root)


def test_versions_are_read_without_a_spawn_while_loose_and_through_git_once_packed(hist, root, monkeypatch):
    (root / "a.md").write_bytes(b"a\0 binary\n")
    op = hist.sync()
    oid = op.changes[0].after
    calls = count_spawns(monkeypatch)
    assert hist.read_blob(oid) == b"a\0 binary\n" and calls == []
    assert git(hist, "gc", "--quiet").returncode == 0  # packed: no loose object left
    assert not Path(hist.git_dir, "objects", oid[:2], oid[2:]).exists()
    assert hist.read_blob(oid) == b"a\0 binary\n" and len(calls) == 1
    with pytest.raises(NotFoundError):
        hist.read_blob("0" * 40)


def test_the_files_mem_wrote_are_read_back_until_they_are_many_then_refreshed_once(hist, root, monkeypatch):
    """Entries mem staged carry no stat data: each listing compares their files' content, until there are more
    than a few, when one refresh gives them stat data; an edit that keeps size and mtime is seen either way."""
    hist.sync()
    with hist.begin("dream") as j:
        for n in range(history_mod._REFRESH_OVER + 1):
            put(j, root, f"n{n}.md", b"version one\n")
    calls = count_spawns(monkeypatch)
    assert hist.sync() is None
    assert [argv[argv.index("update-index"):] for argv in calls if "update-index" in argv] == [
        ["update-index", "-q", "--refresh", "--ignore-missing"]]
    calls.clear()
    assert hist.sync() is None and len(calls) == 1  # the listing alone, and it lists nothing
    st = os.stat(root / "n0.md")
    time.sleep(0.01)
    (root / "n0.md").write_bytes(b"version two\n")  # same size, same mtime: the ctime differs
    os.utime(root / "n0.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    with hist.begin("remember") as j:
        put(j, root, "m.md", b"mine\n")
    synced = hist.sync()
    assert synced is not None and [(c.path, c.after) for c in synced.changes] == [("n0.md", blob_oid(b"version two\n"))]
    assert hist.sync() is None
    assert_consistent(hist, root)
