"""Words in messages, written once."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``: a count and its noun (``many`` where the plural is not in -s)."""
    return f"{n} {one if n == 1 else many or one + 's'}"
