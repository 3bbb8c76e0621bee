"""The Claude subscription, through the Claude Code CLI the user already has (``--backend claude-code``).

Claude Code runs its own agent loop, so an agent job is one headless session, not one request
per turn: ``jobs.claude_agent.run_agent`` starts ``claude -p`` (``argv``, ``run_session``) once for the run, with the job's system prompt, its
conversation on stdin, and mem's confined tools as the only tools (``mcp_tools``: an MCP server
whose calls run through the job's ``ToolBox`` in mem's own process, so every write takes the one
write path and is recorded). Every built-in tool is off (``--tools ""``, and listed again in
``--disallowedTools``), no other MCP server is loaded (``--strict-mcp-config``), only mem's tools
are allowed and anything else is denied without a prompt (``--permission-mode dontAsk``). The
session leaves no transcript (``--no-session-persistence``), runs in an empty directory of mem's
state (no project's CLAUDE.md, settings or hooks), loads no settings files and runs no hooks (mem's own
hooks would otherwise start a job inside the job). Claude Code finds the user's login itself
(``~/.claude/.credentials.json`` or the keychain, under ``CLAUDE_CONFIG_DIR`` when set): mem
never reads it.

The budgets are kept: turns (``--max-turns``), the deadline (the process group is killed when it
passes: stop reason ``deadline``), usage (the ``result`` event's). Each job pays Claude Code's
start-up (README: Models; bench/RESULTS.md), which is why recall never uses this backend.

``create`` (the one-call jobs: forget, ``mem model test``) is a session with no tools and one turn; a
JSON schema asked for (``output_config``) is stated in the system prompt, and the caller checks the answer.

``MEM_CLAUDE_CODE_ENV_FILE`` (for tests): a file of ``NAME=value`` lines added to the Claude Code
process's environment only (the e2e tests point it at a local server this way, so no key is ever
in mem's own environment).

uses: errors, backends (find_claude), backends.protocol (ModelError, Reply, Block), backends.mcp_tools (tool_name), budget (limits),
memdir.files (read_text), memdir.state (state_root)
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mem.core.errors import ConfigError
from mem.core.jobs.backends import find_claude
from mem.core.jobs.backends.protocol import Block, ModelError, Reply

#: Claude Code's built-in tools (2.1.197 to 2.1.330), every one disallowed by name as well.
BUILTIN_TOOLS = ("Agent", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep", "KillShell", "LS",
                 "MultiEdit", "NotebookEdit", "NotebookRead", "Read", "SlashCommand", "Skill", "Task",
                 "TodoWrite", "WebFetch", "WebSearch", "Write")
#: Settings passed on the command line: no hooks (the user's, mem's own among them, would run
#: inside the job), no auto-memory.
SETTINGS = {"disableAllHooks": True, "autoMemoryEnabled": False}
ENV_FILE = "MEM_CLAUDE_CODE_ENV_FILE"
#: A prompt larger than this goes on stdin anyway; the system prompt is an argument, which Linux
#: caps at 128 KiB.
MAX_SYSTEM_ARG = 120_000


def find_executable(env: Mapping[str, str] | None = None) -> str | None:
    """The ``claude`` on PATH, or None."""
    return find_claude(os.environ if env is None else env)


def child_env(env: Mapping[str, str] | None = None, max_output: int | None = None) -> dict[str, str]:
    """Claude Code's environment: ours, plus ``MEM_CLAUDE_CODE_ENV_FILE``'s lines (for tests), with the
    job's output budget ``max_output`` as CLAUDE_CODE_MAX_OUTPUT_TOKENS (a lower one of the user's stays)."""
    env = dict(os.environ if env is None else env)
    path = env.get(ENV_FILE)
    if path:
        from mem.core.memdir.files import read_text

        try:
            text = read_text(path)
        except OSError as exc:
            raise ConfigError(f"{ENV_FILE}: cannot read {path}: {exc.strerror or exc}") from None
        for line in text.splitlines():
            name, sep, value = line.strip().partition("=")
            if sep and name and not name.startswith("#"):
                env[name] = value
    env.setdefault("DISABLE_AUTOUPDATER", "1")
    # the job's prompt is all the model needs: no CLAUDE.md, no auto-memory of the working directory
    env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] = "1"
    env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = "1"
    if max_output:
        # Claude Code asks for the model's whole output (128,000 tokens for a Sonnet 5) on every turn;
        # mem sized the job's windows for its own budget, and input + max_tokens must fit the window
        # (measured: 86,318 + 128,000 > 200,000 on a 4 MB session, bench/extract_backends.py)
        mine = env.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "")
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(min(max_output, int(mine)) if mine.isdigit() and int(mine) else max_output)
    return env


def argv(exe: str, *, model: str | None, system: str, max_turns: int, tools: list[str],
         mcp_config: dict | None) -> list[str]:
    """The command line of one headless session offering only ``tools`` (our names) from ``mcp_config``."""
    from mem.core.jobs.backends.mcp_tools import tool_name

    if len(system.encode()) > MAX_SYSTEM_ARG:
        raise ModelError(f"the system prompt ({len(system.encode()):,} bytes) is too long for a command line",
                         "over_window")
    args = [exe, "-p", "--output-format", "stream-json", "--verbose", "--input-format", "text",
            "--no-session-persistence", "--setting-sources", "", "--settings", json.dumps(SETTINGS),
            "--strict-mcp-config", "--tools", "", "--disallowedTools", ",".join(BUILTIN_TOOLS),
            "--permission-mode", "dontAsk", "--max-turns", str(max(1, max_turns)), "--system-prompt", system]
    if model:
        args += ["--model", model]
    if mcp_config is not None:
        args += ["--mcp-config", json.dumps(mcp_config)]
    if tools:
        args += ["--allowedTools", ",".join(tool_name(t) for t in tools)]
    return args


def prompt_text(messages: str | list[dict]) -> str:
    """The conversation so far as the one prompt of a new session: the text the model was shown
    and what it answered (tool calls it made are not replayed: their effects are on disk)."""
    if isinstance(messages, str):
        return messages

    def text_of(content: Any) -> str:
        if isinstance(content, str):
            return content
        parts = []
        for block in content or []:
            if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                parts.append(block["text"])
        return "\n\n".join(parts)

    texts = [(m.get("role"), text_of(m.get("content"))) for m in messages if isinstance(m, dict)]
    texts = [(role, text) for role, text in texts if text]
    if len(texts) == 1:
        return texts[0][1]
    out = []
    for role, text in texts:
        out.append(f"<{'your_earlier_answer' if role == 'assistant' else 'message'}>\n{text}\n"
                   f"</{'your_earlier_answer' if role == 'assistant' else 'message'}>")
    return "\n\n".join(out)


class Session:
    """What one ``claude -p`` run said: its assistant turns, final text, usage, and how it ended."""

    def __init__(self) -> None:
        self.turns = 0
        self.text = ""
        self.blocks: list[dict] = []  # the last assistant message's content
        self.result: dict | None = None
        self.model = ""
        self.tools_offered: list[str] = []
        self.stop_reason: str | None = None
        self.timed_out = False
        self.returncode: int | None = None
        self.stderr = ""
        self.startup_s: float | None = None  # from spawn to the init event
        self.api_error: str | None = None  # Claude Code's word for a failed request: authentication_failed...

    def feed(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.model = event.get("model") or self.model
            self.tools_offered = [t for t in event.get("tools") or [] if isinstance(t, str)]
        elif kind == "assistant" and isinstance(event.get("message"), dict) and not event.get("parent_tool_use_id"):
            message = event["message"]
            if event.get("error") or message.get("model") == "<synthetic>":
                # Claude Code's own words (not logged in, an API error), not a model turn
                self.api_error = str(event.get("error") or "") or self.api_error
                return
            # Claude Code emits one event per content block of a message: count messages by id
            mid = message.get("id")
            if mid is None or mid != getattr(self, "_last_id", None):
                self.turns += 1
                self.blocks = []
            self._last_id = mid
            self.blocks += [b for b in message.get("content") or [] if isinstance(b, dict)]
            texts = [b.get("text", "") for b in self.blocks if b.get("type") == "text" and b.get("text")]
            if texts:
                self.text = "\n".join(texts)
        elif kind == "result":
            self.result = event


def _usage(result: dict | None) -> dict | None:
    usage = (result or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    return {k: usage[k] for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                  "cache_read_input_tokens") if isinstance(usage.get(k), int)}


def _failure(session: Session) -> ModelError | None:
    """The error a session ended with, or None for one that finished (or hit its turn limit)."""
    result = session.result
    if session.timed_out:
        return None
    if result is None:
        why = " ".join(session.stderr.split())[-300:] or f"exit status {session.returncode}"
        return ModelError(f"claude ended without a result: {why}", "auth" if "/login" in why else "connection")
    subtype = result.get("subtype")
    if subtype == "error_max_turns" or not result.get("is_error") and subtype == "success":
        return None
    status = result.get("api_error_status")
    text = " ".join(str(result.get("result") or result.get("errors") or subtype or "error").split())[:300]
    if status in (401, 403) or session.api_error == "authentication_failed" or "/login" in text:
        kind = "auth"
    elif status in (429, 529):
        kind = "overloaded"
    elif isinstance(status, int):
        kind = "status"
    else:
        kind = "error"
    return ModelError(f"claude: {text}", kind, status=status if isinstance(status, int) else None)


def run_session(args: list[str], prompt: str, *, env: Mapping[str, str], deadline_s: float | None,
                log: Callable[[str], None] | None = None) -> Session:
    """Run ``args`` with ``prompt`` on stdin in an empty directory (``_workdir``); the session's events read
    as they come. At the deadline the process group is ended (``timed_out``)."""
    session = Session()
    started = time.monotonic()
    with _workdir() as cwd:
        try:
            proc = subprocess.Popen(args, cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise ModelError(f"cannot start claude: {exc.strerror or exc}", "connection") from None
        err_chunks: list[bytes] = []

        def drain_stderr() -> None:
            for chunk in iter(lambda: proc.stderr.read(4096), b""):
                if sum(map(len, err_chunks)) < 65536:
                    err_chunks.append(chunk)

        import threading

        err_thread = threading.Thread(target=drain_stderr, daemon=True)
        err_thread.start()

        def feed_stdin() -> None:
            try:
                proc.stdin.write(prompt.encode())
                proc.stdin.close()
            except OSError:
                pass

        threading.Thread(target=feed_stdin, daemon=True).start()
        buffer = b""
        fd = proc.stdout.fileno()
        try:
            while True:
                wait = None if deadline_s is None else deadline_s - (time.monotonic() - started)
                if wait is not None and wait <= 0:
                    session.timed_out = True
                    break
                ready = select.select([fd], [], [], wait)[0]
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if session.startup_s is None and isinstance(event, dict) and event.get("type") == "system":
                        session.startup_s = time.monotonic() - started
                    before = session.turns
                    session.feed(event)
                    if log is not None and session.turns != before:
                        log(f"claude-code turn {session.turns}")
        finally:
            if proc.poll() is None:
                _end(proc)
            session.returncode = proc.wait()
            err_thread.join(timeout=2.0)
            session.stderr = b"".join(err_chunks).decode("utf-8", "replace")
    return session


@contextlib.contextmanager
def _workdir() -> Iterator[str]:
    """The session's working directory: one empty directory of mem's state, the same for every job
    (Claude Code keeps per-directory caches, ~/.cache/claude-cli-nodejs/<dir>/: one for mem, not one
    per job); a temp directory when the state directory cannot be had."""
    from mem.core.memdir.state import state_root

    try:
        path = os.path.join(state_root(), "claude-code")
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        with tempfile.TemporaryDirectory(prefix="mem-claude-") as tmp:
            yield tmp
        return
    yield path


def _end(proc: subprocess.Popen) -> None:
    """End the session's whole process group (its MCP relay included): TERM, then KILL."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


