"""Control characters: refused in the names mem writes, made visible in text from the network before it is printed.

A newline in a file name splits the index line that points to it; an escape
sequence in a key name a server sent retitles or clears the user's terminal.
CONTROL covers C0, DEL and C1 and the Unicode line and paragraph separators
(Python's ``splitlines`` breaks on several of them).

Example: printable("evil\\x1b[2J.md") == "evil\\\\x1b[2J.md"
"""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def has_control(text: str) -> bool:
    return CONTROL.search(text) is not None


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x1b``, ``\\n``), safe for a terminal."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
