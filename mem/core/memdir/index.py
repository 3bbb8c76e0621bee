"""MEMORY.md: rendered as an agent is given it, linted, rebuilt.

The index is a list of one-line pointers, ``- [Title](file.md) — hook``.
Claude Code loads it with its frontmatter and block-level HTML comments
stripped, then truncated to 200 lines and 25,000 UTF-16 units with a warning
line appended; ``render_as_injected`` reproduces that byte for byte.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote

from mem.core.memdir.frontmatter import FRONTMATTER_RE, js_trim, strip_frontmatter
from mem.core.memdir import manifest
from mem.core.memdir.layout import INDEX_NAME, UNINDEXED_DIRS, index_of, is_index, is_team
from mem.core.memdir.manifest import MemoryHeader, Problem
from mem.core.memdir.problems import NOT_INDEXED
from mem.core.jscompat import cut16, len16

MAX_ENTRYPOINT_LINES = 200
MAX_ENTRYPOINT_BYTES = 25_000  # compared against UTF-16 length, despite the name
MAX_LINE_CHARS = 150  # the guidance given to agents: one line under ~150 characters
POINTER_SEPARATOR = " — "


def format_file_size(n: int) -> str:
    """Claude Code's formatFileSize."""
    kb = n / 1024
    if kb < 1:
        return f"{n} bytes"
    for unit, value in (("KB", kb), ("MB", kb / 1024), ("GB", kb / 1024 / 1024)):
        if unit == "GB" or value < 1024:
            text = f"{value:.1f}"
            if text.endswith(".0"):
                text = text[:-2]
            return text + unit
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Truncation:
    content: str
    line_count: int
    byte_count: int  # UTF-16 units, as Claude counts them
    was_line_truncated: bool
    was_byte_truncated: bool

    @property
    def truncated(self) -> bool:
        return self.was_line_truncated or self.was_byte_truncated


def truncate_entrypoint(raw: str) -> Truncation:
    trimmed = js_trim(raw)
    lines = trimmed.split("\n")
    line_count = len(lines)
    byte_count = len16(trimmed)
    was_line = line_count > MAX_ENTRYPOINT_LINES
    was_byte = byte_count > MAX_ENTRYPOINT_BYTES
    if not was_line and not was_byte:
        return Truncation(trimmed, line_count, byte_count, False, False)
    t = "\n".join(lines[:MAX_ENTRYPOINT_LINES]) if was_line else trimmed
    if len16(t) > MAX_ENTRYPOINT_BYTES:
        head = cut16(t, MAX_ENTRYPOINT_BYTES + 1)  # lastIndexOf('\n', 25000) looks at index 25000 too
        cut = head.rfind("\n")
        t = t[:cut] if cut > 0 else cut16(t, MAX_ENTRYPOINT_BYTES)
    if was_byte and not was_line:
        reason = f"{format_file_size(byte_count)} (limit: {format_file_size(MAX_ENTRYPOINT_BYTES)}) — index entries are too long"
    elif was_line and not was_byte:
        reason = f"{line_count} lines (limit: {MAX_ENTRYPOINT_LINES})"
    else:
        reason = f"{line_count} lines and {format_file_size(byte_count)}"
    warning = (
        f"\n\n> WARNING: {INDEX_NAME} is {reason}. Only part of it was loaded. "
        "Keep index entries to one line under ~200 chars; move detail into topic files."
    )
    return Truncation(t + warning, line_count, byte_count, was_line, was_byte)


#: A Markdown code fence opening or closing (CommonMark: up to three spaces of indent).
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT_START = re.compile(r"^ {0,3}<!--")
_COMMENT_SPAN = re.compile(r"<!--[\s\S]*?-->")


