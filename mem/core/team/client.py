"""The team-memory client: pull, push, sync and status for ``<memory dir>/team/`` (reference §8.4).

    GET  ?repo=…               If-None-Match: 200 (server wins per key), 304, 404
    PUT  ?repo=…               {"entries": {…}}, If-Match (or If-None-Match: * for a new repo);
                               only keys whose sha256: differs; bodies ≤ 200,000 bytes
    412                        GET ?view=hashes, recompute the delta, retry (twice at most)
    413 too_many_entries       learn the cap; push the first max_entries keys (sorted)

What the client knows of the server (its ETag, per-key checksums, a learned
entry cap) is kept in the state directory, never in the memory directory,
and a lock there keeps a ``mem team watch`` and a manual push from
interleaving. Every write into team/ goes through MemoryDir (containment,
secret scan, atomic rename). Files over 250,000 bytes are skipped both ways;
a file with a secret is never sent; deletions do not propagate.

A hostile or broken server cannot hold a command or fill the disk: ``--timeout``
is a deadline for the whole pull, push, sync or status (a server that drips one
byte at a time is cut off when it passes), an answer over MAX_RESPONSE_BYTES is
refused unread, and so is one with more than MAX_PULL_ENTRIES entries.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from mem.core.errors import ConfigError, MemError, RefusedError
from mem.core.memdir.files import read_bytes
from mem.core.memdir.store import MemoryDir
from mem.core.memdir.layout import TEAM_PREFIX, is_temp_name, walk_entries
from mem.core.team import keys
from mem.core.team.keys import MAX_FILE_SIZE_BYTES, hash_content

USER_AGENT = "mem-team"
#: The largest answer read from a server (the default server keeps 1000 entries of at most 250,000 bytes).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: The most entries a pull takes; a server that sends more is refused and nothing is written.
MAX_PULL_ENTRIES = 5000


# --- errors -------------------------------------------------------------------------------------


class TeamError(MemError):
    """The server could not be reached or did not follow the contract (exit 70)."""

    #: "network", "timeout", "http", "parse", "conflict", "too_many_entries", "body_too_large",
    #: "response_too_large"
    kind = "http"

    def __init__(self, message: str, *, kind: str = "http", status: int | None = None, body: dict | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.body = body

    @property
    def transient(self) -> bool:
        """Worth retrying later: network trouble, timeouts, 5xx, 409, 429, unresolved conflicts."""
        if self.kind in ("network", "timeout", "conflict"):
            return True
        return self.status is not None and (self.status >= 500 or self.status in (409, 429))


class TeamAuthError(ConfigError):
    """401/403: the token is missing, wrong, revoked or not scoped to the repo (exit 3)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
        self.transient = False


# --- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    memory: MemoryDir
    url: str  # the server's base URL, without the API path
    token: str | None
    repo: str
    timeout: float = keys.TIMEOUT

    @property
    def team_dir(self) -> str:
        return self.memory.team_dir

    @property
    def endpoint(self) -> str:
        from urllib.parse import quote

        return f"{self.url.rstrip('/')}{keys.API_PATH}?repo={quote(self.repo, safe='')}"


def server_url(url: str | None = None, env=None) -> str:
    """--url, else MEM_TEAM_URL, else TEAM_MEMORY_SYNC_URL (Claude Code's variable)."""
    env = os.environ if env is None else env
    url = url or env.get("MEM_TEAM_URL") or env.get("TEAM_MEMORY_SYNC_URL")
    if not url:
        raise ConfigError("no team server: set MEM_TEAM_URL (or TEAM_MEMORY_SYNC_URL), or pass --url")
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"the team server URL must be http:// or https://: {url!r}")
    return url


def make_config(memory: MemoryDir, project_root: str, *, url: str | None = None, repo: str | None = None,
                token: str | None = None, timeout: float = keys.TIMEOUT, env=None) -> Config:
    env = os.environ if env is None else env
    base = server_url(url, env)
    repo = repo or env.get("MEM_TEAM_REPO") or keys.git_remote_repo(project_root)
    if not repo:
        raise ConfigError(f"no repository for team memory: {project_root} has no git remote "
                          "(like git@github.com:OWNER/REPO.git); pass --repo OWNER/REPO or set MEM_TEAM_REPO")
    try:
        keys.check_repo(repo)
    except MemError as exc:
        raise ConfigError(str(exc)) from None
    token = token if token is not None else env.get("MEM_TEAM_TOKEN") or None
    return Config(memory, base, token, repo, timeout)


