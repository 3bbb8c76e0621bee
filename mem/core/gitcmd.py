"""Every git process mem starts: git as a tool, never as an executor of a repository's programs.

Example: run(["rev-parse", "HEAD"], repo="/src/app").stdout == b"3f2a9c1e...\\n"

A repository's own configuration (.git/config, and any file its ``include.path`` names) comes with
a clone, and git runs commands it names: ``core.fsmonitor`` on every index read (``check-ignore``,
``status``), hooks, filter drivers and textconv, an external diff, pagers, ``gpg.program`` when
``log.showSignature`` is on, ssh, credential and askpass helpers. Settings given with ``-c`` are
read after every file, included ones too, so each program setting is overridden here on the
command line; the variables that name programs are dropped from the environment, and with them
every other ``GIT_*`` variable of the caller (a ``GIT_DIR`` inherited from a hook would point git
at another repository). Filter and textconv drivers are named per attribute and cannot be listed,
so mem uses only commands that apply none (plumbing, ``grep`` without ``--textconv``, ``log``
without patches), and the system and global attribute files are not read. ``protocol.allow=never``:
mem never fetches, so no transport (``ext::`` included) may start.

tests/test_git_safety.py arms a repository with every such setting pointing at a marker script
and runs each mem command that reads one.

uses: os, shutil, subprocess (stdlib only).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

#: Given before the subcommand on every call; each is read after every configuration file.
SAFE_CONFIG: tuple[str, ...] = tuple(
    arg
    for setting in (
        "core.fsmonitor=false",
        f"core.hooksPath={os.devnull}",
        "core.pager=cat",
        "core.askPass=",
        "core.sshCommand=false",
        "core.gitProxy=",
        "core.alternateRefsCommand=",
        f"core.attributesFile={os.devnull}",
        "core.untrackedCache=false",
        "diff.external=",
        "credential.helper=",
        "log.showSignature=false",
        "commit.gpgSign=false",
        "tag.gpgSign=false",
        "gpg.program=false",
        "gpg.ssh.program=false",
        "gpg.x509.program=false",
        "protocol.allow=never",
    )
    for arg in ("-c", setting)
)

#: Set in git's environment whatever the caller's is: no pager, no prompt, no system attributes.
SAFE_ENV = {
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ATTR_NOSYSTEM": "1",
}

#: Not git's, but it runs them: an askpass program and an editor.
_DROPPED = ("SSH_ASKPASS", "EDITOR", "VISUAL")


@functools.cache
def binary() -> str | None:
    """The git executable on PATH, or None."""
    return shutil.which("git")


def run(args: Sequence[str], *, repo: str | None = None, input: bytes | None = None,
        env: Mapping[str, str | None] | None = None, cwd: str | None = None, pass_fds: tuple[int, ...] = (),
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``git [-C repo] <args>`` with every repository-configured program switched off; bytes out.

    ``env`` adds variables to git's environment (None removes one). Raises FileNotFoundError
    when git is not installed, subprocess.TimeoutExpired after ``timeout``; a failing git is the
    caller's to judge from the return code.
    """
    git = binary()
    if git is None:
        raise FileNotFoundError("git")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in _DROPPED}
    full_env.update(SAFE_ENV)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    argv = [git, "--no-pager", *(["-C", repo] if repo is not None else []), *SAFE_CONFIG, *args]
    # an empty stdin rather than ours: git never waits on the user
    return subprocess.run(argv, input=input or b"", env=full_env, cwd=cwd, pass_fds=pass_fds,
                          capture_output=True, check=False, timeout=timeout)