def strip_html_comments(content: str) -> str:
    """Drop block-level HTML comments, as Claude Code does before loading an index.

    Claude lexes the file with marked and drops top-level ``html`` tokens that
    are comments. Such a block starts on a line beginning (after up to three
    spaces) with ``<!--`` outside fenced code and outside a list, runs to the
    line holding ``-->``, and takes the blank lines after it along. Text left on
    those lines besides the comments is kept; an unclosed comment is left alone
    so a typo does not swallow the rest of the file. Lexing normalises CRLF, so
    a file that had a comment stripped comes back with LF line ends.
    """
    if "<!--" not in content:
        return content
    lines = content.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    fence: str | None = None
    in_list = False
    stripped = False
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
        elif fence is not None and line.lstrip(" ").startswith(fence) and line.strip() == line.strip()[0] * len(line.strip()):
            fence = None
        elif fence is None:
            if _LIST_ITEM.match(line):
                in_list = True
            elif line.strip() and not line.startswith((" ", "\t")):
                in_list = False  # a line at the margin ends a list
            if _COMMENT_START.match(line) and not (in_list and line.startswith((" ", "\t"))):
                j = i
                if "-->" not in line[line.index("<!--") + 4:]:
                    j += 1
                    while j < len(lines) and "-->" not in lines[j]:
                        j += 1
                if j < len(lines):
                    block = "\n".join(lines[i:j + 1])
                    residue = _COMMENT_SPAN.sub("", block)
                    stripped = True
                    if js_trim(residue):
                        out.append(residue)
                    elif j == len(lines) - 1:
                        out.append("")  # the newline before a final comment stays
                    i = j + 1
                    while i < len(lines) - 1 and not lines[i].strip():
                        i += 1  # the block's trailing blank lines go with it
                    in_list = False
                    continue
        out.append(line)
        i += 1
    if not stripped:
        return content
    return "\n".join(out)


_LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def render_as_injected(raw: str) -> Truncation:
    """MEMORY.md exactly as an agent is given it."""
    return truncate_entrypoint(strip_html_comments(strip_frontmatter(raw)))


# --- pointers --------------------------------------------------------------

_POINTER = re.compile(
    r"^(?P<indent>\s*)[-*+]\s+\[(?P<title>(?:[^\]\\]|\\.)*)\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)(?P<rest>.*)$"
)


@dataclass(frozen=True)
class Pointer:
    lineno: int  # 1-based
    line: str
    title: str
    target: str  # as written
    relpath: str | None  # normalised '/'-path inside the memory dir, None for external links
    hook: str


def _normalise_target(target: str) -> str | None:
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
        return None  # a URL or an anchor, not a topic file
    target = unquote(target.split("#", 1)[0])
    if not target:
        return None
    return os.path.normpath(target).replace(os.sep, "/")


def parse_pointers(text: str) -> list[Pointer]:
    pointers = []
    for i, line in enumerate(text.split("\n"), start=1):
        m = _POINTER.match(line.rstrip("\r"))
        if not m:
            continue
        rest = m.group("rest").strip()
        for sep in ("—", "–", "-", ":"):
            if rest.startswith(sep):
                rest = rest[len(sep):].strip()
                break
        pointers.append(Pointer(i, line, m.group("title"), m.group("target"), _normalise_target(m.group("target")), rest))
    return pointers


def indexed_topics(headers: list[MemoryHeader]) -> list[MemoryHeader]:
    """Topic files that belong in the top-level index."""
    return [h for h in headers if not h.relpath.startswith(UNINDEXED_DIRS)]


# --- lint ------------------------------------------------------------------


@dataclass(frozen=True)
class IndexProblem:
    code: str
    message: str
    line: int | None = None
    relpath: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "line": self.line, "relpath": self.relpath}


