"""Search topic files and transcripts line by line, as grep does, over the text a person saw.

Topic files are searched as text. Transcripts (Claude Code, qwen-code or plain
``{role, content}`` JSONL) are searched in their *decoded* form: each JSONL
record becomes the text of its message (text blocks, thinking, a tool call's
name and argument values, tool-result text), so a pattern with quotes,
newlines or CJK matches although the JSON escapes them.

Speed over large transcript trees comes from never decoding a record that
cannot match: files are read in large binary chunks and searched for a
literal every match must contain, in each form a JSON writer may have given
it (``_Prefilter``); only records holding one are parsed (``transcripts.load_record``:
msgspec when installed), only the lines of a message a literal is found in
are split out (``Matcher.hits``), and workers send back rendered text. Line
numbers are counted only where something was found.
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from mem.core.errors import UsageError

MEMORY_SUFFIX = ".md"
TRANSCRIPT_SUFFIX = ".jsonl"
#: Bytes read per chunk from a transcript: small enough that the search finds them still in
#: the CPU cache after the read copied them (measured: 256 KB chunks scan a third faster than 8 MB).
CHUNK = 256 << 10
#: A JSONL record longer than this is skipped (no transcript writes one; memory stays bounded).
MAX_RECORD = 256 << 20


# --- --since -------------------------------------------------------------------------------------

_RELATIVE = r"(?i)^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs|hours?|d|days?|w|weeks?)\s*(?:ago)?\s*$"  # compiled when used
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(value: str, now: float | None = None) -> float:
    """``--since`` as epoch seconds: ``YYYY-MM-DD`` (local midnight), an ISO datetime, or ``7d``/``24h``/``30m``/``2w``.

    Example: parse_since("1d", now=86400.0) == 0.0
    """
    from datetime import datetime

    now = time.time() if now is None else now
    m = re.match(_RELATIVE, value)
    if m:
        unit = m.group(2).lower()
        unit = "m" if unit.startswith("mi") or unit == "m" else unit[0]
        return now - float(m.group(1)) * _UNIT_SECONDS[unit]
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since: not a date, ISO time or age like 7d: {value!r}") from None
    return parsed.timestamp()  # naive means local time, as a person typing a date means


def timestamp_seconds(value: object) -> float | None:
    """An ISO timestamp from a transcript as epoch seconds, or None."""
    if not isinstance(value, str) or not value:
        return None
    from datetime import datetime

    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


# --- matching ------------------------------------------------------------------------------------


@dataclass(slots=True)  # no __dict__: lighter, and one object fewer for the garbage collector to track
class Line:
    """One output line: a selected line ("match") or a context line."""

    number: int  # 1-based line of the file; for a transcript, the line of its JSONL record
    text: str  # without its line terminator
    eol: str  # "\n" when the line had one
    offset: int  # absolute byte offset of the line (for a transcript: of the record)
    spans: list[tuple[int, int]]  # character spans of the matches in text
    selected: bool = True
    message: MessageRef | None = None
    message_line: int | None = None  # transcripts: 1-based line within the decoded message


class MessageRef(NamedTuple):
    session_id: str | None
    uuid: str | None
    timestamp: str | None
    role: str  # user | assistant | tool | system
    kind: str  # message | tool_result | compact_summary | compact_boundary


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


# --- targets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    path: str  # what to open ("-" for stdin)
    display: str  # how output names it
    kind: str  # "memory" | "transcript"
    explicit: bool = False  # named on the command line (an error there is the user's to see)
    size: int = 0  # bytes, when known (for progress)


@dataclass
class FileResult:
    target: Target
    groups: list[list[Line]] = field(default_factory=list)  # contiguous runs, separated by "--"
    selected: int = 0  # selected lines
    matches: int = 0  # matches (spans) in selected lines
    bytes_searched: int = 0
    binary: bool = False  # a memory file holding NUL bytes (its lines are not shown)
    error: str | None = None
    skipped: bool = False  # filtered out by --type / --since before being searched
    elapsed_ns: int = 0
    rendered: str | None = None  # the groups as output text, when a worker rendered them (groups then empty)


def walk(root: str, suffix: str) -> Iterator[tuple[str, str]]:
    """(path, relpath) of every file ending in ``suffix`` under ``root``, sorted.

    Symlinked directories are not descended into (so link loops cannot
    recurse); symlinked files are read when they lead to a regular file inside
    ``root``; FIFOs, devices and links out are left out with a warning.
    """
    from mem.core.memdir.layout import walk_files

    found = [(entry.path, rel) for rel, entry in walk_files(root, suffix)]
    found.sort(key=lambda item: item[1])
    yield from found


def _sized(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def dir_targets(root: str, kind: str, *, prefix: str = "", under: str | None = None) -> list[Target]:
    """Every memory (``*.md``) or transcript (``*.jsonl``) file under ``root``.

    ``display`` is the path relative to ``root`` after ``prefix``; ``under``
    keeps only files whose second path component is that name (the
    ``memory`` or ``chats`` folder of each project under a projects dir).
    """
    suffix = TRANSCRIPT_SUFFIX if kind == "transcript" else MEMORY_SUFFIX
    out = []
    for path, rel in walk(root, suffix):
        if under is not None:
            parts = rel.split("/")
            if len(parts) < 3 or parts[1] != under:
                continue
        out.append(Target(path, prefix + rel, kind, size=_sized(path)))
    return out


def path_targets(paths: Iterable[str], transcripts: bool) -> list[Target]:
    """Targets for PATH operands: files as named, directories searched recursively.

    A ``.jsonl`` file is read as a transcript whatever the mode; directories
    give their ``*.jsonl`` files with ``transcripts``, their ``*.md`` files
    otherwise. ``-`` is standard input.
    """
    out = []
    for arg in paths:
        if arg == "-":
            out.append(Target("-", "(standard input)", "transcript" if transcripts else "memory", explicit=True))
        elif os.path.isdir(arg):
            prefix = arg if arg.endswith("/") else arg + "/"
            out.extend(dir_targets(arg, "transcript" if transcripts else "memory", prefix=prefix))
        else:
            kind = "transcript" if transcripts or arg.endswith(TRANSCRIPT_SUFFIX) else "memory"
            out.append(Target(arg, arg, kind, explicit=True, size=_sized(arg)))
    return out


# --- searching -----------------------------------------------------------------------------------


@dataclass
class Options:
    before: int = 0
    after: int = 0
    max_count: int | None = None  # selected lines per file
    first_only: bool = False  # stop a file at its first selected line (-l, -L, -q)
    collect: bool = True  # keep lines (False for -c, -l, -L, -q)
    types: frozenset[str] | None = None  # memories: frontmatter types to keep
    since: float | None = None  # epoch seconds
    roles: frozenset[str] | None = None  # transcripts: roles to keep
    text: bool = False  # -a: search memory files holding NUL bytes as text
    #: Transcripts: number each selected line within its message (Line.message_line). Without
    #: context that takes a count of the lines before each match, as long as finding it.
    message_lines: bool = True


Progress = Callable[[int, int], None]  # (bytes done in the current file, file size)


class Searcher:
    """Runs a Matcher over targets; one FileResult per target, in order."""

    def __init__(self, matcher: Matcher, options: Options) -> None:
        self.matcher = matcher
        self.options = options
        self._prefilter = matcher.prefilter()
        self._buffer: bytearray | None = None

    def search(self, target: Target, progress: Progress | None = None) -> FileResult:
        started = time.perf_counter_ns()
        result = FileResult(target)
        try:
            if target.kind == "transcript":
                self._search_transcript(target, result, progress)
            else:
                self._search_memory(target, result)
        except OSError as exc:
            result.error = exc.strerror or str(exc)
        result.elapsed_ns = time.perf_counter_ns() - started
        return result

    # -- budget: -m and the early stop of -l/-L/-q, shared by the units of a file
    def _budget(self) -> int | None:
        o = self.options
        if o.first_only:
            return 1
        return o.max_count

    # -- memory files
    def _search_memory(self, target: Target, result: FileResult) -> None:
        o = self.options
        if target.path == "-":
            import sys

            from mem.core.memdir.files import MAX_TRANSCRIPT_STDIN_BYTES, read_stream

            data = read_stream(sys.stdin.buffer, MAX_TRANSCRIPT_STDIN_BYTES)
        else:
            if o.since is not None and os.stat(target.path).st_mtime < o.since:
                result.skipped = True
                return
            if o.types is not None:
                from mem.core.memdir.frontmatter import memory_type_of, parse_frontmatter
                from mem.core.memdir.manifest import read_head

                mem_type, _ = memory_type_of(parse_frontmatter(read_head(target.path)).data)
                if mem_type not in o.types:
                    result.skipped = True
                    return
            from mem.core.memdir.files import read_bytes

            data = read_bytes(target.path)
        result.bytes_searched = len(data)
        binary = not o.text and b"\0" in data
        raw_lines = data.split(b"\n")
        ends_with_newline = raw_lines and raw_lines[-1] == b""
        if ends_with_newline:
            raw_lines.pop()
        lines = [raw.decode("utf-8", "replace") for raw in raw_lines]
        offsets = []
        pos = 0
        for raw in raw_lines:
            offsets.append(pos)
            pos += len(raw) + 1
        last = len(lines) - 1

        def make(i: int, spans, selected: bool) -> Line:
            eol = "\n" if (i < last or ends_with_newline) else ""
            return Line(i + 1, lines[i], eol, offsets[i], spans or [], selected)

        budget = self._budget()
        picked = self.matcher.line_spans(lines)
        if binary:
            selected = sum(1 for s in picked if s is not None)
            if budget is not None:
                selected = min(selected, budget)
            result.binary = selected > 0
            result.selected = selected
            return
        groups, count, matches = _with_context(picked, make, o.before, o.after, budget)
        result.selected = count
        result.matches = matches
        if o.collect:
            result.groups = groups

    # -- transcripts
    def _search_transcript(self, target: Target, result: FileResult, progress: Progress | None) -> None:
        from mem.core.transcripts import load_record, record_messages

        o = self.options
        if target.path != "-" and o.since is not None and os.stat(target.path).st_mtime < o.since:
            result.skipped = True  # nothing in it can be newer than its last write
            return
        budget = self._budget()
        stem = os.path.basename(target.path)
        stem = stem[: -len(TRANSCRIPT_SUFFIX)] if stem.endswith(TRANSCRIPT_SUFFIX) else None
        file_mtime = None
        if self._buffer is None:
            self._buffer = bytearray(2 * CHUNK)  # reused from file to file
        context = o.before or o.after
        # Names bound once: the loop below runs for every record that holds the literal.
        roles, since, collect = o.roles, o.since, o.collect
        hits_of = None if context else self.matcher.hits
        numbered = o.message_lines
        shown = result.groups
        for number, offset, raw in _records(target.path, self._prefilter, result, progress, self._buffer):
            obj = load_record(raw)
            for message in record_messages(obj):
                kind = message.kind
                if kind == "meta":
                    continue
                role = "tool" if kind == "tool_result" else message.role
                if roles is not None and role not in roles:
                    continue
                if since is not None:
                    when = timestamp_seconds(message.timestamp)
                    if when is None:
                        if file_mtime is None:
                            file_mtime = os.stat(target.path).st_mtime if target.path != "-" else time.time()
                        when = file_mtime
                    if when < since:
                        continue
                text = message_text(message)
                if not text:
                    continue
                hits = None if hits_of is None else hits_of(text, numbered)
                if hits is not None:  # the common case: no line is split out but those selected
                    if not hits:
                        continue
                    ref = MessageRef(message.session_id or obj.get("sessionId") or obj.get("session_id") or stem,
                                     message.uuid, message.timestamp, role, kind)
                    group: list[Line] = []
                    previous = -2  # where the last line ended
                    selected = result.selected
                    size = len(text)
                    for i, start, end, spans in hits:
                        if budget is not None and selected >= budget:
                            break
                        if start != previous + 1 and group:  # as _with_context groups them
                            if collect:
                                shown.append(group)
                            group = []
                        previous = end
                        group.append(Line(number, text[start:end], "\n" if end < size else "", offset, spans, True, ref,
                                          None if i is None else i + 1))
                        selected += 1
                        result.matches += len(spans)
                    result.selected = selected
                    if collect and group:
                        shown.append(group)
                else:
                    lines = text.split("\n")
                    ref = MessageRef(message.session_id or obj.get("sessionId") or obj.get("session_id") or stem,
                                     message.uuid, message.timestamp, role, kind)
                    last = len(lines) - 1

                    def make(i: int, spans, selected: bool, _lines=lines, _ref=ref, _last=last) -> Line:
                        return Line(number, _lines[i], "\n" if i < _last else "", offset, spans or [], selected,
                                    _ref, i + 1)

                    picked = self.matcher.line_spans(lines, text)
                    remaining = None if budget is None else budget - result.selected
                    groups, count, matches = _with_context(picked, make, o.before, o.after, remaining)
                    result.selected += count
                    result.matches += matches
                    if collect:
                        shown.extend(groups)
                if budget is not None and result.selected >= budget:
                    return


def search_all(searcher: Searcher, targets: list[Target], *, workers: int | None = None,
               progress: Progress | None = None,
               render: Callable[[FileResult], str] | None = None) -> Iterator[FileResult]:
    """Search ``targets`` in order, in parallel worker processes when that pays.

    Transcript trees of many megabytes are searched by forked workers (each
    handed the next file as it finishes one, results put back in order), so a
    search of a large corpus uses the idle cores; anything small, or stdin,
    runs here. A worker turns each result's lines into text with ``render``,
    when given (sending text back costs a fraction of sending the lines).
    ``workers`` None picks by size and idle CPUs; 0 or 1 means here, where
    nothing is rendered.
    """
    if workers is None:
        workers = _workers_for(targets)
    if workers <= 1:
        for target in targets:
            yield searcher.search(target, progress)
        return
    yield from _forked(searcher, targets, workers, render)


PARALLEL_MIN_BYTES = 64 << 20


def _workers_for(targets: list[Target]) -> int:
    """Worker processes worth forking: none for small or few files, stdin, or a busy machine.

    One per idle CPU, up to 4, when at least two are idle (ours counts as
    idle: while workers search, this process only writes what they send).
    """
    if not hasattr(os, "fork") or len(targets) < 4:
        return 0
    if any(t.path == "-" or t.kind != "transcript" for t in targets):
        return 0
    if sum(t.size for t in targets) < PARALLEL_MIN_BYTES:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    workers = min(cpus - _busy_cpus(), 4, len(targets))
    return workers if workers >= 2 else 0


def _busy_cpus() -> int:
    """Other processes running right now (Linux: /proc/loadavg), else the 1-minute load."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            running = int(fh.read().split()[3].split("/")[0])
        return max(running - 1, 0)  # we are one of them
    except (OSError, ValueError, IndexError):
        try:
            return int(os.getloadavg()[0] + 0.5)
        except OSError:
            return 0


