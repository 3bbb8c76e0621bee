"""The team server's PostgreSQL backend, for an organisation that outgrows one machine.

Needs ``psycopg`` (v3; ``pip install 'mem[team]'``), imported only here. The
database is given as a ``postgresql://`` URL (libpq's, so ``?sslmode=``,
``?options=-csearch_path%3Dschema`` and the PG* environment variables work).
Writers to one repo are serialised by a row lock on it (SELECT … FOR UPDATE);
reads run in REPEATABLE READ so entries and checksum come from one snapshot.
"""

from __future__ import annotations

from mem.core.errors import ConfigError
from mem.core.team.storage import SQLStore, StoreError, redact_url


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise ConfigError("a postgresql:// database needs psycopg: pip install 'mem[team]' (or psycopg[binary])") from None
    return psycopg


class PostgresStore(SQLStore):
    backend = "postgresql"
    placeholder = "%s"

    def __init__(self, url: str, *, keep_history: int = 10, pool_size: int = 8):
        super().__init__(keep_history=keep_history, pool_size=pool_size)
        self.url = url
        self.where = redact_url(url)
        self._pg = _psycopg()

    def _connect(self):
        try:
            return self._pg.connect(self.url, autocommit=True, connect_timeout=10, application_name="mem-team")
        except self._pg.Error as exc:
            raise StoreError(f"cannot connect to {self.where}: {' '.join(str(exc).split())}") from None

    def _is_broken(self, exc: BaseException) -> bool:
        return isinstance(exc, (self._pg.OperationalError, self._pg.InterfaceError, StoreError))

    def _exec(self, conn, sql: str, params: tuple = ()):
        try:
            return conn.execute(self._sql(sql), params)
        except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
            raise StoreError(f"team database {self.where}: {' '.join(str(exc).split())}") from None

    def _begin(self, conn, write: bool) -> None:
        self._exec(conn, "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _schema_lock(self, conn) -> None:
        # Two servers starting at once must not race on CREATE TABLE IF NOT EXISTS.
        self._exec(conn, "SELECT pg_advisory_xact_lock(727171)")

    def _lock_repo(self, conn, repo: str):
        self._exec(conn, "INSERT INTO team_repos (repo, version, checksum, last_modified) VALUES (?, 0, '', '') "
                         "ON CONFLICT (repo) DO NOTHING", (repo,))
        return self._exec(conn, "SELECT version, checksum, last_modified FROM team_repos WHERE repo = ? FOR UPDATE", (repo,)).fetchone()
