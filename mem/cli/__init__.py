"""The ``mem`` command group: dispatch, and errors turned into exit codes at the edge.

Commands live one per module and are imported only when used (``mem --help``
and completion import them all, so each must stay cheap to import).
"""

from __future__ import annotations

import importlib
import re
import sys

import click

from mem import __version__
from mem.cli.common import format_options, memory_dir_options
from mem.env import Env
from mem.core.errors import ExitCode, MemError, Notice, is_storage_error

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
    "cost": "mem.cli.cost:cost_cmd",
    "verify": "mem.cli.verify:verify_cmd",
    "team": "mem.cli.team:team_cmd",
    "export": "mem.cli.export:export_cmd",
    "import": "mem.cli.import_:import_cmd",
    "relocate": "mem.cli.relocate:relocate_cmd",
    "promote": "mem.cli.promote:promote_cmd",
    "demote": "mem.cli.promote:demote_cmd",
    "hooks": "mem.cli.hooks:hooks_cmd",
    "cron": "mem.cli.cron:cron_cmd",
    "complete": "mem.cli.complete:complete_cmd",
    "model": "mem.cli.model:model_cmd",
    "doctor": "mem.cli.doctor:doctor_cmd",
    "help": "mem.cli:help_cmd",
}


DEBUG_HELP = "Show tracebacks and model calls (also MEM_DEBUG=1)."


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
        return _with_debug(getattr(importlib.import_module(module), attr))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Keep COMMANDS order rather than click's alphabetical one.
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                # The whole first sentence, wrapped if it must be, never cut with "...".
                rows.append((name, cmd.get_short_help_str(limit=1000)))
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
        path, params, json_mode = _command_line(self, argv)
        env = Env.from_process(tuple(path))  # this run's surroundings, handed to every command as ctx.obj
        # A hook must never break the agent's session: whatever happens, exit 0.
        hook = bool(params.get("hook"))
        code = run(self, argv, prog_name or "mem", complete_var, hook, env, json_mode=json_mode, **extra)
        if standalone_mode:
            sys.exit(code)
        return code


def _command_line(group: click.Group, argv: list[str]) -> tuple[list[str], dict, str | None]:
    """The names of the command run (``["team", "sync"]``), its parameters, and its JSON format, before click runs it.

    The arguments are parsed as click will parse them, without callbacks' effects
    or type checks (unknown options are passed over, so ``mem recall --hook --bogus``
    is still a hook and exits 0). The parameters say whether the command is given
    its own ``--hook`` option: the word elsewhere (``mem grep -e --hook``, a query
    after ``--``) is data. If the arguments do not parse at all, a ``--hook`` before
    any ``--`` counts. The format is "json" or "jsonl" when the command has that
    option and it is given, on the command or before it (``mem --json verify``), so
    a failure can be told in that format too; None otherwise.
    """
    cmd: click.Command | None = group
    args, parent, name, path = list(argv), None, "mem", []
    given: dict = {}  # --json / --jsonl given to the group, passed down as the command's defaults
    try:
        while isinstance(cmd, click.Group):
            parent = cmd.make_context(name, args, parent=parent, resilient_parsing=True)
            given = {k: True for k in ("as_json", "as_jsonl") if parent.params.get(k)} or given
            # click 8.2 renamed protected_args (and warns on the old name); read whichever this click has.
            protected = vars(parent).get("_protected_args", vars(parent).get("protected_args", []))
            rest = [*protected, *parent.args]
            if not rest:
                return path, {}, None
            name, args = rest[0], rest[1:]
            cmd = cmd.get_command(parent, name)
            path.append(name)
        if cmd is None:
            return path, {}, None
        params = cmd.make_context(name, args, parent=parent, resilient_parsing=True).params
        return path, params, _json_mode(params, given)
    except Exception:  # noqa: BLE001 - the arguments do not parse: click reports that later
        options = argv[: argv.index("--")] if "--" in argv else argv
        mode = "json" if "--json" in options else "jsonl" if "--jsonl" in options else None
        return path, {"hook": "--hook" in options}, mode


def _json_mode(params: dict, given: dict) -> str | None:
    """"json", "jsonl" or None: the command's own option first, then the group's (as _pass_down gives it)."""
    if params.get("as_json") and params.get("as_jsonl"):
        return None  # a usage error: neither format is asked for
    for key, mode in (("as_json", "json"), ("as_jsonl", "jsonl")):
        if params.get(key):
            return mode
    for key, mode in (("as_json", "json"), ("as_jsonl", "jsonl")):
        if key in params and given.get(key):
            return mode
    return None


