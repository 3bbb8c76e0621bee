"""mem session: in-session notes that survive compaction."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import current_env, format_options
from mem.cli.model import backend_option, budget_option
from mem.core.errors import ExitCode, NotFoundError, UsageError


def _session_options(f):
    f = click.option("--session", "session_id", metavar="ID", envvar="CLAUDE_CODE_SESSION_ID",
                     help="The session (default: CLAUDE_CODE_SESSION_ID, or the transcript's).")(f)
    f = click.option("--project", metavar="PATH", type=click.Path(file_okay=False),
                     help="The session's working directory (default: the current directory).")(f)
    f = click.option("--file", "file_", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Use this notes file instead of Claude Code's location.")(f)
    return f


def _transcript_option(f):
    return click.option("--transcript", metavar="PATH", help="The session's transcript (JSONL; - for stdin).")(f)


@click.group("session")
def session_cmd() -> None:
    """Keep per-session notes (summary.md) that survive compaction.

    The notes live where Claude Code keeps them,
    <config home>/projects/<project>/<session>/session-memory/summary.md,
    with a fixed set of sections an update may fill but never restructure.

    \b
    Example:
      mem session init --session "$ID"
      mem session status --transcript ~/.claude/projects/-home-me-app/$ID.jsonl
      mem session compact --session "$ID"
    """


def _read_transcript(path: str | None):
    from mem.core import session, transcripts

    if path is None:
        return None
    if path == "-":
        return transcripts.parse_lines(sys.stdin.buffer).require_known("standard input")
    return session.read_transcript(path)


def _where(session_id, project, file_, transcript=None, transcript_path=None) -> tuple[str, str]:
    """(session id, notes path) from the options, falling back to the transcript's session."""
    from mem.core import session

    if not session_id and transcript is not None:
        session_id = transcript.session_id
    if not session_id and transcript_path and transcript_path != "-":
        session_id = os.path.splitext(os.path.basename(transcript_path))[0]
    if file_:
        return session_id or "-", os.path.abspath(file_)
    if not session_id:
        raise UsageError("which session? give --session ID (or --transcript, or set CLAUDE_CODE_SESSION_ID)")
    return session_id, session.notes_path(session_id, project)


@session_cmd.command("path")
@_session_options
def path_cmd(session_id, project, file_) -> None:
    """Print where the session's notes file is (or would be).

    \b
    Example:
      $EDITOR "$(mem session path --session "$ID")"
    """
    render.out(_where(session_id, project, file_)[1])


@session_cmd.command("init")
@_session_options
def init_cmd(session_id, project, file_) -> None:
    """Create the notes file from the template (leaves an existing one alone).

    The template is Claude Code's, or <config home>/session-memory/config/template.md.

    \b
    Example:
      mem session init --session "$ID"
    """
    from mem.core import session

    _, path = _where(session_id, project, file_)
    created = session.init(path, session.load_template())
    render.out(path)
    render.info("created the session notes" if created else "the session notes exist; left as they are")


@session_cmd.command("show")
@_session_options
def show_cmd(session_id, project, file_) -> None:
    """Print the session's notes.

    \b
    Example:
      mem session show --session "$ID" | less
    """
    _, path = _where(session_id, project, file_)
    from mem.core.session import read_notes

    try:
        render.out(read_notes(path), nl=False)
    except FileNotFoundError:
        raise NotFoundError(f"no session notes at {path}") from None


