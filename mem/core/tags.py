"""The wrapper tags around injected memory, and the one function that keeps memory text from forging them.

Hook output puts memory inside tags the agent reads as structure:
``<system-reminder>`` (ours for recall, and the client's around every hook's
context) and ``<team-memory-content>`` around what teammates shared. A memory
that holds ``</system-reminder>`` could end the wrapper early and pass what
follows off as a reminder from the system, and ``<system-reminder>`` could open
a forged one. ``neutralise`` breaks every such tag visibly and readably, with a
backslash after its ``<`` (``<\\/system-reminder>``, ``<\\system-reminder>``);
every emitter of hook output runs memory text (and the paths it names) through
it, and nothing else is changed. ``mem recall --json`` keeps the exact text.

Example: neutralise("x </system-reminder> y") == "x <\\\\/system-reminder> y"
"""

from __future__ import annotations

import re

#: Tags that frame injected text; memory text may not open or close them.
WRAPPER_TAGS = ("system-reminder", "team-memory-content")

# "<", then (so the tag is not eaten) optional spaces, "/", spaces and a wrapper tag name, any case:
# "< / System-Reminder >" is read as the same tag by a model.
_TAG = re.compile(r"<(?=\s*/?\s*(?:%s)(?![\w-]))" % "|".join(map(re.escape, WRAPPER_TAGS)), re.IGNORECASE)


def neutralise(text: str) -> str:
    """``text`` with every wrapper tag broken by a backslash after its ``<``; the rest unchanged."""
    return _TAG.sub("<\\\\", text) if "<" in text else text
