"""The instruction context an agent loads for a directory, as Claude Code loads it.

Example: load_context("/home/u/repo").render() is the text Claude Code puts in its
"claudeMd" context for a session started in /home/u/repo.

Load order, lowest priority first (Claude Code's ``getMemoryFiles``):

1. managed: ``/etc/claude-code/CLAUDE.md`` and ``/etc/claude-code/.claude/rules/**/*.md``;
2. user: ``<config home>/CLAUDE.md`` and ``<config home>/rules/**/*.md``;
3. for every directory from the top (below ``/``) down to the cwd: project files
   ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``.claude/rules/**/*.md``, then the local
   file ``CLAUDE.local.md``. The walk does not stop at the git root or at $HOME;
4. automem: the memory directory's ``MEMORY.md``, as ``mem index --print`` gives it;
5. teammem: ``team/MEMORY.md`` in the memory directory, when there is one.

Each file has its YAML frontmatter and block-level HTML comments stripped. Rules
whose frontmatter has ``paths:`` are conditional (loaded when the agent touches a
matching file), so they are not part of the start-up context. ``@path`` includes
(``@./rel``, ``@rel``, ``@~/home``, ``@/abs``) in text -- not in code spans, fenced
or indented code, or HTML -- add the included file right after the including one,
with the same kind, four levels deep at most (a file's depth is 0, its includes 1,
and Claude Code stops at depth 5), each file once. Includes outside the cwd are
followed from user files always, from others only once the user approved them in
Claude Code (``hasClaudeMdExternalIncludesApproved``) or ``external_includes=True``.

Claude Code only warns about instruction files over 40,000 characters; we also cut
them there (at a line end) and append a warning line, so one runaway file cannot
flood a prompt.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mem.core.memdir.frontmatter import FRONTMATTER_RE, JS_WS, js_trim, strip_frontmatter
from mem.core.jscompat import cut16, glob_to_regex, len16
from mem.core.memdir.layout import INDEX_NAME

if TYPE_CHECKING:
    from mem.core.memdir.store import MemoryDir

KINDS = ("managed", "user", "project", "local", "automem", "teammem")
#: The CLAUDE.md family: instructions, as opposed to the memory indexes.
INSTRUCTION_KINDS = ("managed", "user", "project", "local")

# Claude Code's getClaudeMds: managed files fall through to the user description.
DESCRIPTIONS = {
    "managed": " (user's private global instructions for all projects)",
    "user": " (user's private global instructions for all projects)",
    "project": " (project instructions, checked into the codebase)",
    "local": " (user's private project instructions, not checked in)",
    "automem": " (user's auto-memory, persists across conversations)",
    "teammem": " (shared team memory, synced across the organization)",
}

#: The sentence Claude Code puts before the files (a compatibility format, reproduced exactly).
MEMORY_INSTRUCTION_PROMPT = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)
MAX_MEMORY_CHARACTER_COUNT = 40_000  # UTF-16 units, as JS .length counts
MAX_INCLUDE_DEPTH = 5

AGENTS_MD_BEGIN = "<!-- mem context: begin -->"
AGENTS_MD_END = "<!-- mem context: end -->"

# Includes of other extensions (images, PDFs, archives...) are skipped; no extension is fine.
TEXT_FILE_EXTENSIONS = frozenset(
    """
    .md .txt .text .json .yaml .yml .toml .xml .csv .html .htm .css .scss .sass .less
    .js .ts .tsx .jsx .mjs .cjs .mts .cts .py .pyi .pyw .rb .erb .rake .go .rs
    .java .kt .kts .scala .c .cpp .cc .cxx .h .hpp .hxx .cs .swift
    .sh .bash .zsh .fish .ps1 .bat .cmd .env .ini .cfg .conf .config .properties
    .sql .graphql .gql .proto .vue .svelte .astro .ejs .hbs .pug .jade
    .php .pl .pm .lua .r .dart .ex .exs .erl .hrl .clj .cljs .cljc .edn .hs .lhs .elm .ml .mli
    .f .f90 .f95 .for .cmake .make .makefile .gradle .sbt
    .rst .adoc .asciidoc .org .tex .latex .lock .log .diff .patch
    """.split()
)


# --- results ------------------------------------------------------------------------------------


@dataclass
class ContextFile:
    """One file of the context, as the agent is given it."""

    path: str
    kind: str  # one of KINDS
    content: str  # frontmatter and block comments stripped, truncated, trimmed
    size: int  # bytes on disk
    chars: int  # UTF-16 units after stripping, before truncation
    truncated: bool
    included_from: str | None = None
    depth: int = 0
    #: frontmatter ``paths:`` globs: a rule that applies only to matching files
    conditional: bool = field(default=False, repr=False)

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.kind]

    def block(self) -> str:
        """``Contents of PATH (description):`` and the content, as Claude Code renders it."""
        from mem.core.tags import neutralise  # Claude Code puts this text inside <system-reminder>

        if self.kind == "teammem":
            from mem.core.team.routing import wrap_team_content

            body = wrap_team_content(self.content)
        else:
            body = neutralise(self.content)
        return f"Contents of {neutralise(self.path)}{self.description}:\n\n{body}"

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "description": self.description.strip()[1:-1],
            "size": self.size,
            "chars": self.chars,
            "truncated": self.truncated,
            "included_from": self.included_from,
            "depth": self.depth,
            "content": self.content,
        }


#: Why a file was left out; the first five are worth telling the user about.
SKIP_REASONS = ("missing", "unreadable", "not-text", "depth", "external", "conditional", "excluded")
NOTEWORTHY = frozenset(SKIP_REASONS[:5])


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # one of SKIP_REASONS
    message: str
    included_from: str | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "reason": self.reason, "message": self.message, "included_from": self.included_from}

    def line(self) -> str:
        where = f" (included from {self.included_from})" if self.included_from else ""
        return f"{self.path}: {self.message}{where}"


@dataclass
class Context:
    cwd: str
    memory_dir: str | None
    files: list[ContextFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def render(self) -> str:
        """The whole context as Claude Code renders it; empty when no file has content."""
        blocks = [f.block() for f in self.files if f.content]
        if not blocks:
            return ""
        return MEMORY_INSTRUCTION_PROMPT + "\n\n" + "\n\n".join(blocks)

    @property
    def chars(self) -> int:
        return sum(len16(f.content) for f in self.files)

    def of_kind(self, kinds: Iterable[str]) -> list[ContextFile]:
        kinds = set(kinds)
        return [f for f in self.files if f.kind in kinds]

    def as_dict(self) -> dict:
        return {
            "cwd": self.cwd,
            "memory_dir": self.memory_dir,
            "chars": self.chars,
            "files": [f.as_dict() for f in self.files],
            "skipped": [s.as_dict() for s in self.skipped],
        }


# --- rendering for other consumers --------------------------------------------------------------


def render_for_prompt(ctx: Context, max_chars: int = 20_000, kinds: Iterable[str] = INSTRUCTION_KINDS) -> str:
    """The files of ``kinds`` as ``Contents of …`` blocks, at most ``max_chars`` characters in all.

    For a prompt that needs the user's instructions as data (the extraction
    prompt: "do not save what CLAUDE.md already says"). No preamble: the caller
    frames it. When over budget, the files nearest the cwd (loaded last, so the
    agent weighs them most) are kept whole first; the first one that no longer
    fits is cut at a line end with a note, and a last line names the files left
    out. Blocks stay in load order. Returns "" when there is no such file.

    Example: render_for_prompt(load_context(res.project_root), 8000)
    """
    files = [f for f in ctx.of_kind(kinds) if f.content]
    if not files or max_chars <= 0:
        return ""
    sep = "\n\n"
    chosen: dict[int, str] = {}
    left_out: list[int] = []
    room = max_chars
    for i in range(len(files) - 1, -1, -1):  # highest priority first
        block = files[i].block()
        cost = len(block) + (len(sep) if chosen else 0)
        if cost <= room:
            chosen[i] = block
            room -= cost
            continue
        head = f"Contents of {files[i].path}{files[i].description}:\n\n"
        note = f"\n[… cut: {files[i].path} goes on]"
        reserve = len(sep) + len(_left_out_line(len(files))) if i > 0 or left_out else 0
        budget = room - (len(sep) if chosen else 0) - len(head) - len(note) - reserve
        if budget >= 200 and files[i].kind != "teammem":
            body = files[i].content[:budget]
            cut = body.rfind("\n")
            body = body[:cut] if cut > budget // 2 else body
            chosen[i] = head + body.rstrip() + note
            room = reserve
        else:
            left_out.append(i)
    text = sep.join(chosen[i] for i in sorted(chosen))
    if left_out:
        names = [files[i].path for i in sorted(left_out)]
        for tail in (_left_out_line(len(names), names), _left_out_line(len(names))):
            candidate = (text + sep + tail) if text else tail
            if len(candidate) <= max_chars:
                text = candidate
                break
    return text[:max_chars]


def _left_out_line(n: int, names: list[str] | None = None) -> str:
    listed = f": {', '.join(names)}" if names else ""
    return f"[{n} more instruction file{'s' * (n != 1)} left out for space{listed}]"


def render_agents_md(ctx: Context) -> str:
    """One Markdown block holding the context, for an agent that reads AGENTS.md-style files.

    Delimited by HTML comment markers, so a script can replace the block in place
    (and Claude Code, which strips block comments, never sees the markers).
    """
    files = [f for f in ctx.files if f.content]
    out = [
        AGENTS_MD_BEGIN,
        "## Instructions and memory",
        "",
        f"The instruction files and memory index an agent loads in `{ctx.cwd}`, lowest priority "
        "first: where two disagree, the later one wins. Follow them as instructions from the user; "
        "the memory index points to topic files you may read when relevant. "
        "Regenerate this block with `mem context --format agents-md`; do not edit it by hand.",
    ]
    for f in files:
        origin = f", included from `{f.included_from}`" if f.included_from else ""
        out += ["", f"### `{f.path}` ({f.description.strip()[1:-1]}{origin})", "", f.content]
    out += ["", AGENTS_MD_END]
    return "\n".join(out)


# --- loading ------------------------------------------------------------------------------------


def managed_claude_md(env: Mapping[str, str] | None = None) -> str | None:
    """The managed (policy) CLAUDE.md; MEM_MANAGED_CLAUDE_MD overrides it (empty: none).

    Example: managed_claude_md({}) == "/etc/claude-code/CLAUDE.md"  # on Linux
    """
    from mem.clients import claude

    return claude.managed_path("CLAUDE.md", "MEM_MANAGED_CLAUDE_MD", env)


def load_context(
    cwd: str,
    *,
    memory: MemoryDir | None = None,
    auto_memory: bool = True,
    external_includes: bool | None = None,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
    team_dir: str | None = None,
) -> Context:
    """Every file an agent started in ``cwd`` loads, in load order.

    ``cwd`` is the directory the agent runs in (a Resolution's ``project_root``:
    realpath, NFC); ``memory`` (a MemoryDir) adds its MEMORY.md (and team/MEMORY.md) when
    ``auto_memory`` is on; ``team_dir``, a team memory directory of its own (qwen-code's
    ``.qwen/team-memory``), adds its MEMORY.md after it, as the client's system prompt has it. ``external_includes``: None follows includes outside
    ``cwd`` as Claude Code would (user files always, others once approved);
    True follows them all; False follows them from user files only.
    Never raises for a missing or unreadable file: those are in ``skipped``.

    Example: [f.kind for f in load_context("/h/repo", memory=MemoryDir("/h/m/")).files] == ["project", "automem"]
    """
    from mem.clients import claude
    from mem.core import paths

    env = os.environ if env is None else env
    home = paths.home_dir(env, home)
    cwd = unicodedata.normalize("NFC", cwd)
    loader = _Loader(cwd, env, home, external_includes)
    memory_dir = memory.spelled if memory is not None else None  # shown as the client spells it
    ctx = Context(cwd, memory_dir)

    managed = managed_claude_md(env)
    if managed:
        ctx.files += loader.file(managed, "managed")
        ctx.files += loader.rules(os.path.join(os.path.dirname(managed), ".claude", "rules"), "managed")

    config_home = claude.config_home(env, home)
    ctx.files += loader.file(os.path.join(config_home, "CLAUDE.md"), "user", external=True)
    ctx.files += loader.rules(os.path.join(config_home, "rules"), "user", external=True)

    git_root = paths.find_git_root(cwd)
    canonical = paths.resolve_canonical_root(git_root) if git_root is not None else None
    # A worktree nested inside its main checkout (claude -w): the checked-in files above the
    # worktree are the main checkout's copies of the worktree's own, so they are not loaded twice.
    nested = (
        git_root is not None and canonical is not None
        and os.path.normpath(git_root) != os.path.normpath(canonical) and _within(git_root, canonical)
    )
    for d in _dirs_down_to(cwd):
        if not (nested and _within(d, canonical) and not _within(d, git_root)):
            ctx.files += loader.file(os.path.join(d, "CLAUDE.md"), "project")
            ctx.files += loader.file(os.path.join(d, ".claude", "CLAUDE.md"), "project")
            ctx.files += loader.rules(os.path.join(d, ".claude", "rules"), "project")
        ctx.files += loader.file(os.path.join(d, "CLAUDE.local.md"), "local")

    if memory_dir and auto_memory:
        entry = loader.index(os.path.join(memory_dir, INDEX_NAME), "automem")
        if entry is not None:
            ctx.files.append(entry)
        team_index = (os.path.join(team_dir, INDEX_NAME) if team_dir is not None
                      # a linked team/ is not team memory
                      else os.path.join(memory.team_dir, INDEX_NAME) if memory.team_enabled else None)
        if team_index is not None and not os.path.islink(os.path.dirname(team_index)):
            entry = loader.index(team_index, "teammem")
            if entry is not None:
                ctx.files.append(entry)
    ctx.skipped = loader.skipped
    return ctx


def _dirs_down_to(cwd: str) -> list[str]:
    """cwd and its ancestors, top first, the filesystem root itself excluded."""
    dirs = []
    current = cwd
    while True:
        parent = os.path.dirname(current)
        if parent == current:  # the root
            break
        dirs.append(current)
        current = parent
    return dirs[::-1]


def _within(path: str, directory: str) -> bool:
    """Whether ``path`` is a project ``directory`` (a checkout, the working directory) or under it, lexically."""
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(directory))
    return rel == "." or not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))


class _Loader:
    """The state of one load: files seen (each is loaded once), skips, settings read lazily."""

    def __init__(self, cwd: str, env: Mapping[str, str], home: str, external_includes: bool | None):
        self.cwd = cwd
        self.env = env
        self.home = home
        self.external_override = external_includes
        self.processed: set[str] = set()
        self.skipped: list[Skipped] = []
        self._approved: bool | None = None
        self._excludes: list[re.Pattern] | None = None

    # -- policy --

    def allows_external(self) -> bool:
        if self.external_override is not None:
            return self.external_override
        if self._approved is None:
            self._approved = _external_includes_approved(self.cwd, self.env, self.home)
        return self._approved

    def excluded(self, path: str, kind: str) -> bool:
        if kind not in ("user", "project", "local"):
            return False
        if self._excludes is None:
            self._excludes = _exclude_patterns(self.cwd, self.env, self.home)
        target = path.replace("\\", "/")
        return any(p.fullmatch(target) for p in self._excludes)

    # -- files --

    def file(self, path: str, kind: str, *, external: bool | None = None, depth: int = 0,
             parent: str | None = None) -> list[ContextFile]:
        """A file and, after it, what it includes (Claude Code's processMemoryFile)."""
        key = os.path.normpath(path)
        if key in self.processed:
            return []
        if depth >= MAX_INCLUDE_DEPTH:
            self.skip(path, "depth", f"not loaded: includes nest at most {MAX_INCLUDE_DEPTH - 1} deep", parent)
            return []
        if self.excluded(path, kind):
            if os.path.exists(path):
                self.skip(path, "excluded", "left out by the claudeMdExcludes setting", parent)
            return []
        resolved = _real(path)
        self.processed.add(key)
        if resolved != path:
            self.processed.add(os.path.normpath(resolved))
        raw = self.read(path, parent)
        if raw is None:
            return []
        ext = _extname(path).lower()
        if ext and ext not in TEXT_FILE_EXTENSIONS:
            self.skip(path, "not-text", f"not loaded: {ext} is not a text file extension", parent)
            return []
        body = strip_frontmatter(raw)
        includes = include_targets(body, os.path.dirname(resolved), self.home)
        from mem.core.memdir.index import strip_html_comments

        content = strip_html_comments(body)
        if not js_trim(content):
            return []
        loaded = _instruction_file(path, kind, raw, content, parent, depth)
        loaded.conditional = _is_conditional(raw)
        out = [loaded]
        follow_external = True if (external or kind == "user") else self.allows_external()
        for target in includes:
            if not follow_external and not _within(target, self.cwd):
                if os.path.normpath(target) not in self.processed:
                    self.skip(target, "external", "not followed: outside the project directory and not approved "
                              "in Claude Code (--external-includes follows it)", path)
                continue
            out += self.file(target, kind, external=external, depth=depth + 1, parent=path)
        return out

    def rules(self, rules_dir: str, kind: str, *, external: bool | None = None,
              visited: set[str] | None = None) -> list[ContextFile]:
        """Unconditional ``*.md`` rules under a rules directory, recursively (processMdRules)."""
        visited = set() if visited is None else visited
        if rules_dir in visited:
            return []
        resolved_dir = _real(rules_dir)
        visited.add(rules_dir)
        visited.add(resolved_dir)
        try:
            with os.scandir(resolved_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except (NotADirectoryError, FileNotFoundError):
            return []
        except OSError as exc:
            self.skip(rules_dir, "unreadable", f"cannot read: {exc.strerror or exc}")
            return []
        out: list[ContextFile] = []
        for entry in entries:
            entry_path = os.path.join(rules_dir, entry.name)
            real = _real(entry_path)
            try:
                is_dir = os.path.isdir(real)
                is_file = os.path.isfile(real)
            except OSError:
                continue
            if is_dir:
                out += self.rules(real, kind, external=external, visited=visited)
            elif is_file and entry.name.endswith(".md"):
                # Each file is judged by its own frontmatter: what a conditional rule
                # includes is still loaded, as in Claude Code.
                for f in self.file(real, kind, external=external):
                    if f.conditional:
                        self.skip(f.path, "conditional", "not loaded at start: a conditional rule (frontmatter "
                                  "paths:), loaded when the agent works on a matching file", f.included_from)
                    else:
                        out.append(f)
        return out

    def index(self, path: str, kind: str) -> ContextFile | None:
        """MEMORY.md as an agent is given it (no includes followed)."""
        from mem.core.memdir.index import render_as_injected

        raw = self.read(path, None)
        if raw is None:
            return None
        key = os.path.normpath(path)
        if key in self.processed:
            return None
        self.processed.add(key)
        t = render_as_injected(raw)
        if not t.content:
            return None
        return ContextFile(path, kind, t.content, _byte_size(path, raw), t.byte_count, t.truncated)

    def read(self, path: str, parent: str | None) -> str | None:
        try:
            from mem.core.memdir.files import read_text

            return read_text(path, errors="replace", newline="")
        except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the path
            if parent is not None:
                self.skip(path, "missing", "not loaded: no such file", parent)
            return None
        except IsADirectoryError:
            if parent is not None:
                self.skip(path, "unreadable", "not loaded: a directory", parent)
            return None
        except OSError as exc:
            self.skip(path, "unreadable", f"not loaded: {exc.strerror or exc}", parent)
            return None

    def skip(self, path: str, reason: str, message: str, parent: str | None = None) -> None:
        self.skipped.append(Skipped(path, reason, message, parent))


def _instruction_file(path: str, kind: str, raw: str, content: str, parent: str | None, depth: int) -> ContextFile:
    chars = len16(content)
    truncated = chars > MAX_MEMORY_CHARACTER_COUNT
    if truncated:
        head = cut16(content, MAX_MEMORY_CHARACTER_COUNT)
        cut = head.rfind("\n")
        head = head[:cut] if cut > 0 else head
        content = (
            js_trim(head) + f"\n\n> WARNING: {os.path.basename(path)} is {chars:,} characters "
            f"(limit: {MAX_MEMORY_CHARACTER_COUNT:,}). Only the first part was loaded."
        )
    return ContextFile(path, kind, js_trim(content), _byte_size(path, raw), chars, truncated, parent, depth)


def _byte_size(path: str, raw: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return len(raw.encode("utf-8", "surrogatepass"))


def _real(path: str) -> str:
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, ValueError):
        return path


def _extname(path: str) -> str:
    """Node's path.extname: '' for dotfiles like .env, '.' for a trailing dot."""
    base = os.path.basename(path)
    dot = base.rfind(".")
    return "" if dot <= 0 else base[dot:]



# --- conditional rules ----------------------------------------------------------------------------


def _is_conditional(raw: str) -> bool:
    """Frontmatter ``paths`` naming globs other than ``**``: the file applies only to matching files."""
    m = FRONTMATTER_RE.match(raw)
    if not m or "paths" not in (m.group(1) or ""):
        return False  # the common case, without loading YAML
    from mem.core.memdir.frontmatter import parse_frontmatter

    value = parse_frontmatter(raw).data.get("paths")
    if not value:
        return False
    patterns = [p[:-3] if p.endswith("/**") else p for p in split_paths(value)]
    patterns = [p for p in patterns if p]
    return bool(patterns) and not all(p == "**" for p in patterns)


def split_paths(value) -> list[str]:
    """frontmatter ``paths``: a list, or a comma-separated string (commas in braces kept), braces expanded."""
    if isinstance(value, list):
        return [p for v in value for p in split_paths(v)]
    if not isinstance(value, str):
        return []
    parts, current, depth = [], "", 0
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            if current.strip():
                parts.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        parts.append(current.strip())
    return [e for p in parts for e in _expand_braces(p)]


def _expand_braces(pattern: str) -> list[str]:
    m = re.match(r"^([^{]*)\{([^{}]*)\}(.*)$", pattern)
    if not m:
        return [pattern]
    prefix, alts, suffix = m.groups()
    return [e for alt in alts.split(",") for e in _expand_braces(prefix + alt.strip() + suffix)]


# --- settings and approvals -----------------------------------------------------------------------


def _external_includes_approved(cwd: str, env: Mapping[str, str], home: str) -> bool:
    """Whether the user approved external includes for this project in Claude Code's global config."""
    import json

    from mem.clients import claude
    from mem.core import paths

    config_home = claude.config_home(env, home)
    legacy = os.path.join(config_home, ".config.json")
    path = legacy if os.path.exists(legacy) else os.path.join(env.get("CLAUDE_CONFIG_DIR") or home, ".claude.json")
    from mem.core.memdir.files import read_text

    try:  # Claude Code's own config, megabytes at most: typed and capped like every file mem opens
        data = json.loads(read_text(path, 64 << 20))
    except (OSError, ValueError):
        return False
    key = os.path.normpath(paths.find_canonical_git_root(cwd) or cwd).replace("\\", "/")
    project = data.get("projects", {}).get(key) if isinstance(data, dict) and isinstance(data.get("projects"), dict) else None
    return isinstance(project, dict) and project.get("hasClaudeMdExternalIncludesApproved") is True


def _exclude_patterns(cwd: str, env: Mapping[str, str], home: str) -> list[re.Pattern]:
    """claudeMdExcludes from every settings source (arrays merge across sources), as regexes."""
    from mem.clients.claude import load_settings

    try:
        settings = load_settings(cwd, env=env, home=home)
    except Exception:  # noqa: BLE001 - settings are advisory here; mem path reports bad ones
        return []
    raw: list[str] = []
    for src in settings.sources:
        value = src.data.get("claudeMdExcludes") if isinstance(src.data, dict) else None
        if isinstance(value, list):
            raw += [v.replace("\\", "/") for v in value if isinstance(v, str) and v]
    expanded = list(raw)
    for pattern in raw:
        if not pattern.startswith("/"):
            continue
        # The user writes /tmp/x/CLAUDE.md; the loaded path may be the realpath (/private/tmp/...).
        glob_at = re.search(r"[*?{\[]", pattern)
        static = pattern if glob_at is None else pattern[: glob_at.start()]
        directory = os.path.dirname(static)
        real = _real(directory)
        if real != directory:
            expanded.append(real + pattern[len(directory):])
    out = []
    for p in dict.fromkeys(expanded):
        try:
            out.append(re.compile(glob_to_regex(p)))
        except re.error:
            continue
    return out


# --- @include extraction --------------------------------------------------------------------------

_WS = f"[{JS_WS}]"
_INCLUDE = re.compile(rf"(?:^|{_WS})@((?:[^{JS_WS}\\]|\\ )+)")
_BAD_START = re.compile(r"^[#%^&*()]+")
_GOOD_START = re.compile(r"^[a-zA-Z0-9._-]")

_BLOCKQUOTE = re.compile(r"^ {0,3}> ?")
_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})(.*)$")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?: *\1){2,} *$")
_LIST_ITEM = re.compile(r"^([-+*]|\d{1,9}[.)])( +|$)")
_ATX = re.compile(r"^#{1,6}(?:[ \t]|$)")
_HTML_RAW = re.compile(r"^<(?:script|pre|style|textarea)(?:\s|>|$)", re.I)
_HTML_RAW_END = re.compile(r"</(?:script|pre|style|textarea)>")
_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|"
    "div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|"
    "iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|"
    "table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_HTML_BLOCK = re.compile(rf"^</?(?:{_HTML_BLOCK_TAGS})(?:\s|/?>|$)", re.I)
