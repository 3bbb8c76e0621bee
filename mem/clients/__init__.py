"""One module per agent: what mem knows of each client (DESIGN: mem/clients/).

claude (Claude Code), qwen (qwen-code), codex (Codex CLI's session rollouts, its
AGENTS.md) and gemini (Gemini CLI's chat recordings, its GEMINI.md). A module
says, as module attributes and functions: ``LAYOUT`` (the memory directory's
layout and frontmatter), ``TRANSCRIPTS_SUBDIR`` (where a project folder keeps
its sessions), ``LOADS_OWN_MEMORY`` (it loads MEMORY.md and its memory
instructions itself), ``HOOK_GROUPS`` / ``SETTINGS_SCOPES`` /
``SETTINGS_COMMENTS`` / ``settings_file`` / ``hooks_disabled_by`` (its hooks and
settings files), ``home``, ``escapes_hook_context``, ``memory_on`` (its switch)
and ``default_memory_dir`` / ``project_folder``; a client whose memory directory
mem resolves (``LAYOUTS``) adds ``memory_dir`` (a project's, and the rule),
``transcripts_dir`` and ``project_bases`` (its folders of project folders).
Core and CLI ask these, or this package's functions: ``resolve`` (which memory
directory a project's is, by whose rule: --dir, MEM_DIR, an agent's, a client's),
``memory_on`` (the one rule: does memory apply to a resolved directory),
``project_bases`` (every client's projects, for --all-projects), ``of_payload``
(who sent a hook payload), ``hook_event``, ``of_layout``, ``payload_layout``,
``earlier_memory_dir``, ``team_tier``. No module outside this package compares a
client's name, or reads a client's switches (tests/test_structure.py). Every function's
``env`` is the environment to read, None for the process's (``paths.environ_of``).

A client's own memories (``own_memories`` of codex and gemini) are read as OwnMemory
records, each to become one mem topic file (``as_files``): ``mem scan --client`` lists
them and ``mem import --client`` lands them through the write path.

uses: core.paths and core.errors lazily (resolve, user_memory_dir), core.memdir.frontmatter (render_new), core.memdir.files
(read_text), core.memdir.layout and core.team.routing (team_tier: is team/ a directory) lazily, core.record; the client modules: core.messages, core.paths, and core.memdir lazily
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mem.core.record import Record

#: The clients mem installs hooks for (``mem hooks install --client``).
HOOKED = ("claude", "qwen", "codex", "gemini")
#: The memory-directory layouts (and topic-file frontmatter) mem reads and writes: each client's own.
LAYOUTS = ("claude", "qwen")
#: Clients that read an instructions file mem can keep a block in.
WITH_INSTRUCTIONS_FILE = ("codex", "gemini")


class Group(Record):
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


class OwnMemory(Record):
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
    from mem.core.paths import environ_of, user_memory_dir as mems

    environ = environ_of(env)
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


class TeamTier(Record):
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


# ---------------------------------------------------------------------------------------------
# Which memory directory: the one entry point

#: ``--layout``: a client's directory layout, or auto (Claude Code's, unless only qwen-code's is there).
LAYOUT_CHOICES = ("auto", *LAYOUTS)


def _check_layout(layout: str) -> None:
    from mem.core.errors import UsageError

    if layout not in LAYOUT_CHOICES:
        raise UsageError(f"unknown layout {layout!r} (expected one of: {', '.join(LAYOUT_CHOICES)})")


def project_bases(layout: str = "auto", env: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(client, folder of project folders with memory/, folder of their transcripts) for every layout.

    Claude Code's and qwen-code's, in that order (what --all-projects visits: each client's
    ``project_bases``); ``layout`` "claude" or "qwen" keeps one. A qwen-code project keeps its
    transcripts in ``chats/``.

    Example: [c for c, _, _ in project_bases("qwen", {"HOME": "/h"})] == ["qwen"]
    """
    _check_layout(layout)
    return [(name, *named(name).project_bases(env)) for name in (LAYOUTS if layout == "auto" else (layout,))]


def _explicit_dir(raw: str, home: str, what: str) -> str:
    from mem.core import paths
    from mem.core.errors import UsageError

    if not raw:
        raise UsageError(f"{what} is empty")
    if "\0" in raw:
        raise UsageError(f"{what} contains a NUL byte")
    if raw == "~" or raw.startswith("~/"):
        raw = home + raw[1:]
    elif raw.startswith("~"):
        raw = os.path.expanduser(raw)
    path = paths.posix_resolve(raw)
    return path if path.endswith(os.sep) else path + os.sep


