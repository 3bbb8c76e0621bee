"""Transcripts of Claude Code, qwen-code, Codex CLI, Gemini CLI, or a plain ``{role, content}`` JSONL → one message model.

Claude Code writes one JSON object per line: ``user`` / ``assistant`` lines
(one content block per line; blocks of one API message share ``message.id``),
``attachment`` lines, ``system`` lines (``compact_boundary``), and bookkeeping
lines without a uuid. qwen-code writes Gemini-shaped ``parts``. A plain JSONL
of ``{"role": ..., "content": ...}`` is accepted for other agents and scripts.
Each client's lines are read by its module in mem/clients/ (a Gemini CLI
recording as a whole: it is a log of updates); this module detects the format
and asks the questions of the messages.
Malformed lines are skipped, never fatal: transcripts are written while we read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from mem.clients import claude, codex, gemini, qwen
from mem.core.messages import _NO_INPUT, FILE_KEYS, Block, Message, tool_file  # noqa: F401  (re-exported: the readers' model)
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

#: Clients read by a module of their own (mem/clients/), by the format name they give.
CLIENT_READERS = {c.FORMAT: c for c in (codex, gemini)}
#: Every client's reader of one line, by format name.
LINE_READERS = {c.FORMAT: c.parse for c in (claude, qwen, codex, gemini)}

#: Tools that write files, by client: the names that count as "the agent wrote memory".
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "write_file", "edit", "replace", "NotebookEdit"})


class Transcript(Record):
    format: str  # claude | qwen | codex | gemini | plain | empty
    messages: list[Message]
    session_id: str | None = None
    skipped_lines: int = 0
    lines: int = 0  # non-blank lines read, less a last one that did not parse (it may be half-written)

    def require_known(self, source: str) -> Transcript:
        """Itself, or a UsageError when it has lines but none in a format we read."""
        if self.format == "empty" and self.lines:
            from mem.core.errors import UsageError

            some = "its line is not" if self.lines == 1 else f"none of its {self.lines} lines is"
            raise UsageError(f"{source} is not a transcript: {some} Claude Code, qwen-code, "
                             "Codex CLI, Gemini CLI or {role, content} JSON")
        return self

    def index_of(self, uuid: str | None) -> int | None:
        if uuid is None:
            return None
        for i, m in enumerate(self.messages):
            if m.uuid == uuid:
                return i
        return None

    def after(self, uuid: str | None) -> list[Message]:
        """Messages after ``uuid``; all of them when it is gone (e.g. after compaction)."""
        i = self.index_of(uuid)
        return self.messages if i is None else self.messages[i + 1:]

    @property
    def last_uuid(self) -> str | None:
        for m in reversed(self.messages):
            if m.uuid:
                return m.uuid
        return None


# --- reading ---------------------------------------------------------------


#: The longest transcript line read: a Claude Code line carries one content block, a pasted image
#: (base64, a few megabytes) at most. A longer one is skipped like a malformed line.
MAX_LINE_BYTES = 64 << 20


def read_transcript(path: str) -> Transcript:
    """A transcript file, parsed; a FIFO or a device is refused (UsageError), never read."""
    from mem.core.memdir.files import NotRegularFile, read_lines

    try:
        return parse_lines(read_lines(path, MAX_LINE_BYTES))
    except NotRegularFile as exc:
        from mem.core.errors import UsageError

        raise UsageError(f"{path} is not a transcript: {exc.strerror}") from None


#: msgspec is looked for at the FAST_AFTER-th record a RecordDecoder decodes: importing it costs
#: more than the stdlib takes to decode a few records (a rare match in a large tree).
FAST_AFTER = 200


class RecordDecoder:
    """JSONL records decoded as ``parse_lines`` decodes them; a reader of many records holds one.

    msgspec, when installed, decodes transcript records 2-3× faster than the
    stdlib (measured: bench/grep.py); what it refuses (invalid UTF-8, NaN, lone
    surrogates, whitespace JSON does not allow) goes to the stdlib, so the
    result is the same either way. The decoder is looked for at the
    ``fast_after``-th record (never when negative).
    """

    __slots__ = ("fast", "decoded", "fast_after")

    def __init__(self, fast_after: int | None = None) -> None:
        self.fast: tuple = ()  # msgspec's decode and the errors it raises; () until looked for, or when not installed
        self.decoded = 0
        self.fast_after = FAST_AFTER if fast_after is None else fast_after

    def decode(self, raw: bytes) -> Any:
        """One JSONL line, or None when it is not JSON."""
        if not self.fast:
            self.decoded += 1
            if self.decoded == self.fast_after:
                try:
                    import msgspec

                    self.fast = (msgspec.json.Decoder().decode, (msgspec.DecodeError, ValueError, RecursionError))
                except ImportError:
                    pass
        fast = self.fast
        if fast:
            try:
                return fast[0](raw)
            except fast[1]:
                pass
        try:
            return json.loads(raw.decode("utf-8", "replace").strip())
        except ValueError:
            return None


def load_record(raw: bytes) -> Any:
    """One JSONL line as ``parse_lines`` decodes it, or None when it is not JSON (for many: RecordDecoder)."""
    return RecordDecoder(-1).decode(raw)


def record_messages(obj: Any) -> list[Message]:
    """The messages of one decoded JSONL record, as ``parse_lines`` reads them (without line numbers)."""
    if not isinstance(obj, dict):
        return []
    try:
        return _parse_object(obj, detect_format(obj))
    except (TypeError, AttributeError, ValueError):
        return []  # the right keys holding the wrong kinds of value


def parse_lines(lines: Iterable[bytes | str]) -> Transcript:
    messages: list[Message] = []
    fmt = first_fmt = "empty"
    session_id = None
    skipped = read = 0
    torn = False  # the last line read did not parse: perhaps still being written
    whole: list[tuple[int, dict]] = []  # records of a client read as a whole file, not one at a time
    lines = iter(lines)
    for n, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        raw = raw.strip()
        if not raw:
            continue
        if raw == "{" and not read:  # one pretty-printed JSON document, not JSON lines
            return _parse_document("{" + "".join(r.decode("utf-8", "replace") if isinstance(r, bytes) else r
                                                  for r in lines))
        read += 1
        try:
            obj = json.loads(raw)
        except ValueError:
            skipped += 1
            torn = True
            continue
        torn = False
        if not isinstance(obj, dict):
            skipped += 1
            continue
        line_fmt = detect_format(obj)
        if first_fmt == "empty" and line_fmt != "unknown":
            first_fmt = line_fmt
        session_id = session_id or obj.get("sessionId") or obj.get("session_id")
        client = CLIENT_READERS.get(line_fmt)
        if client is not None:
            session_id = session_id or client.session_id(obj)
            if client.WHOLE_FILE:
                whole.append((n, obj))  # a log of updates: read once it is all in (mem/clients/gemini.py)
                continue
        try:
            parsed = _parse_object(obj, line_fmt)
        except (TypeError, AttributeError, ValueError):
            skipped += 1  # the right keys holding the wrong kinds of value
            continue
        for m in parsed:
            m = m._replace(line=n)
            messages.append(m)
            # The format is that of the first line carrying conversation: qwen-code's
            # bookkeeping lines have a uuid and no message, and would read as Claude's.
            if fmt == "empty":
                fmt = line_fmt
    if whole:
        client = CLIENT_READERS[detect_format(whole[0][1])]
        recorded, session_id = client.parse_records(whole)
        messages.extend(recorded)
        fmt = client.FORMAT if fmt == "empty" and recorded else fmt
    return Transcript(fmt if fmt != "empty" else first_fmt, messages, session_id, skipped, read - torn)


def _parse_document(text: str) -> Transcript:
    """A transcript that is one JSON document: Gemini CLI's chat recordings before they became logs."""
    try:
        obj = json.loads(text)
    except ValueError:
        return Transcript("empty", [], None, 1, 0)  # perhaps half-written: the client rewrites it whole
    for client in CLIENT_READERS.values():
        recorded = getattr(client, "parse_document", None)
        found = recorded(obj) if recorded else None
        if found is not None:
            messages, session_id = found
            return Transcript(client.FORMAT, messages, session_id, 0, 1)
    return Transcript("empty", [], None, 1, 1)


