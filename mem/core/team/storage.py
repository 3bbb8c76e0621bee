"""The team server's storage: per-repo entries with checksums and versions, history, tokens.

One SQL schema, two backends that differ only in connections and locking:
SQLite (``store_sqlite``, the default: one file, WAL) and PostgreSQL
(``store_pg``, through a ``postgresql://`` URL). ``stores.open_store(db)`` picks one.

A repo's state is its entries (key → content and ``sha256:`` checksum), a
version that grows by one with every write that changed something, and a
checksum over all entry checksums that doubles as the ETag. A PUT upserts:
keys it does not name are kept. Content that a PUT replaces is kept in the
history (the last ``keep_history`` versions of each key), so a same-key race
that the conditional PUT resolved in favour of one client loses nothing.
Tokens are stored as sha256 hashes only.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from mem.core.errors import ConfigError, MemError, NotFoundError, UsageError
from mem.core.memdir.manifest import now_iso
from mem.core.team.keys import check_repo, hash_content, repo_checksum

SCHEMA_VERSION = 1
TOKEN_PREFIX = "memt_"
#: last_used is written at most this often per token, so reads stay reads.
LAST_USED_RESOLUTION_S = 60.0

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS team_meta (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS team_repos (
        repo TEXT PRIMARY KEY,
        version BIGINT NOT NULL,
        checksum TEXT NOT NULL,
        last_modified TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS team_entries (
        repo TEXT NOT NULL,
        key TEXT NOT NULL,
        content TEXT NOT NULL,
        checksum TEXT NOT NULL,
        version BIGINT NOT NULL,
        updated TEXT NOT NULL,
        token_id TEXT,
        PRIMARY KEY (repo, key))""",
    """CREATE TABLE IF NOT EXISTS team_history (
        repo TEXT NOT NULL,
        key TEXT NOT NULL,
        version BIGINT NOT NULL,
        content TEXT NOT NULL,
        checksum TEXT NOT NULL,
        updated TEXT NOT NULL,
        token_id TEXT,
        superseded TEXT NOT NULL,
        PRIMARY KEY (repo, key, version))""",
    """CREATE TABLE IF NOT EXISTS team_tokens (
        id TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        repos TEXT NOT NULL,
        label TEXT,
        created TEXT NOT NULL,
        last_used TEXT,
        revoked TEXT)""",
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# --- results and errors -------------------------------------------------------------------------


@dataclass(frozen=True)
class RepoHead:
    repo: str
    version: int
    checksum: str
    last_modified: str


@dataclass(frozen=True)
class RepoData:
    head: RepoHead
    entries: dict[str, str]
    checksums: dict[str, str]


@dataclass(frozen=True)
class PutResult:
    head: RepoHead
    changed: list[str]  # keys whose content changed (sorted)


@dataclass(frozen=True)
class HistoryItem:
    version: int
    checksum: str
    updated: str
    content: str
    current: bool

    def as_dict(self) -> dict:
        return {"version": self.version, "checksum": self.checksum, "updated": self.updated,
                "current": self.current, "content": self.content}


@dataclass(frozen=True)
class Token:
    id: str
    repos: tuple[str, ...]
    label: str | None
    created: str
    last_used: str | None
    revoked: str | None

    def allows(self, repo: str) -> bool:
        return any(scope_matches(s, repo) for s in self.repos)

    def as_dict(self) -> dict:
        return {"id": self.id, "repos": list(self.repos), "label": self.label, "created": self.created,
                "last_used": self.last_used, "revoked": self.revoked}


class PreconditionFailed(MemError):
    """If-Match named another version (or If-None-Match: * met an existing repo)."""

    def __init__(self, head: RepoHead | None):
        super().__init__("precondition failed: the team memory changed")
        self.head = head


class TooManyEntries(MemError):
    def __init__(self, max_entries: int, received: int):
        super().__init__(f"too many entries: {received} after this write, the limit is {max_entries}")
        self.max_entries = max_entries
        self.received = received


class StoreError(MemError):
    """The database could not be used."""


def scope_matches(scope: str, repo: str) -> bool:
    """A token scope is ``owner/repo``, ``owner/*`` (every repo of an owner) or ``*``."""
    if scope == "*":
        return True
    if scope.endswith("/*"):
        return repo.startswith(scope[:-1])
    return scope == repo


def check_scope(scope: str) -> str:
    if scope == "*":
        return scope
    if scope.endswith("/*"):
        check_repo(scope[:-2] + "/x")
        return scope
    return check_repo(scope)


# --- the SQL store ------------------------------------------------------------------------------


