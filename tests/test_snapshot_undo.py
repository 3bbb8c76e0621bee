"""Snapshots and mem undo: byte-identical restores, undo of undo."""

from __future__ import annotations

import json
import os

from conftest import write_memory

from mem.core.memdir import snapshot


def tree_bytes(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (os.readlink(p) if os.path.islink(p) else open(p, "rb").read(), st.st_mtime_ns, st.st_mode)
    return out


def test_take_and_restore_byte_identical(memdir):
    write_memory(memdir, "a.md", name="a", description="A", mtime=1_000_000)
    write_memory(memdir, "sub/b.md", name="b", description="B", mtime=2_000_000)
    (memdir / "MEMORY.md").write_text("- [A](a.md)\n")
    (memdir / "link.md").symlink_to("a.md")
    (memdir / ".consolidate-lock").write_text("123")
    before = tree_bytes(memdir)
    snap = snapshot.take(str(memdir), "dream")
    assert snap.files == 4  # the lock is not memory content
    # Change everything: edit, delete, create, new subdir, replace the link.
    (memdir / "a.md").write_text("changed")
    (memdir / "sub/b.md").unlink()
    write_memory(memdir, "new/c.md", name="c", description="C")
    (memdir / "link.md").unlink()
    (memdir / "link.md").write_text("now a file")
    changes = snapshot.restore(str(memdir), snap)
    assert changes.created == ["sub/b.md"] and sorted(changes.updated) == ["a.md", "link.md"] and changes.deleted == ["new/c.md"]
    after = tree_bytes(memdir)
    after.pop(".consolidate-lock")
    before.pop(".consolidate-lock")
    assert after == before
    assert not (memdir / "new").exists()


def test_restore_puts_back_a_secret_the_user_had(memdir):
    key = "AKIA" + "QWERTYUIOPASDFGH"
    (memdir / "old.md").write_text(f"legacy {key}\n")
    snap = snapshot.take(str(memdir), "forget")
    (memdir / "old.md").unlink()
    snapshot.restore(str(memdir), snap)
    assert (memdir / "old.md").read_text() == f"legacy {key}\n"


def test_keep_prunes_oldest(memdir):
    write_memory(memdir, "a.md", name="a", description="A")
    ids = [snapshot.take(str(memdir), f"job{i}", keep=3).id for i in range(5)]
    assert [s.id for s in snapshot.list_snapshots(str(memdir))] == ids[::-1][:3]


def test_unified_diff(memdir, tmp_path):
    write_memory(memdir, "a.md", name="a", description="A")
    snap = snapshot.take(str(memdir), "x")
    (memdir / "a.md").write_text("new body\n")
    diff = snapshot.unified_diff(os.path.join(snap.path, "tree"), str(memdir))
    assert "--- a/a.md" in diff and "+new body" in diff


def test_cli_undo_list_dry_run_and_undo_of_undo(run_mem, memdir):
    write_memory(memdir, "a.md", name="a", description="A", mtime=1_000_000)
    original = tree_bytes(memdir)
    snapshot.take(str(memdir), "dream")
    (memdir / "a.md").write_text("damaged\n")
    damaged = tree_bytes(memdir)

    r = run_mem("undo", "--list", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["command"] == "dream"
    r = run_mem("undo", "--dry-run")
    assert r.returncode == 0 and "-damaged" in r.stdout
    assert tree_bytes(memdir) == damaged
    r = run_mem("undo", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["updated"] == ["a.md"]
    assert tree_bytes(memdir) == original
    r = run_mem("undo")  # the undo snapshotted "damaged" first
    assert r.returncode == 0
    assert tree_bytes(memdir)["a.md"][0] == b"damaged\n"


def test_cli_undo_without_snapshots_exits_1(run_mem, memdir):
    r = run_mem("undo")
    assert r.returncode == 1 and r.stderr.startswith("mem: error: no snapshots")