def detect_format(obj: dict) -> str:
    msg = obj.get("message")
    if isinstance(msg, dict) and "parts" in msg:
        return "qwen"
    if "uuid" in obj:  # Claude Code's lines (and qwen-code's bookkeeping): no other client writes one
        return "claude"
    for client in CLIENT_READERS.values():  # before sessionId: Gemini CLI's header line has one
        if client.is_record(obj):
            return client.FORMAT
    if "sessionId" in obj or obj.get("type") in claude.BOOKKEEPING:
        return "claude"
    if "role" in obj and ("content" in obj or "parts" in obj):
        return "plain"
    return "unknown"


def _parse_object(obj: dict, fmt: str) -> list[Message]:
    reader = LINE_READERS.get(fmt)
    if reader is not None:
        return reader(obj)
    if fmt == "plain":
        role = obj.get("role")
        role = "assistant" if role in ("assistant", "model") else "system" if role == "system" else "user"
        content = obj.get("content", obj.get("parts"))
        gemini_parts = isinstance(content, list) and content and isinstance(content[0], dict) and "type" not in content[0]
        blocks = qwen.to_blocks(content) if gemini_parts else claude.to_blocks(content)
        return [Message(obj.get("uuid") or obj.get("id"), role, blocks, timestamp=obj.get("timestamp"))]
    return []


