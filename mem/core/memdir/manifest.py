"""Scanning topic files into the manifest, with Claude Code's semantics.

Recursive, every ``MEMORY.md`` excluded, first 30 lines of each file parsed
for frontmatter, newest first, capped at 200 unless asked for all. The
manifest line format is reproduced exactly::

    - [type] relpath (2023-11-14T22:13:20.123Z): description
"""

from __future__ import annotations

import os
import time

from mem.core.memdir.files import MAX_HEAD_BYTES, open_regular
from mem.core.memdir.layout import Skipped, is_log, is_pinned, walk_topic_files
from mem.core.jscompat import iso_utc_ms, now_iso  # noqa: F401 - now_iso: part of this module's interface
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

MAX_MEMORY_FILES = 200
FRONTMATTER_MAX_LINES = 30


class Problem(Record):
    code: str
    message: str

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


class MemoryHeader(Record):
    """One topic file as the scanner sees it (``warnings`` is filled in place by the checks)."""

    path: str
    relpath: str  # '/'-separated, relative to the memory directory
    mtime_ms: int
    size: int
    name: str | None
    description: str | None
    type: str | None  # one of the four, or None
    raw_type: Any  # what the file said, for "unknown type" reports
    warnings: list[Problem]

    @property
    def mtime_iso(self) -> str:
        return iso_utc_ms(self.mtime_ms)

    def manifest_line(self) -> str:
        tag = f"[{self.type}] " if self.type else ""
        desc = f": {self.description}" if self.description else ""
        return f"- {tag}{self.relpath} ({self.mtime_iso}){desc}"

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "relpath": self.relpath,
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "mtime": self.mtime_iso,
            "mtime_ms": self.mtime_ms,
            "size": self.size,
            "warnings": [w.as_dict() for w in self.warnings],
            "pinned": self.pinned,
        }

    @property
    def pinned(self) -> bool:
        """In the top-level pinned/: read and surfaced, never written by mem (memdir.layout.is_pinned)."""
        return is_pinned(self.relpath)


def read_head(path: str, max_lines: int = FRONTMATTER_MAX_LINES) -> str:
    """The first ``max_lines`` lines, BOM and CRs stripped, joined by newlines."""
    chunks = []
    newlines = 0
    fd = open_regular(path)
    try:
        while newlines < max_lines and len(chunks) * 8192 < MAX_HEAD_BYTES:
            chunk = os.read(fd, 8192)
            chunks.append(chunk)
            if len(chunk) < 8192:
                break  # the end of the file (or a short read: either way enough for a head)
            newlines += chunk.count(b"\n")
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n", max_lines)[:max_lines]
    if "\r" not in text:
        return "\n".join(lines)
    return "\n".join(line[:-1] if line.endswith("\r") else line for line in lines)


def header_of(path: str, relpath: str, st: os.stat_result) -> MemoryHeader:
    # The parser (its regexes compile in ~2 ms) is loaded only for a file the header cache has not
    # seen: the recall hook, on every prompt, mostly reads the cache.
    from mem.core.memdir.frontmatter import description_of, js_string, memory_type_of, parse_frontmatter

    head = read_head(path)
    parsed = parse_frontmatter(head)
    data = parsed.data
    mem_type, raw_type = memory_type_of(data)
    name = js_string(data.get("name")) if data.get("name") is not None else None
    header = MemoryHeader(
        path=path,
        relpath=relpath,
        mtime_ms=st.st_mtime_ns // 1_000_000,
        size=st.st_size,
        name=name,
        description=description_of(data),
        type=mem_type,
        raw_type=raw_type,
        warnings=[],
    )
    w = header.warnings
    if is_log(relpath):
        return header  # daily logs are append-only bullets, not topic files
    if not parsed.present:
        if head.startswith("---"):
            w.append(Problem("unclosed-frontmatter", f"frontmatter is not closed within the first {FRONTMATTER_MAX_LINES} lines"))
        else:
            w.append(Problem("no-frontmatter", "no frontmatter (it must start at the first byte with ---)"))
    elif parsed.error:
        w.append(Problem("broken-frontmatter", f"frontmatter is not valid YAML: {parsed.error}"))
    if parsed.present and not parsed.error:
        if raw_type is None:
            w.append(Problem("missing-type", "no type (user, feedback, project or reference)"))
        elif mem_type is None:
            w.append(Problem("unknown-type", f"unknown type {js_string(raw_type)!r} (expected user, feedback, project or reference)"))
        if header.description is None:
            w.append(Problem("missing-description", "no description (recall chooses memories by their description)"))
        elif "\n" in header.description:
            w.append(Problem("multiline-description", "description spans several lines"))
        elif len(header.description) > MAX_DESCRIPTION:
            w.append(Problem("long-description", f"description is {len(header.description)} characters (keep it under {MAX_DESCRIPTION})"))
    return header


MAX_DESCRIPTION = 200


