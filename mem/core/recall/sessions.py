"""A session's state (what recall surfaced, so nothing is shown twice and the budget holds) and
what its transcript says (the tools used, the memory files already read).

uses: recall.surfacing, memdir (state, store, files), transcripts, messages (tool_file), hooks
(version_in_lines).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator

from mem.core.errors import MemError
from mem.core.memdir.store import MemoryDir
from mem.core.recall.surfacing import Surfaced

MAX_SESSION_BYTES = 60 * 1024  # compared with UTF-16 units of surfaced content
#: How much of a transcript's end is read for recent tools and files already read.
TRANSCRIPT_TAIL_BYTES = 512 * 1024
#: Session state files untouched this long are removed when a new session starts,
SESSION_MAX_AGE_S = 30 * 86400
#: at most this often: the scan stats every session's file (0.75 ms for 270 sessions), and a
#: session's first prompt waits for it. The stamp file's mtime says when it last ran.
PRUNE_EVERY_S = 86400
PRUNED_STAMP = ".pruned"

_SAFE_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"


def session_file(memory: MemoryDir, session_id: str) -> str:
    if re.fullmatch(_SAFE_ID, session_id):
        name = session_id
    else:
        import hashlib

        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", session_id).strip("-.")[:60]
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = f"{slug}-{digest}" if slug else digest
    return memory.state.recall_session(name)


class SessionState:
    __slots__ = ("session_id", "path", "surfaced", "created")

    def __init__(self, session_id: str, path: str, surfaced: list[dict] | None = None, created: bool = False):
        self.session_id = session_id
        self.path = path
        self.surfaced = [] if surfaced is None else surfaced  # {"path", "relpath", "chars", "time"}
        self.created = created

    @property
    def surfaced_paths(self) -> set[str]:
        return {os.path.normpath(s["path"]) for s in self.surfaced}

    @property
    def surfaced_chars(self) -> int:
        return sum(int(s.get("chars", 0)) for s in self.surfaced)

    def add(self, item: Surfaced, now_ms: int) -> None:
        from mem.core.jscompat import iso_utc_ms

        self.surfaced.append({"path": item.path, "relpath": item.relpath, "chars": item.chars, "time": iso_utc_ms(now_ms)})


def _load_state(path: str, session_id: str) -> SessionState:
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return SessionState(session_id, path, created=True)
    except (OSError, ValueError):
        data = {}  # a damaged state file: start the session over rather than fail the prompt
    surfaced = data.get("surfaced") if isinstance(data, dict) else None
    rows = [s for s in surfaced or [] if isinstance(s, dict) and isinstance(s.get("path"), str)]
    return SessionState(session_id, path, rows)


def _save_state(state: SessionState, memory: MemoryDir) -> None:
    import json

    from mem.core.memdir.store import atomic_write

    data = {
        "version": 1,
        "session_id": state.session_id,
        "memory_dir": memory.spelled,
        "surfaced_chars": state.surfaced_chars,
        "surfaced": state.surfaced,
    }
    os.makedirs(os.path.dirname(state.path), mode=0o700, exist_ok=True)
    # Not synced to disk: a state lost with the machine only lets a memory surface again, and a
    # damaged one starts the session over (_load_state); the prompt waits for none of it.
    atomic_write(state.path, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), durable=False)


def _save_state_if_possible(state: SessionState, memory: MemoryDir) -> None:
    """Save the session's state unless the state dir refuses writes: the memories are surfaced all the same."""
    from mem.core.errors import is_storage_error

    try:
        _save_state(state, memory)
    except OSError as exc:
        if not is_storage_error(exc):
            raise


@contextlib.contextmanager
def session(memory: MemoryDir, session_id: str | None) -> Iterator[SessionState | None]:
    """The session's state, locked for the whole recall (concurrent hooks queue up)."""
    if not session_id:
        yield None
        return
    from mem.core.errors import is_storage_error
    from mem.core.memdir.store import file_lock

    path = session_file(memory, session_id)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(path + ".lock"))
        except OSError as exc:
            if not is_storage_error(exc):
                raise
            # The state dir refuses writes (read-only, full): recall all the same, from what it holds.
            yield _load_state(path, session_id)
            return
        state = _load_state(path, session_id)
        yield state
    if state.created:
        _prune_sessions(os.path.dirname(path))


def _prune_sessions(directory: str, now: float | None = None) -> None:
    now = time.time() if now is None else now
    stamp = os.path.join(directory, PRUNED_STAMP)
    try:
        if 0 <= now - os.stat(stamp).st_mtime < PRUNE_EVERY_S:
            return
    except OSError:
        pass  # never pruned here: now
    with contextlib.suppress(OSError):
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT, 0o600))
        os.utime(stamp, (now, now))
    cutoff = now - SESSION_MAX_AGE_S
    try:
        with os.scandir(directory) as it:
            old = [e.path for e in it if e.name.endswith(".json") and e.stat().st_mtime < cutoff]
    except OSError:
        return
    for path in old:
        for p in (path, path + ".lock"):
            with contextlib.suppress(OSError):
                os.unlink(p)


def reset_session(memory: MemoryDir, session_id: str) -> tuple[str, bool]:
    """Forget what a session surfaced (after a compaction); (state file, whether it existed)."""
    from mem.core.memdir.store import file_lock

    if not session_id:
        raise MemError("empty session id")
    path = session_file(memory, session_id)
    with file_lock(path + ".lock"):
        try:
            os.unlink(path)
            return path, True
        except FileNotFoundError:
            return path, False


# --- what a transcript tells us -------------------------------------------------------


class TranscriptFacts:
    __slots__ = ("recent_tools", "touched", "version")

    def __init__(self, recent_tools: list[str], touched: set[str], version: tuple[int, ...] | None = None):
        self.recent_tools = recent_tools
        self.touched = touched  # files tools read or wrote since the last compaction
        self.version = version  # the client's, as its lines say (hooks.escapes_context)


READ_TOOLS = frozenset({"Read", "read_file", "read_many_files"})


def transcript_facts(path: str, prompt: str | None, memory: MemoryDir) -> TranscriptFacts:
    """Recently used successful tools, and memory files tools already touched, from a transcript's tail."""
    from mem.core import transcripts
    from mem.core.messages import prompt_text, tool_file

    from mem.core.memdir.files import open_regular

    with os.fdopen(open_regular(path), "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        start = max(0, size - TRANSCRIPT_TAIL_BYTES)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # the first one is cut
    messages = transcripts.parse_lines(lines).messages
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].kind == "compact_boundary":
            messages = messages[i + 1:]
            break
    human = [i for i, m in enumerate(messages) if m.is_human]
    span = messages
    # The client may already have written this prompt: then the tools that count are the ones before it.
    if human and prompt is not None and prompt_text(messages[human[-1]]) == prompt.strip() \
            and not any(m.tool_uses() for m in messages[human[-1] + 1:]):
        span = messages[: human[-1]]
    tools = transcripts.recent_successful_tools(span)
    root = memory.root
    touched: set[str] = set()
    for m in messages:
        if m.role != "assistant":
            continue
        for b in m.tool_uses():
            if b.name not in READ_TOOLS and b.name not in transcripts.WRITE_TOOLS:
                continue
            p = tool_file(b.input)
            if p:
                norm = os.path.normpath(p)
                if norm.startswith(root + os.sep):
                    touched.add(norm)
    from mem.core.hooks import version_in_lines

    return TranscriptFacts(tools, touched, version_in_lines(lines))
