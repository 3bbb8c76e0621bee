"""Surfacing byte for byte as Claude Code does it; when recall is skipped; the hook output budget."""

from __future__ import annotations

import os
import time

import pytest

from conftest import write_memory
from mem.core.memdir.store import MemoryDir
from mem.core import recall
from mem.core.jscompat import len16

DAY = 86_400_000
NOTE = "\n\n> This memory file was truncated ({}). Use the Read tool to view the complete file at: {}"


def _file(tmp_path, text: str | bytes, name: str = "m.md"):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(p)


# --- reading ----------------------------------------------------------------


def test_a_short_file_is_surfaced_whole(tmp_path):
    p = _file(tmp_path, "---\nname: a\n---\n\nbody\n")
    r = recall.read_for_surfacing(p)
    assert (r.content, r.truncated) == ("---\nname: a\n---\n\nbody\n", None)


def test_200_lines_then_the_line_note(tmp_path):
    p = _file(tmp_path, "".join(f"l{i}\n" for i in range(300)))
    r = recall.read_for_surfacing(p)
    assert r.truncated == "lines"
    assert r.content == "\n".join(f"l{i}" for i in range(200)) + NOTE.format("first 200 lines", p)


def test_exactly_200_lines_and_a_trailing_newline_count_as_201(tmp_path):
    # Claude Code counts the empty string after the last newline as a line.
    p = _file(tmp_path, "".join(f"l{i}\n" for i in range(200)))
    assert recall.read_for_surfacing(p).truncated == "lines"
    p = _file(tmp_path, "\n".join(f"l{i}" for i in range(200)), "n.md")
    assert recall.read_for_surfacing(p).truncated is None


def test_4096_utf8_bytes_then_the_byte_note(tmp_path):
    line = "é" * 99  # 198 bytes
    p = _file(tmp_path, "\n".join([line] * 40))
    r = recall.read_for_surfacing(p)
    # 20 lines take 20*198 + 19 = 3979 bytes; the 21st would make 4178
    assert r.truncated == "bytes"
    assert r.content == "\n".join([line] * 20) + NOTE.format("4096 byte limit", p)
    assert len("\n".join([line] * 20).encode()) <= 4096


def test_a_first_line_over_4096_bytes_leaves_nothing_but_the_note(tmp_path):
    p = _file(tmp_path, "x" * 5000 + "\nrest\n")
    assert recall.read_for_surfacing(p).content == NOTE.format("4096 byte limit", p)


def test_bom_and_crlf_are_dropped(tmp_path):
    p = _file(tmp_path, b"\xef\xbb\xbf---\r\nname: a\r\n---\r\nbody\r\n")
    assert recall.read_for_surfacing(p).content == "---\nname: a\n---\nbody\n"


# --- headers ----------------------------------------------------------------


def test_headers_and_freshness_text():
    now = 1_700_000_000_000
    assert recall.memory_header("/m/a.md", now - 5, now) == "Memory (saved today): /m/a.md:"
    assert recall.memory_header("/m/a.md", now - DAY - 1, now) == "Memory (saved yesterday): /m/a.md:"
    assert recall.memory_header("/m/a.md", now - 2 * DAY, now) == (
        "This memory is 2 days old. Memories are point-in-time observations, not live state — claims about "
        "code behavior or file:line citations may be outdated. Verify against current code before asserting "
        "as fact.\n\nMemory: /m/a.md:"
    )
    assert recall.memory_age_days(now + 10 * DAY, now) == 0  # a file from the future is "today"
    assert recall.reminder("H", "C") == "<system-reminder>\nH\n\nC\n</system-reminder>"


# --- words -------------------------------------------------------------------


@pytest.mark.parametrize("text, words", [
    ("hello", 1), ("  hello  ", 1), ("fix-the-bug", 1), ("hello world", 2),
    ("数据仓库迁移", 3), ("你好", 1), ("部署失败了", 2), ("テスト", 1),
    ("iOS アプリのリリース日", 5), ("", 0), ("deploy 失败", 2),
])
def test_word_count(text, words):
    assert recall.word_count(text) == words


def test_skip_reasons():
    assert recall.skip_reason("") == "empty_prompt"
    assert recall.skip_reason("   \n") == "empty_prompt"
    assert recall.skip_reason("deploy") == "one_word"
    assert recall.skip_reason("deploy", force=True) is None
    assert recall.skip_reason("数据仓库迁移到哪里") is None  # a sentence, though it has no spaces


