"""Hook entries written into a client's settings file, and the ``mem`` they run.

Example: plan_install("claude", "user", mem=["/opt/mem/bin/mem"]).changed  # True the first time

The entries are the ones the README documents. Every command names ``mem`` by
its absolute path (a client, like cron, runs hooks with whatever PATH it was
started with: a bare ``mem`` there is ``sh: mem: not found``, exit 127, and
memory silently off). The settings file is edited, not rewritten: only the
text of its top-level "hooks" changes (in the file's indent), every other byte
stays, numbers are written as the file wrote them, qwen-code's comments are
kept, nothing is written when nothing changes, and a copy of the old file goes
to the state directory first. A file that is not a JSON object is never touched.

uses: clients (each client's entries, settings files and scopes), paths, hooks (subcommand names), memdir.files (read_bytes, atomic_write),
memdir.state (backups, hook stamps).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from mem.clients import HOOKED as CLIENTS
from mem.clients import Group
from mem.core.errors import RefusedError, UsageError
from mem.core.jscompat import blank_comments

SCOPES = ("user", "project", "local")
#: Our subcommands that take --hook: how a command is recognised as ours.
HOOK_COMMANDS = ("prompt", "recall", "extract", "session")


def _client(client: str):
    from mem.clients import named

    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r} (expected {' or '.join(CLIENTS)})")
    return named(client)


def label(client: str) -> str:
    """The client's name for people: Claude Code, qwen-code, Codex CLI, Gemini CLI."""
    return _client(client).LABEL


def groups_for(client: str) -> tuple[Group, ...]:
    """The README's entries for the client (HOOK_GROUPS in mem/clients/)."""
    return tuple(Group(*g) for g in _client(client).HOOK_GROUPS)


def _event_name(client: str, event: str) -> str:
    """A Claude Code event name as the client calls it (Gemini CLI: UserPromptSubmit is BeforeAgent)."""
    theirs = {ours: name for name, ours in getattr(_client(client), "HOOK_EVENTS", {}).items()}
    return theirs.get(event, event)


def events_for(client: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(g.event for g in groups_for(client)))


def select_events(client: str, only: Iterable[str] = (), without: Iterable[str] = ()) -> tuple[str, ...]:
    """The events to act on: every one mem installs for the client, or ``only``, minus ``without``."""
    known = events_for(client)
    only = tuple(_event_name(client, e) for e in only)
    without = tuple(_event_name(client, e) for e in without)
    for name in (*only, *without):
        if name not in known:
            raise UsageError(f"mem installs no {name} hook for {client} (its hooks: {', '.join(known)})")
    chosen = tuple(e for e in known if (not only or e in only) and e not in without)
    if not chosen:
        raise UsageError("no hook left to act on (--only and --without leave nothing)")
    return chosen


# ---------------------------------------------------------------------------------------------
# Which mem


