"""The one write path: containment, atomicity, secrets, locks."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from mem.core.errors import ExitCode, LockedError, PathEscapeError, SecretError
from mem.core.memdir.store import MemoryDir, file_lock


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "memory"
    root.mkdir()
    return MemoryDir(str(root))


def listing(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_write_creates_file_and_parents(store, tmp_path):
    res = store.write("notes/a.md", "hello\n")
    assert res.created and res.changed and res.relpath == "notes/a.md"
    assert (tmp_path / "memory/notes/a.md").read_text() == "hello\n"


def test_identical_content_is_not_rewritten(store, tmp_path):
    p = tmp_path / "memory/a.md"
    store.write("a.md", "x")
    os.utime(p, (1_000_000, 1_000_000))
    res = store.write("a.md", "x")
    assert not res.changed
    assert p.stat().st_mtime == 1_000_000


def test_write_keeps_existing_mode(store, tmp_path):
    p = tmp_path / "memory/a.md"
    p.write_text("old")
    p.chmod(0o640)
    store.write("a.md", "new")
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert p.read_text() == "new"


def test_new_file_mode_follows_umask(store, tmp_path):
    old = os.umask(0o022)
    try:
        store.write("b.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "memory/b.md").stat().st_mode) == 0o644


@pytest.mark.parametrize("target", ["../escape.md", "a/../../escape.md", "/etc/passwd", "a\0b.md", "", "."])
def test_escapes_are_refused(store, tmp_path, target):
    with pytest.raises(PathEscapeError) as exc:
        store.write(target, "x")
    assert exc.value.exit_code == ExitCode.REFUSED
    assert listing(tmp_path / "memory") == []
    assert not (tmp_path / "escape.md").exists()


def test_absolute_path_inside_is_allowed(store, tmp_path):
    res = store.write(str(tmp_path / "memory" / "abs.md"), "x")
    assert res.relpath == "abs.md"


def test_symlinked_dir_leading_out_is_refused(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "memory/link").symlink_to(outside)
    with pytest.raises(PathEscapeError):
        store.write("link/x.md", "x")
    assert list(outside.iterdir()) == []


def test_symlinked_file_leading_out_is_refused(store, tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    (tmp_path / "memory/evil.md").symlink_to(target)
    with pytest.raises(PathEscapeError):
        store.write("evil.md", "overwrite")
    assert target.read_text() == "keep"


def test_dangling_link_is_refused(store, tmp_path):
    (tmp_path / "memory/dangling.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(PathEscapeError, match="dangling"):
        store.write("dangling.md", "x")
    assert not (tmp_path / "nowhere.md").exists()


def test_link_inside_pointing_inside_writes_through(store, tmp_path):
    (tmp_path / "memory/real.md").write_text("old")
    (tmp_path / "memory/alias.md").symlink_to("real.md")
    res = store.write("alias.md", "new")
    assert res.relpath == "real.md"
    assert (tmp_path / "memory/alias.md").is_symlink()
    assert (tmp_path / "memory/real.md").read_text() == "new"


def test_memory_root_that_is_a_symlink_works(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    store = MemoryDir(str(tmp_path / "via"))
    store.write("a.md", "x")
    assert (real / "a.md").read_text() == "x"


def test_writing_a_directory_is_refused(store, tmp_path):
    (tmp_path / "memory/d").mkdir()
    with pytest.raises(PathEscapeError):
        store.write("d", "x")


def test_secret_is_refused_and_never_echoed(store, tmp_path):
    token = "ghp_" + "".join("aB3"[i % 3] for i in range(36))
    with pytest.raises(SecretError) as exc:
        store.write("a.md", f"my token is {token}\n")
    assert exc.value.exit_code == ExitCode.REFUSED
    assert exc.value.rule_id == "github-pat"
    assert token not in str(exc.value)
    assert "a.md" in str(exc.value)
    assert listing(tmp_path / "memory") == []


def test_failed_write_leaves_no_temp_file(store, tmp_path, monkeypatch):
    (tmp_path / "memory/a.md").write_text("original")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        store.write("a.md", "new")
    assert listing(tmp_path / "memory") == ["a.md"]
    assert (tmp_path / "memory/a.md").read_text() == "original"


def test_kill_mid_write_never_leaves_a_partial_file(tmp_path):
    """A writer killed at any moment leaves either the old or the new bytes."""
    root = tmp_path / "memory"
    root.mkdir()
    (root / "a.md").write_text("old\n")
    big = "new line\n" * 400_000
    script = textwrap.dedent(
        f"""
        from mem.core.memdir.store import MemoryDir
        s = MemoryDir({str(root)!r})
        big = "new line\\n" * 400_000
        print("ready", flush=True)
        while True:
            s.write("a.md", big)
            s.write("a.md", "old\\n")
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.stdout.readline().strip() == b"ready"
    import time

    time.sleep(0.3)
    proc.kill()
    proc.wait()
    assert (root / "a.md").read_text() in ("old\n", big)
    assert [p.name for p in root.iterdir() if p.name != "a.md" and not p.name.endswith(".tmp")] == []
    # What a killed writer leaves is named so the sweep knows it, and readable by the owner only.
    from mem.core.memdir.layout import TEMP_FILE

    left = [p for p in root.iterdir() if p.name.endswith(".tmp")]
    assert all(TEMP_FILE.match(p.name) and p.name.startswith(".a.md.") and p.stat().st_mode & 0o777 == 0o600 for p in left)
    assert sorted(MemoryDir(str(root)).sweep_temp_files(older_than=-1)) == sorted(p.name for p in left)


