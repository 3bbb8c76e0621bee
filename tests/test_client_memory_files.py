"""Memory files as the current clients write them: mem's edits keep Claude Code's metadata.modified true."""

from __future__ import annotations

import calendar
import os
import re
import time

from mem.core.memdir.frontmatter import keep_modified_true, parse_frontmatter
from mem.core.memdir.manifest import iso_utc_ms
from mem.core.memdir.store import MemoryDir

# As Claude Code 2.1.330 writes a memory with its Write tool (tests/fixtures/claude-code-2.1.330).
CC330 = """---
name: release-freeze
description: no deploys on Fridays during the release freeze
metadata:
  node_type: memory
  type: project
  originSessionId: 5b0d2c36-2f7e-4d0e-9b55-0c1d4a1e2f3a
  modified: 2026-11-20T10:00:00.000Z
---

No deploys on Fridays until the 3.0 release ships.
"""
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def modified_of(text: str) -> str:
    return parse_frontmatter(text).data["metadata"]["modified"]


def test_an_edit_moves_the_stamp_and_nothing_else(tmp_path):
    md = MemoryDir(tmp_path)
    (tmp_path / "release-freeze.md").write_text(CC330)
    before = time.time()
    md.write("release-freeze.md", CC330.replace("3.0 release", "3.1 release"))
    text = (tmp_path / "release-freeze.md").read_text()
    stamp = modified_of(text)
    assert ISO_MS.match(stamp) and stamp > "2026-11-20T10:00:00.000Z"
    assert abs(calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - before) < 60
    # every other byte as the edit wrote it
    assert text == CC330.replace("3.0 release", "3.1 release").replace("2026-11-20T10:00:00.000Z", stamp)


def test_a_rewrite_that_dropped_the_key_gets_it_back():
    old = CC330.encode()
    new = CC330.replace("  modified: 2026-11-20T10:00:00.000Z\n", "").replace("3.0", "3.2").encode()
    out = keep_modified_true(old, new, now_ms=1_795_000_000_000).decode()
    assert modified_of(out) == iso_utc_ms(1_795_000_000_000) == "2026-11-18T11:06:40.000Z"
    assert "3.2 release" in out


def test_files_without_the_stamp_are_left_alone(tmp_path):
    older = "---\nname: a\ndescription: b\nmetadata:\n  type: user\n---\n\nbody\n"
    assert keep_modified_true(older.encode(), older.replace("body", "new body").encode()) == \
        older.replace("body", "new body").encode()
    md = MemoryDir(tmp_path)
    md.write("a.md", older)
    assert (tmp_path / "a.md").read_text() == older


def test_remember_update_keeps_the_stamp_true(memdir, run_mem):
    (memdir / "release-freeze.md").write_text(CC330)
    os.utime(memdir / "release-freeze.md", (0, 0))
    p = run_mem("remember", "--update", "--file", "release-freeze.md", "--type", "project", "--name", "release-freeze",
                "--description", "no deploys on Fridays during the release freeze",
                "No deploys on Fridays until the 3.1 release ships.")
    assert p.returncode == 0, p.stderr
    text = (memdir / "release-freeze.md").read_text()
    assert "3.1 release" in text
    assert modified_of(text) > "2026-11-20T10:00:00.000Z"
    assert "originSessionId: 5b0d2c36-2f7e-4d0e-9b55-0c1d4a1e2f3a" in text


def test_freshness_is_the_files_mtime_not_the_stamp(memdir, run_mem):
    # Claude Code 2.1.330 dates a surfaced memory by its mtime; metadata.modified does not count
    stamped = CC330.replace("2026-11-20T10:00:00.000Z", iso_utc_ms(time.time() * 1000))
    (memdir / "release-freeze.md").write_text(stamped)
    month_ago = time.time() - 30 * 86400
    os.utime(memdir / "release-freeze.md", (month_ago, month_ago))
    p = run_mem("recall", "--offline", "are there deploys on fridays during the release freeze")
    assert p.returncode == 0, p.stderr
    assert "This memory is 30 days old." in p.stdout


def test_undo_restores_the_clients_bytes(memdir, run_mem):
    (memdir / "release-freeze.md").write_text(CC330)
    p = run_mem("remember", "--update", "--file", "release-freeze.md", "--type", "project", "--name", "release-freeze",
                "--description", "no deploys on Fridays during the release freeze", "Fridays are fine again.")
    assert p.returncode == 0, p.stderr
    assert modified_of((memdir / "release-freeze.md").read_text()) != "2026-11-20T10:00:00.000Z"
    p = run_mem("undo")
    assert p.returncode == 0, p.stderr
    assert (memdir / "release-freeze.md").read_text() == CC330