#: Targets handed out ahead of the one to be shown next: bounds the results held in memory
#: while a large file is still being searched, and leaves every worker something to do.
WINDOW_PER_WORKER = 4


def _forked(searcher: Searcher, targets: list[Target], workers: int,
            render: Callable[[FileResult], str] | None) -> Iterator[FileResult]:
    """Results of ``targets`` in order, searched by ``workers`` forked processes.

    Each worker is handed the next target as soon as it sends a result back,
    so a few large files do not leave one worker busy while the others wait
    (files range from kilobytes to tens of megabytes). Targets are handed out
    at most WINDOW_PER_WORKER per worker past the next one to be shown; results
    that arrive early wait here. A worker that dies fails the target it was
    searching; those queued behind it go to another worker.
    """
    import pickle
    import selectors
    import signal
    import struct

    frame = struct.Struct("<IQ")  # target index, length of the pickled result
    n = len(targets)
    tasks: list[int] = []  # each worker's pipe for target numbers, parent side
    results: list[int] = []  # each worker's pipe for results, parent side
    pids: list[int] = []
    selector = None
    try:
        for _ in range(workers):
            try:
                task_r, task_w = os.pipe()
            except OSError:  # out of file descriptors: go on with the workers there are
                break
            try:
                result_r, result_w = os.pipe()
            except OSError:
                os.close(task_r)
                os.close(task_w)
                break
            # Ctrl-C between the fork and the worker's own handler would unwind the worker
            # through the parent's code: held back until each side has its handler.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                pid = os.fork()
            except OSError:  # no more processes: go on with the workers there are
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                for fd in (task_r, task_w, result_r, result_w):
                    os.close(fd)
                break
            if pid == 0:  # a worker: search each target it is sent until its pipe closes
                code = 0
                try:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    for fd in (task_w, result_r, *tasks, *results):
                        os.close(fd)
                    with os.fdopen(task_r, "rb") as inbox, os.fdopen(result_w, "wb") as out:
                        while len(raw := inbox.read(4)) == 4:
                            i = int.from_bytes(raw, "little")
                            try:
                                result = searcher.search(targets[i])
                                if render is not None and result.groups:
                                    result.rendered = render(result)
                                    result.groups = []
                            except Exception as exc:  # noqa: BLE001 - reported by the parent
                                result = FileResult(targets[i], error=f"{type(exc).__name__}: {exc}")
                            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
                            out.write(frame.pack(i, len(payload)))
                            out.write(payload)
                            out.flush()
                except BaseException:  # noqa: BLE001 - the parent notices the missing results
                    code = 1
                finally:
                    os._exit(code)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(task_r)
            os.close(result_w)
            tasks.append(task_w)
            results.append(result_r)
            pids.append(pid)
        if not pids:  # not one worker could be started: search here
            for target in targets:
                yield searcher.search(target)
            return
        workers = len(pids)
        window = max(workers * WINDOW_PER_WORKER, 2)

        owner: dict[int, int] = {}  # target handed out -> worker searching it
        queued: list[list[int]] = [[] for _ in range(workers)]  # each worker's targets, in the order sent
        alive = set(range(workers))
        retry: list[int] = []  # sent to a worker that died before starting them: to be sent again
        done: dict[int, FileResult] = {}
        pending = [bytearray() for _ in range(workers)]
        handed = 0  # targets[:handed] have been handed out (some perhaps again, from retry)
        shown = 0  # targets[:shown] have been yielded

        def hand_out() -> None:
            nonlocal handed
            while alive:
                if retry:
                    i = retry[0]
                elif handed < n and handed < shown + window:
                    i = handed
                else:
                    return
                w = min(alive, key=lambda k: (len(queued[k]), k))
                if len(queued[w]) >= 2 and i != shown:  # every worker has one in hand and one queued
                    return
                try:
                    os.write(tasks[w], i.to_bytes(4, "little"))
                except OSError:  # it died; the end of its result pipe reports what it held
                    alive.discard(w)
                    continue
                if retry and retry[0] == i:
                    retry.pop(0)
                else:
                    handed += 1
                owner[i] = w
                queued[w].append(i)

        def lost(w: int) -> None:
            """Worker ``w`` is gone: the target it was searching failed; those queued behind it go to another."""
            alive.discard(w)
            held, queued[w] = queued[w], []
            for k, i in enumerate(held):
                del owner[i]
                if k == 0:
                    done[i] = FileResult(targets[i], error="search worker failed")
                else:
                    retry.append(i)
            retry.sort()

        selector = selectors.DefaultSelector()  # made after the forks: no worker inherits it
        for w, fd in enumerate(results):
            selector.register(fd, selectors.EVENT_READ, w)
        while shown < n:
            hand_out()
            if shown in done:
                result = done.pop(shown)
                shown += 1
                yield result
                continue
            if shown not in owner:  # no worker left to search it
                done[shown] = FileResult(targets[shown], error="search worker failed")
                continue
            for key, _ in selector.select():
                w = key.data
                data = os.read(key.fd, 1 << 20)
                if not data:
                    selector.unregister(key.fd)
                    lost(w)
                    continue
                buf = pending[w]
                buf += data
                while len(buf) >= frame.size:
                    i, size = frame.unpack_from(buf)
                    if len(buf) < frame.size + size:
                        break
                    with memoryview(buf) as view, view[frame.size:frame.size + size] as body:
                        done[i] = pickle.loads(body)
                    del buf[:frame.size + size]
                    if owner.pop(i, None) is not None:
                        queued[w].remove(i)
    finally:
        if selector is not None:
            selector.close()
        for fd in (*tasks, *results):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


