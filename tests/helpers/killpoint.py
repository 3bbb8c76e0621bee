"""Run ``mem`` in a forked child that dies (``os._exit(137)``) at its Nth file-system step.

Example: killed_at(5, ["undo"], env) -> 137 (killed) or the command's exit code (it made fewer steps).

A step is a call to os.replace, os.rename, os.unlink (os.remove), os.link, os.fsync, or a process
spawned (subprocess.Popen): the child exits just before making the Nth one, as if kill -9 had landed
there. The standard library is wrapped in the child only, never mem's own code; the child is forked
from the test process (mem already imported), so a run costs its steps, not a Python start-up.
``steps`` runs the command to its end and says how many steps it made, so a harness kills at 1..that.
"""

from __future__ import annotations

import os
import subprocess

KILLED = 137
_CALLS = ("replace", "rename", "unlink", "remove", "link", "fsync")


def _arm(at: int, counter: list[int]) -> None:
    """Wrap the stdlib's steps in this (child) process: exit hard at step ``at`` (0: never), counting each."""

    def step() -> None:
        counter[0] += 1
        if counter[0] == at:
            os._exit(KILLED)

    def wrap(fn):
        def stepped(*args, **kwargs):
            step()
            return fn(*args, **kwargs)

        return stepped

    for name in _CALLS:
        setattr(os, name, wrap(getattr(os, name)))
    popen_init = subprocess.Popen.__init__

    def spawn(self, *args, **kwargs):
        step()
        popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = spawn


def _child(at: int, argv: list[str], env: dict, cwd: str | None, count_fd: int | None) -> int:
    from helpers.inproc import run_in_process

    counter = [0]
    _arm(at, counter)
    result = run_in_process(argv, env=env, cwd=cwd)
    if count_fd is not None:
        os.write(count_fd, str(counter[0]).encode())
    return result.returncode


def _fork(at: int, argv: list[str], env: dict, cwd: str | None, count_fd: int | None = None) -> int:
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            code = _child(at, argv, env, cwd, count_fd)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def killed_at(at: int, argv: list[str], env: dict, cwd: str | None = None) -> int:
    """``mem ARGV`` in a child killed at step ``at``: 137 when it was, else the command's own exit code."""
    return _fork(at, argv, env, cwd)


def steps(argv: list[str], env: dict, cwd: str | None = None) -> tuple[int, int]:
    """``mem ARGV`` run to its end in a child: (exit code, the number of steps it made)."""
    r, w = os.pipe()
    try:
        code = _fork(0, argv, env, cwd, w)
        os.close(w)
        w = -1
        with os.fdopen(r, "rb") as f:
            r = -1
            count = int(f.read() or 0)
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
    return code, count
