"""Hook payloads in, hook output out: what every ``--hook`` mode shares.

Claude Code and qwen-code run a hook command with one JSON object on stdin
(``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and, per
event, ``prompt``, ``source``, ``trigger``...) and read JSON from its stdout.
For SessionStart and UserPromptSubmit the text to inject goes in
``hookSpecificOutput.additionalContext``: Claude Code also accepts plain
stdout, qwen-code only the JSON form, so we always write JSON.

Claude Code replaces hook output longer than 10,000 characters with a short
stub, so whatever a hook injects must stay under ``CONTEXT_LIMIT``.

How the context reaches the model differs by client and version (seen in the
requests of the real clients, tests/e2e): Claude Code up to 2.1.291 passes it
as it is; from 2.1.292 (2.1.330 too) it prefixes "<Event> hook additional
context: " and turns the ``<`` of ``<system-reminder>`` / ``</system-reminder>``
into ``&lt;``; qwen-code
(0.15.10 and 0.24.4) escapes every ``<`` and ``>``. ``escapes_context`` says
which case a payload comes from, so a hook can send tags only where they
arrive as tags.

uses: errors (UsageError), clients (who sent a payload, its layout and escaping; resolve_options for hook_resolution),
memdir.state (hook_stamp), memdir.files (open_regular), record
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from mem.core.errors import UsageError
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any, TextIO

#: Claude Code swaps longer hook output for a "<persisted-output>" stub (UTF-16 units).
OUTPUT_LIMIT = 10_000
#: What we allow ourselves, leaving room for the client's own framing of the text.
CONTEXT_LIMIT = 9_500
#: How much of a transcript's end is read for the client's version.
VERSION_TAIL_BYTES = 64 * 1024
#: A payload larger than this is not a hook payload (a transcript piped by mistake, say).
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024

BASE_FIELDS = ("session_id", "transcript_path", "cwd", "hook_event_name")
#: The events mem's hooks are installed on (``mem hooks install``).
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "PreCompact")
#: The events ``mem recall --hook`` answers: a prompt, a compaction's new start, a tool about to run.
RECALL_EVENTS = ("UserPromptSubmit", "SessionStart", "PreToolUse")


class HookPayload(Record):
    """One hook invocation's stdin, the fields we use picked out; ``raw`` keeps the rest."""

    session_id: str
    transcript_path: str | None
    cwd: str
    hook_event_name: str
    prompt: str | None = None  # UserPromptSubmit
    source: str | None = None  # SessionStart: startup | resume | clear | compact
    trigger: str | None = None  # PreCompact / PostCompact: manual | auto
    raw: dict | None = None  # the whole payload

    @property
    def tool_name(self) -> str:
        """PreToolUse: the tool about to run (``Bash``, ``run_shell_command``...); "" otherwise."""
        value = (self.raw or {}).get("tool_name")
        return value if isinstance(value, str) else ""

    @property
    def tool_input(self) -> dict:
        """PreToolUse: the tool's arguments (``command``, ``file_path``...); {} otherwise."""
        value = (self.raw or {}).get("tool_input")
        return value if isinstance(value, dict) else {}

    @property
    def client(self) -> str:
        """The name of the client that sent it (mem/clients/ ``of_payload``)."""
        from mem.clients import of_payload

        return of_payload(self.transcript_path, self.raw)


def parse_payload(
    text: str | bytes,
    *,
    events: Iterable[str] | None = None,
    require: Iterable[str] = ("session_id", "hook_event_name"),
) -> HookPayload:
    """A validated payload, or UsageError saying what is wrong with it.

    ``events`` limits the ``hook_event_name`` values accepted; ``require``
    names the fields that must be present (non-empty strings). ``cwd`` must
    be absolute; unless required, a missing one falls back to the process's
    directory, which both clients set to the session's.
    """
    import json

    if isinstance(text, bytes):
        if len(text) > MAX_PAYLOAD_BYTES:
            raise UsageError(f"hook payload is larger than {MAX_PAYLOAD_BYTES} bytes")
        text = text.decode("utf-8", "replace")
    if not text.strip():
        raise UsageError("no hook payload on stdin (expected one JSON object)")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"hook payload is not JSON: {exc}") from None
    except RecursionError:  # [[[[... 100,000 deep
        raise UsageError("hook payload is not a JSON object (nested too deep)") from None
    if not isinstance(data, dict):
        raise UsageError("hook payload is not a JSON object")

    def string(name: str) -> str | None:
        value = data.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise UsageError(f"hook payload field {name} is not a string")
        return value

    values = {name: string(name) for name in (*BASE_FIELDS, "prompt", "source", "trigger")}
    for name in require:
        if not values.get(name):
            raise UsageError(f"hook payload has no {name}")
    cwd = values["cwd"] or os.getcwd()
    if not os.path.isabs(cwd) or "\0" in cwd:
        raise UsageError(f"hook payload cwd is not an absolute path: {cwd!r}")
    from mem.clients import hook_event

    event = hook_event(values["transcript_path"], values["hook_event_name"] or "")
    if events is not None:
        allowed = tuple(events)
        if event not in allowed:
            raise UsageError(f"hook event {event or '(none)'} is not handled here (expected {' or '.join(allowed)})")
    return HookPayload(
        session_id=values["session_id"] or "",
        transcript_path=values["transcript_path"] or None,
        cwd=cwd,
        hook_event_name=event,
        prompt=values["prompt"],
        source=values["source"],
        trigger=values["trigger"],
        raw=data,
    )


#: Said (through ``read_payload``'s ``notice``) when a hook is run by hand at a terminal.
TTY_HINT = ("--hook reads the hook's JSON payload on stdin, as the client sends it: "
            "paste one and press Ctrl-D (Ctrl-C to quit)")