def running_mem(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The words that start this ``mem`` from anywhere: its absolute path, or python and the zipapp.

    Example: running_mem("/opt/venv/bin/mem") == ["/opt/venv/bin/mem"]
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if argv0 and os.path.basename(argv0) not in ("__main__.py", "-c", "-m"):
        path = os.path.abspath(argv0)
        if os.path.isfile(path):
            # a zipapp run as `python3 mem.pyz` may not be executable itself
            return [path] if os.access(path, os.X_OK) else [os.path.abspath(executable), path]
    return [os.path.abspath(executable), "-m", "mem"]


def mem_words(mem: str | None) -> list[str]:
    """``--mem PATH`` as words (made absolute), or the running mem."""
    if not mem:
        return running_mem()
    path = os.path.abspath(os.path.expanduser(mem))
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise UsageError(f"--mem {mem}: not an executable file")
    return [path]


def command_line(mem: list[str], args: str) -> str:
    return " ".join([*(shlex.quote(w) for w in mem), args])


def launcher(command: str) -> list[str] | None:
    """The words that start mem in a hook command of ours, or None when the command is not ours.

    Ours: a program named ``mem`` (or a ``*.pyz``, or ``python -m mem``) run with one of
    our hook subcommands and ``--hook``, whatever path it is given by.
    Example: launcher("/usr/bin/mem recall --hook") == ["/usr/bin/mem"]
    """
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if "--hook" not in words:
        return None
    for i, word in enumerate(words):
        if word in HOOK_COMMANDS:
            head = words[:i]
            break
    else:
        return None
    if not head:
        return None
    name = os.path.basename(head[0])
    if len(head) == 1 and (name == "mem" or name.endswith(".pyz")):
        return head
    if len(head) == 2 and head[1].endswith(".pyz"):
        return head
    if head[1:] == ["-m", "mem"]:
        return head
    return None


#: mem run with a hook subcommand and --hook somewhere inside a command of the user's
#: (``timeout 5 /usr/bin/mem recall --hook``, ``bash -c '... mem.pyz recall --hook'``).
_INSIDE = re.compile(r"""(?:^|[\s;&|(`'"])((?:[^\s;&|()`'"]*/)?(?:mem|[^\s;&|()`'"/]+\.pyz)|-m\s+mem)\s+"""
                     rf"(?:{'|'.join(HOOK_COMMANDS)})\b[^\n]*?\s--hook\b")


def wrapped(command) -> bool:
    """True for a command of the user's that runs one of our hooks inside it: not ours to edit
    (install and uninstall leave it), but mem still runs, so status counts it.

    Example: wrapped("timeout 5 /usr/bin/mem recall --hook") is True; wrapped("/usr/bin/mem recall --hook") is False
    """
    return isinstance(command, str) and launcher(command) is None and _INSIDE.search(command) is not None


# ---------------------------------------------------------------------------------------------
# Settings files


def settings_path(client: str, scope: str, project: str | None = None,
                  env: Mapping[str, str] | None = None) -> str:
    """The settings file the client reads for a scope.

    Example: settings_path("claude", "local", "/home/u/repo") == "/home/u/repo/.claude/settings.local.json"
    """
    module = _client(client)
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r} (expected user, project or local)")
    return module.settings_file(scope, project, env)


class SettingsFile(NamedTuple):
    path: str  # the file written (a symlink's target)
    text: str | None  # None: absent
    data: dict


class Number:
    """A JSON number kept as the file writes it: ``1e400`` stays ``1e400`` (as a float it would be
    written back as ``Infinity``, which Claude Code cannot parse), ``1.0`` stays ``1.0``."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __eq__(self, other) -> bool:
        return isinstance(other, Number) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Number({self.text!r})"




def comments_allowed(client: str) -> bool:
    """qwen-code reads its settings with // and /* */ comments (as JSONC); Claude Code does not."""
    return _client(client).SETTINGS_COMMENTS


def _decoder() -> json.JSONDecoder:
    return json.JSONDecoder(parse_int=Number, parse_float=Number, parse_constant=Number)


def read_settings(path: str, client: str = "claude") -> SettingsFile:
    """The file's JSON object; RefusedError (exit 4) when it cannot be read or is not one.

    Numbers are kept as written (Number); qwen-code's file may carry comments.
    """
    from mem.core.memdir.files import read_bytes
    from mem.core.paths import SETTINGS_MAX_BYTES

    target = os.path.realpath(path)
    try:  # typed and capped: settings.json as a FIFO hung `hooks install`
        raw = read_bytes(target, SETTINGS_MAX_BYTES)
    except FileNotFoundError:
        return SettingsFile(target, None, {})
    except OSError as exc:
        raise RefusedError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig", "strict") if raw else ""
    except UnicodeDecodeError:
        raise RefusedError(f"{path} is not UTF-8 text; fix it by hand, mem leaves it as it is") from None
    if not text.strip():
        return SettingsFile(target, text, {})
    source = blank_comments(text) if comments_allowed(client) else text
    try:
        data = _decoder().decode(source)
    except ValueError as exc:
        raise RefusedError(f"{path} is not valid JSON ({exc}); fix it by hand, mem leaves it as it is") from None
    except RecursionError:
        raise RefusedError(f"{path} is not valid JSON (nested too deep); fix it by hand, mem leaves it as it is") from None
    if not isinstance(data, dict):
        raise RefusedError(f"{path} is not a JSON object; mem leaves it as it is")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise RefusedError(f"{path}: \"hooks\" is not an object; mem leaves it as it is")
    ours = events_for(client)
    for event, groups in (hooks or {}).items():
        # another member is a setting of the client's, not an event mem writes: older Gemini CLI
        # versions keep "enabled": true and "disabled": [names] there; mem leaves it as it is
        if not isinstance(groups, list) and event in ours:
            raise RefusedError(f"{path}: hooks.{event} is not a list; mem leaves it as it is")
    return SettingsFile(target, text, data)


