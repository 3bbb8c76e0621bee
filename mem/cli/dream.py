"""mem dream: nightly consolidation that never loses a memory."""

from __future__ import annotations

import os
import sys

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of, resolve_dir
from mem.cli.model import backend_option, budget_option
from mem.core.errors import ExitCode


@click.command("dream")
@click.option("--offline", is_flag=True, help="Mechanical consolidation without a model (what runs when no key is set).")
@backend_option
@click.option("--model", metavar="MODEL", help="Model for the consolidation agent (default: MEM_MODEL_DREAM, MEM_MODEL, else the newest Sonnet).")
@budget_option("dream")
@click.option("--dry-run", is_flag=True, help="Run the whole job on a scratch copy; print the unified diff; change nothing; exit 1 if it would change something.")
@click.option("--force", is_flag=True, help="Skip the time and session gates (not the lock).")
@click.option("--min-hours", type=float, default=24.0, show_default=True, metavar="H", help="Time gate: hours since the last consolidation.")
@click.option("--min-sessions", type=int, default=5, show_default=True, metavar="N", help="Session gate: sessions touched since the last consolidation.")
@click.option("--session", metavar="ID", help="The current session, left out of the session count.")
@click.option("--keep", type=click.IntRange(min=1), default=20, hidden=True, help="Ignored: the history keeps every change (see mem history).")
@click.option("--wait", is_flag=True, help="Wait for a running dream instead of exiting 5.")
@click.option("--undo", is_flag=True, help="Take back the newest operation (same as mem undo).")
@click.option("--repo", metavar="DIR", type=click.Path(file_okay=False),
              help="Check the memories' claims against this git repository (default: the project's git root).")
@click.option("--all-projects", is_flag=True, help="Dream every project's memory directory, Claude Code's and qwen-code's (--layout narrows; for cron).")
@click.option("-q", "--quiet", is_flag=True, help="Say nothing on stderr when a gate is closed.")
@click.option("-v", "--verbose", is_flag=True, help="With --all-projects, report directories where nothing ran too.")
@memory_dir_options
@format_options
@click.pass_context
def dream_cmd(ctx: click.Context, offline: bool, model: str | None, budget: str | None, dry_run: bool, force: bool,
              min_hours: float,
              min_sessions: int, session: str | None, keep: int, wait: bool, undo: bool, repo: str | None, all_projects: bool,
              quiet: bool, verbose: bool, where: dict, fmt: str) -> None:
    """Consolidate memories: merge, date, prune and re-index, with undo.

    Gated like Claude Code's auto-dream: it runs when the last consolidation
    is at least --min-hours old and --min-sessions sessions have touched the
    project since. A closed gate exits 0 with the reason on stderr. What it
    changes is one operation of the history (`mem undo` takes it back), and is
    validated after; a failure takes back its own changes, and only those.
    Both go through the history, so with no git on PATH it refuses (exit 3)
    unless --dry-run.
    In a git repository (or with --repo) the memories' claims are checked as
    by mem verify: each stale one is a stale-claim finding, and the agent is
    given them to fix (moved paths to their new place, expired ones updated
    or dropped). The agent stops cleanly at its --budget (1M input tokens by
    default): what it did is repaired, validated and kept, and the run exits
    6 (with --all-projects, the nightly form, 0: a dream that used its
    budget is not a failure).

    \b
    Example:
      mem dream --dry-run --force | less
      mem dream --offline            # no key: merge exact duplicates, repair the index, report
      0 4 * * * mem dream --all-projects -q
    """
    from mem.core.jobs import credentials, llm

    if undo:
        from mem.cli.undo import report as report_undo
        from mem.core.memdir import revert
        memory = memory_of(where)
        report_undo(revert.undo(memory, dry_run=dry_run), "undo", dry_run, fmt, memory)
        return
    if model and not offline and not credentials.has_credentials():
        llm.model_config("dream", model)  # raises the ConfigError naming ANTHROPIC_API_KEY (exit 3)
    mode = "mechanical" if offline or not credentials.has_credentials() else "agent"
    if mode == "mechanical" and not offline and not quiet:
        render.info("no ANTHROPIC_API_KEY: running the mechanical consolidation (exact duplicates, index, findings); --offline says so quietly")
    if repo and all_projects:
        from mem.core.errors import UsageError

        raise UsageError("--repo names one project's repository; with --all-projects each project's is "
                               "found from its transcripts")
    targets = _targets(where, all_projects, repo)
    if mode == "agent":
        from mem.core.jobs.runner import spend_for

        spend_for("dream", budget)  # a bad MEM_BUDGET_DREAM: exit 3 before anything runs
    opts = dict(mode=mode, model=model, budget=budget, dry_run=dry_run, force=force, min_hours=min_hours,
                min_sessions=min_sessions, session=session, wait=wait, progress=_progress())
    results, worst = [], 0
    for memory_dir, transcripts_dir, the_repo in targets:
        try:
            result = _run_one(memory_dir, transcripts_dir, dict(opts, repo=the_repo))
        except Exception as exc:  # one project's failure must not stop the others
            if not all_projects:
                raise
            from mem.core.errors import MemError

            code = exc.exit_code if isinstance(exc, MemError) else ExitCode.FAILURE
            render.error(f"{memory_dir}: {exc}")
            worst = max(worst, int(code))
            continue
        results.append(result)
        _report(result, fmt, quiet, verbose or not all_projects, all_projects)
        if result.dry_run and result.changes:
            worst = max(worst, int(ExitCode.WOULD_CHANGE))
        elif result.stopped_at_budget and not all_projects:
            worst = max(worst, int(ExitCode.BUDGET))
    if fmt == "json":
        data = [r.as_dict() for r in results]
        render.out_json(data if all_projects else (data[0] if data else None))
    elif fmt == "jsonl":
        render.out_jsonl(r.as_dict() for r in results)
    if worst:
        ctx.exit(worst)


