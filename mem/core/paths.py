"""The place arithmetic every client's rules build on; no client's own rule is here.

Example: find_project_dir("/h/.claude/projects", "/h/repo") == "/h/.claude/projects/-h-repo"

The user's home, sanitizePath (with its hash for long names) and a project's folder
under a ``projects/`` dir, the project root and the canonical git root (read from the files, as
Claude Code does; git is never run), validating a configured memory path, reading a JSON settings
object, finding an executable on PATH (without shutil), and the keys and places of mem's own
state. Which directory a project's memory is, by whose rules, is mem/clients/ (``resolve``, and each client's module).
Path arithmetic follows Node's POSIX `path` module (normalize/join/resolve), not os.path, because
the two differ on leading `//` and trailing separators and the results must match byte for byte.

uses: core.jscompat; core.memdir.files lazily (typed, capped reads)
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping

from mem.core.jscompat import code_units, js_trim, len16

MAX_SANITIZED_LENGTH = 200
#: A settings file is a few kilobytes: one past this is refused rather than read.
SETTINGS_MAX_BYTES = 4 << 20
_NON_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_TRAILING_SEPS = re.compile(r"[/\\]+\Z")
_DRIVE_ROOT = re.compile(r"[A-Za-z]:")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def string_hash(s: str) -> int:
    """The signed 32-bit Java-style hash `h = (h*31 + c) | 0` over UTF-16 code units.

    Example: string_hash("/home/u/" + "a" * 250) == 700217947
    """
    h = 0
    for unit in code_units(s):
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h >= 0x80000000 else h


def base36(n: int) -> str:
    """`Number.prototype.toString(36)` for integers: lower-case digits, '-' for negatives.

    Example: base36(700217947) == "bkw3mj"
    """
    if n < 0:
        return "-" + base36(-n)
    digits = []
    while True:
        n, r = divmod(n, 36)
        digits.append(_BASE36[r])
        if n == 0:
            return "".join(reversed(digits))


def _replace_unit(m: re.Match) -> str:
    # A character outside the BMP is a surrogate pair in JS, so it becomes two dashes.
    return "--" if ord(m.group()) > 0xFFFF else "-"


def sanitize_path(name: str) -> str:
    """Claude Code's sanitizePath: a project path as one directory name.

    Example: sanitize_path("/home/user/my_repo.v2") == "-home-user-my-repo-v2"
    """
    sanitized = _NON_ALNUM.sub(_replace_unit, name)
    if len(sanitized) <= MAX_SANITIZED_LENGTH:  # all ASCII now: len == len16
        return sanitized
    return f"{sanitized[:MAX_SANITIZED_LENGTH]}-{base36(abs(string_hash(name)))}"


def nfc(s: str) -> str:
    """Unicode NFC, as Claude Code normalizes every path it keys by.

    Example: nfc("/home/u/cafe\u0301") == "/home/u/caf\u00e9"
    """
    if s.isascii():  # ASCII is its own NFC: most paths, and the recall hook need not load unicodedata
        return s
    import unicodedata

    return unicodedata.normalize("NFC", s)


# ---------------------------------------------------------------------------------------------
# Node's POSIX path module


def posix_normalize(p: str) -> str:
    """path.posix.normalize: collapses every run of '/', resolves '.' and '..', keeps one trailing '/'."""
    if not p:
        return "."
    absolute = p.startswith("/")
    trailing = p.endswith("/")
    parts: list[str] = []
    for seg in p.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(seg)
    out = "/".join(parts)
    if absolute:
        out = "/" + out
    if not out:
        out = "."
    if trailing and out != "/":
        out += "/"
    return out


def posix_join(*parts: str) -> str:
    """path.posix.join."""
    joined = "/".join(p for p in parts if p)
    return posix_normalize(joined) if joined else "."


def posix_resolve(*parts: str) -> str:
    """path.posix.resolve: absolute, normalized, no trailing '/' (except the root)."""
    resolved = ""
    for p in reversed(parts):
        if not p:
            continue
        resolved = f"{p}/{resolved}" if resolved else p
        if p.startswith("/"):
            break
    if not resolved.startswith("/"):
        resolved = f"{os.getcwd()}/{resolved}" if resolved else os.getcwd()
    out = posix_normalize(resolved)
    return out.rstrip("/") or "/"


def posix_dirname(p: str) -> str:
    """path.posix.dirname (trailing separators ignored)."""
    stripped = p.rstrip("/")
    if not stripped:
        return "/" if p else "."
    head = stripped.rpartition("/")[0]
    if not head:
        return "/" if stripped.startswith("/") else "."
    return head.rstrip("/") or "/"


def posix_basename(p: str) -> str:
    """path.posix.basename (trailing separators ignored)."""
    return p.rstrip("/").rpartition("/")[2]


def which(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The executable ``name`` on ``env``'s PATH (os.defpath when it is unset or empty), or None.

    A walk of PATH rather than shutil.which: importing shutil (with bz2, lzma and fnmatch) costs the
    recall hook about 2 ms on every prompt.

    Example: which("sh", {"PATH": "/usr/bin:/bin"}) == "/usr/bin/sh"
    """
    for folder in (environ_of(env).get("PATH") or os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _realpath_strict(p: str) -> str:
    if not p:
        raise FileNotFoundError(p)
    return os.path.realpath(p, strict=True)


def read_utf8(path: str) -> str:
    """A small file's text as Node reads it, typed and capped (memdir.files)."""
    # readFileSync(path, 'utf-8'): undecodable bytes become U+FFFD rather than failing
    from mem.core.memdir.files import read_text  # a FIFO is refused, not waited on

    return read_text(path, errors="replace")


# ---------------------------------------------------------------------------------------------
# Home


def environ_of(env: Mapping[str, str] | None) -> Mapping[str, str]:
    """``env``, or the process's environment when None."""
    return os.environ if env is None else env


def home_dir(env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The user's home: `home` if given, else $HOME (as Node's os.homedir()), else the passwd entry.

    Example: home_dir({"HOME": "/home/u"}) == "/home/u"
    """
    if home is not None:
        return home
    h = environ_of(env).get("HOME")
    return h if h else os.path.expanduser("~")


# ---------------------------------------------------------------------------------------------
# Overrides


def validate_memory_path(raw: object, expand_tilde: bool, home: str | None = None) -> str | None:
    """validateMemoryPath: the normalized dir ending in one separator, NFC, or None when unsafe.

    Example: validate_memory_path("~/mem", True, "/home/u") == "/home/u/mem/"
    """
    if not raw or not isinstance(raw, str):
        return None
    candidate = raw
    if expand_tilde and (raw.startswith("~/") or raw.startswith("~\\")):
        rest = raw[2:]
        if posix_normalize(rest or ".") in (".", ".."):
            return None  # ~/, ~/., ~/.. and ~/foo/.. would be the home dir or above it
        candidate = posix_join(home_dir(None, home), rest)
    normalized = _TRAILING_SEPS.sub("", posix_normalize(candidate))
    if (
        not normalized.startswith("/")
        or len16(normalized) < 3
        or _DRIVE_ROOT.fullmatch(normalized)
        or normalized.startswith("\\\\")
        or normalized.startswith("//")
        or "\0" in normalized
    ):
        return None
    return nfc(normalized + os.sep)


# ---------------------------------------------------------------------------------------------
# Project root and canonical git root


def project_root(cwd: str) -> str:
    """getProjectRoot at startup: realpath(cwd) NFC, or the cwd itself NFC when realpath fails.

    Example: project_root("/home/u/repo/") == "/home/u/repo"
    """
    try:
        return nfc(os.path.realpath(cwd, strict=True))
    except (OSError, ValueError):
        # process.cwd() is already absolute and normalized; a --project argument may not be
        return nfc(posix_resolve(cwd))


def find_git_root(start: str) -> str | None:
    """findGitRoot: the nearest directory at or above `start` holding a `.git` dir or file, NFC.

    Example: find_git_root("/home/u/repo/src") == "/home/u/repo"
    """
    current = posix_resolve(start)
    while True:
        try:
            mode = os.stat(posix_join(current, ".git")).st_mode
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                return nfc(current)
        except (OSError, ValueError):
            pass
        parent = posix_dirname(current)
        if parent == current:
            return None
        current = parent


def resolve_canonical_root(git_root: str) -> str:
    """resolveCanonicalRoot: a worktree's main repo root (a bare repo's own dir); else `git_root`.

    Example: resolve_canonical_root("/home/u/wt") == "/home/u/repo"
    """
    try:
        content = js_trim(read_utf8(posix_join(git_root, ".git")))
        if not content.startswith("gitdir:"):
            return git_root
        worktree_git_dir = posix_resolve(git_root, js_trim(content[len("gitdir:"):]))
        # A submodule has no commondir: reading it raises, and a submodule is its own repo.
        common_dir = posix_resolve(worktree_git_dir, js_trim(read_utf8(posix_join(worktree_git_dir, "commondir"))))
        # The .git file and commondir come with a cloned repo, so they are attacker-controlled:
        # accept only the layout `git worktree add` makes, and a backlink to this very checkout.
        if posix_resolve(posix_dirname(worktree_git_dir)) != posix_join(common_dir, "worktrees"):
            return git_root
        backlink = _realpath_strict(js_trim(read_utf8(posix_join(worktree_git_dir, "gitdir"))))
        if backlink != posix_join(_realpath_strict(git_root), ".git"):
            return git_root
        if posix_basename(common_dir) != ".git":
            return nfc(common_dir)  # a worktree of a bare repo
        return nfc(posix_dirname(common_dir))
    except Exception:
        return git_root


def find_canonical_git_root(p: str) -> str | None:
    """findCanonicalGitRoot: the canonical root of the repo holding `p`, or None outside git.

    Example: find_canonical_git_root("/home/u/wt/src") == "/home/u/repo"
    """
    root = find_git_root(p)
    return None if root is None else resolve_canonical_root(root)


# ---------------------------------------------------------------------------------------------
# Settings


def read_json_object(path: str | None) -> dict | None:
    """A settings file's JSON object; None when it is absent, unreadable, not JSON or not an object."""
    if not path:
        return None
    from mem.core.memdir.files import read_bytes

    try:
        raw = read_bytes(path)  # a FIFO planted as a project's settings file would hang every hook
    except OSError:
        return None
    import json  # only when a settings file exists: json is not free at start-up

    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: no settings
        return None
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------------------------------------
# Directories