def dumps(data, **kwargs) -> str:
    """json.dumps that writes each Number as its own text."""
    import uuid

    numbers: dict[str, str] = {}
    token = f"mem-number-{uuid.uuid4().hex}-"

    def swap(value):
        if isinstance(value, Number):
            key = f"{token}{len(numbers)}"
            numbers[key] = value.text
            return key
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    text = json.dumps(swap(data), ensure_ascii=False, **kwargs)
    if numbers:
        text = re.sub(f'"({re.escape(token)}[0-9]+)"', lambda m: numbers[m.group(1)], text)
    return text


def _style(original: str) -> dict:
    """The json.dumps arguments that write like ``original``: its indent, or its separators on one line."""
    body = original.strip()
    match = re.search(r"\n([ \t]+)\S", body)
    if match:
        return {"indent": match.group(1)}
    spaced = re.search(r'"\s*:\s+\S', body) is not None or not re.search(r'"\s*:\S', body)
    return {"separators": (", ", ": ") if spaced else (",", ":")}


def dump_like(data: dict, original: str | None) -> str:
    """``data`` as JSON in the style of ``original``: its indent, its separators, its final newline.

    A new file gets two spaces and a newline, as Claude Code writes its own.
    Example: dump_like({"a": 1}, '{\\n\\t"b": 2\\n}') == '{\\n\\t"a": 1\\n}'
    """
    if original is None or not original.strip():
        return dumps(data, indent=2) + "\n"
    return dumps(data, **_style(original)) + ("\n" if original.endswith("\n") else "")


class _Member(NamedTuple):
    key: str
    start: int  # where the key's string starts
    value_start: int
    value_end: int
    comma: int | None  # the comma after the value, if any


def _members(source: str) -> tuple[int, int, list[_Member]]:
    """The top-level object's braces and members in ``source`` (comments already blanked)."""
    from json.decoder import scanstring

    decoder = _decoder()
    ws = re.compile(r"\s*")
    i = ws.match(source, 0).end()
    if not source.startswith("{", i):
        raise ValueError("not an object")
    opening = i
    i = ws.match(source, i + 1).end()
    members: list[_Member] = []
    if source.startswith("}", i):
        return opening, i, members
    while True:
        start = i
        key, i = scanstring(source, i + 1)
        i = ws.match(source, i).end()
        i = ws.match(source, i + 1).end()  # past the colon
        _, end = decoder.raw_decode(source, i)
        j = ws.match(source, end).end()
        if source.startswith(",", j):
            members.append(_Member(key, start, i, end, j))
            i = ws.match(source, j + 1).end()
        else:
            members.append(_Member(key, start, i, end, None))
            return opening, j, members


