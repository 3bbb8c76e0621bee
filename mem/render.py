"""Output, in one place: data to stdout (text, JSON, JSON lines), messages to stderr.

Colour only at a terminal and never when ``NO_COLOR`` is set to anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _style(text: str, code: str, stream: TextIO) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if use_color(stream) else text


#: Whether this run has printed data on stdout (the CLI then adds no --json error document after it).
wrote = [False]


def out(text: str = "", *, nl: bool = True) -> None:
    """Data for stdout."""
    wrote[0] = True
    sys.stdout.write(text + ("\n" if nl else ""))


def out_json(obj: Any) -> None:
    """One JSON document."""
    import json

    wrote[0] = True
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def out_jsonl(rows: Iterable[Any]) -> None:
    """One JSON object per line, streamed."""
    import json

    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    write = sys.stdout.write
    wrote[0] = True
    for row in rows:
        write(encode(row) + "\n")


def out_record(obj: Any, fmt: str) -> None:
    """One result for a program: a JSON document for "json", one JSONL line for "jsonl"."""
    if fmt == "json":
        out_json(obj)
    else:
        out_jsonl([obj])


def out_rows(rows: Iterable[dict], fmt: str, text: Any) -> None:
    """Render rows as ``fmt`` ("text", "json" or "jsonl"); ``text(row) -> str`` for text."""
    if fmt == "json":
        out_json(list(rows))
    elif fmt == "jsonl":
        out_jsonl(rows)
    else:
        for row in rows:
            out(text(row))


def info(message: str) -> None:
    """A message for people, on stderr."""
    sys.stderr.write(f"mem: {message}\n")


def debug(message: str) -> None:
    """A --debug trace line, on stderr."""
    sys.stderr.write(f"mem: debug: {message}\n")


def warn(message: str) -> None:
    sys.stderr.write(_style("mem: warning:", "33", sys.stderr) + f" {message}\n")


def error(message: str) -> None:
    # One line, whatever the message carried.
    message = " ".join(str(message).split())
    sys.stderr.write(_style("mem: error:", "31;1", sys.stderr) + f" {message}\n")


def color_err(text: str, code: str) -> str:
    """Colour for a stderr message (only at a terminal)."""
    return _style(text, code, sys.stderr)


def silence_stdout() -> None:
    """Point stdout at /dev/null after its reader left (``mem scan | head -1``), so the interpreter's
    last flush cannot fail again and print a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