@session_cmd.command("status")
@_session_options
@_transcript_option
@format_options
def status_cmd(session_id, project, file_, transcript, fmt) -> None:
    """Report the token estimate and whether an update is due.

    The transcript is --transcript, else the session's own in the
    project's transcripts directory (<config home>/projects/<project>/ID.jsonl).

    Tokens: the transcript's last API usage plus chars/4 of what follows.
    Notes start at 10,000 tokens; an update is due after 5,000 more tokens
    and either 3 tool calls or a turn that ended without one.

    \b
    Example:
      mem session status --session "$ID" --json | jq .due
    """
    from mem.core import session

    if transcript is None:
        if not session_id:
            raise UsageError("which session? give --session ID or --transcript PATH (or set CLAUDE_CODE_SESSION_ID)")
        transcript = session.transcript_path(session_id, project)
        if not os.path.isfile(transcript):
            raise NotFoundError(f"no transcript for session {session_id} at {transcript}; give --transcript PATH")
    t = _read_transcript(transcript)
    sid, path = _where(session_id, project, file_, t, transcript)
    st = session.status(sid, path, t)
    if fmt == "text":
        render.out(f"session {st.session_id}: ~{st.tokens} tokens; "
                   f"{'update due' if st.due else 'no update due'} ({st.reason})")
        render.out(f"notes: {st.path}{'' if st.exists else ' (not created yet)'}")
    else:
        render.out_record(st.as_dict(), fmt)


@session_cmd.command("update")
@_session_options
@_transcript_option
@click.option("--if-due", is_flag=True, help="Run only when the thresholds say an update is due.")
@click.option("--hook", is_flag=True, help="Read a Stop hook payload on stdin; never fail the session.")
@backend_option
@click.option("--model", metavar="MODEL", help="Model for the note-taking agent (default: MEM_MODEL_SESSION, MEM_MODEL, else the newest Sonnet).")
@budget_option("session")
@format_options
@click.pass_context
def update_cmd(ctx, session_id, project, file_, transcript, if_due, hook, model, budget, fmt) -> None:
    """Bring the notes up to date with the conversation (uses a model).

    The agent may only edit summary.md. Afterwards every header and italic
    description line must be intact and in order, or the previous notes are
    put back and the command exits 4.

    \b
    Example:
      mem session update --if-due --transcript "$T"
    """
    from mem.core.jobs import session_update

    if hook:
        from mem.cli.common import read_hook_payload
        from mem.core.hooks.stop import on_stop_notes

        result = on_stop_notes(read_hook_payload(require=("session_id", "transcript_path")), file_, model=model,
                               budget=budget, env=current_env())
        for message in result.messages:
            render.info(message)
        return
    if transcript is None:
        raise UsageError("mem session update needs --transcript PATH (or --hook)")
    t = _read_transcript(transcript)
    sid, path = _where(session_id, project, file_, t, transcript)
    result = session_update.update(sid, path, t, model=model, if_due=if_due, budget=budget)
    data = result.as_dict()
    if fmt != "text":
        render.out_record(data, fmt)
    render.info(result.describe())
    if result.stopped_at_budget:
        ctx.exit(int(ExitCode.BUDGET))


@session_cmd.command("compact")
@_session_options
@click.option("--hook", is_flag=True, help="Read a PreCompact or SessionStart(compact) payload; print hook JSON.")
@format_options
def compact_cmd(session_id, project, file_, hook, fmt) -> None:
    """Print the notes cut for a compaction summary (8,000 characters a section).

    With --hook on SessionStart (source compact) the notes come back as the
    hook's additionalContext; on PreCompact nothing is printed and the
    session's update baseline is reset (the conversation is about to shrink).

    \b
    Example:
      mem session compact --session "$ID"
    """
    from mem.core import session

    if hook:
        from mem.cli.common import read_hook_payload
        from mem.core.hooks.compact import COMPACT_EVENTS, on_compact

        result = on_compact(read_hook_payload(events=COMPACT_EVENTS), file_, current_env())
        if result.output:
            render.out(result.output)
        return
    _, path = _where(session_id, project, file_)
    try:
        notes = session.read_notes(path)
    except FileNotFoundError:
        raise NotFoundError(f"no session notes at {path}") from None
    text, truncated = session.truncate_for_compact(notes)
    if fmt == "text":
        render.out(text, nl=not text.endswith("\n"))
        if truncated:
            render.info(f"some sections were cut; the full notes are at {path}")
    else:
        data = {"path": path, "content": text, "truncated": truncated}
        render.out_record(data, fmt)
