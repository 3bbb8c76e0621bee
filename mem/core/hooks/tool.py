"""The PreToolUse flow of the recall hook: the saved feedback that applies to a tool call, before it runs.

Prompt recall runs on the prompt's words; the mistake a correction was about ("never
force-push") happens later, in a tool call whose words the prompt never had. Before a
tool runs, Claude Code (2.1.330) and qwen-code read ``hookSpecificOutput.additionalContext``
from a PreToolUse hook and add it to the turn. ``on_tool`` picks the memories with
mem/core/toolmatch.py (no model on this path), surfaces each at most once per session per
tool pattern (``shell:git push``, ``edit:migrations/versions``), in the session's recall
state and within its budget, and renders them as prompt recall does. A call that matches
nothing (most do) costs a manifest scan and the cached triggers, and writes nothing.

uses: clients (memory_on), env (Env), hooks.payload (hook_resolution: clients.resolve_options), toolmatch, recall (session state,
surfacing), memdir.manifest, memdir.state
"""

from __future__ import annotations

from mem.clients import memory_on
from mem.env import Env
from mem.core.hooks.payload import CONTEXT_LIMIT, HookPayload, HookResult, escapes_context, hook_resolution, render_output


def tool_label(tool_name: str) -> str:
    """How the reminder names the call."""
    return "".join(c for c in tool_name if c.isalnum() or c in "_-")[:40] or "tool"


def on_tool(payload: HookPayload, where: dict, options, env: Env | None = None) -> HookResult:
    """PreToolUse: the feedback (and project) memories that apply to this call, as the hook JSON the client reads.

    ``options``: the hook's ``RecallOptions`` (``max_chars`` and ``debug`` are read); ``env``: the
    caller's environment and clock (the process's when None), as for ``hooks.recall.on_prompt``."""
    import os

    from mem.core import recall, toolmatch
    from mem.core.memdir import manifest
    from mem.core.memdir.state import cache_dir
    from mem.core.memdir.store import MemoryDir

    env = env or Env.from_process()
    call = toolmatch.read_call(payload.tool_name, payload.tool_input, payload.cwd)
    if call is None:
        return HookResult()
    resolution = hook_resolution(where, payload, env.environ)
    root = resolution.memory_dir
    if not memory_on(resolution, env.environ)[0] or not os.path.isdir(root):
        return HookResult()
    memory = MemoryDir(root)
    cache = cache_dir(memory)
    headers = manifest.scan(root, cache_dir=cache)
    hits = toolmatch.select(call, toolmatch.memory_triggers(headers, cache))
    messages: list[str] = []
    if options.debug:
        messages.append(f"hook: tool={payload.tool_name} pattern={call.pattern} matched={[k for k, _ in hits]}")
    if not hits:
        return HookResult("", tuple(messages))
    by_rel = {h.relpath: h for h in headers}
    now = int(env.clock() * 1000)
    max_chars = options.max_chars or CONTEXT_LIMIT
    with recall.session(memory, payload.session_id or None) as state:
        shown = {(row.get("relpath"), row.get("tool_pattern")) for row in state.surfaced} if state else set()
        room = recall.MAX_SESSION_BYTES - (state.surfaced_chars if state else 0)
        items = []
        for rel, score in hits:
            if (rel, call.pattern) in shown:
                continue  # once per session per tool pattern
            h = by_rel[rel]
            try:
                read = recall.read_for_surfacing(h.path)
            except OSError:
                continue
            items.append(recall.Surfaced(h.path, h.relpath, h.mtime_ms, h.type, h.description, score,
                                         recall.memory_header(h.path, h.mtime_ms, now), read.content,
                                         read.truncated, recall.memory_age_days(h.mtime_ms, now)))
        if room <= 0:
            items = []  # the session's recall budget is spent: prompt recall stops too
        elif items:
            items = recall.fit_to_budget(items, min(max_chars, room))
        if state is not None and items:
            for item in items:
                state.add(item, now)
                state.surfaced[-1]["tool_pattern"] = call.pattern
            recall._save_state_if_possible(state, memory)
    if options.debug:
        messages.append(f"hook: surfaced={[i.relpath for i in items]}")
    if not items:
        return HookResult("", tuple(messages))
    wrapped = not escapes_context(payload)
    lead = f"Saved feedback that applies to this {tool_label(payload.tool_name)} call:"
    blocks = ("\n" if wrapped else "\n\n").join(recall.hook_block(i, wrapped) for i in items)
    return HookResult(render_output("PreToolUse", f"{lead}\n{blocks}"), tuple(messages))
