"""The pure parts of the team-memory sync contract: keys, checksums, batches, repo names.

Both sides use these: the client before it writes a server entry to disk or
sends a local file, the server before it stores an entry (reference §8.3,
§8.4). Nothing here touches the network; only ``key_path`` reads the disk.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import unicodedata

from mem.core.errors import PathEscapeError, UsageError
from mem.core.memdir.layout import TEAM_PREFIX

#: Per file: larger files are skipped on push and on pull, and refused by the server.
MAX_FILE_SIZE_BYTES = 250_000
#: A PUT body is packed to at most this many bytes (one oversized entry goes alone).
MAX_PUT_BODY_BYTES = 200_000
#: GET retries after the first attempt (not PUT: a PUT is resolved by 412 and the hashes view).
MAX_RETRIES = 3
#: After a 412: probe the hashes, recompute the delta, try again; at most this many times.
MAX_CONFLICT_RETRIES = 2
#: Seconds for one request.
TIMEOUT = 30.0
#: ``{"entries":{}}``, the fixed part of every PUT body.
EMPTY_BODY_BYTES = 14
#: Our own bounds on a key (the reference has none): bytes in all, bytes per segment.
MAX_KEY_BYTES = 1024
MAX_SEGMENT_BYTES = 255

API_PATH = "/api/claude_code/team_memory"
CHECKSUM_PREFIX = "sha256:"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_FAKE_TEAM = "/t/team/"  # any absolute dir ending in a separator: containment is lexical


class InvalidKeyError(PathEscapeError):
    """An entry key that would leave team/ (or is otherwise not a safe relative path)."""

    def __init__(self, key: object, reason: str):
        super().__init__(f"refused team memory key {key!r}: {reason}")
        self.key = key
        self.reason = reason


def hash_content(content: str) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes, the format of the server's entryChecksums."""
    return CHECKSUM_PREFIX + hashlib.sha256(content.encode("utf-8")).hexdigest()


def _decode_uri_component(key: str) -> str:
    """JS ``decodeURIComponent``, or ``key`` itself where JS would throw (malformed escapes)."""
    if "%" not in key or _PERCENT.search(key):
        return key
    from urllib.parse import unquote_to_bytes

    try:
        return unquote_to_bytes(key).decode("utf-8")
    except UnicodeDecodeError:
        return key


def check_key(key: object) -> str:
    """``key`` if it is a safe team-memory key, else InvalidKeyError (reference §8.3, and ours).

    The reference's checks: no NUL; no ``..`` or ``/`` smuggled in by percent
    encoding or by NFKC normalisation (fullwidth dots and slashes); no
    backslash; not absolute; and joined to team/ it stays inside team/. Ours on
    top, so that one file has exactly one key on every machine: the key is in
    normal form (no empty, ``.`` or ``..`` segment, no trailing slash), has no
    control character, and stays within 1,024 bytes (255 per segment).
    """
    if not isinstance(key, str):
        raise InvalidKeyError(key, "not a string")
    if not key:
        raise InvalidKeyError(key, "empty")
    if "\0" in key:
        raise InvalidKeyError(key, "contains a NUL byte")
    decoded = _decode_uri_component(key)
    if decoded != key and (".." in decoded or "/" in decoded):
        raise InvalidKeyError(key, "percent-encoded traversal")
    normalized = unicodedata.normalize("NFKC", key)
    if normalized != key and any(s in normalized for s in ("..", "/", "\\", "\0")):
        raise InvalidKeyError(key, "traversal after Unicode normalisation")
    if "\\" in key:
        raise InvalidKeyError(key, "contains a backslash")
    if key.startswith("/"):
        raise InvalidKeyError(key, "absolute path")
    if not posixpath.normpath(_FAKE_TEAM + key).startswith(_FAKE_TEAM):
        raise InvalidKeyError(key, "escapes the team directory")
    if _CONTROL.search(key):
        raise InvalidKeyError(key, "contains a control character")
    if posixpath.normpath(key) != key or key.endswith("/"):
        raise InvalidKeyError(key, "not in normal form (empty, '.' or '..' segment)")
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidKeyError(key, "not valid Unicode") from None
    if len(raw) > MAX_KEY_BYTES or any(len(s.encode("utf-8")) > MAX_SEGMENT_BYTES for s in key.split("/")):
        raise InvalidKeyError(key, f"longer than {MAX_KEY_BYTES} bytes or {MAX_SEGMENT_BYTES} per segment")
    return key


