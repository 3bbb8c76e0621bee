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

uses: core.messages
"""

from __future__ import annotations

import json
from typing import Any

from mem.core.messages import Block, Message

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
