"""The ``mem`` command group: dispatch, and errors turned into exit codes at the edge.

Commands live one per module and are imported only when used (``mem --help``
and completion import them all, so each must stay cheap to import).
"""

from __future__ import annotations

import importlib
import os
import re
import sys

import click

from mem import __version__
from mem.core.errors import ExitCode, MemError, is_storage_error

# name -> "module:attribute"; the order here is the order in --help.
COMMANDS = {
    "path": "mem.cli.path:path_cmd",
    "scan": "mem.cli.scan:scan_cmd",
    "index": "mem.cli.index:index_cmd",
    "recall": "mem.cli.recall:recall_cmd",
    "eval": "mem.cli.eval:eval_cmd",
    "prompt": "mem.cli.prompt:prompt_cmd",
    "context": "mem.cli.context:context_cmd",
    "extract": "mem.cli.extract:extract_cmd",
    "remember": "mem.cli.remember:remember_cmd",
    "forget": "mem.cli.forget:forget_cmd",
    "dream": "mem.cli.dream:dream_cmd",
    "log": "mem.cli.log:log_cmd",
    "history": "mem.cli.history:history_cmd",
    "undo": "mem.cli.undo:undo_cmd",
    "restore": "mem.cli.restore:restore_cmd",
    "session": "mem.cli.session:session_cmd",
    "grep": "mem.cli.grep:grep_cmd",
    "lint": "mem.cli.lint:lint_cmd",
    "status": "mem.cli.status:status_cmd",
    "verify": "mem.cli.verify:verify_cmd",
    "team": "mem.cli.team:team_cmd",
    "export": "mem.cli.export:export_cmd",
    "import": "mem.cli.import_:import_cmd",
    "relocate": "mem.cli.relocate:relocate_cmd",
    "promote": "mem.cli.promote:promote_cmd",
    "demote": "mem.cli.promote:demote_cmd",
    "hooks": "mem.cli.hooks:hooks_cmd",
    "cron": "mem.cli.cron:cron_cmd",
}


def debug_enabled() -> bool:
    return os.environ.get("MEM_DEBUG", "") not in ("", "0") or _state["debug"]


_state = {"debug": False}


class StdoutClosed(Exception):
    """The reader of our stdout went away (``mem scan | head -1``)."""


class MemGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        module, attr = spec.split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Keep COMMANDS order rather than click's alphabetical one.
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=formatter.width - 6 - 12)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            # click turns EPIPE into exit 1 itself; carry it past click as its own exception.
            raise StdoutClosed() from exc

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        argv = list(sys.argv[1:] if args is None else args)
        # A hook must never break the agent's session: whatever happens, exit 0.
        hook = _hook_mode(self, argv)
        code = run(self, argv, prog_name or "mem", complete_var, hook, **extra)
        if standalone_mode:
            sys.exit(code)
        return code


def _hook_mode(group: click.Group, argv: list[str]) -> bool:
    """True when the command run is given its own ``--hook`` option.

    The word elsewhere (``mem grep -e --hook``, a query after ``--``) is data. The
    arguments are parsed as click will parse them, without callbacks or type
    checks (unknown options are passed over, so ``mem recall --hook --bogus``
    is still a hook and exits 0). If they do not parse at all, a ``--hook``
    before any ``--`` counts.
    """
    cmd: click.Command | None = group
    args, parent, name = list(argv), None, "mem"
    try:
        while isinstance(cmd, click.Group):
            parent = cmd.make_context(name, args, parent=parent, resilient_parsing=True)
            # click 8.2 renamed protected_args (and warns on the old name); read whichever this click has.
            protected = vars(parent).get("_protected_args", vars(parent).get("protected_args", []))
            rest = [*protected, *parent.args]
            if not rest:
                return False
            name, args = rest[0], rest[1:]
            cmd = cmd.get_command(parent, name)
        if cmd is None:
            return False
        return bool(cmd.make_context(name, args, parent=parent, resilient_parsing=True).params.get("hook"))
    except Exception:  # noqa: BLE001 - the arguments do not parse: click reports that later
        return "--hook" in argv[: argv.index("--")] if "--" in argv else "--hook" in argv


def run(group: click.Group, argv, prog_name, complete_var, hook: bool, **extra) -> int:
    try:
        rv = click.Group.main(group, argv, prog_name, complete_var, standalone_mode=False, **extra)
        code = rv if isinstance(rv, int) else 0
    except click.ClickException as exc:
        _hide_arguments(exc)
        if hook:
            _hook_failed(exc.format_message())
            return 0
        exc.show()
        code = exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        if hook:
            return 0
        sys.stderr.write("\nmem: interrupted\n")
        code = ExitCode.INTERRUPTED
    except MemError as exc:
        if debug_enabled():
            _print_traceback()
        if hook:
            _hook_failed(str(exc))
            return 0
        from mem import render

        render.error(str(exc))
        code = exc.exit_code
    except (BrokenPipeError, StdoutClosed):
        # `mem scan | head -1`: the reader left; stop quietly like a C tool.
        _silence_stdout()
        code = ExitCode.BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001 - the one place that turns surprises into a line
        if debug_enabled():
            _print_traceback()
        if hook:
            _hook_failed(f"{type(exc).__name__}: {exc}")
            return 0
        from mem import render

        if is_storage_error(exc):  # the disk said no (full, read-only...): not a bug of ours
            render.error(_describe(exc))
            code = ExitCode.STORAGE
        else:
            code = getattr(exc, "exit_code", ExitCode.FAILURE)  # an OSError that says why, e.g. files.NotRegularFile
            hint = "" if debug_enabled() or code != ExitCode.FAILURE else " (run with --debug for a traceback)"
            render.error(f"{_describe(exc)}{hint}")
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = ExitCode.BROKEN_PIPE
    return 0 if hook else int(code)


#: What an unknown option looks like when it is one (a typo of ours: ``--nmae``), not text.
_OPTION_SHAPE = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,40}")


def _hide_arguments(exc: click.ClickException) -> None:
    """A usage error names the argument it refuses; never one that may be a secret.

    Text that starts with a dash is parsed as an option, and click's "No such option"
    repeated it whole (a PEM key given to ``mem remember``): an unknown option is named only
    when it is shaped like one. Any other value click quotes (``--type VALUE``, an extra
    argument) goes through the secret scanner's redaction.
    """
    if isinstance(exc, click.NoSuchOption) and not _OPTION_SHAPE.fullmatch(exc.option_name):
        exc.message = "an argument that starts with '-' is not an option; put -- before text that starts with a dash"
        exc.possibilities = None
    from mem.core.guards.secrets import redact

    exc.message = redact(exc.message)


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}"


def _hook_failed(message: str) -> None:
    line = " ".join(str(message).split())
    try:
        sys.stderr.write(f"mem: hook: {line}\n")
    except Exception:  # noqa: BLE001 - nothing more can be done
        pass


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=MemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="mem", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks and model calls (also MEM_DEBUG=1).")
def cli(debug: bool) -> None:
    """Keep an AI coding agent's long-term memory in plain files.

    Memory is a directory of Markdown topic files indexed by MEMORY.md, the
    layout Claude Code's auto memory writes. Each command does one job, writes
    data to stdout and messages to stderr.

    \b
    Example:
      mem scan --json | jq '.[].relpath'
    """
    _state["debug"] = debug
