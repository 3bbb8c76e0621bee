"""Options shared by commands: which memory directory, and which output format."""

from __future__ import annotations

import functools
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


def resolve_dir(where: dict):
    """The Resolution for the options collected by ``memory_dir_options``."""
    from mem.core.errors import UsageError
    from mem.core.paths import resolve

    if where.get("agent") and not where.get("scope"):
        raise UsageError("--agent needs --scope user, project or local")
    if where.get("scope") and not where.get("agent"):
        raise UsageError("--scope needs --agent TYPE")
    return resolve(**where)


def memory_of(where: dict):
    """The MemoryDir the options collected by ``memory_dir_options`` name."""
    from mem.core.memdir.store import MemoryDir

    return MemoryDir(resolve_dir(where).memory_dir)


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
            raise click.UsageError("--json and --jsonl are mutually exclusive")
        return f(*args, fmt="json" if as_json else "jsonl" if as_jsonl else "text", **kwargs)

    return wrapper