class Resolution(Record):
    """A project's memory directory, the rule that chose it, and what the rule read on the way.

    Whether memory is on there is not a field: ``memory_on`` asks the client whose directory it is.
    """

    memory_dir: str  # Claude form ends with exactly one os.sep; qwen's recorded form has none
    rule: str  # which rule decided
    layout: str  # "claude" | "qwen" | "agent" | "dir"
    project_root: str
    git_root: str | None
    canonical_git_root: str | None
    transcripts_dir: str | None
    #: Claude Code's settings files as resolve read them (claude.Settings: its autoMemoryDirectory and,
    #: for claude.memory_on, its switch); not in ``as_dict``
    settings: object = None

    def as_dict(self) -> dict:
        data = self._asdict()
        del data["settings"]
        return data


def resolve(
    *,
    dir: str | None = None,
    project: str | None = None,
    layout: str = "auto",
    agent: str | None = None,
    scope: str | None = None,
    settings_file: str | None = None,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
) -> Resolution:
    """The memory dir for a project and the rule that chose it: --dir, MEM_DIR, agent, qwen, Claude.

    Example: resolve(project="/home/u/repo").rule == "default"
    """
    from mem.clients import claude
    from mem.core import paths
    from mem.core.errors import UsageError

    env = paths.environ_of(env)
    home = paths.home_dir(env, home)
    _check_layout(layout)
    if scope is not None and agent is None:
        raise UsageError("--scope needs --agent")

    root = paths.project_root(os.getcwd() if project is None else project)
    git_root = paths.find_git_root(root)
    canonical = paths.resolve_canonical_root(git_root) if git_root is not None else None
    settings = claude.load_settings(root, env=env, home=home, settings_file=settings_file)

    def made(memory: str, rule: str, kind: str) -> Resolution:
        # Transcripts stay where the client writes them, whichever memory dir was chosen: Claude
        # Code's unless the directory is qwen-code's (of_layout).
        transcripts = of_layout(kind).transcripts_dir(root, env, home)
        return Resolution(memory, rule, kind, root, git_root, canonical, transcripts, settings)

    if dir is not None:
        return made(_explicit_dir(dir, home, "--dir"), "--dir", "dir")
    if env.get("MEM_DIR"):  # empty counts as unset
        return made(_explicit_dir(env["MEM_DIR"], home, "MEM_DIR"), "MEM_DIR", "dir")
    if agent is not None:
        if scope is None:
            raise UsageError(f"--agent needs --scope ({'|'.join(claude.AGENT_SCOPES)})")
        return made(claude.agent_memory_dir(agent, scope, root, env, home), f"agent ({scope})", "agent")

    first = named(LAYOUTS[0] if layout == "auto" else layout)
    memory, rule = first.memory_dir(root, git_root, canonical, settings, env, home)
    # Claude Code creates its memory dir at startup, so a missing one next to another client's
    # existing one means this project is used with that client. Explicit overrides are never
    # second-guessed. The others are imported only here: the recall hook in a Claude Code project
    # never needs them.
    if layout == "auto" and rule == "default" and not os.path.isdir(memory):
        for other in map(named, LAYOUTS[1:]):
            found, why = other.memory_dir(root, git_root, canonical, settings, env, home)
            if os.path.isdir(found):
                return made(found, f"{why} (detected)", other.LAYOUT)
    return made(memory, rule, first.LAYOUT)


def resolve_options(where: Mapping[str, object], *, reading: bool = False) -> Resolution:
    """The Resolution for the memory-directory options (--dir, --project, --layout, --agent,
    --scope, --settings) given as a dict of ``resolve``'s keywords.

    ``reading``: the command reads the directory, so one named by --dir or MEM_DIR that is
    missing or unreadable is a usage error (a typo must not make a check pass). A directory
    found by the other rules may not exist yet: that is a project without memories.
    """
    from mem.core.errors import UsageError

    if where.get("agent") and not where.get("scope"):
        raise UsageError("--agent needs --scope user, project or local")
    if where.get("scope") and not where.get("agent"):
        raise UsageError("--scope needs --agent TYPE")
    resolution = resolve(**where)
    if reading and resolution.rule in ("--dir", "MEM_DIR"):
        root = resolution.memory_dir
        if not os.path.isdir(root):
            what = "is not a directory" if os.path.lexists(root.rstrip(os.sep) or os.sep) else "does not exist"
            raise UsageError(f"memory directory {root} (from {resolution.rule}) {what}")
        if not os.access(root, os.R_OK | os.X_OK):
            raise UsageError(f"memory directory {root} (from {resolution.rule}) is not readable")
    return resolution
