"""A model job detached from the hook that asked for it: its own session, stdin from /dev/null, a log.

    child = spawn_extract(memory, transcript, None, session=sid, ...)   # {"pid", "log", ...}

The clients wait until a hook's stdout and stderr close, not until it exits:
the child holds neither, and the caller returns at once. A transcript read from
stdin is put in the spool first (the child reads it once, then removes it).

uses: memdir.store (atomic_write, MemoryDir)
"""

from __future__ import annotations

import os
import sys

from mem.core.errors import NotFoundError
from mem.core.memdir.store import MemoryDir

#: The background log is started afresh beyond this size (the previous one kept as .1).
LOG_MAX_BYTES = 1_000_000


def spool_dir(memory: MemoryDir) -> str:
    path = memory.state.extract_spool
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def is_spool(memory: MemoryDir, path: str) -> bool:
    return os.path.dirname(path) == memory.state.extract_spool


def take_spool(path: str) -> bytes:
    """A transcript the background parent read from stdin: read it once, then remove it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"no such transcript: {path}") from None
    os.unlink(path)
    return data


def spawn_extract(memory: MemoryDir, transcript: str | None, data: bytes | None, *, session, model, max_turns,
                  timeout, wait, no_queue, ignore_cursor, debug, project=None, budget=None) -> dict:
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
        fd, transcript = tempfile.mkstemp(prefix="stdin-", suffix=".jsonl", dir=spool_dir(memory))
        os.close(fd)
        atomic_write(transcript, data)
    args = ["extract", "--dir", memory.root, "--transcript", transcript, "--max-turns", str(max_turns),
            "--timeout", f"{timeout:g}"]
    if session:
        args += ["--session", session]
    if project:
        args += ["--project", project]
    if budget:
        args += ["--budget", budget]
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
