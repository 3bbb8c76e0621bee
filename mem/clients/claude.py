"""Claude Code: its memory directories, the auto-memory switch, hook output, settings files.

The path arithmetic (sanitizePath, the canonical git root, settings sources)
is Claude Code's own and lives in mem/core/paths.py, which every client's
layout shares; what is said here is what Claude Code does with it.

Transcripts (``~/.claude/projects/<sanitize(cwd)>/<session>.jsonl``): one JSON
object per line: ``user`` / ``assistant`` lines (one content block per line;
blocks of one API message share ``message.id``), ``attachment`` lines,
``system`` lines (``compact_boundary``), and bookkeeping lines without a uuid.

uses: core.messages, core.paths (settings, config home) lazily
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from mem.clients import Group
from mem.core.messages import _NO_INPUT, Block, Message

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


def home(env: Mapping[str, str] | None = None) -> str:
    """~/.claude, or CLAUDE_CONFIG_DIR: there when the client has run here."""
    env = os.environ if env is None else env
    return env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")


def default_memory_dir(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The memory directory of a project root when no setting moves it, keyed by its main repository
    (a worktree shares it), without a trailing separator.

    Example: default_memory_dir("/h/repo", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo/memory"
    """
    from mem.core import paths

    key = paths.find_canonical_git_root(root) or root
    return paths.claude_default_memory_dir(key, env, home).rstrip(os.sep)


def project_folder(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The project folder of a working directory, where its transcripts are (keyed by the cwd).

    Example: project_folder("/h/repo/sub", {"HOME": "/h"}) == "/h/.claude/projects/-h-repo-sub"
    """
    from mem.core import paths

    return paths.claude_transcripts_dir(root, env, home)


def settings_file(scope: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The settings file of a scope.

    Example: settings_file("local", "/home/u/repo") == "/home/u/repo/.claude/settings.local.json"
    """
    from mem.core import paths

    root = "" if scope == "user" else paths.project_root(project or os.getcwd())
    return paths.claude_settings_file(scope, root, env)


def hooks_disabled_by(project: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The settings that keep Claude Code from running user and project hooks, if any."""
    from mem.core import paths

    settings = paths.load_settings(paths.project_root(project or os.getcwd()), env=env)
    hit = settings.first("disableAllHooks", accept=lambda v: v is True)
    if hit:
        return f"disableAllHooks in {hit[1].label}"
    hit = settings.first("allowManagedHooksOnly", names=("policy",), accept=lambda v: v is True)
    if hit:
        return f"allowManagedHooksOnly in {hit[1].label}"
    return None


def memory_on(resolution, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """isAutoMemoryEnabled (read by mem/core/paths.py into the resolution): off, Claude Code loads no
    MEMORY.md, recalls nothing, extracts nothing, and gives its subagents no memory."""
    return resolution.auto_memory_enabled, resolution.auto_memory_reason


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
