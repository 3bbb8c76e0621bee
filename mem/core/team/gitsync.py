"""Sync qwen-code's team tier (``.qwen/team-memory/``, committed to the repository) through git.

Example: sync("/src/app").pushed == "3f2a9c1e..." when a teammate's memory came in and ours went out

What qwen-code 0.24's own sync does (team-memory-sync.ts: fast-forward pull first, stage only
that directory, commit, push only that commit), with mem's rules on top:

* git runs through mem/core/gitcmd.py: no hook, filter, fsmonitor, pager or repository-named
  program; only the network transport and the user's own credential helpers and ssh. The remote
  is the repository's (``remote.<name>.url`` / ``pushurl``); how and where git connects beyond
  that (URL rewriting, proxies, TLS trust, headers, cookies) is the user's: a repository whose own
  configuration sets any of it is refused before the fetch (exit 4).
* The pull never touches the user's checkout beyond the team directory: ``git fetch``, then a
  fast-forward only when every incoming commit changes nothing outside ``.qwen/team-memory/``
  (qwen-code fast-forwards the whole branch). Otherwise it stops, commits nothing, and says so.
* A team memory with a secret is not committed (the whole sync stops, exit 4). One the poisoning
  guard flags (a permission grant, a rule bypass), pulled or committed, is named (``flagged``).
* Before staging, the team index (``.qwen/team-memory/MEMORY.md``) is rebuilt as ``mem index
  --rebuild`` does it (one write path, one operation of the history): a teammate's topic file
  without its pointer, or our own, is indexed in the commit, as qwen-code rebuilds it before its
  sync commits. qwen-code rebuilds before its pull; here it comes after the fast-forward, so the
  pulled files are indexed too and a rebuilt index never stands in the fast-forward's way.
* The push sends ``<our commit>:<upstream branch>`` only when it is a fast-forward of just that
  commit; a push the remote refuses takes our commit back out (the changes stay in the working
  tree, unstaged), as qwen-code does, so the next sync starts clean.

Every failure is a GitSyncError with one line to show; nothing here blocks on a prompt.

uses: core.gitcmd, core.errors, core.memdir.layout, core.memdir.index and core.memdir.store (lazily), core.guards.secrets (via team.routing), core.guards.poison, core.memdir.files, clients.qwen (lazily)
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import asdict, dataclass, field

from mem.core import gitcmd
from mem.core.errors import ExitCode, MemError, RefusedError
from mem.core.memdir.layout import INDEX_NAME

#: Seconds one git command may take (a fetch or push over a slow link included).
GIT_TIMEOUT = 60.0
#: The message of the commit the sync makes.
COMMIT_MESSAGE = "mem: sync team memory"


class GitSyncError(MemError):
    """The sync stopped; the checkout is as it was (or fast-forwarded within the team directory)."""

    exit_code = ExitCode.CHECK_FAILED
    kind = "git"


class BehindError(GitSyncError):
    """The branch is behind (or diverged) with changes outside the team directory: the user's to pull."""

    kind = "behind"


@dataclass
class GitSyncResult:
    team_dir: str
    branch: str | None = None
    upstream: str | None = None
    pulled: list[str] = field(default_factory=list)  # files the fast-forward brought into the team directory
    indexed: list[str] = field(default_factory=list)  # topic files the index rebuild gave a pointer
    unindexed: list[str] = field(default_factory=list)  # pointers it dropped (to files that are gone)
    committed: str | None = None  # our commit's sha
    files: list[str] = field(default_factory=list)  # what it committed, relative to the repository
    pushed: bool = False
    skipped_push: str | None = None  # why nothing was pushed though something was committed
    #: pulled or committed team memories the poisoning guard flags: {path, reason} (said, not blocked)
    flagged: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _git(repo: str, *args: str, transport: bool = False) -> subprocess.CompletedProcess:
    try:
        return gitcmd.run(list(args), repo=repo, timeout=GIT_TIMEOUT, user_transport=transport,
                          applies_filters=not transport)
    except FileNotFoundError:
        raise GitSyncError("git is not installed") from None
    except gitcmd.RepositoryTransportError as exc:
        them = "it" if len(exc.keys) == 1 else "them"
        raise RefusedError(f"the repository's own git configuration sets {', '.join(exc.keys)}: mem team sync --git "
                           f"connects only as your own configuration says (~/.gitconfig); unset {them} in the "
                           f"repository (git config --unset) or move {them} there. Nothing was fetched or pushed") from None
    except subprocess.TimeoutExpired:
        raise GitSyncError(f"git {args[0]} took longer than {GIT_TIMEOUT:.0f}s; nothing more was done") from None


