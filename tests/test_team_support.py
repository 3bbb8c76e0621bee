"""Fixtures for the team-memory tests: real servers on loopback, SQLite and PostgreSQL stores.

PostgreSQL comes from MEM_TEST_PG_URL (``make test`` starts one with
scripts/ci-postgres.sh). Without it the PostgreSQL tests skip, except under
CI=true, where they fail: CI must test the real thing.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mem.core.memdir.store import MemoryDir
from mem.core.team import client
from mem.core.team.server import JsonLog, Limits, TeamHTTPServer, make_server
from mem.core.team.storage import SQLStore
from mem.core.team.stores import open_store

REPO = "acme/widgets"
# Read at import: the autouse isolated_env fixture clears every MEM_* variable before each test.
PG_URL = os.environ.get("MEM_TEST_PG_URL", "")


def _ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pg_base_url() -> str:
    url = PG_URL
    if not url:
        reason = "no PostgreSQL: set MEM_TEST_PG_URL (make test starts one with scripts/ci-postgres.sh)"
        if _ci():
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    return url


@pytest.fixture
def pg_url():
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    base = pg_base_url()
    from urllib.parse import quote

    import psycopg

    schema = "t_" + secrets.token_hex(6)
    try:
        with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except psycopg.OperationalError as exc:
        if _ci():
            pytest.fail(f"CI=true but PostgreSQL at MEM_TEST_PG_URL is not reachable: {exc}")
        pytest.skip(f"PostgreSQL at MEM_TEST_PG_URL is not reachable: {exc}")
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(base, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A team database of each backend: a SQLite path or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "team.db")
    return request.getfixturevalue("pg_url")


def raw_rows(db: str, sql: str) -> list[tuple]:
    """Rows straight from the database, bypassing mem: what is really stored."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def all_stored_text(db: str) -> str:
    """Every text column of every team table, concatenated: to prove something is NOT stored."""
    parts = []
    for table in ("team_repos", "team_entries", "team_history", "team_tokens", "team_meta"):
        for row in raw_rows(db, f"SELECT * FROM {table}"):
            parts.extend(str(c) for c in row)
    return "\n".join(parts)


@dataclass
class Server:
    httpd: TeamHTTPServer
    store: SQLStore
    db: str
    logbuf: io.StringIO
    thread: threading.Thread
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.httpd.url

    def token(self, *repos: str, label: str | None = None) -> str:
        _, secret = self.store.add_token(list(repos or (REPO,)), label)
        return secret

    def log(self) -> list[dict]:
        return [json.loads(line) for line in self.logbuf.getvalue().splitlines()]

    def requests(self, **match) -> list[dict]:
        return [r for r in self.log() if r["event"] == "request" and all(r.get(k) == v for k, v in match.items())]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.drain(5)
        self.httpd.server_close()
        self.store.close()


def start_server(db: str, *, limits: Limits = Limits(), keep_history: int = 10, port: int = 0) -> Server:
    store = open_store(db, keep_history=keep_history)
    buf = io.StringIO()
    httpd = make_server(store, "127.0.0.1", port, limits=limits, log=JsonLog(buf))
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    return Server(httpd, store, db, buf, t)


@pytest.fixture
def server(tmp_path):
    """A real team server on 127.0.0.1 with a SQLite store (PUT limits at their defaults)."""
    srv = start_server(str(tmp_path / "team.db"))
    yield srv
    srv.stop()


@pytest.fixture
def any_server(db):
    """The same, once per backend."""
    srv = start_server(db)
    yield srv
    srv.stop()


def make_client(srv: Server, memory_dir: Path, token: str | None = None, repo: str = REPO) -> client.Config:
    memory_dir.mkdir(parents=True, exist_ok=True)
    return client.Config(MemoryDir(memory_dir), srv.url, token if token is not None else srv.token(repo), repo, timeout=10)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def files(root: Path) -> dict[str, str]:
    """relpath → text of every file under root/team (no temp files)."""
    team = root / "team"
    if not team.exists():
        return {}
    return {p.relative_to(team).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(team.rglob("*")) if p.is_file()}


def http(srv: Server, method: str, query: str = "", *, token: str | None = None, body: bytes | dict | None = None,
         headers: dict | None = None, path: str | None = None):
    """One raw request: (status, headers, parsed JSON or None)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", srv.httpd.server_address[1], timeout=10)
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    if isinstance(body, dict):
        body = json.dumps(body, ensure_ascii=False).encode()
        h.setdefault("Content-Type", "application/json")
    target = path if path is not None else f"/api/claude_code/team_memory?repo={REPO.replace('/', '%2F')}{query}"
    conn.request(method, target, body=body, headers=h)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, doc


# A token the scanner knows, assembled so this file holds none.
FAKE_PAT = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
