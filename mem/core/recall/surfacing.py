"""Surfacing, as Claude Code does it byte for byte, and the hook's output budget.

Each file is read up to 200 lines / 4096 UTF-8 bytes with its truncation note,
under a header saying how old it is, the whole wrapped in ``<system-reminder>``;
when the hook's output has a size limit, ``fit_to_budget`` shortens the long
memories so the blocks fit.

uses: jscompat (UTF-16 lengths), memdir (layout, files), tags (neutralise), team.routing (a team
memory's marking).
"""

from __future__ import annotations

from collections.abc import Sequence

from mem.core.jscompat import cut16, len16  # JavaScript's .length (UTF-16 units), which Claude's limits count
from mem.core.memdir.layout import TEAM_PREFIX

MAX_SURFACED = 5
MAX_MEMORY_LINES = 200
MAX_MEMORY_BYTES = 4096
DAY_MS = 86_400_000
#: A budget-shortened memory keeps at least this much of its text, or is left out.
MIN_SHORTENED_CHARS = 200


# Plain classes rather than dataclasses in this module: defining a dataclass costs about half a
# millisecond at import, and recall runs on every prompt.


class FileRead:
    __slots__ = ("content", "truncated")

    def __init__(self, content: str, truncated: str | None):
        self.content = content
        self.truncated = truncated  # "lines" | "bytes" | None


def read_for_surfacing(path: str) -> FileRead:
    """Up to 200 lines and 4096 UTF-8 bytes of a file, with Claude Code's truncation note."""
    from mem.core.memdir.files import read_bytes

    # Enough for 200 lines of any sane memory; the byte cap cuts long before.
    want = MAX_MEMORY_BYTES * 4 + 65536
    data = read_bytes(path, want + 1, head=True, for_context=True)  # no second hard link, no NUL byte
    data, more = data[:want], len(data) > want
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if more:
        lines.append("")  # at least one more line exists past what was read
    total_lines = len(lines)
    kept: list[str] = []
    size = 0
    by_bytes = False
    for line in lines[:MAX_MEMORY_LINES]:
        if line.endswith("\r"):
            line = line[:-1]
        add = len(line.encode("utf-8")) + (1 if kept else 0)
        if size + add > MAX_MEMORY_BYTES:
            by_bytes = True
            break
        kept.append(line)
        size += add
    content = "\n".join(kept)
    if by_bytes or total_lines > MAX_MEMORY_LINES:
        reason = f"{MAX_MEMORY_BYTES} byte limit" if by_bytes else f"first {MAX_MEMORY_LINES} lines"
        content += truncation_note(reason, path)
        return FileRead(content, "bytes" if by_bytes else "lines")
    return FileRead(content, None)


def truncation_note(reason: str, path: str) -> str:
    return f"\n\n> This memory file was truncated ({reason}). Use the Read tool to view the complete file at: {path}"


