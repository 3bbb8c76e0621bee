#!/usr/bin/env python3
"""Generate man pages and shell completions from mem's click commands.

    .venv/bin/python scripts/gendocs.py          # (re)write man/ and completions/
    .venv/bin/python scripts/gendocs.py --check  # exit 1 listing files that differ; write nothing

Man pages (``man/mem.1``, ``man/mem-<cmd>.1``, ``man/mem-<cmd>-<sub>.1``) come from
walking ``mem.cli.cli`` with ``list_commands``/``get_command``, so a command added
to ``COMMANDS`` (or to a subgroup) gets its page without touching this file.
NAME, SYNOPSIS, DESCRIPTION and OPTIONS come from click's metadata; ENVIRONMENT,
EXIT STATUS, FILES and SEE ALSO are the same on every page and kept here.

Hand-written roff lives in ``man/src/<page>.<section>``, for example
``man/src/mem-scan.json-fields`` becomes a ``JSON FIELDS`` section after OPTIONS.
A snippet named after a generated section (description, options, environment,
exit-status, files, see-also) is added to that section instead, before the
generated part for exit-status and after it otherwise. A snippet for a page that
does not exist is an error, so renaming a command cannot orphan its docs.

Completions are whatever click emits for ``_MEM_COMPLETE={bash,zsh,fish}_source``,
from ``python -m mem`` (which names the program ``mem``, as the console script does).
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAN_DIR = ROOT / "man"
SRC_DIR = MAN_DIR / "src"
COMPLETIONS_DIR = ROOT / "completions"
PROG = "mem"

sys.path.insert(0, str(ROOT))

import click  # noqa: E402

_UNSET = getattr(__import__("click.core").core, "UNSET", object())  # click >= 8.3 marks "no default"

# --- what every page says ----------------------------------------------------------------------

#: The variables mem reads, the one table every page's ENVIRONMENT section is made from.
ENVIRONMENT = [
    ("MEM_DIR", "The memory directory to use, like --dir; it overrides every other rule. "
                "An empty value counts as unset."),
    ("MEM_STATE_DIR", "Where mem keeps its own bookkeeping (cursors, per-session recall state, "
                      "snapshots, locks), one subdirectory per memory directory. "
                      "Default: $XDG_STATE_HOME/mem, that is ~/.local/state/mem on Linux."),
    ("MEM_DEBUG", "Any value but empty or 0: print a traceback with an unexpected failure, like --debug."),
    ("NO_COLOR", "Any non-empty value: no colour, even at a terminal."),
    ("CLAUDE_CONFIG_DIR", "Claude Code's config home (default ~/.claude): its settings.json, and "
                          "projects/ with transcripts and, unless overridden, memory directories."),
    ("CLAUDE_CODE_REMOTE_MEMORY_DIR", "Keep memory directories (projects/*/memory, agent-memory) under "
                                      "this directory instead of the config home; transcripts stay "
                                      "where they are."),
    ("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "A memory directory that wins over the autoMemoryDirectory "
                                           "setting and the default (Claude Code's Cowork override)."),
    ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1, true, yes or on: auto memory is off (mem path warns); "
                                        "0, false, no or off: on, whatever the settings say."),
    ("CLAUDE_CODE_SIMPLE", "1, true, yes or on: auto memory is off, as in Claude Code's --bare mode."),
    ("CLAUDE_CODE_REMOTE", "1, true, yes or on, without CLAUDE_CODE_REMOTE_MEMORY_DIR: auto memory is off."),
    ("ANTHROPIC_API_KEY", "The key for the commands that call a model (ANTHROPIC_AUTH_TOKEN for a bearer "
                          "token instead); without one recall, forget and dream work offline; extract, session "
                          "update and a remember that must place its memory exit 3."),
    ("ANTHROPIC_BASE_URL", "The Messages API server to call instead of Anthropic's."),
    ("MEM_BACKEND", "The model backend: bedrock, vertex (Claude Code's Bedrock and Vertex set-ups), anthropic, "
                    "claude-settings (Claude Code's settings env blocks and apiKeyHelper), openai (OPENAI_API_KEY / "
                    "OPENAI_BASE_URL / OPENAI_MODEL, or qwen-code's settings and .env files) or claude-code (the "
                    "claude executable on PATH: one claude -p session per agent job, mem's tools only; never for "
                    "recall). Default: the first of these configured; mem model says which."),
    ("CLAUDE_CODE_USE_BEDROCK", "1, true, yes or on (in the environment or a Claude Code settings env block): "
                                "the model is on Amazon Bedrock, as for Claude Code (the mem[bedrock] extra): "
                                "region AWS_REGION or AWS_DEFAULT_REGION; credentials AWS_BEARER_TOKEN_BEDROCK, "
                                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE, else "
                                "boto3's chain; ANTHROPIC_BEDROCK_BASE_URL another endpoint; "
                                "CLAUDE_CODE_SKIP_BEDROCK_AUTH no signing (a gateway signs)."),
    ("CLAUDE_CODE_USE_VERTEX", "1, true, yes or on: the model is on Google Vertex AI, as for Claude Code (the "
                               "mem[vertex] extra): region CLOUD_ML_REGION, project ANTHROPIC_VERTEX_PROJECT_ID, "
                               "Google's application-default credentials (GOOGLE_APPLICATION_CREDENTIALS...); "
                               "ANTHROPIC_VERTEX_BASE_URL another endpoint; CLAUDE_CODE_SKIP_VERTEX_AUTH no token."),
    ("MEM_CLAUDE_CODE_ENV_FILE", "For tests: a file of NAME=value lines added to the environment of the "
                                 "claude process the claude-code backend starts, and to no other."),
    ("OPENAI_BASE_URL", "An OpenAI-compatible chat-completions server (ending in /v1), with OPENAI_API_KEY "
                        "(none for a local server) and OPENAI_MODEL."),
    ("CLAUDE_CODE_API_KEY_HELPER_TTL_MS", "How long the output of Claude Code's apiKeyHelper is kept "
                                          "(0600, in the state directory) before it is run again. "
                                          "Default: 300000."),
    ("MEM_MODEL", "The model for every job, unless --model or the job's own variable says otherwise. "
                  "Default: claude-sonnet-5-5."),
    ("MEM_MODEL_RECALL", "The model for recall alone (it runs on every prompt: a fast one pays off); "
                         "likewise MEM_MODEL_FORGET, MEM_MODEL_EXTRACT, MEM_MODEL_REMEMBER, "
                         "MEM_MODEL_SESSION and MEM_MODEL_DREAM. Each wins over MEM_MODEL."),
    ("ANTHROPIC_DEFAULT_SONNET_MODEL", "Recall's model when neither MEM_MODEL_RECALL nor MEM_MODEL is set, "
                                       "as Claude Code's own recall uses it."),
    ("MEM_USER_DIR", "The user-level memory directory (mem promote, mem path --user), shared by every "
                     "project. Default: $XDG_DATA_HOME/mem/memory, that is ~/.local/share/mem/memory on Linux."),
    ("MEM_MANAGED_SETTINGS", "The managed (policy) settings file to read instead of "
                             "/etc/claude-code/managed-settings.json; empty: read none."),
    ("MEM_CONTEXT_WINDOW", "The model's context window in tokens, for the jobs that call a model "
                           "(default: 200,000 for Claude models and any model mem does not know; for an "
                           "OpenAI-compatible server, what it reports, else this, else 32,768, and this when "
                           "lower than what it reports); every request is kept inside it."),
    ("MEM_MAX_OUTPUT_TOKENS", "The largest answer the model may give, in tokens (default: its known limit)."),
    ("MEM_BUDGET_DREAM", "The most tokens one run of mem dream may spend, as --budget takes it: SIZE "
                         "(input tokens) or in=SIZE,out=SIZE, SIZE like 500k, 1.5M or 20000, or none (no cap); "
                         "a key left out keeps its default. Likewise MEM_BUDGET_EXTRACT, MEM_BUDGET_REMEMBER "
                         "and MEM_BUDGET_SESSION. Defaults: dream and extract in=1M,out=100k; remember "
                         "in=300k,out=20k; session in=300k,out=30k. Input counts every input token a reply "
                         "reports, cached ones included (mem's estimate when the server reports none). "
                         "--budget wins; a value that does not parse exits 3."),
]

#: One line per exit status. Every ExitCode value must be here (checked).
EXIT_MEANINGS = {
    0: "Success.",
    1: "Nothing found, a check failed, or a gate said no (each command says which).",
    2: "Usage error: a bad option, argument or combination of them.",
    3: "Configuration missing: no API key or model where one is required.",
    4: "Refused for safety: a secret, a path escaping the memory directory, a structure violation.",
    5: "A lock is held and --wait was not given.",
    6: "A model job stopped at its spending cap (--budget, MEM_BUDGET_<JOB>): what it did is kept and "
       "valid, and the next run goes on; not a failure (mem dream --all-projects exits 0 for it).",
    74: "The disk refused a write: no space left, over quota, read-only file system, or permission denied.",
    70: "Unexpected failure; one line on stderr (a traceback with --debug or MEM_DEBUG=1).",
    130: "Interrupted (Ctrl-C).",
    141: "Standard output was closed early, for example when piped to head(1); nothing is printed.",
}

#: FILES, as (path, what it is); the same on every page.
FILES = [
    ("~/.claude/projects/<project>/memory/",
     "The memory directory in Claude Code's layout. <project> is the project's canonical git root "
     "(or the project directory outside git) with every character but letters and digits turned into -."),
    ("MEMORY.md", "The index: one pointer per line, \"- [Title](file.md) \u2014 hook\", no frontmatter; "
                  "agents see the first 200 lines and 25,000 UTF-16 units."),
    ("*.md", "Topic files, at any depth, with YAML frontmatter: name, description, and type "
             "(user, feedback, project or reference)."),
    ("logs/YYYY/MM/YYYY-MM-DD.md", "Daily logs, append only."),
    ("team/", "Team memory, synced with a server, with its own MEMORY.md."),
    (".consolidate-lock", "The consolidation lock: its body is a PID, its mtime the time of the last dream."),
    ("~/.qwen/projects/<project>/memory", "The memory directory in qwen-code's layout (--layout qwen)."),
    ("$MEM_USER_DIR, ~/.local/share/mem/memory",
     "User-level memory, the same layout as a project's; mem prompt and mem recall add it after the project's."),
    ("$MEM_STATE_DIR, ~/.local/state/mem",
     "mem's own state, outside the memory directory: dirs/<key>/ per memory directory."),
    ("~/.claude/settings.json, .claude/settings.json, .claude/settings.local.json, "
     "/etc/claude-code/managed-settings.json",
     "Claude Code settings read for autoMemoryDirectory and autoMemoryEnabled."),
]

#: Snippet names that extend a generated section rather than add a new one.
GENERATED_SECTIONS = ("description", "options", "commands", "environment", "exit-status", "files", "see-also")
#: New sections from snippets come in this order (others after them, by name).
SNIPPET_ORDER = ("output", "json-fields", "examples", "notes")

HEADER = '.\\" Generated by scripts/gendocs.py from the click commands and man/src/; do not edit.\n'


# --- roff ----------------------------------------------------------------------------------------


def esc(text: str) -> str:
    """Text as roff: backslashes, hyphen-minus (copy-pastable), non-ASCII as \\[uXXXX]."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")
        elif ch == "'":
            out.append("\\(aq")  # groff would print a typographic quote
        elif ch == "`":
            out.append("\\(ga")
        elif ord(ch) > 127:
            out.append(f"\\[u{ord(ch):04X}]")
        elif ord(ch) < 32 and ch not in "\t":
            raise ValueError(f"control character {ch!r} in man page text: {text!r}")
        else:
            out.append(ch)
    return "".join(out)