def lint(raw: str | None, index_dir: str, headers: list[MemoryHeader]) -> list[IndexProblem]:
    """Problems with an index: limits, long lines, dangling, missing and duplicate pointers.

    ``index_dir`` is the folder the index sits in, which its pointers are relative to: the memory
    directory for MEMORY.md, its team/ for team/MEMORY.md (``headers`` scanned from that folder).
    """
    problems: list[IndexProblem] = []
    topics = indexed_topics(headers)
    if raw is None:
        if topics:
            problems.append(IndexProblem("missing-index", f"there is no {INDEX_NAME} but there are {len(topics)} topic files"))
        return problems
    if FRONTMATTER_RE.match(raw):
        problems.append(IndexProblem("index-frontmatter", f"{INDEX_NAME} has frontmatter; the index should have none", 1))
    t = render_as_injected(raw)
    if t.was_line_truncated:
        problems.append(IndexProblem("too-many-lines", f"{t.line_count} lines (limit {MAX_ENTRYPOINT_LINES}): agents see only the first {MAX_ENTRYPOINT_LINES}"))
    if t.was_byte_truncated:
        problems.append(IndexProblem("too-large", f"{format_file_size(t.byte_count)} (limit {format_file_size(MAX_ENTRYPOINT_BYTES)}): agents see only part of it"))
    for i, line in enumerate(raw.split("\n"), start=1):
        n = len16(line.rstrip("\r"))
        if n > MAX_LINE_CHARS:
            problems.append(IndexProblem("long-line", f"line is {n} characters (keep index lines under {MAX_LINE_CHARS})", i))
    seen: dict[str, int] = {}
    for p in parse_pointers(raw):
        if p.relpath is None:
            continue
        if p.relpath.startswith("../") or os.path.isabs(p.relpath):
            problems.append(IndexProblem("outside-pointer", f"pointer to {p.target} leads outside the memory directory", p.lineno, p.relpath))
            continue
        if p.relpath in seen:
            problems.append(IndexProblem("duplicate-pointer", f"{p.relpath} is already listed on line {seen[p.relpath]}", p.lineno, p.relpath))
            continue
        seen[p.relpath] = p.lineno
        if not os.path.isfile(os.path.join(index_dir, p.relpath)):
            problems.append(IndexProblem("dangling-pointer", f"pointer to {p.relpath}, which does not exist", p.lineno, p.relpath))
    for h in topics:
        if h.relpath not in seen:
            problems.append(IndexProblem(NOT_INDEXED, f"{h.relpath} has no pointer in {INDEX_NAME}", None, h.relpath))
    return problems


# --- rebuild ---------------------------------------------------------------

_SLUG = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")


def title_of(h: MemoryHeader) -> str:
    name = h.name or os.path.splitext(os.path.basename(h.relpath))[0]
    if _SLUG.match(name):
        words = re.sub(r"[-_]+", " ", name)
        name = words[:1].upper() + words[1:]
    return name.replace("[", "(").replace("]", ")").replace("\n", " ")


def pointer_line(h: MemoryHeader) -> str:
    target = h.relpath
    if re.search(r"[\s()<>]", target):
        target = f"<{target}>"
    head = f"- [{title_of(h)}]({target})"
    hook = " ".join((h.description or "").split())
    if not hook:
        return head
    room = MAX_LINE_CHARS - len16(head) - len16(POINTER_SEPARATOR)
    if room < 10:
        return head
    if len16(hook) > room:
        hook = cut16(hook, room - 1).rstrip() + "…"
    return head + POINTER_SEPARATOR + hook


def rebuild(raw: str | None, index_dir: str, headers: list[MemoryHeader]) -> str:
    """The index with stale and duplicate pointers dropped and missing ones added.

    Hand-written lines for files that still exist stay, in their order; other
    lines (headings, prose) are kept as they are; pointers for topic files
    without one are appended, sorted by path. ``index_dir``: the folder the index
    sits in, as for ``lint``.
    """
    raw = raw or ""
    newline = "\r\n" if "\r\n" in raw else "\n"
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pointers = {p.lineno: p for p in parse_pointers(raw)}
    kept: list[str] = []
    seen: set[str] = set()
    for i, line in enumerate(lines, start=1):
        p = pointers.get(i)
        if p is not None and p.relpath is not None:
            if p.relpath in seen or not os.path.isfile(os.path.join(index_dir, p.relpath)) or p.relpath.startswith("../"):
                continue
            seen.add(p.relpath)
        kept.append(line)
    missing = sorted((h for h in indexed_topics(headers) if h.relpath not in seen), key=lambda h: h.relpath)
    cr = "\r" if newline == "\r\n" else ""
    kept.extend(pointer_line(h) + cr for h in missing)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept) + "\n" if kept else ""


