"""The memory directory's layout: every name in it, what is a memory and what is not, one walker.

Example: is_memory("feedback_tests.md") is True; is_memory("logs/2026/11/2026-11-25.md") is False;
index_of("team/deploy.md") == ("team/MEMORY.md", "deploy.md")

Claude Code's layout: ``MEMORY.md`` (the index, one pointer a line) and topic files (``*.md``, any
depth) at the top; ``logs/YYYY/MM/YYYY-MM-DD.md`` (append-only daily logs, no pointers);
``team/`` (synced with teammates, with an index of its own whose pointers are relative to
``team/``); ``.consolidate-lock`` (the dream lock). Every other module asks this one.

What may land in a memory directory, by any route (the write path asks ``foreign_reason``): topic
files (``*.md``), the two indexes, daily logs, team/ and pinned/ (qwen-code 0.24's protected
memories) hold nothing else. A dotted name anywhere (``.git/config``, ``.gitattributes``), a file
of another kind (``evil.sh``) or a client's instruction file (``CLAUDE.md``, loaded as
instructions were the directory ever inside a project) is refused.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator

from mem.core.memdir.files import file_kind, within
from mem.core.record import Record

#: The index file, at the top of the memory directory and of team/.
INDEX_NAME = "MEMORY.md"
#: Where a dream moves the hand-written prose that pushed the index over its limits (a topic file).
INDEX_NOTES = "index-notes.md"
#: Daily logs: append-only, never pointed at.
LOGS_DIR = "logs"
LOGS_PREFIX = LOGS_DIR + "/"
#: Team memory: synced with teammates, its own index.
TEAM_DIR = "team"
TEAM_PREFIX = TEAM_DIR + "/"
TEAM_INDEX = TEAM_PREFIX + INDEX_NAME
#: Subtrees whose files have no pointer in the top index.
UNINDEXED_DIRS = (TEAM_PREFIX, LOGS_PREFIX)
#: The dream lock: its body is the holder's PID, its mtime the time of the last consolidation.
DREAM_LOCK = ".consolidate-lock"
TOPIC_SUFFIX = ".md"

#: qwen-code 0.24's folder of memories protected from extraction and dream (topic files).
PINNED_DIR = "pinned"
#: Files a client loads as instructions, not memories: never planted in a memory directory.
INSTRUCTION_FILES = frozenset({"claude.md", "claude.local.md", "agents.md", "gemini.md", "qwen.md"})

#: The write path's temp files: ``.<name>.<8 random characters>.tmp`` (never *.md, so scans skip them).
TEMP_FILE = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")


def is_temp_name(name: str) -> bool:
    """A file the write path is writing, or one a killed writer left (walks leave these out)."""
    return name.startswith(".") and name.endswith(".tmp")


def is_index(relpath: str) -> bool:
    """MEMORY.md at any depth (Claude Code's scan leaves every one out)."""
    return relpath.rsplit("/", 1)[-1] == INDEX_NAME


def is_log(relpath: str) -> bool:
    return relpath.startswith(LOGS_PREFIX)


def is_team(relpath: str) -> bool:
    return relpath.replace(os.sep, "/").startswith(TEAM_PREFIX)


def is_pinned(relpath: str) -> bool:
    """A file under the top-level ``pinned/`` (any case): qwen-code 0.24's hand-curated memories, which
    no job writes, merges or deletes (a nested ``project/pinned/`` is ordinary memory, as in qwen-code).

    Example: is_pinned("pinned/architecture.md") is True; is_pinned("project/pinned/a.md") is False
    """
    head, sep, _ = relpath.replace(os.sep, "/").partition("/")
    return bool(sep) and head.lower() == PINNED_DIR


#: Why a pinned file is refused (the write path's error, import's skip).
PINNED_REASON = "pinned/ holds hand-curated memories that mem never writes, merges or deletes (edit them yourself)"


def is_memory(relpath: str) -> bool:
    """A topic file: ``*.md``, not an index, not a daily log."""
    return relpath.endswith(TOPIC_SUFFIX) and not is_index(relpath) and not is_log(relpath)


def is_content(relpath: str) -> bool:
    """What the memory directory's history records: everything but the dream lock and temp files."""
    return relpath != DREAM_LOCK and not is_temp_name(relpath.rsplit("/", 1)[-1])


def foreign_reason(relpath: str) -> str | None:
    """Why a file may not land at ``relpath`` (``/``-separated, relative) in a memory directory; None when it may.

    Example: foreign_reason("feedback_tests.md") is None; foreign_reason(".git/config") says why not.
    """
    parts = relpath.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "not a normalised relative path"
    if any(p.startswith(".") for p in parts):
        return "a hidden name (a leading dot): not a memory file"
    if not relpath.endswith(TOPIC_SUFFIX) or relpath == TOPIC_SUFFIX:
        return "not a memory file (*.md)"
    if parts[-1].lower() in INSTRUCTION_FILES:
        return "a client's instruction file, not a memory"
    if parts[-1] == INDEX_NAME and relpath not in (INDEX_NAME, TEAM_INDEX):
        return f"an index ({INDEX_NAME}) is kept only at the top and in {TEAM_PREFIX}"
    return None


def may_land(relpath: str) -> bool:
    """Whether a file may land at ``relpath`` in a memory directory (``foreign_reason`` is None)."""
    return foreign_reason(relpath) is None


def index_of(relpath: str) -> tuple[str, str] | None:
    """(the index that points at ``relpath``, the pointer's target), or None for a log or an index."""
    if is_log(relpath) or is_index(relpath):
        return None
    if is_team(relpath):
        return TEAM_INDEX, relpath[len(TEAM_PREFIX):]
    return INDEX_NAME, relpath


def daily_log(now: float | None = None) -> str:
    """Today's daily log (local date, as Claude Code's assistant mode names it)."""
    t = time.localtime(now)
    return f"{LOGS_PREFIX}{t.tm_year:04d}/{t.tm_mon:02d}/{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}.md"


def walk_entries(folder: str) -> Iterator[tuple[str, os.DirEntry, bool]]:
    """(relpath, entry, is_dir) for everything under ``folder``, breadth first, in directory order.

    Any folder: a memory directory, its team/, a scratch copy, a folder grep or lint searches.
    Like Node's recursive readdir, symlinked directories are not descended
    into (which also makes link loops harmless); symlinked files are kept.
    """
    queue = [("", folder)]
    while queue:
        prefix, directory = queue.pop(0)
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                queue.append((rel + "/", entry.path))
            yield rel, entry, is_dir


class Skipped(Record):
    """A file a walk met and left out: not a regular file, or a link leading out of the directory."""

    relpath: str
    path: str
    code: str  # "not-regular" | "link-out"
    message: str



def _skip_reason(entry: os.DirEntry, real_folder: str) -> tuple[str, str] | None:
    """Why a file met by a walk is not one to read: ("", "") to leave it out without a word (a
    directory), or None when it is a file to read (or fails to stat: its reader reports that)."""
    try:
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if not within(target, real_folder):
                return "link-out", f"a symbolic link to {target}, outside the directory"
        if entry.is_file():  # the link's target; the directory entry's own type otherwise (no stat)
            return None
        mode = entry.stat().st_mode
    except OSError:
        return None  # a dangling link, a link loop: as unreadable as a file vanished, for the reader to say
    if stat.S_ISDIR(mode):
        return "", ""
    return "not-regular", f"{file_kind(mode)}, not a regular file"


def walk_files(folder: str, suffix: str = "", *, skipped: list[Skipped] | None = None
               ) -> Iterator[tuple[str, os.DirEntry]]:
    """(relpath, entry) of every regular file under ``folder`` (any: ``walk_entries``) whose name ends in ``suffix``.

    Only regular files, or symbolic links to one inside the directory, are yielded: a FIFO
    would block its reader, a device feed it without end, and a link leading out would read
    (and a hook inject) a file the directory does not hold. Those are left out with a warning
    (a ``Notice`` the command prints), or, given ``skipped``, recorded there for the caller to
    report instead.
    """
    real_folder = os.path.realpath(folder)
    for rel, entry, is_dir in walk_entries(folder):
        if is_dir or not entry.name.endswith(suffix):
            continue
        reason = _skip_reason(entry, real_folder)
        if reason is None:
            yield rel, entry
        elif reason[0] and skipped is not None:
            skipped.append(Skipped(rel, entry.path, *reason))
        elif reason[0]:
            import warnings

            from mem.core.errors import Notice

            # told by the command (the CLI prints each Notice once), not written here
            warnings.warn(Notice(f"{entry.path}: skipped: {reason[1]}"), stacklevel=2)


def walk_topic_files(folder: str, *, skipped: list[Skipped] | None = None) -> Iterator[tuple[str, os.DirEntry]]:
    """(relpath, entry) for every ``*.md`` under ``folder`` except ``MEMORY.md`` (regular files only: ``walk_files``).

    A memory directory, its team/, another tier's folder (qwen-code's ``.qwen/team-memory``), or one that may
    be a memory directory (qwen-code's directory of an older version).
    """
    for rel, entry in walk_files(folder, TOPIC_SUFFIX, skipped=skipped):
        if entry.name != INDEX_NAME:
            yield rel, entry


def tree_files(folder: str) -> dict[str, str]:
    """relpath -> path of every file or link under ``folder`` (links not followed), content only.

    A memory directory or a scratch copy of one (``scratch.compare`` diffs the two trees).

    FIFOs, devices and sockets are no content: copying one would block or never end.
    """
    out: dict[str, str] = {}
    for rel, entry, is_dir in walk_entries(folder):
        try:
            kept = not is_dir and (entry.is_symlink() or entry.is_file(follow_symlinks=False))
        except OSError:
            continue
        if kept and is_content(rel):
            out[rel] = entry.path
    return out
