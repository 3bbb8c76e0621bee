"""An agent job run through Claude Code: ``agent.run_agent``'s contract, one ``claude -p`` session.

``runner.Job.agent`` calls this instead of ``agent.run_agent`` when the job's backend is
claude-code: Claude Code runs the loop, mem serves the job's ``ToolBox`` to it over MCP
(``backends.mcp_tools``), and the run comes back as the same ``AgentResult`` (the files the box
wrote, its tool calls, the session's usage, why it stopped: end_turn, max_turns, deadline, error).

uses: errors, agent (AgentResult), llm (Usage), backends.claude_code, backends.mcp_tools
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mem.core.errors import ConfigError
from mem.core.jobs.backends.claude_code import (_failure, _usage, argv, child_env, find_executable, prompt_text,
                                                 run_session)


def run_agent(model: Any, *, system: str, messages: str | list[dict], toolbox: Any, max_turns: int = 5,
              deadline_s: float | None = None, log: Callable[[str], None] | None = None,
              env: Mapping[str, str] | None = None):
    """``agent.run_agent`` through one Claude Code session: the same AgentResult, the same tools."""
    from mem.core.jobs.agent import AgentResult
    from mem.core.jobs.backends.mcp_tools import ToolServer
    from mem.core.jobs.llm import Usage

    started = time.monotonic()
    exe = find_executable(env)
    if exe is None:
        raise ConfigError("backend claude-code: no claude executable on PATH")
    toolbox.deadline = None if deadline_s is None else started + deadline_s
    calls_before = len(toolbox.calls)
    usage = Usage()
    prompt = prompt_text(messages)
    error = error_kind = None
    with ToolServer(toolbox) as server:
        args = argv(exe, model=model.config.model, system=system, max_turns=max_turns,
                    tools=[t.name for t in toolbox.tools], mcp_config=server.mcp_config())
        if log is not None:
            log(f"claude-code: one session for up to {max_turns} turns")
        session = run_session(args, prompt, env=child_env(env, model.config.max_tokens), deadline_s=deadline_s,
                              log=log)
    if getattr(model, "log", None) is not None:
        model.log(f"claude-code session {time.monotonic() - started:.2f}s "
                  f"(start-up {session.startup_s if session.startup_s is None else round(session.startup_s, 2)}s) "
                  f"turns={session.turns} model={session.model or model.config.model}")
    found = _usage(session.result)
    if found is not None:
        usage.add(found)
        usage.calls = max(session.turns, 1)
        model.usage.add(found)
    failure = _failure(session)
    if session.timed_out:
        stop_reason = "deadline"
    elif failure is not None:
        stop_reason, error, error_kind = "error", str(failure), failure.kind
    elif (session.result or {}).get("subtype") == "error_max_turns":
        stop_reason = "max_turns"
    else:
        stop_reason = (session.result or {}).get("stop_reason") or "end_turn"
    history = [{"role": "user", "content": prompt}] if isinstance(messages, str) else [dict(m) for m in messages]
    if session.text:
        history.append({"role": "assistant", "content": [{"type": "text", "text": session.text}]})
    return AgentResult(text=session.text, turns=session.turns, stop_reason=stop_reason,
                       created=list(toolbox.created), updated=list(toolbox.updated), deleted=list(toolbox.deleted),
                       tool_calls=toolbox.calls[calls_before:], usage=usage,
                       duration_s=time.monotonic() - started, error=error, error_kind=error_kind, messages=history)
