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

uses: memdir.files (atomic_write).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

from mem.core.errors import RefusedError

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