def line(text: str) -> str:
    """One input line of text: escaped, and never read as a request."""
    s = esc(text)
    return "\\&" + s if s.startswith((".", "'")) else s


def inline(text: str) -> str:
    """Escaped prose with `code` in bold."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unmatched backtick: leave it be
        return esc(text)
    return "".join(f"\\fB{esc(p)}\\fR" if i % 2 else esc(p) for i, p in enumerate(parts))


def text_lines(text: str) -> list[str]:
    """A filled paragraph: one input line per source line, leading spaces dropped."""
    out = []
    for raw in text.splitlines():
        raw = raw.strip()
        if raw:
            s = inline(raw)
            out.append("\\&" + s if s.startswith((".", "'")) else s)
    return out


def quoted(arg: str) -> str:
    return '"' + esc(arg).replace('"', '\\(dq') + '"'


def bold(text: str) -> str:
    return f"\\fB{esc(text)}\\fR"


def italic_words(metavar: str) -> str:
    """A metavar with its words in italics and its punctuation ([ ] | ...) upright."""
    return re.sub(r"[A-Za-z0-9_]+", lambda m: f"\\fI{m.group(0)}\\fR", esc(metavar))


def help_paragraphs(help_text: str) -> list[str]:
    """click help text as roff paragraphs; click's \\b paragraphs stay as written (.nf/.fi)."""
    help_text = inspect.cleandoc(help_text.split("\f", 1)[0])
    out: list[str] = []
    for para in re.split(r"\n[ \t]*\n", help_text):
        lines = para.splitlines()
        if not lines:
            continue
        out.append(".PP")
        if lines[0].strip() == "\b":
            out.append(".nf")
            out.extend(line(ln.rstrip()) for ln in lines[1:])
            out.append(".fi")
        else:
            out.extend(text_lines(para))
    return out


