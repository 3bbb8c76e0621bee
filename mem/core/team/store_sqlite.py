"""The team server's SQLite backend: one file, WAL, writers serialised by BEGIN IMMEDIATE."""

from __future__ import annotations

import contextlib
import os
import sqlite3

from mem.core.errors import NotFoundError
from mem.core.team.storage import SQLStore, StoreError


class SQLiteStore(SQLStore):
    backend = "sqlite"

    def __init__(self, path: str, *, keep_history: int = 10, pool_size: int = 8, create: bool = True):
        super().__init__(keep_history=keep_history, pool_size=pool_size)
        self.path = os.path.abspath(os.path.expanduser(path))
        if not os.path.exists(self.path):
            if not create:
                raise NotFoundError(f"no team database at {self.path}")
            parent = os.path.dirname(self.path)
            os.makedirs(parent, mode=0o700, exist_ok=True)
            # Hashes of tokens and the team's memory: readable by the owner only.
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.where = self.path

    def _connect(self):
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot switch to WAL journal mode (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the team database {self.path}: {exc}") from None
        return conn

    def _is_broken(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.ProgrammingError)

    def _exec(self, conn, sql: str, params: tuple = ()):
        try:
            return conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            raise StoreError(f"team database {self.path}: {exc}") from None

    def _begin(self, conn, write: bool) -> None:
        self._exec(conn, "BEGIN IMMEDIATE" if write else "BEGIN")

    def _lock_repo(self, conn, repo: str):
        # BEGIN IMMEDIATE already holds the database's write lock.
        self._exec(conn, "INSERT INTO team_repos (repo, version, checksum, last_modified) VALUES (?, 0, '', '') "
                         "ON CONFLICT (repo) DO NOTHING", (repo,))
        return self._exec(conn, "SELECT version, checksum, last_modified FROM team_repos WHERE repo = ?", (repo,)).fetchone()
