"""Session notes: a per-session summary.md that survives compaction, as Claude Code keeps it.

``<config home>/projects/<sanitize(cwd)>/<session id>/session-memory/summary.md``
(directory 0700, file 0600, created exclusively from the template). The
template's headers and italic description lines are the file's structure: an
update may change only what is under them. ``truncate_for_compact`` cuts each
section to 8,000 UTF-16 units at line boundaries, as the compaction summary does.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass

from mem.core.errors import RefusedError, UsageError
from mem.core.jscompat import cut16, len16

DEFAULT_TEMPLATE = """
# Session Title
_A short and distinctive 5-10 word descriptive title for the session. Super info dense, no filler_

# Current State
_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._

# Task specification
_What did the user ask to build? Any design decisions or other explanatory context_

# Files and Functions
_What are the important files? In short, what do they contain and why are they relevant?_

# Workflow
_What bash commands are usually run and in what order? How to interpret their output if not obvious?_

# Errors & Corrections
_Errors encountered and how they were fixed. What did the user correct? What approaches failed and should not be tried again?_

# Codebase and System Documentation
_What are the important system components? How do they work/fit together?_

# Learnings
_What has worked well? What has not? What to avoid? Do not duplicate items from other sections_

# Key results
_If the user asked a specific output such as an answer to a question, a table, or other document, repeat the exact result here_

# Worklog
_Step by step, what was attempted, done? Very terse summary for each step_
"""

MIN_TOKENS_TO_INIT = 10_000
MIN_TOKENS_BETWEEN_UPDATES = 5_000
TOOL_CALLS_BETWEEN_UPDATES = 3
MAX_SECTION_TOKENS = 2_000
MAX_TOTAL_TOKENS = 12_000
MAX_SECTION_CHARS = MAX_SECTION_TOKENS * 4
TRUNCATION_MARKER = "\n[... section truncated for length ...]"

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_VAR = re.compile(r"\{\{(\w+)\}\}")


def check_session_id(session_id: str) -> str:
    if not session_id or not _SESSION_ID.match(session_id) or ".." in session_id:
        raise UsageError(f"not a usable session id: {session_id!r}")
    return session_id


def notes_path(session_id: str, project: str | None = None, env=None) -> str:
    return os.path.join(_session_base(session_id, project, env), "session-memory", "summary.md")


def transcript_path(session_id: str, project: str | None = None, env=None) -> str:
    """Where Claude Code writes the session's transcript: next to its directory, ``<id>.jsonl``."""
    return _session_base(session_id, project, env) + ".jsonl"


def _session_base(session_id: str, project: str | None, env) -> str:
    from mem.clients.claude import transcripts_dir
    from mem.core.paths import project_root

    root = project_root(project or os.getcwd())
    return os.path.join(transcripts_dir(root, env=env), check_session_id(session_id))


def config_dir(env=None) -> str:
    from mem.clients.claude import config_home

    return os.path.join(config_home(env), "session-memory", "config")