def edit_hooks(original: str | None, data: dict, new: dict, client: str) -> str:
    """The file's text with only its top-level "hooks" changed to ``new``'s: every other byte
    (other keys, their indent, numbers, comments) stays as it is.

    Falls back to writing the whole object in the file's style when it is new or empty.
    """
    if original is None or not original.strip() or not data:
        return dump_like(new, original)
    source = blank_comments(original) if comments_allowed(client) else original
    opening, closing, members = _members(source)
    style = _style(original)
    indent = style.get("indent")
    hooks = [m for m in members if m.key == "hooks"]
    if "hooks" in new:
        value = dumps(new["hooks"], **style)
        if indent is not None:
            value = value.replace("\n", "\n" + indent)  # the value sits one level in
        if hooks:
            last = hooks[-1]
            return original[:last.value_start] + value + original[last.value_end:]
        after = members[-1]
        sep = ",\n" + indent if indent is not None else style["separators"][0]
        colon = ": " if indent is not None else style["separators"][1]
        return original[:after.value_end] + f"{sep}{json.dumps('hooks')}{colon}{value}" + original[after.value_end:]
    if not hooks:
        return original
    at = members.index(hooks[-1])
    gone = members[at]
    if len(members) == 1:
        return original[:opening] + "{}" + original[closing + 1:]
    if at > 0:  # from the comma before it to its end
        before = members[at - 1]
        return original[:before.comma] + original[gone.value_end if gone.comma is None else gone.comma:]
    return original[:gone.start] + original[members[at + 1].start:]


# ---------------------------------------------------------------------------------------------
# Editing the hooks


def _strip_ours(groups: list) -> tuple[list, int | None]:
    """The groups without our handlers (a group left empty goes), and where the first of ours was."""
    out: list = []
    first = None
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            out.append(group)
            continue
        kept = [h for h in handlers if not (isinstance(h, dict) and launcher(h.get("command")))]
        if len(kept) == len(handlers):
            out.append(group)
            continue
        if first is None:
            first = len(out)
        if kept:
            out.append({**group, "hooks": kept})
    return out, first


def _our_group(group: Group, mem: list[str]) -> dict:
    entry: dict = {}
    if group.matcher is not None:
        entry["matcher"] = group.matcher
    entry["hooks"] = [{"type": "command", "command": command_line(mem, args),
                       **({} if timeout is None else {"timeout": Number(str(timeout))})}
                      for args, timeout in group.handlers]
    return entry


def with_hooks(data: dict, client: str, events: Iterable[str], mem: list[str]) -> dict:
    """A copy of the settings with our entries for ``events`` (replacing any older ones of ours)."""
    hooks = dict(data.get("hooks") or {})
    for event in events:
        ours = [_our_group(g, mem) for g in groups_for(client) if g.event == event]
        kept, first = _strip_ours(list(hooks.get(event) or []))
        at = len(kept) if first is None else first
        hooks[event] = kept[:at] + ours + kept[at:]
    return {**data, "hooks": hooks}  # an existing "hooks" keeps its place


def without_hooks(data: dict, events: Iterable[str]) -> dict:
    """A copy of the settings with our entries for ``events`` gone, and nothing else."""
    if not isinstance(data.get("hooks"), dict):
        return data
    hooks = dict(data["hooks"])
    for event in events:
        if event not in hooks:
            continue
        kept, first = _strip_ours(list(hooks[event]))
        if first is None:
            continue
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    out = dict(data)
    if hooks:
        out["hooks"] = hooks
    elif data["hooks"]:
        del out["hooks"]  # we emptied it
    return out


class Change(NamedTuple):
    """What an install or uninstall does to one settings file."""

    client: str
    scope: str
    path: str
    changed: bool
    before: str | None  # the file's text; None when absent
    after: str
    events: tuple[str, ...]
    backup: str | None = None
    reformatted: bool = False  # other keys' formatting could not be kept byte for byte

    def as_dict(self) -> dict:
        return {"client": self.client, "scope": self.scope, "settings": self.path, "changed": self.changed,
                "events": list(self.events), "backup": self.backup, "reformatted": self.reformatted}


def plan(client: str, scope: str, *, install: bool, events: Iterable[str], mem: list[str] | None = None,
         project: str | None = None, env: Mapping[str, str] | None = None) -> Change:
    """What install (or uninstall) would write; nothing is written."""
    path = settings_path(client, scope, project, env)
    current = read_settings(path, client)
    events = tuple(events)
    if install:
        new = with_hooks(current.data, client, events, mem or running_mem())
    else:
        new = without_hooks(current.data, events)
    if new == current.data and (current.text is not None or not install):  # uninstall makes no file
        return Change(client, scope, current.path, False, current.text, current.text or "", events)
    after = edit_hooks(current.text, current.data, new, client)
    return Change(client, scope, current.path, True, current.text, after, events)


