"""Codex CLI: its session rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as messages.

Schema: codex-rs/protocol (RolloutLine = ``{timestamp, type, payload}``), checked
against a session recorded from codex-cli 0.171.0 (tests/fixtures/codex-0.171.0/).
The conversation is in the ``response_item`` lines, the model's own input and
output items: ``message`` (role user / assistant / developer, content of
``input_text`` / ``output_text``), ``function_call`` (arguments: a JSON string),
``custom_tool_call`` (apply_patch: ``input`` text), ``function_call_output`` /
``custom_tool_call_output``, ``local_shell_call``, ``reasoning``. ``event_msg``
lines repeat the same turns for the UI and are not read (they would double
every message); ``compacted`` marks a compaction. The user-role messages Codex
writes itself (environment context, AGENTS.md instructions) are meta.

Its own memories (codex-cli 0.171.0; templates and paths read from its
binary and checked against openai/codex codex-rs/memories): with the memories
feature on, ``$CODEX_HOME/memories_v2/`` (``$CODEX_HOME/memories/`` for the
earlier pipeline), a folder Codex keeps in git. What a person asked it to
remember is an ad-hoc note, ``extensions/ad_hoc/notes/<YYYY-MM-DDTHH-MM-SS>-<slug>.md``
(Markdown, verbatim, written by its ``memories.add_ad_hoc_note`` tool; recorded
in tests/fixtures/codex-0.171.0/memories). Its consolidation agent writes
``memory_summary.md`` (first line ``v1``, then ``## User Profile``, ``## User
preferences``, ``## General Tips``, ``## What's in Memory``), injected into
every session, and ``MEMORY.md``, a handbook of blocks each starting ``# Task
Group: <title>`` with a ``scope:`` line. ``rollout_summaries/`` (session recaps:
``mem extract`` reads the rollouts themselves), ``raw_memories.md`` (its
scratch input), ``skills/`` and its own ``instructions.md`` are not memories.

Hooks: Codex reads ``hooks.json`` (Claude Code's shape) from ``$CODEX_HOME``
(``~/.codex``) and from a project's ``.codex/``; ``mem hooks install --client
codex`` writes HOOK_GROUPS there (mem/core/install.py does the editing).

uses: core.messages, core.paths (home directory), clients (OwnMemory), core.memdir.layout (INDEX_NAME)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from mem.core.messages import Block, Message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

#: The instructions file the client loads from the project (``mem prompt --client codex --write``).
INSTRUCTIONS_FILE = "AGENTS.md"
FORMAT = "codex"
NAME = FORMAT
#: It loads no memory directory itself: a SessionStart hook gives it the full text.
LOADS_OWN_MEMORY = False
WHOLE_FILE = False  # each line is read alone
#: Rollout line types (RolloutItem): a record with one of these and a payload is Codex's.
LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted",
                        "world_state", "token_usage_record"})
#: How the user-role messages Codex injects begin (its context, not what a person typed).
INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<skills_instructions>",
            "<user_shell_command>", "<turn_aborted>", "<permissions instructions>", "<collaboration_mode>")


#: mem's hooks in Codex's hooks.json, as (event, matcher, ((mem arguments, timeout or None), ...)):
#: the memory text at start (Codex loads no MEMORY.md, so ``prompt --hook`` gives it all), recall
#: per prompt, extraction at the end of a turn in the background. No timeout: Codex's default.
#: Recorded running in codex-cli 0.171.0 (tests/fixtures/codex-0.171.0/hooks).
HOOK_GROUPS = (
    ("SessionStart", None, (("prompt --hook", None),)),
    ("UserPromptSubmit", None, (("recall --hook", None),)),
    ("Stop", None, (("extract --hook --background", None),)),
)
#: Where Codex reads hooks: the user's CODEX_HOME and a project's .codex/ (no local scope).
HOOK_SCOPES = ("user", "project")
LABEL = "Codex CLI"
#: What ``mem hooks status`` reminds a Codex user of: the trust it cannot see from hooks.json.
HOOK_NOTE = ("Codex runs these hooks only once you trust them: /hooks in codex (for an automated run, "
             "codex exec --dangerously-bypass-hook-trust); until then they never fire")
#: hooks.json is plain JSON (no comments).
SETTINGS_COMMENTS = False


def home(env: Mapping[str, str] | None = None) -> str:
    """Codex's home: ``$CODEX_HOME``, else ``~/.codex``."""
    from mem.core.paths import home_dir

    given = (os.environ if env is None else env).get("CODEX_HOME")
    return given if given else os.path.join(home_dir(env), ".codex")


