"""mem scan semantics (reference §3): recursion, exclusions, order, cap, format."""

from __future__ import annotations

import os

import pytest
from conftest import write_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem.core.memdir.index import check_headers as check
from mem.core.memdir.store import MemoryDir
from mem.core.memdir.manifest import format_manifest, iso_utc_ms, read_head, scan


def test_iso_timestamp_matches_js_toisostring():
    assert iso_utc_ms(1700000000123) == "2023-11-14T22:13:20.123Z"
    assert iso_utc_ms(0) == "1970-01-01T00:00:00.000Z"


def test_manifest_line_format_exact(tmp_path):
    p = write_memory(tmp_path, "feedback_testing.md", name="t", description="integration tests must hit a real DB", type="feedback")
    os.utime(p, ns=(1700000000123_456789, 1700000000123_456789))
    (h,) = scan(str(tmp_path))
    assert h.manifest_line() == "- [feedback] feedback_testing.md (2023-11-14T22:13:20.123Z): integration tests must hit a real DB"


def test_type_and_description_omitted_when_absent(tmp_path):
    (tmp_path / "plain.md").write_text("no frontmatter\n")
    os.utime(tmp_path / "plain.md", (1700000000, 1700000000))
    (h,) = scan(str(tmp_path))
    assert h.manifest_line() == "- plain.md (2023-11-14T22:13:20.000Z)"
    assert [w.code for w in h.warnings] == ["no-frontmatter"]


def test_unknown_type_is_reported_and_file_still_listed(tmp_path):
    write_memory(tmp_path, "a.md", name="a", description="d", type="bug")
    (h,) = scan(str(tmp_path))
    assert h.type is None and h.raw_type == "bug"
    assert h.manifest_line().startswith("- a.md (")
    assert [w.code for w in h.warnings] == ["unknown-type"]


def test_recursive_every_memory_md_excluded_newest_first(tmp_path):
    write_memory(tmp_path, "old.md", name="o", description="old", mtime=1000)
    write_memory(tmp_path, "team/shared.md", name="s", description="shared", mtime=3000)
    write_memory(tmp_path, "logs/2026/03/2026-03-01.md", name="l", description="log", mtime=2000)
    (tmp_path / "MEMORY.md").write_text("- [o](old.md)\n")
    (tmp_path / "team/MEMORY.md").write_text("- [s](shared.md)\n")
    (tmp_path / "notes.txt").write_text("not markdown")
    (tmp_path / ".consolidate-lock").write_text("123")
    assert [h.relpath for h in scan(str(tmp_path))] == ["team/shared.md", "logs/2026/03/2026-03-01.md", "old.md"]


def test_cap_200_unless_all(tmp_path):
    for i in range(205):
        write_memory(tmp_path, f"m{i:03}.md", name=f"m{i}", description=f"memory {i}", mtime=10_000 + i)
    capped = scan(str(tmp_path))
    assert len(capped) == 200
    assert capped[0].relpath == "m204.md" and capped[-1].relpath == "m005.md"
    assert len(scan(str(tmp_path), limit=None)) == 205


def test_directory_named_md_is_dropped_but_descended(tmp_path):
    (tmp_path / "weird.md").mkdir()
    write_memory(tmp_path, "weird.md/inner.md", name="i", description="inner")
    assert [h.relpath for h in scan(str(tmp_path))] == ["weird.md/inner.md"]


def test_symlink_loop_is_harmless(tmp_path):
    write_memory(tmp_path, "a.md", name="a", description="a")
    (tmp_path / "loop").symlink_to(tmp_path)
    assert [h.relpath for h in scan(str(tmp_path))] == ["a.md"]


def test_only_first_30_lines_are_read(tmp_path):
    fm = "---\n" + "".join(f"k{i}: v\n" for i in range(28)) + "type: user\n---\n"
    (tmp_path / "long.md").write_text(fm)
    (h,) = scan(str(tmp_path))
    # The closing --- is line 31: the frontmatter is never closed within the read.
    assert h.type is None
    assert [w.code for w in h.warnings] == ["unclosed-frontmatter"]


