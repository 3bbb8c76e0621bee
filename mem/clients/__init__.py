"""One module per agent: what mem knows of each client's files (DESIGN: mem/clients/).

Today: codex (Codex CLI's session rollouts, its AGENTS.md, its hooks.json, its own
memories) and gemini (Gemini CLI's chat recordings, its GEMINI.md, its settings.json
hooks, its own memories). Claude Code and qwen-code still live in core
(transcripts.py, paths.py) until they move here.

A client's own memories (``own_memories``) are read as OwnMemory records, each
to become one mem topic file (``as_files``): ``mem scan --client`` lists them and
``mem import --client`` lands them through the write path.

uses: core.memdir.frontmatter (render_new), core.memdir.files (read_text)
"""

from __future__ import annotations

import re
from typing import NamedTuple


def named(name: str):
    """The module of a client by its name (``codex``, ``gemini``)."""
    from importlib import import_module

    return import_module(f"mem.clients.{name}")


#: Clients that read an instructions file mem can keep a block in.
WITH_INSTRUCTIONS_FILE = ("codex", "gemini")

#: Clients that load no memory directory themselves: a SessionStart hook gives them the full text.
NO_OWN_MEMORY = frozenset({"codex", "gemini"})

#: Clients whose own memories ``mem scan --client`` lists and ``mem import --client`` takes.
WITH_OWN_MEMORIES = ("codex", "gemini")

#: The longest description taken from a client's memory (mem's index line stays short).
DESCRIPTION_MAX = 150
#: The longest file name stem made from a client's memory.
SLUG_MAX = 60


class OwnMemory(NamedTuple):
    """One memory a client keeps in its own files, as mem will store it."""

    name: str  # the topic file's stem: kebab case, the client's name first (codex-..., gemini-...)
    description: str
    type: str  # user, feedback, project or reference
    body: str
    source: str  # the client's file it comes from
    line: int | None = None  # its line there, when it is one line of a larger file

    def as_dict(self) -> dict:
        return {**self._asdict(), "relpath": f"{self.name}.md"}

    def manifest_line(self) -> str:
        where = self.source + (f":{self.line}" if self.line else "")
        return f"- [{self.type}] {self.name}.md ({where}): {self.description}"


def slug(text: str, limit: int = SLUG_MAX) -> str:
    """Lower-case words joined by '-' (letters of any script kept), at most ``limit`` characters."""
    import unicodedata  # not at import: the recall hook loads this package

    text = re.sub(r"[\W_]+", "-", unicodedata.normalize("NFKC", text).lower()).strip("-")
    if len(text) > limit:
        cut = text.rfind("-", 0, limit + 1)
        text = text[:cut if cut > limit // 2 else limit].strip("-")
    return text


def first_line(text: str) -> str:
    """The first line of Markdown that says something: no heading marks, bullets or emphasis; shortened."""
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:#+|[-*+]|\d+[.)])\s+", "", line).strip().strip("*_`").strip()
        if line and line not in ("---", "v1"):
            return line if len(line) <= DESCRIPTION_MAX else line[:DESCRIPTION_MAX - 1].rstrip() + "…"
    return ""


def unique(memories: list[OwnMemory]) -> list[OwnMemory]:
    """The memories with the same text once, and every name distinct (``-2``, ``-3``... after the first)."""
    seen_text: set[tuple[str, str]] = set()
    names: set[str] = set()
    out = []
    for m in memories:
        key = (m.description, m.body.strip())
        if key in seen_text:
            continue
        seen_text.add(key)
        name, n = m.name, 1
        while name in names:
            n += 1
            name = f"{m.name}-{n}"
        names.add(name)
        out.append(m._replace(name=name))
    return out


def as_files(memories: list[OwnMemory]) -> dict[str, bytes]:
    """Each memory as a topic file with mem's frontmatter: ``{relpath: bytes}``."""
    from mem.core.memdir.frontmatter import render_new

    return {f"{m.name}.md": render_new({"name": m.name, "description": m.description, "type": m.type},
                                       m.body).encode("utf-8")
            for m in memories}


def read_text(path: str) -> str | None:
    """A client's file as text (typed and capped by memdir.files); None when it is not there or not one."""
    from mem.core.memdir.files import read_text as read

    try:
        return read(path)
    except (OSError, UnicodeDecodeError):
        return None