class ClaudeCodeBackend:
    """One-call jobs through ``claude -p`` with no tools; agent jobs use ``jobs.claude_agent``."""

    def __init__(self, config: Any, env: Mapping[str, str] | None = None):
        self.config = config
        self.env = env

    def limits(self):
        from mem.core.jobs.budget import limits_for

        return limits_for(self.config.model)

    def create(self, *, system: Any = "", messages: list[dict], max_tokens: int | None = None,
               timeout: float | None = None, output_config: dict | None = None, **_: Any) -> Reply:
        exe = find_executable(self.env)
        if exe is None:
            raise ConfigError("backend claude-code: no claude executable on PATH")
        if isinstance(system, list):
            system = "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        schema = ((output_config or {}).get("format") or {}).get("schema")
        if schema is not None:  # structured output: said in words (the caller parses and checks the JSON)
            system = (f"{system}\n\nAnswer with one JSON object and nothing else (no prose, no code fence), "
                      f"matching this JSON schema: {json.dumps(schema)}")
        args = argv(exe, model=self.config.model, system=system or "", max_turns=1, tools=[], mcp_config=None)
        session = run_session(args, prompt_text(messages), env=child_env(self.env, max_tokens or self.config.max_tokens),
                              deadline_s=timeout if timeout is not None else self.config.timeout)
        if session.timed_out:
            raise ModelError(f"claude did not answer within {timeout or self.config.timeout:g}s", "timeout")
        failure = _failure(session)
        if failure is not None:
            raise failure
        usage = _usage(session.result)
        return Reply([Block("text", text=session.text)] if session.text else [], usage,
                     "end_turn", session.model, usage_estimated=False)