# --- what the client knows of the server ----------------------------------------------------------


@dataclass
class SyncState:
    url: str
    repo: str
    etag: str | None = None  # the server's checksum of the whole repo, as last seen
    server_checksums: dict[str, str] = field(default_factory=dict)
    server_max_entries: int | None = None
    last_pull: str | None = None
    last_push: str | None = None

    def as_dict(self) -> dict:
        return {"url": self.url, "repo": self.repo, "etag": self.etag, "server_checksums": self.server_checksums,
                "server_max_entries": self.server_max_entries, "last_pull": self.last_pull, "last_push": self.last_push}


def load_state(cfg: Config) -> SyncState:
    """The saved state for this server and repo (a fresh one if it was for another)."""
    try:
        with open(cfg.memory.state.team_state, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return SyncState(cfg.url, cfg.repo)
    if not isinstance(data, dict) or data.get("url") != cfg.url or data.get("repo") != cfg.repo:
        return SyncState(cfg.url, cfg.repo)
    checks = data.get("server_checksums")
    cap = data.get("server_max_entries")
    return SyncState(
        cfg.url, cfg.repo, data.get("etag") if isinstance(data.get("etag"), str) else None,
        {k: v for k, v in checks.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(checks, dict) else {},
        cap if isinstance(cap, int) and cap > 0 else None, data.get("last_pull"), data.get("last_push"),
    )


def save_state(cfg: Config, state: SyncState) -> None:
    from mem.core.memdir.store import atomic_write

    path = cfg.memory.state.team_state
    atomic_write(path, (json.dumps(state.as_dict(), ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8"))


@contextlib.contextmanager
def sync_lock(cfg: Config) -> Iterator[None]:
    from mem.core.memdir.store import file_lock

    with file_lock(cfg.memory.state.team_lock, wait=True):
        yield


def _now() -> str:
    from mem.core.memdir.manifest import now_iso

    return now_iso()


# --- HTTP ---------------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict | None:
        try:
            doc = json.loads(self.body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested past the parser's depth
            return None
        return doc if isinstance(doc, dict) else None

    def etag(self) -> str | None:
        tag = self.headers.get("etag")
        return tag.strip().removeprefix("W/").strip('"') if tag else None


class Http:
    """One keep-alive connection to the team server (reopened when the server closed it).

    Every request of one operation (``with http.deadline():``) shares one
    deadline, ``cfg.timeout`` seconds from its start: a socket timeout alone
    restarts with every byte, so a watchdog shuts the socket when time is up.
    """

    def __init__(self, cfg: Config):
        from urllib.parse import urlsplit

        self.cfg = cfg
        parts = urlsplit(cfg.url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self._conn = None
        self.requests = 0
        self._deadline: float | None = None
        self._expired = False

    @contextlib.contextmanager
    def deadline(self) -> Iterator[None]:
        """One deadline for the requests made inside; nested uses keep the outer one."""
        if self._deadline is not None:
            yield
            return
        self._deadline = time.monotonic() + self.cfg.timeout
        try:
            yield
        finally:
            self._deadline = None

    def remaining(self) -> float:
        return self.cfg.timeout if self._deadline is None else self._deadline - time.monotonic()

    def _timed_out(self) -> TeamError:
        return TeamError(f"the team server {self.cfg.url} did not answer within {self.cfg.timeout:g}s", kind="timeout")

    def _expire(self) -> None:
        """Watchdog: the deadline passed while a request was running; end it by closing the socket."""
        import socket

        self._expired = True
        sock = getattr(self._conn, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def _connection(self):
        import http.client

        if self._conn is None:
            if self.https:
                import ssl

                self._conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.cfg.timeout,
                                                         context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.cfg.timeout)
        return self._conn

    def request(self, method: str, query: str = "", *, headers: dict | None = None, body: bytes | None = None) -> Response:
        import http.client
        from urllib.parse import quote

        target = f"{self.prefix}{keys.API_PATH}?repo={quote(self.cfg.repo, safe='')}{query}"
        all_headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})}
        if self.cfg.token:
            all_headers["Authorization"] = f"Bearer {self.cfg.token}"
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        import threading

        for attempt in (1, 2):
            left = self.remaining()
            if left <= 0:
                self.close()
                raise self._timed_out()
            reused = self._conn is not None
            conn = self._connection()
            conn.timeout = min(self.cfg.timeout, left)
            if conn.sock is not None:
                conn.sock.settimeout(conn.timeout)
            self._expired = False
            watchdog = threading.Timer(left, self._expire)
            watchdog.daemon = True
            watchdog.start()
            try:
                conn.request(method, target, body=body, headers=all_headers)
                resp = conn.getresponse()
                data = self._read_capped(resp)
                if self._expired:  # the watchdog shut the socket: what came is cut short
                    raise self._timed_out()
            except TeamError:
                self.close()
                raise
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if self._expired or isinstance(exc, TimeoutError):
                    raise self._timed_out() from None
                if isinstance(exc, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)):
                    # A kept-alive connection the server had closed: once more on a new one. A PUT
                    # repeated this way is safe: it carries If-Match or If-None-Match.
                    if reused and attempt == 1:
                        continue
                    reason = str(exc) or type(exc).__name__
                else:
                    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                raise TeamError(f"cannot reach the team server {self.cfg.url}: {reason}", kind="network") from None
            finally:
                watchdog.cancel()
            self.requests += 1
            if resp.will_close:
                self.close()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        raise AssertionError("unreachable")

    def _read_capped(self, resp) -> bytes:
        """The body, or a TeamError when it is over MAX_RESPONSE_BYTES (said or found: at most that much is read)."""
        length = resp.getheader("Content-Length")
        if length and length.strip().isdigit() and int(length) > MAX_RESPONSE_BYTES:
            raise self._too_large(int(length))
        data = resp.read(MAX_RESPONSE_BYTES + 1)
        if len(data) > MAX_RESPONSE_BYTES:
            raise self._too_large(None)
        return data

    def _too_large(self, size: int | None) -> TeamError:
        said = f" ({size:,} bytes)" if size is not None else ""
        return TeamError(f"the team server {self.cfg.url} sent an answer over the {MAX_RESPONSE_BYTES:,}-byte "
                         f"limit{said}: refused", kind="response_too_large")


def _error_from(resp: Response, what: str) -> MemError:
    body = resp.json()
    message = None
    if body and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    if isinstance(message, str):
        from mem.core.guards.control import printable

        message = printable(message)
    detail = f": {message}" if message else ""
    if resp.status in (401, 403):
        hint = " (check MEM_TEAM_TOKEN)" if resp.status == 401 else ""
        return TeamAuthError(f"{what}: the team server said {resp.status}{detail}{hint}", resp.status)
    return TeamError(f"{what}: the team server said {resp.status}{detail}", status=resp.status, body=body)


def retry_delay(attempt: int, *, first: float = 0.5, cap: float = 32.0) -> float:
    """Seconds before retry ``attempt`` (1-based): first·2^(n-1), at most cap, plus up to 25% jitter."""
    base = min(first * 2 ** (attempt - 1), cap)
    return base + random.uniform(0, base * 0.25)


def _get_with_retries(http: Http, query: str, headers: dict, ok: tuple[int, ...], what: str, *, retries: int,
                      sleep=time.sleep) -> Response:
    attempt = 0
    while True:
        try:
            resp = http.request("GET", query, headers=headers)
        except TeamError as exc:
            # an answer refused for its size or shape is refused again: only trouble on the way is retried
            if not exc.transient or attempt >= retries:
                raise
            error: MemError = exc
        else:
            if resp.status in ok:
                return resp
            error = _error_from(resp, what)
            if not getattr(error, "transient", False) or attempt >= retries:
                raise error
        attempt += 1
        delay = retry_delay(attempt)
        if delay >= http.remaining():  # no time left for another try within the deadline
            raise error
        sleep(delay)


# --- reading team/ -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Skipped:
    key: str
    reason: str  # "secret", "poison", "too-large", "invalid-key", "not-utf8", "unreadable", "over-entry-cap"
    detail: str | None = None
    rule_id: str | None = None
    label: str | None = None
    quarantined: str | None = None  # "poison": where the server's text was kept instead

    def as_dict(self) -> dict:
        d = {"key": self.key, "reason": self.reason, "detail": self.detail}
        if self.rule_id:
            d["rule_id"] = self.rule_id
            d["label"] = self.label
        if self.quarantined:
            d["quarantined"] = self.quarantined
        return d

    def describe(self) -> str:
        from mem.core.guards.control import printable  # a key from a server may hold escape sequences

        if self.reason == "secret":
            return f"team/{printable(self.key)}: not synced: it contains a secret ({self.label}, rule {self.rule_id})"
        if self.reason == "poison":
            return f"team/{printable(self.key)}: quarantined: {printable(self.detail or '')}"
        return f"team/{printable(self.key)}: not synced: {printable(self.detail or self.reason)}"


def walk_team(team_dir: str) -> Iterator[tuple[str, str]]:
    """(key, path) of every regular file under team/, sorted; symlinks are not followed."""
    found = [(rel, entry.path) for rel, entry, is_dir in walk_entries(team_dir)
             if not is_dir and not is_temp_name(entry.name) and entry.is_file(follow_symlinks=False)]
    return iter(sorted(found))


@dataclass
class LocalFiles:
    entries: dict[str, str]
    skipped: list[Skipped]


def read_local(team_dir: str, max_entries: int | None = None, *, scan_secrets: bool = True) -> LocalFiles:
    """What a push may send: every regular file in team/ that is small, UTF-8, validly named and clean."""
    from mem.core.guards.secrets import first_secret

    entries: dict[str, str] = {}
    skipped: list[Skipped] = []
    for key, path in walk_team(team_dir):
        try:
            keys.check_key(key)
        except keys.InvalidKeyError as exc:
            skipped.append(Skipped(key, "invalid-key", exc.reason))
            continue
        try:
            size = os.stat(path).st_size
            if size > MAX_FILE_SIZE_BYTES:
                skipped.append(Skipped(key, "too-large", f"{size} bytes, over the {MAX_FILE_SIZE_BYTES:,}-byte limit"))
                continue
            raw = read_bytes(path, MAX_FILE_SIZE_BYTES + 1, head=True)  # a FIFO is refused, not waited on
        except OSError as exc:
            skipped.append(Skipped(key, "unreadable", exc.strerror or str(exc)))
            continue
        if len(raw) > MAX_FILE_SIZE_BYTES:
            skipped.append(Skipped(key, "too-large", f"over the {MAX_FILE_SIZE_BYTES:,}-byte limit"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(Skipped(key, "not-utf8", "not UTF-8 text"))
            continue
        if scan_secrets:
            hit = first_secret(text)
            if hit is not None:
                skipped.append(Skipped(key, "secret", "contains a secret", hit.rule_id, hit.label))
                continue
        entries[key] = text
    if max_entries is not None and len(entries) > max_entries:
        ordered = sorted(entries)
        for key in ordered[max_entries:]:
            skipped.append(Skipped(key, "over-entry-cap", f"the server keeps at most {max_entries} entries"))
            del entries[key]
    return LocalFiles(entries, skipped)


def local_hashes(team_dir: str) -> dict[str, str]:
    """key → sha256: of every readable UTF-8 file in team/ (no secret scan: for comparisons only)."""
    return {k: hash_content(v) for k, v in read_local(team_dir, scan_secrets=False).entries.items()}


# --- pull ---------------------------------------------------------------------------------------


@dataclass
class PullResult:
    repo: str
    url: str
    status: str  # "updated", "unchanged", "not_modified", "empty"
    version: int | None = None
    checksum: str | None = None
    entry_count: int = 0
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    overwritten_local: list[str] = field(default_factory=list)
    kept_local: list[str] = field(default_factory=list)
    snapshot: str | None = None

    @property
    def refused(self) -> list[Skipped]:
        return [s for s in self.skipped if s.reason in ("secret", "poison", "invalid-key")]

    def as_dict(self) -> dict:
        return {"repo": self.repo, "url": self.url, "status": self.status, "version": self.version,
                "checksum": self.checksum, "entry_count": self.entry_count, "created": self.created,
                "updated": self.updated, "unchanged": self.unchanged,
                "skipped": [s.as_dict() for s in self.skipped], "overwritten_local": self.overwritten_local,
                "kept_local": self.kept_local, "snapshot": self.snapshot}


def _local_agrees(cfg: Config, state: SyncState) -> bool:
    """Every key the server had is on disk with the server's content (then a 304 leaves nothing to do)."""
    if not state.etag:
        return False
    if not state.server_checksums:
        return True
    have = local_hashes(cfg.team_dir)
    return all(have.get(k) == h for k, h in state.server_checksums.items())


def _parse_data(resp: Response) -> tuple[dict[str, str], dict[str, str] | None, dict]:
    doc = resp.json()
    content = doc.get("content") if doc else None
    entries = content.get("entries") if isinstance(content, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
        raise TeamError("the team server's answer is not team memory data (no content.entries)", kind="parse")
    if len(entries) > MAX_PULL_ENTRIES:
        raise TeamError(f"the team server sent {len(entries):,} entries, over the {MAX_PULL_ENTRIES:,} a pull takes: "
                        "refused, nothing written", kind="too_many_entries")
    checks = content.get("entryChecksums")
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        checks = None
    return entries, checks, doc


def pull(cfg: Config, *, http: Http | None = None, state: SyncState | None = None, use_etag: bool = True,
         keep_local_edits: bool = False, retries: int = keys.MAX_RETRIES, sleep=time.sleep) -> PullResult:
    """Fetch the repo's team memory and write what differs into team/ (the server wins per key).

    A local file that differs from the server and had not been pushed is
    overwritten all the same, as one operation of the history
    (``mem undo`` brings it back); it is listed in ``overwritten_local``. With
    ``keep_local_edits`` (what sync and watch use), a key edited here whose
    server content has not changed since the last sync is left alone for the
    push that follows (``kept_local``).
    """
    own = http is None
    http = http or Http(cfg)
    try:
        with http.deadline(), sync_lock(cfg):
            st = state or load_state(cfg)
            result = _pull(cfg, http, st, use_etag=use_etag, keep_local=keep_local_edits, retries=retries, sleep=sleep)
            save_state(cfg, st)
            return result
    finally:
        if own:
            http.close()


def _pull(cfg: Config, http: Http, st: SyncState, *, use_etag: bool, keep_local: bool, retries: int, sleep) -> PullResult:
    started = time.monotonic()
    result = PullResult(cfg.repo, cfg.url, "unchanged")
    headers = {}
    if use_etag and _local_agrees(cfg, st):
        headers["If-None-Match"] = f'"{st.etag}"'
    resp = _get_with_retries(http, "", headers, (200, 304, 404), "pull", retries=retries, sleep=sleep)
    st.last_pull = _now()
    if resp.status == 304:
        result.status, result.checksum = "not_modified", st.etag
        return result
    if resp.status == 404:
        st.etag = None
        st.server_checksums = {}
        result.status = "empty"
        return result
    entries, checks, doc = _parse_data(resp)
    previous = dict(st.server_checksums)
    st.etag = (doc.get("checksum") if isinstance(doc.get("checksum"), str) else None) or resp.etag()
    st.server_checksums = dict(checks) if checks is not None else {k: hash_content(v) for k, v in entries.items()}
    result.version = doc.get("version") if isinstance(doc.get("version"), int) else None
    result.checksum = st.etag
    result.entry_count = len(entries)

    store = cfg.memory
    plan: list[tuple[str, str, bool]] = []  # key, content, created
    for key in sorted(entries):
        content = entries[key]
        try:
            real = keys.key_path(store, key)
        except keys.InvalidKeyError as exc:
            result.skipped.append(Skipped(key, "invalid-key", exc.reason))
            continue
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            result.skipped.append(Skipped(key, "not-utf8", "not valid Unicode text"))
            continue
        if len(data) > MAX_FILE_SIZE_BYTES:
            result.skipped.append(Skipped(key, "too-large", f"over the {MAX_FILE_SIZE_BYTES:,}-byte limit"))
            continue
        refused = _quarantine_if_poisoned(store, key, content)
        if refused is not None:
            result.skipped.append(refused)
            continue
        try:
            old = read_bytes(real)
        except FileNotFoundError:
            plan.append((key, content, True))
            continue
        except OSError as exc:
            result.skipped.append(Skipped(key, "unreadable", exc.strerror or str(exc)))
            continue
        if old == data:
            result.unchanged += 1
            continue
        try:
            old_hash = hash_content(old.decode("utf-8"))
        except UnicodeDecodeError:
            old_hash = None
        if old_hash is None or previous.get(key) != old_hash:
            # An edit here the server never got.
            if keep_local and old_hash is not None and previous.get(key) == st.server_checksums.get(key):
                result.kept_local.append(key)  # the server did not change it since: the push sends ours
                continue
            result.overwritten_local.append(key)
        plan.append((key, content, False))

    with store.operation("team pull", [cfg.repo], event=False):
        for key, content, created in plan:
            try:
                written = store.write(TEAM_PREFIX + key, content, scan=True, restamp=False)
            except keys.InvalidKeyError as exc:
                result.skipped.append(Skipped(key, "invalid-key", exc.reason))
                continue
            except RefusedError as exc:
                rule = getattr(exc, "rule_id", None)
                if rule:
                    result.skipped.append(Skipped(key, "secret", "contains a secret", rule, getattr(exc, "label", None)))
                else:
                    result.skipped.append(Skipped(key, "invalid-key", str(exc)))
                continue
            if written.changed:
                (result.created if created else result.updated).append(key)
    if result.overwritten_local and store.last_operation is not None:
        result.snapshot = store.last_operation.id  # `mem undo ID` brings the local edits back
    result.overwritten_local = [k for k in result.overwritten_local if k in result.updated]
    if result.created or result.updated:
        from mem.core.memdir import events

        result.status = "updated"
        events.record(
            cfg.memory, "team pull", created=[TEAM_PREFIX + k for k in result.created],
            updated=[TEAM_PREFIX + k for k in result.updated], duration=time.monotonic() - started,
            detail={"repo": cfg.repo, "version": result.version, "snapshot": result.snapshot,
                    "overwritten_local": [TEAM_PREFIX + k for k in result.overwritten_local]},
        )
    return result


def _quarantine_if_poisoned(store, key: str, content: str) -> Skipped | None:
    """None for text the poisoning guard passes; else keep it in the state dir's quarantine, not in team/.

    Team memory reaches every teammate's agent: one teammate (or the server)
    must not plant a permission grant or a forged reminder for all of them.
    ``key`` has been checked (keys.key_path), so it is a safe relative path.
    """
    from mem.core.guards import poison
    from mem.core.memdir.files import atomic_write

    if not poison.flags(content):  # stops at the finding that decides; the full report only for what is kept
        return None
    report = poison.scan_text(content)
    first = max(report.findings, key=lambda f: f.weight)
    path = os.path.join(store.state.team_quarantine, *key.split("/"))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    atomic_write(path, content.encode("utf-8"))
    detail = f"line {first.line} {first.message} (rule {first.rule_id}); kept in {path}"
    return Skipped(key, "poison", detail, first.rule_id, first.category, path)


# --- push ---------------------------------------------------------------------------------------


@dataclass
class PushResult:
    repo: str
    url: str
    uploaded: list[str] = field(default_factory=list)
    batches: int = 0
    conflicts: int = 0  # 412s met (and resolved, unless the push failed)
    overwrote: list[str] = field(default_factory=list)  # keys a teammate had changed that we replaced
    skipped: list[Skipped] = field(default_factory=list)
    version: int | None = None
    checksum: str | None = None
    max_entries: int | None = None
    local_count: int = 0

    @property
    def refused(self) -> list[Skipped]:
        return [s for s in self.skipped if s.reason in ("secret", "invalid-key")]

    def as_dict(self) -> dict:
        return {"repo": self.repo, "url": self.url, "uploaded": self.uploaded, "batches": self.batches,
                "conflicts": self.conflicts, "overwrote": self.overwrote,
                "skipped": [s.as_dict() for s in self.skipped], "version": self.version,
                "checksum": self.checksum, "max_entries": self.max_entries, "local_count": self.local_count}


class PushFailed(TeamError):
    """A push that did not complete; ``result`` says what did get through."""

    def __init__(self, message: str, result: PushResult, *, kind: str, status: int | None = None):
        super().__init__(message, kind=kind, status=status)
        self.result = result


def push(cfg: Config, *, http: Http | None = None, state: SyncState | None = None) -> PushResult:
    """Upload what differs from the server (local wins per key), resolving 412s through the hashes view."""
    own = http is None
    http = http or Http(cfg)
    try:
        with http.deadline(), sync_lock(cfg):
            st = state or load_state(cfg)
            try:
                return _push(cfg, http, st)
            finally:
                save_state(cfg, st)
    finally:
        if own:
            http.close()


def _probe(http: Http, st: SyncState) -> dict[str, str]:
    resp = http.request("GET", "&view=hashes")
    if resp.status == 404:
        st.etag = None
        return {}
    if resp.status != 200:
        raise _error_from(resp, "push (conflict probe)")
    doc = resp.json() or {}
    checks = doc.get("entryChecksums")
    if not isinstance(checks, dict):
        raise TeamError("push: the team server's hashes view has no entryChecksums", kind="parse")
    st.etag = (doc.get("checksum") if isinstance(doc.get("checksum"), str) else None) or resp.etag()
    return {k: v for k, v in checks.items() if isinstance(k, str) and isinstance(v, str)}


def _push(cfg: Config, http: Http, st: SyncState) -> PushResult:
    result = PushResult(cfg.repo, cfg.url)
    local = read_local(cfg.team_dir, st.server_max_entries)
    result.skipped = local.skipped
    result.local_count = len(local.entries)
    result.max_entries = st.server_max_entries
    entries = local.entries
    hashes = {k: hash_content(v) for k, v in entries.items()}
    relearned = False
    attempt = 0
    while True:
        delta = {k: entries[k] for k, h in hashes.items() if st.server_checksums.get(k) != h}
        if not delta:
            break
        failure = None
        for batch in keys.batches(delta):
            headers = {"If-Match": f'"{st.etag}"'} if st.etag else {"If-None-Match": "*"}
            body = json.dumps({"entries": batch}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            resp = http.request("PUT", "", headers=headers, body=body)
            if resp.status == 200:
                doc = resp.json() or {}
                st.etag = (doc.get("checksum") if isinstance(doc.get("checksum"), str) else None) or resp.etag()
                result.version = doc.get("version") if isinstance(doc.get("version"), int) else result.version
                result.checksum = st.etag
                for key in batch:
                    st.server_checksums[key] = hashes[key]
                result.uploaded.extend(sorted(batch))
                result.batches += 1
                continue
            failure = resp
            break
        if failure is None:
            st.last_push = _now()
            continue  # delta is now empty: done
        resp = failure
        if resp.status == 412:
            result.conflicts += 1
            if attempt >= keys.MAX_CONFLICT_RETRIES:
                raise PushFailed(f"push: the team memory kept changing; gave up after {keys.MAX_CONFLICT_RETRIES} "
                                 "retries (try again)", result, kind="conflict", status=412)
            attempt += 1
            before = dict(st.server_checksums)
            try:
                fresh = _probe(http, st)
            except TeamError as exc:
                raise PushFailed(f"push: conflict, and the hashes probe failed: {exc}", result, kind=exc.kind,
                                 status=exc.status) from None
            for key, h in hashes.items():
                theirs = fresh.get(key)
                if theirs is not None and theirs != h and theirs != before.get(key) and key not in result.overwrote:
                    result.overwrote.append(key)  # a teammate changed it too; ours is about to replace it
            st.server_checksums = fresh
            continue
        body = resp.json() or {}
        details = (body.get("error") or {}).get("details") if isinstance(body.get("error"), dict) else None
        details = details if isinstance(details, dict) else {}
        if resp.status == 413 and details.get("error_code") == "team_memory_too_many_entries" \
                and isinstance(details.get("max_entries"), int) and details["max_entries"] > 0:
            cap = details["max_entries"]
            st.server_max_entries = cap
            result.max_entries = cap
            if relearned:
                raise PushFailed(f"push: the server keeps at most {cap} entries and already holds too many "
                                 f"({details.get('received_entries')} after this push)", result,
                                 kind="too_many_entries", status=413)
            relearned = True
            trimmed = read_local(cfg.team_dir, cap)
            result.skipped = trimmed.skipped
            entries = trimmed.entries
            hashes = {k: hash_content(v) for k, v in entries.items()}
            continue
        error = _error_from(resp, "push")
        if isinstance(error, TeamAuthError):
            raise error
        kind = "body_too_large" if details.get("error_code") == "team_memory_body_too_large" else "http"
        raise PushFailed(str(error), result, kind=kind, status=resp.status)
    result.overwrote.sort()
    return result


# --- sync and status ----------------------------------------------------------------------------


@dataclass
class SyncResult:
    pull: PullResult
    push: PushResult

    def as_dict(self) -> dict:
        return {"pull": self.pull.as_dict(), "push": self.push.as_dict()}


def sync(cfg: Config, *, http: Http | None = None, state: SyncState | None = None) -> SyncResult:
    """A full pull (no ETag shortcut) that keeps unpushed local edits the server did not touch, then a push."""
    own = http is None
    http = http or Http(cfg)
    try:
        with http.deadline():  # one deadline for both halves
            pulled = pull(cfg, http=http, state=state, use_etag=False, keep_local_edits=True)
            return SyncResult(pulled, push(cfg, http=http, state=state))
    finally:
        if own:
            http.close()


@dataclass
class StatusResult:
    repo: str
    url: str
    team_dir: str
    files: int
    etag: str | None
    last_pull: str | None
    last_push: str | None
    max_entries: int | None
    remote: dict | None  # {"version", "checksum", "entries"}, or None offline / no data
    changes: list[dict]  # {"key", "state", ...}

    @property
    def in_sync(self) -> bool:
        return not self.changes

    def as_dict(self) -> dict:
        return {"repo": self.repo, "url": self.url, "team_dir": self.team_dir, "files": self.files,
                "etag": self.etag, "last_pull": self.last_pull, "last_push": self.last_push,
                "max_entries": self.max_entries, "remote": self.remote, "changes": self.changes,
                "in_sync": self.in_sync}


def status(cfg: Config, *, offline: bool = False, http: Http | None = None) -> StatusResult:
    """What a sync would do, key by key, from the server's hashes (or, offline, the last ones seen)."""
    st = load_state(cfg)
    local = read_local(cfg.team_dir, None)
    mine = {k: hash_content(v) for k, v in local.entries.items()}
    base = st.server_checksums
    remote_info = None
    if offline:
        theirs = dict(base)
    else:
        own = http is None
        http = http or Http(cfg)
        try:
            with http.deadline():
                resp = _get_with_retries(http, "&view=hashes", {}, (200, 404), "status", retries=0)
        finally:
            if own:
                http.close()
        if resp.status == 404:
            theirs = {}
        else:
            doc = resp.json() or {}
            checks = doc.get("entryChecksums")
            if not isinstance(checks, dict):
                raise TeamError("status: the team server's hashes view has no entryChecksums", kind="parse")
            theirs = {k: v for k, v in checks.items() if isinstance(v, str)}
            remote_info = {"version": doc.get("version"), "checksum": doc.get("checksum") or resp.etag(),
                           "entries": len(theirs)}
    changes = []
    not_synced = {s.key for s in local.skipped}
    for key in sorted((mine.keys() | theirs.keys()) - not_synced):
        m, t = mine.get(key), theirs.get(key)
        if m == t:
            continue
        if t is None:
            state = "local-only"
        elif m is None:
            state = "remote-only"
        elif base.get(key) == t:
            state = "local-changed"
        elif base.get(key) == m:
            state = "remote-changed"
        else:
            state = "conflict"
        changes.append({"key": key, "state": state})
    for s in local.skipped:
        changes.append({"key": s.key, "state": "not-synced", **s.as_dict()})
    changes.sort(key=lambda c: c["key"])
    return StatusResult(cfg.repo, cfg.url, cfg.team_dir, len(local.entries) + len(local.skipped), st.etag,
                        st.last_pull, st.last_push, st.server_max_entries, remote_info, changes)
