"""grep's printers (mem/core/grep/printers.py) without a command line: text as grep prints it, --json as rg does."""

from __future__ import annotations

import json

from mem.core import grep as core
from mem.core.grep.printers import JsonPrinter, TextPrinter


def _result(tmp_path, text: str, **options):
    path = tmp_path / "notes.md"
    path.write_text(text)
    searcher = core.Searcher(core.Matcher(["deploy"]), core.Options(**options))
    return searcher.search(core.Target(str(path), "notes.md", "memory", explicit=True))


def test_text_printer_prints_grep_lines(tmp_path):
    result = _result(tmp_path, "one\ndeploy on friday\ntwo\nthree\nfour\nno deploy on monday\n", before=1)
    printer = TextPrinter(False, True, True, False, True)
    assert printer.file(result) == "notes.md-1-one\nnotes.md:2:deploy on friday\n--\nnotes.md-5-four\nnotes.md:6:no deploy on monday\n"
    coloured = TextPrinter(True, False, False, True, False).file(result)
    assert coloured == "\x1b[01;31m\x1b[Kdeploy\x1b[m\x1b[K\n" * 2  # -o: the match alone, painted


def test_json_printer_speaks_rg_json(tmp_path):
    result = _result(tmp_path, "café\nwe deploy at 5\n")
    printer = JsonPrinter()
    rows = [json.loads(line) for line in (printer.file(result) + printer.summary()).splitlines()]
    assert [r["type"] for r in rows] == ["begin", "match", "end", "summary"]
    match = rows[1]["data"]
    assert match["path"] == {"text": str(tmp_path / "notes.md")} and match["line_number"] == 2
    assert match["absolute_offset"] == len("café\n".encode())  # bytes, as rg counts
    assert match["submatches"] == [{"match": {"text": "deploy"}, "start": 3, "end": 9}]
    stats = rows[3]["data"]["stats"]
    assert stats["searches"] == 1 and stats["searches_with_match"] == 1 and stats["matched_lines"] == 1
    assert stats["bytes_printed"] == sum(len(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode()) + 1
                                         for r in rows[:2])


def test_printers_write_nothing_themselves(tmp_path, capsys):
    result = _result(tmp_path, "deploy\n")
    TextPrinter(False, False, False, False, False).file(result)
    JsonPrinter().file(result)
    assert capsys.readouterr() == ("", "")
