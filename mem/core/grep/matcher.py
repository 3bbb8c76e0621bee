"""Patterns compiled once and matched line by line, and the prefilter a raw JSONL record must pass.

The prefilter is the literal every match must contain, in each form a JSON
writer may have given it, so a record that cannot match is never decoded.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mem.core.errors import UsageError


class Matcher:
    """Patterns compiled once, matched line by line (or across lines when a pattern holds a newline).

    ``fixed`` takes patterns literally (-F); ``word`` (-w) and ``whole_line``
    (-x) constrain where a match may sit; ``invert`` (-v) selects the lines
    without one. Several patterns select a line when any of them matches.
    """

    def __init__(
        self,
        patterns: Iterable[str],
        *,
        fixed: bool = False,
        ignore_case: bool = False,
        word: bool = False,
        whole_line: bool = False,
        invert: bool = False,
    ) -> None:
        self.patterns = list(patterns)
        if not self.patterns:
            raise UsageError("no pattern given")
        self.fixed = fixed
        self.ignore_case = ignore_case
        self.word = word
        self.whole_line = whole_line
        self.invert = invert
        #: A newline in a pattern is part of it (grep would split there): match across lines.
        self.multiline = any("\n" in p for p in self.patterns)
        flags = re.IGNORECASE if ignore_case else 0
        if self.multiline:
            flags |= re.MULTILINE
        self.regexes = []
        #: A literal without a newline cannot match across lines, so one search of a whole
        #: text finds what a search of each line would, at a fraction of the cost.
        self._whole: list[re.Pattern] | None = (
            [] if fixed and not self.multiline and not invert and all(self.patterns) else None
        )
        #: One literal matched case-sensitively anywhere: str.find beats a regex by 2-3×.
        self._plain = (self.patterns[0] if self._whole is not None and len(self.patterns) == 1
                       and not (ignore_case or word or whole_line) else None)
        for p in self.patterns:
            source = _literal_source(p, ignore_case) if fixed else p
            if word:
                source = rf"(?<!\w)(?:{source})(?!\w)"
            try:
                if self._whole is not None:
                    whole = rf"^(?:{source})$" if whole_line else source
                    self._whole.append(re.compile(whole, flags | re.MULTILINE))
                if whole_line:
                    source = rf"^(?:{source})$" if self.multiline else rf"\A(?:{source})\Z"
                self.regexes.append(re.compile(source, flags))
            except re.error as exc:
                import shlex

                # grep's users type a bracket or a paren as text: say how to search for it as such
                raise UsageError(f"bad pattern {p!r}: {exc} (a regular expression; to search for the text "
                                 f"itself, use -F: mem grep -F {shlex.quote(p)})") from None
            except (OverflowError, RecursionError, ValueError) as exc:
                raise UsageError(f"bad pattern {p!r}: {exc}") from None

    # A line's spans: every non-empty match, sorted, overlaps dropped.
    def _spans(self, text: str) -> tuple[bool, list[tuple[int, int]]]:
        found = False
        spans: list[tuple[int, int]] = []
        for rx in self.regexes:
            for m in rx.finditer(text):
                found = True
                if m.end() > m.start():
                    spans.append(m.span())
        if len(self.regexes) > 1 and spans:
            spans = _disjoint(spans)
        return found, spans

    def line_spans(self, lines: list[str], text: str | None = None) -> list[list[tuple[int, int]] | None]:
        """For each line, its match spans when it is selected, else None.

        ``text``, when given, is ``"\\n".join(lines)`` (saves joining it again).
        """
        if self._whole is not None:
            out: list[list[tuple[int, int]] | None] = [None] * len(lines)
            for i, _, _, spans in self.hits("\n".join(lines) if text is None else text):
                out[i] = spans
            return out
        out: list[list[tuple[int, int]] | None] = []
        if not self.multiline:
            for text in lines:
                found, spans = self._spans(text)
                if found != self.invert:
                    out.append([] if self.invert else spans)
                else:
                    out.append(None)
            return out
        # Across lines: map each match back onto the lines it touches.
        starts = []
        pos = 0
        for text in lines:
            starts.append(pos)
            pos += len(text) + 1
        whole = "\n".join(lines)
        per_line: list[list[tuple[int, int]] | None] = [None] * len(lines)
        for rx in self.regexes:
            for m in rx.finditer(whole):
                first = bisect.bisect_right(starts, m.start()) - 1
                last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
                for i in range(first, last + 1):
                    spans = per_line[i]
                    if spans is None:
                        spans = per_line[i] = []
                    a = max(m.start(), starts[i]) - starts[i]
                    b = min(m.end(), starts[i] + len(lines[i])) - starts[i]
                    if b > a:
                        spans.append((a, b))
        for spans in per_line:
            if spans:
                spans.sort()
        if self.invert:
            return [[] if spans is None else None for spans in per_line]
        return per_line

    def hits(self, text: str, numbered: bool = True) -> list[tuple[int | None, int, int, list[tuple[int, int]]]] | None:
        """(line index, offset of the line in ``text``, offset of its end, spans) of each selected line of ``text``, in order.

        Only for what one search of the whole text answers (a literal without a
        newline, not inverted); None otherwise, when ``line_spans`` must look at
        each line. Lines without a match are never split out. Without
        ``numbered``, the line index may be None: counting the lines before a
        match costs as much as finding it.
        """
        if self._whole is None:
            return None
        if self._plain is not None:
            return _find_hits(text, self._plain, numbered)
        found: dict[int, tuple[int, list[tuple[int, int]]]] = {}
        count = text.count
        for rx in self._whole:
            line = at = 0  # line index of offset `at`
            for m in rx.finditer(text):
                start = m.start()
                line += count("\n", at, start)
                at = start
                hit = found.get(line)
                if hit is None:
                    hit = found[line] = (text.rfind("\n", 0, start) + 1, [])
                if m.end() > start:
                    hit[1].append((start - hit[0], m.end() - hit[0]))
        out = []
        for i, (start, spans) in sorted(found.items()):
            end = text.find("\n", start)
            out.append((i, start, len(text) if end == -1 else end, spans))
        if len(self._whole) > 1:
            for _, _, _, spans in out:
                if len(spans) > 1:
                    spans[:] = _disjoint(spans)
        return out

    def prefilter(self) -> _Prefilter | None:
        """What a raw JSONL record must contain to possibly match, or None when anything might."""
        if self.invert:
            return None
        needles: set[bytes] = set()
        lower = False
        for p in self.patterns:
            if self.fixed:
                options = [(p, self.ignore_case)]
            else:
                options = _required_literals(p, self.ignore_case)
                if options is None:
                    return None
            for literal, ignore_case in options:
                # A literal pattern never folds i, k, s onto non-ASCII letters (see _literal_source).
                found = _needles(literal, ignore_case, folds=not self.fixed)
                if found is None:
                    return None
                lower = lower or ignore_case
                needles |= found
        if lower:
            # One pass over a lowered chunk serves every needle; lower them all alike.
            needles = {n.lower() for n in needles}
        return _Prefilter(sorted(needles, key=len, reverse=True), lower)


def _disjoint(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted, each that overlaps an earlier one dropped (several patterns matched a line)."""
    spans = sorted(spans)
    out = [spans[0]]
    for span in spans[1:]:
        if span[0] >= out[-1][1]:
            out.append(span)
    return out


