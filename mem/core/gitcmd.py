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
without patches), and the system and global attribute files are not read. ``protocol.allow=never``
and each protocol's own ``allow=never`` (which a repository could set to ``always``): mem never
fetches, so no transport (``ext::`` included, a partial clone's lazy fetch too) may start.

tests/test_git_safety.py arms a repository with every such setting pointing at a marker script
and runs each mem command that reads one.

One command talks to a remote: ``mem team sync --git``. For it, ``run(..., user_transport=True)``
lets git fetch and push over file, ssh and https, with the credential helpers and the ssh command
of the USER (their global and system configuration, GIT_SSH_COMMAND / GIT_SSH / askpass in their
environment), never those of the repository: every ``credential[.<url>].helper`` is reset and the
user's re-added, ``core.sshCommand`` is the user's (or plain ssh), a fetch or push names git's
own upload-pack / receive-pack (a remote's ``uploadpack`` / ``receivepack`` would run locally for
a path remote), and every configured filter driver is emptied. These go through
``GIT_CONFIG_COUNT``, which spells a key holding ``=`` as it is (``-c`` read ``filter.a=b.clean=``
as the key ``filter.a``). ``run(..., applies_filters=True)`` does the last alone, for the commands
that apply filters (``add``, ``status``, ``commit``, a fast-forward ``merge``). Everything else
stays off as above (tests/test_team_git.py).

Where git connects and what it sends on the way is the user's to say too: a repository's own
configuration (``.git/config``, its worktree configuration, any file they include) that rewrites
URLs (``url.<base>.insteadOf`` / ``pushInsteadOf``: a push sent to another host), sets a proxy
(``http[.<url>].proxy``, ``remote.<name>.proxy``), TLS trust (``http.sslVerify``, ``sslCAInfo``, a
client certificate, a pinned key), headers or cookies (``http.extraHeader``, ``http.cookieFile``:
any file of the user's sent as cookies), a DNS override (``http.curloptResolve``), redirects, or a
remote helper (``remote.<name>.vcs``), or a bundle to download first (``fetch.bundleURI``, ``bundle.*``:
git 2.40 and later fetch it from any host before the remote) makes ``user_transport`` refuse before git starts
(RepositoryTransportError names the keys). Only a few ``http.*`` knobs that change no destination,
trust or content pass (``_HTTP_HARMLESS``). The user's global and system files may set all of it.
The remote's ``url`` and ``pushurl`` are the repository's: they are what its remote is, and
``git remote -v`` shows them (tests/test_team_git_transport.py).

uses: os, re, shlex, shutil, subprocess (stdlib only).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
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
        # a protocol's own setting wins over protocol.allow: a repository could allow ext:: (a command)
        *(f"protocol.{p}.allow=never" for p in ("ext", "file", "git", "ssh", "http", "https")),
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


#: The SAFE_CONFIG settings ``user_transport`` replaces with its own.
_TRANSPORT_REPLACES = frozenset({"credential.helper=", "core.sshCommand=false",
                                 *(f"protocol.{p}.allow=never" for p in ("file", "ssh", "https", "http"))})
#: The transports ``user_transport`` allows (git:// is unauthenticated and runs core.gitProxy; ext:: runs a command).
_TRANSPORTS = ("file", "ssh", "https", "http")
#: The user's variables kept with ``user_transport``: their ssh command and askpass programs.
_USER_TRANSPORT_ENV = ("GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSH_VARIANT", "GIT_ASKPASS", "SSH_ASKPASS")
#: ssh that never prompts and gives up soon (mem must not hang the user's shell).
_SSH_BATCH = "-oBatchMode=yes -oConnectTimeout=5"

_CREDENTIAL_HELPER = re.compile(r"credential\.(.+\.)?helper", re.IGNORECASE)
#: A remote's uploadpack / receivepack names a program git runs (locally for a path remote), and its
#: first value wins, so no ``-c`` overrides it: the command line names git's own.
_PACK_PROGRAM = {"fetch": "--upload-pack=git-upload-pack", "ls-remote": "--upload-pack=git-upload-pack",
                 "push": "--receive-pack=git-receive-pack"}
_FILTER_PROGRAM = re.compile(r"filter\.(.+)\.(clean|smudge|process)", re.IGNORECASE)

#: The configuration files that come with a repository (its own, and what they include), not the user's.
_REPOSITORY_SCOPES = ("local", "worktree")
#: ``http[.<url>].<var>`` settings that change no destination, trust, header or cookie: a repository may set them.
_HTTP_HARMLESS = frozenset({"postbuffer", "lowspeedlimit", "lowspeedtime", "maxrequests", "minsessions", "version"})
_HTTP_SETTING = re.compile(r"http\.(?:.*\.)?([^.]+)", re.IGNORECASE)
_REPOSITORY_TRANSPORT = re.compile(r"url\..*\.(?:insteadof|pushinsteadof)|remote\..*\.(?:proxy|proxyauthmethod|vcs)"
                                   r"|fetch\.bundleuri|bundle\..*", re.IGNORECASE)
_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


class RepositoryTransportError(Exception):
    """The repository's own configuration says where or how git connects; ``keys`` names those
    settings (a URL's user and password left out), never their values."""

    def __init__(self, keys: list[str]):
        super().__init__(", ".join(keys))
        self.keys = keys


def _takes_transport(key: str) -> bool:
    """Whether a setting decides where git connects, whom it trusts or what it sends."""
    if _REPOSITORY_TRANSPORT.fullmatch(key):
        return True
    m = _HTTP_SETTING.fullmatch(key)
    return m is not None and m[1].lower() not in _HTTP_HARMLESS


def _config_list(base: list[str], env: dict, where: list[str], repo: str | None) -> list[tuple[str, str, str]]:
    """(scope, key, value) of every configuration entry git reads from ``where`` (--global, ...)."""
    argv = [*base[:2], *(["-C", repo] if repo is not None else []), *SAFE_CONFIG,
            "config", "--includes", "--list", "--show-scope", "-z", *where]
    out = subprocess.run(argv, input=b"", env=env, capture_output=True, check=False).stdout
    items = out.split(b"\0")  # scope NUL key LF value NUL, ...
    entries = []
    for scope, item in zip(items[::2], items[1::2]):
        key, _, value = item.partition(b"\n")
        if key:
            entries.append((scope.decode(), key.decode("utf-8", "replace"), value.decode("utf-8", "replace")))
    return entries


def _transport_config(git: str, env: dict, repo: str | None) -> None:
    """Settings, in ``env`` (``_set_in_env``), that let git reach a remote with the user's own
    helpers and nobody else's: every helper key any configuration names is emptied, then the
    user's helpers (global and system files) are set again after them, in their order."""
    base = [git, "--no-pager"]
    user = [e for e in _config_list(base, env, ["--system"], repo) + _config_list(base, env, ["--global"], repo)
            if e[0] in ("system", "global")]
    every = _config_list(base, env, [], repo)
    theirs = [_USERINFO.sub("", k) for scope, k, _ in every if scope in _REPOSITORY_SCOPES and _takes_transport(k)]
    if theirs:
        raise RepositoryTransportError(list(dict.fromkeys(theirs)))
    settings = [(f"protocol.{p}.allow", "always") for p in _TRANSPORTS]
    settings += [(k, "") for k in sorted({"credential.helper", *(k for _, k, _ in every if _CREDENTIAL_HELPER.fullmatch(k))})]
    settings += [(k, v) for _, k, v in user if _CREDENTIAL_HELPER.fullmatch(k)]
    ssh = next((v for _, k, v in reversed(user) if k.lower() == "core.sshcommand"), None)
    if ssh is None and env.get("GIT_SSH"):
        ssh = shlex.quote(env["GIT_SSH"])
    settings.append(("core.sshCommand", f"{ssh or 'ssh'} {_SSH_BATCH}"))
    _set_in_env(env, settings + _no_filters(every))


def _no_filters(every: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(key, value) settings emptying every configured filter driver (an empty command applies none)."""
    keys = []
    for _, k, _ in every:
        if m := _FILTER_PROGRAM.fullmatch(k):
            keys += [(f"filter.{m[1]}.{m[2]}", ""), (f"filter.{m[1]}.required", "false")]
    return list(dict.fromkeys(keys))


def _set_in_env(env: dict, settings: list[tuple[str, str]]) -> None:
    """Settings given through GIT_CONFIG_COUNT: read after every file (before ``-c``), and a key
    holding ``=`` (a URL's query, a driver's name) is spelled as it is, which ``-c`` cannot do."""
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for i, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value


def run(args: Sequence[str], *, repo: str | None = None, input: bytes | None = None,
        env: Mapping[str, str | None] | None = None, cwd: str | None = None, pass_fds: tuple[int, ...] = (),
        timeout: float | None = None, user_transport: bool = False,
        applies_filters: bool = False) -> subprocess.CompletedProcess:
    """Run ``git [-C repo] <args>`` with every repository-configured program switched off; bytes out.

    ``env`` adds variables to git's environment (None removes one). ``user_transport``: git may
    reach a remote (file, ssh, https) with the user's credential helpers and ssh, none of the
    repository's, and refuses (RepositoryTransportError) when the repository's configuration says
    where or how to connect (module docstring). ``applies_filters``: the command applies filter drivers (add,
    status, commit, merge, checkout): every configured one is emptied first. Raises
    FileNotFoundError when git is not installed, subprocess.TimeoutExpired after ``timeout``; a
    failing git is the caller's to judge from the return code.
    """
    git = binary()
    if git is None:
        raise FileNotFoundError("git")
    dropped = tuple(d for d in _DROPPED if not (user_transport and d in _USER_TRANSPORT_ENV))
    full_env = {k: v for k, v in os.environ.items()
                if not (k.startswith("GIT_") or k in dropped) or (user_transport and k in _USER_TRANSPORT_ENV)}
    full_env.update(SAFE_ENV)
    if user_transport and full_env.get("GIT_SSH_COMMAND"):
        full_env["GIT_SSH_COMMAND"] += " " + _SSH_BATCH  # ssh takes an option's first value: theirs win
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    config = list(SAFE_CONFIG)
    if user_transport:
        # GIT_CONFIG_COUNT is read before -c: SAFE_CONFIG's settings that it replaces are left out
        config = [a for pair in zip(config[::2], config[1::2]) if pair[1] not in _TRANSPORT_REPLACES for a in pair]
        _transport_config(git, full_env, repo)
        if args and args[0] in _PACK_PROGRAM:
            args = [args[0], _PACK_PROGRAM[args[0]], *args[1:]]
    elif applies_filters:
        _set_in_env(full_env, _no_filters(_config_list([git, "--no-pager"], full_env, [], repo)))
    if user_transport or applies_filters:  # a commit, fetch or merge may start gc or maintenance
        config += ["-c", "gc.auto=0", "-c", "maintenance.auto=false"]
    argv = [git, "--no-pager", *(["-C", repo] if repo is not None else []), *config, *args]
    # an empty stdin rather than ours: git never waits on the user
    return subprocess.run(argv, input=input or b"", env=full_env, cwd=cwd, pass_fds=pass_fds,
                          capture_output=True, check=False, timeout=timeout)
