"""Man pages and completions: generated, complete, renderable, and working."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mem.cli import cli

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
COMPLETIONS = ROOT / "completions"


def _load_gendocs():
    spec = importlib.util.spec_from_file_location("gendocs", ROOT / "scripts" / "gendocs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gendocs", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gendocs = _load_gendocs()


def _commands(command: click.Command = cli, path: tuple[str, ...] = ("mem",), parent=None):
    """(path, command, ctx) for every command in the tree, the group itself first."""
    ctx = click.Context(command, info_name=path[-1], parent=parent, **command.context_settings)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, (*path, name), ctx)


COMMAND_PATHS = [path for path, _, _ in _commands()]


def _page(path: tuple[str, ...]) -> Path:
    return MAN / ("-".join(path) + ".1")


def test_generated_files_are_up_to_date():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gendocs.py"), "--check"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == 0, f"run `make docs` and commit the result:\n{proc.stderr}"


@pytest.mark.parametrize("path", COMMAND_PATHS, ids="-".join)
def test_every_command_and_option_is_in_its_man_page(path):
    command, ctx = next((c, x) for p, c, x in _commands() if p == path)
    page = _page(path)
    assert page.exists(), f"no man page {page.name} for `{' '.join(path)}`"
    roff = page.read_text(encoding="utf-8")
    assert f"\\fB{gendocs.esc(' '.join(path))}\\fR" in roff
    for param in command.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden:
            for opt in [*param.opts, *param.secondary_opts]:
                assert f"\\fB{gendocs.esc(opt)}\\fR" in roff, f"{opt} missing from {page.name}"
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            assert f"\\fB{gendocs.esc('-'.join((*path, name)))}\\fR(1)" in roff, f"{name} missing from {page.name}"


def test_every_page_has_the_shared_sections():
    from mem.core.errors import ExitCode

    for path in COMMAND_PATHS:
        roff = _page(path).read_text(encoding="utf-8")
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", '"EXIT STATUS"', "FILES", '"SEE ALSO"'):
            assert f"\n.SH {section}\n" in roff, f"{section} missing from {_page(path).name}"
        for name, _ in gendocs.ENVIRONMENT:
            assert f"\\fB{gendocs.esc(name)}\\fR" in roff
        for code in {*map(int, ExitCode), 141}:
            assert f".TP\n\\fB{code}\\fR\n" in roff


def test_json_fields_are_documented():
    scan = _page(("mem", "scan")).read_text(encoding="utf-8")
    for field in ("path", "relpath", "name", "description", "type", "mtime", "mtime_ms", "size", "warnings"):
        assert f"\\fB{gendocs.esc(field)}\\fR (" in scan
    for code in ("no-frontmatter", "unclosed-frontmatter", "broken-frontmatter", "missing-type", "unknown-type",
                 "missing-description", "multiline-description", "long-description", "not-indexed", "secret",
                 "unreadable"):
        assert f".TP\n\\fB{gendocs.esc(code)}\\fR\n" in scan, code
    path = _page(("mem", "path")).read_text(encoding="utf-8")
    from mem.clients import resolve

    for field in [*resolve(dir="/tmp").as_dict(), "exists"]:
        assert f"\\fB{gendocs.esc(field)}\\fR (" in path, field
    index = _page(("mem", "index")).read_text(encoding="utf-8")
    for field in ("content", "truncated", "line_count", "size_utf16", "code", "message", "line", "relpath",
                  "changed", "written", "added", "removed"):
        assert f"\\fB{gendocs.esc(field)}\\fR (" in index, field
    from mem.core.memdir.revert import RevertResult

    for command in ("undo", "restore"):  # every key the JSON has, so a new one cannot go undocumented
        page = _page(("mem", command)).read_text(encoding="utf-8")
        for field in RevertResult(None, [], [], "", None).as_dict():
            assert f"\\fB{gendocs.esc(field)}\\fR (" in page, (command, field)


def _renderer() -> list[str] | None:
    if shutil.which("groff"):
        return ["groff", "-man", "-Tutf8", "-ww", "-z"]
    if shutil.which("man"):
        return ["man", "--warnings", "-l"]
    return None


@pytest.mark.parametrize("path", COMMAND_PATHS, ids="-".join)
def test_man_pages_render_without_warnings(path):
    renderer = _renderer()
    if renderer is None:
        pytest.skip("neither groff nor man is installed")
    proc = subprocess.run(
        [*renderer, str(_page(path))], capture_output=True, text=True, timeout=60,
        env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_no_literal_backspace_or_control_characters():
    for page in MAN.glob("*.1"):
        text = page.read_text(encoding="utf-8")
        assert not any(ord(c) < 32 and c != "\n" for c in text), page.name


def _bash_complete(*words: str) -> list[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = (
        f"source {COMPLETIONS / 'mem.bash'}\n"
        f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; COMPREPLY=()\n"
        '_mem_completion mem\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run([bash, "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completes_commands():
    assert "scan" in _bash_complete("mem", "sc")


def test_bash_completes_options():
    offered = _bash_complete("mem", "scan", "--j")
    assert "--json" in offered and "--jsonl" in offered


def test_completion_scripts_name_the_program():
    assert "complete -o nosort -F _mem_completion mem" in (COMPLETIONS / "mem.bash").read_text()
    assert (COMPLETIONS / "_mem").read_text().startswith("#compdef mem")
    assert "complete --no-files --command mem" in (COMPLETIONS / "mem.fish").read_text()


# --- the generator on commands that do not exist yet -----------------------------------------


@click.group()
def _toy():
    """A toy with a group.

    A backslash \\ and a line
    .starting with a dot.

    \b
    Example:
      toy team pull --since '2 days'
        .hidden-looking line
    """


@_toy.group("team")
def _team():
    """Sync the team memory."""


@_team.command("pull")
@click.option("--since", metavar="WHEN", default="1 day", help="Only changes newer than WHEN.")
@click.option("--color/--no-color", default=True, help="Colour.")
@click.option("--tag", multiple=True, envvar="TOY_TAG", help="A tag.")
def _pull(since, color, tag):
    """Fetch the team's memories."""


def test_generator_walks_nested_groups_and_keeps_unwrapped_paragraphs():
    root = gendocs.walk(_toy, ("toy",))
    pages = {p.name: p for p in gendocs.all_pages(root)}
    assert list(pages) == ["toy", "toy-team", "toy-team-pull"]
    toy = gendocs.render_page(pages["toy"], root, {}, "0")
    assert "\b" not in toy
    assert ".nf\nExample:\n  toy team pull \\-\\-since \\(aq2 days\\(aq\n    .hidden\\-looking line\n.fi" in toy
    assert "A backslash \\e and a line\n\\&.starting with a dot." in toy
    assert "\\fBtoy\\-team\\fR(1)" in toy
    pull = gendocs.render_page(pages["toy-team-pull"], root, {"examples": ".PP\nHand\\-written."}, "0")
    assert '.SH "EXAMPLES"\n.PP\nHand\\-written.' in pull
    assert "\\fB\\-\\-color\\fR, \\fB\\-\\-no\\-color\\fR" in pull
    assert "Default: 1 day." in pull
    assert "May be given more than once." in pull and "Environment: TOY_TAG." in pull
    assert pull.index(".SH OPTIONS") < pull.index('.SH "EXAMPLES"') < pull.index(".SH ENVIRONMENT")
