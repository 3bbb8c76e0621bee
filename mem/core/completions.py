"""Shell completions: where each shell looks for mem's in a user's own directories, and putting it there.

Example: target("zsh", {"HOME": "/h"}) == "/h/.local/share/zsh/site-functions/_mem"

bash-completion (2.x) loads ``$XDG_DATA_HOME/bash-completion/completions/mem`` (or
``$BASH_COMPLETION_USER_DIR/completions/mem``) the first time mem is completed, with nothing in
~/.bashrc; fish reads ``~/.config/fish/completions/mem.fish``; zsh reads ``_mem`` only from a
directory on its ``fpath``, and no user directory is on the default one (USER_FPATH_LINE adds it).
The script's text comes from the caller (the CLI asks click for it, then ``with_header``), so
this module knows no command. A file is replaced only when it is mem's own (it holds ``HEADER``,
a line mem writes into its script). One that names ``_MEM_COMPLETE`` without it (an older mem's,
or the user's own that loads mem's, with lines of theirs) is kept as ``<file>~`` first, a name
no shell loads; anything else there is the user's, and is refused.

The man pages go where man finds them in a home: man-db adds ``~/.local/share/man`` to its path for
a PATH holding ``~/.local/bin`` (and no user directory otherwise); install_man links each page of
the environment mem came with there, as a current pipx does and Debian 12's pipx 1.1 does not.

uses: memdir.files (atomic_write, read_text).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

from mem.core.errors import ConfigError, RefusedError

SHELLS = ("bash", "zsh", "fish")
#: The variable mem's completion scripts set (click's scripts all do; so may a user's own file).
MARK = "_MEM_COMPLETE"
#: The line mem puts in every completion script it writes: a file holding it is mem's.
HEADER = "# mem's shell completion, written by `mem complete`: mem complete --install replaces this file"


class Placed(NamedTuple):
    shell: str
    path: str
    action: str  # written, replaced or unchanged
    backup: str | None = None  # where the file replaced was kept (it was not mem's own)

    def as_dict(self) -> dict:
        return self._asdict()


def with_header(script: str) -> str:
    """``script`` with HEADER as its first line, or its second after zsh's ``#compdef``, which must
    come first."""
    first, sep, rest = script.partition("\n")
    if first.startswith("#compdef"):
        return f"{first}\n{HEADER}\n{rest}"
    return f"{HEADER}\n{script}"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def data_home(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")


def zsh_user_dir(env: Mapping[str, str] | None = None) -> str:
    """Where mem complete --install, a current pipx and make install PREFIX=~/.local put _mem."""
    return os.path.join(data_home(env), "zsh", "site-functions")


def user_fpath_line(env: Mapping[str, str] | None = None) -> str:
    """The one line ~/.zshrc needs, before compinit, for zsh to find _mem in zsh_user_dir."""
    env = os.environ if env is None else env
    where = zsh_user_dir(env)
    home = _home(env)
    if where.startswith(home.rstrip("/") + "/"):
        where = "~" + where[len(home.rstrip("/")):]
    return f"fpath=({where} $fpath)"


def target(shell: str, env: Mapping[str, str] | None = None) -> str:
    """The file ``shell`` loads mem's completion from, in the user's own directories."""
    env = os.environ if env is None else env
    if shell == "bash":
        user = [d for d in (env.get("BASH_COMPLETION_USER_DIR") or "").split(":") if d]
        base = user[0] if user else os.path.join(data_home(env), "bash-completion")
        return os.path.join(base, "completions", "mem")
    if shell == "zsh":
        return os.path.join(zsh_user_dir(env), "_mem")
    if shell == "fish":
        config = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
        return os.path.join(config, "fish", "completions", "mem.fish")
    raise ValueError(shell)


def install(shell: str, script: str, env: Mapping[str, str] | None = None, *, dry_run: bool = False) -> Placed:
    """Write ``script`` where ``shell`` finds it, atomically; a file holding ``MARK`` but not ``HEADER``
    is kept as ``<file>~`` first; refuses (exit 4) to replace any other file not mem's."""
    from mem.core.memdir.files import atomic_write, read_text

    path = target(shell, env)
    action = "written"
    backup = None
    if os.path.lexists(path):
        if os.path.isdir(path) or (os.path.exists(path) and not os.path.isfile(path)):
            raise RefusedError(f"{path} is not a regular file; move it away, then run this again")
        try:
            now = read_text(path) if os.path.exists(path) else ""
        except (OSError, UnicodeDecodeError, ValueError):
            now = ""
        if now == script:  # or a link to the same script (pipx's, an ln from the README): it works as it is
            return Placed(shell, path, "unchanged")
        if MARK not in now and os.path.exists(path):
            raise RefusedError(f"{path} is not mem's completion (it does not name {MARK}); "
                               "move it away, then run this again")
        if HEADER not in now.splitlines() and os.path.exists(path):
            # names mem's variable but mem did not write it: perhaps the user's, with lines of theirs
            backup = path + "~"
            if os.path.lexists(backup):
                raise RefusedError(f"{path} was not written by mem complete and {backup} exists; "
                                   "move one of them away, then run this again")
        action = "replaced"
    if not dry_run:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if backup is not None:
            atomic_write(backup, now.encode("utf-8"))
        if os.path.islink(path):
            os.unlink(path)  # a dangling link (a removed venv's): the new file goes where the link was
        atomic_write(path, script.encode("utf-8"), plain=True)
    return Placed(shell, path, action, backup)


