"""Gemini CLI: its chat recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``) as messages.

Schema: packages/core chatRecordingService, checked against sessions recorded
from @google/gemini-cli 0.61.0 and 0.30.0 (tests/fixtures/gemini-cli-*/). 0.30
wrote one JSON document (``session-*.json``: the header's fields and
``messages``), rewritten whole on every change; 0.61 writes a log, not one line per message: a header line (``sessionId``, ``projectHash``,
``startTime``), message records (``id``, ``timestamp``, ``type``: user / gemini /
info / error / warning, ``content``: text or Gemini parts, ``toolCalls``,
``thoughts``), ``{"$set": {...}}`` updates (``messages`` replaces them all) and
``{"$rewindTo": id}``, which drops that message and every later one. A record
whose id was seen replaces the earlier one in place (the client appends a
message again when a tool call is added to it), as the client's own loader does.
A tool call's result is kept from its ``toolCalls`` entry; the user record that
carries the same ``functionResponse`` is then not read twice. What hooks added
(``<hook_context>...</hook_context>``, recorded inside the user's message) is
not the user's words and is dropped.

Its own memories: up to 0.30 its ``save_memory`` tool appends ``- <fact>``
lines under ``## Gemini Added Memories`` in ``~/.gemini/GEMINI.md`` (the global
context file, one line a fact; recorded from 0.30.0 in
tests/fixtures/gemini-cli-0.30.0/memories). 0.61 has no such tool: its system
prompt has the model edit files itself, and what is memory rather than
instructions is the private project memory, ``~/.gemini/tmp/<project>/memory/``:
``MEMORY.md`` (brief facts as lines, and one-line pointers to sibling ``*.md``
notes) and those notes; ``<project>`` is the project's id in
``~/.gemini/projects.json`` (recorded from 0.61.0). The rest of GEMINI.md is the
user's instructions, not memories: not taken.

Hooks: Gemini CLI reads them from settings.json (``~/.gemini/settings.json``,
a project's ``.gemini/settings.json``; comments allowed, as it strips them)
under "hooks", in Claude Code's shape with its own event names; ``mem hooks
install --client gemini`` writes HOOK_GROUPS there (mem/core/install.py edits).

uses: core.messages, core.paths (home directory, project root), clients (OwnMemory), core.memdir.layout (INDEX_NAME)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from mem.core.messages import Block, Message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

#: The instructions file the client loads from the project (``mem prompt --client gemini --write``).
INSTRUCTIONS_FILE = "GEMINI.md"
FORMAT = "gemini"
NAME = FORMAT
#: It loads no memory directory itself: a SessionStart hook gives it the full text.
LOADS_OWN_MEMORY = False
#: Gemini CLI's hook events (settings.json "hooks") that mean what Claude Code's do: BeforeAgent
#: has the prompt and takes ``hookSpecificOutput.additionalContext``, AfterAgent ends the turn.
HOOK_EVENTS = {"BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop", "PreCompress": "PreCompact"}
#: mem's hooks in settings.json, as (event, matcher, ((mem arguments, timeout or None), ...)): the
#: memory text at start, recall before each prompt, extraction after each turn in the background.
#: No timeout: Gemini CLI reads it in milliseconds and its default (60 s) is ample.
#: Recorded running in gemini-cli 0.61.0 (tests/fixtures/gemini-cli-0.61.0/hooks).
HOOK_GROUPS = (
    ("SessionStart", None, (("prompt --hook", None),)),
    ("BeforeAgent", None, (("recall --hook", None),)),
    ("AfterAgent", None, (("extract --hook --background", None),)),
)
HOOK_SCOPES = ("user", "project")
LABEL = "Gemini CLI"
#: Gemini CLI strips // and /* */ comments from its settings before parsing them.
SETTINGS_COMMENTS = True
WHOLE_FILE = True  # a log of updates: read with parse_records once it is all in
TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: How the user-role text Gemini CLI injects begins (its context, not what a person typed).
INJECTED = ("<session_context>",)
#: What hooks added to a prompt: Gemini CLI records it inside the user's own message. This module's
#: patterns are compiled on first use (re's cache), not at import: the recall hook loads the module
#: for every payload (mem.clients.of_payload, core/transcripts.py).
HOOK_CONTEXT = r"(?s)<hook_context>.*?</hook_context>\s*"


def hooks_off(settings: dict) -> str | None:
    """Why one settings file turns Gemini CLI's hooks off (``hooksConfig.enabled: false``); None when it
    does not; "" when it turns them on (a later file's word wins, as Gemini CLI merges them)."""
    config = settings.get("hooksConfig")
    enabled = config.get("enabled") if isinstance(config, dict) else None
    return None if enabled is None else "hooksConfig.enabled is false" if enabled is False else ""


def disabled_hooks(settings: dict) -> set[str]:
    """The hooks one settings file names in ``hooksConfig.disabled``: Gemini CLI skips a command hook
    whose ``name`` (else its ``command``) is listed there."""
    config = settings.get("hooksConfig")
    names = config.get("disabled") if isinstance(config, dict) else None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def home(env: Mapping[str, str] | None = None) -> str:
    """Gemini CLI's home: ``~/.gemini``."""
    from mem.core.paths import home_dir

    return os.path.join(home_dir(env), ".gemini")


def hooks_file(scope: str, root: str, env: Mapping[str, str] | None = None) -> str:
    """The settings.json Gemini CLI reads for a scope: ``~/.gemini/`` or ``<root>/.gemini/``."""
    return os.path.join(home(env) if scope == "user" else os.path.join(root, ".gemini"), "settings.json")


#: The hook scopes as `mem hooks` names them (install.settings_path asks ``settings_file``).
SETTINGS_SCOPES = HOOK_SCOPES
#: Gemini CLI works without mem's hooks (a wrapper, the instructions file): doctor notes their absence.
NEEDS_HOOKS = False


def settings_file(scope: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The file mem's hooks go in for a scope (user or project): ``hooks_file`` of the project's root."""
    from mem.clients import hooks_file_of

    return hooks_file_of(NAME, HOOK_SCOPES, hooks_file, scope, project, env)


def hooks_disabled_by(project: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """No setting of Claude Code's kind turns these hooks off (Gemini CLI's hooksConfig: ``hooks_off``)."""
    return None


#: The section save_memory keeps in the global GEMINI.md.
MEMORY_SECTION = "## Gemini Added Memories"
BULLET = r"^[ \t]*[-*+][ \t]+(.+?)[ \t]*$"
LINK = r"\]\(([^)\s]+\.md)\)"


def own_memories(project: str | None = None, env: Mapping[str, str] | None = None) -> list:
    """Gemini CLI's own memories as OwnMemory records: the facts save_memory kept in ~/.gemini/GEMINI.md
    (type user: they follow the user into every project) and the private memory of ``project`` (type
    project): each line of its MEMORY.md that is a fact, and each note beside it."""
    from mem.clients import OwnMemory, first_line, read_text, slug, unique
    from mem.core.memdir.layout import INDEX_NAME

    found: list[OwnMemory] = []
    path = os.path.join(home(env), INSTRUCTIONS_FILE)
    text = read_text(path) or ""
    at = text.find(MEMORY_SECTION)
    if at >= 0:
        start = at + len(MEMORY_SECTION)
        end = text.find("\n## ", start)
        end = len(text) if end < 0 else end
        first = text.count("\n", 0, start) + 1
        for n, line in enumerate(text[start:end].split("\n")[1:], first + 1):
            m = re.match(BULLET, line)
            if m:
                fact = m.group(1)
                found.append(OwnMemory(f"gemini-{slug(fact, 40) or 'memory'}", first_line(fact), "user", fact + "\n",
                                       path, n))
    folder = _private_memory(project, env)
    if folder:
        index = os.path.join(folder, INDEX_NAME)  # an index as mem's is, by the same name
        text = read_text(index) or ""
        pointers: dict[str, str] = {}
        for n, line in enumerate(text.split("\n"), 1):
            m = re.match(BULLET, line)
            if not m:
                continue
            link = re.search(LINK, m.group(1))
            if link:
                pointers[os.path.basename(link.group(1))] = first_line(re.sub(LINK, "", m.group(1)).replace("[", ""))
                continue
            fact = m.group(1)
            found.append(OwnMemory(f"gemini-{slug(fact, 40) or 'memory'}", first_line(fact), "project", fact + "\n",
                                   index, n))
        for name in sorted(os.listdir(folder)):
            note = os.path.join(folder, name)
            if name == INDEX_NAME or not name.endswith(".md") or os.path.islink(note):
                continue
            body = (read_text(note) or "").strip()
            if body:
                stem = name[:-3]
                found.append(OwnMemory(f"gemini-{slug(stem) or 'note'}", pointers.get(name) or first_line(body),
                                       "project", body + "\n", note))
    return unique(found)


def _private_memory(project: str | None, env: Mapping[str, str] | None) -> str | None:
    """``~/.gemini/tmp/<id>/memory`` of the project, its id looked up in ~/.gemini/projects.json."""
    from mem.clients import read_text
    from mem.core.paths import project_root

    if not project:
        return None
    try:
        known = json.loads(read_text(os.path.join(home(env), "projects.json")) or "{}").get("projects")
    except (ValueError, AttributeError):
        return None
    if not isinstance(known, dict):
        return None
    for path in dict.fromkeys((os.path.realpath(project), project_root(os.path.realpath(project)))):
        ident = known.get(path)
        if isinstance(ident, str) and ident and "/" not in ident and ident not in (".", ".."):
            folder = os.path.join(home(env), "tmp", ident, "memory")
            if os.path.isdir(folder) and not os.path.islink(folder):
                return folder
    return None


def is_transcript_path(path: str) -> bool:
    """A hook payload's transcript_path is Gemini CLI's: ``~/.gemini/tmp/<project>/chats/...``."""
    return "/.gemini/tmp/" in path.replace("\\", "/")


def is_record(obj: dict) -> bool:
    """A line of a chat recording: its header, an update, or a message record."""
    if "projectHash" in obj and "sessionId" in obj:
        return True
    if "$set" in obj or "$rewindTo" in obj:
        return True
    return obj.get("type") in TYPES and "id" in obj and "content" in obj and "uuid" not in obj


def session_id(obj: dict) -> str | None:
    return obj.get("sessionId") if "projectHash" in obj else None


def parse(obj: dict) -> list[Message]:
    """The messages of one message record, read alone (``mem grep`` reads a record at a time)."""
    if obj.get("type") not in TYPES or "id" not in obj:
        return []
    return _messages(obj, set())


def parse_records(records: Iterable[tuple[int, dict]]) -> tuple[list[Message], str | None]:
    """A whole recording, as the client would load it: (messages with line numbers, session id)."""
    latest: dict[str, tuple[int, dict]] = {}  # insertion-ordered: id -> (line, record)
    session = None
    for n, obj in records:
        if "projectHash" in obj:
            session = session or obj.get("sessionId")
        elif isinstance(obj.get("$rewindTo"), str):
            ids = list(latest)
            if obj["$rewindTo"] in latest:
                for gone in ids[ids.index(obj["$rewindTo"]):]:
                    del latest[gone]
            else:
                latest.clear()
        elif isinstance(obj.get("$set"), dict):
            given = obj["$set"].get("messages")
            if isinstance(given, list):
                latest = {m["id"]: (n, m) for m in given if isinstance(m, dict) and isinstance(m.get("id"), str)}
        elif isinstance(obj.get("id"), str) and obj.get("type") in TYPES:
            latest[obj["id"]] = (n, obj)  # a seen id keeps its place, as the client's Map.set does
    answered: set[str] = set()
    messages = []
    for n, obj in latest.values():
        for m in _messages(obj, answered):
            messages.append(m._replace(line=n, session_id=session))
    return messages, session


def parse_document(obj: object) -> tuple[list[Message], str | None] | None:
    """A recording in the older form, one JSON document (``session-*.json``, gemini-cli 0.30):
    ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``; None for any other document."""
    if not (isinstance(obj, dict) and "projectHash" in obj and isinstance(obj.get("messages"), list)):
        return None
    header = {k: v for k, v in obj.items() if k != "messages"}
    return parse_records([(1, header), *((1, m) for m in obj["messages"] if isinstance(m, dict))])


def _messages(obj: dict, answered: set[str]) -> list[Message]:
    kind, uid, ts = obj.get("type"), obj.get("id"), obj.get("timestamp")
    blocks = _blocks(obj.get("content"))
    if kind == "gemini":
        thoughts = [Block("thinking", " ".join(filter(None, (_str(t.get("subject")), _str(t.get("description"))))))
                    for t in obj.get("thoughts") or () if isinstance(t, dict)]
        calls, results = [], []
        for c in obj.get("toolCalls") or ():
            if not isinstance(c, dict):
                continue
            args = c.get("args")
            cid = _str(c.get("id"))
            calls.append(Block("tool_use", "", _str(c.get("name")), args if isinstance(args, dict) else {}, cid))
            got = [b for b in _blocks(c.get("result")) if b.type == "tool_result"]
            if got:
                answered.add(cid)
                failed = c.get("status") in ("error", "cancelled")
                results.extend(b._replace(id=b.id or cid, is_error=b.is_error or failed) for b in got)
        out = [Message(uid, "assistant", thoughts + blocks + calls, "message", ts, usage=obj.get("tokens"))]
        if results:
            out.append(Message(uid, "user", results, "tool_result", ts))
        return out
    if kind == "user":
        blocks = [b for b in blocks if not (b.type == "tool_result" and b.id in answered)]
        blocks = [b._replace(text=re.sub(HOOK_CONTEXT, "", b.text)) if b.type == "text" else b for b in blocks]
        blocks = [b for b in blocks if b.type != "text" or b.text.strip()]
        if not blocks:
            return []
        if all(b.type == "tool_result" for b in blocks):
            return [Message(uid, "user", blocks, "tool_result", ts)]
        injected = any(b.type == "text" and b.text.lstrip().startswith(INJECTED) for b in blocks)
        return [Message(uid, "user", blocks, "meta" if injected else "message", ts)]
    return [Message(uid, "system", blocks, "meta", ts)]  # info / error / warning lines of the UI


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def _blocks(content: Any) -> list[Block]:
    """Gemini parts (a list, one part, or plain text) as blocks."""
    if isinstance(content, str):
        return [Block("text", content)] if content else []
    if isinstance(content, dict):
        content = [content]
    blocks = []
    for p in content or ():
        if isinstance(p, str):
            blocks.append(Block("text", p))
        elif not isinstance(p, dict):
            continue
        elif "text" in p:
            blocks.append(Block("thinking" if p.get("thought") else "text", _str(p.get("text"))))
        elif "functionCall" in p:
            call = p["functionCall"] or {}
            args = call.get("args")
            blocks.append(Block("tool_use", "", _str(call.get("name")), args if isinstance(args, dict) else {},
                                _str(call.get("id"))))
        elif "functionResponse" in p:
            resp = p["functionResponse"] or {}
            body = resp.get("response")
            text = body.get("output", body.get("error", "")) if isinstance(body, dict) else body
            blocks.append(Block("tool_result", _str(text), _str(resp.get("name")), {}, _str(resp.get("id")),
                                isinstance(body, dict) and "error" in body))
    return blocks
