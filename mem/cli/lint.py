"""mem lint: flag memories that would read back as a permission grant or a rule bypass."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of
from mem.core.errors import ExitCode, UsageError


@click.command("lint", short_help="Flag memories that read as permission grants or rule bypasses.")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--threshold", type=float, default=1.0, show_default=True, metavar="SCORE",
              help="Flag a memory whose findings weigh at least SCORE (strong findings weigh 1, weak ones 0.5).")
@click.option("--all", "all_", is_flag=True,
              help="Also show findings below the threshold (and, with --json, every file checked).")
@click.option("--list-rules", is_flag=True, help="List the rules (id, category, weight, what each looks for) and exit.")
@memory_dir_options
@format_options
@click.pass_context
def lint_cmd(ctx: click.Context, paths: tuple[str, ...], threshold: float, all_: bool, list_rules: bool,
             where: dict, fmt: str) -> None:
    """Flag memories that read as permission grants, fabricated approvals or rule bypasses.

    Checks every Markdown file of the memory directory (topic files,
    MEMORY.md, logs, team/), or each PATH (a file, a directory, or - for
    stdin, e.g. content a hook is about to save). Prints
    `file:line: rule-id: message: "quote"` for each finding of a flagged
    file and exits 1 if any file is flagged. The rules are heuristics (see
    --list-rules and the man page): they catch the phrasings they know.

    \b
    Example:
      mem lint
      printf '%s\\n' "$proposed" | mem lint - || echo "refusing to save"
      mem lint --json | jq -r '.[] | .relpath'
    """
    from mem.core.guards import poison

    if list_rules:
        rows = [
            {"id": r.id, "category": r.category, "weight": r.weight, "description": r.description, "example": r.example}
            for r in poison.ALL_RULES
        ]
        render.out_rows(rows, fmt, lambda r: f"{r['id']}\t{r['category']}\t{r['weight']:g}\t{r['description']}")
        return
    if threshold <= 0:
        raise UsageError("--threshold must be greater than 0")

    targets = _targets(paths, where)
    results = []
    flagged = 0
    checked = 0
    for path, relpath in targets:
        try:
            from mem.core.memdir.files import read_stream_text  # capped: stdin may be /dev/zero

            text = read_stream_text(sys.stdin) if path == "-" else _read(path)
        except OSError as exc:
            render.warn(f"lint: {relpath}: {exc.strerror or exc}")
            continue
        checked += 1
        report = poison.scan_text(text, threshold=threshold)
        if report.flagged:
            flagged += 1
        if report.flagged or (all_ and (report.findings or fmt != "text")):
            results.append((path, relpath, report))
        if fmt == "text" and (report.flagged or all_):
            for f in report.findings:
                render.out(f"{relpath}:{f.line}: {f.rule_id}: {f.message}: \"{f.quote}\"")

    if fmt != "text":
        render.out_rows(
            ({"path": path, "relpath": relpath, "score": report.score, "flagged": report.flagged,
              "findings": [f.as_dict() for f in report.findings]} for path, relpath, report in results),
            fmt, None,
        )
    noun = "file" if checked == 1 else "files"
    if flagged:
        render.info(f"{flagged} of {checked} {noun} flagged as possible memory poisoning")
        ctx.exit(ExitCode.CHECK_FAILED)
    render.info(f"{checked} {noun} checked, none flagged")


def _read(path: str) -> str:
    from mem.core.memdir.files import read_bytes

    return read_bytes(path).decode("utf-8", "replace")


def _targets(paths: tuple[str, ...], where: dict) -> list[tuple[str, str]]:
    """(path to read, name to report) for each file to lint."""
    from mem.core.grep import walk

    if not paths:
        root = memory_of(where, reading=True).spelled
        if not os.path.isdir(root):
            render.info(f"no memory directory at {root}")
            return []
        return [(path, rel) for path, rel in walk(root, ".md")]
    out = []
    for arg in paths:
        if arg == "-":
            out.append(("-", "-"))
        elif os.path.isdir(arg):
            prefix = arg if arg.endswith("/") else arg + "/"
            out.extend((path, prefix + rel) for path, rel in walk(arg, ".md"))
        elif os.path.lexists(arg):
            out.append((arg, arg))
        else:
            raise UsageError(f"no such file or directory: {arg}")
    return out
