"""Search topic files and transcripts line by line, as grep does, over the text a person saw.

Topic files are searched as text. Transcripts (Claude Code, qwen-code or plain
``{role, content}`` JSONL) are searched in their *decoded* form: each JSONL
record becomes the text of its message (text blocks, thinking, a tool call's
name and argument values, tool-result text), so a pattern with quotes,
newlines or CJK matches although the JSON escapes them.

Speed over large transcript trees comes from never decoding a record that
cannot match: files are read in large binary chunks and searched for a
literal every match must contain, in each form a JSON writer may have given
it (``_Prefilter``); only records holding one are parsed (``transcripts.RecordDecoder``:
msgspec when installed), only the lines of a message a literal is found in
are split out (``Matcher.hits``), and workers send back rendered text. Line
numbers are counted only where something was found.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from mem.core.errors import UsageError

if TYPE_CHECKING:
    from mem.core.grep.matcher import Matcher, _Prefilter

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


def walk(folder: str, suffix: str) -> Iterator[tuple[str, str]]:
    """(path, relpath) of every file ending in ``suffix`` under ``folder``, sorted.

    Any folder: a memory directory, a transcript folder, a projects folder, a PATH operand.
    Symlinked directories are not descended into (so link loops cannot
    recurse); symlinked files are read when they lead to a regular file inside
    ``folder``; FIFOs, devices and links out are left out with a warning.
    """
    from mem.core.memdir.layout import walk_files

    found = [(entry.path, rel) for rel, entry in walk_files(folder, suffix)]
    found.sort(key=lambda item: item[1])
    yield from found


def _sized(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def dir_targets(folder: str, kind: str, *, prefix: str = "", under: str | None = None) -> list[Target]:
    """Every memory (``*.md``) or transcript (``*.jsonl``) file under ``folder`` (a memory directory,
    a client's transcript folder or projects folder, a directory named on the command line).

    ``display`` is the path relative to ``folder`` after ``prefix``; ``under``
    keeps only files whose second path component is that name (the
    ``memory`` or ``chats`` folder of each project under a projects dir).
    """
    suffix = TRANSCRIPT_SUFFIX if kind == "transcript" else MEMORY_SUFFIX
    out = []
    for path, rel in walk(folder, suffix):
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
        self._decoder = None  # transcripts.RecordDecoder, made for the first transcript

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
        from mem.core.transcripts import RecordDecoder, record_messages

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
        if self._decoder is None:
            self._decoder = RecordDecoder()  # one per search: msgspec is looked for once, after some records
        load_record = self._decoder.decode
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