def _with_debug(cmd: click.Command) -> click.Command:
    """``--debug`` after any command too (``mem scan --debug``), as before it."""
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _with_debug(sub)
    elif not any(p.name == "debug" for p in cmd.params):
        cmd.params.append(click.Option(["--debug"], is_flag=True, expose_value=False, help=DEBUG_HELP,
                                       callback=_set_debug))
    return cmd


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    env = ctx.find_object(Env)
    if value and not ctx.resilient_parsing and env is not None:
        env.debug_flag = True
    return value


def _did_you_mean(word: str, choices) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def run(group: click.Group, argv, prog_name, complete_var, hook: bool, env: Env, json_mode: str | None = None,
        **extra) -> int:
    """Run the command; every failure becomes one line on stderr and an exit code (and, with
    ``json_mode``, a JSON error object on stdout too, so ``mem verify --json | jq`` reads one)."""
    failed: list = []  # (message, kind) of the failure told on stderr
    if json_mode:
        from mem import render

        render.wrote[0] = False
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", Notice)
        code = _run(group, argv, prog_name, complete_var, hook, env, failed, **extra)
    told = set()
    for w in caught:  # what the core told its user (a Notice) is said here, once; any other warning as Python would
        if issubclass(w.category, Notice):
            from mem import render

            if str(w.message) not in told:
                told.add(str(w.message))
                render.warn(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    # With --json, a document already printed (forget's candidates, then exit 1) stays the only one;
    # --jsonl rows get the error as one more line.
    if failed and json_mode and not hook and (json_mode == "jsonl" or not render.wrote[0]):
        _json_error(*failed[0], code, json_mode)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from mem.render import silence_stdout

        silence_stdout()
        code = ExitCode.BROKEN_PIPE
    return 0 if hook else int(code)


def _json_error(message: str, kind: str, code: int, mode: str) -> None:
    """``{"error": {"message", "exit_code", "kind"}}`` on stdout: a document for --json, a line for --jsonl."""
    import json

    error = {"error": {"message": " ".join(str(message).split()), "exit_code": int(code), "kind": kind}}
    text = json.dumps(error, ensure_ascii=False, indent=2 if mode == "json" else None)
    try:
        sys.stdout.write(text + "\n")
    except (BrokenPipeError, ValueError):
        pass


def _run(group: click.Group, argv, prog_name, complete_var, hook: bool, env: Env, failed: list, **extra) -> int:
    try:
        rv = click.Group.main(group, argv, prog_name, complete_var, standalone_mode=False, obj=env, **extra)
        code = rv if isinstance(rv, int) else 0
    except click.ClickException as exc:
        _hide_arguments(exc)
        if hook:
            _hook_failed(exc.format_message())
            return 0
        if isinstance(exc, click.UsageError) and type(exc).__name__ != "NoArgsIsHelpError":
            from mem import render

            render.error(_usage_line(exc))
            failed.append((_usage_line(exc), "usage"))
        else:
            exc.show()
            failed.append((exc.format_message(), "usage" if isinstance(exc, click.UsageError) else "failure"))
        code = exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        if hook:
            return 0
        sys.stderr.write("\nmem: interrupted\n")
        failed.append(("interrupted", "interrupted"))
        code = ExitCode.INTERRUPTED
    except MemError as exc:
        if env.debug:
            _print_traceback()
        if hook:
            _hook_failed(str(exc))
            return 0
        from mem import render

        render.error(str(exc))
        failed.append((str(exc), exc.kind))
        code = exc.exit_code
    except (BrokenPipeError, StdoutClosed):
        # `mem scan | head -1`: the reader left; stop quietly like a C tool.
        from mem.render import silence_stdout

        silence_stdout()
        code = ExitCode.BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001 - the one place that turns surprises into a line
        if env.debug:
            _print_traceback()
        if hook:
            _hook_failed(f"{type(exc).__name__}: {exc}")
            return 0
        from mem import render

        if is_storage_error(exc):  # the disk said no (full, read-only...): not a bug of ours
            render.error(_describe(exc))
            failed.append((_describe(exc), "storage"))
            code = ExitCode.STORAGE
        else:
            code = getattr(exc, "exit_code", ExitCode.FAILURE)  # an OSError that says why, e.g. files.NotRegularFile
            hint = "" if env.debug or code != ExitCode.FAILURE else " (run with --debug for a traceback)"
            render.error(f"{_describe(exc)}{hint}")
            failed.append((_describe(exc), getattr(exc, "kind", "failure")))
    return code


#: What an unknown option looks like when it is one (a typo of ours: ``--nmae``), not text.
_OPTION_SHAPE = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,40}")
#: Likewise an unknown command (``scna``), not a pasted key.
_COMMAND_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,30}")