def message_text(message) -> str:
    """The text of a transcript message as a person saw it.

    Text and thinking blocks as written; a tool call as its name, then each
    string (or number) in its arguments on its own line; a tool result's text.
    Every line of it lies inside one JSON string of the record, which is what
    lets the prefilter look at raw bytes. (Not quite: a value that is not a
    string where text belongs, say a tool result's output given as an object,
    is shown as JSON, which the record may space or escape otherwise; a literal
    reaching into that JSON's punctuation can be missed.)
    """
    blocks = message.blocks
    if len(blocks) == 1 and blocks[0].type in _TEXT_BLOCKS:  # most records: one block of text
        return blocks[0].text
    parts: list[str] = []
    for block in blocks:
        if block.type in _TEXT_BLOCKS:
            if block.text:
                parts.append(block.text)
        elif block.type == "tool_use":
            if block.name:
                parts.append(block.name)
            _leaves(block.input, parts)
    return "\n".join(parts)


_TEXT_BLOCKS = frozenset({"text", "thinking", "tool_result"})


def _leaves(value, out: list[str]) -> None:
    """Each string, number and boolean in a tool call's arguments, in order, appended to ``out``."""
    if isinstance(value, str):
        if value:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, (int, float)):
        out.append(repr(value))


def _with_context(picked, make, before: int, after: int, budget: int | None):
    """Selected lines with their context, as groups of adjacent lines.

    Stops selecting after ``budget`` lines, as grep -m does; the trailing
    context of the last one is still shown (a selected line there is shown
    as context).
    """
    groups: list[list[Line]] = []
    count = 0
    matches = 0
    n = len(picked)
    shown_until = -1  # last line index already emitted
    current: list[Line] = []
    i = 0
    while i < n:
        spans = picked[i]
        if spans is None or (budget is not None and count >= budget):
            i += 1
            continue
        start = max(i - before, shown_until + 1)
        if current and start > shown_until + 1:
            groups.append(current)
            current = []
        for j in range(start, i):
            current.append(make(j, None, False))
        current.append(make(i, spans, True))
        count += 1
        matches += len(spans)
        shown_until = i
        # Trailing context; a selected line inside it is handled by the loop (if budget allows).
        j = i + 1
        limit = i + after
        while j <= limit and j < n:
            if picked[j] is not None and (budget is None or count < budget):
                break
            current.append(make(j, None, False))
            shown_until = j
            j += 1
        i = j
    if current:
        groups.append(current)
    return groups, count, matches