def memory_age_days(mtime_ms: int, now_ms: int) -> int:
    # The age is the file's mtime, not the frontmatter's metadata.modified: Claude Code 2.1.330
    # reads both when it scans the memory directory, but its recall header ("This memory is N
    # days old") and its manifest use the mtime; the stamp only dates its memory list.
    return max(0, (now_ms - mtime_ms) // DAY_MS)


def freshness_text(days: int) -> str:
    if days <= 1:
        return ""
    return (
        f"This memory is {days} days old. Memories are point-in-time observations, not live state — "
        "claims about code behavior or file:line citations may be outdated. "
        "Verify against current code before asserting as fact."
    )


def memory_header(path: str, mtime_ms: int, now_ms: int) -> str:
    days = memory_age_days(mtime_ms, now_ms)
    if days <= 1:
        return f"Memory (saved {'today' if days == 0 else 'yesterday'}): {path}:"
    return f"{freshness_text(days)}\n\nMemory: {path}:"


def reminder(header: str, content: str) -> str:
    return f"<system-reminder>\n{header}\n\n{content}\n</system-reminder>"


def hook_block(item: Surfaced, wrapped: bool) -> str:
    """One memory as injected: Claude Code's exact ``<system-reminder>`` block, or plain text.

    Plain (the same block without its two tag lines: header, blank line, text;
    a team memory keeps its shared-content marking) is for a client that
    escapes hook context (``hooks.escapes_context``): there the tags would
    reach the model as ``&lt;system-reminder>`` noise around every memory.
    """
    block = item.block
    return block if wrapped else block.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>")


class Surfaced:
    """One memory as it is injected."""

    __slots__ = ("path", "relpath", "mtime_ms", "type", "description", "score", "header", "content",
                 "truncated", "age_days")

    def __init__(self, path: str, relpath: str, mtime_ms: int, type: str | None, description: str | None,
                 score: float | None, header: str, content: str, truncated: str | None, age_days: int):
        self.path = path
        self.relpath = relpath
        self.mtime_ms = mtime_ms
        self.type = type
        self.description = description
        self.score = score
        self.header = header
        self.content = content
        self.truncated = truncated  # "lines" | "bytes" | "budget" | None
        self.age_days = age_days

    def __repr__(self) -> str:
        return f"Surfaced({self.relpath!r}, chars={self.chars}, truncated={self.truncated!r})"

    @property
    def shared(self) -> bool:
        """A team memory (under team/), synced from teammates."""
        return self.relpath.startswith(TEAM_PREFIX)

    @property
    def block(self) -> str:
        from mem.core.tags import neutralise  # memory text cannot close or open the wrapper

        if self.shared:
            from mem.core.team.routing import wrap_team_content

            # Shared memory arrives marked as such, as Claude Code marks its team memory.
            return reminder(neutralise(self.header), wrap_team_content(self.content))
        return reminder(neutralise(self.header), neutralise(self.content))

    @property
    def chars(self) -> int:
        return len16(self.content)

    def as_dict(self) -> dict:
        from mem.core.jscompat import iso_utc_ms

        return {
            "path": self.path,
            "relpath": self.relpath,
            "type": self.type,
            "description": self.description,
            "score": None if self.score is None else round(self.score, 4),
            "mtime": iso_utc_ms(self.mtime_ms),
            "mtime_ms": self.mtime_ms,
            "age_days": self.age_days,
            "header": self.header,
            "content": self.content,
            "truncated": self.truncated,
            "chars": self.chars,
            "shared": self.shared,
        }


def fit_to_budget(items: list[Surfaced], max_chars: int, *, separator: str = "\n") -> list[Surfaced]:
    """Shorten memories so their blocks, joined, take at most ``max_chars`` UTF-16 units.

    Short memories stay whole; the long ones share what is left equally, each
    cut at a line break where one is near and closed with a note naming the
    full file. When even that cannot fit, memories are left out from the end.
    """
    items = list(items)
    while items:
        total = sum(len16(i.block) for i in items) + len16(separator) * (len(items) - 1)
        if total <= max_chars:
            return items
        overhead = sum(len16(i.block) - i.chars for i in items) + len16(separator) * (len(items) - 1)
        available = max_chars - overhead
        shares = _water_fill([i.chars for i in items], available)
        out = []
        ok = True
        for item, share in zip(items, shares):
            if share >= item.chars:
                out.append(item)
                continue
            shortened = _shorten(item, share)
            if shortened is None:
                ok = False
                break
            out.append(shortened)
        if ok:
            return out
        items = items[:-1]
    return []


def _water_fill(lengths: Sequence[int], available: int) -> list[int]:
    """Equal shares of ``available``; what a short item does not need goes to the others."""
    shares = [0] * len(lengths)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    left, remaining = available, len(lengths)
    for i in order:
        share = left // remaining if remaining else 0
        shares[i] = min(lengths[i], share)
        left -= shares[i]
        remaining -= 1
    return shares


def _shorten(item: Surfaced, share: int) -> Surfaced | None:
    note = truncation_note("hook output limit", item.path)
    # Cut the text the file gave, not a truncation note it already carried.
    body = item.content
    if item.truncated in ("lines", "bytes"):
        body = body[: body.rfind("\n\n> This memory file was truncated (")]
    room = share - len16(note)
    if room < MIN_SHORTENED_CHARS:
        return None
    head = cut16(body, room)
    cut = head.rfind("\n")
    if cut >= room * 3 // 4:
        head = head[:cut]
    head = head.rstrip()
    return Surfaced(
        item.path, item.relpath, item.mtime_ms, item.type, item.description, item.score,
        item.header, head + note, "budget", item.age_days,
    )