def man_target(env: Mapping[str, str] | None = None) -> str:
    """~/.local/share/man/man1: man-db's manpath has it while ~/.local/bin is on PATH (not XDG_DATA_HOME's)."""
    return os.path.join(_home(os.environ if env is None else env), ".local", "share", "man", "man1")


def man_found_from_path(env: Mapping[str, str] | None = None) -> bool:
    """Whether PATH holds ~/.local/bin, so that man searches man_target's tree."""
    env = os.environ if env is None else env
    local_bin = os.path.join(_home(env), ".local", "bin")
    return any(os.path.abspath(os.path.expanduser(d)) == local_bin for d in (env.get("PATH") or "").split(":") if d)


def _is_mem_page(path: str) -> bool:
    from mem.core.memdir.files import read_text

    try:
        return ".TH MEM" in read_text(path, 1 << 20)[:512]
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def install_man(source: str, env: Mapping[str, str] | None = None, *, dry_run: bool = False) -> Placed:
    """Link each mem*.1 of ``source`` into man_target (a link: an upgrade of that environment keeps it
    current), atomically; a link of ours left dangling by a page gone from ``source`` is removed.
    Refuses (exit 4) to replace a file there that is not one of mem's pages."""
    target = man_target(env)
    try:
        pages = sorted(n for n in os.listdir(source) if n.startswith("mem") and n.endswith(".1"))
    except OSError:
        pages = []
    if not pages:
        raise ConfigError(f"no man pages of mem's in {source}")
    if os.path.isdir(target) and os.path.samefile(source, target):  # make install PREFIX=~/.local put them there
        return Placed("man", target, "unchanged")
    todo, stale = [], []
    for name in pages:
        page, link = os.path.join(source, name), os.path.join(target, name)
        if os.path.islink(link) and os.readlink(link) == page:
            continue
        if os.path.lexists(link) and not os.path.islink(link) and not (os.path.isfile(link) and _is_mem_page(link)):
            raise RefusedError(f"{link} is not one of mem's man pages; move it away, then run this again")
        todo.append((page, link, os.path.lexists(link)))
    if os.path.isdir(target):
        for name in os.listdir(target):
            link = os.path.join(target, name)
            if (name.startswith("mem") and os.path.islink(link) and not os.path.exists(link)
                    and os.path.dirname(os.readlink(link)) == source):
                stale.append(link)
    if not todo and not stale:
        return Placed("man", target, "unchanged")
    if not dry_run:
        os.makedirs(target, exist_ok=True)
        for page, link, _ in todo:
            tmp = f"{link}.mem-{os.getpid()}.tmp"
            os.symlink(page, tmp)
            os.replace(tmp, link)  # one rename: man sees the old page or the new link, never neither
        for link in stale:
            os.unlink(link)
    return Placed("man", target, "replaced" if stale or any(existed for *_, existed in todo) else "written")
