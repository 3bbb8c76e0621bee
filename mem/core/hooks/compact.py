"""The compaction flow of the session notes: every decision `mem session compact --hook` makes.

PreCompact: the conversation is about to shrink, so the session's update baseline starts from
zero again (nothing is printed). SessionStart after a compaction (source ``compact``): the
session's notes come back as the hook's additionalContext, neutralised so notes taken from a
transcript cannot close the client's reminder. Any other SessionStart: nothing. (Recall's own
reset after a compaction is ``hooks.recall.on_session_start``.) The caller reads the payload,
calls ``on_compact`` and prints the ``HookResult``.

uses: hooks.payload, env (Env), session, tags
"""

from __future__ import annotations

import os

from mem.core.hooks.payload import HookPayload, HookResult, render_output
from mem.env import Env

#: The events ``mem session compact --hook`` answers.
COMPACT_EVENTS = ("PreCompact", "SessionStart")


def on_compact(payload: HookPayload, notes_file: str | None = None, env: Env | None = None) -> HookResult:
    """PreCompact → reset the session's update baseline; SessionStart(compact) → the notes as context.

    ``notes_file``: the notes at this path instead of Claude Code's place for the session; ``env``:
    the caller's environment (where the session's state and notes are), the process's when None.
    """
    from mem.core import session

    environ = (env or Env.from_process()).environ
    if payload.hook_event_name == "PreCompact":
        session.reset_after_compaction(payload.session_id, environ)
        return HookResult()
    if payload.source != "compact":
        return HookResult()
    from mem.core.tags import neutralise  # notes from a transcript cannot close the client's reminder

    path = os.path.abspath(notes_file) if notes_file else session.notes_path(payload.session_id, payload.cwd, environ)
    return HookResult(render_output("SessionStart", neutralise(session.compact_context(path))))
