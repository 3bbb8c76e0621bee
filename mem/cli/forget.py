"""mem forget: remove the memories a request is about, with undo."""

from __future__ import annotations

import re
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of
from mem.cli.model import backend_option
from mem.core.errors import ExitCode


@click.command("forget")
@click.argument("query", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True,
              help="Forget without asking (for scripts): every candidate, or only those a model is confident of.")
@click.option("--dry-run", is_flag=True, help="Print the unified diff of forgetting every candidate; change nothing; exit 1 if it would change something.")
@click.option("--offline", is_flag=True, help="Find candidates with the offline ranker, never a model.")
@backend_option
@click.option("--model", metavar="NAME", help="The model that finds candidates (default: MEM_MODEL_FORGET, MEM_MODEL, else the newest Sonnet).")
@click.option("--limit", type=click.IntRange(1, 50), default=10, show_default=True, metavar="N",
              help="Offer at most N candidates (stderr says when more match).")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, metavar="SECONDS",
              help="Time limit for the model call.")
@click.option("--keep", type=click.IntRange(min=1), default=20, hidden=True,
              help="Ignored: the history keeps every change (see mem history).")
@memory_dir_options
@format_options
def forget_cmd(query: tuple[str, ...], yes: bool, dry_run: bool, offline: bool, model: str | None, limit: int,
               timeout: float, keep: int, where: dict, fmt: str) -> None:
    """Remove the memories QUERY is about; `mem undo` brings them back.

    Candidates come from a model (ANTHROPIC_API_KEY) or the offline ranker,
    or QUERY names a topic file. At a terminal you choose which to forget;
    a file holding several memories loses only the chosen entries. When undo
    could not bring them back (no git on PATH: history is off; a version
    withheld for a secret), forget still removes them and says so on stderr
    instead of promising undo.

    \b
    Example:
      mem forget "tabs over spaces"
      mem forget --dry-run --offline staging database | less
      mem forget --yes feedback-testing.md && mem undo
    """
    from mem.cli.common import current_env
    from mem.core.jobs import credentials, forget, llm
    from mem.core.errors import NotFoundError, UsageError

    from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

    text = read_stream_text(sys.stdin).strip() if query == ("-",) else " ".join(query)
    interactive = not yes and not dry_run
    if interactive and not sys.stdin.isatty():
        raise UsageError("not at a terminal: use --yes to forget every candidate, or --dry-run to see them")
    memory = memory_of(where)
    strategy = "offline"
    if not offline and (model or credentials.has_credentials()):
        llm.model_config("forget", model)  # --model without a key: exit 3
        strategy = "model"
    search = forget.find(memory, text, strategy=strategy, model=model, limit=limit, timeout=timeout,
                         confirmed=not yes, log=render.debug if current_env().debug else None)
    for name in search.rejected:
        render.warn(f"the model named {name}, which is not a memory here; ignored")
    if not search.candidates:
        _output(forget.ForgetResult(memory.root, search, []), fmt)
        if dry_run:  # nothing would change: exit 0, as diff(1) does for equal files
            render.info(f"no memory matches {text!r}: nothing would be forgotten")
            return
        raise NotFoundError(f"no memory matches {text!r}")
    if fmt == "text" or interactive:
        _show(search)
    if search.more:
        render.info(f"more than {limit} memories match; only the first {limit} are offered"
                    + ("" if limit == 50 else f" (--limit {min(50, limit * 2)} offers more)"))
    if interactive:
        picked = _ask(len(search.candidates))
        chosen = [search.candidates[i - 1] for i in picked]
    elif yes:  # nobody looks: only what the model was sure of goes
        chosen = [c for c in search.candidates if c.confident]
        unsure = [c.relpath for c in search.candidates if not c.confident]
        if unsure:
            render.info(f"kept {len(unsure)} the model was not sure of (forget them by name): {', '.join(unsure)}")
    else:
        chosen = list(search.candidates)
    if not chosen:
        render.info("nothing forgotten")
        _output(forget.ForgetResult(memory.root, search, []), fmt)
        return
    result = forget.apply(memory, search, chosen, dry_run=dry_run)
    _output(result, fmt)
    if dry_run:
        raise click.exceptions.Exit(ExitCode.WOULD_CHANGE)
    n = len(chosen)
    from mem.core.memdir.revert import why_not_undoable

    what = f"forgot {n} {'memory' if n == 1 else 'memories'}"
    why = why_not_undoable(memory, memory.last_operation)
    if why is None:
        render.info(f"{what}; `mem undo` brings {'it' if n == 1 else 'them'} back "
                    f"(operation {(result.snapshot or '')[:12]})")
    else:  # never promise what undo cannot do
        render.warn(f"{what}; `mem undo` cannot bring {'it' if n == 1 else 'them'} back: {why}")


def _output(result, fmt: str) -> None:
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    elif result.dry_run:
        render.out(result.diff or "", nl=False)
    else:
        for verb, paths in (("deleted", result.deleted), ("updated", result.updated)):
            for rel in paths:
                render.out(f"{verb} {rel}")


def _show(search) -> None:
    n = len(search.candidates)
    what = "memory matches" if n == 1 else "memories match"
    lines = [f"mem: {n} {what} {search.query!r}:"]
    for i, c in enumerate(search.candidates, start=1):
        kind = f" [{c.type}]" if c.type else ""
        lines.append(f"  {i:>2}. {c.relpath}{kind} — {c.description or '(no description)'}")
        if c.entry is not None:
            lines.append(f"      entry {c.entry.index} of {c.entries_total}: {c.entry.title}")
        elif c.entries_total:
            lines.append(f"      the whole file ({c.entries_total} entries)")
        if c.reason:
            lines.append(f"      why: {' '.join(c.reason.split())}{'' if c.confident else ' (not sure)'}")
    sys.stderr.write("\n".join(lines) + "\n")


def _ask(n: int) -> list[int]:
    """Numbers of the candidates to forget, asked at the terminal; [] for none (also at end of input)."""
    example = "1" if n == 1 else "1 3" if n > 2 else "1 2"
    while True:
        sys.stderr.write(f"Forget which? all, none, or numbers like {example} [none]: ")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            sys.stderr.write("\n")
            return []
        picked = parse_answer(line, n)
        if picked is not None:
            return picked
        sys.stderr.write(f"mem: answer all, none, or numbers from 1 to {n}\n")


def parse_answer(answer: str, n: int) -> list[int] | None:
    """all / none / "1 3" / "1-3,5" → candidate numbers; None when the answer makes no sense."""
    a = answer.strip().lower()
    if a in ("", "n", "no", "none", "q", "quit"):
        return []
    if a in ("a", "all", "y", "yes"):
        return list(range(1, n + 1))
    picked: list[int] = []
    for part in re.split(r"[\s,]+", a):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            return None
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 1 <= lo <= hi <= n:
            return None
        picked += [i for i in range(lo, hi + 1) if i not in picked]
    return picked
