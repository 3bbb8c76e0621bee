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

uses: core.messages
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from mem.core.messages import Block, Message

#: The instructions file the client loads from the project (``mem prompt --client gemini --write``).
INSTRUCTIONS_FILE = "GEMINI.md"
FORMAT = "gemini"
NAME = FORMAT
#: It loads no memory directory itself: a SessionStart hook gives it the full text.
LOADS_OWN_MEMORY = False
#: Gemini CLI's hook events (settings.json "hooks") that mean what Claude Code's do: BeforeAgent
#: has the prompt and takes ``hookSpecificOutput.additionalContext``, AfterAgent ends the turn.
HOOK_EVENTS = {"BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop", "PreCompress": "PreCompact"}
WHOLE_FILE = True  # a log of updates: read with parse_records once it is all in
TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: How the user-role text Gemini CLI injects begins (its context, not what a person typed).
INJECTED = ("<session_context>",)
#: What hooks added to a prompt: Gemini CLI records it inside the user's own message.
HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.S)


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
        blocks = [b._replace(text=HOOK_CONTEXT.sub("", b.text)) if b.type == "text" else b for b in blocks]
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
