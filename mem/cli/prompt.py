"""mem prompt: the memory section an agent should get at session start."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, resolve_dir
from mem.core.memdir.store import MemoryDir
from mem.core.errors import UsageError


@click.command("prompt", short_help="Print the memory instructions and MEMORY.md for a new session.")
@click.option("--format", "style", type=click.Choice(("text", "agents-md")), default="text", show_default=True,
              help="text: instructions and MEMORY.md; agents-md: a block to paste into AGENTS.md or GEMINI.md.")
@click.option("--mode", type=click.Choice(("auto", "full", "supplement")), default="auto", show_default=True,
              help="full: instructions and index; supplement: only what a client with its own memory lacks; "
                   "auto: supplement for a --hook whose client already loads this memory directory, else full.")
@click.option("--max-chars", type=int, metavar="N",
              help="Shorten the index so the whole text fits in N characters (default with --hook: 9500).")
@click.option("--client", type=click.Choice(("codex", "gemini")),
              help="Write for this client's instructions file (codex: AGENTS.md, gemini: GEMINI.md); implies "
                   "--format agents-md.")
@click.option("--write", is_flag=True,
              help="Keep the block in the client's instructions file at the project's root, between its markers "
                   "(needs --client); nothing is written when it is already there.")
@click.option("--hook", is_flag=True,
              help="Read a SessionStart hook payload on stdin and print the hook JSON; never fails the session.")
@memory_dir_options
@format_options
def prompt_cmd(style: str, mode: str, max_chars: int | None, client: str | None, write: bool, hook: bool,
               where: dict, fmt: str) -> None:
    """Print the memory instructions and MEMORY.md for the start of a session.

    The instructions tell an agent what to save (the four memory types),
    what never to save, how to save (one file with frontmatter, then one
    index line), when to consult memory and to verify what a memory names.
    MEMORY.md follows exactly as Claude Code loads it.

    \b
    Example:
      mem prompt | less
      mem prompt --format agents-md >> AGENTS.md
      mem prompt --client codex --write
      echo '{"session_id":"s","cwd":"'$PWD'","hook_event_name":"SessionStart"}' | mem prompt --hook
    """
    from mem.core import prompt

    if max_chars is not None and max_chars < 1:
        raise UsageError("--max-chars must be at least 1")
    if write and not client:
        raise UsageError("--write needs --client codex or --client gemini (which file to keep the block in)")
    if client:
        if hook or mode == "supplement" or max_chars is not None:
            raise UsageError("--client gives the agents-md block; it takes no --hook, --mode supplement or --max-chars")
        style = "agents-md"
    if hook:
        if fmt != "text" or style != "text":
            raise UsageError("--hook prints the hook JSON; it takes no --json, --jsonl or --format")
        _hook(where, mode, max_chars)
        return
    if style == "agents-md":
        if mode == "supplement":
            raise UsageError("--format agents-md gives the full instructions; --mode supplement does not apply")
        chosen = "agents-md"
    else:
        chosen = "supplement" if mode == "supplement" else "full"
    memory = memory_of(where)
    root = memory.spelled
    result = prompt.build(memory, chosen, max_chars=max_chars)
    for warning in result.warnings:
        render.warn(warning)
    if write:
        _write(client, where, result.text, fmt)
        return
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    else:
        render.out(result.text)
    if not os.path.isdir(root):
        render.info(f"no memory directory at {root} yet")


def _write(client: str, where: dict, block: str, fmt: str) -> None:
    from mem.clients import named
    from mem.core import paths, prompt

    project = paths.project_root(where.get("project") or os.getcwd())
    root = paths.find_git_root(project) or project
    done = prompt.write_block(os.path.join(root, named(client).INSTRUCTIONS_FILE), block)
    if fmt != "text":
        render.out_record(done.as_dict(), fmt)
    elif done.changed:
        render.info(f"{'created' if done.created else 'updated'} {done.path}")
    else:
        render.info(f"{done.path} is up to date")


def _hook(where: dict, mode: str, max_chars: int | None) -> None:
    from mem.clients import memory_on
    from mem.core import hooks, prompt
    from mem.core.hooks import CONTEXT_LIMIT
    from mem.core.hooks import hook_where

    from mem.cli.common import read_hook_payload

    payload = read_hook_payload(events=("SessionStart",))
    where = hook_where(where, payload)
    resolution = resolve_dir(where)
    if not memory_on(resolution)[0]:
        return  # the client's memory is off here: it gets none, as it loads none itself
    if mode == "auto":
        mode = "supplement" if _client_loads_it(payload, resolution, where) else "full"
    result = prompt.build(MemoryDir(resolution.memory_dir), mode, max_chars=max_chars or CONTEXT_LIMIT)
    for warning in result.warnings:
        render.warn(warning)
    out = hooks.render_output("SessionStart", result.text)
    if out:
        render.out(out)


def _client_loads_it(payload, resolution, where: dict) -> bool:
    """Whether the client already gives the agent this memory directory's MEMORY.md and instructions.

    Claude Code and qwen-code do for their own memory directory, when their
    memory is on (memory_on); Codex CLI and Gemini CLI load none
    (LOADS_OWN_MEMORY). A directory chosen with --dir or MEM_DIR elsewhere
    gets the full text.
    """
    from mem.clients import memory_on, named
    from mem.clients import resolve

    client = named(payload.client)
    if not client.LOADS_OWN_MEMORY:
        return False
    env = {k: v for k, v in os.environ.items() if k != "MEM_DIR"}
    own = resolve(project=where["project"], layout=client.LAYOUT, settings_file=where.get("settings_file"), env=env)
    return memory_on(own, env)[0] and os.path.normpath(own.memory_dir) == os.path.normpath(resolution.memory_dir)
