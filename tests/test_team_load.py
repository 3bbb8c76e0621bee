"""A bounded loopback load test: many clients, a fixed duration, nothing lost (figures: make bench-team)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from test_team_support import any_server, db, pg_url  # noqa: F401 - fixtures

_spec = importlib.util.spec_from_file_location("bench_team", Path(__file__).resolve().parent.parent / "bench" / "team.py")
bench_team = importlib.util.module_from_spec(_spec)
sys.modules["bench_team"] = bench_team  # dataclasses look their module up there
_spec.loader.exec_module(bench_team)


def test_many_clients_for_a_fixed_time_lose_nothing(any_server):
    srv = any_server
    assert srv.url.startswith("http://127.0.0.1:")  # loopback only
    tokens = [srv.token("bench/load") for _ in range(8)]
    port = srv.httpd.server_address[1]
    result = bench_team.run_load(port, tokens, "bench/load", seconds=2.0)
    assert result["errors"] == []
    assert result["requests"] > 100 and result["seconds"] < 30
    assert set(result["statuses"]) <= {200, 304, 404, 412}
    assert result["statuses"].get(412, 0) > 0  # contention happened and was resolved
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]
    assert bench_team.check_nothing_lost(port, tokens[0], "bench/load", result["last_written"]) == []
    assert [r for r in srv.requests() if r["status"] >= 500] == []