class SQLStore:
    """Shared logic; subclasses provide connections (``_connect``) and the write lock (``_lock_repo``)."""

    backend = "sql"
    placeholder = "?"

    def __init__(self, *, pool_size: int = 8, keep_history: int = 10):
        self.keep_history = keep_history
        self._pool: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._closed = False
        self._last_used_written: dict[str, float] = {}
        self._last_used_lock = threading.Lock()

    # -- connections

    def _connect(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _is_broken(self, exc: BaseException) -> bool:
        return False

    @contextlib.contextmanager
    def connection(self) -> Iterator:
        if self._closed:
            raise StoreError("the store is closed")
        self._slots.acquire()
        conn = None
        try:
            try:
                conn = self._pool.get_nowait()
            except queue.Empty:
                conn = self._connect()
            try:
                yield conn
            except BaseException as exc:
                if self._is_broken(exc):
                    with contextlib.suppress(Exception):
                        conn.close()
                    conn = None
                raise
        finally:
            if conn is not None:
                self._pool.put(conn)
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                conn = self._pool.get_nowait()
            except queue.Empty:
                break
            with contextlib.suppress(Exception):
                conn.close()

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _exec(self, conn, sql: str, params: tuple = ()):
        cur = conn.cursor()
        cur.execute(self._sql(sql), params)
        return cur

    @contextlib.contextmanager
    def transaction(self, *, write: bool) -> Iterator:
        with self.connection() as conn:
            self._begin(conn, write)
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(Exception):
                    self._exec(conn, "ROLLBACK")
                raise
            self._exec(conn, "COMMIT")

    def _begin(self, conn, write: bool) -> None:
        self._exec(conn, "BEGIN")

    def _schema_lock(self, conn) -> None:
        """Serialise schema creation between servers starting at once (where the backend needs it)."""

    def init_schema(self) -> None:
        with self.transaction(write=True) as conn:
            self._schema_lock(conn)
            for stmt in SCHEMA:
                self._exec(conn, stmt)
            row = self._exec(conn, "SELECT value FROM team_meta WHERE name = ?", ("schema_version",)).fetchone()
            if row is None:
                self._exec(conn, "INSERT INTO team_meta (name, value) VALUES (?, ?)", ("schema_version", str(SCHEMA_VERSION)))
            elif int(row[0]) > SCHEMA_VERSION:
                raise ConfigError(f"the team database has schema version {row[0]}; this mem knows {SCHEMA_VERSION}: upgrade mem")

    # -- reads

    @staticmethod
    def _head(repo: str, row) -> RepoHead | None:
        if row is None or int(row[0]) == 0:
            return None
        return RepoHead(repo, int(row[0]), row[1], row[2])

    def head(self, repo: str) -> RepoHead | None:
        with self.transaction(write=False) as conn:
            row = self._exec(conn, "SELECT version, checksum, last_modified FROM team_repos WHERE repo = ?", (repo,)).fetchone()
            return self._head(repo, row)

    def get(self, repo: str, *, bodies: bool = True) -> RepoData | None:
        """The repo's entries (or only their checksums), read in one consistent snapshot."""
        with self.transaction(write=False) as conn:
            row = self._exec(conn, "SELECT version, checksum, last_modified FROM team_repos WHERE repo = ?", (repo,)).fetchone()
            head = self._head(repo, row)
            if head is None:
                return None
            cols = "key, checksum, content" if bodies else "key, checksum"
            rows = self._exec(conn, f"SELECT {cols} FROM team_entries WHERE repo = ?", (repo,)).fetchall()
        checksums = {r[0]: r[1] for r in rows}
        entries = {r[0]: r[2] for r in rows} if bodies else {}
        return RepoData(head, dict(sorted(entries.items())), dict(sorted(checksums.items())))

    def history(self, repo: str, key: str) -> list[HistoryItem]:
        """The current content of ``key`` then the superseded ones kept, newest first."""
        with self.transaction(write=False) as conn:
            cur = self._exec(conn, "SELECT version, checksum, updated, content FROM team_entries "
                                   "WHERE repo = ? AND key = ?", (repo, key)).fetchone()
            old = self._exec(
                conn, "SELECT version, checksum, updated, content FROM team_history WHERE repo = ? AND key = ? ORDER BY version DESC",
                (repo, key)).fetchall()
        items = [HistoryItem(int(cur[0]), cur[1], cur[2], cur[3], True)] if cur else []
        items += [HistoryItem(int(r[0]), r[1], r[2], r[3], False) for r in old]
        return items

    # -- the write

    def _lock_repo(self, conn, repo: str):  # pragma: no cover - abstract
        """Inside a write transaction: make sure the repo row exists and hold its lock; return the row."""
        raise NotImplementedError

    def put(self, repo: str, entries: Mapping[str, str], *, if_match: str | None = None,
            if_none_match_any: bool = False, max_entries: int | None = None,
            token_id: str | None = None) -> PutResult:
        """Upsert ``entries`` (already validated) into ``repo`` under the conditions given.

        ``if_match``: the checksum the client last saw; anything else → PreconditionFailed.
        ``if_none_match_any``: create only; an existing repo → PreconditionFailed.
        ``max_entries``: the repo's entry count after the merge must stay within it,
        else TooManyEntries and nothing is written.
        """
        hashes = {k: hash_content(v) for k, v in entries.items()}
        with self.transaction(write=True) as conn:
            row = self._lock_repo(conn, repo)
            head = self._head(repo, row)
            if if_none_match_any and head is not None:
                raise PreconditionFailed(head)
            if if_match is not None and (head is None or head.checksum != if_match):
                raise PreconditionFailed(head)
            rows = self._exec(conn, "SELECT key, checksum FROM team_entries WHERE repo = ?", (repo,)).fetchall()
            existing = {r[0]: r[1] for r in rows}
            changed = sorted(k for k, h in hashes.items() if existing.get(k) != h)
            total = len(existing.keys() | hashes.keys())
            if max_entries is not None and total > max_entries and changed:
                raise TooManyEntries(max_entries, total)
            if not changed and head is not None:
                return PutResult(head, [])
            version = (head.version if head else 0) + 1
            stamp = now_iso()
            for key in changed:
                if key in existing:
                    if self.keep_history > 0:
                        self._exec(conn, """INSERT INTO team_history (repo, key, version, content, checksum, updated, token_id, superseded)
                                            SELECT repo, key, version, content, checksum, updated, token_id, ? FROM team_entries
                                            WHERE repo = ? AND key = ?""", (stamp, repo, key))
                        self._exec(conn, """DELETE FROM team_history WHERE repo = ? AND key = ? AND version NOT IN (
                                                SELECT version FROM team_history WHERE repo = ? AND key = ?
                                                ORDER BY version DESC LIMIT ?)""", (repo, key, repo, key, self.keep_history))
                    self._exec(conn, "UPDATE team_entries SET content = ?, checksum = ?, version = ?, updated = ?, token_id = ? "
                                     "WHERE repo = ? AND key = ?", (entries[key], hashes[key], version, stamp, token_id, repo, key))
                else:
                    self._exec(conn, "INSERT INTO team_entries (repo, key, content, checksum, version, updated, token_id) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (repo, key, entries[key], hashes[key], version, stamp, token_id))
                existing[key] = hashes[key]
            checksum = repo_checksum(existing)
            self._exec(conn, "UPDATE team_repos SET version = ?, checksum = ?, last_modified = ? WHERE repo = ?",
                       (version, checksum, stamp, repo))
            return PutResult(RepoHead(repo, version, checksum, stamp), changed)

    # -- tokens

    def add_token(self, repos: list[str], label: str | None = None) -> tuple[Token, str]:
        """A new token for ``repos`` (scopes); returns it and the secret, which is stored only as a hash."""
        if not repos:
            raise UsageError("a token needs at least one --repo")
        scopes = tuple(dict.fromkeys(check_scope(r) for r in repos))
        for _ in range(5):
            token_id = secrets.token_hex(4)
            secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
            created = now_iso()
            with self.transaction(write=True) as conn:
                if self._exec(conn, "SELECT 1 FROM team_tokens WHERE id = ?", (token_id,)).fetchone():
                    continue
                self._exec(conn, "INSERT INTO team_tokens (id, token_hash, repos, label, created) VALUES (?, ?, ?, ?, ?)",
                           (token_id, token_hash(secret), " ".join(scopes), label, created))
            return Token(token_id, scopes, label, created, None, None), secret
        raise StoreError("could not pick a unique token id")

    def list_tokens(self) -> list[Token]:
        with self.transaction(write=False) as conn:
            rows = self._exec(conn, "SELECT id, repos, label, created, last_used, revoked FROM team_tokens").fetchall()
        tokens = [Token(r[0], tuple(r[1].split()), r[2], r[3], r[4], r[5]) for r in rows]
        return sorted(tokens, key=lambda t: (t.created, t.id))

    def revoke_token(self, token_id: str) -> Token:
        with self.transaction(write=True) as conn:
            row = self._exec(conn, "SELECT id, repos, label, created, last_used, revoked FROM team_tokens WHERE id = ?",
                             (token_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no token {token_id!r}")
            revoked = row[5] or now_iso()
            if row[5] is None:
                self._exec(conn, "UPDATE team_tokens SET revoked = ? WHERE id = ?", (revoked, token_id))
        return Token(row[0], tuple(row[1].split()), row[2], row[3], row[4], revoked)

    def authenticate(self, secret: str) -> Token | None:
        """The live token with this secret, or None; records when it was last used (coarsely)."""
        with self.transaction(write=False) as conn:
            row = self._exec(conn, "SELECT id, repos, label, created, last_used, revoked FROM team_tokens WHERE token_hash = ?",
                             (token_hash(secret),)).fetchone()
        if row is None or row[5] is not None:
            return None
        token = Token(row[0], tuple(row[1].split()), row[2], row[3], row[4], None)
        now = time.monotonic()
        with self._last_used_lock:
            due = now - self._last_used_written.get(token.id, -1e9) >= LAST_USED_RESOLUTION_S
            if due:
                self._last_used_written[token.id] = now
        if due:
            with contextlib.suppress(Exception):  # bookkeeping never fails a request
                with self.transaction(write=True) as conn:
                    self._exec(conn, "UPDATE team_tokens SET last_used = ? WHERE id = ?", (now_iso(), token.id))
        return token


def is_pg_url(db: str) -> bool:
    return db.startswith(("postgres://", "postgresql://"))


def redact_url(db: str) -> str:
    """A database URL fit for logs: any password replaced by ***."""
    if not is_pg_url(db):
        return db
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(db)
    if parts.password is None:
        return db
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "")
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[-1]}"))