def _records(path: str, prefilter: _Prefilter | None, result: FileResult, progress: Progress | None,
             buffer: bytearray | None = None):
    """(line number, byte offset, raw bytes) of every JSONL record that passes the prefilter.

    Line numbers are counted lazily: only up to a record that is yielded, and
    bytes of chunks already dropped are counted (re-read with pread) only when
    one is. From stdin, which cannot be re-read, every chunk is counted.
    """
    import sys

    if path == "-":
        fd = sys.stdin.buffer.fileno()
        own = False
    else:
        from mem.core.memdir.files import open_regular

        fd = open_regular(path)  # a FIFO or /dev/zero named *.jsonl is refused, not read forever
        own = True
    buf = buffer if buffer is not None else bytearray(2 * CHUNK)
    view = memoryview(buf)
    try:
        size = os.fstat(fd).st_size if own else 0
        fill = 0  # bytes of buf in use; buf[0:fill] starts a record
        base = 0  # file offset of buf[0]
        counted_at = 0  # file offset up to which newlines are counted ...
        counted = 0  # ... and how many there were
        skipping = False  # inside an overlong record: drop bytes up to its end
        next_line = -1  # file offset of the line after the last record yielded
        while True:
            if fill > MAX_RECORD:
                # An overlong record: forget what we have of it and skip to its end.
                # It holds no newline so far, so the line count stays right.
                if counted_at >= base:
                    counted_at = base + fill
                base += fill
                fill = 0
                skipping = True
            if len(buf) - fill < CHUNK:  # a long record leaves no room for the next chunk
                view.release()
                buf.extend(bytes(len(buf)))
                view = memoryview(buf)
            n = os.readv(fd, [view[fill:fill + CHUNK]])
            if n:
                total = fill + n
                end = buf.rfind(b"\n", fill, total) + 1
                fill = total
                if end == 0:  # no record ends in this chunk yet
                    if skipping:  # still inside the overlong record: drop it as it comes
                        if counted_at >= base:
                            counted_at = base + fill
                        base += fill
                        fill = 0
                    if progress is not None:
                        progress(base + fill, size)
                    continue
            else:
                end = fill  # the last record, without a final newline
            result.bytes_searched = base + fill
            start = 0
            if skipping:
                nl = buf.find(b"\n", 0, end)
                skipping = nl == -1
                start = end if skipping else nl + 1
            for line_start, line_end in _candidates(buf, start, end, prefilter):
                at = base + line_start
                if at == next_line:  # the record right after the last one yielded
                    counted += 1
                else:
                    if counted_at < base:
                        counted += _count_newlines(fd, counted_at, base)
                        counted_at = base
                    counted += _newlines(buf, counted_at - base, line_start)
                counted_at = at
                next_line = base + line_end + 1
                yield counted + 1, at, bytes(view[line_start:line_end])
            if not own and counted_at < base + end:
                counted += buf.count(b"\n", max(counted_at - base, 0), end)
                counted_at = base + end
            if progress is not None:
                progress(base + fill, size)
            if not n:
                break
            rest = fill - end
            if rest:
                buf[0:rest] = buf[end:fill]
            base += end
            fill = rest
    finally:
        view.release()
        if own:
            os.close(fd)