def skipped_header(skipped: Skipped) -> MemoryHeader:
    """A file the scan left out (a FIFO, a link out), as a header carrying that one problem."""
    try:
        st = os.lstat(skipped.path)
        mtime_ms, size = st.st_mtime_ns // 1_000_000, st.st_size
    except OSError:
        mtime_ms = size = 0
    return MemoryHeader(skipped.path, skipped.relpath, mtime_ms, size, None, None, None, None,
                        [Problem(skipped.code, skipped.message)])


def scan(folder: str, *, limit: int | None = MAX_MEMORY_FILES, cache_dir: str | None = None,
         skipped: list[Skipped] | None = None) -> list[MemoryHeader]:
    """The manifest of the topic files under ``folder``: newest first, ``limit`` entries (None for all).

    ``folder`` is a memory directory, its team/ (relpaths then relative to team/, as team/MEMORY.md's
    pointers are), or another tier's folder (qwen-code's ``.qwen/team-memory`` in a repository).

    With ``cache_dir``, what each file's frontmatter said is kept there between
    runs (see ``HeaderCache``), so a hook called on every prompt opens only the
    files that changed. Files that are no memory to read (a FIFO, a link out)
    are left out: warned about, or listed in ``skipped`` when given.
    """
    cache = HeaderCache(os.path.join(cache_dir, HeaderCache.NAME)) if cache_dir else None
    headers = []
    for rel, entry in walk_topic_files(folder, skipped=skipped):
        try:
            st = entry.stat()  # follows a symlinked file, as readFile would
            header = cache.get(entry.path, rel, st) if cache else None
            if header is None:
                header = header_of(entry.path, rel, st)
                if cache:
                    cache.put(header, st)
            headers.append(header)
        except (OSError, ValueError):
            continue  # unreadable or a directory named *.md: dropped, as Claude does
    if cache:
        cache.save()
    # Stable sort: ties keep directory order.
    headers.sort(key=lambda h: h.mtime_ms, reverse=True)
    return headers if limit is None else headers[:limit]


class HeaderCache:
    """What ``header_of`` found in each file, keyed by the file's stat.

    A file is taken from the cache only when its inode, size, mtime and ctime
    (nanoseconds) are all unchanged. ctime cannot be set back by a program, so
    any write since the entry was made shows. As git does with its index, an
    entry is not kept while its file is younger than ``RACY_NS``: a second write
    within one tick of the kernel's file clock could leave every stamp as it was.
    (That guard reads this machine's clock: on a network file system whose
    server clock lags far behind, such a second write could go unseen.)
    """

    NAME = "manifest.marshal"
    VERSION = 1
    RACY_NS = 2_000_000_000

    def __init__(self, path: str):
        self.path = path
        self.version = self._version()
        self.entries = self._load()
        self.fresh: dict[str, tuple] = {}
        self.changed = False

    def _load(self) -> dict:
        import marshal

        try:
            with open(self.path, "rb") as fh:
                data = marshal.loads(fh.read())
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if not isinstance(data, dict) or data.get("version") != self.version:
            return {}
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}

    def _version(self) -> tuple:
        """Entries made by other code are not trusted: the parser's source stamps the cache
        (its checksum, not its mtime, so two installs of the same mem share one cache)."""
        import zlib

        from mem import __version__

        code = 0
        # the parser's file, found beside this one rather than imported (the hook need not load it)
        parser = os.path.join(os.path.dirname(__file__), "frontmatter.py")
        try:
            for source in (__file__, parser):
                with open(source, "rb") as fh:
                    code = zlib.crc32(fh.read(), code)
        except (OSError, TypeError):
            code = None
        return (self.VERSION, FRONTMATTER_MAX_LINES, __version__, code)

    @staticmethod
    def _stamp(st: os.stat_result) -> tuple:
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def get(self, path: str, relpath: str, st: os.stat_result) -> MemoryHeader | None:
        entry = self.entries.get(relpath)
        if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] == self._stamp(st)):
            return None
        try:
            name, description, mem_type, raw_type, warnings = entry[1]
            header = MemoryHeader(path, relpath, st.st_mtime_ns // 1_000_000, st.st_size, name, description,
                                  mem_type, raw_type, [Problem(code, message) for code, message in warnings])
        except (TypeError, ValueError):
            return None
        self.fresh[relpath] = entry
        return header

    def put(self, header: MemoryHeader, st: os.stat_result) -> None:
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < self.RACY_NS:
            return
        self.changed = True
        warnings = tuple((w.code, w.message) for w in header.warnings)
        fields = (header.name, header.description, header.type, header.raw_type, warnings)
        self.fresh[header.relpath] = (self._stamp(st), fields)

    def save(self) -> None:
        if not self.changed and len(self.fresh) == len(self.entries):
            return
        import marshal

        from mem.core.memdir.store import atomic_write, sweep_temp_files

        try:
            atomic_write(self.path, marshal.dumps({"version": self.version, "entries": self.fresh}))
        except (OSError, ValueError):
            return  # a cache: the scan is whole without it
        # What a killed recall left half-written here (this cache's or the ranker's) goes too.
        sweep_temp_files(os.path.dirname(self.path), recursive=False)


def format_manifest(headers: list[MemoryHeader]) -> str:
    return "\n".join(h.manifest_line() for h in headers)
