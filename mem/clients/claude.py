"""Claude Code: its memory directories, the auto-memory switch, hook output, settings files.

Its rules, reimplemented exactly: the settings sources and their precedence
(``load_settings``), isAutoMemoryEnabled (``auto_memory_enabled``), getAutoMemPath
(``memory_dir``), its transcripts dir and getAgentMemoryDir. The client-free arithmetic they
build on (sanitizePath and a project's folder, which qwen-code names alike,
Node's path module, the canonical git root) is mem/core/paths.py's.

Transcripts (``~/.claude/projects/<sanitize(cwd)>/<session>.jsonl``): one JSON
object per line: ``user`` / ``assistant`` lines (one content block per line;
blocks of one API message share ``message.id``), ``attachment`` lines,
``system`` lines (``compact_boundary``), and bookkeeping lines without a uuid.

uses: core.messages, core.paths, core.errors, core.record; core.memdir.files lazily (--settings)
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

from mem.clients import Group
from mem.core import paths
from mem.core.errors import UsageError
from mem.core.messages import _NO_INPUT, Block, Message
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

NAME = "claude"
#: The client's name for people.
LABEL = "Claude Code"
#: Once used in a project, it needs mem's hooks for recall and extraction (doctor fails without them).
NEEDS_HOOKS = True
#: The transcript format name (mem/core/transcripts.py).
FORMAT = "claude"
#: The memory-directory layout and topic-file frontmatter the client reads (mem/core/portable.py).
LAYOUT = "claude"
#: A Claude Code hook payload leaves the layout to the resolution (which finds a qwen-code memory
#: directory in a project Claude Code has not opened).
PAYLOAD_LAYOUT = "auto"
#: It escapes hook context since a version (``escapes_hook_context``), not always.
ESCAPES_ALWAYS = False
#: Its scanner reads ``type`` under ``metadata:`` (newer Claude Code writes it there) or at the top.
READS_METADATA_TYPE = True
#: Where a project folder keeps its transcripts: directly (``<slug>/<session>.jsonl``).
TRANSCRIPTS_SUBDIR = None
#: It puts MEMORY.md and its memory instructions into the system prompt itself (when auto memory is on).
LOADS_OWN_MEMORY = True
#: Settings files: user (~/.claude/settings.json), project and local (the project's .claude/).
SETTINGS_SCOPES = ("user", "project", "local")
#: Claude Code's settings are strict JSON.
SETTINGS_COMMENTS = False
#: The last release that passes hook context to the model unescaped: bisected over the npm
#: releases 2.1.197..2.1.330 (2.1.291 passes ``<system-reminder>`` through, 2.1.292 escapes it).
LAST_UNESCAPED = (2, 1, 291)

#: The scopes of a subagent's own memory (getAgentMemoryDir).
AGENT_SCOPES = ("user", "project", "local")
#: settings sources, highest precedence first (Claude Code's policy > flag > local > project > user)
SETTING_SOURCES = ("policy", "flag", "local", "project", "user")
#: the sources autoMemoryDirectory is read from: projectSettings is deliberately excluded
MEMORY_DIRECTORY_SOURCES = ("policy", "flag", "local", "user")

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_DEFINED_FALSY = frozenset({"0", "false", "no", "off"})

#: The tools that act (a shell command, an edit, a write): before each, the feedback that applies
#: to it (mem/core/hooks/tool.py).
ACTING_TOOLS = "Bash|Edit|Write|MultiEdit"
#: The README's entries: instructions at start, recall per prompt and before a tool acts,
#: extraction at the end of a turn, session notes across a compaction.
HOOK_GROUPS = (
    Group("SessionStart", None, (("prompt --hook", 10),)),
    Group("SessionStart", "compact", (("recall --hook", 10), ("session compact --hook", 10))),
    Group("UserPromptSubmit", None, (("recall --hook", 15),)),
    Group("PreToolUse", ACTING_TOOLS, (("recall --hook", 10),)),
    Group("Stop", None, (("extract --hook --background", 10),)),
    Group("PreCompact", None, (("session compact --hook", 10),)),
)


# ---------------------------------------------------------------------------------------------
# Its homes

def config_home(env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """getClaudeConfigHomeDir: CLAUDE_CONFIG_DIR ?? ~/.claude, NFC. An empty value is used as is, as
    Claude Code's ``??`` keeps it (2.1.330): its files are then relative to its working directory.

    Example: config_home({"HOME": "/home/u"}) == "/home/u/.claude"
    """
    env = paths.environ_of(env)
    raw = env["CLAUDE_CONFIG_DIR"] if "CLAUDE_CONFIG_DIR" in env else paths.posix_join(paths.home_dir(env, home), ".claude")
    return paths.nfc(raw)


#: The client's home, there when it has run here (mem doctor): its config home, the one rule.
home = config_home


def memory_base(env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """getMemoryBaseDir: CLAUDE_CODE_REMOTE_MEMORY_DIR (raw) when non-empty, else the config home.

    Example: memory_base({"CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/m"}) == "/mnt/m"
    """
    env = paths.environ_of(env)
    remote = env.get("CLAUDE_CODE_REMOTE_MEMORY_DIR")
    return remote if remote else config_home(env, home)


def projects_dir(env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """getProjectsDir: <config home>/projects (transcripts ignore the remote memory dir).

    Example: projects_dir({"HOME": "/home/u"}) == "/home/u/.claude/projects"
    """
    return paths.posix_join(config_home(env, home), "projects")


# ---------------------------------------------------------------------------------------------
# Settings files

class SettingsSource(Record):
    name: str  # "policy" | "flag" | "local" | "project" | "user"
    path: str | None  # the file read; None for inline --settings JSON
    data: Mapping | None  # None when the file is absent, unreadable or not a JSON object

    @property
    def label(self) -> str:
        return f"{self.name} settings: {self.path if self.path is not None else 'inline JSON'}"


class Settings(Record):
    sources: tuple[SettingsSource, ...]  # highest precedence first

    def first(self, key: str, names=SETTING_SOURCES, accept=lambda v: v is not None):
        """(value, source) from the highest-precedence source among `names` whose value passes `accept`."""
        for src in self.sources:
            if src.name in names and src.data is not None and key in src.data and accept(src.data[key]):
                return src.data[key], src
        return None


def managed_path(name: str, variable: str, env: Mapping[str, str] | None = None) -> str | None:
    """A file of Claude Code's policy (managed) directory; the environment variable ``variable`` overrides it
    (empty: none).

    Example: managed_path("CLAUDE.md", "MEM_MANAGED_CLAUDE_MD", {}) == "/etc/claude-code/CLAUDE.md"  # on Linux
    """
    env = paths.environ_of(env)
    if variable in env:
        return env[variable] or None
    if sys.platform == "darwin":
        return "/Library/Application Support/ClaudeCode/" + name
    if sys.platform == "win32":
        return "C:\\Program Files\\ClaudeCode\\" + name
    return "/etc/claude-code/" + name


def managed_settings_path(env: Mapping[str, str] | None = None) -> str | None:
    """The policy (managed) settings file; MEM_MANAGED_SETTINGS overrides it (empty: none).

    Example: managed_settings_path({}) == "/etc/claude-code/managed-settings.json"  # on Linux
    """
    return managed_path("managed-settings.json", "MEM_MANAGED_SETTINGS", env)




def _flag_source(settings_file: str) -> SettingsSource:
    # Like `claude --settings`, the value is a file or an inline JSON object.
    import json

    if settings_file.lstrip().startswith("{"):
        try:
            data = json.loads(settings_file)
        except ValueError as e:
            raise UsageError(f"--settings: invalid JSON: {e}") from None
        except RecursionError:
            raise UsageError("--settings: invalid JSON (nested too deep)") from None
        if not isinstance(data, dict):
            raise UsageError("--settings: not a JSON object")
        return SettingsSource("flag", None, data)
    path = paths.posix_resolve(os.path.expanduser(settings_file))
    from mem.core.memdir.files import read_text

    try:  # typed and capped: a FIFO or /dev/zero named as settings is refused, not waited on
        data = json.loads(read_text(path, paths.SETTINGS_MAX_BYTES).removeprefix("\ufeff"))
    except OSError as e:
        raise UsageError(f"--settings: cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"--settings: {path} is not valid JSON: {e}") from None
    except RecursionError:
        raise UsageError(f"--settings: {path} is not valid JSON (nested too deep)") from None
    if not isinstance(data, dict):
        raise UsageError(f"--settings: {path} is not a JSON object")
    return SettingsSource("flag", path, data)


def settings_path(scope: str, root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """Claude Code's settings file of a scope: user (~/.claude/settings.json), project or local (the project's).

    Example: settings_path("local", "/home/u/repo") == "/home/u/repo/.claude/settings.local.json"
    """
    if scope == "user":
        return paths.posix_join(config_home(paths.environ_of(env), home), "settings.json")
    return paths.posix_join(root, ".claude", "settings.local.json" if scope == "local" else "settings.json")


def load_settings(
    root: str,
    *,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
    settings_file: str | None = None,
) -> Settings:
    """Read the settings files Claude Code reads for a project root (an unreadable file counts as absent).

    Example: load_settings("/home/u/repo").first("autoMemoryDirectory", MEMORY_DIRECTORY_SOURCES)
    """
    env = paths.environ_of(env)
    policy = managed_settings_path(env)
    user, local, project = (settings_path(scope, root, env, home) for scope in ("user", "local", "project"))
    sources = [SettingsSource("policy", policy, paths.read_json_object(policy))]
    if settings_file is not None:
        sources.append(_flag_source(settings_file))
    sources += [
        SettingsSource("local", local, paths.read_json_object(local)),
        SettingsSource("project", project, paths.read_json_object(project)),
        SettingsSource("user", user, paths.read_json_object(user)),
    ]
    return Settings(tuple(sources))


def _env_truthy(value: str | None) -> bool:
    return bool(value) and value.strip().lower() in _TRUTHY


def _env_defined_falsy(value: str | None) -> bool:
    return bool(value) and value.strip().lower() in _DEFINED_FALSY


def auto_memory_enabled(
    env: Mapping[str, str] | None = None, settings: Settings | Mapping | None = None
) -> tuple[bool, str]:
    """isAutoMemoryEnabled, with the rule that decided.

    Example: auto_memory_enabled({"CLAUDE_CODE_SIMPLE": "1"}) == (False, "CLAUDE_CODE_SIMPLE=1 (--bare)")
    """
    env = paths.environ_of(env)
    disable = env.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
    if _env_truthy(disable):
        return False, f"CLAUDE_CODE_DISABLE_AUTO_MEMORY={disable}"
    if _env_defined_falsy(disable):
        return True, f"CLAUDE_CODE_DISABLE_AUTO_MEMORY={disable}"
    simple = env.get("CLAUDE_CODE_SIMPLE")
    if _env_truthy(simple):
        return False, f"CLAUDE_CODE_SIMPLE={simple} (--bare)"
    remote = env.get("CLAUDE_CODE_REMOTE")
    if _env_truthy(remote) and not env.get("CLAUDE_CODE_REMOTE_MEMORY_DIR"):
        return False, f"CLAUDE_CODE_REMOTE={remote} without CLAUDE_CODE_REMOTE_MEMORY_DIR"
    # Project settings count here: a repo may opt out of auto memory (but never redirect it).
    if isinstance(settings, Settings):
        hit = settings.first("autoMemoryEnabled", accept=lambda v: isinstance(v, bool))
        if hit is not None:
            value, src = hit
            return value, f"autoMemoryEnabled={'true' if value else 'false'} ({src.label})"
    elif settings is not None and isinstance(settings.get("autoMemoryEnabled"), bool):
        value = settings["autoMemoryEnabled"]
        return value, f"autoMemoryEnabled={'true' if value else 'false'} (settings)"
    return True, "default"




def keyed_memory_dir(
    key_root: str, env: Mapping[str, str] | None = None, home: str | None = None
) -> str:
    """Claude Code's default auto-memory dir for a canonical git root (or project root).

    Example: keyed_memory_dir("/h/repo", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo/memory/"
    """
    project_dir = paths.find_project_dir(paths.posix_join(memory_base(env, home), "projects"), key_root)
    return paths.nfc(paths.posix_join(project_dir, "memory") + os.sep)


def transcripts_dir(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """Where Claude Code writes session transcripts for a project root: keyed by the cwd, not the git root.

    Example: transcripts_dir("/h/repo/sub", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo-sub"
    """
    return paths.find_project_dir(projects_dir(env, home), root)


def project_bases(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(folder of its project folders with memory/, folder of their transcripts): under the memory
    base and the config home (CLAUDE_CODE_REMOTE_MEMORY_DIR moves the first only).

    Example: project_bases({"HOME": "/h"}) == ("/h/.claude/projects", "/h/.claude/projects")
    """
    return paths.posix_join(memory_base(env), "projects"), projects_dir(env)




def agent_memory_dir(
    agent_type: str,
    scope: str,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
) -> str:
    """getAgentMemoryDir: a subagent's own memory dir for a scope (user, project, local).

    Example: agent_memory_dir("p:rev", "user", env={"HOME": "/h"}) == "/h/.claude/agent-memory/p-rev/"
    """
    if scope not in AGENT_SCOPES:
        raise UsageError(f"unknown agent memory scope {scope!r} (expected one of: {', '.join(AGENT_SCOPES)})")
    name = agent_type.replace(":", "-")
    # Claude Code does no more than ':' -> '-'; refusing separators keeps the dir inside its parent.
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UsageError(f"invalid agent type {agent_type!r}")
    env = paths.environ_of(env)
    if scope == "user":
        return paths.posix_join(memory_base(env, home), "agent-memory", name) + os.sep
    root = paths.project_root(os.getcwd() if cwd is None else cwd)
    if scope == "project":
        return paths.posix_join(root, ".claude", "agent-memory", name) + os.sep
    remote = env.get("CLAUDE_CODE_REMOTE_MEMORY_DIR")
    if remote:
        key = paths.find_canonical_git_root(root) or root
        return paths.posix_join(remote, "projects", paths.sanitize_path(key), "agent-memory-local", name) + os.sep
    return paths.posix_join(root, ".claude", "agent-memory-local", name) + os.sep


def memory_dir(
    root: str,
    git_root: str | None,
    canonical_git_root: str | None,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    home: str | None = None,
) -> tuple[str, str]:
    """getAutoMemPath, with the rule that decided: Cowork override, then settings, then the default
    (keyed by the main repository: ``git_root``, a linked worktree's own, is not asked).

    Example: memory_dir("/home/u/repo", "/home/u/repo", "/home/u/repo", settings)[1] == "default"
    """
    env = paths.environ_of(env)
    home = paths.home_dir(env, home)
    cowork = paths.validate_memory_path(env.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"), False, home)
    if cowork:
        return cowork, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
    # `a ?? b ?? c` then one validation: the first source defining the key decides, and an
    # invalid value there falls through to the default, not to the next source.
    hit = settings.first("autoMemoryDirectory", MEMORY_DIRECTORY_SOURCES, accept=lambda v: isinstance(v, str))
    if hit is not None:
        value, src = hit
        configured = paths.validate_memory_path(value, True, home)
        if configured:
            return configured, f"autoMemoryDirectory ({src.label})"
    return keyed_memory_dir(canonical_git_root or root, env, home), "default"


# ---------------------------------------------------------------------------------------------
# Its directories

def default_memory_dir(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The memory directory of a project root when no setting moves it, keyed by its main repository
    (a worktree shares it), without a trailing separator.

    Example: default_memory_dir("/h/repo", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo/memory"
    """
    key = paths.find_canonical_git_root(root) or root
    return keyed_memory_dir(key, env, home).rstrip(os.sep)


def project_folder(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The project folder of a working directory, where its transcripts are (keyed by the cwd).

    Example: project_folder("/h/repo/sub", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo-sub"
    """
    return transcripts_dir(root, env, home)


def settings_file(scope: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The settings file of a scope.

    Example: settings_file("local", "/home/u/repo") == "/home/u/repo/.claude/settings.local.json"
    """
    root = "" if scope == "user" else paths.project_root(project or os.getcwd())
    return settings_path(scope, root, env)


def hooks_disabled_by(project: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The settings that keep Claude Code from running user and project hooks, if any."""
    settings = load_settings(paths.project_root(project or os.getcwd()), env=env)
    hit = settings.first("disableAllHooks", accept=lambda v: v is True)
    if hit:
        return f"disableAllHooks in {hit[1].label}"
    hit = settings.first("allowManagedHooksOnly", names=("policy",), accept=lambda v: v is True)
    if hit:
        return f"allowManagedHooksOnly in {hit[1].label}"
    return None


def memory_on(resolution, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """isAutoMemoryEnabled (``auto_memory_enabled``) over the settings mem.clients.resolve read (--settings
    among them): off, Claude Code loads no MEMORY.md, recalls nothing, extracts nothing, and gives its
    subagents no memory."""
    settings = resolution.settings
    if settings is None:  # a Resolution made by hand
        settings = load_settings(resolution.project_root, env=env)
    return auto_memory_enabled(env, settings)


def escapes_hook_context(version: tuple[int, ...] | None) -> bool:
    """Whether hook context reaches the model with its tags escaped: since 2.1.292, and when the
    version cannot be told (plain text reads well either way, escaped tags do not)."""
    return version is None or version > LAST_UNESCAPED


#: Transcript lines that carry no conversation (some have neither uuid nor sessionId).
BOOKKEEPING = frozenset({"queue-operation", "last-prompt", "mode", "summary", "attachment",
                                "file-history-snapshot", "custom-title", "agent-name"})


def parse(obj: dict) -> list[Message]:
    # Positional arguments: this runs for every record `mem grep --transcripts` decodes.
    kind = obj.get("type")
    uuid, timestamp, session_id = obj.get("uuid"), obj.get("timestamp"), obj.get("sessionId")
    if kind in ("user", "assistant"):
        msg = obj.get("message") or {}
        blocks = to_blocks(msg.get("content"))
        if kind == "assistant":
            return [Message(uuid, "assistant", blocks, "message", timestamp, session_id, msg.get("id"), msg.get("usage"))]
        if obj.get("isCompactSummary"):
            sub = "compact_summary"
        elif obj.get("isMeta"):
            sub = "meta"
        elif blocks and all(b.type == "tool_result" for b in blocks):
            sub = "tool_result"
        elif _is_local_command(blocks):
            sub = "command"
        else:
            sub = "message"
        return [Message(uuid, "user", blocks, sub, timestamp, session_id)]
    if kind == "system" and obj.get("subtype") == "compact_boundary":
        return [Message(uuid, "system", [Block("text", _text(obj.get("content")))], "compact_boundary", timestamp, session_id)]
    return []  # attachments, bookkeeping and other system lines carry no conversation


_LOCAL_COMMAND_TAGS = ("<command-name>", "<local-command-stdout>", "<local-command-stderr>")


def _is_local_command(blocks: list[Block]) -> bool:
    """A slash command the user ran (``/compact``...) or its output, recorded as a user line."""
    return len(blocks) == 1 and blocks[0].type == "text" and blocks[0].text.lstrip().startswith(_LOCAL_COMMAND_TAGS)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def to_blocks(content: Any) -> list[Block]:
    # Positional arguments: this runs for every record grep decodes.
    if isinstance(content, str):
        return [Block("text", content)]
    if content is not None and not isinstance(content, list):
        raise TypeError("content is neither text nor a list of blocks")
    blocks = []
    for b in content or ():
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            blocks.append(Block("text", _text(b.get("text"))))
        elif t == "tool_use":
            given = b.get("input")
            blocks.append(Block("tool_use", "", b.get("name") or "", given if isinstance(given, dict) else _NO_INPUT,
                                b.get("id") or ""))
        elif t == "tool_result":
            blocks.append(Block("tool_result", _result_text(b.get("content")), "",
                                _NO_INPUT, b.get("tool_use_id") or "", bool(b.get("is_error"))))
        elif t in ("thinking", "redacted_thinking"):
            blocks.append(Block("thinking", _text(b.get("thinking"))))
        else:
            blocks.append(Block(t or "other"))
    return blocks


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return "" if content is None else json.dumps(content, ensure_ascii=False)
