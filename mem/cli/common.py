"""Options shared by commands: which memory directory, and which output format."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import click

LAYOUTS = ("auto", "claude", "qwen")
SCOPES = ("user", "project", "local")


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
        "--layout", type=click.Choice(LAYOUTS), default="auto", show_default=True,
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
    """The Resolution for the options collected by ``memory_dir_options``.

    ``reading``: the command reads the directory, so one named by --dir or MEM_DIR that is
    missing or unreadable is a usage error (a typo must not make a check pass). A directory
    found by the other rules may not exist yet: that is a project without memories.
    """
    from mem.core.errors import UsageError
    from mem.core.paths import resolve

    if where.get("agent") and not where.get("scope"):
        raise UsageError("--agent needs --scope user, project or local")
    if where.get("scope") and not where.get("agent"):
        raise UsageError("--scope needs --agent TYPE")
    resolution = resolve(**where)
    if reading and resolution.rule in ("--dir", "MEM_DIR"):
        root = resolution.memory_dir
        if not os.path.isdir(root):
            what = "is not a directory" if os.path.lexists(root.rstrip(os.sep) or os.sep) else "does not exist"
            raise UsageError(f"memory directory {root} (from {resolution.rule}) {what}")
        if not os.access(root, os.R_OK | os.X_OK):
            raise UsageError(f"memory directory {root} (from {resolution.rule}) is not readable")
    return resolution


def memory_of(where: dict, *, reading: bool = False):
    """The MemoryDir the options collected by ``memory_dir_options`` name (``reading``: see resolve_dir)."""
    from mem.core.memdir.store import MemoryDir

    return MemoryDir(resolve_dir(where, reading=reading).memory_dir)


def hook_where(where: dict, payload) -> dict:
    """The options of a hook call completed from its payload: the project is the payload's cwd
    (unless --project says otherwise), and a qwen-code payload means the qwen layout."""
    where = {**where, "project": where.get("project") or payload.cwd}
    if where.get("layout") == "auto" and payload.client == "qwen":
        where["layout"] = "qwen"
    return where


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
