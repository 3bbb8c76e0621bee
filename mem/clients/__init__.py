"""One module per agent: what mem knows of each client (DESIGN: mem/clients/).

claude (Claude Code), qwen (qwen-code), codex (Codex CLI's session rollouts, its
AGENTS.md) and gemini (Gemini CLI's chat recordings, its GEMINI.md). A module
says, as module attributes and functions: ``LAYOUT`` (the memory directory's
layout and frontmatter), ``TRANSCRIPTS_SUBDIR`` (where a project folder keeps
its sessions), ``LOADS_OWN_MEMORY`` (it loads MEMORY.md and its memory
instructions itself), ``HOOK_GROUPS`` / ``SETTINGS_SCOPES`` /
``SETTINGS_COMMENTS`` / ``settings_file`` / ``hooks_disabled_by`` (its hooks and
settings files), ``home``, ``escapes_hook_context``, ``memory_on`` (its switch)
and ``default_memory_dir`` / ``project_folder``. Core and CLI ask these, or this
package's functions: ``memory_on`` (the one rule: does memory apply to a
resolved directory), ``of_payload`` (who sent a hook payload), ``hook_event``,
``of_layout``, ``payload_layout``, ``earlier_memory_dir``, ``team_tier``. No module outside
this package compares a client's name (tests/test_structure.py).

A client's own memories (``own_memories`` of codex and gemini) are read as OwnMemory
records, each to become one mem topic file (``as_files``): ``mem scan --client`` lists
them and ``mem import --client`` lands them through the write path.

uses: core.paths lazily (user_memory_dir), core.memdir.frontmatter (render_new), core.memdir.files
(read_text), core.memdir.layout and core.team.routing (team_tier: is team/ a directory) lazily; the client modules: core.messages, and core.paths, core.memdir lazily
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: The clients mem installs hooks for (``mem hooks install --client``).
HOOKED = ("claude", "qwen", "codex", "gemini")
#: The memory-directory layouts (and topic-file frontmatter) mem reads and writes: each client's own.
LAYOUTS = ("claude", "qwen")
#: Clients that read an instructions file mem can keep a block in.
WITH_INSTRUCTIONS_FILE = ("codex", "gemini")


class Group(NamedTuple):
    """One matcher group of one hook event: the handlers mem adds, as (arguments, timeout in s,
    or None for the client's default)."""

    event: str
    matcher: str | None
    handlers: tuple[tuple[str, int | None], ...]


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


def named(name: str):
    """The module of a client by its name (``claude``, ``qwen``, ``codex``, ``gemini``)."""
    from importlib import import_module

    return import_module(f"mem.clients.{name}")


def of_payload(transcript_path: str | None, raw: dict | None) -> str:
    """The client that sent a hook payload: ``qwen``, ``gemini``, ``codex``, else ``claude``.

    qwen-code keeps transcripts under ``~/.qwen/projects/<slug>/chats/``
    and stamps every payload with ``timestamp``; Claude Code (2.1.197 and
    2.1.330) does neither. qwen-code 0.24 also sends ``prompt_id`` and
    ``permission_mode``, as Claude Code does, so those tell nothing. Gemini
    CLI stamps ``timestamp`` too; its transcripts are under ``~/.gemini/tmp/``.
    Codex sends Claude Code's fields; its transcript is a ``rollout-*.jsonl``.
    """
    from mem.clients import codex, gemini

    tp = (transcript_path or "").replace("\\", "/")
    for other in (gemini, codex):
        if other.is_transcript_path(tp):
            return other.NAME
    if "/.qwen/" in tp or "/chats/" in tp or "timestamp" in (raw or {}):
        return "qwen"
    return "claude"


def hook_event(transcript_path: str | None, event: str) -> str:
    """A client's hook event by the name Claude Code gives it (Gemini CLI's BeforeAgent is
    UserPromptSubmit, AfterAgent Stop: its module's HOOK_EVENTS); other names are kept."""
    from mem.clients import gemini

    if gemini.is_transcript_path(transcript_path or ""):
        return gemini.HOOK_EVENTS.get(event, event)
    return event


def of_layout(layout: str):
    """The client whose memory directory a resolution's layout is: qwen-code's for ``qwen``,
    Claude Code's for its own, an agent's (Claude Code's subagents) and one named by --dir."""
    return named(layout if layout in LAYOUTS else "claude")


def payload_layout(name: str) -> str:
    """The memory layout a hook payload from the client means (``auto``: the resolution decides)."""
    return getattr(named(name), "PAYLOAD_LAYOUT", "auto")


def memory_on(resolution, env=None) -> tuple[bool, str]:
    """Whether memory applies to a resolved memory directory, and the rule that decided: the one
    answer recall, prompt, context, extract, path and status give.

    A directory named by --dir or MEM_DIR is the user's own: no client's switch governs it.
    Any other is a client's, and its switch decides (``memory_on`` of the client's module):
    Claude Code's isAutoMemoryEnabled for its auto-memory directory and its subagents'
    memory, qwen-code's ``memory.enableManagedAutoMemory`` for its own.

    Example: memory_on(resolve(dir="/tmp/m")) == (True, "a directory of your own (--dir)")
    """
    if resolution.layout == "dir":
        return True, f"a directory of your own ({resolution.rule})"
    return of_layout(resolution.layout).memory_on(resolution, env)


def earlier_memory_dir(resolution, env=None) -> str | None:
    """A folder where the client kept this directory's memories before a release moved them (qwen-code
    0.15's, shared by every worktree of a repository), when the new one holds none yet; else None."""
    module = of_layout(resolution.layout) if resolution.layout in LAYOUTS else None
    rule = getattr(module, "earlier_memory_dir", None)
    return rule(resolution, env) if rule else None


def user_memory_dir(resolution, env=None) -> tuple[str, str]:
    """(the user-level memory directory for a project's memory, its layout): the client's own user
    tier where it has one (qwen-code 0.24's ``~/.qwen/memories``), else mem's (MEM_USER_DIR, or
    ``<user data dir>/mem/memory``). MEM_USER_DIR names mem's whatever the client."""
    import os

    from mem.core.paths import user_memory_dir as mems

    environ = os.environ if env is None else env
    module = of_layout(resolution.layout) if resolution.layout in LAYOUTS else None
    own = getattr(module, "user_memory_dir", None)
    tier = own(environ) if own and not environ.get("MEM_USER_DIR") else None
    return (tier, module.LAYOUT) if tier else (mems(environ), "claude")


def escapes_hook_context(name: str, version: tuple[int, ...] | None) -> bool:
    """Whether the client escapes tags in hook context before the model reads it. For a client
    whose behaviour was not recorded (Codex CLI, Gemini CLI), Claude Code's rule."""
    module = named(name)
    rule = getattr(module, "escapes_hook_context", None) or named("claude").escapes_hook_context
    return rule(version)


class TeamTier(NamedTuple):
    """A project's team memory: where it is, whether the client reads it, and why."""

    memory_dir: str
    on: bool
    reason: str
    separate: bool  # a directory of its own (qwen-code's .qwen/team-memory), not team/ inside the memory directory

    def as_dict(self) -> dict:
        return {"memory_dir": self.memory_dir, "team_memory_on": self.on, "team_memory_on_reason": self.reason,
                "separate": self.separate}


def hooks_file_of(name: str, scopes: tuple[str, ...], hooks_file, scope: str, project: str | None, env) -> str:
    """A client's hooks file for a scope (``hooks_file(scope, root, env)``), the project's root found
    from ``project`` (else here); UsageError for a scope the client has none of (Codex, Gemini CLI)."""
    import os

    from mem.core import paths
    from mem.core.errors import UsageError

    if scope not in scopes:
        raise UsageError(f"{name} has no {scope} hooks file; use --scope {' or '.join(scopes)}")
    return hooks_file(scope, "" if scope == "user" else paths.project_root(project or os.getcwd()), env)


def team_tier(resolution, env=None) -> TeamTier:
    """The team memory of a resolved memory directory: qwen-code 0.24's tier in the repository
    (``.qwen/team-memory``, read when its switch is on) for qwen-code's directory; else the
    ``team/`` subdirectory (Claude Code's, read when it is a directory)."""
    module = of_layout(resolution.layout) if resolution.layout in LAYOUTS else None
    own = getattr(module, "team_memory_dir", None)
    if own is not None:
        on, why = module.team_memory_on(resolution.project_root, env)
        return TeamTier(own(resolution.project_root), on, why, True)
    from mem.core.memdir.store import MemoryDir

    memory = MemoryDir(resolution.memory_dir)
    on = memory.team_enabled
    return TeamTier(memory.team_dir, on, "team/ is a directory" if on else "no team/ directory", False)
