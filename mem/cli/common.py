"""Options shared by commands: which memory directory, and which output format; the run's Env."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import click

from mem.clients import LAYOUT_CHOICES

#: --scope's choices: mem.clients.claude.AGENT_SCOPES, repeated because importing that module at
#: ``mem --help`` costs about 6.5 ms (mem.core.paths, messages); tests/test_paths.py keeps them equal.
SCOPES = ("user", "project", "local")


def current_env():
    """The running command's Env (mem/env.py): built once per run by the group, passed down as ``ctx.obj``."""
    from mem.env import Env

    ctx = click.get_current_context(silent=True)
    env = ctx.find_object(Env) if ctx is not None else None
    return env if env is not None else Env.from_process()


def read_hook_payload(**kwargs):
    """The hook payload on stdin (hooks.read_payload), with a hint on stderr when stdin is a terminal."""
    from mem import render
    from mem.core.hooks import read_payload

    return read_payload(notice=render.info, **kwargs)


def memory_dir_options(f: Callable) -> Callable:
    """--dir, --project, --layout, --agent, --scope, --settings → a ``where`` keyword."""

    @click.option(
        "--dir", "dir_", metavar="DIR",
        help="Use this memory directory; overrides every other rule (also MEM_DIR).",
    )
    @click.option(
        "--project", metavar="PATH", type=click.Path(file_okay=False),
        help="Resolve the memory directory of this project (default: the current directory).",
    )
    @click.option(
        "--layout", type=click.Choice(LAYOUT_CHOICES), default="auto", show_default=True,
        help="Claude Code (~/.claude) or qwen-code (~/.qwen) layout; auto picks qwen only when just it exists.",
    )
    @click.option("--agent", metavar="TYPE", help="Use the agent memory of this agent type (needs --scope).")
    @click.option("--scope", type=click.Choice(SCOPES), help="Scope of --agent memory.")
    @click.option(
        "--settings", "settings_file", metavar="FILE", type=click.Path(dir_okay=False),
        help="An extra settings file, read like Claude Code's --settings.",
    )
    @functools.wraps(f)
    def wrapper(*args, dir_, project, layout, agent, scope, settings_file, **kwargs):
        where = dict(dir=dir_, project=project, layout=layout, agent=agent, scope=scope, settings_file=settings_file)
        return f(*args, where=where, **kwargs)

    return wrapper


def resolve_dir(where: dict, *, reading: bool = False):
    """The Resolution for the options collected by ``memory_dir_options`` (see mem.clients.resolve_options)."""
    from mem.clients import resolve_options

    return resolve_options(where, reading=reading)


def memory_of(where: dict, *, reading: bool = False):
    """The MemoryDir the options collected by ``memory_dir_options`` name (``reading``: see resolve_dir)."""
    from mem.core.memdir.store import MemoryDir

    return MemoryDir(resolve_dir(where, reading=reading).memory_dir)


def format_options(f: Callable) -> Callable:
    """--json / --jsonl → a ``fmt`` keyword: "text", "json" or "jsonl"."""

    @click.option("--json", "as_json", is_flag=True, help="Output one JSON document.")
    @click.option("--jsonl", "as_jsonl", is_flag=True, help="Output one JSON object per line.")
    @functools.wraps(f)
    def wrapper(*args, as_json, as_jsonl, **kwargs):
        if as_json and as_jsonl:
            # mem --json scan --jsonl: the command's own option wins over the one passed down.
            source = click.get_current_context().get_parameter_source
            passed_down = click.core.ParameterSource.DEFAULT_MAP
            as_json = source("as_json") != passed_down
            as_jsonl = not as_json or source("as_jsonl") != passed_down
        if as_json and as_jsonl:
            raise click.UsageError("--json and --jsonl are mutually exclusive")
        return f(*args, fmt="json" if as_json else "jsonl" if as_jsonl else "text", **kwargs)

    return wrapper


#: What a command that changed memory says when git is missing, instead of any promise of undo.
HISTORY_OFF = "history is off (git is not on PATH): this change was not recorded, so `mem undo` cannot take it back"


def undo_note(memory, op, promise: str = "`mem undo` takes it back") -> str:
    """``promise`` when undoing ``op`` (just recorded) would bring its files back; else why it would not.

    Never a false promise (issue #31): with no git nothing was recorded, and a version withheld
    for a secret is not kept, so undo cannot put it back.
    """
    from mem.core.memdir.revert import why_not_undoable

    why = why_not_undoable(memory, op)
    return promise if why is None else f"`mem undo` cannot take it back: {why}"


def warn_if_history_off(memory, changed: bool = True) -> None:
    """Say on stderr that a change just made is not in the history, when git is missing."""
    from mem import render

    if changed and not memory.history.available():
        render.warn(HISTORY_OFF)
