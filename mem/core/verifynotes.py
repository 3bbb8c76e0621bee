"""What ``mem verify`` last found stale in each memory, kept so recall can say so without running git.

Example: StaleNotes(memory.state.verify_notes).note("project_retry.md", data) ==
    "Checked against the repository (mem verify): `src/net/retry.py` no longer exists (line 7)."

Recall runs on every prompt, so this module imports no git, no subprocess and no hashing until a
surfaced memory has a note: it reads one small JSON file (relpath -> sha256 of the content the
note was made for, and the note), written by ``mem verify`` after each run. A note stands only
for the content it was made for; an edited memory has none until verify runs again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

#: at most this many stale claims named in one note; the rest are counted
NOTE_CLAIMS = 3


class Finding(NamedTuple):
    """One claim's verdict, with the evidence that decided it."""

    memory: str  # relpath of the topic file
    line: int
    kind: str  # path, symbol, command, commit, date, link
    claim: str  # as written
    verdict: str  # ok, moved, missing, expired
    evidence: str
    new_place: str | None = None  # for "moved": where the path is now

    @property
    def stale(self) -> bool:
        return self.verdict != "ok"

    def line_text(self) -> str:
        """grep-style: ``relpath:line: verdict: kind claim (evidence)``."""
        return f"{self.memory}:{self.line}: {self.verdict}: {self.kind} {self.claim} ({self.evidence})"

    def as_dict(self) -> dict:
        return {**self._asdict(), "stale": self.stale}


def content_sha(data: bytes) -> str:
    import hashlib  # only when a note or a check needs it: the recall hook usually does not

    return hashlib.sha256(data).hexdigest()


def describe(f: Finding) -> str:
    """A stale finding in a few words, for a reader of the memory: "`src/a.py` no longer exists"."""
    if f.verdict == "moved":
        return f"`{f.claim}` is now `{f.new_place}`"
    if f.kind == "date":
        if f.evidence.startswith("relative"):
            return f"\u201c{f.claim}\u201d meant a day relative to when it was written"
        return f"the date {f.claim} has passed"
    return {
        "path": f"`{f.claim}` no longer exists",
        "symbol": f"`{f.claim}` is no longer in the code",
        "command": f"`{f.claim}` is no longer declared",
        "commit": f"commit {f.claim} is no longer in the history",
        "link": f"the memory {f.claim} no longer exists",
    }.get(f.kind, f"{f.kind} {f.claim}: {f.evidence}")


def note_line(findings: Iterable[Finding]) -> str | None:
    """One line naming a memory's stale claims, or None when none is stale."""
    stale = [f for f in findings if f.stale]
    if not stale:
        return None
    parts = [f"{describe(f)} (line {f.line})" for f in stale[:NOTE_CLAIMS]]
    if len(stale) > NOTE_CLAIMS:
        parts.append(f"and {len(stale) - NOTE_CLAIMS} more (run mem verify)")
    return "Checked against the repository (mem verify): " + "; ".join(parts) + "."


class StaleNotes:
    """relpath -> (sha256 of the content, note) for every memory with a stale claim."""

    def __init__(self, path: str):
        self.path = path
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            self.entries = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.entries = {}

    def __contains__(self, relpath: str) -> bool:
        return relpath in self.entries

    def note(self, relpath: str, data: bytes) -> str | None:
        """The note for this memory if it was made for exactly this content."""
        entry = self.entries.get(relpath)
        if not isinstance(entry, dict) or entry.get("sha") != content_sha(data):
            return None
        return entry.get("note")

    def update(self, checked: Mapping[str, tuple[str, list[Finding]]], keep: set[str] | None = None) -> None:
        """Record the notes of the memories just checked (relpath -> (sha, findings)) and write the file.

        With ``keep`` (every memory there is), notes of memories that are gone are dropped.
        """
        entries = {k: v for k, v in self.entries.items() if keep is None or k in keep}
        for rel, (sha, findings) in checked.items():
            note = note_line(findings)
            if note:
                entries[rel] = {"sha": sha, "note": note}
            else:
                entries.pop(rel, None)
        if entries == self.entries and os.path.exists(self.path):
            return
        self.entries = entries
        from mem.core.memdir.store import atomic_write

        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            atomic_write(self.path, json.dumps(entries, ensure_ascii=False).encode())
        except OSError:
            pass  # recall then says nothing: the notes are a courtesy, verify's output is the record