# --- team/MEMORY.md --------------------------------------------------------



def sort_pointer_runs(text: str) -> str:
    """Each run of consecutive pointer lines sorted by the path it points to; other lines stay put."""
    lines = text.split("\n")
    pointers = {p.lineno - 1: p for p in parse_pointers(text)}
    out: list[str] = []
    run: list[Pointer] = []

    def flush() -> None:
        out.extend(p.line for p in sorted(run, key=lambda p: (p.relpath or p.target, p.lineno)))
        run.clear()

    for i, line in enumerate(lines):
        if i in pointers:
            run.append(pointers[i])
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


def rebuild_team(raw: str | None, team_root: str, headers: list[MemoryHeader]) -> str:
    """team/MEMORY.md rebuilt like ``rebuild`` (``headers`` scanned from team/), pointers sorted by path.

    The team index is synced between machines: with pointers in path order
    (within each run of consecutive pointers, so headings keep their lists),
    the same files give the same index everywhere and rebuilding on two
    machines does not turn into a sync conflict.
    """
    return sort_pointer_runs(rebuild(raw, team_root, headers))


def check_headers(memory, headers: list[MemoryHeader]) -> None:
    """Add the costlier problems to each header of ``memory`` (a MemoryDir): not in its index, carries a secret."""
    from mem.core.guards.secrets import scan as scan_secrets
    from mem.core.memdir.files import read_text

    listed: dict[str, set[str] | None] = {}

    def pointers_of(where: str) -> set[str] | None:
        if where not in listed:
            try:
                text = read_text(os.path.join(memory.root, where), errors="replace", head=True)
                listed[where] = {p.relpath for p in parse_pointers(text) if p.relpath}
            except OSError:
                listed[where] = None
        return listed[where]

    for h in headers:
        owner = index_of(h.relpath)
        if owner is not None:
            where, rel = owner
            pointers = pointers_of(where)
            if pointers is None:
                h.warnings.append(Problem(NOT_INDEXED, f"no pointer to it: {where} does not exist"))
            elif rel not in pointers:
                h.warnings.append(Problem(NOT_INDEXED, f"no pointer to it in {where}"))
        try:
            text = read_text(h.path, errors="replace")
        except OSError as exc:
            h.warnings.append(Problem("unreadable", exc.strerror or str(exc)))
            continue
        for finding in scan_secrets(text):
            h.warnings.append(
                Problem("secret", f"line {finding.line} looks like a secret ({finding.label}, rule {finding.rule_id})")
            )


def check_poison(headers: list[MemoryHeader]) -> None:
    """Add a "poison" problem to each header whose file the poisoning guard flags (what team pull quarantines).

    ``mem status`` reports these through mem lint itself; ``mem scan --check`` through this.
    """
    from mem.core.guards import poison
    from mem.core.memdir.files import read_text

    for h in headers:
        try:
            text = read_text(h.path, errors="replace")
        except OSError:
            continue  # check_headers reports it unreadable (too large, not a regular file...)
        if poison.flags(text):  # stops at the finding that decides; the full report only for a flagged file
            first = max(poison.scan_text(text).findings, key=lambda f: f.weight)
            h.warnings.append(Problem("poison", f"line {first.line} {first.message} (rule {first.rule_id}; "
                                                "`mem lint` shows every finding)"))


# --- pointers kept up to date as memories are written ----------------------------------------------