def test_read_head_strips_bom_and_cr(tmp_path):
    (tmp_path / "a.md").write_bytes(b"\xef\xbb\xbf---\r\nname: a\r\ntype: user\r\n---\r\nbody")
    assert read_head(str(tmp_path / "a.md")) == "---\nname: a\ntype: user\n---\nbody"
    (h,) = scan(str(tmp_path))
    assert h.type == "user"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.text(alphabet="ab\r\ufeff-: é", max_size=700), max_size=60), bom=st.booleans())
def test_read_head_is_the_first_30_lines_split_as_javascript_does(tmp_path, lines, bom):
    data = ("\ufeff" if bom else "") + "\n".join(lines)
    path = tmp_path / "h.md"
    path.write_bytes(data.encode("utf-8"))
    text = data[1:] if data.startswith("\ufeff") else data  # one BOM is dropped, as Claude's read does
    want = "\n".join(line[:-1] if line.endswith("\r") else line for line in text.split("\n")[:30])
    assert read_head(str(path)) == want


def test_metadata_type_as_newer_claude_writes_it(tmp_path):
    (tmp_path / "m.md").write_text("---\nname: m\ndescription: d\nmetadata: \n  node_type: memory\n  type: project\n---\n")
    (h,) = scan(str(tmp_path))
    assert h.type == "project" and h.warnings == []


def test_check_reports_unindexed_and_secrets_without_the_secret(tmp_path):
    write_memory(tmp_path, "listed.md", name="l", description="listed")
    token = "xoxb-" + "1" * 11 + "-" + "2" * 11 + "abc"
    write_memory(tmp_path, "leak.md", name="k", description="leak", body=f"token {token}\n")
    (tmp_path / "MEMORY.md").write_text("- [Listed](listed.md) — x\n- [Leak](leak.md) — y\n")
    write_memory(tmp_path, "orphan.md", name="o", description="orphan")
    headers = scan(str(tmp_path))
    check(MemoryDir(tmp_path), headers)
    by = {h.relpath: [w.code for w in h.warnings] for h in headers}
    assert by == {"listed.md": [], "leak.md": ["secret"], "orphan.md": ["not-indexed"]}
    leak = next(h for h in headers if h.relpath == "leak.md")
    assert "slack-bot-token" in leak.warnings[0].message and "line 7" in leak.warnings[0].message
    assert token not in leak.warnings[0].message


def test_format_manifest_joins_lines(tmp_path):
    write_memory(tmp_path, "a.md", name="a", description="A", mtime=2000)
    write_memory(tmp_path, "b.md", name="b", description="B", mtime=1000)
    assert format_manifest(scan(str(tmp_path))).split("\n")[1].startswith("- [user] b.md (")


# --- the header cache (recall's scan on every prompt) ------------------------------------------

def _cache_entries(cache_dir) -> dict:
    import marshal

    return marshal.loads((cache_dir / "manifest.marshal").read_bytes())["entries"]


#: Tests that take a settled memory directory (the ``settled`` fixture): one wait serves them all.
_SETTLED_TESTS = 5


@pytest.fixture(scope="module")
def _settled_dirs(tmp_path_factory):
    """Memories whose inodes changed over 2 s ago: old enough for the cache to keep. ctime cannot be set back,
    so they are made for every test at once and waited for once (2.1 s), not once a test."""
    import time

    dirs = []
    for i in range(_SETTLED_TESTS):
        root = tmp_path_factory.mktemp(f"settled{i}") / "m"
        write_memory(root, "a.md", name="a", description="alpha deploys", type="project", mtime=1000)
        write_memory(root, "b.md", name="b", description="beta", type="bug", mtime=2000)
        (root / "c.md").write_text("no frontmatter\n")
        write_memory(root, "sub/d.md", name="d", description="delta", mtime=3000)
        (root / "e.md").write_text("---\nname: e\ndescription: listed\ntype: [project, user]\n---\n")
        (root.parent / "cache").mkdir()
        dirs.append((root, root.parent / "cache"))
    time.sleep(2.1)
    return iter(dirs)


