"""An adversarial second reading of the history store: what an earlier change let through, each a real repository."""

from __future__ import annotations

import os

import pytest

from mem.core.memdir.history import History, blob_oid
from test_history_store import assert_consistent, hist, put, recorded, refuse_secrets, root  # noqa: F401 (fixtures)


@pytest.mark.parametrize(("attributes", "before", "after"), [
    ("* text eol=crlf\n", b"one\ntwo\n", b"one\r\ntwo\r\n"),
    ("* text=auto\n", b"one\ntwo\n", b"one\r\ntwo\r\n"),
    ("* ident\n", b"id $Id$\n", b"id $Id: edited by hand $\n"),
    ("*.md working-tree-encoding=UTF-16\n", "caf\u00e9\n".encode(), "caf\u00e9\n".encode("utf-16")),
])
def test_a_gitattributes_in_the_memory_directory_hides_no_outside_edit(hist, root, attributes, before, after):
    """Git hashes a work-tree file through the attributes it finds there (line endings, $Id$, encodings) when it
    compares it with the index: the store's own info/attributes turns them all off, so bytes are bytes."""
    (root / ".gitattributes").write_text(attributes)
    (root / "a.md").write_bytes(before)
    hist.sync()
    (root / "a.md").write_bytes(after)
    op = hist.sync()
    assert op is not None and [(c.path, c.before, c.after) for c in op.changes] == [
        ("a.md", blob_oid(before), blob_oid(after))]
    assert_consistent(hist, root)


def test_a_store_made_before_the_attributes_file_gets_it(tmp_path, root):
    hist = History(str(tmp_path / "state"), str(root), exclude=[".*.tmp"], refuse=refuse_secrets)
    (root / "a.md").write_bytes(b"one\ntwo\n")
    hist.sync()
    (tmp_path / "state" / "history.git" / "info" / "attributes").unlink()
    (root / ".gitattributes").write_text("* text eol=crlf\n")
    (root / "a.md").write_bytes(b"one\r\ntwo\r\n")
    op = hist.sync()
    assert op is not None and sorted(c.path for c in op.changes) == [".gitattributes", "a.md"]


@pytest.mark.parametrize("flip", ["a directory became the file mem writes", "a file became the directory mem writes in"])
def test_a_write_where_the_index_records_a_directory_as_a_file_or_back_records_what_git_drops(hist, root, flip):
    """Staging x.md drops x.md/inner.md from the index (and staging x.md/inner.md drops x.md): a path the
    editor replaced with one of the other kind since the last sync. Its deletion is history too, recorded
    before mem's write as every outside change is; before, it was dropped unrecorded and the history
    replayed to a file that no longer existed."""
    import shutil

    if flip.startswith("a directory"):
        (root / "x.md").mkdir()
        (root / "x.md" / "inner.md").write_text("inner\n")
        hist.sync()
        shutil.rmtree(root / "x.md")
        (root / "x.md").write_text("the editor's file\n")
        with hist.begin("remember") as j:
            put(j, root, "x.md", b"mem's file\n")
        gone = "x.md/inner.md"
    else:
        (root / "x.md").write_text("file\n")
        hist.sync()
        (root / "x.md").unlink()
        with hist.begin("remember") as j:
            put(j, root, "x.md/inner.md", b"mem's inner\n")
        gone = "x.md"
    outside, own = hist.operations()[1], hist.operations()[0]
    assert outside.command == "outside" and any(c.path == gone and c.after is None for c in outside.changes)
    assert own.command == "remember" and gone not in [c.path for c in own.changes]
    assert hist._index() == recorded(hist)  # what this process knows of the index is what git reads in it
    assert hist.sync() is None
    assert_consistent(hist, root)


@pytest.mark.parametrize("name", [".GIT", ".Git/x.md", "a/.gIt", "GIT~1/x.md", ".git /x.md", ".git./y.md"])
def test_a_name_git_would_refuse_to_stage_is_recorded_once_or_never(hist, root, name):
    """update-index skips a path it refuses ("Ignoring path", exit 0): one recorded as created but never staged
    was recorded as created again by every sync after. A .git of any case is left out as .git is; the names
    refused only to protect a checkout on NTFS or HFS+ (this store checks nothing out) are recorded."""
    hist.sync()
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text("x\n")
    first = hist.sync()
    assert hist.sync() is None
    if ".git" in name.lower().split("/"):
        assert first is None
    else:
        assert [c.path for c in first.changes] == [name]
        assert_consistent(hist, root)