def ensure_pointer(memory, rel: str, previous_line: str | None = None):
    """Make sure ``rel`` has a pointer in its index (team/MEMORY.md for team/ files).

    A pointer that is exactly ``previous_line`` (the line we would have written
    for the file before it changed) is refreshed; any other existing pointer
    is the user's and stays. Returns (index relpath, WriteResult or None).
    """
    index_name, target = index_of(rel) or (INDEX_NAME, rel)
    path = os.path.join(memory.root, rel)
    line = pointer_line(manifest.header_of(path, target, os.stat(path)))

    def change(old: str | None) -> str | None:
        text = old or ""
        mine = [p for p in parse_pointers(text) if p.relpath == target]
        if mine:
            p = mine[0]
            if previous_line is None or p.line.rstrip("\r") != previous_line or line == previous_line:
                return None
            lines = text.split("\n")
            lines[p.lineno - 1] = line + ("\r" if p.line.endswith("\r") else "")
            return "\n".join(lines)
        newline = "\r\n" if "\r\n" in text else "\n"
        if text and not text.endswith("\n"):
            text += newline
        return text + line + newline

    return index_name, memory.update_index(change, name=index_name)


def pointer_for(memory, rel: str) -> str | None:
    """The pointer line we would write for ``rel`` as it is now, or None when it does not exist."""
    path = os.path.join(memory.root, rel)
    target = (index_of(rel) or (INDEX_NAME, rel))[1]
    try:
        return pointer_line(manifest.header_of(path, target, os.stat(path)))
    except (OSError, ValueError):
        return None


def drop_pointers(text: str | None, deleted: set[str]) -> str | None:
    """The index without the pointer lines of ``deleted`` files; None when it has none of them."""
    if not text:
        return None
    gone = {p.lineno for p in parse_pointers(text) if p.relpath in deleted}
    if not gone:
        return None
    lines = text.split("\n")
    return "\n".join(line for i, line in enumerate(lines, start=1) if i not in gone)


def ensure_indexed(memory, relpaths: list[str]) -> list[str]:
    """Add a MEMORY.md pointer for each topic file in ``relpaths`` that has none; the ones added."""
    topics = []
    added: list[str] = []
    for rel in relpaths:
        if is_index(rel):
            continue
        if is_team(rel):  # team memory has its own index
            try:
                if ensure_pointer(memory, rel)[1] is not None:
                    added.append(rel)
            except (OSError, ValueError):
                pass
            continue
        if rel.startswith(UNINDEXED_DIRS):
            continue
        path = os.path.join(memory.root, rel)
        try:
            topics.append(manifest.header_of(path, rel, os.stat(path)))
        except (OSError, ValueError):
            continue
    if not topics:
        return added
    team_added = list(added)

    def change(old: str | None) -> str | None:
        present = {p.relpath for p in parse_pointers(old or "")}
        missing = [h for h in topics if h.relpath not in present]
        added[:] = team_added + [h.relpath for h in missing]
        if not missing:
            return None
        text = old or ""
        if text and not text.endswith("\n"):
            text += "\n"
        return text + "".join(pointer_line(h) + "\n" for h in missing)

    memory.update_index(change)
    return added


# --- fit -------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


@dataclass(frozen=True)
class Fitted:
    text: str
    prose: list[str]  # hand-written lines moved out, verbatim, in order
    unreachable: list[str]  # topic files whose pointer still lies beyond what an agent sees