@pytest.fixture
def settled(_settled_dirs):
    """(memory directory, empty cache directory), the memories settled: each test its own."""
    return next(_settled_dirs)


def test_cached_scan_equals_a_plain_scan_and_keeps_settled_files(settled):
    root, cache = settled
    plain = scan(str(root))
    first = scan(str(root), cache_dir=str(cache))
    second = scan(str(root), cache_dir=str(cache))
    assert first == plain and second == plain
    assert sorted(_cache_entries(cache)) == ["a.md", "b.md", "c.md", "e.md", "sub/d.md"]
    by_rel = {h.relpath: h for h in second}
    assert [w.code for w in by_rel["b.md"].warnings] == ["unknown-type"]
    assert by_rel["e.md"].raw_type == ["project", "user"] and by_rel["e.md"].type is None


def test_a_rewrite_with_the_same_size_and_mtime_is_seen(settled):
    root, cache = settled
    scan(str(root), cache_dir=str(cache))
    a = root / "a.md"
    st = a.stat()
    a.write_text(a.read_text().replace("alpha deploys", "gamma deploys"))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as they were; ctime moves
    assert a.stat().st_size == st.st_size and a.stat().st_mtime_ns == st.st_mtime_ns
    headers = {h.relpath: h for h in scan(str(root), cache_dir=str(cache))}
    assert headers["a.md"].description == "gamma deploys"
    # Just written: not kept until it settles, so a second write in the same clock tick shows too.
    assert "a.md" not in _cache_entries(cache)


def test_deleted_files_leave_the_cache_and_a_broken_cache_is_ignored(settled):
    root, cache = settled
    scan(str(root), cache_dir=str(cache))
    (root / "sub" / "d.md").unlink()
    assert [h.relpath for h in scan(str(root), cache_dir=str(cache))] == [h.relpath for h in scan(str(root))]
    assert "sub/d.md" not in _cache_entries(cache)
    (cache / "manifest.marshal").write_bytes(b"\x00garbage")
    assert scan(str(root), cache_dir=str(cache)) == scan(str(root))
    assert sorted(_cache_entries(cache)) == ["a.md", "b.md", "c.md", "e.md"]


def test_files_too_new_to_keep_do_not_rewrite_the_cache(settled):
    root, cache = settled
    scan(str(root), cache_dir=str(cache))
    saved = (cache / "manifest.marshal").stat()
    write_memory(root, "new.md", name="n", description="just written")
    for _ in range(3):
        assert "new.md" in [h.relpath for h in scan(str(root), cache_dir=str(cache))]
    assert (cache / "manifest.marshal").stat().st_ino == saved.st_ino  # not rewritten for a file it cannot keep


def test_saving_the_cache_sweeps_what_killed_writers_left_beside_it(settled):
    root, cache = settled
    stale = [cache / ".manifest.marshal.0a1b2c3d.tmp", cache / ".recall-index.marshal.deadbeef.tmp"]
    fresh = cache / ".manifest.marshal.12345678.tmp"  # perhaps another process writing right now
    keep = cache / "sessions" / ".s1.json.abcdef01.tmp"  # not this directory's: left alone
    keep.parent.mkdir()
    for p in (*stale, fresh, keep):
        p.write_bytes(b"half")
    for p in (*stale, keep):
        os.utime(p, (1000, 1000))
    scan(str(root), cache_dir=str(cache))
    assert not any(p.exists() for p in stale)
    assert fresh.exists() and keep.exists() and (cache / "manifest.marshal").exists()
