"""mem grep: search memories, or the project's transcripts as decoded text, like grep."""

from __future__ import annotations

import os
import sys
import time

import click

from mem import render
from mem.cli.common import memory_dir_options, resolve_dir
from mem.core.errors import ExitCode, UsageError
from mem.core.guards.control import printable

MEMORY_TYPES = ("user", "feedback", "project", "reference")


def _count(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{name}: not a number: {value!r}") from None
    if n < 0:
        raise UsageError(f"{name}: must not be negative: {value!r}")
    return n


@click.command("grep", short_help="Search memories, or transcripts as a person saw them, like grep.", context_settings={"help_option_names": ["--help"]})
@click.argument("args", nargs=-1, metavar="PATTERN [PATH]...")
@click.option("-e", "--regexp", "patterns", multiple=True, metavar="PATTERN",
              help="A pattern to search for; give several for any of them. PATH operands then all name files.")
@click.option("-F", "--fixed-strings", "fixed", is_flag=True, help="Patterns are literal strings, not regular expressions.")
@click.option("-E", "--extended-regexp", "extended", is_flag=True,
              help="Patterns are regular expressions (the default; Python syntax, close to grep -E).")
@click.option("-i", "--ignore-case", is_flag=True, help="Ignore case.")
@click.option("-w", "--word-regexp", "word", is_flag=True, help="Match whole words only.")
@click.option("-x", "--line-regexp", "whole_line", is_flag=True, help="Match whole lines only.")
@click.option("-v", "--invert-match", "invert", is_flag=True, help="Select lines that do not match.")
@click.option("-n", "--line-number", "line_numbers", is_flag=True,
              help="Prefix each line with its line number (in a transcript: the line of its JSONL record).")
@click.option("-H", "--with-filename", "filename", flag_value="with", help="Prefix each line with its file name.")
@click.option("-h", "--no-filename", "filename", flag_value="without", help="Never prefix lines with a file name.")
@click.option("-l", "--files-with-matches", "list_mode", flag_value="with", help="Print only the names of files with a selected line.")
@click.option("-L", "--files-without-match", "list_mode", flag_value="without", help="Print only the names of files without one.")
@click.option("-c", "--count", is_flag=True, help="Print only a count of selected lines per file.")
@click.option("-o", "--only-matching", is_flag=True, help="Print only the matched parts, one per line.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; exit 0 at the first match.")
@click.option("-s", "--no-messages", is_flag=True, help="No messages about unreadable files.")
@click.option("-m", "--max-count", metavar="NUM", help="Stop reading a file after NUM selected lines.")
@click.option("-A", "--after-context", metavar="NUM", help="Print NUM lines of context after each selected line.")
@click.option("-B", "--before-context", metavar="NUM", help="Print NUM lines of context before each selected line.")
@click.option("-C", "--context", metavar="NUM", help="Print NUM lines of context around each selected line.")
@click.option("-r", "-R", "--recursive", "recursive", is_flag=True,
              help="Accepted from grep's habit: mem grep always searches a directory's whole tree.")
@click.option("-a", "--text", is_flag=True, help="Search a file holding NUL bytes as text instead of saying it matches.")
@click.option("--color", "--colour", "color", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="Colour matches, file names and line numbers; auto means at a terminal without NO_COLOR.")
@click.option("--type", "types", multiple=True, type=click.Choice(MEMORY_TYPES),
              help="Only memories of this frontmatter type (repeat for several).")
@click.option("--since", metavar="WHEN",
              help="Only memories modified, or transcript messages sent, since WHEN: 2026-03-01, an ISO time, or an age like 7d, 24h, 30m.")
@click.option("--transcripts", is_flag=True,
              help="Search the project's transcripts (decoded message text) instead of its memories.")
@click.option("--all-projects", is_flag=True, help="Search every project's memories (or, with --transcripts, transcripts): Claude Code's and qwen-code's; --layout keeps one.")
@click.option("--role", "roles", multiple=True, type=click.Choice(["user", "assistant", "tool"]),
              help="Transcripts: only messages from the user, the assistant, or tool results (repeat for several).")
@click.option("--json", "as_json", is_flag=True,
              help="Output JSON lines in ripgrep's --json format (begin, match, context, end, summary).")
@memory_dir_options
@click.pass_context
def grep_cmd(ctx: click.Context, args: tuple[str, ...], patterns: tuple[str, ...], fixed: bool, extended: bool,
             ignore_case: bool, word: bool, whole_line: bool, invert: bool, line_numbers: bool,
             filename: str | None, list_mode: str | None, count: bool, only_matching: bool, quiet: bool,
             no_messages: bool, max_count: str | None, after_context: str | None, before_context: str | None,
             context: str | None, recursive: bool, text: bool, color: str, types: tuple[str, ...], since: str | None,
             transcripts: bool, all_projects: bool, roles: tuple[str, ...], as_json: bool, where: dict) -> None:
    """Search memories, or transcripts as the text a person saw, like grep.

    With no PATH, searches every topic file (and MEMORY.md, logs, team/) of
    the memory directory; with --transcripts, the project's transcripts, each
    JSONL record decoded to its message text first, so quotes, newlines and
    non-ASCII match as written rather than as JSON escapes. A pattern holding
    a newline matches across lines. Exit 0 when a line was selected, 1 when
    none was, 2 on a usage error or an unreadable PATH.

    \b
    Example:
      mem grep -in 'postgres' --type feedback
      mem grep --transcripts -F 'git push --force' --since 7d
      mem grep --transcripts --json -w deploy | jq -c 'select(.type=="match") | .data.uuid'
    """
    from mem.core import grep as core
    from mem.core.grep.printers import JsonPrinter, TextPrinter

    args = list(args)
    if not patterns:
        if not args:
            raise UsageError("missing PATTERN (mem grep [OPTIONS] PATTERN [PATH]...)")
        patterns = (args.pop(0),)
    if fixed and extended:
        raise UsageError("-F and -E are mutually exclusive")
    if as_json and (count or list_mode):
        raise UsageError("--json does not go with -c, -l or -L")
    if count and list_mode:
        raise UsageError("-c does not go with -l or -L")
    if types and transcripts:
        raise UsageError("--type selects memories; it does not go with --transcripts")
    if roles and not transcripts and not any(a.endswith(core.TRANSCRIPT_SUFFIX) for a in args):
        raise UsageError("--role selects transcript messages; add --transcripts")
    if all_projects and args:
        raise UsageError("--all-projects searches every project; it does not go with PATH")
    n_max = _count(max_count, "--max-count")
    n_context = _count(context, "--context") or 0
    n_after = _count(after_context, "--after-context")
    n_before = _count(before_context, "--before-context")
    after = n_context if n_after is None else n_after
    before = n_context if n_before is None else n_before
    since_ts = core.parse_since(since) if since else None

    matcher = core.Matcher(patterns, fixed=fixed, ignore_case=ignore_case, word=word,
                           whole_line=whole_line, invert=invert)
    collect = not (quiet or count or list_mode)
    options = core.Options(
        before=before if collect else 0,
        after=after if collect else 0,
        max_count=n_max,
        first_only=bool(quiet or list_mode),
        collect=collect,
        types=frozenset(types) if types else None,
        since=since_ts,
        roles=frozenset(roles) if roles else None,
        text=text,
        message_lines=as_json,  # only --json shows a line's number within its message
    )

    # What to search, and whether names are shown by default (as grep -r does for directories).
    if args:
        targets = core.path_targets(args, transcripts)
        many = len(args) > 1 or any(os.path.isdir(a) for a in args)
    else:
        many = True
        res = resolve_dir(where, reading=not (all_projects or transcripts))
        if all_projects:
            targets = _all_projects_targets(where.get("layout") or "auto", transcripts)
            if not targets:
                render.info("nothing to search in any project (Claude Code or qwen-code)")
                ctx.exit(ExitCode.NOT_FOUND)
        elif transcripts:
            root, kind = res.transcripts_dir, "transcript"
        else:
            root, kind = res.memory_dir, "memory"
        if not all_projects:
            what = "transcripts" if transcripts else "memory directory"
            if not root or not os.path.isdir(root):
                render.info(f"no {what} at {root}")
                ctx.exit(ExitCode.NOT_FOUND)
            targets = core.dir_targets(root, kind)
            if not targets:
                render.info(f"nothing to search in {root}")
                ctx.exit(ExitCode.NOT_FOUND)
    show_names = {"with": True, "without": False}.get(filename or "", many)

    use_color = color == "always" or (color == "auto" and render.use_color(sys.stdout))
    out = TextPrinter(use_color, show_names, line_numbers, only_matching, before > 0 or after > 0)
    progress = _Progress(targets) if sys.stderr.isatty() and not quiet else None
    searcher = core.Searcher(matcher, options)
    json_out = JsonPrinter() if as_json else None

    any_selected = False
    errors = False
    results = core.search_all(searcher, targets, progress=progress.tick if progress else None,
                              render=(json_out or out).render)
    try:
        for result in results:
            target = result.target
            if progress:
                progress.file_done(target)
            if result.error is not None:
                if not no_messages:
                    if progress:
                        progress.clear()
                    render.warn(f"grep: {printable(target.display)}: {result.error}")
                errors = errors or target.explicit
                continue
            if result.skipped:
                continue
            if result.selected:
                any_selected = True
                if quiet:
                    break
            if progress and (result.selected or count or list_mode == "without"):
                progress.clear()
            if json_out is not None:
                _write(json_out.file(result))
            elif count:
                render.out(out.name_prefix(target.display) + str(result.selected) if show_names else str(result.selected))
            elif list_mode == "with":
                if result.selected:
                    render.out(out.name(target.display))
            elif list_mode == "without":
                if not result.selected:
                    render.out(out.name(target.display))
            elif result.binary:
                render.info(f"grep: {printable(target.display)}: binary file matches")
            elif not quiet:
                _write(out.file(result))
    finally:
        results.close()
    if progress:
        progress.clear()
    if json_out is not None:
        _write(json_out.summary())
    if any_selected and quiet:
        ctx.exit(ExitCode.OK)
    if errors:
        ctx.exit(ExitCode.USAGE)
    ctx.exit(ExitCode.OK if any_selected else ExitCode.NOT_FOUND)


def _write(text: str) -> None:
    if text:
        render.out(text, nl=False)


def _all_projects_targets(layout: str, transcripts: bool) -> list:
    """Every project's memories (or transcripts), Claude Code's and qwen-code's (``layout`` keeps one).

    Names are relative to the projects folder; when both clients have projects, the folder leads them.
    """
    from mem.clients import named
    from mem.core import grep as core
    from mem.clients import project_bases

    found = []
    for client, memory_base, transcripts_base in project_bases(layout):
        base = transcripts_base if transcripts else memory_base
        if os.path.isdir(base):
            under = named(client).TRANSCRIPTS_SUBDIR if transcripts else "memory"
            found.append((base, core.dir_targets(base, "transcript" if transcripts else "memory", under=under)))
    found = [(base, targets) for base, targets in found if targets]
    if len(found) < 2:
        return [t for _, targets in found for t in targets]
    from dataclasses import replace

    return [replace(t, display=os.path.join(base, t.display)) for base, targets in found for t in targets]


class _Progress:
    """One line on stderr while a long search runs (at a terminal only, after a second)."""

    DELAY = 1.0
    EVERY = 0.2

    def __init__(self, targets) -> None:
        self.total = sum(t.size for t in targets)
        self.files = len(targets)
        self.done_files = 0
        self.done_bytes = 0  # of finished files
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def tick(self, done: int, size: int) -> None:
        now = time.monotonic()
        if now - self.started < self.DELAY or now - self.last < self.EVERY:
            return
        self.last = now
        current = self.done_bytes + min(done, size or done)
        pct = f"{100 * current / self.total:.0f}% " if self.total else ""
        line = f"mem: grep: {pct}{_size(current)} of {_size(self.total)}, {self.done_files} of {self.files} files"
        sys.stderr.write("\r\x1b[K" + line)
        sys.stderr.flush()
        self.shown = True

    def file_done(self, target) -> None:
        self.done_files += 1
        self.done_bytes += target.size
        self.tick(0, 0)

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"
