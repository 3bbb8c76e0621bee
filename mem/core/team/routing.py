"""Team scope for the commands that write or inject memories (extract, remember, recall, prompt).

Cheap to import (no network, no YAML): these are the shared pieces.

* Whether team/ exists (a real directory, not a link) is asked of the MemoryDir (``team_enabled``):
  then memories are routed by type and team memories are injected, wrapped.
* ``default_scope(type, convention=…)``: where a new memory of a type goes.
* ``wrap_team_content(text)``: team memory as it is shown to an agent, inside
  ``<team-memory-content source="shared">`` (the wrapper Claude Code uses).
* ``ROUTING_GUIDANCE``: a block for prompts that ask a model to save memories.
* ``check_team_write(content)``: the secret scan for team/ content, with the
  refusal message to show.
* ``team_memories(memory, type=None)``: team topic files of a MemoryDir (for example the
  team feedback a private feedback must not contradict without saying so).
"""

from __future__ import annotations

import os

from mem.core.memdir.layout import TEAM_PREFIX, is_team

TEAM_WRAPPER_OPEN = '<team-memory-content source="shared">'
TEAM_WRAPPER_CLOSE = "</team-memory-content>"

PRIVATE = "private"
TEAM = "team"

#: Where a memory of each type goes when team/ exists and nothing says otherwise.
DEFAULT_SCOPES = {
    "user": PRIVATE,       # always: it is about this person
    "feedback": PRIVATE,   # unless it states a project-wide convention
    "project": TEAM,
    "reference": TEAM,
}


def default_scope(memory_type: str | None, *, convention: bool = False) -> str:
    """PRIVATE or TEAM for a new memory of ``memory_type``.

    ``convention``: the memory states a rule for everyone working on the
    project (a testing policy, a build invariant, a review rule) rather than
    one person's preference; it moves feedback to team. A user memory stays
    private whatever it says.
    """
    if memory_type == "user":
        return PRIVATE
    if memory_type == "feedback":
        return TEAM if convention else PRIVATE
    return DEFAULT_SCOPES.get(memory_type or "", PRIVATE)


def target_relpath(relpath: str, scope: str) -> str:
    """``relpath`` moved into team/ (or out of it) for ``scope``."""
    rel = relpath.replace(os.sep, "/")
    inside = is_team(rel)
    if scope == TEAM and not inside:
        return TEAM_PREFIX + rel
    if scope == PRIVATE and inside:
        return rel[len(TEAM_PREFIX):]
    return rel


def wrap_team_content(text: str) -> str:
    """Team memory text inside the shared-content wrapper.

    Wrapper tags inside the text are broken (``<\\/team-memory-content>``,
    mem.core.tags.neutralise) so content synced from teammates cannot end the
    wrapper early, or open a reminder, and pass the rest off as something else.
    """
    from mem.core.tags import neutralise

    return f"{TEAM_WRAPPER_OPEN}\n{neutralise(text)}\n{TEAM_WRAPPER_CLOSE}"


def check_team_write(content: str):
    """None if ``content`` may go to team/, else (finding, message) with the refusal to show."""
    from mem.core.guards.secrets import scan

    found = scan(content)
    if not found:
        return None
    labels = ", ".join(dict.fromkeys(f.label for f in found))
    message = (f"Content contains potential secrets ({labels}) and cannot be written to team memory, which every "
               "collaborator on the repository receives. Remove the sensitive content and try again.")
    return found[0], message


def team_memories(memory, memory_type: str | None = None) -> list:
    """MemoryHeaders of the topic files in ``memory``'s team/ (a MemoryDir; relpaths start with team/), optionally
    of one type."""
    from mem.core.memdir import manifest

    if not memory.team_enabled:
        return []
    headers = manifest.scan(memory.team_dir, limit=None)
    return [h._replace(relpath=TEAM_PREFIX + h.relpath) for h in headers
            if memory_type is None or h.type == memory_type]


ROUTING_GUIDANCE = """\
## Private and team memory

This project shares some memory with its team: files under team/ are synced to every collaborator on
the repository, and everything else stays with this user. Choose the scope of each memory you save:

- user (who the user is, their role, their preferences): always private.
- feedback (how the user wants you to work): private, unless it states a convention for everyone on
  the project, such as a testing policy, a build or release invariant, or a review rule; those go to
  team/.
- project (decisions, deadlines, incidents, who owns what): team/ by default; keep it private only if
  it concerns this user alone.
- reference (where things live: dashboards, trackers, runbooks, docs): usually team/.

Never put credentials, tokens, keys, passwords or personal data in team/: it is shared, and a file
that contains a secret is refused. Before saving a private feedback memory that goes against a team
feedback memory, say so in the new memory (name the team memory it overrides and why), so the
override is deliberate and visible; do not edit the team memory to agree with a private preference.
"""
