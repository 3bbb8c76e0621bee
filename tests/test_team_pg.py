"""PostgreSQL-only behaviour: several servers sharing one database, and the CI rule for the tests."""

from __future__ import annotations

import threading

import pytest
import test_team_support
from test_team_support import REPO, files, make_client, pg_url, start_server, write  # noqa: F401 - fixtures

from mem.core.memdir.store import MemoryDir
from mem.core.team import client


def test_two_servers_on_one_database_serialise_writers(pg_url, tmp_path):
    """An organisation that outgrows one machine runs several servers against one PostgreSQL."""
    one, two = start_server(pg_url), start_server(pg_url)
    try:
        token = one.token()
        cfgs = []
        for i, srv in enumerate((one, two, one)):
            cfg = client.Config(MemoryDir(tmp_path / f"c{i}"), srv.url, token, REPO, timeout=10)
            write(tmp_path / f"c{i}", "team/shared.md", f"by c{i}\n")
            write(tmp_path / f"c{i}", f"team/own-{i}.md", f"c{i}\n")
            cfgs.append(cfg)
        barrier = threading.Barrier(len(cfgs))
        errors = []

        def run(cfg):
            barrier.wait()
            try:
                client.push(cfg)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(c,)) for c in cfgs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
        data = two.store.get(REPO)
        assert {"own-0.md", "own-1.md", "own-2.md", "shared.md"} == set(data.entries)
        versions = [h.content for h in one.store.history(REPO, "shared.md")]
        assert sorted(versions) == ["by c0\n", "by c1\n", "by c2\n"]
        for cfg in cfgs:
            client.sync(cfg)
        assert files(tmp_path / "c0") == files(tmp_path / "c1") == files(tmp_path / "c2")
    finally:
        one.stop()
        two.stop()


def test_a_second_schema_creation_is_harmless(pg_url):
    from mem.core.team.stores import open_store

    stores = [open_store(pg_url) for _ in range(3)]
    try:
        stores[0].put(REPO, {"a.md": "1"})
        assert stores[2].get(REPO).entries == {"a.md": "1"}
    finally:
        for s in stores:
            s.close()


def test_postgres_tests_fail_rather_than_skip_in_ci(monkeypatch):
    monkeypatch.setattr(test_team_support, "PG_URL", "")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        test_team_support.pg_base_url()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="MEM_TEST_PG_URL"):
        test_team_support.pg_base_url()


def test_a_database_url_password_is_kept_out_of_logs():
    from mem.core.team.storage import redact_url

    assert redact_url("postgresql://mem:s3cret@db.internal:5432/team") == "postgresql://mem:***@db.internal:5432/team"
    assert redact_url("postgresql://mem@db/team") == "postgresql://mem@db/team"
    assert redact_url("/srv/team.db") == "/srv/team.db"
