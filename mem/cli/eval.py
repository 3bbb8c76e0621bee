"""mem eval: how well recall does on your own memories."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir
from mem.cli.model import backend_option
from mem.core.errors import ExitCode, NotFoundError, UsageError


@click.command("eval", short_help="Measure recall on your memories (Recall@5, top-1, latency).")
@click.argument("cases_file", required=False, metavar="[CASES]")
@click.option("--from-transcripts", "transcripts", is_flag=False, flag_value="", default=None, metavar="[PATH]",
              help="Build the cases from the project's sessions (or the transcript or directory PATH): each "
                   "prompt, and the memory files the agent then read or was shown.")
@click.option("--print-cases", is_flag=True, help="Print the cases as JSON Lines and stop (to keep or edit them).")
@click.option("--offline", is_flag=True, help="Run the offline ranker only; never call a model.")
@backend_option
@click.option("--model", metavar="NAME", help="The selector model (as for mem recall).")
@click.option("--timeout", type=float, default=5.0, show_default=True, metavar="SECONDS",
              help="Give up on the model after this long (that case falls back to the offline ranker).")
@memory_dir_options
@format_options
@click.pass_context
def eval_cmd(ctx: click.Context, cases_file: str | None, transcripts: str | None, print_cases: bool, offline: bool,
             model: str | None, timeout: float, where: dict, fmt: str) -> None:
    """Measure recall on your memories: Recall@5, top-1 and no-result precision, latency.

    CASES is a JSON Lines file (or - for stdin) of {"query": ..., "relevant":
    [relpaths]}; an empty list means nothing should surface. Each selector —
    the offline ranker, and with an API key the model, as mem recall runs it
    — answers every case. --from-transcripts needs no labels: it takes the
    prompts of the project's sessions and the memory files the agent read or
    was shown after each. Exit status 1 means there was no case to run.

    \b
    Example:
      mem eval cases.jsonl
      mem eval --from-transcripts --offline
      mem eval --from-transcripts --print-cases > cases.jsonl
    """
    from mem.cli.common import current_env
    from mem.core import evaluate
    from mem.core.memdir import manifest
    from mem.core.memdir.store import MemoryDir

    if (cases_file is None) == (transcripts is None):
        raise UsageError("give a CASES file (or -) or --from-transcripts, one of the two")
    if timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    resolution = resolve_dir(where, reading=True)
    root = resolution.memory_dir
    memory = MemoryDir(root)
    known = [h.relpath for h in manifest.scan(root)] if os.path.isdir(root) else []

    if cases_file is not None:
        cases = evaluate.load_cases(*_read_cases(cases_file))
    else:
        source = transcripts or resolution.transcripts_dir
        if not source:
            raise NotFoundError("no transcripts: no client keeps sessions for this memory directory; "
                                "give --from-transcripts PATH")
        if not os.path.exists(source):
            raise NotFoundError(f"no transcripts: looked in {source}, which does not exist (the client has not "
                                f"run in {resolution.project_root}?); give --from-transcripts PATH")
        files = evaluate.transcript_files(source)
        if not files:
            raise NotFoundError(f"no transcripts: looked in {source} and found no *.jsonl session")
        cases = evaluate.cases_from_transcripts(files, memory, known)
        if not cases:
            raise NotFoundError(f"no cases to run: in {len(files)} transcript{'s' if len(files) != 1 else ''} "
                                f"in {source}, no prompt was followed by a memory file read or shown")
    if print_cases:
        render.out_jsonl(c.as_dict() for c in cases)
        if not cases:
            ctx.exit(ExitCode.NOT_FOUND)
        return
    if not cases:
        raise NotFoundError("no cases to run: the cases file has none")
    unknown = evaluate.unknown_files(cases, known)
    if unknown:
        render.warn(f"not memories of {root}: {', '.join(unknown[:5])}{' …' if len(unknown) > 5 else ''}")

    selectors = ["offline"]
    if not offline:
        from mem.core.jobs import credentials

        if credentials.has_credentials():
            selectors.append("model")
        else:
            render.info("no API key: the model selector is left out (set ANTHROPIC_API_KEY)")
    reports = [evaluate.run(memory, cases, s, model=model, timeout=timeout,
                          log=render.debug if current_env().debug else None) for s in selectors]
    if fmt != "text":
        render.out_record({"memory_dir": root, "cases": len(cases), "selectors": reports}, fmt)
        return
    render.out(_table(reports))
    for r in reports:
        for m in r["misses"]:
            want = ", ".join(m["missing"]) or "nothing"
            render.out(f"{r['selector']}: {m['query']!r}: wanted {want}; got {', '.join(m['selected']) or 'nothing'}")


def _table(reports: list[dict]) -> str:
    def num(x) -> str:
        return "—" if x is None else f"{x:.2f}"

    rows = [("selector", "cases", "Recall@5", "top-1", "no-result", "median ms", "served by")]
    for r in reports:
        rows.append((r["selector"], f"{r['with_relevant']}+{r['without_relevant']}", num(r["recall_at_5"]),
                     num(r["top1_precision"]), num(r["no_result_precision"]), f"{r['median_ms']:.1f}",
                     ", ".join(f"{k} {v}" for k, v in sorted(r["paths"].items()))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def _read_cases(name: str) -> tuple[list[str], str]:
    from mem.core.memdir.files import MAX_STDIN_BYTES, RefusedRead, read_stream_text, read_text

    try:  # typed and capped: `mem eval /dev/zero` took 22 GB, a FIFO hung it
        if name == "-":
            return read_stream_text(sys.stdin, MAX_STDIN_BYTES).splitlines(), "<stdin>"
        return read_text(name, MAX_STDIN_BYTES).splitlines(), name
    except RefusedRead:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name} is not UTF-8 text") from None