def test_a_blob_in_a_new_fan_out_directory_is_durable_with_that_directory(hist, root, monkeypatch):
    """A blob is on disk before the journal line naming it: its file, the objects/<2 hex> directory holding it,
    and, when that directory is new (git prune removes the empty ones, so often), objects/ holding the directory."""
    hist.sync()
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    data = b"a version in a fan-out directory git prune removed\n"
    oid = blob_oid(data)
    objects = os.path.join(hist.git_dir, "objects")
    assert not os.path.exists(os.path.join(objects, oid[:2]))
    with hist.begin("remember") as j:
        put(j, root, "a.md", data)
    journal = next(n for n, path in enumerate(synced) if "/journal/" in path)
    before = synced[:journal]
    assert any(path.startswith(os.path.join(objects, oid[:2], "tmp_obj_")) for path in before)  # then renamed
    assert {os.path.join(objects, oid[:2]), objects} <= set(before)


@pytest.mark.parametrize("seed", range(2))
def test_two_writers_and_an_editor_flipping_files_and_directories_at_random(tmp_path, root, seed):
    """Two History objects (each knowing the index as it last left it), an editor replacing files with
    directories and back and editing in place with the mtime put back, garbage collection in between: the
    history replays to the files, git reads in the index what each writer believes, and fsck --strict passes."""
    import random
    import shutil

    from test_history_store import git, recorded

    rnd = random.Random(seed)
    writers = [History(str(tmp_path / "state"), str(root), exclude=[".*.tmp"], refuse=refuse_secrets) for _ in range(2)]
    writers[0].sync()
    names = ["a.md", "d", "d/x.md", "d/e/y.md", "d/e", "10.after", "2.before"]
    for i in range(200):
        h, r, path = rnd.choice(writers), rnd.random(), root / rnd.choice(names)
        if r < 0.5:
            with h.begin("remember", [str(i)]) as j:
                for name in rnd.sample(names, rnd.randint(1, 3)):
                    new = None if rnd.random() < 0.2 else b"v%d\n" % rnd.randint(0, 3)
                    if not (root / name).is_dir() and (new is not None or (root / name).exists()):
                        try:
                            put(j, root, name, new)
                        except (NotADirectoryError, FileExistsError):  # a file where the write needs a directory
                            pass
        elif r < 0.7:
            if path.is_dir():
                shutil.rmtree(path)
                path.write_text("a file now\n")
            elif path.exists():
                path.unlink()
                path.mkdir()
                (path / "in.md").write_text("a directory now\n")
        elif r < 0.85 and path.is_file():
            st, data = os.stat(path), path.read_bytes()
            with open(path, "r+b") as f:  # same inode, same size, the mtime put back
                f.write(bytes([data[0] ^ 1]) + data[1:])
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        elif r < 0.9:
            h._gc([], prune_now=rnd.random() < 0.5)
        if rnd.random() < 0.3:
            h.sync()
        for w in writers:
            known = w._cached_index()
            assert known is None or known == recorded(w)
    writers[0].sync()
    assert_consistent(writers[0], root)
    assert writers[1].sync() is None
    assert git(writers[0], "fsck", "--strict", "--no-dangling").returncode == 0


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to hand files to another user")
def test_a_version_another_user_left_in_the_store_is_taken_as_there():
    """A `sudo mem ...` once leaves objects owned by root, read-only: writing the same content again must not fail
    on touching them (fast-import took an object that is there as there; the loose writer raised EACCES)."""
    import pwd
    import shutil
    import tempfile
    from pathlib import Path

    nobody = pwd.getpwnam("nobody")
    # A directory of its own in the system's temporary directory (1777, so another user reaches it), not under
    # pytest's, whose root is 0700 and shared by every test of the run.
    base = Path(tempfile.mkdtemp(prefix="mem-other-user-"))
    try:
        _another_users_object(base, nobody)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _another_users_object(base, nobody) -> None:
    state, root = base / "state", base / "memory"
    root.mkdir()
    (root / "a.md").write_text("the same content\n")
    History(str(state), str(root), exclude=[".*.tmp"]).sync()
    oid = blob_oid(b"the same content\n")
    for dirpath, dirs, files in os.walk(base):
        for name in dirs + files:
            os.lchown(os.path.join(dirpath, name), nobody.pw_uid, nobody.pw_gid)
    os.chown(base, nobody.pw_uid, nobody.pw_gid)
    os.chown(state / "history.git" / "objects" / oid[:2] / oid[2:], 0, 0)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            with History(str(state), str(root), exclude=[".*.tmp"]).begin("remember") as j:
                put(j, root, "b.md", b"the same content\n")
            code = 0
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    hist = History(str(state), str(root), exclude=[".*.tmp"])
    assert hist.operations()[0].changes[0].after == oid and hist.read_blob(oid) == b"the same content\n"