def read_transcript(path: str):
    """The session's transcript at ``path`` (transcripts.Transcript), or a MemError saying why not."""
    from mem.core import transcripts
    from mem.core.errors import NotFoundError
    from mem.core.memdir.files import RefusedRead

    try:
        return transcripts.read_transcript(path).require_known(path)
    except FileNotFoundError:
        raise NotFoundError(f"no transcript at {path}") from None
    except RefusedRead:
        raise
    except OSError as exc:  # a directory named as the transcript
        raise UsageError(f"cannot read the transcript {path}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the path a hook payload gave
        raise UsageError(f"cannot read the transcript {path!r}: not a path") from None


def read_notes(path: str) -> str:
    """The session notes (or a template, a prompt) at ``path``: a regular file, at most MAX_MEMORY_BYTES."""
    from mem.core.memdir.files import read_text

    return read_text(path)


def _read_optional(path: str) -> str | None:
    try:
        return read_notes(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # Claude logs and falls back to the default


def load_template(env=None) -> str:
    return _read_optional(os.path.join(config_dir(env), "template.md")) or DEFAULT_TEMPLATE


def custom_prompt(env=None) -> str | None:
    return _read_optional(os.path.join(config_dir(env), "prompt.md"))


def init(path: str, template: str) -> bool:
    """Create the notes file from the template (0600, exclusive); False if it exists."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(template)
    return True


def substitute(prompt: str, variables: dict[str, str]) -> str:
    """One pass of {{name}} substitution; unknown names stay; values are literal."""
    return _VAR.sub(lambda m: variables[m.group(1)] if m.group(1) in variables else m.group(0), prompt)


# --- structure ------------------------------------------------------------------


def structure(text: str) -> list[str]:
    """The header lines and the italic description line right under each."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith("# "):
            out.append(line)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if len(nxt) >= 2 and nxt.startswith("_") and nxt.endswith("_"):
                out.append(nxt)
    return out


def check_structure(template_text: str, new_text: str) -> list[str]:
    """Problems if ``new_text`` lost, changed, reordered or added a header or description."""
    want, got = structure(template_text), structure(new_text)
    if want == got:
        return []
    problems = []
    missing = [s for s in want if s not in got]
    added = [s for s in got if s not in want]
    problems += [f"missing or changed: {s}" for s in missing]
    problems += [f"added: {s}" for s in added]
    if not missing and not added:
        problems.append("sections are out of order")
    return problems


@dataclass(frozen=True)
class SectionSize:
    header: str
    tokens: int


def section_sizes(text: str) -> list[SectionSize]:
    sizes = []
    header = None
    body: list[str] = []

    def flush():
        if header is not None and body:
            sizes.append(SectionSize(header, round(len16("\n".join(body).strip()) / 4)))

    for line in text.split("\n"):
        if line.startswith("# "):
            flush()
            header, body = line, []
        elif header is not None:
            body.append(line)
    flush()
    return sizes


def size_reminders(text: str) -> str:
    """The warnings appended to the update prompt when the notes grow too long."""
    total = round(len16(text) / 4)
    over = sorted((s for s in section_sizes(text) if s.tokens > MAX_SECTION_TOKENS), key=lambda s: -s.tokens)
    out = ""
    if total > MAX_TOTAL_TOKENS:
        out += (f"\n\nCRITICAL: The session memory file is currently ~{total} tokens, which exceeds the maximum of "
                f"{MAX_TOTAL_TOKENS} tokens. You MUST condense it: shorten the longest sections, drop detail that no "
                "longer matters, and keep Current State and Key results exact.")
    if over:
        intro = ("Oversized sections to condense" if total > MAX_TOTAL_TOKENS else
                 "IMPORTANT: The following sections exceed the per-section limit and MUST be condensed")
        out += f"\n\n{intro}:\n" + "\n".join(f'- "{s.header}" is ~{s.tokens} tokens (limit: {MAX_SECTION_TOKENS})' for s in over)
    return out


def truncate_for_compact(text: str) -> tuple[str, bool]:
    """Each section cut to 8,000 UTF-16 units at a line boundary, with the marker line."""
    out: list[str] = []
    truncated = False
    header = None
    body: list[str] = []

    def flush():
        nonlocal truncated
        if header is None:
            return
        out.append(header)
        if len16("\n".join(body)) <= MAX_SECTION_CHARS:
            out.extend(body)
            return
        count = 0
        for line in body:
            if count + len16(line) + 1 > MAX_SECTION_CHARS:
                break
            out.append(line)
            count += len16(line) + 1
        out.append(TRUNCATION_MARKER)
        truncated = True

    for line in text.split("\n"):
        if line.startswith("# "):
            flush()
            header, body = line, []
        elif header is None:
            out.append(line)  # before the first header: untouched
        else:
            body.append(line)
    flush()
    return "\n".join(out), truncated


def is_empty(text: str, template: str) -> bool:
    return text.strip() == template.strip()


# --- when an update is due ------------------------------------------------------


def _message_chars(m) -> int:
    n = 0
    for b in m.blocks:
        if b.type in ("text", "thinking", "tool_result"):
            n += len16(b.text)
        elif b.type == "tool_use":
            n += len16(json.dumps(b.input, ensure_ascii=False)) + len16(b.name)
    return n


def estimate_tokens(messages) -> int:
    """The last API usage in the transcript plus chars/4 of the messages after it."""
    last = None
    for i in range(len(messages) - 1, -1, -1):
        u = messages[i].usage
        if messages[i].role == "assistant" and isinstance(u, dict) and "input_tokens" in u:
            last = i
            break
    base = 0
    if last is not None:
        u = messages[last].usage
        base = sum(int(u.get(k) or 0) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        # Blocks of the same API message written on later lines are part of that usage.
        mid = messages[last].message_id
        while last + 1 < len(messages) and mid and messages[last + 1].message_id == mid:
            last += 1
    rest = messages[last + 1:] if last is not None else messages
    return base + round(sum(_message_chars(m) for m in rest) / 4)


@dataclass
class SessionStatus:
    session_id: str
    path: str
    exists: bool
    tokens: int
    initialized: bool
    tokens_at_last_update: int
    tokens_since_update: int
    tool_calls_since_update: int
    last_assistant_used_tools: bool
    due: bool
    reason: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def state_path(session_id: str, env=None) -> str:
    from mem.core.memdir.state import session_state

    return session_state(check_session_id(session_id), env)


def load_state(session_id: str, env=None) -> dict:
    try:
        with open(state_path(session_id, env), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_state(session_id: str, data: dict, env=None) -> None:
    from mem.core.memdir.store import atomic_write

    path = state_path(session_id, env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    atomic_write(path, json.dumps(data).encode())


def status(session_id: str, path: str, transcript, env=None) -> SessionStatus:
    messages = transcript.messages
    state = load_state(session_id, env)
    tokens = estimate_tokens(messages)
    initialized = bool(state.get("initialized")) or tokens >= MIN_TOKENS_TO_INIT
    at_last = int(state.get("tokens_at_last_update") or 0)
    since_msgs = transcript.after(state.get("last_uuid"))
    tool_calls = sum(len(m.tool_uses()) for m in since_msgs if m.role == "assistant")
    last_assistant = next((m for m in reversed(messages) if m.role == "assistant"), None)
    # Claude splits one API message across lines: look at all lines of the last one.
    last_tools = False
    if last_assistant is not None:
        mid = last_assistant.message_id
        group = [m for m in messages if m.role == "assistant" and mid and m.message_id == mid] or [last_assistant]
        last_tools = any(m.tool_uses() for m in group)
    delta = tokens - at_last
    if not initialized:
        due, reason = False, f"{tokens} tokens so far; notes start at {MIN_TOKENS_TO_INIT}"
    elif delta < MIN_TOKENS_BETWEEN_UPDATES:
        due, reason = False, f"{delta} tokens since the last update (needs {MIN_TOKENS_BETWEEN_UPDATES})"
    elif tool_calls >= TOOL_CALLS_BETWEEN_UPDATES or not last_tools:
        due = True
        reason = (f"{delta} new tokens and {tool_calls} tool calls" if tool_calls >= TOOL_CALLS_BETWEEN_UPDATES
                  else f"{delta} new tokens and the last turn made no tool call")
    else:
        due, reason = False, f"{tool_calls} tool calls since the last update (needs {TOOL_CALLS_BETWEEN_UPDATES}) and the turn is still using tools"
    return SessionStatus(session_id, path, os.path.exists(path), tokens, initialized, at_last, delta, tool_calls,
                         last_tools, due, reason)


def record_update(session_id: str, transcript, tokens: int, env=None) -> None:
    state = load_state(session_id, env)
    state.update(initialized=True, tokens_at_last_update=tokens, last_uuid=transcript.last_uuid)
    save_state(session_id, state, env)


class StructureError(RefusedError):
    """An update broke the notes' headers or descriptions; the old file was put back."""


def reset_after_compaction(session_id: str, env=None) -> None:
    """The conversation is about to shrink: count new tokens from zero again."""
    state = load_state(session_id, env)
    state.update(tokens_at_last_update=0, last_uuid=None, compactions=int(state.get("compactions") or 0) + 1)
    save_state(session_id, state, env)


def compact_context(path: str, limit: int | None = None) -> str:
    """The notes as context after a compaction ("" when there are none worth giving)."""
    from mem.core.hooks import CONTEXT_LIMIT

    limit = CONTEXT_LIMIT if limit is None else limit
    try:
        notes = read_notes(path)
    except (OSError, ValueError):
        return ""
    if is_empty(notes, load_template()) or not notes.strip():
        return ""
    text, truncated = truncate_for_compact(notes)
    head = f"Session notes kept across compaction (from {path}):\n\n"
    tail = (f"\n\nSome session memory sections were truncated for length. The full session memory can be viewed at: {path}"
            if truncated else "")
    body = text.strip("\n")
    if len16(head + body + tail) > limit:
        tail = f"\n\n[The notes are longer than a hook may carry; the full session memory can be viewed at: {path}]"
        room = limit - len16(head) - len16(tail)
        cut = cut16(body, max(room, 0))
        body = cut[: cut.rfind("\n")] if "\n" in cut else cut
    return head + body + tail
