"""Run ``mem`` in a child forked from the test process: a process of its own, without a Python start-up.

The child runs what the installed executable runs (``mem.entry.main``, so the recall hook takes its lean
path), with its own pid, file descriptors 0-2 on pipes, environment and working directory, and exits
with the command's status. For tests where a process matters but the interpreter's start-up and imports
do not: several writers at once, a hostile file that could block a reader forever (the time limit kills
the child, as ``subprocess.run(timeout=...)`` does). What only the real executable shows (imports,
start-up time, the console script itself, the zipapp) still needs ``run_mem_process``.

Example: forked.run(["scan", "--check"], env=dict(os.environ), timeout=30) -> CompletedProcess

``stdin`` (an open file or a descriptor) is the child's descriptor 0 itself, as ``subprocess.run(stdin=f)``
gives it (/dev/zero, a FIFO, a terminal), and ``stderr`` its descriptor 2 (then ``wait`` gives no stderr);
``preexec_fn`` runs in the child before the command, as subprocess's does (a resource limit); ``argv0`` is
the child's ``sys.argv[0]``, "mem" unless given: the console script's path where mem names itself (the
hook commands and the crontab line it writes). A limit on the address space counts the test process's
own mappings (about 190 MB here), which a fresh interpreter has not mapped: a bound a child keeps, a
fresh process keeps with room to spare.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time


def _child(argv: list[str], env: dict, cwd: str | None, argv0: str) -> int:
    os.environ.clear()
    os.environ.update({k: str(v) for k, v in env.items()})
    if cwd is not None:
        os.chdir(cwd)
    # stdio as Python's start-up makes it for pipes (UTF-8 mode's error handlers)
    sys.stdin = io.TextIOWrapper(io.open(0, "rb", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.open(1, "wb", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stderr = io.TextIOWrapper(io.open(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    sys.argv = [argv0, *argv]
    from mem.entry import main

    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


_preloaded = False
#: Caches mem fills on first use, from its own tables only (nothing of the environment): filled here, every
#: child starts with them, as the test process's own in-process runs do.
_WARM = (("mem.core.guards.secrets", "_compiled"), ("mem.core.guards.poison", "_prefilter"),
         ("mem.core.guards.poison", "_every"), ("mem.core.guards.poison", "_rule_starts"),
         ("mem.core.guards.poison", "_within_sentences"))


def _preload() -> None:
    """Import every module of mem once in the test process, so no child pays for an import (status: 0.9 s)."""
    global _preloaded
    if _preloaded:
        return
    import importlib
    import pkgutil

    import mem

    for info in pkgutil.walk_packages(mem.__path__, "mem."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional dependency this machine lacks: the child imports (or fails) as mem would
                pass
    # and the rule tables the guards compile on first use, once per process (the secret scanner's: 0.4 s)
    for module, name in _WARM:
        warm = getattr(sys.modules.get(module), name, None)
        if callable(warm):
            warm()
    _preloaded = True


class Forked:
    """``mem ARGV`` started in a forked child; ``wait`` gives a CompletedProcess (text stdout and stderr)."""

    def __init__(self, argv: list[str], *, input: str | bytes | None = None, env: dict | None = None,
                 cwd: str | None = None, stdin=None, stderr=None, preexec_fn=None, argv0: str | None = None):
        self.args = ["mem", *argv]
        env = dict(os.environ) if env is None else env
        _preload()
        pipes = [os.pipe() for _ in range(3)]
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the test
            code = 70
            try:
                for fd, (r, w) in enumerate(pipes):
                    os.dup2(r if fd == 0 else w, fd)
                for fd, given in ((0, stdin), (2, stderr)):
                    if given is not None:
                        os.dup2(given if isinstance(given, int) else given.fileno(), fd)
                for r, w in pipes:
                    os.close(r)
                    os.close(w)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                if preexec_fn is not None:
                    preexec_fn()
                code = _child(argv, env, cwd, argv0 or "mem")
            except BaseException:  # noqa: BLE001 - a child must not run on into the test runner
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code & 0xFF)
        self.pid = pid
        self.returncode: int | None = None
        (r0, w0), (r1, w1), (r2, w2) = pipes
        for fd in (r0, w1, w2):
            os.close(fd)
        self._out: list[bytes] = []
        self._err: list[bytes] = []
        data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
        self._threads = [threading.Thread(target=self._feed, args=(w0, data), daemon=True),
                         threading.Thread(target=self._drain, args=(r1, self._out), daemon=True),
                         threading.Thread(target=self._drain, args=(r2, self._err), daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _feed(fd: int, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:  # the command stopped reading (EPIPE): as subprocess.run, not an error here
            pass
        finally:
            os.close(fd)

    @staticmethod
    def _drain(fd: int, into: list[bytes]) -> None:
        with os.fdopen(fd, "rb") as f:
            while chunk := f.read1(1 << 16):
                into.append(chunk)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = 60) -> subprocess.CompletedProcess:
        """The child's end: its output once its pipes close. Past ``timeout`` it is killed and TimeoutExpired raised."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads[1:]:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                self.kill()
                os.waitpid(self.pid, 0)
                self.returncode = -signal.SIGKILL
                raise subprocess.TimeoutExpired(self.args, timeout, b"".join(self._out), b"".join(self._err))
        while self.poll() is None:  # pipes closed (or handed on), the child not yet gone
            if deadline is not None and time.monotonic() > deadline:
                self.kill()
                os.waitpid(self.pid, 0)
                self.returncode = -signal.SIGKILL
                raise subprocess.TimeoutExpired(self.args, timeout, b"".join(self._out), b"".join(self._err))
            time.sleep(0.005)
        return subprocess.CompletedProcess(self.args, self.returncode, _text(b"".join(self._out)),
                                           _text(b"".join(self._err)))


def _text(raw: bytes) -> str:
    """As subprocess.run(text=True) reads a pipe: UTF-8 (the tests' locale) with universal newlines."""
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="strict").read()


def run(argv: list[str], *, input: str | bytes | None = None, env: dict | None = None, cwd: str | None = None,
        timeout: float | None = 60, stdin=None, preexec_fn=None, argv0: str | None = None) -> subprocess.CompletedProcess:
    """``mem ARGV`` in a forked child, to its end: the shape of ``subprocess.run(capture_output=True, text=True)``."""
    return Forked(argv, input=input, env=env, cwd=cwd, stdin=stdin, preexec_fn=preexec_fn, argv0=argv0).wait(timeout)