def key_path(store, key: str) -> str:
    """The real path a write of ``key`` touches under ``<memory dir>/team/``, or InvalidKeyError.

    ``store`` is the memory directory's MemoryDir: its resolve() refuses
    symlinks and dangling links leading out of the memory directory; this adds
    the tighter bound of the team directory itself (a link in team/ to
    ../MEMORY.md stays in the memory directory but leaves team/).
    """
    check_key(key)
    try:
        real = store.resolve(TEAM_PREFIX + key)
    except PathEscapeError as exc:
        raise InvalidKeyError(key, str(exc)) from None
    team_real = os.path.realpath(store.team_dir)
    if not real.startswith(team_real.rstrip(os.sep) + os.sep):
        raise InvalidKeyError(key, "resolves outside the team directory")
    return real


def entry_bytes(key: str, value: str) -> int:
    """What one entry adds to a PUT body: both JSON strings, a colon and a comma."""
    import json

    return len(json.dumps(key, ensure_ascii=False).encode("utf-8")) + len(
        json.dumps(value, ensure_ascii=False).encode("utf-8")) + 2


def batches(delta: dict[str, str], limit: int = MAX_PUT_BODY_BYTES) -> list[dict[str, str]]:
    """The delta as PUT bodies of at most ``limit`` bytes: sorted keys, packed greedily.

    A new batch starts when the next entry would overflow a non-empty one, so
    an entry bigger than the limit travels alone.
    """
    out: list[dict[str, str]] = []
    current: dict[str, str] = {}
    size = EMPTY_BODY_BYTES
    for key in sorted(delta):
        added = entry_bytes(key, delta[key])
        if current and size + added > limit:
            out.append(current)
            current, size = {}, EMPTY_BODY_BYTES
        current[key] = delta[key]
        size += added
    if current:
        out.append(current)
    return out


def repo_checksum(entry_checksums: dict[str, str]) -> str:
    """The checksum (and ETag) of a repo's whole team memory: a hash of its sorted key hashes.

    Content-addressed, so two servers, or one server after A→B→A, agree.
    """
    h = hashlib.sha256()
    for key in sorted(entry_checksums):
        h.update(key.encode("utf-8"))
        h.update(b"\0")
        h.update(entry_checksums[key].encode("ascii"))
        h.update(b"\n")
    return CHECKSUM_PREFIX + h.hexdigest()


# --- repositories ------------------------------------------------------------------------------

_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]+$")
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^/:]+):(?P<path>(?!/).+)$")
_URL = re.compile(r"^(?:https?|ssh|git|git\+ssh|ssh\+git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d*)?/(?P<path>.+)$", re.I)
MAX_REPO_CHARS = 200


def check_repo(repo: object) -> str:
    """``repo`` if it is ``owner/repo`` (a deeper ``group/sub/repo`` is allowed), else UsageError."""
    if not isinstance(repo, str) or not repo or len(repo) > MAX_REPO_CHARS:
        raise UsageError(f"not a repository name: {repo!r} (expected OWNER/REPO)")
    parts = repo.split("/")
    if len(parts) < 2 or any(not _SEGMENT.match(p) or p in (".", "..") for p in parts):
        raise UsageError(f"not a repository name: {repo!r} (expected OWNER/REPO)")
    return repo


def repo_from_remote(url: str) -> str | None:
    """``owner/repo`` from a git remote URL (SSH ``git@host:owner/repo.git`` or a URL), else None.

    Any host is accepted, not only github.com as Claude Code requires: a
    self-hosted team server serves whatever forge the team uses.
    """
    url = url.strip()
    m = _URL.match(url) or (None if "://" in url else _SCP.match(url))
    if not m:
        return None
    path = m.group("path").split("?", 1)[0].split("#", 1)[0].strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    try:
        return check_repo(path)
    except UsageError:
        return None


def git_remote_repo(project_root: str) -> str | None:
    """The repo of ``origin`` (else of the first remote) of the git repository at ``project_root``."""
    import subprocess

    from mem.core import gitcmd

    try:
        proc = gitcmd.run(["config", "--get-regexp", r"^remote\..*\.url$"], repo=project_root, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    remotes: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        name, _, url = line.partition(" ")
        remotes.setdefault(name[len("remote."):-len(".url")], url)
    order = (["origin"] if "origin" in remotes else []) + [n for n in remotes if n != "origin"]
    for name in order:
        repo = repo_from_remote(remotes[name])
        if repo:
            return repo
    return None
