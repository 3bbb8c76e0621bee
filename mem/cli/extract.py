"""mem extract: turn the new part of a transcript into saved memories."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.cli.model import backend_option
from mem.core.errors import NotFoundError, UsageError
from mem.core.memdir.store import MemoryDir
from mem.core.wording import plural

#: The background log is started afresh beyond this size (the previous one kept as .1).
LOG_MAX_BYTES = 1_000_000


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
@memory_dir_options
@format_options
def extract_cmd(transcript: str | None, session: str | None, ignore_cursor: bool, hook: bool, background: bool,
                wait: bool, no_queue: bool, model: str | None, max_turns: int, timeout: float,
                where: dict, fmt: str) -> None:
    """Save what a conversation taught about the user and the project as memories.

    Reads the messages after the cursor of the session, asks the model to save
    what is worth keeping (user, feedback, project, reference), and moves the
    cursor. Skips the model when the agent already wrote memory itself.

    \b
    Example:
      mem extract --transcript ~/.claude/projects/-home-me-app/SESSION.jsonl
      mem extract --json | jq .saved
      # ~/.claude/settings.json, hooks.Stop: mem extract --hook --background
    """
    from mem.cli import debug_enabled
    from mem.clients import memory_on
    from mem.core.jobs import llm
    from mem.core.jobs.extract import ExtractRequest, ExtractResult, extract

    if wait and no_queue:
        raise UsageError("--wait and --no-queue are mutually exclusive")
    if hook and transcript:
        raise UsageError("--hook takes the transcript from the hook payload; drop --transcript")
    debug = debug_enabled()
    if hook:
        from mem.core.hooks import read_payload
        from mem.core.hooks import hook_where

        payload = read_payload(require=("session_id", "transcript_path"))
        transcript = payload.transcript_path
        session = session or payload.session_id
        where = hook_where(where, payload)
    resolution = resolve_dir(where)
    memory = MemoryDir(resolution.memory_dir)
    if hook and not memory_on(resolution)[0]:  # the client's own switch; an explicit `mem extract` runs
        result = ExtractResult(memory.root, transcript or "-", session, skipped="auto_memory_disabled")
        _report(result, fmt="text", hook=True)
        return

    llm.model_config("extract", model)  # no credentials: exit 3 before anything is read or written

    data = None
    if transcript == "-":
        from mem.core.memdir.files import MAX_TRANSCRIPT_STDIN_BYTES, read_stream

        data = read_stream(sys.stdin.buffer, MAX_TRANSCRIPT_STDIN_BYTES)
        transcript = None
    elif transcript is None:
        transcript = _newest_transcript(resolution.transcripts_dir)
        if not hook:
            render.info(f"reading {transcript}")
    else:
        transcript = os.path.abspath(os.path.expanduser(transcript))
        if _is_spool(memory, transcript):
            data = _take_spool(transcript)
            transcript = None
        elif not os.path.isfile(transcript):
            raise NotFoundError(f"no such transcript: {transcript}")

    if background:
        child = _spawn_background(memory, transcript, data, session=session, model=model, max_turns=max_turns,
                                  timeout=timeout, wait=wait, no_queue=no_queue, ignore_cursor=ignore_cursor,
                                  debug=debug, project=resolution.project_root)
        if not hook:
            if fmt == "text":
                render.info(f"extracting in the background (pid {child['pid']}); log: {child['log']}")
            else:
                render.out_record(child, fmt)
        return

    request = ExtractRequest(memory, transcript=transcript, data=data, session=session, model=model,
                             max_turns=max_turns, timeout=timeout, ignore_cursor=ignore_cursor,
                             project=resolution.project_root)
    log = render.debug if debug else None
    result = extract(request, wait=wait, queue=not no_queue, log=log, debug=debug)
    _report(result, fmt=fmt, hook=hook, max_turns=max_turns, timeout=timeout)


def _report(result, *, fmt: str, hook: bool, max_turns: int = 5, timeout: float = 300) -> None:
    if fmt != "text" and not hook:  # a Stop hook's stdout is read by the client: keep it empty
        render.out_record(result.as_dict(), fmt)
    for line in _describe(result, max_turns=max_turns, timeout=timeout):
        render.info(line)
    for t in result.trailing:
        for line in _describe(t, max_turns=max_turns, timeout=timeout):
            render.info(f"queued run for session {t.session or t.transcript}: {line}")


def _describe(result, *, max_turns: int, timeout: float) -> list[str]:
    if result.error:
        return [f"failed: {result.error}"]
    if result.queued:
        holder = result.holder or {}
        who = f" (pid {holder['pid']})" if holder.get("pid") else ""
        return [f"an extraction is already running on this memory directory{who}; this one will run after it"]
    if result.skipped == "no_new_messages":
        return ["nothing new since the last extraction"]
    if result.skipped == "agent_wrote_memory":
        files = f" ({', '.join(result.agent_wrote)})" if result.agent_wrote else ""
        return [f"skipped: the agent wrote memory itself in these messages{files}; the cursor moved on"]
    if result.skipped == "auto_memory_disabled":
        return ["skipped: auto memory is turned off for this project"]
    lines = []
    saved = result.saved
    if saved:
        lines.append(f"Saved {plural(len(saved), 'memory', 'memories')}: {', '.join(saved)}")
    else:
        lines.append(f"No new memories ({plural(result.messages, 'message', 'messages')} read, "
                     f"{plural(result.turns, 'turn', 'turns')})")
    if result.windows > 1:
        lines.append(f"the conversation did not fit one request: read in {result.windows} windows, in order")
    if result.indexed:
        lines.append(f"added {plural(len(result.indexed), 'pointer', 'pointers')} to MEMORY.md")
    if result.refused:
        lines.append(f"{plural(result.refused, 'tool call was', 'tool calls were')} refused (--debug shows them)")
    if result.stop_reason == "max_turns":
        lines.append(f"the turn budget ({max_turns}) ran out before the model finished")
    elif result.stop_reason == "deadline":
        lines.append(f"the time budget ({timeout:g}s) ran out before the model finished")
    elif result.stop_reason == "budget":
        lines.append("the model's context window filled up before it finished; it was asked to wrap up")
    return lines


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


# --- background ----------------------------------------------------------------------------------


def _spool_dir(memory: MemoryDir) -> str:
    path = memory.state.extract_spool
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _is_spool(memory: MemoryDir, path: str) -> bool:
    return os.path.dirname(path) == memory.state.extract_spool


def _take_spool(path: str) -> bytes:
    """A transcript the background parent read from stdin: read it once, then remove it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"no such transcript: {path}") from None
    os.unlink(path)
    return data


