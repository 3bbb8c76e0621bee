"""One module per agent: what mem knows of each client's files (DESIGN: mem/clients/).

Today: codex (Codex CLI's session rollouts, its AGENTS.md) and gemini (Gemini
CLI's chat recordings, its GEMINI.md). Claude Code and qwen-code still live in
core (transcripts.py, paths.py) until they move here.
"""


def named(name: str):
    """The module of a client by its name (``codex``, ``gemini``)."""
    from importlib import import_module

    return import_module(f"mem.clients.{name}")


#: Clients that read an instructions file mem can keep a block in.
WITH_INSTRUCTIONS_FILE = ("codex", "gemini")

#: Clients that load no memory directory themselves: a SessionStart hook gives them the full text.
NO_OWN_MEMORY = frozenset({"codex", "gemini"})