def _targets(where: dict, all_projects: bool, repo: str | None) -> list[tuple[str, str | None, str | None]]:
    """(memory directory, transcripts directory, git repository or None) of each project to dream."""
    if not all_projects:
        res = resolve_dir(where)
        return [(res.memory_dir, res.transcripts_dir, repo or res.git_root)]
    from mem.clients import named
    from mem.clients import project_bases

    out = []
    for client, memory_base, transcripts_base in project_bases(where.get("layout") or "auto"):
        try:
            names = sorted(os.listdir(memory_base))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            memory = os.path.join(memory_base, name, "memory")
            if os.path.isdir(memory):
                sub = named(client).TRANSCRIPTS_SUBDIR
                transcripts = os.path.join(transcripts_base, name, *((sub,) if sub else ()))
                out.append((memory + os.sep, transcripts, _repo_of(transcripts, name)))
    return out


def _repo_of(transcripts_dir: str, name: str) -> str | None:
    """The git root of the project a projects/ directory is for, from its newest transcript's ``cwd``.

    Only when that project's directory name is ``name`` (the cwd is that project's, not a
    subdirectory's elsewhere); None when nothing says, or the project is not in a repository.
    """
    import json

    from mem.core.paths import (
        find_canonical_git_root,
        find_git_root,
        project_root,
        sanitize_path,
    )

    try:
        logs = sorted((e for e in os.scandir(transcripts_dir) if e.name.endswith(".jsonl") and e.is_file()),
                      key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for entry in logs[:3]:
        try:
            from mem.core.memdir.files import read_lines

            for _, line in zip(range(50), read_lines(entry.path, 1 << 20)):
                try:
                    cwd = json.loads(line).get("cwd")
                except (ValueError, AttributeError):
                    continue
                if isinstance(cwd, str) and os.path.isdir(cwd):
                    root = find_git_root(cwd)
                    names = {sanitize_path(p) for p in (project_root(cwd), root, find_canonical_git_root(cwd)) if p}
                    return root if name in names else None
        except OSError:
            continue
    return None


def _run_one(memory_dir: str, transcripts_dir: str | None, opts: dict):
    from mem.core.jobs import dream
    from mem.core.memdir.store import MemoryDir

    return dream.run(MemoryDir(memory_dir), transcripts_dir, **opts)


def _progress():
    if not sys.stderr.isatty():
        return lambda _msg: None
    return lambda msg: sys.stderr.write(render.color_err("dream:", "2") + f" {msg}\n")


def _report(result, fmt: str, quiet: bool, chatty: bool, many: bool) -> None:
    prefix = f"{result.memory_dir}: " if many else ""
    if not result.ran:
        if chatty and not quiet:
            render.info(f"{prefix}not dreaming: {result.gate.reason}")
        return
    for r in result.refused:  # said even with -q and --json: the model tried something mem does not allow
        render.warn(f"{prefix}the model's {r['tool']} of {r['path'] or '?'} was refused: {r['reason']}")
    if fmt != "text":
        return
    if result.dry_run:
        render.out(result.diff or "", nl=False)
    else:
        for verb, paths in (("created", result.changes.created), ("updated", result.changes.updated), ("deleted", result.changes.deleted)):
            for p in paths:
                render.out(f"{verb} {prefix}{p}")
    if result.summary and not quiet:
        render.info(f"{prefix}{result.summary}")
    if result.stopped_at_budget:  # said even with -q: the nightly log should show why a dream was short
        b = result.budget or {}
        from mem.core.jobs.budget import format_size

        render.info(f"{prefix}stopped at its budget (in={format_size(b.get('input_tokens'))},"
                    f"out={format_size(b.get('output_tokens'))}, {b.get('source')}; spent "
                    f"{b.get('spent_input_tokens', 0):,} in, {b.get('spent_output_tokens', 0):,} out); "
                    "what it did is kept")
    for finding in result.findings if chatty and not quiet else []:
        render.warn(f"{prefix}{finding.line()}")
    for line in result.lint if chatty and not quiet else []:
        render.warn(f"{prefix}{line}")
    if not result.changes and not quiet and chatty:
        render.info(f"{prefix}nothing {'would change' if result.dry_run else 'to change'}")
