"""mem extract: turn the new part of a transcript into saved memories."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir, warn_if_history_off
from mem.cli.model import backend_option, budget_option
from mem.core.errors import NotFoundError, UsageError
from mem.core.memdir.store import MemoryDir


@click.command("extract", short_help="Save what a conversation taught as memories.")
@click.option("--transcript", metavar="PATH",
              help="The transcript to read, - for stdin: Claude Code or qwen-code JSONL, or {role, content} lines "
                   "(default: the project's newest transcript).")
@click.option("--session", metavar="ID",
              help="The session whose cursor to use (default: the transcript's session id, else its file name).")
@click.option("--all", "ignore_cursor", is_flag=True, help="Ignore the cursor: consider the whole transcript.")
@click.option("--hook", is_flag=True,
              help="Read a Stop hook payload (session_id, transcript_path, cwd) on stdin; print nothing on stdout "
                   "and exit 0 whatever happens.")
@click.option("--background", is_flag=True,
              help="Detach and run in the background; messages go to logs/extract.log in the state directory.")
@click.option("--wait", is_flag=True, help="If an extraction is running on this memory directory, wait for it, then run.")
@click.option("--no-queue", is_flag=True,
              help="If an extraction is running, exit 5 instead of queueing this one to run after it.")
@backend_option
@click.option("--model", metavar="NAME", help="The model to use (default: MEM_MODEL_EXTRACT, MEM_MODEL, else the newest Sonnet).")
@click.option("--max-turns", type=click.IntRange(1, 50), default=5, show_default=True, metavar="N",
              help="Model turns each run may take (a long conversation takes one run per window).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS",
              help="Wall-clock budget for the model's work in each run.")
@budget_option("extract")
@memory_dir_options
@format_options
def extract_cmd(transcript: str | None, session: str | None, ignore_cursor: bool, hook: bool, background: bool,
                wait: bool, no_queue: bool, model: str | None, max_turns: int, timeout: float,
                budget: str | None, where: dict, fmt: str) -> None:
    """Save what a conversation taught about the user and the project as memories.

    Reads the messages after the cursor of the session, asks the model to save
    what is worth keeping (user, feedback, project, reference), and moves the
    cursor. Skips the model when the agent already wrote memory itself.
    A run stops cleanly at its --budget, between windows of a long
    conversation or before a request that would go over: what it saved is
    kept, the cursor is after the last window it finished, and it exits 6;
    the next run goes on from there.

    \b
    Example:
      mem extract --transcript ~/.claude/projects/-home-me-app/SESSION.jsonl
      mem extract --json | jq .saved
      # ~/.claude/settings.json, hooks.Stop: mem extract --hook --background
    """
    from mem.cli.common import current_env
    from mem.core.jobs import background as background_job
    from mem.core.jobs import llm
    from mem.core.jobs.extract import ExtractRequest, extract

    if wait and no_queue:
        raise UsageError("--wait and --no-queue are mutually exclusive")
    if hook and transcript:
        raise UsageError("--hook takes the transcript from the hook payload; drop --transcript")
    debug = current_env().debug
    log = render.debug if debug else None
    if hook:
        from mem.cli.common import read_hook_payload
        from mem.core.hooks.stop import StopOptions, on_stop

        payload = read_hook_payload(require=("session_id", "transcript_path"))
        options = StopOptions(session=session, background=background, wait=wait, no_queue=no_queue, model=model,
                              max_turns=max_turns, timeout=timeout, ignore_cursor=ignore_cursor, debug=debug, budget=budget)
        for message in on_stop(payload, where, options, log=log, env=current_env()).messages:
            render.info(message)
        return
    resolution = resolve_dir(where)
    memory = MemoryDir(resolution.memory_dir)

    llm.model_config("extract", model)  # no credentials: exit 3 before anything is read or written
    from mem.core.jobs.runner import spend_for

    spend_for("extract", budget)  # a bad MEM_BUDGET_EXTRACT: exit 3 before anything is written

    data = None
    if transcript == "-":
        from mem.core.memdir.files import MAX_TRANSCRIPT_STDIN_BYTES, read_stream

        data = read_stream(sys.stdin.buffer, MAX_TRANSCRIPT_STDIN_BYTES)
        transcript = None
    elif transcript is None:
        transcript = _newest_transcript(resolution.transcripts_dir)
        render.info(f"reading {transcript}")
    else:
        transcript = os.path.abspath(os.path.expanduser(transcript))
        if background_job.is_spool(memory, transcript):
            data = background_job.take_spool(transcript)
            transcript = None
        elif not os.path.isfile(transcript):
            raise NotFoundError(f"no such transcript: {transcript}")

    if background:
        child = background_job.spawn_extract(memory, transcript, data, session=session, model=model,
                                             max_turns=max_turns, timeout=timeout, wait=wait, no_queue=no_queue,
                                             ignore_cursor=ignore_cursor, debug=debug, project=resolution.project_root,
                                             budget=budget)
        if fmt == "text":
            render.info(f"extracting in the background (pid {child['pid']}); log: {child['log']}")
        else:
            render.out_record(child, fmt)
        return

    request = ExtractRequest(memory, transcript=transcript, data=data, session=session, model=model,
                             max_turns=max_turns, timeout=timeout, ignore_cursor=ignore_cursor,
                             project=resolution.project_root, budget=budget)
    result = extract(request, wait=wait, queue=not no_queue, log=log, debug=debug)
    _report(result, fmt=fmt, max_turns=max_turns, timeout=timeout)
    warn_if_history_off(memory, bool(result.created or result.updated))
    if result.stopped_at_budget:
        from mem.core.errors import ExitCode

        click.get_current_context().exit(int(ExitCode.BUDGET))


def _report(result, *, fmt: str, max_turns: int = 5, timeout: float = 300) -> None:
    from mem.core.jobs.extract import describe

    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    for line in describe(result, max_turns=max_turns, timeout=timeout):
        render.info(line)
    for t in result.trailing:
        for line in describe(t, max_turns=max_turns, timeout=timeout):
            render.info(f"queued run for session {t.session or t.transcript}: {line}")


def _newest_transcript(transcripts_dir: str | None) -> str:
    newest = None
    if transcripts_dir and os.path.isdir(transcripts_dir):
        with os.scandir(transcripts_dir) as it:
            for e in it:
                if e.name.endswith(".jsonl") and e.is_file():
                    m = e.stat().st_mtime
                    if newest is None or m > newest[0]:
                        newest = (m, e.path)
    if newest is None:
        where = f" in {transcripts_dir}" if transcripts_dir else ""
        raise UsageError(f"no transcript found{where}; give --transcript PATH (or - for stdin)")
    return newest[1]