_HTML_TAG_LINE = re.compile(r"^(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[^<>]*)?/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$")
_COMMENT_SPAN = re.compile(r"<!--[\s\S]*?-->")


def include_targets(text: str, base_dir: str, home: str) -> list[str]:
    """Absolute paths of the ``@path`` includes in a Markdown text, in order, each once.

    Only text counts: code spans, fenced and indented code and HTML are skipped
    (text beside a block comment on its lines still counts). A path ends at
    whitespace (``\\ `` escapes a space), loses any ``#fragment``, and resolves
    against ``base_dir``; ``~/`` is the home directory.

    Example: include_targets("See @./a.md and `@b.md`", "/r", "/h") == ["/r/a.md"]
    """
    found: dict[str, None] = {}
    for chunk in _text_chunks(text):
        for m in _INCLUDE.finditer(chunk):
            path = m.group(1)
            hash_at = path.find("#")
            if hash_at != -1:
                path = path[:hash_at]
            if not path:
                continue
            path = path.replace("\\ ", " ")
            valid = (
                path.startswith("./") or path.startswith("~/") or (path.startswith("/") and path != "/")
                or (not path.startswith("@") and not _BAD_START.match(path) and _GOOD_START.match(path))
            )
            if valid:
                found.setdefault(_expand_path(path, base_dir, home), None)
    return list(found)


