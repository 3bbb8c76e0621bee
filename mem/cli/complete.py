"""mem complete: mem's shell completion script, printed or installed where bash, zsh and fish look."""

from __future__ import annotations

import os
import shutil

import click

from mem import render
from mem.cli.common import format_options

SHELLS = ("bash", "zsh", "fish")


def script(shell: str) -> str:
    """The completion script for ``shell`` (completions/): what click emits for _MEM_COMPLETE=<shell>_source,
    with the header line that marks it as mem's (``completions.HEADER``)."""
    from click.shell_completion import get_completion_class

    from mem.cli import cli
    from mem.core.completions import with_header

    return with_header(get_completion_class(shell)(cli, {}, "mem", "_MEM_COMPLETE").source())


@click.command("complete", short_help="Print or install the shell completion of mem.")
@click.argument("shells", nargs=-1, type=click.Choice(SHELLS), metavar="[SHELL]...")
@click.option("--install", is_flag=True,
              help="Write each SHELL's completion file in your home (default: each of bash, zsh and fish here).")
@click.option("--man", "man", is_flag=True,
              help="With --install: also link mem's man pages into ~/.local/share/man/man1, where man finds them "
                   "while ~/.local/bin is on PATH.")
@click.option("--dry-run", is_flag=True, help="With --install: print the files it would write; write nothing; "
                                              "exit 1 if it would write any.")
@format_options
def complete_cmd(shells: tuple[str, ...], install: bool, man: bool, dry_run: bool, fmt: str) -> int:
    """Print SHELL's completion script for mem, or --install it where that shell looks in your home.

    pip in a venv, and Debian 12's pipx 1.1, leave the completions under the
    environment's share/, where bash-completion before 2.12 and zsh do not
    look: --install writes ~/.local/share/bash-completion/completions/mem
    (bash-completion loads it by itself), ~/.config/fish/completions/mem.fish
    and ~/.local/share/zsh/site-functions/_mem, atomically. zsh reads that
    one once its directory is on fpath: add
    `fpath=(~/.local/share/zsh/site-functions $fpath)` before compinit in
    ~/.zshrc (--install says so when zsh lacks it). A file there that mem did
    not write is kept as FILE~ when it loads mem's completion (names
    _MEM_COMPLETE), else left alone (exit 4). With --man the same routes'
    man pages (man mem opened the kernel's mem(4)) are linked into
    ~/.local/share/man/man1 from the environment this mem came with (exit 3
    when it came without them); a file there that is not mem's is left alone
    (exit 4). mem doctor checks that man and each shell find them.

    \b
    Example:
      mem complete --install --man
      mem complete --install zsh
      source <(mem complete bash)
    """
    if not install:
        for flag, given in (("--dry-run", dry_run), ("--man", man)):
            if given:
                raise click.UsageError(f"{flag} goes with --install")
        if len(shells) > 1:
            raise click.UsageError("print one shell's script at a time (or --install several)")
        shell = shells[0] if shells else os.path.basename(os.environ.get("SHELL") or "")
        render.out(script(shell if shell in SHELLS else "bash"), nl=False)
        return 0
    from mem.core import completions

    shells = shells or tuple(s for s in SHELLS if shutil.which(s)) or ("bash",)
    placed = [completions.install(s, script(s), dry_run=dry_run) for s in dict.fromkeys(shells)]
    if man:
        from mem.core.doctor import installed_man_pages
        from mem.core.errors import ConfigError

        pages = installed_man_pages()
        if pages is None:
            raise ConfigError("this mem came without its man pages (an editable install?): make install "
                              "PREFIX=~/.local from a clone puts them in place; mem help COMMAND prints the same help")
        placed.append(completions.install_man(pages, dry_run=dry_run))
    changed = [p for p in placed if p.action != "unchanged"]
    if fmt != "text":
        render.out_record({"files": [p.as_dict() for p in placed], "dry_run": dry_run}, fmt)
    elif dry_run:
        for p in placed:
            render.out(f"{'would write' if p.action != 'unchanged' else 'unchanged'} {p.path} ({p.shell})"
                       + (f", keeping the file there as {p.backup}" if p.backup else ""))
    else:
        for p in placed:
            render.info(f"{p.shell}: {p.path} {p.action}"
                        + (f" (mem did not write the file there: it is kept as {p.backup})" if p.backup else ""))
        if man and not completions.man_found_from_path():
            render.info(f"man: man looks in {completions.man_target()} once ~/.local/bin is on PATH "
                        "(a new login shell puts it there once it exists)")
        if "zsh" in shells and not dry_run:
            from mem.core.doctor import zsh_report

            report = zsh_report()
            if report is None or not report.get("fpath") or completions.zsh_user_dir() not in report["fpath"]:
                render.info(f"zsh: add this line before compinit in ~/.zshrc: {completions.user_fpath_line()}")
    return 1 if dry_run and changed else 0
