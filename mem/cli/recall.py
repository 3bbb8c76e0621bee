"""mem recall: the few memories relevant to a prompt, ready to inject."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, hook_where, memory_dir_options, memory_of, resolve_dir
from mem.core.errors import ExitCode, UsageError
from mem.core.memdir.store import MemoryDir

#: How long the hook holds a prompt, at most, waiting for the model (seconds since mem started).
HOOK_DEADLINE = 2.0


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
              help="Read a UserPromptSubmit hook payload on stdin and print the hook JSON; never fails the prompt.")
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
    from mem.cli import debug_enabled

    if timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if deadline is not None and deadline <= 0:
        raise UsageError("--deadline must be more than 0 seconds")
    if hook and deadline is None:
        deadline = HOOK_DEADLINE
    until = None if deadline is None else _started() + deadline
    tools = [t.strip() for arg in recent_tools for t in arg.split(",") if t.strip()]

    if reset_id is not None:
        if query or hook or session_id:
            raise UsageError("--reset-session takes no QUERY, --session or --hook")
        _reset(reset_id, where, fmt)
        return
    if hook:
        if query or fmt != "text":
            raise UsageError("--hook reads the prompt from the payload on stdin; it takes no QUERY, --json or --jsonl")
        _hook(where, limit=limit, offline=offline, model=model, timeout=timeout, deadline=until,
              always_ask=always_ask, tools=tools, force=force, max_chars=max_chars, debug=debug_enabled())
        return

    if not query:
        raise UsageError("give a QUERY (or - to read it from stdin)")
    from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

    text = read_stream_text(sys.stdin) if query == ("-",) else " ".join(query)

    from mem.core import recall

    resolution = resolve_dir(where, reading=True)
    result = recall.recall(MemoryDir(resolution.memory_dir), text, limit=limit, offline=offline, model=model, timeout=timeout,
                           deadline=until, always_ask=always_ask, recent_tools=tools, session_id=session_id,
                           force=force, max_chars=max_chars, debug=debug_enabled(), enabled=_enabled(resolution))
    if debug_enabled():
        _debug_line("recall", result)
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    elif result.selected:
        render.out(result.context())
    _explain(result)
    if not result.selected:
        ctx.exit(ExitCode.NOT_FOUND)


def _started() -> float:
    """When this process started, on the time.monotonic() clock: the deadline counts the
    interpreter's own start-up too, as the user waiting on the prompt does."""
    import time

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


def _enabled(resolution) -> bool:
    """Claude Code's auto-memory switches govern the directory its own rules chose, not one named
    with --dir or MEM_DIR, nor qwen-code's."""
    return resolution.auto_memory_enabled or resolution.layout != "claude"


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
    """Which way the prompt was served (see recall.ROUTES), for MEM_DEBUG=1."""
    render.info(f"{what}: route={result.route} strategy={result.strategy} skipped={result.skipped} "
                f"selected={[s.relpath for s in result.selected]} fallback={result.fallback_reason} "
                f"duration={result.duration:.3f}s")


def _reset(session_id: str, where: dict, fmt: str) -> None:
    from mem.core import recall

    if not session_id:
        raise UsageError("--reset-session needs a session id")
    path, existed = recall.reset_session(memory_of(where), session_id)
    data = {"session_id": session_id, "state_file": path, "reset": existed}
    if fmt != "text":
        render.out_record(data, fmt)
    render.info(f"session {session_id}: " + ("forgot what it surfaced" if existed else "nothing recorded"))


def _hook(where: dict, *, limit, offline, model, timeout, deadline, always_ask, tools, force, max_chars,
          debug) -> None:
    """UserPromptSubmit → the memories for the prompt; SessionStart after a compaction → reset the session."""
    from mem.core import hooks, recall

    payload = hooks.read_payload(events=("UserPromptSubmit", "SessionStart"))
    where = hook_where(where, payload)
    resolution = resolve_dir(where)
    memory = MemoryDir(resolution.memory_dir)
    root = memory.spelled

    if payload.hook_event_name == "SessionStart":
        # A compaction drops the surfaced memories from the context: they may be shown again.
        if payload.source == "compact" and payload.session_id:
            recall.reset_session(memory, payload.session_id)
        return
    enabled, prompt = _enabled(resolution), payload.prompt or ""
    exclude: set[str] = set()
    version = hooks.NOT_READ
    # The transcript is read only for a prompt recall will act on (qwen-code sends empty ones).
    wanted = enabled and recall.skip_reason(prompt, force=force) is None
    if wanted and payload.transcript_path and os.path.isfile(payload.transcript_path):
        try:
            facts = recall.transcript_facts(payload.transcript_path, payload.prompt, root)
        except OSError as exc:
            render.info(f"hook: cannot read the transcript: {exc.strerror or exc}")
        else:
            tools = tools or facts.recent_tools
            exclude, version = facts.touched, facts.version
    result = recall.recall(
        memory, prompt, limit=limit, offline=offline, model=model, timeout=timeout, deadline=deadline,
        always_ask=always_ask, recent_tools=tools, session_id=payload.session_id or None, exclude=exclude,
        force=force, max_chars=max_chars or hooks.CONTEXT_LIMIT, debug=debug, enabled=enabled,
    )
    if debug:
        _debug_line("hook", result)
    if result.selected and hooks.escapes_context(payload, version):  # tags would arrive escaped: plain text
        out = hooks.render_output("UserPromptSubmit", result.context("\n\n", wrapped=False))
    else:
        out = hooks.render_output("UserPromptSubmit", result.context())
    if out:
        render.out(out)
