"""MEMORY.md as injected (reference §2.2), lint and rebuild."""

from __future__ import annotations

from conftest import write_memory

from mem.core.memdir.index import (
    format_file_size,
    len16,
    lint,
    parse_pointers,
    rebuild,
    render_as_injected,
    strip_html_comments,
    truncate_entrypoint,
)
from mem.core.memdir.manifest import scan

WARN = " Only part of it was loaded. Keep index entries to one line under ~200 chars; move detail into topic files."


def test_format_file_size():
    assert [format_file_size(n) for n in (0, 1023, 1024, 4096, 25000, 30000, 1536, 5 * 1024 * 1024)] == [
        "0 bytes", "1023 bytes", "1KB", "4KB", "24.4KB", "29.3KB", "1.5KB", "5MB",
    ]


def test_short_index_is_only_trimmed():
    assert truncate_entrypoint("\n\n- [a](a.md)\n\n").content == "- [a](a.md)"


def test_line_truncation_exact():
    raw = "\n".join(f"- line {i}" for i in range(1, 251))
    t = truncate_entrypoint(raw)
    assert t.content == "\n".join(f"- line {i}" for i in range(1, 201)) + "\n\n> WARNING: MEMORY.md is 250 lines (limit: 200)." + WARN


def test_byte_truncation_cuts_at_last_newline_and_reports_utf16_size():
    line = "- " + "x" * 98  # 100 units
    raw = "\n".join([line] * 150)  # 150 lines, 15149 units: under
    assert not truncate_entrypoint(raw).truncated
    raw = "\n".join([line] * 180) + "\n" + "é" * 7000  # ~25,180 units
    t = truncate_entrypoint(raw)
    assert t.was_byte_truncated and not t.was_line_truncated
    body, warning = t.content.split("\n\n> WARNING: ")
    assert body == "\n".join([line] * 180)
    assert warning == f"MEMORY.md is {format_file_size(len16(raw))} (limit: 24.4KB) — index entries are too long." + WARN


def test_both_limits_reason():
    raw = "\n".join(["y" * 200] * 210)
    t = truncate_entrypoint(raw)
    assert t.content.endswith(f"MEMORY.md is 210 lines and {format_file_size(len16(raw))}." + WARN)
    # lines first, then the byte cut at the last newline before 25,000 units
    assert t.content.split("\n\n> WARNING")[0] == "\n".join(["y" * 200] * 124)


def test_utf16_counts_astral_as_two():
    raw = "😀" * 12_600  # 12,600 code points, 25,200 UTF-16 units
    t = truncate_entrypoint(raw)
    assert t.was_byte_truncated
    assert t.content.startswith("😀" * 12_500 + "\n\n> WARNING")


def test_crlf_lines_keep_cr():
    assert truncate_entrypoint("- a\r\n- b\r\n").content == "- a\r\n- b"


def test_render_strips_frontmatter_and_block_comments():
    raw = "---\ntitle: x\n---\n<!-- editor note -->\n- [a](a.md) — A\n```\n<!-- code -->\n```\nText <!-- inline --> stays\n"
    assert render_as_injected(raw).content == "- [a](a.md) — A\n```\n<!-- code -->\n```\nText <!-- inline --> stays"


def test_unclosed_comment_is_kept():
    assert strip_html_comments("<!-- oops\n- [a](a.md)\n") == "<!-- oops\n- [a](a.md)\n"


def test_parse_pointers():
    text = "# Index\n- [User prefers tabs](user-prefers-tabs.md) — tabs not spaces\n* [Web](https://x.y) — link\n- [Sp](<my file.md>) — s\n"
    ps = parse_pointers(text)
    assert [(p.lineno, p.relpath, p.hook) for p in ps] == [
        (2, "user-prefers-tabs.md", "tabs not spaces"), (3, None, "link"), (4, "my file.md", "s"),
    ]


def test_lint_finds_each_problem(tmp_path):
    write_memory(tmp_path, "a.md", name="a", description="A")
    write_memory(tmp_path, "unlisted.md", name="u", description="U")
    write_memory(tmp_path, "team/t.md", name="t", description="T")  # has its own index
    raw = "- [A](a.md) — ok\n- [A again](a.md) — dup\n- [Gone](gone.md) — x\n- [Out](../x.md)\n- [Long](a.md) " + "z" * 160 + "\n"
    problems = lint(raw, str(tmp_path), scan(str(tmp_path)))
    assert sorted((p.code, p.line) for p in problems) == [
        ("dangling-pointer", 3), ("duplicate-pointer", 2), ("duplicate-pointer", 5),
        ("long-line", 5), ("not-indexed", None), ("outside-pointer", 4),
    ]


def test_lint_clean_and_missing(tmp_path):
    write_memory(tmp_path, "a.md", name="a", description="A")
    assert lint("- [A](a.md) — ok\n", str(tmp_path), scan(str(tmp_path))) == []
    assert [p.code for p in lint(None, str(tmp_path), scan(str(tmp_path)))] == ["missing-index"]


def test_rebuild_keeps_hand_written_lines_drops_stale_adds_missing(tmp_path):
    write_memory(tmp_path, "b.md", name="b", description="B")
    write_memory(tmp_path, "a.md", name="a", description="A")
    write_memory(tmp_path, "new-thing.md", name="new-thing", description="a new memory")
    write_memory(tmp_path, "logs/2026/01/2026-01-01.md", name="l", description="log")
    raw = "# My index\n- [Bee, my words](b.md) — hand hook\n- [Stale](gone.md) — x\n\nSome prose.\n- [A](a.md)\n- [A twice](a.md)\n"
    out = rebuild(raw, str(tmp_path), scan(str(tmp_path)))
    assert out == (
        "# My index\n- [Bee, my words](b.md) — hand hook\n\nSome prose.\n- [A](a.md)\n"
        "- [New thing](new-thing.md) — a new memory\n"
    )
    assert rebuild(out, str(tmp_path), scan(str(tmp_path))) == out


def test_rebuild_from_nothing_and_long_hooks_fit(tmp_path):
    write_memory(tmp_path, "x.md", name="Some Title", description="w" * 300)
    out = rebuild(None, str(tmp_path), scan(str(tmp_path)))
    assert out.startswith("- [Some Title](x.md) — www")
    assert len16(out.rstrip("\n")) == 150 and out.rstrip("\n").endswith("…")