def _unknown_command(exc: click.ClickException) -> str | None:
    """The word click refused as a subcommand, if that is the error."""
    if not isinstance(exc, click.UsageError):
        return None
    if hasattr(exc, "command_name"):  # click >= 8.4: NoSuchCommand
        return exc.command_name
    m = re.fullmatch(r"No such command '(.*)'\.", exc.message, re.DOTALL)
    return m.group(1) if m else None


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
    unknown = _unknown_command(exc)
    if unknown is not None:
        exc.possibilities = None  # click >= 8.4 suggests from a group's own commands: _usage_line does, from all
        if not _COMMAND_SHAPE.fullmatch(unknown):
            exc.message = "No such command (the word given does not look like one, so it is not shown)."
    from mem.core.guards.secrets import redact

    exc.message = redact(exc.message)


def _usage_line(exc: click.UsageError) -> str:
    """click's four-line usage block as one line: the message and where to read more."""
    message = exc.format_message()  # click adds "Did you mean --json?" for a misspelled option
    ctx = exc.ctx
    unknown = _unknown_command(exc)
    if unknown is not None and _COMMAND_SHAPE.fullmatch(unknown) and ctx is not None and isinstance(ctx.command, click.Group):
        message += _did_you_mean(unknown, ctx.command.list_commands(ctx))  # mem scna, mem team snyc
    where = f" Try '{ctx.command_path} --help'." if ctx is not None else ""
    if where and not message.rstrip().endswith((".", "?", "!")):
        message = message.rstrip() + "."  # one sentence, then "Try ..."
    return f"{message}{where}"


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



@click.group(cls=MemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="mem", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help=DEBUG_HELP)
@memory_dir_options
@format_options
@click.pass_context
def cli(ctx: click.Context, debug: bool, where: dict, fmt: str) -> None:
    """Keep an AI coding agent's long-term memory in plain files.

    Memory is a directory of Markdown topic files indexed by MEMORY.md, the
    layout Claude Code's auto memory writes. Each command does one job, writes
    data to stdout and messages to stderr.

    The options below go before the command or after it (mem --dir X scan is
    mem scan --dir X); given in both places, the command's own wins. Each goes
    only to a command that has it (see mem help COMMAND).

    \b
    Example:
      mem scan --json | jq '.[].relpath'
    """
    env = ctx.find_object(Env)
    if debug and env is not None:
        env.debug_flag = True
    ctx.default_map = _pass_down(ctx)


def _pass_down(ctx: click.Context) -> dict | None:
    """The group's options given on the command line, as defaults for the command run."""
    from click.core import ParameterSource

    given = {p: ctx.params[p.name] for p in ctx.command.params
             if p.name != "debug" and ctx.get_parameter_source(p.name) == ParameterSource.COMMANDLINE}
    env = ctx.find_object(Env)
    path = env.command if env is not None else ()
    cmd: click.Command | None = ctx.command
    for name in path:
        cmd = cmd.get_command(ctx, name) if isinstance(cmd, click.Group) else None
    if not given or cmd is None or isinstance(cmd, click.Group):
        return None  # no command (click says so) or a group without its subcommand
    own = {p.name for p in cmd.params}
    for param in given:
        if param.name not in own:
            raise click.UsageError(f"{param.opts[0]} does not apply to '{ctx.info_name} {' '.join(path)}'", ctx)
    defaults = {param.name: value for param, value in given.items()}
    for name in reversed(path):
        defaults = {name: defaults}
    return defaults


@click.command("help")
@click.argument("names", nargs=-1, metavar="[COMMAND [SUBCOMMAND]]")
@click.pass_context
def help_cmd(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Print the help of mem or of a command (mem help scan).

    mem help COMMAND [SUBCOMMAND] prints what mem COMMAND [SUBCOMMAND] --help prints.
    """
    sub_ctx = ctx.parent
    for name in names:
        group = sub_ctx.command
        cmd = group.get_command(sub_ctx, name) if isinstance(group, click.Group) else None
        if cmd is None:
            raise click.UsageError(f"No such command '{name}'.", sub_ctx)
        sub_ctx = cmd.make_context(name, [], parent=sub_ctx, resilient_parsing=True)
    click.echo(sub_ctx.get_help(), color=sub_ctx.color)