# --- the whole path, offline ---------------------------------------------------------


def test_recall_surfaces_blocks_in_claude_format(memdir):
    old = time.time() - 3 * 86400
    p = write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                     type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n", mtime=old)
    write_memory(memdir, "tabs.md", name="tabs", description="user prefers tabs", body="Tabs.\n")
    r = recall.recall(MemoryDir(memdir), "the staging deploy failed on a migration timeout", offline=True)
    assert r.strategy == "offline"
    assert [s.relpath for s in r.selected] == ["staging.md"]
    s = r.selected[0]
    assert s.age_days == 3
    assert r.context() == (
        "<system-reminder>\n"
        + recall.freshness_text(3) + f"\n\nMemory: {p}:\n\n"
        + p.read_text() + "\n</system-reminder>"
    )
    assert r.surfaced_bytes == len16(p.read_text())


def test_limit(memdir):
    for i in range(8):
        write_memory(memdir, f"deploy{i}.md", name=f"deploy-{i}", description=f"staging deploy rule {i}",
                     body="staging deploy\n")
    r = recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True, limit=3)
    assert len(r.selected) == 3


def test_nothing_to_recall_from(tmp_path):
    r = recall.recall(MemoryDir(tmp_path / "none"), "where is the staging dashboard", offline=True)
    assert (r.strategy, r.skipped, r.selected) == ("none", "no_memories", [])


def test_a_file_that_vanishes_after_the_scan_is_dropped(memdir, monkeypatch):
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    real = recall.read_for_surfacing

    def gone(path):
        os.unlink(path)
        return real(path)

    monkeypatch.setattr(recall, "read_for_surfacing", gone)
    r = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True)
    assert r.selected == []


# --- the hook output budget --------------------------------------------------------


def _big(memdir, n=5, lines=60, width=70):
    paths = []
    for i in range(n):
        body = "\n".join(f"deploy staging rule {i} line {j} " + "x" * width for j in range(lines)) + "\n"
        paths.append(write_memory(memdir, f"big{i}.md", name=f"big-{i}", description=f"staging deploy rules part {i}",
                                  body=body, mtime=time.time() - 10 * 86400))
    return paths


def test_five_large_memories_fit_the_hook_limit(memdir):
    _big(memdir)
    full = recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True)
    assert len(full.selected) == 5
    assert all(s.truncated == "bytes" for s in full.selected)
    assert len16(full.context()) > 10_000  # what Claude Code would replace with a stub

    fitted = recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True, max_chars=9_500)
    ctx = fitted.context()
    assert len(fitted.selected) == 5
    assert len16(ctx) <= 9_500
    for s in fitted.selected:
        assert s.truncated == "budget"
        assert s.content.endswith(NOTE.format("hook output limit", s.path))
        assert "4096 byte limit" not in s.content
        assert ctx.count(f"Memory: {s.path}:") == 1
        assert len(s.content) > 1000  # each keeps a fair share


def test_budget_keeps_short_memories_whole_and_shares_the_rest(memdir):
    _big(memdir, n=3)
    write_memory(memdir, "small.md", name="small", description="staging deploy rules in short", body="short\n")
    r = recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True, max_chars=6_000)
    by = {s.relpath: s for s in r.selected}
    assert by["small.md"].truncated is None
    assert len16(r.context()) <= 6_000


def test_a_budget_too_small_for_every_memory_leaves_some_out(memdir):
    _big(memdir)
    r = recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True, max_chars=1_500)
    assert 1 <= len(r.selected) < 5
    assert len16(r.context()) <= 1_500
    assert recall.recall(MemoryDir(memdir), "staging deploy rules", offline=True, max_chars=50).selected == []


def test_budget_counts_utf16_units(memdir):
    body = "\n".join("部署 staging 😀" * 30 for _ in range(10)) + "\n"
    for i in range(3):
        write_memory(memdir, f"e{i}.md", name=f"e{i}", description="staging deploy emoji", body=body)
    r = recall.recall(MemoryDir(memdir), "staging deploy emoji", offline=True, max_chars=3_000)
    assert len16(r.context()) <= 3_000
    assert all("\ud83d" not in s.content for s in r.selected)  # no half surrogate pair