def _find_hits(text: str, literal: str, numbered: bool = True) -> list[tuple[int | None, int, int, list[tuple[int, int]]]]:
    """Matcher.hits for one case-sensitive literal (which holds no newline)."""
    out: list[tuple[int | None, int, int, list[tuple[int, int]]]] = []
    find = text.find
    pos = find(literal)
    if pos == -1:
        return out
    n = len(literal)
    line = None
    if numbered:
        line = at = 0
    start = 0
    end = -1  # where the line of the last match ends
    spans: list[tuple[int, int]] = []
    while pos != -1:
        if pos > end:  # a match on a line of its own
            start = text.rfind("\n", 0, pos) + 1
            end = find("\n", pos + n)
            if end == -1:
                end = len(text)
            if numbered:
                line += text.count("\n", at, pos)
                at = pos
            spans = []
            out.append((line, start, end, spans))
        spans.append((pos - start, pos - start + n))
        pos = find(literal, pos + n)
    return out


# --- the prefilter -------------------------------------------------------------------------------

#: Characters every JSON writer emits as themselves inside a string. A quote or
#: backslash is always escaped, "/" sometimes is, "<", ">", "&" and "'" are by
#: HTML-safe writers, and anything else may be a \u escape.
_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F)) - set("\"\\/<>&'")
#: ASCII letters that Python's case-insensitive matching also finds as
#: non-ASCII letters (K: KELVIN SIGN, S: LONG S, I: DOTTED/DOTLESS I) ...
_FOLDS_OUTSIDE_ASCII = frozenset("iks")
#: ... and those letters as a lowered raw record may hold them.
_FOLD_PARTNERS = (
    "\u212a".encode(), "\u017f".encode(), "\u0130".encode(), "\u0131".encode(),
    b"\\u212a", b"\\u017f", b"\\u0130", b"\\u0131",
)
#: A run of safe characters at least this long is needle enough.
_MIN_RUN = 4


@dataclass(frozen=True)
class _Prefilter:
    needles: list[bytes]  # a record holding any of these may match
    lower: bool  # search a lowered copy of the data (needles are lowered)