def _expand_path(path: str, base_dir: str, home: str) -> str:
    from mem.core.paths import posix_join, posix_normalize, posix_resolve  # Node's path semantics

    p = js_trim(path)
    if not p:
        out = posix_normalize(base_dir)
    elif p == "~":
        out = home
    elif p.startswith("~/"):
        out = posix_join(home, p[2:])
    elif p.startswith("/"):
        out = posix_normalize(p)
    else:
        out = posix_resolve(base_dir, p)
    return unicodedata.normalize("NFC", out)


def _indent_of(line: str) -> tuple[int, str]:
    """(columns of leading whitespace, tabs to the next multiple of 4; the rest of the line)."""
    cols = 0
    for i, ch in enumerate(line):
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            return cols, line[i:]
    return cols, ""


def _text_chunks(text: str) -> Iterator[str]:
    """The inline text of a Markdown document, block by block (a CommonMark-ish block scan)."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    para: list[str] = []
    fence: tuple[str, int, int] | None = None  # (char, length, indent)
    html_end: str | None = None  # "blank" or a regex name that closes the HTML block
    list_indent: int | None = None
    prev_blank = True

    def flush() -> Iterator[str]:
        if para:
            yield _inline_text("\n".join(para))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        while True:  # blockquote markers are not content
            m = _BLOCKQUOTE.match(line)
            if not m:
                break
            line = line[m.end():]
        cols, rest = _indent_of(line)
        if fence is not None:
            m = _FENCE_OPEN.match(rest)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip() \
                    and cols <= fence[2] + 3:
                fence = None
            continue
        if html_end is not None:
            if html_end == "blank":
                if not rest:
                    html_end = None
                    prev_blank = True
                continue
            if re.search(html_end, line):
                html_end = None
            continue
        if not rest:
            yield from flush()
            prev_blank = True
            continue
        # Indentation relative to the open list item, if the line belongs to it.
        rel = cols
        if list_indent is not None:
            if cols >= list_indent:
                rel = cols - list_indent
            elif para and not prev_blank:
                rel = 0  # a lazy continuation line
            else:
                list_indent = None
        if rel >= 4 and (not para or prev_blank):
            yield from flush()
            prev_blank = False
            continue  # indented code
        if para and not prev_blank and rel >= 4:
            para.append(rest)
            continue
        m = _FENCE_OPEN.match(rest)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            yield from flush()
            fence = (m.group(1)[0], len(m.group(1)), cols)
            prev_blank = False
            continue
        if rest.startswith("<"):
            end = _html_block_end(rest, interrupting=bool(para) and not prev_blank)
            if end is not None:
                yield from flush()
                prev_blank = False
                if end == "comment":
                    block = [line]
                    closed = "-->" in rest[4:]
                    while not closed and i < len(lines):
                        block.append(lines[i])
                        closed = "-->" in lines[i]
                        i += 1
                    if not closed:
                        return  # an unclosed comment runs to the end of the document
                    residue = _COMMENT_SPAN.sub("", "\n".join(block))
                    if residue.strip():
                        yield _inline_text(residue)
                    continue
                if end == "blank" or not re.search(end, rest[1:]):
                    html_end = end
                continue
        if _THEMATIC.match(rest):
            yield from flush()
            prev_blank = False
            continue
        m = _LIST_ITEM.match(rest)
        # Only a bullet or "1." / "1)" may interrupt a paragraph (CommonMark).
        if m and (not para or prev_blank or m.group(1) in ("-", "+", "*", "1.", "1)")):
            yield from flush()
            spaces = len(m.group(2))
            list_indent = cols + len(m.group(1)) + (spaces if 1 <= spaces <= 4 else 1)
            rest = rest[m.end():]
            prev_blank = False
            if not rest.strip():
                continue
            fm = _FENCE_OPEN.match(rest)
            if fm and not (fm.group(1)[0] == "`" and "`" in fm.group(2)):
                fence = (fm.group(1)[0], len(fm.group(1)), list_indent)
                continue
            para.append(rest)
            continue
        if _ATX.match(rest):
            yield from flush()
            yield _inline_text(rest.lstrip("#"))
            prev_blank = False
            continue
        para.append(rest)
        prev_blank = False
    yield from flush()


def _html_block_end(rest: str, *, interrupting: bool) -> str | None:
    """How an HTML block starting with this line ends (a regex or "blank"), or None if it is not one."""
    if rest.startswith("<!--"):
        return "comment"
    if _HTML_RAW.match(rest):
        return "(?i)" + _HTML_RAW_END.pattern
    if rest.startswith("<?"):
        return r"\?>"
    if rest.startswith("<![CDATA["):
        return r"\]\]>"
    if re.match(r"^<![A-Za-z]", rest):
        return ">"
    if _HTML_BLOCK.match(rest):
        return "blank"
    if not interrupting and _HTML_TAG_LINE.match(rest):
        return "blank"
    return None


_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_INLINE_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s]+)>")


def _inline_text(s: str) -> str:
    """Inline text with what is not text blanked out: code spans, HTML, link targets, escapes.

    Each blanked construct becomes a space, which is where marked would start a new
    text token (so ``*@a.md*`` still includes a.md while ``\\@a.md`` does not).
    """
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n and s[i + 1] in _ASCII_PUNCT:
            out.append(" ")
            i += 2
            continue
        if c == "`":
            j = i
            while j < n and s[j] == "`":
                j += 1
            run = s[i:j]
            close = _find_backtick_run(s, j, len(run))
            if close == -1:
                out.append(run)
                i = j
            else:
                out.append(" ")
                i = close + len(run)
            continue
        if c == "<":
            if s.startswith("<!--", i):
                end = s.find("-->", i + 4)
                if end != -1:
                    out.append(" ")
                    i = end + 3
                    continue
            m = _AUTOLINK.match(s, i)
            if m:
                out.append(" " + m.group(1) + " ")
                i = m.end()
                continue
            m = _INLINE_TAG.match(s, i)
            if m:
                out.append(" ")
                i = m.end()
                continue
        if c == "!" and s.startswith("![", i):
            m = re.compile(r"!\[[^\]]*\]\([^)]*\)").match(s, i)
            if m:
                out.append(" ")
                i = m.end()
                continue
        if c == "[":
            m = re.compile(r"\[([^\]]*)\]\([^)]*\)").match(s, i)
            if m:
                out.append(" " + _inline_text(m.group(1)) + " ")
                i = m.end()
                continue
        if c == "*":
            out.append(" ")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _find_backtick_run(s: str, start: int, length: int) -> int:
    i, n = start, len(s)
    while i < n:
        if s[i] == "`":
            j = i
            while j < n and s[j] == "`":
                j += 1
            if j - i == length:
                return i
            i = j
        else:
            i += 1
    return -1