def _spawn_background(memory: MemoryDir, transcript: str | None, data: bytes | None, *, session, model, max_turns,
                      timeout, wait, no_queue, ignore_cursor, debug, project=None) -> dict:
    """Start ``mem extract`` detached: own session, stdin from /dev/null, output to the log.

    The clients wait until a hook's stdout and stderr close, not until it
    exits; the child must hold neither, and this process returns at once.
    """
    import subprocess
    import tempfile
    import time

    import mem
    from mem.core.memdir.store import atomic_write

    if data is not None:
        fd, transcript = tempfile.mkstemp(prefix="stdin-", suffix=".jsonl", dir=_spool_dir(memory))
        os.close(fd)
        atomic_write(transcript, data)
    args = ["extract", "--dir", memory.root, "--transcript", transcript, "--max-turns", str(max_turns),
            "--timeout", f"{timeout:g}"]
    if session:
        args += ["--session", session]
    if project:
        args += ["--project", project]
    if model:
        args += ["--model", model]
    if wait:
        args.append("--wait")
    if no_queue:
        args.append("--no-queue")
    if ignore_cursor:
        args.append("--all")
    if debug:
        args.insert(0, "--debug")
    logs = memory.state.job_logs
    os.makedirs(logs, mode=0o700, exist_ok=True)
    log_path = os.path.join(logs, "extract.log")
    try:
        if os.path.getsize(log_path) > LOG_MAX_BYTES:
            os.replace(log_path, log_path + ".1")
    except OSError:
        pass
    # The package's parent on PYTHONPATH lets `python -m mem` find this very mem (and, in a
    # zipapp, its dependencies next to it), whatever started us.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mem.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (package_parent, env.get("PYTHONPATH"))))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(log_path, "ab") as log:
        log.write(f"--- {stamp} mem extract (from pid {os.getpid()}): {transcript}\n".encode())
        log.flush()
        child = subprocess.Popen(
            [sys.executable, "-m", "mem", *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            env=env,
        )
    return {"background": True, "pid": child.pid, "log": log_path, "memory_dir": memory.root,
            "transcript": transcript, "session": session}
