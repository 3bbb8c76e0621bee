"""grep's output as text: its own lines (name, number, separator, -- between groups) and ripgrep's --json.

The printers return strings and write nothing: the CLI writes them, a search
worker renders a file's lines with ``render`` in its own process, and tests
read them without a command line.

uses: grep.matcher (byte_spans), guards.control (printable)
"""

from __future__ import annotations

import time

from mem.core.grep.matcher import byte_spans
from mem.core.guards.control import printable

# GNU grep's default GREP_COLORS: match, file name, line number, separator.
_MATCH, _NAME, _NUMBER, _SEP = "01;31", "35", "32", "36"


class TextPrinter:
    """grep's text output: name, number, separator, text; -- between groups."""

    def __init__(self, color: bool, names: bool, numbers: bool, only: bool, separators: bool) -> None:
        self.color = color
        self.names = names
        self.numbers = numbers
        self.only = only
        self.separators = separators and not only
        self.printed_group = False

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m\x1b[K{text}\x1b[m\x1b[K" if self.color and text else text

    def name(self, display: str) -> str:
        # a name made outside mem may hold an escape sequence or a newline: shown escaped, as ls -b does
        return self.paint(printable(display), _NAME)

    def name_prefix(self, display: str) -> str:
        return self.paint(printable(display), _NAME) + self.paint(":", _SEP)

    def render(self, result) -> str:
        """A file's lines as text, -- between its groups when context is shown."""
        display = printable(result.target.display)
        parts: list[str] = []
        add = parts.append
        # The name part of each line's head is painted once per file; the number per line.
        names = {sep: self.paint(display, _NAME) + self.paint(sep, _SEP) if self.names else "" for sep in ":-"}
        for k, group in enumerate(result.groups):
            if self.separators and k:
                add(self.paint("--", _SEP) + "\n")
            for line in group:
                sep = ":" if line.selected else "-"
                head = names[sep]
                if self.numbers:
                    head += (self.paint(str(line.number), _NUMBER) + self.paint(sep, _SEP) if self.color
                             else f"{line.number}{sep}")
                if self.only:
                    if line.selected:
                        for a, b in line.spans:
                            add(head + self.paint(line.text[a:b], _MATCH) + "\n")
                    continue
                add(head + self.body(line) + "\n")
        return "".join(parts)

    def file(self, result) -> str:
        """A file's lines (rendered by a search worker, or here), to be written in one call."""
        text = result.rendered if result.rendered is not None else self.render(result)
        if not text:
            return ""
        if self.separators and self.printed_group:
            text = self.paint("--", _SEP) + "\n" + text
        self.printed_group = True
        return text

    def body(self, line) -> str:
        if not (self.color and line.selected and line.spans):
            return line.text
        parts = []
        pos = 0
        for a, b in line.spans:
            parts.append(line.text[pos:a])
            parts.append(self.paint(line.text[a:b], _MATCH))
            pos = b
        parts.append(line.text[pos:])
        return "".join(parts)


class JsonPrinter:
    """ripgrep's --json wire format: begin / match / context / end per file, then a summary."""

    def __init__(self) -> None:
        import json

        self.encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # compact, as rg
        self.started = time.perf_counter_ns()
        self.totals = dict(searches=0, searches_with_match=0, bytes_searched=0, bytes_printed=0,
                           matched_lines=0, matches=0, elapsed_ns=0)

    def render(self, result) -> str:
        """A file's begin, match, context and end lines."""
        path = {"text": result.target.path if result.target.path != "-" else "<stdin>"}
        lines = [self.encode({"type": "begin", "data": {"path": path}})]
        for group in result.groups:
            for line in group:
                text = line.text + line.eol
                spans = byte_spans(line.text, line.spans) if line.selected else []
                data = {
                    "path": path,
                    "lines": {"text": text},
                    "line_number": line.number,
                    "absolute_offset": line.offset,
                    "submatches": [
                        {"match": {"text": line.text[a:b]}, "start": ba, "end": bb}
                        for (a, b), (ba, bb) in zip(line.spans if line.selected else [], spans)
                    ],
                }
                if line.message is not None:
                    m = line.message
                    data.update(session_id=m.session_id, uuid=m.uuid, timestamp=m.timestamp,
                                role=m.role, kind=m.kind, message_line=line.message_line)
                lines.append(self.encode({"type": "match" if line.selected else "context", "data": data}))
        printed = sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines)
        stats = _stats(result.elapsed_ns, 1, 1 if result.selected else 0, result.bytes_searched, printed,
                       result.selected, result.matches)
        lines.append(self.encode({"type": "end", "data": {"path": path, "binary_offset": None, "stats": stats}}))
        return "\n".join(lines) + "\n"

    def file(self, result) -> str:
        """A file's lines to be written, counted into the summary's totals."""
        t = self.totals
        t["searches"] += 1
        t["bytes_searched"] += result.bytes_searched
        t["elapsed_ns"] += result.elapsed_ns
        text = result.rendered if result.rendered is not None else self.render(result) if result.groups else ""
        if not text:
            return ""
        end = text.rindex("\n", 0, len(text) - 1) + 1  # the end line does not count as printed
        t["searches_with_match"] += 1 if result.selected else 0
        t["bytes_printed"] += len(text[:end].encode("utf-8", "surrogatepass"))
        t["matched_lines"] += result.selected
        t["matches"] += result.matches
        return text

    def summary(self) -> str:
        """The summary line that ends the output."""
        t = self.totals
        stats = _stats(t["elapsed_ns"], t["searches"], t["searches_with_match"], t["bytes_searched"],
                       t["bytes_printed"], t["matched_lines"], t["matches"])
        elapsed = _duration(time.perf_counter_ns() - self.started)
        return self.encode({"type": "summary", "data": {"elapsed_total": elapsed, "stats": stats}}) + "\n"


def _duration(ns: int) -> dict:
    return {"secs": ns // 1_000_000_000, "nanos": ns % 1_000_000_000, "human": f"{ns / 1e9:.6f}s"}


def _stats(elapsed_ns, searches, with_match, searched, printed, lines, matches) -> dict:
    return {
        "elapsed": _duration(elapsed_ns),
        "searches": searches,
        "searches_with_match": with_match,
        "bytes_searched": searched,
        "bytes_printed": printed,
        "matched_lines": lines,
        "matches": matches,
    }
