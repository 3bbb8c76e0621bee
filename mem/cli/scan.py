"""mem scan: list the memories (the manifest)."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, memory_of
from mem.core.errors import ExitCode
from mem.core.guards.control import printable  # names made outside mem reach a terminal


@click.command("scan")
@click.option("--all", "all_", is_flag=True, help="List every topic file, not only the newest 200.")
@click.option("--check", is_flag=True, help="Report problems (frontmatter, type, description, index, secrets, poisoning); exit 1 if any.")
@click.option("--secrets", is_flag=True,
              help="Audit every file of the memory directory for secrets: rule and file:line of each, never the secret; exit 1 if any.")
@click.option("--client", type=click.Choice(("codex", "gemini")),
              help="List the memories Codex CLI or Gemini CLI keeps in its own files (what mem import --client takes), "
                   "not mem's.")
@memory_dir_options
@format_options
@click.pass_context
def scan_cmd(ctx: click.Context, all_: bool, check: bool, secrets: bool, client: str | None, where: dict,
             fmt: str) -> None:
    """List topic files newest first, one manifest line each.

    The text output is the manifest exactly as Claude Code's recall selector
    sees it: `- [type] relpath (mtime): description`.

    \b
    Example:
      mem scan | head -5
      mem scan --check || echo "memory needs attention"
      mem scan --secrets --json | jq -r '.[].rule_id' | sort | uniq -c
      mem scan --client codex

    With --client, the lines are `- [type] name.md (source): description`:
    the topic file each of the client's memories would become, and the
    file (and line) it comes from.
    """
    from mem.core.memdir import manifest

    if client:
        if check or secrets or all_:
            raise click.UsageError("--client lists the client's memories; it does not go with --check, --secrets or --all")
        ctx.exit(_client_memories(client, where, fmt))
    memory = memory_of(where, reading=True)
    root = memory.spelled
    if secrets:
        if check or all_:
            raise click.UsageError("--secrets audits every file; it does not go with --check or --all")
        ctx.exit(_audit_secrets(root, fmt))
    skipped = [] if check else None  # --check reports them as problems rather than warn
    if not os.path.isdir(root):
        render.info(f"no memory directory at {root}")
        headers = []
    else:
        from mem.core.memdir.state import cache_dir

        headers = manifest.scan(root, limit=None, cache_dir=cache_dir(memory), skipped=skipped)
        if not all_ and len(headers) > manifest.MAX_MEMORY_FILES:
            render.info(f"the newest {manifest.MAX_MEMORY_FILES} of {len(headers)} topic files listed "
                        "(what recall sees); --all lists every one")
            headers = headers[:manifest.MAX_MEMORY_FILES]
    team = _team_tier(where, all_, skipped)
    headers += team
    team_paths = {h.path for h in team}
    if check:
        from mem.core.memdir.index import check_headers, check_poison

        check_headers(memory, headers)
        check_poison(headers)
        headers += [manifest.skipped_header(s) for s in skipped or ()]
    if fmt != "text":
        render.out_rows((h.as_dict() for h in headers), fmt, None)
    elif check:
        for h in headers:
            for w in h.warnings:
                render.out(printable(f"{h.relpath}: {w.code}: {w.message}"))
    else:
        for h in headers:  # a pinned file is marked after the manifest line, which stays Claude Code's format
            mark = " [pinned]" if h.pinned else " [team]" if h.path in team_paths else ""
            render.out(printable(h.manifest_line() + mark))
    if check:
        bad = sum(1 for h in headers if h.warnings)
        problems = sum(len(h.warnings) for h in headers)
        if problems:
            render.info(f"{problems} problem{'s' * (problems != 1)} in {bad} of {len(headers)} files")
            ctx.exit(ExitCode.CHECK_FAILED)
        render.info(f"{len(headers)} files, no problems")


def _team_tier(where: dict, all_: bool, skipped: list | None) -> list:
    """The topic files of qwen-code's team tier when qwen-code reads it for this project (after the
    private ones; relpaths from the project root, ``.qwen/team-memory/...``, as no private one starts)."""
    if where.get("dir"):
        return []
    from mem.cli.common import resolve_dir
    from mem.clients import team_tier
    from mem.core.memdir import manifest

    tier = team_tier(resolve_dir(where, reading=True))
    if not (tier.separate and tier.on) or os.path.islink(tier.memory_dir) or not os.path.isdir(tier.memory_dir):
        return []
    headers = manifest.scan(tier.memory_dir, limit=None if all_ else manifest.MAX_MEMORY_FILES, skipped=skipped)
    prefix = os.path.relpath(tier.memory_dir, os.path.dirname(os.path.dirname(tier.memory_dir))).replace(os.sep, "/")
    return [h._replace(relpath=f"{prefix}/{h.relpath}") for h in headers]


def _client_memories(client: str, where: dict, fmt: str) -> int:
    from mem.clients import named
    from mem.core.paths import project_root

    found = named(client).own_memories(project_root(where.get("project") or os.getcwd()))
    render.out_rows((m.as_dict() for m in found), fmt, lambda r: printable(
        f"- [{r['type']}] {r['relpath']} ({r['source']}{':' + str(r['line']) if r['line'] else ''}): {r['description']}"))
    if not found:
        render.info(f"no memories of {client}'s own found")
    return ExitCode.OK


def _audit_secrets(root: str, fmt: str) -> int:
    """Every file under the memory directory (text files of any name), every line a rule matches."""
    from mem.core.grep import walk
    from mem.core.guards.secrets import scan_all
    from mem.core.memdir.files import read_bytes

    if not os.path.isdir(root):
        render.info(f"no memory directory at {root}")
        return ExitCode.OK
    rows = []
    files = hit_files = 0
    for path, rel in walk(root, ""):
        try:
            data = read_bytes(path)
        except OSError as exc:
            render.warn(f"scan: {printable(rel)}: {exc.strerror or exc}")
            continue
        if b"\0" in data[:8192]:
            continue  # binary: not something an agent reads as memory
        files += 1
        findings = scan_all(data.decode("utf-8", "replace"))
        hit_files += bool(findings)
        rows.extend({"path": path, "relpath": rel, "line": f.line, "rule_id": f.rule_id, "label": f.label} for f in findings)
    render.out_rows(rows, fmt, lambda r: f"{printable(r['relpath'])}:{r['line']}: {r['rule_id']} ({r['label']})")
    if rows:
        render.info(f"{len(rows)} secret{'s' * (len(rows) != 1)} in {hit_files} of {files} files")
        return ExitCode.CHECK_FAILED
    render.info(f"{files} file{'s' * (files != 1)}, no secrets")
    return ExitCode.OK
