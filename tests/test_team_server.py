"""The team server over real HTTP on loopback, against SQLite and PostgreSQL stores."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
from test_team_support import (  # noqa: F401 - fixtures
    FAKE_PAT,
    REPO,
    all_stored_text,
    any_server,
    db,
    http,
    pg_url,
    raw_rows,
    server,
    start_server,
)

from mem.core.team.keys import hash_content, repo_checksum
from mem.core.team.server import Limits


def _put(srv, entries, token, **headers):
    return http(srv, "PUT", token=token, body={"entries": entries}, headers=headers)


def test_get_put_roundtrip_with_etags(any_server):
    srv = any_server
    tok = srv.token()
    assert http(srv, "GET", token=tok)[0] == 404
    status, headers, doc = _put(srv, {"MEMORY.md": "- [A](a.md)\n", "a.md": "alpha"}, tok, **{"If-None-Match": "*"})
    assert status == 200 and doc["version"] == 1 and doc["changedKeys"] == ["MEMORY.md", "a.md"]
    want = repo_checksum({"MEMORY.md": hash_content("- [A](a.md)\n"), "a.md": hash_content("alpha")})
    assert doc["checksum"] == want and headers["etag"] == f'"{want}"'

    status, headers, doc = http(srv, "GET", token=tok)
    assert status == 200 and headers["etag"] == f'"{want}"'
    assert set(doc) == {"organizationId", "repo", "version", "lastModified", "checksum", "content"}
    assert doc["repo"] == REPO and doc["version"] == 1 and doc["checksum"] == want
    assert doc["lastModified"].endswith("Z")
    assert doc["content"]["entries"] == {"MEMORY.md": "- [A](a.md)\n", "a.md": "alpha"}
    assert doc["content"]["entryChecksums"] == {"MEMORY.md": hash_content("- [A](a.md)\n"), "a.md": hash_content("alpha")}

    assert http(srv, "GET", token=tok, headers={"If-None-Match": f'"{want}"'})[0] == 304
    assert http(srv, "GET", token=tok, headers={"If-None-Match": want})[0] == 304  # quotes are optional
    assert http(srv, "GET", token=tok, headers={"If-None-Match": '"sha256:old"'})[0] == 200

    status, _, doc = http(srv, "GET", "&view=hashes", token=tok)
    assert status == 200 and "content" not in doc
    assert doc["entryChecksums"] == {"MEMORY.md": hash_content("- [A](a.md)\n"), "a.md": hash_content("alpha")}
    assert doc["checksum"] == want and doc["version"] == 1


def test_put_is_an_upsert_and_a_no_op_keeps_the_version(any_server):
    srv = any_server
    tok = srv.token()
    first = _put(srv, {"a.md": "1", "b.md": "2"}, tok)[2]
    second = _put(srv, {"b.md": "two"}, tok, **{"If-Match": f'"{first["checksum"]}"'})[2]
    assert second["version"] == 2 and second["changedKeys"] == ["b.md"]
    same = _put(srv, {"b.md": "two"}, tok, **{"If-Match": f'"{second["checksum"]}"'})[2]
    assert same["version"] == 2 and same["changedKeys"] == [] and same["checksum"] == second["checksum"]
    entries = http(srv, "GET", token=tok)[2]["content"]["entries"]
    assert entries == {"a.md": "1", "b.md": "two"}


def test_stale_if_match_is_412_and_writes_nothing(any_server):
    srv = any_server
    tok = srv.token()
    first = _put(srv, {"a.md": "1"}, tok)[2]
    _put(srv, {"a.md": "2"}, tok, **{"If-Match": first["checksum"]})
    status, headers, doc = _put(srv, {"a.md": "3", "new.md": "x"}, tok, **{"If-Match": f'"{first["checksum"]}"'})
    assert status == 412
    assert doc["error"]["details"]["error_code"] == "team_memory_conflict"
    current = http(srv, "GET", "&view=hashes", token=tok)[2]
    assert headers["etag"] == f'"{current["checksum"]}"' and current["version"] == 2
    assert set(current["entryChecksums"]) == {"a.md"}
    # If-None-Match: * only creates; If-Match: * only updates an existing repo.
    assert _put(srv, {"x.md": "x"}, tok, **{"If-None-Match": "*"})[0] == 412
    other = srv.token("acme/empty")
    status, _, _ = http(srv, "PUT", token=other, body={"entries": {"a.md": "1"}}, headers={"If-Match": "*"},
                        path="/api/claude_code/team_memory?repo=acme%2Fempty")
    assert status == 412


def test_structured_413_for_too_many_entries_writes_nothing(db):
    srv = start_server(db, limits=Limits(max_entries=3))
    try:
        tok = srv.token()
        assert _put(srv, {"a.md": "1", "b.md": "2"}, tok)[0] == 200
        status, _, doc = _put(srv, {"c.md": "3", "d.md": "4"}, tok)
        assert status == 413
        assert doc["error"]["details"] == {"error_code": "team_memory_too_many_entries", "max_entries": 3,
                                           "received_entries": 4}
        assert set(http(srv, "GET", "&view=hashes", token=tok)[2]["entryChecksums"]) == {"a.md", "b.md"}
        assert _put(srv, {"a.md": "changed", "c.md": "3"}, tok)[0] == 200  # exactly at the cap is fine
    finally:
        srv.stop()


def test_body_and_entry_limits(tmp_path):
    srv = start_server(str(tmp_path / "t.db"), limits=Limits(max_body=300_000))
    try:
        tok = srv.token()
        status, headers, doc = _put(srv, {"a.md": "x" * 310_000}, tok)
        assert status == 413 and headers.get("connection") == "close"
        assert doc["error"]["details"]["error_code"] == "team_memory_body_too_large"
        assert doc["error"]["details"]["max_bytes"] == 300_000
        status, _, doc = _put(srv, {"a.md": "é" * 125_001}, tok)  # 250,002 bytes of UTF-8
        assert status == 413 and doc["error"]["details"]["error_code"] == "team_memory_entry_too_large"
        assert doc["error"]["details"]["key"] == "a.md"
        assert _put(srv, {"a.md": "é" * 125_000}, tok)[0] == 200
    finally:
        srv.stop()


@pytest.mark.parametrize("key", ["../escape.md", "/etc/passwd", "a\\b.md", "%2e%2e%2fx", "\uff0e\uff0e\uff0fx", "a/./b.md"])
def test_traversal_keys_are_refused_and_nothing_is_written(any_server, key):
    srv = any_server
    tok = srv.token()
    status, _, doc = _put(srv, {"fine.md": "ok", key: "evil"}, tok)
    assert status == 400 and doc["error"]["details"]["error_code"] == "team_memory_invalid_key"
    assert http(srv, "GET", token=tok)[0] == 404
    assert raw_rows(srv.db, "SELECT count(*) FROM team_entries") == [(0,)]


def test_a_secret_never_reaches_the_database(any_server):
    srv = any_server
    tok = srv.token()
    status, _, doc = _put(srv, {"ok.md": "fine", "creds.md": f"deploy with {FAKE_PAT}\n"}, tok)
    assert status == 422
    details = doc["error"]["details"]
    assert details["error_code"] == "team_memory_secret_detected"
    assert details["entries"] == [{"key": "creds.md", "rule_id": "github-pat", "label": "GitHub PAT"}]
    assert FAKE_PAT not in json.dumps(doc)
    assert FAKE_PAT not in all_stored_text(srv.db)
    assert raw_rows(srv.db, "SELECT count(*) FROM team_entries") == [(0,)]


def test_missing_wrong_revoked_and_unscoped_tokens(any_server):
    srv = any_server
    good = srv.token()
    other = srv.token("acme/other")
    record, revoked = srv.store.add_token([REPO])
    srv.store.revoke_token(record.id)
    for token, want in ((None, 401), ("memt_wrong", 401), (revoked, 401), (other, 403)):
        status, headers, doc = _put(srv, {"a.md": "x"}, token)
        assert status == want, token
        if want == 401:
            assert headers["www-authenticate"].startswith("Bearer")
        assert http(srv, "GET", token=token)[0] == want
        assert http(srv, "GET", "&view=hashes", token=token)[0] == want
    status, _, _ = http(srv, "PUT", body=b"{}", headers={"Authorization": "Basic dTpw"})
    assert status == 401
    assert raw_rows(srv.db, "SELECT count(*) FROM team_entries") == [(0,)]
    assert raw_rows(srv.db, "SELECT count(*) FROM team_repos WHERE version > 0") == [(0,)]
    assert _put(srv, {"a.md": "x"}, good)[0] == 200


def test_scopes_owner_wildcard_and_star(server):
    star = server.token("*")
    owner = server.token("acme/*")
    assert _put(server, {"a.md": "1"}, star)[0] == 200
    assert _put(server, {"a.md": "2"}, owner)[0] == 200
    status, _, _ = http(server, "GET", token=owner, path="/api/claude_code/team_memory?repo=other%2Fx")
    assert status == 403


def test_tokens_are_stored_only_as_hashes_and_last_use_is_recorded(db):
    srv = start_server(db)
    try:
        secret = srv.token(label="alice")
        assert secret.startswith("memt_") and len(secret) > 40
        assert secret not in all_stored_text(db)
        assert srv.store.list_tokens()[0].last_used is None
        http(srv, "GET", token=secret)
        t = srv.store.list_tokens()[0]
        assert t.last_used is not None and t.label == "alice" and t.repos == (REPO,)
    finally:
        srv.stop()


def test_history_keeps_replaced_versions(any_server):
    srv = any_server
    tok = srv.token()
    for i in range(4):
        _put(srv, {"a.md": f"v{i}"}, tok)
    status, _, doc = http(srv, "GET", "&view=history&key=a.md", token=tok)
    assert status == 200
    assert [v["content"] for v in doc["versions"]] == ["v3", "v2", "v1", "v0"]
    assert [v["current"] for v in doc["versions"]] == [True, False, False, False]
    assert http(srv, "GET", "&view=history&key=..%2Fx", token=tok)[0] == 400
    assert http(srv, "GET", "&view=history&key=nope.md", token=tok)[0] == 404


def test_history_is_bounded(tmp_path):
    srv = start_server(str(tmp_path / "t.db"), keep_history=2)
    try:
        tok = srv.token()
        for i in range(5):
            _put(srv, {"a.md": f"v{i}"}, tok)
        versions = http(srv, "GET", "&view=history&key=a.md", token=tok)[2]["versions"]
        assert [v["content"] for v in versions] == ["v4", "v3", "v2"]
    finally:
        srv.stop()


def test_bad_requests_get_json_errors(server):
    tok = server.token()
    assert http(server, "PUT", token=tok, body=b"not json")[0] == 400
    assert http(server, "PUT", token=tok, body={"entries": ["a"]})[0] == 400
    assert http(server, "PUT", token=tok, body={"entries": {"a.md": 3}})[0] == 400
    assert http(server, "GET", "&view=nope", token=tok)[0] == 400
    status, _, doc = http(server, "GET", token=tok, path="/api/claude_code/team_memory?repo=..%2F..")
    assert status == 400 and doc["error"]["details"]["error_code"] == "team_memory_invalid_repo"
    assert http(server, "GET", token=tok, path="/api/claude_code/team_memory")[0] == 400
    assert http(server, "GET", token=tok, path="/nope")[0] == 404
    status, headers, _ = http(server, "POST", token=tok, body=b"{}")
    assert status == 405 and headers["allow"] == "GET, PUT"
    assert http(server, "GET", path="/healthz")[:1] == (200,)


def test_one_json_log_line_per_request(server):
    tok = server.token()
    _put(server, {"a.md": "x"}, tok)
    http(server, "GET", "&view=hashes", token=tok)
    http(server, "GET", token="memt_bad")
    reqs = sorted(server.requests(), key=lambda r: (r["method"] != "PUT", r["status"]))  # lines come in completion order
    assert [(r["method"], r["status"]) for r in reqs] == [("PUT", 200), ("GET", 200), ("GET", 401)]
    for r in reqs:
        assert {"time", "level", "method", "path", "status", "repo", "duration_ms"} <= set(r)
        assert r["path"] == "/api/claude_code/team_memory" and isinstance(r["duration_ms"], float)
    assert reqs[0]["repo"] == REPO and reqs[1]["view"] == "hashes" and reqs[0]["bytes_in"] > 0
    assert "memt_bad" not in server.logbuf.getvalue() and tok not in server.logbuf.getvalue()


def test_drain_finishes_a_request_in_flight_and_closes_idle_connections(server):
    tok = server.token()
    port = server.httpd.server_address[1]
    import http.client

    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    idle.request("GET", "/api/claude_code/team_memory?repo=acme%2Fwidgets", headers={"Authorization": f"Bearer {tok}"})
    resp = idle.getresponse()
    assert resp.status == 404 and not resp.will_close
    resp.read()  # the connection is now idle, kept alive
    body = json.dumps({"entries": {"slow.md": "arrives late"}}).encode()
    busy = socket.create_connection(("127.0.0.1", port), timeout=5)
    busy.sendall(f"PUT /api/claude_code/team_memory?repo=acme%2Fwidgets HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {tok}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
    time.sleep(0.2)
    server.httpd.shutdown()
    left: list[int] = []
    drainer = threading.Thread(target=lambda: left.append(server.httpd.drain(10)))
    drainer.start()
    time.sleep(0.3)
    assert drainer.is_alive()  # waiting for the PUT
    assert idle.sock.recv(4096) == b""  # the idle connection was closed
    busy.sendall(body[10:])
    reply = busy.recv(65536)
    drainer.join(10)
    assert reply.startswith(b"HTTP/1.1 200") and b"Connection: close" in reply
    assert left == [0]
    assert server.store.get(REPO).entries == {"slow.md": "arrives late"}


# --- the command ---------------------------------------------------------------------------------


def _serve(mem_exe, tmp_path, *args):
    proc = subprocess.Popen([mem_exe, "team", "serve", "--port", "0", "--db", str(tmp_path / "t.db"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = json.loads(proc.stderr.readline())
    assert line["event"] == "listening", line
    return proc, line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_binds_loopback_and_stops_cleanly_on_signals(mem_exe, tmp_path, run_mem, sig):
    out = run_mem("team", "token", "add", "--repo", REPO, "--db", str(tmp_path / "t.db"))
    assert out.returncode == 0
    token = out.stdout.split()[-1]
    proc, line = _serve(mem_exe, tmp_path)
    try:
        assert line["url"].startswith("http://127.0.0.1:") and line["backend"] == "sqlite"
        import http.client

        port = int(line["url"].rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("PUT", "/api/claude_code/team_memory?repo=acme%2Fwidgets",
                     body=json.dumps({"entries": {"a.md": "x"}}),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == ""
    events = [json.loads(line) for line in err.splitlines()]
    assert [e["event"] for e in events] == ["request", "stopping", "stopped"]
    assert events[1]["signal"] == sig.name and events[2]["unfinished_requests"] == 0


def test_serve_warns_when_exposed(mem_exe, tmp_path):
    proc, line = _serve(mem_exe, tmp_path, "--host", "0.0.0.0")
    try:
        warning = json.loads(proc.stderr.readline())
        assert warning["event"] == "exposed" and warning["level"] == "warning"
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_serve_on_a_busy_port_is_a_one_line_error(tmp_path, run_mem):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_mem("team", "serve", "--port", str(port), "--db", str(tmp_path / "t.db"))
    assert r.returncode == 70
    assert r.stderr.startswith("mem: error: cannot listen on 127.0.0.1:") and r.stderr.count("\n") == 1


def test_token_commands(tmp_path, run_mem):
    dbp = str(tmp_path / "t.db")
    assert run_mem("team", "token", "list", "--db", dbp).returncode == 1  # no database yet
    add = run_mem("team", "token", "add", "--repo", REPO, "--repo", "acme/*", "--label", "ci bot", "--db", dbp)
    assert add.returncode == 0
    token = add.stdout.split()[-1]
    assert token.startswith("memt_") and "cannot be shown again" in add.stderr
    assert os.stat(dbp).st_mode & 0o077 == 0
    listed = run_mem("team", "token", "list", "--json", "--db", dbp)
    rows = json.loads(listed.stdout)
    assert len(rows) == 1 and rows[0]["repos"] == [REPO, "acme/*"] and rows[0]["label"] == "ci bot"
    assert set(rows[0]) == {"id", "repos", "label", "created", "last_used", "revoked"}
    assert token not in listed.stdout
    text = run_mem("team", "token", "list", "--db", dbp).stdout
    assert text.splitlines()[0].split() == ["ID", "REPOS", "LABEL", "CREATED", "LAST", "USED", "REVOKED"]
    assert token not in text
    revoked = run_mem("team", "token", "revoke", rows[0]["id"], "--json", "--db", dbp)
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["revoked"]
    assert run_mem("team", "token", "revoke", "nope", "--db", dbp).returncode == 1
    bad = run_mem("team", "token", "add", "--repo", "../x", "--db", dbp)
    assert bad.returncode == 2 and "OWNER/REPO" in bad.stderr
    env_db = run_mem("team", "token", "list", "--json", env={"MEM_TEAM_DB": dbp})
    assert json.loads(env_db.stdout)[0]["revoked"]