def _json_escape(text: str, ascii_hex: str | None) -> str:
    """``text`` as it appears inside a JSON string: JS escapes, and \\uXXXX for non-ASCII when ``ascii_hex`` is a format."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\u{o:04x}"))
        elif o < 0x7F or ascii_hex is None:  # ASCII-only writers escape DEL too
            out.append(ch)
        elif o > 0xFFFF:
            o -= 0x10000
            out.append("\\u" + format(0xD800 + (o >> 10), ascii_hex) + "\\u" + format(0xDC00 + (o & 0x3FF), ascii_hex))
        else:
            out.append("\\u" + format(o, ascii_hex))
    return "".join(out)


def _literal_source(text: str, ignore_case: bool) -> str:
    """A literal as a regex. Case-insensitively, i, k and s match only their ASCII
    forms (Python would also match KELVIN SIGN, LONG S and the Turkish i), as grep
    -F -i does, and as the byte prefilter assumes.
    """
    if not ignore_case:
        return re.escape(text)
    return "".join(f"(?-i:[{c.lower()}{c.upper()}])" if c in "iksIKS" else re.escape(c) for c in text)


def _needles(literal: str, ignore_case: bool, folds: bool = True) -> set[bytes] | None:
    """Byte strings one of which a JSONL record holding ``literal`` in a string must contain.

    A long enough run of characters that no writer escapes is written the
    same way by all of them. Otherwise the literal's escaped forms: as JS and
    Python write it, and with non-ASCII as lower- or upper-case \\u escapes.
    When a case-insensitive regex may fold i, k or s onto a non-ASCII letter
    (``folds``), runs stop at those letters, or the non-ASCII forms are
    searched too. None when no sound needle exists (a case-insensitive
    non-ASCII letter, or U+FFFD, which invalid UTF-8 decodes to).
    """
    if "\ufffd" in literal:  # what invalid UTF-8 decodes to: any bad byte may stand for it
        return None
    unsafe = _FOLDS_OUTSIDE_ASCII | {c.upper() for c in _FOLDS_OUTSIDE_ASCII} if folds and ignore_case else frozenset()
    pieces = literal.split("\n")  # a match across lines holds every piece, each in one JSON string
    best = max(pieces, key=lambda s: max((len(r) for r in _safe_runs(s, unsafe)), default=0))
    runs = _safe_runs(best, unsafe)
    run = max(runs, key=len) if runs else ""
    if len(pieces) == 1 and run == literal and literal:
        chosen = {literal}
    elif len(run) >= _MIN_RUN:
        chosen = {run}
    else:
        # Some writers escape "/", "<", ">", "&" and "'", others do not: no needle holds them.
        piece = max((part for p in pieces for part in re.split(r"[/<>&']", p)), key=len)
        if not piece:
            return None
        if ignore_case and any(ord(c) > 0x7F and c.lower() != c.upper() for c in piece):
            return None
        chosen = {_json_escape(piece, None), _json_escape(piece, "04x"), _json_escape(piece, "04X")}
    out = {c.encode("utf-8", "surrogatepass") for c in chosen}
    if unsafe and any(c in _FOLDS_OUTSIDE_ASCII for c in "".join(chosen).lower()):
        out.update(_FOLD_PARTNERS)
    return out


def _safe_runs(text: str, unsafe: frozenset[str] | set[str] = frozenset()) -> list[str]:
    runs, cur = [], []
    for ch in text:
        if ch in _SAFE and ch not in unsafe:
            cur.append(ch)
        elif cur:
            runs.append("".join(cur))
            cur = []
    if cur:
        runs.append("".join(cur))
    return runs


def _required_literals(pattern: str, ignore_case: bool) -> list[tuple[str, bool]] | None:
    """Literals one of which every match of regex ``pattern`` contains, or None if none is known.

    Reads the parsed pattern: the longest run of literal characters in its
    top-level sequence, or one such run per branch of a top-level alternation.
    """
    try:
        from re import _parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    from re import _constants as c  # noqa: N813 - mirrors the stdlib name

    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except Exception:  # noqa: BLE001 - the real compile reports it
        return None
    ic = bool(parsed.state.flags & re.IGNORECASE)
    items = list(parsed)

    def longest_run(seq) -> str:
        best, cur = "", []
        for op, av in seq:
            if op is c.LITERAL:
                cur.append(chr(av))
                continue
            if op is c.SUBPATTERN and av[1] == 0 and av[2] == 0:
                # (?:...) or (...) without flag changes: its own literal run counts.
                inner = longest_run(av[3])
                if len(inner) > len(best):
                    best = inner
            if len("".join(cur)) > len(best):
                best = "".join(cur)
            cur = []
        if len("".join(cur)) > len(best):
            best = "".join(cur)
        return best

    if len(items) == 1 and items[0][0] is c.BRANCH:
        out = []
        for branch in items[0][1][1]:
            run = longest_run(branch)
            if not run:
                return None
            out.append((run, ic))
        return out
    run = longest_run(items)
    return [(run, ic)] if len(run) >= 2 else None


def byte_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of ``text`` as UTF-8 byte spans (what rg --json reports)."""
    if text.isascii():
        return list(spans)
    out = []
    for a, b in spans:
        ba = len(text[:a].encode("utf-8", "surrogatepass"))
        out.append((ba, ba + len(text[a:b].encode("utf-8", "surrogatepass"))))
    return out
