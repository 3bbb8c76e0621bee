"""The ``mem`` executable: the recall hook straight to its flow, everything else through click.

The recall hook runs before every prompt the user sends, so its start-up is paid on every
prompt. Its command line, as ``mem hooks install`` writes it (``mem recall --hook`` and the
options of that command), is read here without importing click (some 16 ms of the hook's
start-up) and handed to core/hooks/recall.py. Any other command line, or one this reader does
not take whole (another option, a value out of range, an option before ``recall``), goes to the
click group, which gives the same result more slowly: the two paths share the flow.

uses: hooks.recall, hooks.payload, errors, env (Env: the debug rule, handed to the flow), jobs.backends (NAMES, for --backend only); cli
(everything else)
"""

from __future__ import annotations

import os
import sys

_FLAGS = {"--hook": "hook", "--offline": "offline", "--always-ask": "always_ask", "--force": "force",
          "--debug": "debug"}
_VALUES = {"--dir": "dir", "--project": "project", "--layout": "layout", "--settings": "settings_file",
           "--agent": "agent", "--scope": "scope", "--model": "model", "--timeout": "timeout",
           "--deadline": "deadline", "--limit": "limit", "--max-chars": "max_chars", "--recent-tools": "recent_tools",
           "--backend": "backend"}
_CHOICES = {"layout": ("auto", "claude", "qwen"), "scope": ("user", "project", "local")}


def parse_recall_hook(argv: list[str]) -> dict | None:
    """The options of ``recall --hook ...`` as `mem recall` would take them; None when click must read them."""
    if len(argv) < 2 or argv[0] != "recall":
        return None
    seen: dict = {"recent_tools": []}
    args = iter(argv[1:])
    for arg in args:
        name, eq, value = arg.partition("=")
        if not eq and arg in _FLAGS:
            seen[_FLAGS[arg]] = True
            continue
        if name not in _VALUES:
            return None
        if not eq:
            value = next(args, None)
            if value is None:
                return None
        key = _VALUES[name]
        if key == "recent_tools":
            seen[key].append(value)
        elif key in seen:
            return None  # given twice: click's rule (the last wins) is click's to apply
        else:
            seen[key] = value
    if not seen.get("hook"):
        return None
    try:
        options = _typed(seen)
    except ValueError:
        return None
    return options


def _typed(seen: dict) -> dict:
    for key, choices in _CHOICES.items():
        if key in seen and seen[key] not in choices:
            raise ValueError(key)
    if "backend" in seen:  # the backends' names only then: their package is no part of a keyless prompt
        from mem.core.jobs.backends import NAMES

        if seen["backend"] not in NAMES:
            raise ValueError("backend")
    out = dict(seen)
    for key, kind, low in (("limit", int, 1), ("max_chars", int, 1), ("timeout", float, None), ("deadline", float, None)):
        if key in out:
            value = kind(out[key])
            if (low is not None and value < low) or (low is None and not value > 0) or value != value:
                raise ValueError(key)
            out[key] = value
    if (out.get("agent") is None) != (out.get("scope") is None) or "" in (out.get("dir"), out.get("project")):
        raise ValueError("agent")  # click's path says what is wrong
    return out


def _telling_notices(run, *args):
    """``run(*args)``, then what the core told its user (a ``Notice``) on stderr, once each, as the CLI does."""
    import warnings

    from mem.core.errors import Notice

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", Notice)
        result = run(*args)
    told = []
    for w in caught:
        if not issubclass(w.category, Notice):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        elif str(w.message) not in told:
            told.append(str(w.message))
            sys.stderr.write(f"mem: warning: {w.message}\n")
    return result


def recall_hook(options: dict) -> int:
    """``mem recall --hook``: the memories for the prompt on stdout; never fails the prompt (exit 0)."""
    from mem.env import Env

    env = Env.from_process(("recall",), debug_flag=bool(options.get("debug")))
    debug = env.debug
    if options.get("backend"):
        os.environ["MEM_BACKEND"] = options["backend"]  # as --backend does on click's path
    try:
        from mem.core.hooks import RECALL_EVENTS, read_payload
        from mem.core.hooks import recall as flow

        deadline = options.get("deadline", flow.HOOK_DEADLINE)
        tools = [t.strip() for arg in options["recent_tools"] for t in arg.split(",") if t.strip()]
        recall_options = flow.RecallOptions(
            limit=options.get("limit", 5), offline=bool(options.get("offline")), model=options.get("model"),
            timeout=options.get("timeout", 5.0), deadline=flow.process_started() + deadline,
            always_ask=bool(options.get("always_ask")), tools=tools, force=bool(options.get("force")),
            max_chars=options.get("max_chars"), debug=debug)
        where = {"dir": options.get("dir"), "project": options.get("project"), "layout": options.get("layout", "auto"),
                 "agent": options.get("agent"), "scope": options.get("scope"),
                 "settings_file": options.get("settings_file")}
        payload = read_payload(events=RECALL_EVENTS, notice=lambda hint: sys.stderr.write(f"mem: {hint}\n"))
        result = _telling_notices(flow.on_prompt, payload, where, recall_options, env)
        for message in result.messages:
            sys.stderr.write(f"mem: {message}\n")
        if result.output:
            sys.stdout.write(result.output + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        from mem.render import silence_stdout

        silence_stdout()
    except (KeyboardInterrupt, SystemExit):
        pass
    except BaseException as exc:  # noqa: BLE001 - a hook must never break the session
        if debug:
            import traceback

            traceback.print_exc()
        from mem.core.errors import MemError

        message = str(exc) if isinstance(exc, MemError) else f"{type(exc).__name__}: {exc}"
        try:
            sys.stderr.write(f"mem: hook: {' '.join(message.split())}\n")
        except Exception:  # noqa: BLE001 - nothing more can be done
            pass
    return 0



def main(argv: list[str] | None = None) -> None:
    """The ``mem`` command."""
    args = sys.argv[1:] if argv is None else list(argv)
    options = parse_recall_hook(args)
    if options is not None:
        sys.exit(recall_hook(options))
    from mem.cli import cli

    # Inside a zipapp click would name the program after the file.
    cli.main(args=args, prog_name="mem", complete_var="_MEM_COMPLETE")
