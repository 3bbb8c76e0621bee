"""mem model: which backend and model each job uses, where the credentials came from; test them."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options
from mem.core.errors import ExitCode
from mem.core.jobs.backends import NAMES as BACKENDS


def backend_option(f):
    """--backend NAME: the backend every model call of this command uses (MEM_BACKEND for its children)."""

    def set_backend(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value:
            os.environ["MEM_BACKEND"] = value  # read by the model factory, and by background children

    return click.option("--backend", type=click.Choice(BACKENDS), expose_value=False, callback=set_backend,
                        is_eager=True, metavar="NAME",
                        help=f"The model backend: {', '.join(BACKENDS)} (default: MEM_BACKEND, else detected; "
                             "see mem model).")(f)


def budget_option(job: str):
    """--budget SPEC: the spending cap of this run of ``job`` (parsed here, so a bad one is a usage
    error before anything runs; ``MEM_BUDGET_<JOB>`` and the job's default otherwise)."""
    from mem.core.jobs.budget import format_size
    from mem.core.jobs.llm import JOBS

    settings = JOBS[job]
    default = f"in={format_size(settings.input_budget)},out={format_size(settings.output_budget)}"

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from mem.core.jobs.budget import parse_budget

        if value is not None:
            try:
                parse_budget(value)
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None
        return value

    def decorate(f):
        return click.option("--budget", metavar="SPEC", callback=check,
                            help=f"The most tokens this run may spend: SIZE (input tokens) or in=SIZE,out=SIZE, "
                                 f"SIZE like 500k or 1.5M, or none; it stops cleanly before a request would go "
                                 f"over (default: MEM_BUDGET_{job.upper()}, else {default}).")(f)

    return decorate


def _backend_choice(f):
    return click.option("--backend", type=click.Choice(BACKENDS), metavar="NAME",
                        help=f"Only this backend: {', '.join(BACKENDS)} (default: MEM_BACKEND, else detected).")(f)


@click.group("model", invoke_without_command=True)
@_backend_choice
@format_options
@click.pass_context
def model_cmd(ctx: click.Context, backend: str | None, fmt: str) -> None:
    """Show each job's backend and model, and where its key came from.

    The secret itself is never shown. Backends, detected in this order unless
    --backend or MEM_BACKEND names one: bedrock and vertex (Claude Code's
    CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX, in the environment or its
    settings' env blocks; the mem[bedrock] / mem[vertex] extras), anthropic (ANTHROPIC_API_KEY or
    ANTHROPIC_AUTH_TOKEN in the environment), claude-settings (Claude Code's
    settings: env blocks, apiKeyHelper), openai (OPENAI_API_KEY /
    OPENAI_BASE_URL, or qwen-code's ~/.qwen/settings.json and .env files),
    claude-code (a claude executable on PATH: the Claude subscription through
    Claude Code itself, one claude -p session per job, with mem's tools only;
    recall never uses it). Exit 3 when none is configured.

    \b
    Example:
      mem model
      mem model --json | jq -r '.[] | select(.job=="extract") | .model'
      mem model test
    """
    if ctx.invoked_subcommand is not None:
        return
    from mem.core.jobs import llm

    rows = llm.describe(backend=backend)

    def text(row: dict) -> str:
        return f"{row['job']}\t{row['backend']}\t{row['model']}\t{row['credentials']} ({row['reason']})"

    render.out_rows(rows, fmt, text)


@model_cmd.command("test")
@_backend_choice
@click.option("--timeout", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="How long each backend may take to answer.")
@format_options
@click.pass_context
def test_cmd(ctx: click.Context, backend: str | None, timeout: float, fmt: str) -> None:
    """Send one tiny request to each configured backend; print its latency or its error.

    With --backend (or MEM_BACKEND), only that one. Exit 1 when one failed,
    3 when none is configured.

    \b
    Example:
      mem model test
      mem model test --backend openai --json
    """
    from mem.core.errors import ConfigError
    from mem.core.jobs import credentials, llm

    chosen = backend or ctx.parent.params.get("backend") or os.environ.get("MEM_BACKEND")
    names = [chosen] if chosen else credentials.configured_backends()
    if not names:
        raise ConfigError(llm.NO_CREDENTIALS)
    rows = [llm.probe(name, timeout=timeout) for name in names]

    def text(row: dict) -> str:
        if row["ok"]:
            return f"{row['backend']}\t{row['model']}\tok\t{row['latency_s']:.2f}s"
        return f"{row['backend']}\t{row['model'] or '-'}\tfailed\t{row['error']}"

    render.out_rows(rows, fmt, text)
    if not all(row["ok"] for row in rows):
        ctx.exit(ExitCode.CHECK_FAILED)