def test_delete_refuses_index_and_escapes(store, tmp_path):
    (tmp_path / "memory/MEMORY.md").write_text("- [a](a.md)\n")
    (tmp_path / "memory/a.md").write_text("x")
    with pytest.raises(PathEscapeError):
        store.delete("MEMORY.md")
    with pytest.raises(PathEscapeError):
        store.delete("../x")
    store.delete("a.md")
    assert listing(tmp_path / "memory") == ["MEMORY.md"]


def test_update_index_is_read_modify_write(store, tmp_path):
    assert store.update_index(lambda old: None) is None
    store.update_index(lambda old: (old or "") + "- [A](a.md)\n")
    store.update_index(lambda old: old + "- [B](b.md)\n")
    assert (tmp_path / "memory/MEMORY.md").read_text() == "- [A](a.md)\n- [B](b.md)\n"


def test_index_lock_lives_outside_memory_dir(store, tmp_path):
    with store.index_lock():
        pass
    assert listing(tmp_path / "memory") == []


def test_file_lock_without_wait_raises_locked(tmp_path):
    path = str(tmp_path / "l.lock")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import fcntl,os,time;fd=os.open({path!r},os.O_RDWR|os.O_CREAT);fcntl.flock(fd,fcntl.LOCK_EX);print('held',flush=True);time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        with pytest.raises(LockedError) as exc:
            with file_lock(path, wait=False):
                pass
        assert exc.value.exit_code == ExitCode.LOCKED
    finally:
        holder.kill()
        holder.wait()
    with file_lock(path, wait=False):
        pass


def test_fifo_target_is_refused_not_blocked_on(store, tmp_path):
    os.mkfifo(tmp_path / "memory" / "pipe.md")
    with pytest.raises(PathEscapeError, match="regular file"):
        store.write("pipe.md", "x")


def test_sweep_removes_only_stale_temp_files(store, tmp_path):
    root = tmp_path / "memory"
    old = root / ".a.md.abcd1234.tmp"
    new = root / ".b.md.efgh5678.tmp"
    keep = root / "notes.tmp"
    for p in (old, new, keep):
        p.write_text("x")
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(keep, (1_000_000, 1_000_000))
    assert store.sweep_temp_files() == [".a.md.abcd1234.tmp"]
    assert not old.exists() and new.exists() and keep.exists()


def test_delete_of_a_link_removes_the_link_not_its_target(store, tmp_path):
    root = tmp_path / "memory"
    (root / "real.md").write_text("keep me")
    (root / "alias.md").symlink_to("real.md")
    store.delete("alias.md")
    assert not os.path.lexists(root / "alias.md") and (root / "real.md").read_text() == "keep me"
    outside = tmp_path / "outside.md"
    outside.write_text("outside")
    (root / "out.md").symlink_to(outside)
    store.delete("out.md")  # the link is inside: removing it is fine, the target stays
    assert outside.read_text() == "outside" and not os.path.lexists(root / "out.md")


def test_the_team_tier_is_asked_of_the_memory_dir(tmp_path):
    # the same rule as MemoryDir.team_enabled: a directory named team/, never a link to one
    memory = MemoryDir(tmp_path / "m")
    assert not memory.team_enabled
    (tmp_path / "elsewhere").mkdir()
    os.makedirs(memory.root)
    os.symlink(tmp_path / "elsewhere", os.path.join(memory.root, "team"))
    assert not memory.team_enabled
    os.unlink(os.path.join(memory.root, "team"))
    os.mkdir(os.path.join(memory.root, "team"))
    assert memory.team_enabled