def fit(raw: str, headers: list[MemoryHeader], notes_pointer: str) -> Fitted:
    """An index over its limits made to fit, keeping a pointer to every topic file in sight.

    In order, until what an agent is given holds every pointer: hand-written
    prose (lines that are not pointers to topic files, headings or blank) goes
    (``prose``; the caller keeps it in the file ``notes_pointer`` points at,
    whose pointer goes near the top); blank lines go; pointer lines longer
    than the guidance are rewritten from the topic file's frontmatter; headings
    go; hooks go. Topic files that still do not fit are ``unreachable``.
    """
    by_path = {h.relpath: h for h in indexed_topics(headers)}
    pointers = {p.lineno - 1: p for p in parse_pointers(raw) if p.relpath in by_path}
    notes_target = parse_pointers(notes_pointer)[0].relpath
    lines = raw.rstrip("\n").split("\n")
    kept: list[str] = []
    prose: list[str] = []
    for i, line in enumerate(lines):
        p = pointers.get(i)
        if p is not None and p.relpath == notes_target:
            continue  # put back at the top
        if p is not None or _HEADING.match(line) or not line.strip():
            if line.strip() or (kept and kept[-1].strip()):
                kept.append(line)
        else:
            prose.append(line)
    top = 1 if kept and _HEADING.match(kept[0]) else 0
    if prose or notes_target in by_path:
        kept.insert(top, notes_pointer)

    def fits(candidate: list[str]) -> bool:
        return not render_as_injected("\n".join(candidate)).truncated

    pointers_by_line = {p.line: p for p in pointers.values()}
    steps = [
        lambda ls: [x for x in ls if x.strip()],
        lambda ls: [pointer_line(by_path[pointers_by_line[x].relpath]) if x in pointers_by_line and len16(x) > MAX_LINE_CHARS else x
                    for x in ls],
        lambda ls: [x for x in ls if not _HEADING.match(x)],
        lambda ls: [re.sub(r"^(\s*[-*+]\s+\[(?:[^\]\\]|\\.)*\]\([^)]*\)).*$", r"\1", x) for x in ls],
    ]
    for step in steps:
        if fits(kept):
            break
        kept = step(kept)
    text = "\n".join(kept) + "\n"
    shown = {p.relpath for p in parse_pointers(render_as_injected(text).content)}
    unreachable = sorted(r for r in by_path if r not in shown and r in {p.relpath for p in parse_pointers(text)})
    return Fitted(text, prose, unreachable)


@dataclass
class Rebuilt:
    """What ``rebuild_in_place`` did (or, dry, would do) to one index."""

    name: str  # MEMORY.md, or team/MEMORY.md
    path: str
    old: str  # the index before ("" when there was none)
    new: str  # the rebuilt index
    added: list[str]  # pointers added
    removed: list[str]  # pointers dropped
    written: bool

    @property
    def changed(self) -> bool:
        return self.new != self.old

    def as_dict(self) -> dict:
        return {"path": self.path, "changed": self.changed, "written": self.written,
                "added": self.added, "removed": self.removed}


def rebuild_in_place(memory, *, team: bool = False, dry_run: bool = False) -> Rebuilt:
    """Rebuild ``memory``'s MEMORY.md (team/MEMORY.md with ``team``) as one operation of its
    history and one event of its audit log; ``dry_run`` only computes it."""
    import time

    from mem.core.memdir import events
    from mem.core.memdir.layout import TEAM_INDEX

    started = time.monotonic()
    root = memory.team_dir if team else memory.root
    name = TEAM_INDEX if team else INDEX_NAME
    build = rebuild_team if team else rebuild
    path = os.path.join(root, INDEX_NAME)
    from mem.core.memdir.files import read_text

    try:
        old = read_text(path, errors="replace", newline="", inside=root)
    except FileNotFoundError:
        old = ""
    new = build(old or None, root, manifest.scan(root, limit=None) if os.path.isdir(root) else [])
    before = {p.relpath for p in parse_pointers(old) if p.relpath}
    after = {p.relpath for p in parse_pointers(new) if p.relpath}
    done = Rebuilt(name, path, old, new, sorted(after - before), sorted(before - after), written=False)
    if dry_run or not done.changed:
        return done
    with memory.operation("index", ["--rebuild"] + (["--team"] if team else []), event=False):
        written = memory.update_index(lambda current: build(current, root, manifest.scan(root, limit=None)), name=name)
    if written is not None:
        done.written = True
        events.record(memory, "index --rebuild", created=[written.relpath] if written.created else [],
                      updated=[] if written.created else [written.relpath], duration=time.monotonic() - started,
                      detail={"added": done.added, "removed": done.removed,
                              "operation": memory.last_operation.id if memory.last_operation else None})
    return done