def read_payload(stream: TextIO | None = None, *, notice: Callable[[str], None] | None = None,
                 **kwargs: Any) -> HookPayload:
    """``parse_payload`` of everything on ``stream`` (stdin by default); ``notice`` is given TTY_HINT
    when the stream is a terminal (run by hand, where a client would pipe the payload in)."""
    import sys

    stream = sys.stdin if stream is None else stream
    if notice is not None and stream.isatty():
        notice(TTY_HINT)
    buffer = getattr(stream, "buffer", None)
    data = buffer.read(MAX_PAYLOAD_BYTES + 1) if buffer is not None else stream.read(MAX_PAYLOAD_BYTES + 1)
    payload = parse_payload(data, **kwargs)
    mark_fired(payload)
    return payload


def subcommand(args: list[str]) -> str:
    """The subcommand words of mem's arguments, joined by "-": ``session compact --hook`` -> "session-compact"."""
    words = []
    for word in args:
        if word.startswith("-"):
            if words:
                break
            continue
        words.append(word)
    return "-".join(words)


def mark_fired(payload: HookPayload, argv: list[str] | None = None) -> None:
    """Note that this hook ran, for ``mem hooks status``: the mtime of one empty file; never fails the hook.

    Only the mtime is touched: truncating and rewriting a file costs ~3 ms on ext4 (it flushes on
    close to keep the data safe), touching it ~10 us, and this runs on every prompt.
    """
    import sys

    from mem.core.memdir.state import hook_stamp

    command = subcommand(sys.argv[1:] if argv is None else argv)
    if not payload.hook_event_name or not command or "/" in command or "/" in payload.hook_event_name:
        return
    try:
        path = hook_stamp(payload.client, payload.hook_event_name, command)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.utime(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


class HookResult(Record):
    """What a hook prints: ``output`` on stdout ("" for nothing), each of ``messages`` as one stderr line."""

    output: str = ""
    messages: tuple[str, ...] = ()


def hook_where(where: dict, payload: HookPayload) -> dict:
    """The memory-directory options of a hook call completed from its payload: the project is the
    payload's cwd (unless --project says otherwise), and the layout the client's payload means
    (a qwen-code payload: qwen-code's; mem/clients/)."""
    from mem.clients import payload_layout

    where = {**where, "project": where.get("project") or payload.cwd}
    if where.get("layout", "auto") == "auto":
        where["layout"] = payload_layout(payload.client)
    return where


def hook_resolution(where: dict, payload: HookPayload, environ: Mapping[str, str] | None = None):
    """The Resolution (mem/core/paths.py) of a hook call's memory directory: ``hook_where``'s options,
    resolved with ``environ``'s variables (the process's when None)."""
    from mem.clients import resolve_options

    return resolve_options({**hook_where(where, payload), "env": environ})


def render_output(event: str, additional_context: str | None) -> str:
    """The JSON a client reads from a SessionStart or UserPromptSubmit hook; "" when there is nothing to add."""
    import json

    if not additional_context:
        return ""
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": additional_context}}
    return json.dumps(out, ensure_ascii=False)


def parse_version(text: object) -> tuple[int, ...] | None:
    """``(2, 1, 330)`` from ``"2.1.330"`` or ``"2.1.330 (Claude Code)"``; None when it is no version."""
    import re

    m = re.match(r"\s*v?(\d+(?:\.\d+)+)", text) if isinstance(text, str) else None
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def client_version(payload: HookPayload) -> tuple[int, ...] | None:
    """The client's version, from the payload if it says, else from its transcript; None when unknown.

    Neither client puts its version in the payload (2.1.330, 0.24.4), but every
    transcript line carries ``"version"``. A session's first prompt may come
    before the transcript exists: then the version is unknown.
    """
    found = parse_version((payload.raw or {}).get("version"))
    if found or not payload.transcript_path:
        return found
    from mem.core.memdir.files import open_regular

    try:  # only a regular file: a FIFO or a device named as the transcript must not hold the hook
        with os.fdopen(open_regular(payload.transcript_path), "rb") as fh:
            start = max(0, fh.seek(0, os.SEEK_END) - VERSION_TAIL_BYTES)
            fh.seek(start)
            lines = fh.read(VERSION_TAIL_BYTES).splitlines()[1 if start else 0:]  # a line cut by the seek is no line
    except OSError:
        return None
    return version_in_lines(lines)


def version_in_lines(lines: list[bytes]) -> tuple[int, ...] | None:
    """The newest ``"version"`` in a transcript's (tail's) lines; None when none says."""
    import json

    for line in reversed(lines):
        if b'"version"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        found = parse_version(entry.get("version")) if isinstance(entry, dict) else None
        if found:
            return found
    return None


#: ``escapes_context``'s default: the transcript has not been read yet.
NOT_READ = object()


def escapes_context(payload: HookPayload, version=NOT_READ) -> bool:
    """Whether the client escapes the tags in hook context before the model reads it.

    The client says (mem/clients/: qwen-code always has, Claude Code since
    2.1.292). When the version cannot be told (no transcript yet), the answer
    is yes: plain text reads well either way, escaped tags do not. ``version``:
    what a caller that has read the transcript already found there (None:
    nothing), so it is not read twice.
    """
    from mem.clients import escapes_hook_context, named

    if getattr(named(payload.client), "ESCAPES_ALWAYS", False):
        return True  # whatever the version: the transcript is not read
    if version is NOT_READ:
        version = client_version(payload)
    else:
        version = parse_version((payload.raw or {}).get("version")) or version
    return escapes_hook_context(payload.client, version)