def hooks_file(scope: str, root: str, env: Mapping[str, str] | None = None) -> str:
    """The hooks.json Codex reads for a scope: ``$CODEX_HOME/hooks.json`` or ``<root>/.codex/hooks.json``."""
    return os.path.join(home(env) if scope == "user" else os.path.join(root, ".codex"), "hooks.json")


#: The hook scopes as `mem hooks` names them (install.settings_path asks ``settings_file``).
SETTINGS_SCOPES = HOOK_SCOPES
#: Codex CLI works without mem's hooks (a wrapper, the instructions file): doctor notes their absence.
NEEDS_HOOKS = False


def settings_file(scope: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The file mem's hooks go in for a scope (user or project): ``hooks_file`` of the project's root."""
    from mem.clients import hooks_file_of

    return hooks_file_of(NAME, HOOK_SCOPES, hooks_file, scope, project, env)


def hooks_disabled_by(project: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """No setting of Claude Code's kind turns these hooks off (Gemini CLI's hooksConfig: ``hooks_off``)."""
    return None


#: Codex's memory folders under CODEX_HOME, the current pipeline's first.
MEMORY_ROOTS = ("memories_v2", "memories")
#: An ad-hoc note's file name, as Codex's tool checks it. This module's patterns are compiled on
#: first use (re's cache), not at import: the recall hook loads the module for every payload.
NOTE_NAME = r"^(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-([a-z0-9][a-z0-9-]{0,79})\.md$"
TASK_GROUP = r"(?m)^# Task Group:[ \t]*(.*)$"


def own_memories(project: str | None = None, env: Mapping[str, str] | None = None) -> list:
    """Codex CLI's own memories as OwnMemory records (Codex keeps them per user: ``project`` is unused).

    Each ad-hoc note is one (type project: what the user asked Codex to remember), the
    memory summary one (type user), each task group of MEMORY.md one (type project).
    """
    from mem.clients import OwnMemory, first_line, read_text, slug, unique
    from mem.core.memdir.layout import INDEX_NAME

    found: list[OwnMemory] = []
    for root in (os.path.join(home(env), r) for r in MEMORY_ROOTS):
        notes = os.path.join(root, "extensions", "ad_hoc", "notes")
        for name in sorted(os.listdir(notes)) if os.path.isdir(notes) else ():
            m = re.match(NOTE_NAME, name)
            path = os.path.join(notes, name)
            text = read_text(path) if m and not os.path.islink(path) else None
            if text and text.strip():
                found.append(OwnMemory(f"codex-{m.group(2)}", first_line(text), "project", text.strip() + "\n", path))
        path = os.path.join(root, "memory_summary.md")
        text = None if os.path.islink(path) else read_text(path)
        body = re.sub(r"\Av1[ \t]*\r?\n", "", text or "").strip()
        if body:
            found.append(OwnMemory("codex-memory-summary", "What Codex CLI's memory summary says about the user: "
                                   "profile, preferences, tips, what is in its memory", "user", body + "\n", path))
        path = os.path.join(root, INDEX_NAME)  # Codex's handbook, named as mem's index is
        text = None if os.path.islink(path) else read_text(path)
        starts = [m for m in re.finditer(TASK_GROUP, text or "")]
        for i, m in enumerate(starts):
            block = text[m.start():starts[i + 1].start() if i + 1 < len(starts) else len(text)].strip()
            scope = re.search(r"^scope:[ \t]*(.+)$", block, re.M)
            title = m.group(1).strip()
            description = first_line(scope.group(1) if scope else title) or title
            found.append(OwnMemory(f"codex-{slug(title) or 'task-group'}", description, "project", block + "\n",
                                   path, text.count("\n", 0, m.start()) + 1))
    return unique(found)


#: A table header of config.toml's hooks: ``[[hooks.Stop]]``, ``[[hooks.Stop.hooks]]``.
_TOML_HOOK_TABLE = r"^\s*\[\[\s*hooks\.([A-Za-z]+)(?:\.hooks)?\s*\]\]\s*(?:#.*)?$"
_TOML_TABLE = r"^\s*\["
_TOML_COMMAND = r"""^\s*command\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*(?:#.*)?$"""


def other_hooks(env: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """The command hooks Codex runs from a file install does not write, ``$CODEX_HOME/config.toml``
    (0.171.0 runs those as well as hooks.json's): (file, event, command) for each ``command = "..."`` under a ``[[hooks.<Event>]]``
    or ``[[hooks.<Event>.hooks]]`` table. Inline-table forms are not read."""
    from mem.clients import read_text

    path = os.path.join(home(env), "config.toml")
    found = []
    event = None
    for line in (read_text(path) or "").splitlines():
        table = re.match(_TOML_HOOK_TABLE, line)
        if table:
            event = table.group(1)
            continue
        if re.match(_TOML_TABLE, line):
            event = None
            continue
        command = re.match(_TOML_COMMAND, line) if event else None
        if command:
            raw = command.group(1)
            try:
                value = json.loads(raw) if raw.startswith('"') else raw[1:-1]
            except ValueError:
                continue
            found.append((path, event, value))
    return found


def is_transcript_path(path: str) -> bool:
    """A hook payload's transcript_path is a Codex rollout: ``.../sessions/YYYY/MM/DD/rollout-*.jsonl``."""
    path = path.replace("\\", "/")
    return "/sessions/" in path and path.rpartition("/")[2].startswith("rollout-")


def is_record(obj: dict) -> bool:
    return obj.get("type") in LINE_TYPES and isinstance(obj.get("payload"), dict)


def session_id(obj: dict) -> str | None:
    if obj.get("type") == "session_meta":
        payload = obj["payload"]
        return payload.get("id") or payload.get("session_id")
    return None


def parse(obj: dict) -> list[Message]:
    """The messages of one rollout line."""
    kind, p, ts = obj.get("type"), obj["payload"], obj.get("timestamp")
    if kind == "compacted":
        return [Message(None, "system", [Block("text", _str(p.get("message")))], "compact_boundary", ts)]
    if kind != "response_item":
        return []
    t, uid = p.get("type"), p.get("id")
    if t == "message":
        role = p.get("role")
        blocks = [Block("text", _str(c.get("text"))) for c in p.get("content") or ()
                  if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text")]
        if role == "assistant":
            return [Message(uid, "assistant", blocks, "message", ts)]
        if role == "user":
            injected = any(b.text.lstrip().startswith(INJECTED) for b in blocks)
            return [Message(uid, "user", blocks, "meta" if injected else "message", ts)]
        return [Message(uid, "system", blocks, "meta", ts)]  # developer / system: Codex's own instructions
    if t in ("function_call", "custom_tool_call", "local_shell_call"):
        raw = p.get("arguments") if t == "function_call" else p.get("input") if t == "custom_tool_call" else p.get("action")
        args = _arguments(raw)
        name = p.get("name") or ("shell" if t == "local_shell_call" else "")
        return [Message(uid, "assistant", [Block("tool_use", "", name, args, p.get("call_id") or "")], "message", ts)]
    if t in ("function_call_output", "custom_tool_call_output"):
        text, failed = _output(p.get("output"))
        return [Message(uid, "user", [Block("tool_result", text, "", {}, p.get("call_id") or "", failed)],
                        "tool_result", ts)]
    if t == "reasoning":
        texts = [_str(s.get("text")) for s in p.get("summary") or () if isinstance(s, dict)]
        return [Message(uid, "assistant", [Block("thinking", "\n".join(texts))], "message", ts)] if any(texts) else []
    return []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def _arguments(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}  # apply_patch's freeform input
        return value if isinstance(value, dict) else {"input": raw}
    return {}


def _output(out: Any) -> tuple[str, bool]:
    """A tool output's text: a string, ``{content, success}``, or a list of content items."""
    if isinstance(out, dict):
        text, _ = _output(out.get("content"))
        return text, out.get("success") is False
    if isinstance(out, list):
        return "\n".join(_str(c.get("text")) for c in out if isinstance(c, dict) and "text" in c), False
    return _str(out), False

