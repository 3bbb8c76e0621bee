"""The recall hook's flow: every decision `mem recall --hook` makes, in one place.

UserPromptSubmit → the memories for the prompt, rendered as the client reads them; SessionStart
after a compaction → the session may be shown its memories again; PreToolUse → the feedback
that applies to the tool call (hooks/tool.py). The caller reads the payload,
calls ``on_prompt`` (or ``on_session_start``) and prints the ``HookResult``: this module writes
to no stream. It imports no click, so the lean entry point (mem/entry.py) can call it directly.

uses: clients (memory_on), env (Env: variables and clock), hooks.payload (hook_resolution: clients.resolve_options), hooks.tool,
recall, memdir.store, record
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from mem.clients import memory_on
from mem.env import Env
from mem.core.hooks.payload import (  # noqa: F401 - HookResult: part of this flow's interface
    CONTEXT_LIMIT, NOT_READ, HookPayload, HookResult, escapes_context, hook_resolution, render_output)
from mem.core.record import Record

#: How long the hook holds a prompt, at most, waiting for the model (seconds since mem started).
HOOK_DEADLINE = 2.0


class RecallOptions(Record):
    """How to recall: `mem recall`'s options. ``deadline`` is a ``time.monotonic()`` instant or None."""

    limit: int = 5
    offline: bool = False
    model: str | None = None
    timeout: float = 5.0
    deadline: float | None = None
    always_ask: bool = False
    tools: Sequence[str] = ()
    force: bool = False
    max_chars: int | None = None
    debug: bool = False


def process_started() -> float:
    """When this process started, on the time.monotonic() clock: the hook's deadline counts the
    interpreter's start-up and imports too, which the client waited through as well."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as fh:
            start_ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now  # not Linux: counted from here, some 100 ms after the start
    return now - min(max(age, 0.0), 5.0)


def debug_line(what: str, result) -> str:
    """Which way the prompt was served (see recall.ROUTES), for MEM_DEBUG=1."""
    return (f"{what}: route={result.route} strategy={result.strategy} skipped={result.skipped} "
            f"selected={[s.relpath for s in result.selected]} fallback={result.fallback_reason} "
            f"duration={result.duration:.3f}s")


def on_session_start(payload: HookPayload, where: dict, env: Env | None = None) -> HookResult:
    """SessionStart: a compaction drops the surfaced memories from the context, so they may be shown again."""
    from mem.core import recall
    from mem.core.memdir.store import MemoryDir

    if payload.source == "compact" and payload.session_id:
        resolution = hook_resolution(where, payload, (env or Env.from_process()).environ)
        recall.reset_session(MemoryDir(resolution.memory_dir), payload.session_id)
    return HookResult()


def on_prompt(payload: HookPayload, where: dict, options: RecallOptions, env: Env | None = None) -> HookResult:
    """UserPromptSubmit: the memories relevant to the prompt, as the hook JSON the client reads.

    ``env``: the caller's environment (its variables, and its clock for the memories' ages and
    the session's record); the process's when None. Example, in a test::

        on_prompt(payload, {"dir": "/m"}, RecallOptions(offline=True), Env({"HOME": "/h"}, clock=lambda: 1.8e9))
    """
    from mem.core import recall
    from mem.core.memdir.store import MemoryDir

    env = env or Env.from_process()
    if payload.hook_event_name == "SessionStart":
        return on_session_start(payload, where, env)
    if payload.hook_event_name == "PreToolUse":
        from mem.core.hooks.tool import on_tool

        return on_tool(payload, where, options, env)
    resolution = hook_resolution(where, payload, env.environ)
    memory = MemoryDir(resolution.memory_dir)
    enabled, prompt = memory_on(resolution, env.environ)[0], payload.prompt or ""
    messages: list[str] = []
    tools = list(options.tools)
    exclude: set[str] = set()
    version = NOT_READ
    # The transcript is read only for a prompt recall will act on (qwen-code sends empty ones).
    wanted = enabled and recall.skip_reason(prompt, force=options.force) is None
    if wanted and payload.transcript_path and os.path.isfile(payload.transcript_path):
        try:
            facts = recall.transcript_facts(payload.transcript_path, payload.prompt, memory)
        except OSError as exc:
            messages.append(f"hook: cannot read the transcript: {exc.strerror or exc}")
        else:
            tools = tools or facts.recent_tools
            exclude, version = facts.touched, facts.version
    result = recall.recall(
        memory, prompt, limit=options.limit, offline=options.offline, model=options.model,
        timeout=options.timeout, deadline=options.deadline, always_ask=options.always_ask, recent_tools=tools,
        session_id=payload.session_id or None, exclude=exclude, force=options.force,
        max_chars=options.max_chars or CONTEXT_LIMIT, enabled=enabled, now_ms=int(env.clock() * 1000),
        log=(lambda line: messages.append(f"debug: {line}")) if options.debug else None, env=env.environ,
    )
    if options.debug:
        messages.append(debug_line("hook", result))
    # Where the client escapes tags they would arrive as &lt;...: plain text reads better there.
    wrapped = not (result.selected and escapes_context(payload, version))
    context = result.context() if wrapped else result.context("\n\n", wrapped=False)
    return HookResult(render_output("UserPromptSubmit", context), tuple(messages))
