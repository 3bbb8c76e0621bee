"""The process's surroundings as one value: environment variables, streams, colour, debug, clock, cwd.

The CLI builds one ``Env`` per run (``Env.from_process``) and hands it down; core code asks it
instead of reaching for ``os.environ``, ``sys.stderr`` or a module global, and a test builds
one with its own streams and clock. In the spirit of httpie's ``Environment``.

    env = Env.from_process()
    if env.debug: ...

uses: nothing of mem
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import TextIO


def debug_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``MEM_DEBUG`` asks for debug output: the one rule (``--debug`` adds to it, see ``Env.debug``)."""
    environ = os.environ if environ is None else environ
    return environ.get("MEM_DEBUG", "") not in ("", "0")


class Env:
    """One run's surroundings. ``debug_flag``: ``--debug`` was given; ``command``: the command's names.

    A plain class, not a dataclass: the recall hook builds one, and ``dataclasses`` costs its start-up.
    """

    __slots__ = ("environ", "stdin", "stdout", "stderr", "cwd", "clock", "monotonic", "debug_flag", "command")

    def __init__(self, environ: Mapping[str, str] | None = None, stdin: TextIO | None = None,
                 stdout: TextIO | None = None, stderr: TextIO | None = None, cwd: str | None = None, *,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic,
                 debug_flag: bool = False, command: tuple[str, ...] = ()) -> None:
        self.environ = os.environ if environ is None else environ
        self.stdin = sys.stdin if stdin is None else stdin
        self.stdout = sys.stdout if stdout is None else stdout
        self.stderr = sys.stderr if stderr is None else stderr
        self.cwd = os.getcwd() if cwd is None else cwd
        self.clock = clock  # wall time, epoch seconds
        self.monotonic = monotonic  # for durations and deadlines
        self.debug_flag = debug_flag
        self.command = command

    @classmethod
    def from_process(cls, command: tuple[str, ...] = (), *, debug_flag: bool = False) -> Env:
        """This process's environment, streams and working directory, read now."""
        try:
            cwd = os.getcwd()
        except OSError:  # the directory was removed under us: commands that need it say so
            cwd = ""
        return cls(os.environ, sys.stdin, sys.stdout, sys.stderr, cwd, command=tuple(command), debug_flag=debug_flag)

    @property
    def debug(self) -> bool:
        """``--debug`` or ``MEM_DEBUG=1``: tracebacks and model calls on stderr."""
        return self.debug_flag or debug_enabled(self.environ)

    @property
    def color(self) -> bool:
        """Colour on stdout: at a terminal, unless ``NO_COLOR`` is set to anything."""
        if self.environ.get("NO_COLOR"):
            return False
        try:
            return self.stdout.isatty()
        except (AttributeError, ValueError):
            return False