def _count_newlines(fd: int, start: int, stop: int) -> int:
    n = 0
    pos = start
    while pos < stop:
        data = os.pread(fd, min(CHUNK, stop - pos), pos)
        if not data:
            break
        n += _newlines(data, 0, len(data))
        pos += len(data)
    return n


def _newlines(data, start: int, stop: int) -> int:
    """Newlines in data[start:stop].

    A find (memchr) per line beats ``count`` by several times on transcript
    records, which run to kilobytes; on short lines ``count`` is better, so
    switch to it when lines turn out to be short.
    """
    n = 0
    find = data.find
    pos = find(b"\n", start, stop)
    while pos != -1:
        n += 1
        if n == 64 and (pos - start) < 64 * 256:
            return n + data.count(b"\n", pos + 1, stop)
        pos = find(b"\n", pos + 1, stop)
    return n


def _candidates(buf: bytearray, start: int, end: int, prefilter: _Prefilter | None) -> Iterator[tuple[int, int]]:
    """(start, end) of each record in buf[start:end] that may match, in order; end excludes the newline."""
    if prefilter is None:
        pos = start
        while pos < end:
            nl = buf.find(b"\n", pos, end)
            stop = end if nl == -1 else nl
            if stop > pos:
                yield pos, stop
            pos = stop + 1
        return
    if prefilter.lower:
        hay = buf[start:end].lower()
        shift = start
    else:
        hay = buf
        shift = 0
    needles = prefilter.needles
    if len(needles) == 1:
        needle = needles[0]
        pos = hay.find(needle, start - shift, end - shift)
        while pos != -1:
            at = pos + shift
            ls = buf.rfind(b"\n", start, at) + 1
            if ls == 0:
                ls = start
            le = buf.find(b"\n", at, end)
            if le == -1:
                le = end
            yield ls, le
            pos = hay.find(needle, le + 1 - shift, end - shift)
        return
    starts: set[int] = set()
    for needle in needles:
        pos = hay.find(needle, start - shift, end - shift)
        while pos != -1:
            at = pos + shift
            ls = buf.rfind(b"\n", start, at) + 1
            if ls == 0:
                ls = start
            starts.add(ls)
            le = buf.find(b"\n", at, end)
            if le == -1:
                break
            pos = hay.find(needle, le + 1 - shift, end - shift)
    for ls in sorted(starts):
        le = buf.find(b"\n", ls, end)
        yield ls, (end if le == -1 else le)


def byte_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of ``text`` as UTF-8 byte spans (what rg --json reports)."""
    if text.isascii():
        return list(spans)
    out = []
    for a, b in spans:
        ba = len(text[:a].encode("utf-8", "surrogatepass"))
        out.append((ba, ba + len(text[a:b].encode("utf-8", "surrogatepass"))))
    return out
