"""mem recall: the few memories relevant to a prompt, ready to inject."""

from __future__ import annotations

import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, resolve_dir
from mem.cli.model import backend_option
from mem.core.errors import ExitCode, UsageError
from mem.core.memdir.store import MemoryDir

from mem.core.hooks.recall import HOOK_DEADLINE, process_started


def _positive(ctx, param, value):
    if value is not None and value < 1:
        raise click.BadParameter("must be at least 1")
    return value


@click.command("recall", short_help="Surface the memories relevant to a prompt, as Claude Code does.")
@click.argument("query", nargs=-1, metavar="QUERY...")
@click.option("--limit", type=int, default=5, show_default=True, callback=_positive, metavar="N",
              help="Surface at most this many memories.")
@click.option("--offline", is_flag=True,
              help="Use the offline ranker alone; never ask a model.")
@backend_option
@click.option("--model", metavar="NAME",
              help="The selector model (default: MEM_MODEL_RECALL, MEM_MODEL, then ANTHROPIC_DEFAULT_SONNET_MODEL, then mem's default Sonnet).")
@click.option("--timeout", type=float, default=5.0, show_default=True, metavar="SECONDS",
              help="Give up on the model after this long and use the offline ranker.")
@click.option("--deadline", type=float, metavar="SECONDS",
              help=f"Surface the offline ranker's pick if the model has not answered this long after mem "
                   f"started (default with --hook: {HOOK_DEADLINE:g}).")
@click.option("--always-ask", is_flag=True,
              help="Ask the model even when the offline ranker is sure of its answer.")
@click.option("--recent-tools", "recent_tools", multiple=True, metavar="TOOLS",
              help="Tools the agent is using successfully, comma-separated; the selector skips their plain usage docs.")
@click.option("--session", "session_id", metavar="ID",
              help="Remember what this session surfaced: never repeat a memory, stop after 60 KiB.")
@click.option("--reset-session", "reset_id", metavar="ID",
              help="Forget what session ID surfaced (after a compaction) and exit.")
@click.option("--force", is_flag=True, help="Recall even for a one-word query.")
@click.option("--max-chars", type=int, callback=_positive, metavar="N",
              help="Shorten the surfaced memories so all of them fit in N characters (default with --hook: 9500).")
@click.option("--hook", is_flag=True,
              help="Read a hook payload on stdin (UserPromptSubmit: the prompt's memories; PreToolUse: the feedback that applies to the tool call) and print the hook JSON; never fails the prompt.")
@memory_dir_options
@format_options
@click.pass_context
def recall_cmd(ctx: click.Context, query: tuple[str, ...], limit: int, offline: bool, model: str | None,
               timeout: float, deadline: float | None, always_ask: bool, recent_tools: tuple[str, ...],
               session_id: str | None, reset_id: str | None, force: bool, max_chars: int | None, hook: bool,
               where: dict, fmt: str) -> None:
    """Surface the memories relevant to a prompt, as Claude Code injects them.

    A lexical ranker picks at most --limit memories from the manifest, and an
    unrelated query surfaces nothing. When an API key is set and the ranker
    is unsure (or with --always-ask), a model picks instead; if it fails or
    misses the deadline, the ranker's pick stands. Each memory comes wrapped
    in <system-reminder> with its path and age. QUERY is the words given, or
    - to read it from stdin. Exit status 1 means nothing surfaced.

    \b
    Example:
      mem recall how do we deploy to staging
      git log -1 --format=%B | mem recall --offline -
      mem recall --json --session "$ID" why is the auth rewrite needed | jq '.selected[].relpath'
    """
    from mem.cli.common import current_env

    if timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if deadline is not None and deadline <= 0:
        raise UsageError("--deadline must be more than 0 seconds")
    if hook and deadline is None:
        deadline = HOOK_DEADLINE
    until = None if deadline is None else process_started() + deadline
    tools = [t.strip() for arg in recent_tools for t in arg.split(",") if t.strip()]

    if reset_id is not None:
        if query or hook or session_id:
            raise UsageError("--reset-session takes no QUERY, --session or --hook")
        _reset(reset_id, where, fmt)
        return
    if hook:
        if query or fmt != "text":
            raise UsageError("--hook reads the prompt from the payload on stdin; it takes no QUERY, --json or --jsonl")
        _hook(where, current_env(), limit=limit, offline=offline, model=model, timeout=timeout, deadline=until,
              always_ask=always_ask, tools=tools, force=force, max_chars=max_chars, debug=current_env().debug)
        return

    if not query:
        raise UsageError("give a QUERY (or - to read it from stdin)")
    from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

    text = read_stream_text(sys.stdin) if query == ("-",) else " ".join(query)

    from mem.clients import memory_on
    from mem.core import recall

    resolution = resolve_dir(where, reading=True)
    result = recall.recall(MemoryDir(resolution.memory_dir), text, limit=limit, offline=offline, model=model, timeout=timeout,
                           deadline=until, always_ask=always_ask, recent_tools=tools, session_id=session_id,
                           force=force, max_chars=max_chars, enabled=memory_on(resolution)[0],
                           log=render.debug if current_env().debug else None)
    if current_env().debug:
        _debug_line("recall", result)
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    elif result.selected:
        render.out(result.context())
    _explain(result)
    if not result.selected:
        ctx.exit(ExitCode.NOT_FOUND)


def _explain(result) -> None:
    """One line on stderr when nothing surfaced or a fallback happened, so a person knows why."""
    if result.fallback_reason and result.fallback_reason != "no_credentials":
        render.info(f"model selector failed ({result.fallback_reason}); used the offline ranker: {result.fallback_detail}")
    if result.selected:
        return
    reasons = {
        "empty_prompt": "the query is empty",
        "one_word": "a one-word query is not recalled for (add --force)",
        "budget_exhausted": "this session already surfaced 60 KiB of memories (see --reset-session)",
        "no_memories": f"no memories in {result.memory_dir}",
        "all_surfaced": "every memory was already surfaced in this session",
        "auto_memory_disabled": "auto memory is off for this project (see `mem path`); nothing recalled",
    }
    render.info(reasons.get(result.skipped, "no memory is relevant to the query"))


def _debug_line(what: str, result) -> None:
    from mem.core.hooks.recall import debug_line

    render.info(debug_line(what, result))


def _reset(session_id: str, where: dict, fmt: str) -> None:
    from mem.core import recall

    if not session_id:
        raise UsageError("--reset-session needs a session id")
    path, existed = recall.reset_session(memory_of(where), session_id)
    data = {"session_id": session_id, "state_file": path, "reset": existed}
    if fmt != "text":
        render.out_record(data, fmt)
    render.info(f"session {session_id}: " + ("forgot what it surfaced" if existed else "nothing recorded"))


def _hook(where: dict, env, **options) -> None:
    """UserPromptSubmit → the memories for the prompt; PreToolUse → the feedback that applies to the tool call;
    SessionStart after a compaction → reset the session."""
    from mem.cli.common import read_hook_payload
    from mem.core.hooks import RECALL_EVENTS, recall as recall_hook

    payload = read_hook_payload(events=RECALL_EVENTS)
    result = recall_hook.on_prompt(payload, where, recall_hook.RecallOptions(**options), env)
    for message in result.messages:
        render.info(message)
    if result.output:
        render.out(result.output)