def apply(change: Change, env: Mapping[str, str] | None = None) -> Change:
    """Write a planned change: the old file copied to the state directory, then the new one atomically.

    Refuses (exit 4) when the file changed since it was planned.
    """
    if not change.changed:
        return change
    from mem.core.memdir.files import atomic_write

    now = read_settings(change.path, change.client)
    if now.text != change.before:
        raise RefusedError(f"{change.path} changed while mem was editing it; run the command again")
    backup = None
    if change.before is not None:
        backup = _backup(change, env)
    os.makedirs(os.path.dirname(change.path), exist_ok=True)
    atomic_write(change.path, change.after.encode("utf-8"))
    return change._replace(backup=backup)


def _backup(change: Change, env: Mapping[str, str] | None) -> str:
    import time

    from mem.core.memdir.files import atomic_write
    from mem.core.memdir.state import settings_backups

    folder = settings_backups(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = f"{change.client}-{change.scope}-{stamp}"
    name, n = f"{base}.json", 1
    while os.path.exists(os.path.join(folder, name)):
        n += 1
        name = f"{base}-{n}.json"
    path = os.path.join(folder, name)
    atomic_write(path, (change.before or "").encode("utf-8"))
    os.chmod(path, 0o600)
    return path


# ---------------------------------------------------------------------------------------------
# Status


class Entry(NamedTuple):
    """One of our hook handlers found in a settings file."""

    client: str
    scope: str
    settings: str
    event: str
    matcher: str | None
    command: str
    runs: bool
    problem: str | None  # why it does not run
    last_fired: str | None  # ISO time of the last hook payload read for this client and event
    wrapped: bool = False  # the user's command runs mem inside it: install and uninstall leave it

    def as_dict(self) -> dict:
        return self._asdict()


#: What a client gives its hooks at worst: cron's PATH, and the minimal one of a GUI-launched client.
MINIMAL_PATH = "/usr/bin:/bin"


def check_runs(words: list[str], env: Mapping[str, str] | None = None, *,
               project_root: str | None = None) -> str | None:
    """None when ``<words> --version`` runs under the minimal PATH; else what went wrong, in one line.

    With ``project_root`` (the words come from a settings file inside that repository, which its
    author wrote), they are run only when they are this mem or absolute paths outside the project
    (and not ``-m``, which imports from where it runs): a cloned repository must not get its own
    program run by ``mem hooks status`` or ``mem doctor``. It always runs from ``/``, never from here.
    """
    import subprocess

    if project_root is not None and not _safe_to_run(words, project_root):
        return (f"not run to check it: {' '.join(words)} comes from the project's own settings and is not "
                f"this mem ({' '.join(running_mem())}) nor an absolute path outside the project")
    run_env = dict(os.environ if env is None else env)
    run_env["PATH"] = MINIMAL_PATH
    command = " ".join(shlex.quote(w) for w in words) + " --version"
    try:
        proc = subprocess.run(["/bin/sh", "-c", command], env=run_env, stdin=subprocess.DEVNULL, cwd="/",
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0 and proc.stdout.startswith("mem "):
        return None
    said = " ".join((proc.stderr or proc.stdout).split())[:200]
    return f"exit {proc.returncode} with PATH={MINIMAL_PATH}" + (f": {said}" if said else "")


def _safe_to_run(words: list[str], project_root: str) -> bool:
    """Whether words from a project's settings may be run: this mem, or absolute paths outside it."""
    if list(words) == running_mem():
        return True
    if "-m" in words:
        return False
    root = os.path.realpath(project_root)
    for word in words:
        if not os.path.isabs(word):
            return False
        real = os.path.realpath(word)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return False
    return True


def last_fired(client: str, event: str, command: str, env: Mapping[str, str] | None = None) -> str | None:
    from mem.core.hooks import subcommand
    from mem.core.memdir.manifest import iso_utc_ms
    from mem.core.memdir.state import hook_stamp

    words = launcher(command) or []
    try:
        sub = subcommand(shlex.split(command)[len(words):])
    except ValueError:
        return None
    event = _our_event(client, event)  # the payload's event, as the hook stamps it
    try:
        mtime = os.stat(hook_stamp(client, event, sub, env)).st_mtime_ns
    except OSError:
        return None
    return iso_utc_ms(mtime // 1_000_000)


def _our_event(client: str, event: str) -> str:
    """A client's event name as mem reads its payload (Gemini CLI's BeforeAgent is UserPromptSubmit)."""
    return getattr(_client(client), "HOOK_EVENTS", {}).get(event, event)


def entries(client: str, scope: str, project: str | None = None, env: Mapping[str, str] | None = None,
            checked: dict | None = None) -> list[Entry]:
    """Our handlers in one settings file, each checked: does its mem run, when did it last fire."""
    from mem.core import paths

    path = settings_path(client, scope, project, env)
    data = read_settings(path, client).data
    checked = {} if checked is None else checked
    root = paths.project_root(project or os.getcwd())
    found = []
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h in handlers if isinstance(handlers, list) else ():
                command = h.get("command") if isinstance(h, dict) else None
                words = launcher(command)
                matcher = group.get("matcher")
                matcher = matcher if isinstance(matcher, str) else None
                if wrapped(command):
                    found.append(Entry(client, scope, path, event, matcher, command, True, None, None, True))
                    continue
                if not words:
                    continue
                key = (tuple(words), scope == "user")
                if key not in checked:
                    checked[key] = check_runs(words, env, project_root=None if scope == "user" else root)
                problem = checked[key]
                found.append(Entry(client, scope, path, event, matcher, command, problem is None, problem,
                                   last_fired(client, event, command, env)))
    return found


def wrapped_entries(client: str, scope: str, events: Iterable[str], project: str | None = None,
                    env: Mapping[str, str] | None = None) -> list[str]:
    """The user's commands that run mem inside them, for ``events``: what uninstall leaves."""
    events = set(events)
    data = read_settings(settings_path(client, scope, project, env), client).data
    return [h["command"] for event, groups in (data.get("hooks") or {}).items() if event in events
            for group in (groups if isinstance(groups, list) else ())
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for h in group["hooks"] if isinstance(h, dict) and wrapped(h.get("command"))]


def _turned_off(client: str, files: list[str], found: list[Entry]) -> tuple[str | None, list[Entry]]:
    """What the client's own settings say against our hooks (Gemini CLI's hooksConfig): all of them
    off, and the entries it skips by name."""
    module = _client(client)
    why, skipped = None, set()
    for path in files:  # user, then project: the later file's word wins
        data = read_settings(path, client).data
        said = module.hooks_off(data)
        if said is not None:
            why = f"{said} in {path}" if said else None
        skipped |= module.disabled_hooks(data)
    found = [f._replace(runs=False, problem=f"listed in hooksConfig.disabled: {label(client)} skips it")
             if f.command in skipped else f for f in found]
    return why, found


def status(client: str, scope: str | None = None, project: str | None = None,
           env: Mapping[str, str] | None = None) -> dict:
    """What ``mem hooks status`` reports: our entries in every scope of the client (or ``scope``),
    the events missing from all, what turns hooks off, and whether all is well."""
    scopes = (scope,) if scope else _client(client).SETTINGS_SCOPES
    checked: dict = {}
    found: list[Entry] = []
    seen = set()
    for name in scopes:
        path = os.path.realpath(settings_path(client, name, project, env))
        if path not in seen:  # in the home directory, project settings are the user's
            seen.add(path)
            found += entries(client, name, project, env, checked=checked)
    missing = [e for e in events_for(client) if not any(f.event == e for f in found)]
    disabled = _client(client).hooks_disabled_by(project, env)
    if hasattr(_client(client), "hooks_off"):
        disabled, found = _turned_off(client, [p for p in dict.fromkeys(
            os.path.realpath(settings_path(client, s, project, env)) for s in scopes)], found)
    ok = not missing and all(f.runs for f in found) and not disabled
    return {"client": client, "entries": found, "missing": missing, "disabled_by": disabled, "ok": ok}

