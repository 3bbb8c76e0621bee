"""Run the ``mem`` command in this process, with the return shape of ``subprocess.run``.

The twin of running the installed executable: the same arguments, stdin, environment and
working directory go in; a ``CompletedProcess`` with text stdout, text stderr and the exit code
comes out. Nothing is swallowed: an exception that escapes the CLI's own edge fails the test.
Starting Python and importing click and the SDK once per call instead of once per test run is
what made the suite slow; a test whose point is the process boundary (hooks as the clients
call them, broken pipes, background jobs, signals, the zipapp) asks for a process instead
(the ``process`` marker, or ``run_mem_process``).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys


class _Stream(io.TextIOWrapper):
    """A text stream over bytes, as a pipe's would be: not a terminal, UTF-8, with a buffer."""

    def __init__(self, data: bytes = b""):
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", write_through=True)

    def close(self) -> None:  # a command that closes stdout must not lose what it wrote
        self.flush()

    def value(self) -> str:
        self.flush()
        raw = self.buffer.getvalue()
        # subprocess.run(text=True) reads with universal newlines: do the same
        return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace").read()


def run_in_process(argv: list[str], *, input: str | bytes | None = None, env: dict | None = None,
                   cwd: str | None = None) -> subprocess.CompletedProcess:
    """``mem ARGV...`` run here: ``env`` is the whole environment the command sees."""
    from mem.cli import cli

    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    stdin, stdout, stderr = _Stream(data), _Stream(), _Stream()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv = sys.argv
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update({k: str(v) for k, v in env.items()})
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        sys.argv = ["mem", *argv]
        try:
            code = cli.main(args=list(argv), prog_name="mem", complete_var="_MEM_COMPLETE", standalone_mode=False)
        except SystemExit as exc:  # a command that exits itself, as a process would
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["mem", *argv], int(code or 0), stdout.value(), stderr.value())