def find_project_dir(projects: str, name: str) -> str:
    """A path's project folder: the exact sanitized name, else one with another hash suffix, else exact.

    Over 200 chars the suffix is a hash, and other Claude Code versions hashed differently: reuse
    the first existing `<first 200>-*` folder rather than start a second one.

    Example: find_project_dir("/h/.claude/projects", "/h/repo") == "/h/.claude/projects/-h-repo"
    """
    sanitized = sanitize_path(name)
    exact = posix_join(projects, sanitized)
    if os.path.isdir(exact) or len(sanitized) <= MAX_SANITIZED_LENGTH:
        return exact
    prefix = sanitized[:MAX_SANITIZED_LENGTH] + "-"
    try:
        with os.scandir(projects) as it:
            names = sorted(e.name for e in it if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False))
    except OSError:
        return exact
    return posix_join(projects, names[0]) if names else exact


def _digest12(data: bytes) -> str:
    """12 hex digits of BLAKE2b. ``_blake2`` directly: ``import hashlib`` loads
    OpenSSL, a few milliseconds on every hook call."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=6).hexdigest()


def state_key(memory_dir: str) -> str:
    """A short, stable, filesystem-safe name for a memory dir, to key state kept outside it.

    Example: state_key("/home/u/.claude/projects/-home-u-repo/memory/") == "home-u-repo-memory-61f3401cef7f"
    """
    real = nfc(os.path.realpath(os.path.expanduser(memory_dir)))
    digest = _digest12(real.encode("utf-8", "surrogatepass"))
    parts = [p for p in real.split("/") if p]
    # "<project folder>-memory" says more than "memory" alone
    tail = parts[-2:] if len(parts) >= 2 and parts[-1] == "memory" else parts[-1:]
    slug = _NON_ALNUM.sub(_replace_unit, "-".join(tail))[-40:].strip("-")
    return f"{slug}-{digest}" if slug else digest




def user_memory_dir(env: Mapping[str, str] | None = None) -> str:
    """User-level memory, shared by every project: MEM_USER_DIR, else ``<user data dir>/mem/memory``.

    Neither client has such a directory (``~/.claude/CLAUDE.md`` holds the user's instructions,
    ``~/.claude/agent-memory/`` is per agent), so it lives in ours, in the same layout as a
    project's: MEMORY.md plus topic files. ``mem prompt --hook`` adds its index at session start,
    recall searches it after the project's own.

    Example: user_memory_dir({"HOME": "/home/u"}) == "/home/u/.local/share/mem/memory"  # on Linux
    """
    env = environ_of(env)
    override = env.get("MEM_USER_DIR")
    if override:
        return posix_resolve(os.path.expanduser(override))
    xdg = env.get("XDG_DATA_HOME", "")
    home = env.get("HOME", "")
    # platformdirs' answer on Linux, without importing it on the hook's path
    if sys.platform == "linux" and (xdg.startswith("/") or home.startswith("/")):
        base = xdg if xdg.startswith("/") else posix_join(home, ".local", "share")
        return posix_join(base, "mem", "memory")
    from platformdirs import user_data_dir

    return posix_join(user_data_dir("mem", appauthor=False), "memory")