# --- the click tree ------------------------------------------------------------------------------


@dataclass
class Page:
    path: tuple[str, ...]  # ("mem",), ("mem", "scan"), ("mem", "session", "init")
    command: click.Command
    ctx: click.Context
    children: list[Page] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "-".join(self.path)

    @property
    def title(self) -> str:
        return " ".join(self.path)

    @property
    def filename(self) -> str:
        return f"{self.name}.1"


def walk(command: click.Command, path: tuple[str, ...], parent: click.Context | None = None) -> Page:
    # What make_context would do, without parsing anything (context_settings carry -h).
    ctx = click.Context(command, info_name=path[-1], parent=parent, **command.context_settings)
    page = Page(path, command, ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            page.children.append(walk(sub, (*path, name), ctx))
    return page


def all_pages(root: Page) -> list[Page]:
    pages = [root]
    for child in root.children:
        pages.extend(all_pages(child))
    return pages


def visible_options(page: Page) -> list[click.Option]:
    return [p for p in page.command.get_params(page.ctx) if isinstance(p, click.Option) and not p.hidden]


def metavar_of(param: click.Parameter, ctx: click.Context) -> str:
    try:
        return param.make_metavar(ctx)  # click >= 8.2
    except TypeError:
        return param.make_metavar()


def option_value(opt: click.Option, ctx: click.Context) -> str:
    """The roff for an option's value: choices in bold, a metavar in italics; '' for flags."""
    if opt.is_flag or opt.count:
        return ""
    if isinstance(opt.type, click.Choice) and opt.metavar is None:
        return "|".join(bold(str(c)) for c in opt.type.choices)
    mv = metavar_of(opt, ctx)
    return italic_words(mv)


def default_of(opt: click.Option, ctx: click.Context) -> object:
    """The default worth printing, or None (no default, click's UNSET sentinel, a callable)."""
    default = opt.get_default(ctx, call=False)
    if default is None or default is _UNSET or callable(default) or default in ((), [], ""):
        return None
    return default


def option_names(opt: click.Option) -> list[str]:
    return list(opt.opts) + list(opt.secondary_opts)


def synopsis(page: Page) -> list[str]:
    words = [bold(page.title)]
    options = visible_options(page)
    seen: set[str] = set()
    for opt in options:
        if opt.name in seen:
            continue
        # Flag-value options sharing one destination are alternatives: [--print | --check].
        group = [o for o in options if o.name == opt.name]
        seen.add(opt.name)
        alts = []
        for o in group:
            names = "|".join(bold(n) for n in option_names(o))
            value = option_value(o, page.ctx)
            alts.append(f"{names}\\ {value}" if value else names)  # unbreakable: keep a value by its option
        words.append("[" + " | ".join(alts) + "]")
    for param in page.command.get_params(page.ctx):
        if isinstance(param, click.Argument):
            words.append(italic_words(metavar_of(param, page.ctx)))
    if isinstance(page.command, click.Group):
        words.append(italic_words("COMMAND [ARGS]..."))
    # A hanging indent, ragged right: how a synopsis is usually set.
    return [".ad l", ".in +4n", ".ti -4n", " ".join(words), ".in", ".ad"]


def option_entry(opt: click.Option, ctx: click.Context) -> list[str]:
    names = ", ".join(bold(n) for n in option_names(opt))
    value = option_value(opt, ctx)
    out = [".TP", f"{names} {value}" if value else names]
    out.extend(text_lines(opt.help or ""))
    notes = []
    if opt.multiple or opt.count:
        notes.append("May be given more than once.")
    if isinstance(opt.show_default, str):
        notes.append(f"Default: {opt.show_default}.")
    elif not opt.is_flag and not opt.count and (default := default_of(opt, ctx)) is not None:
        if isinstance(default, (list, tuple)):
            default = ", ".join(map(str, default))
        notes.append(f"Default: {default}.")
    if opt.envvar:
        envvars = [opt.envvar] if isinstance(opt.envvar, str) else list(opt.envvar)
        notes.append(f"Environment: {', '.join(envvars)}.")
    if notes:
        out.extend(text_lines(" ".join(notes)))
    return out


# --- pages ---------------------------------------------------------------------------------------


def section_title(name: str) -> str:
    return name.replace("-", " ").upper()


def load_snippets(pages: list[Page]) -> dict[str, dict[str, str]]:
    known = {p.name for p in pages}
    snippets: dict[str, dict[str, str]] = {}
    problems = []
    if SRC_DIR.is_dir():
        for f in sorted(SRC_DIR.iterdir()):
            if f.name.startswith(".") or not f.is_file():
                continue
            page, _, section = f.name.partition(".")
            if page not in known or not section:
                problems.append(f"{f.relative_to(ROOT)}: no man page {page!r} (expected man/src/<page>.<section>)")
                continue
            text = f.read_text(encoding="utf-8")
            if any(ord(c) > 127 for c in text):
                problems.append(f"{f.relative_to(ROOT)}: write non-ASCII as \\[uXXXX] escapes")
            snippets.setdefault(page, {})[section] = text.rstrip("\n") + "\n"
    if problems:
        raise SystemExit("gendocs: " + "\ngendocs: ".join(problems))
    return snippets


def environment_section() -> list[str]:
    out = []
    for name, what in ENVIRONMENT:
        out += [".TP", bold(name), *text_lines(what)]
    return out


def exit_status_section() -> list[str]:
    from mem.core.errors import ExitCode

    missing = sorted({int(c) for c in ExitCode} - set(EXIT_MEANINGS))
    if missing:
        raise SystemExit(f"gendocs: ExitCode values without a meaning in EXIT_MEANINGS: {missing}")
    out = []
    for code in sorted(EXIT_MEANINGS):
        out += [".TP", bold(str(code)), *text_lines(EXIT_MEANINGS[code])]
    return out


def files_section() -> list[str]:
    out = []
    for path, what in FILES:
        out += [".TP", f"\\fI{esc(path)}\\fR", *text_lines(what)]
    return out


def render_page(page: Page, root: Page, snippets: dict[str, str], version: str) -> str:
    cmd = page.command
    out = [
        HEADER.rstrip("\n"),
        f'.TH {esc(page.name.upper())} 1 "" {quoted(f"{PROG} {version}")} {quoted(f"{PROG} manual")}',
        ".nh",  # never break a file name or an option across lines
        ".SH NAME",
        f"{esc(page.name)} \\- "
        + esc(cmd.get_short_help_str(limit=500).rstrip(".")),
        ".SH SYNOPSIS",
        *synopsis(page),
    ]

    def extra(section: str) -> list[str]:
        # A snippet that starts with prose rather than a request gets a paragraph break.
        text = snippets.get(section)
        if text is None:
            return []
        return [text.rstrip("\n")] if text.startswith(".") else [".PP", text.rstrip("\n")]

    out += [".SH DESCRIPTION", *help_paragraphs(cmd.help or ""), *extra("description")]
    if page.children:
        out.append(".SH COMMANDS")
        for child in page.children:
            out += [".TP", f"{bold(child.title)}",
                    *text_lines(child.command.get_short_help_str(limit=500)),
                    f"See \\fB{esc(child.name)}\\fR(1)."]
        out += extra("commands")
    out += [".SH OPTIONS"]
    for opt in visible_options(page):
        out += option_entry(opt, page.ctx)
    out += extra("options")

    extras = [s for s in snippets if s not in GENERATED_SECTIONS]
    extras.sort(key=lambda s: (SNIPPET_ORDER.index(s) if s in SNIPPET_ORDER else len(SNIPPET_ORDER), s))
    for section in extras:
        out += [f".SH {quoted(section_title(section))}", snippets[section].rstrip("\n")]

    out += [".SH ENVIRONMENT", *environment_section(), *extra("environment")]
    out += [".SH \"EXIT STATUS\""]
    if "exit-status" in snippets:
        out += [snippets["exit-status"].rstrip("\n"), ".PP", "In general:"]
    out += exit_status_section()
    out += [".SH FILES", *files_section(), *extra("files")]

    others = [p for p in all_pages(root) if p.name != page.name]
    refs = [f"\\fB{esc(p.name)}\\fR(1)" for p in others]
    out += [".SH \"SEE ALSO\"", ",\n".join(refs), *extra("see-also")]
    return "\n".join(out) + "\n"


def man_pages() -> dict[Path, str]:
    from mem import __version__
    from mem.cli import cli

    root = walk(cli, (PROG,))
    pages = all_pages(root)
    snippets = load_snippets(pages)
    return {MAN_DIR / p.filename: render_page(p, root, snippets.get(p.name, {}), __version__) for p in pages}


# --- completions ---------------------------------------------------------------------------------

COMPLETIONS = {"bash": "mem.bash", "zsh": "_mem", "fish": "mem.fish"}


def completions() -> dict[Path, str]:
    out = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("_MEM_COMPLETE")}
    for shell, filename in COMPLETIONS.items():
        # `mem complete SHELL`: click's script with the header line that marks the file as mem's
        proc = subprocess.run(
            [sys.executable, "-m", PROG, "complete", shell], env=env,
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )
        if proc.returncode != 0 or not proc.stdout.strip():
            raise SystemExit(f"gendocs: {shell} completion failed (exit {proc.returncode}): {proc.stderr.strip()}")
        text = proc.stdout if proc.stdout.endswith("\n") else proc.stdout + "\n"
        out[COMPLETIONS_DIR / filename] = text
    return out


# --- main ----------------------------------------------------------------------------------------


def stale_man_pages(expected: dict[Path, str]) -> list[Path]:
    if not MAN_DIR.is_dir():
        return []
    return sorted(p for p in MAN_DIR.glob(f"{PROG}*.1") if p not in expected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 listing files that differ")
    args = parser.parse_args(argv)

    expected = {**man_pages(), **completions()}
    differ = []
    for path, text in expected.items():
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            differ.append(path)
    stale = stale_man_pages(expected)

    if args.check:
        for path in differ:
            print(f"differs: {path.relative_to(ROOT)}", file=sys.stderr)
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
        if differ or stale:
            print("gendocs: out of date; run `make docs` (.venv/bin/python scripts/gendocs.py)", file=sys.stderr)
            return 1
        return 0

    for path in differ:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(expected[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    for path in stale:
        path.unlink()
        print(f"removed {path.relative_to(ROOT)}", file=sys.stderr)
    if not differ and not stale:
        print("gendocs: up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
