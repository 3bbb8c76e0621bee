"""The Stop hook's flow: every decision `mem extract --hook` makes, in one place.

A session's turn ended: the new part of its transcript may hold facts worth keeping. The
caller reads the payload, calls ``on_stop`` and writes the ``HookResult``'s messages to
stderr (its stdout stays empty: the client reads it). Here: which memory directory (the
payload's cwd), whether extraction applies there (Claude Code's auto-memory switches), the
credentials (once, before anything is read or started), the session (the payload's, unless
``--session`` names one), and whether the extraction runs here or detached. ``on_stop_notes`` is
the same event for the session notes (`mem session update --hook`): updated when due.

uses: hooks.payload (hook_resolution: clients.resolve_options), env (Env), jobs.llm (credentials), jobs.extract, jobs.background,
jobs.session_update, session, memdir.store
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from mem.core.hooks.payload import HookPayload, HookResult, hook_resolution
from mem.env import Env


class StopOptions(NamedTuple):
    """How to extract: `mem extract`'s options that a Stop hook's command line may carry."""

    session: str | None = None  # the payload's session unless given
    background: bool = False
    wait: bool = False
    no_queue: bool = False
    model: str | None = None
    max_turns: int = 5
    timeout: float = 300
    ignore_cursor: bool = False
    budget: str | None = None  # --budget as given (MEM_BUDGET_EXTRACT and the default otherwise)
    debug: bool = False


def on_stop(payload: HookPayload, where: dict, options: StopOptions = StopOptions(), *,
            log: Callable[[str], None] | None = None, env: Env | None = None) -> HookResult:
    """Stop: extract the new part of the payload's transcript (or start that in the background).

    Raises MemError (ConfigError without credentials, NotFoundError for a missing
    transcript); the caller turns it into its one-line message, exit 0. ``env``: the caller's
    environment, whose variables resolve the directory, its switch and the credentials (the
    process's when None; the extraction itself still reads the process's).
    """
    from mem.core.errors import NotFoundError
    from mem.core.jobs import llm
    from mem.core.jobs.extract import ExtractRequest, ExtractResult, describe, extract
    from mem.core.memdir.store import MemoryDir

    environ = (env or Env.from_process()).environ
    resolution = hook_resolution(where, payload, environ)
    memory = MemoryDir(resolution.memory_dir)
    session = options.session or payload.session_id
    transcript = payload.transcript_path
    from mem.clients import memory_on

    if not memory_on(resolution, environ)[0]:  # the client's own switch; an explicit `mem extract` runs
        skipped = ExtractResult(memory.root, transcript or "-", session, skipped="auto_memory_disabled")
        return HookResult(messages=tuple(describe(skipped)))

    llm.model_config("extract", options.model, environ)  # no credentials: ConfigError before anything is read or started

    transcript = os.path.abspath(os.path.expanduser(transcript or ""))
    if not os.path.isfile(transcript):
        raise NotFoundError(f"no such transcript: {transcript}")
    if options.background:
        from mem.core.jobs.background import spawn_extract

        spawn_extract(memory, transcript, None, session=session, model=options.model, max_turns=options.max_turns,
                      timeout=options.timeout, wait=options.wait, no_queue=options.no_queue,
                      ignore_cursor=options.ignore_cursor, debug=options.debug, project=resolution.project_root,
                      budget=options.budget)
        return HookResult()

    request = ExtractRequest(memory, transcript=transcript, session=session, model=options.model,
                             max_turns=options.max_turns, timeout=options.timeout,
                             ignore_cursor=options.ignore_cursor, project=resolution.project_root,
                             budget=options.budget)
    result = extract(request, wait=options.wait, queue=not options.no_queue, log=log, debug=options.debug)
    words = dict(max_turns=options.max_turns, timeout=options.timeout)
    messages = describe(result, **words)
    for t in result.trailing:
        messages += [f"queued run for session {t.session or t.transcript}: {line}" for line in describe(t, **words)]
    return HookResult(messages=tuple(messages))


def on_stop_notes(payload: HookPayload, notes_file: str | None = None, *, model: str | None = None,
                  budget: str | None = None, env: Env | None = None) -> HookResult:
    """Stop, for the session notes: bring the payload's session's notes up to date when an update is due.

    ``notes_file``: the notes at this path instead of Claude Code's place for the session;
    ``budget``: ``--budget`` as given (MEM_BUDGET_SESSION and the default otherwise); ``env``: the
    caller's environment, where the notes are (the process's when None).
    """
    from mem.core import session
    from mem.core.jobs import session_update

    environ = (env or Env.from_process()).environ
    transcript = session.read_transcript(payload.transcript_path or "")
    path = (os.path.abspath(notes_file) if notes_file
            else session.notes_path(payload.session_id, payload.cwd, environ))
    result = session_update.update(payload.session_id, path, transcript, model=model, if_due=True,
                                   budget=budget)
    return HookResult(messages=(result.describe(),))