def _out(repo: str, *args: str) -> str | None:
    r = _git(repo, *args)
    return r.stdout.decode("utf-8", "replace").strip() if r.returncode == 0 else None


def _why(r: subprocess.CompletedProcess) -> str:
    """git's last line of complaint, shortened (credentials never reach it: git prints none)."""
    lines = [ln.strip() for ln in r.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    line = next((ln for ln in reversed(lines) if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
    return line[:200] or f"exit status {r.returncode}"


def _paths(text: str | None) -> list[str]:
    return [p for p in (text or "").split("\0") if p]


def _check_secrets(repo: str, files: list[str]) -> None:
    from mem.core.memdir.files import read_text
    from mem.core.team.routing import check_team_write

    for rel in files:
        path = os.path.join(repo, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            found = check_team_write(read_text(path))
        except (OSError, UnicodeDecodeError):
            continue
        if found:
            raise RefusedError(f"{rel}: {found[1]} Nothing was committed.")


def _flag_poison(repo: str, result: GitSyncResult, files: list[str]) -> None:
    from mem.core.guards.poison import poison_problem
    from mem.core.memdir.files import read_text

    for rel in files:
        path = os.path.join(repo, rel)
        if not rel.endswith(".md") or not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            problem = poison_problem(read_text(path))
        except (OSError, UnicodeDecodeError):
            continue
        if problem:
            result.flagged.append({"path": rel, "reason": problem})


def sync(project: str, *, message: str = COMMIT_MESSAGE) -> GitSyncResult:
    """Fetch, fast-forward within the team directory, commit it, push that commit (module docstring)."""
    from mem.clients.qwen import TEAM_MEMORY_RELPATH, team_memory_dir

    team = team_memory_dir(project)
    result = GitSyncResult(team)
    repo = os.path.dirname(os.path.dirname(team))
    if not os.path.isdir(os.path.join(repo, ".git")) and not os.path.isfile(os.path.join(repo, ".git")):
        raise GitSyncError(f"{repo} is not a git repository: the team memory there cannot be shared")
    if os.path.islink(team) or (os.path.exists(team) and
                                os.path.realpath(team) != os.path.join(os.path.realpath(repo), *TEAM_MEMORY_RELPATH.split("/"))):
        raise RefusedError(f"{team} is a link or leads outside the repository; not syncing it")
    rel = TEAM_MEMORY_RELPATH
    spec = f":(literal){rel}"
    if any(_git(repo, "check-ignore", "-q", "--no-index", "--", f"{rel}/{name}").returncode == 0
           for name in (INDEX_NAME, "feedback.md")):  # as qwen-code checks it
        raise GitSyncError(f"{rel} is git-ignored, so nothing in it is shared: with .qwen/* (not .qwen/) in "
                           f".gitignore, add !{rel}/ and !{rel}/**")
    result.branch = _out(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    if not result.branch:
        raise GitSyncError("HEAD is detached: check out a branch, then mem team sync --git")
    remote = _out(repo, "config", "--get", f"branch.{result.branch}.remote")
    merge = _out(repo, "config", "--get", f"branch.{result.branch}.merge")
    if remote and merge:
        _pull(repo, result, remote, merge, rel)
    _rebuild_index(team, result, rel)
    _commit(repo, result, rel, spec, message)
    _flag_poison(repo, result, [*result.pulled, *(f for f in result.files if f not in result.pulled)])
    if not (remote and merge):
        result.skipped_push = "the branch has no upstream"
    elif result.committed:
        _push(repo, result, remote, merge, spec)
    return result


def _pull(repo: str, result: GitSyncResult, remote: str, merge: str, rel: str) -> None:
    r = _git(repo, "fetch", "--quiet", "--no-recurse-submodules", "--no-write-fetch-head", remote, transport=True)
    if r.returncode != 0:
        raise GitSyncError(f"git fetch {remote} failed: {_why(r)}")
    upstream = _out(repo, "rev-parse", "--verify", "--quiet", "@{upstream}^{commit}")
    if upstream is None:  # the remote has no such branch yet: the push creates it
        return
    result.upstream = upstream
    head = _out(repo, "rev-parse", "--verify", "HEAD^{commit}")
    if head == upstream or _git(repo, "merge-base", "--is-ancestor", upstream, "HEAD").returncode == 0:
        return  # nothing incoming
    changed = _paths(_out(repo, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "HEAD", upstream))
    if _git(repo, "merge-base", "--is-ancestor", "HEAD", upstream).returncode != 0:
        raise BehindError("your branch and its upstream have diverged; pull it yourself, then mem team sync --git")
    if any(not p.startswith(rel + "/") for p in changed):
        raise BehindError("your branch is behind; pull it yourself, then mem team sync --git")
    r = _git(repo, "merge", "--ff-only", "--quiet", "--no-stat", upstream)
    if r.returncode != 0:
        raise GitSyncError(f"the fast-forward of {rel} failed, nothing was committed: {_why(r)}")
    result.pulled = changed


def _rebuild_index(team: str, result: GitSyncResult, rel: str) -> None:
    """The team index rebuilt through the one write path, recorded in the team directory's history."""
    if not os.path.isdir(team):
        return
    from mem.core.memdir.index import rebuild_in_place
    from mem.core.memdir.store import MemoryDir

    done = rebuild_in_place(MemoryDir(team))
    if done.written:
        result.indexed = [f"{rel}/{p}" for p in done.added]
        result.unindexed = [f"{rel}/{p}" for p in done.removed]


def _commit(repo: str, result: GitSyncResult, rel: str, spec: str, message: str) -> None:
    status = _out(repo, "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all", "--", spec)
    if status is None:
        raise GitSyncError("git status failed in the team directory")
    if not status:
        return
    r = _git(repo, "add", "--all", "--", spec)
    if r.returncode != 0:
        raise GitSyncError(f"git add {rel} failed: {_why(r)}")
    staged = _paths(_out(repo, "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--", spec)
                    if _out(repo, "rev-parse", "--verify", "--quiet", "HEAD") else
                    _out(repo, "diff", "--cached", "--name-only", "-z", "--", spec))
    try:
        _check_secrets(repo, staged)
    except RefusedError:
        _git(repo, "reset", "--quiet", "--", spec)
        raise
    if not staged:
        return
    r = _git(repo, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message, "--only", "--", spec)
    if r.returncode != 0:
        _git(repo, "reset", "--quiet", "--", spec)
        raise GitSyncError(f"git commit failed, nothing was committed: {_why(r)}")
    result.committed = _out(repo, "rev-parse", "HEAD")
    result.files = staged


def _push(repo: str, result: GitSyncResult, remote: str, merge: str, spec: str) -> None:
    parent = _out(repo, "rev-parse", "--verify", "--quiet", f"{result.committed}^")
    if result.upstream is not None and parent != result.upstream:
        result.skipped_push = "your branch has other commits not pushed yet: push them, and this one goes with them"
        return
    if result.upstream is None and parent is not None:
        result.skipped_push = "the upstream branch does not exist on the remote yet: push the branch yourself"
        return
    r = _git(repo, "push", "--quiet", "--no-verify", "--no-recurse-submodules", remote,
             f"{result.committed}:{merge}", transport=True)
    if r.returncode == 0:
        result.pushed = True
        return
    if _out(repo, "rev-parse", "HEAD") == result.committed:  # take our commit back; the files stay as they are
        _git(repo, "reset", "--soft", "--quiet", f"{result.committed}^")
        _git(repo, "reset", "--quiet", "--", spec)
    committed, result.committed = result.committed, None
    raise GitSyncError(f"git push to {remote} failed, so the sync commit {committed[:12]} was taken back "
                       f"(the files are unchanged): {_why(r)}")