def command_text(message: Message) -> str | None:
    """``/compact keep memory notes`` for a slash-command line; None for its output lines."""
    import re

    text = message.text
    name = re.search(r"<command-name>(.*?)</command-name>", text, re.S)
    if not name:
        return None
    args = re.search(r"<command-args>(.*?)</command-args>", text, re.S)
    return " ".join(filter(None, (name.group(1).strip(), args.group(1).strip() if args else "")))


# --- questions asked of a transcript -----------------------------------------


def recent_successful_tools(messages: list[Message]) -> list[str]:
    """Tools used since the last human prompt whose results were not errors.

    A tool that failed even once in that span is left out, as Claude Code does.
    """
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_human:
            start = i
            break
    names: dict[str, str] = {}  # tool_use id -> name
    used: list[str] = []
    failed: set[str] = set()
    for m in messages[start:]:
        for b in m.blocks:
            if b.type == "tool_use":
                names[b.id] = b.name
            elif b.type == "tool_result":
                name = names.get(b.id) or b.name
                if not name:
                    continue
                if b.is_error:
                    failed.add(name)
                elif name not in used:
                    used.append(name)
    return [n for n in used if n not in failed]


def memory_writes(messages: list[Message], memory) -> list[str]:
    """Paths inside ``memory`` (a MemoryDir) that assistant tool calls wrote or edited."""
    # The client may name the directory through a symbolic link, or we may: compare both forms.
    roots = {memory.root, memory.real_root}
    found = []
    for m in messages:
        if m.role != "assistant":
            continue
        for b in m.tool_uses():
            if b.name not in WRITE_TOOLS:
                continue
            path = tool_file(b.input)
            if path and os.path.isabs(path) and "\0" not in path:
                norm = os.path.normpath(path)
                forms = {norm, os.path.realpath(norm)}
                if any(f == r or f.startswith(r.rstrip(os.sep) + os.sep) for f in forms for r in roots):
                    found.append(norm)
    return found


#: Keys of a tool call's input that name what it acts on, most telling first.
_TARGET_KEYS = (*FILE_KEYS, "command", "cmd", "pattern", "url", "query", "description", "prompt")


def call_summary(block: Block, limit: int = 200) -> str:
    """``Bash: pytest -q``: a tool call as one line, its name and what it acts on."""
    target = next((block.input[k] for k in _TARGET_KEYS if isinstance(block.input.get(k), str) and block.input[k]), None)
    if target is None:
        target = json.dumps(block.input, ensure_ascii=False)
    target = " ".join(target.split())
    if len(target) > limit:
        target = target[:limit] + "…"
    return f"{block.name}: {target}"


def render_messages(messages: list[Message], *, max_result_chars: int = 2000) -> list[str]:
    """Each message as a model reads it ("" for one that carries nothing to read): people's and the
    assistant's words whole, a tool call as one line, a tool result cut to its head and tail."""
    from mem.core.jobs.budget import cut_middle

    rendered = []
    for m in messages:
        out: list[str] = []
        if m.kind == "compact_boundary":
            out.append("[earlier conversation was compacted]")
        elif m.kind == "command":
            command = command_text(m)
            if command:
                out.append(f"User ran the command {command}")
        elif m.kind != "meta":
            for b in m.blocks:
                if b.type == "text" and b.text.strip():
                    who = "Summary of earlier conversation" if m.kind == "compact_summary" else m.role.capitalize()
                    out.append(f"{who}: {b.text.strip()}")
                elif b.type == "tool_use":
                    out.append(f"Assistant called {call_summary(b)}")
                elif b.type == "tool_result":
                    text = b.text.strip()
                    if len(text) > max_result_chars:
                        text = cut_middle(text, max_result_chars)
                    out.append(f"Tool result{' (error)' if b.is_error else ''}: {text}")
        rendered.append("\n\n".join(out))
    return rendered


def render_for_model(messages: list[Message], *, max_result_chars: int = 2000, max_chars: int | None = None) -> str:
    """A compact text rendering of a conversation, for a model to read (its newest ``max_chars``)."""
    text = "\n\n".join(r for r in render_messages(messages, max_result_chars=max_result_chars) if r)
    if max_chars is not None and len(text) > max_chars:
        text = "[…earlier messages omitted]\n\n" + text[-max_chars:]
    return text


def conversation_dates(messages: list[Message]) -> tuple[str, str] | None:
    """The first and last day (UTC, ``YYYY-MM-DD``) of the messages' timestamps, or None without any."""
    days = [m.timestamp[:10] for m in messages
            if isinstance(m.timestamp, str) and len(m.timestamp) >= 10 and m.timestamp[4] == "-" and m.timestamp[7] == "-"]
    return (min(days), max(days)) if days else None
