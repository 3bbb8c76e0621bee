"""mem hooks: put mem's hook entries into a client's settings file, take them out, check them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import click

from mem import render
from mem.cli.common import format_options
from mem.core.hooks import EVENTS

#: The clients whose hooks mem installs.
CLIENTS = ("claude", "qwen", "codex", "gemini")


def target_options(f: Callable) -> Callable:
    """--client, --scope, --project."""

    @click.option("--client", type=click.Choice(CLIENTS), default="claude",
                  show_default=True,
                  help="Claude Code (~/.claude/settings.json), qwen-code (~/.qwen/settings.json), Codex CLI "
                       "(~/.codex/hooks.json) or Gemini CLI (~/.gemini/settings.json).")
    @click.option("--scope", type=click.Choice(("user", "project", "local")), default=None,
                  help="Every project (user, the default), this project's checked-in settings (project), "
                       "or this project for you alone (local, Claude Code only).")
    @click.option("--project", metavar="PATH", type=click.Path(file_okay=False),
                  help="The project of --scope project or local (default: the current directory).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


#: The clients' own names of those events (mem.clients.gemini.HOOK_EVENTS; tests/test_hooks_agents.py
#: holds them equal), written out: importing every client module here would slow each TAB completion.
CLIENT_EVENT_NAMES = ("BeforeAgent", "AfterAgent", "PreCompress")


def event_options(f: Callable) -> Callable:
    """--only / --without EVENT, repeatable: Claude Code's name of the event or the client's own."""
    names = (*EVENTS, *CLIENT_EVENT_NAMES)

    @click.option("--only", multiple=True, type=click.Choice(names), metavar="EVENT",
                  help="Only this hook event (repeatable): SessionStart, UserPromptSubmit, PreToolUse, Stop, "
                       "PreCompact, or the client's own name for it (Gemini CLI: BeforeAgent, AfterAgent).")
    @click.option("--without", multiple=True, type=click.Choice(names), metavar="EVENT",
                  help="Every hook event but this one (repeatable).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


@click.group("hooks")
def hooks_cmd() -> None:
    """Install, remove or check mem's hooks in a client's settings.

    The entries, written into Claude Code's, qwen-code's or Gemini CLI's
    settings file or Codex CLI's hooks.json, are those the README
    documents, each running mem by its absolute path, so they work under
    whatever PATH the client has.

    \b
    Example:
      mem hooks install
      mem hooks status
    """


@hooks_cmd.command("install")
@target_options
@event_options
@click.option("--mem", "mem_path", metavar="PATH",
              help="The mem the hooks run (default: the one running this command).")
@click.option("--dry-run", is_flag=True, help="Print the diff of the settings file; write nothing; exit 1 if it would change.")
@format_options
def install_cmd(client: str, scope: str | None, project: str | None, only, without, mem_path: str | None,
                dry_run: bool, fmt: str) -> int:
    """Add mem's hook entries to the client's settings file; other keys and hooks stay as they are.

    Claude Code gets SessionStart (the memory instructions; after a
    compaction, recall and the session notes), UserPromptSubmit (recall),
    PreToolUse for Bash, Edit, Write and MultiEdit (the feedback that
    applies to the call), Stop (extraction in the background) and
    PreCompact (session notes); qwen-code, which loads MEMORY.md and
    extracts memories itself, gets SessionStart and UserPromptSubmit
    (0.24.4 runs a PreToolUse hook but does not pass its context on); Codex
    CLI (hooks.json) gets SessionStart (the whole memory: it loads none
    itself), UserPromptSubmit (recall) and Stop (extraction in the
    background), and runs them once you trust them (/hooks in codex); Gemini
    CLI gets SessionStart, BeforeAgent (recall) and AfterAgent (extraction).
    Entries of mem's already there, by any path, are replaced in place. The file is copied to the state directory first and
    written atomically; a second install changes nothing.

    \b
    Example:
      mem hooks install
      mem hooks install --client qwen
      mem hooks install --client codex
      mem hooks install --scope local --without Stop
    """
    from mem.core import install

    scope = scope or "user"
    events = install.select_events(client, only, without)
    change = install.plan(client, scope, install=True, events=events, mem=install.mem_words(mem_path),
                          project=project)
    if scope == "project":
        from mem.clients import named

        # only Claude Code has a scope for this project alone; elsewhere the user's file keeps them out
        instead = "local keeps them to you" if "local" in named(client).SETTINGS_SCOPES else \
            "user keeps them out of the project"
        render.warn(f"{change.path} is usually checked in: its hooks name this machine's mem; --scope {instead}")
    status = _finish(change, dry_run, fmt, "installed")
    _warn_elsewhere(client, events)
    if change.changed and not dry_run:
        from mem.clients import named

        note = getattr(named(client), "HOOK_NOTE", None)
        if note:
            render.info(note)
    return status


def _warn_elsewhere(client: str, events) -> None:
    """mem's hooks in a file of the client's that install does not write (Codex's config.toml):
    the client runs both, so each would run twice."""
    from mem.core import install

    from mem.clients import named

    for path, event, command in (getattr(named(client), "other_hooks", None) or (lambda: []))():
        if event in events and (install.launcher(command) or install.wrapped(command)):
            render.warn(f"{path} runs mem for {event} too ({command}): {install.label(client)} runs both; "
                        "remove one")


@hooks_cmd.command("uninstall")
@target_options
@event_options
@click.option("--dry-run", is_flag=True, help="Print the diff of the settings file; write nothing; exit 1 if it would change.")
@format_options
def uninstall_cmd(client: str, scope: str | None, project: str | None, only, without, dry_run: bool, fmt: str) -> int:
    """Remove mem's hook entries from the client's settings file, and nothing else.

    An entry is mem's when it runs a program named mem (or a *.pyz, or
    python -m mem) with --hook; the user's own hooks, and other handlers in
    a matcher group shared with mem's, stay. A command of the user's that
    runs mem inside it (timeout 5 mem recall --hook) stays too, with a
    warning; mem hooks status lists it as wrapped.

    \b
    Example:
      mem hooks uninstall
      mem hooks uninstall --only Stop
    """
    from mem.core import install

    events = install.select_events(client, only, without)
    change = install.plan(client, scope or "user", install=False, events=events, project=project)
    for command in install.wrapped_entries(client, scope or "user", events, project):
        render.warn(f"{change.path}: left a hook of yours that runs mem inside it (remove it by hand): {command}")
    return _finish(change, dry_run, fmt, "removed")


def _finish(change, dry_run: bool, fmt: str, verb: str) -> int:
    from mem.core import install

    if dry_run:
        if fmt != "text":
            render.out_record(change.as_dict(), fmt)
        elif change.changed:
            import difflib

            render.out("".join(difflib.unified_diff(
                (change.before or "").splitlines(keepends=True), change.after.splitlines(keepends=True),
                change.path, change.path)), nl=False)
        return 1 if change.changed else 0
    change = install.apply(change)
    if fmt != "text":
        render.out_record(change.as_dict(), fmt)
    elif change.changed:
        render.info(f"{verb} {', '.join(change.events)} hooks in {change.path}"
                    + (f" (old file: {change.backup})" if change.backup else ""))
        if change.reformatted:
            render.warn(f"{change.path}: the rest of the file was re-indented to keep it valid JSON")
    else:
        render.info(f"{change.path}: nothing to change")
    return 0


@hooks_cmd.command("status")
@target_options
@format_options
def status_cmd(client: str, scope: str | None, project: str | None, fmt: str) -> int:
    """Which of mem's hooks are installed, whether the mem they name runs, and when each last fired.

    Looks in every scope of the client (or the one given). "runs" means
    `<path> --version` works with PATH=/usr/bin:/bin, as under a client
    started from a desktop or cron. Exit 1 when a hook mem installs for the
    client is missing from every scope, or one names a mem that does not run.

    \b
    Example:
      mem hooks status
      mem hooks status --client qwen --json | jq '.entries[] | select(.runs | not)'
    """
    from mem.core import install

    report = install.status(client, scope, project)
    found, missing, disabled, ok = report["entries"], report["missing"], report["disabled_by"], report["ok"]
    if fmt != "text":
        render.out_record({"client": client, "entries": [f.as_dict() for f in found], "missing": missing,
                           "disabled_by": disabled, "ok": ok}, fmt)
        return 0 if ok else 1
    for f in found:
        where = f"{f.event}" + (f" ({f.matcher})" if f.matcher else "")
        state = ("wrapped in a command of yours (uninstall leaves it)" if f.wrapped
                 else "runs" if f.runs else f"DOES NOT RUN: {f.problem}")
        fired = f"last fired {f.last_fired}" if f.last_fired else "never fired"
        render.out(f"{f.scope}  {where}  {f.command}  {state}  {fired}")
    for event in missing:
        render.out(f"-  {event}  not installed (mem hooks install --client {client})")
    _warn_elsewhere(client, {f.event for f in found})
    if disabled:
        render.warn(f"{install.label(client)} runs no user or project hook here: {disabled}")
    if found and not any(f.last_fired for f in found):
        from mem.clients import named

        note = getattr(named(client), "HOOK_NOTE", None)
        if note:
            render.info(note)
    return 0 if ok else 1
