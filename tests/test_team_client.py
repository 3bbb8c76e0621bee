"""The client against a real server: convergence, conditional pushes, limits, secrets, keys, auth."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest
from conftest import git
from test_team_support import (  # noqa: F401 - fixtures
    FAKE_PAT,
    REPO,
    all_stored_text,
    any_server,
    db,
    files,
    make_client,
    pg_url,
    raw_rows,
    server,
    start_server,
    write,
)

from mem.core.memdir import events
from mem.core.errors import ConfigError
from mem.core.memdir.store import MemoryDir
from mem.core.team import client, keys
from mem.core.team.server import Limits


def test_two_clients_converge_through_one_server(any_server, tmp_path):
    a = make_client(any_server, tmp_path / "a")
    b = make_client(any_server, tmp_path / "b")
    write(tmp_path / "a", "team/MEMORY.md", "- [Build](build.md) — how we build\n")
    write(tmp_path / "a", "team/build.md", "make all\n")
    write(tmp_path / "b", "team/deploy/notes.md", "deploy on tuesdays\n")
    r = client.sync(a)
    assert r.push.uploaded == ["MEMORY.md", "build.md"] and r.pull.status == "empty"
    r = client.sync(b)
    assert sorted(r.pull.created) == ["MEMORY.md", "build.md"] and r.push.uploaded == ["deploy/notes.md"]
    r = client.sync(a)
    assert r.pull.created == ["deploy/notes.md"] and r.push.uploaded == []
    assert files(tmp_path / "a") == files(tmp_path / "b") and len(files(tmp_path / "a")) == 3
    # Both now agree with the server: nothing to do, and a pull is a 304.
    assert client.status(a).in_sync and client.status(b).in_sync
    assert client.pull(b).status == "not_modified"


def test_pull_server_wins_and_matching_files_are_not_rewritten(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    b = make_client(server, tmp_path / "b")
    write(tmp_path / "a", "team/x.md", "from a\n")
    write(tmp_path / "a", "team/same.md", "same\n")
    client.push(a)
    same = write(tmp_path / "b", "team/same.md", "same\n")
    os.utime(same, (1_000_000_000, 1_000_000_000))
    write(tmp_path / "b", "team/x.md", "b's own text\n")
    r = client.pull(b)
    assert r.updated == ["x.md"] and r.unchanged == 1 and r.created == []
    assert (tmp_path / "b/team/x.md").read_text() == "from a\n"
    assert same.stat().st_mtime == 1_000_000_000
    # b had never synced: its differing file counts as an unpushed edit, snapshotted first.
    assert r.overwritten_local == ["x.md"] and r.snapshot
    ev = events.read_events(MemoryDir(tmp_path / "b"))[-1]
    assert ev["command"] == "team pull" and ev["updated"] == ["team/x.md"]


def test_unpushed_edit_overwritten_by_pull_comes_back_with_undo(server, tmp_path, run_mem):
    a = make_client(server, tmp_path / "a")
    b = make_client(server, tmp_path / "b")
    write(tmp_path / "a", "team/x.md", "v1\n")
    client.push(a)
    client.pull(b)
    write(tmp_path / "a", "team/x.md", "v2 from a\n")
    client.push(a)
    write(tmp_path / "b", "team/x.md", "b's edit, never pushed\n")
    r = client.pull(b)
    assert r.overwritten_local == ["x.md"] and (tmp_path / "b/team/x.md").read_text() == "v2 from a\n"
    undo = run_mem("undo", r.snapshot, "--dir", str(tmp_path / "b"))
    assert undo.returncode == 0, undo.stderr
    assert (tmp_path / "b/team/x.md").read_text() == "b's edit, never pushed\n"


def test_sync_keeps_a_local_edit_the_server_did_not_change(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/x.md", "v1\n")
    client.sync(a)
    write(tmp_path / "a", "team/x.md", "v2, local\n")
    r = client.sync(a)
    assert r.pull.kept_local == ["x.md"] and r.pull.overwritten_local == [] and r.push.uploaded == ["x.md"]
    assert server.store.get(REPO).entries["x.md"] == "v2, local\n"


def test_deletions_do_not_propagate(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/keep.md", "k\n")
    write(tmp_path / "a", "team/gone.md", "g\n")
    client.push(a)
    (tmp_path / "a/team/gone.md").unlink()
    assert client.push(a).uploaded == []
    assert "gone.md" in server.store.get(REPO).entries
    r = client.pull(a)  # the ETag would say "not modified", but a file is missing: a full GET
    assert r.created == ["gone.md"] and (tmp_path / "a/team/gone.md").read_text() == "g\n"


def test_pull_uses_the_etag(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/x.md", "x\n")
    client.sync(a)
    assert client.pull(a).status == "not_modified"
    assert server.requests(method="GET", status=304)
    assert client.pull(a, use_etag=False).status == "unchanged"


def test_push_sends_only_the_delta_in_bounded_batches(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    for i in range(12):
        write(tmp_path / "a", f"team/n{i:02d}.md", f"{i:02d}" * 20_000 + "\n")  # 4 fit in one body
    r = client.push(a)
    assert len(r.uploaded) == 12 and r.batches == 3
    puts = server.requests(method="PUT")
    assert len(puts) == 3 and all(p["bytes_in"] <= keys.MAX_PUT_BODY_BYTES for p in puts)
    write(tmp_path / "a", "team/n05.md", "changed\n")
    r = client.push(a)
    assert r.uploaded == ["n05.md"] and r.batches == 1
    assert server.requests(method="PUT")[-1]["bytes_in"] < 100


def test_large_files_are_skipped_both_ways(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/huge.md", "x" * (keys.MAX_FILE_SIZE_BYTES + 1))
    write(tmp_path / "a", "team/edge.md", "y" * keys.MAX_FILE_SIZE_BYTES)
    r = client.push(a)
    assert r.uploaded == ["edge.md"]
    assert [(s.key, s.reason) for s in r.skipped] == [("huge.md", "too-large")]
    assert r.batches == 1  # one oversized-for-a-batch entry travels alone
    # A server entry over the limit (a server with other limits) is not written locally.
    server.store.put(REPO, {"big.md": "z" * (keys.MAX_FILE_SIZE_BYTES + 1)})
    r = client.pull(make_client(server, tmp_path / "b"))
    assert ("big.md", "too-large") in [(s.key, s.reason) for s in r.skipped]
    assert not (tmp_path / "b/team/big.md").exists() and (tmp_path / "b/team/edge.md").exists()


def test_a_file_with_a_secret_is_never_pushed(any_server, tmp_path):
    a = make_client(any_server, tmp_path / "a")
    write(tmp_path / "a", "team/ok.md", "fine\n")
    write(tmp_path / "a", "team/creds.md", f"the deploy token is {FAKE_PAT}\n")
    r = client.push(a)
    assert r.uploaded == ["ok.md"]
    assert [s.as_dict() for s in r.refused] == [
        {"key": "creds.md", "reason": "secret", "detail": "contains a secret", "rule_id": "github-pat", "label": "GitHub PAT"}]
    assert FAKE_PAT not in all_stored_text(any_server.db)
    assert FAKE_PAT not in json.dumps(r.as_dict())


def test_a_server_entry_with_a_secret_or_a_bad_key_is_refused_locally(server, tmp_path):
    # Put them in the database directly, as a compromised or older server might hold them.
    server.store.put(REPO, {"ok.md": "fine\n", "creds.md": f"{FAKE_PAT}\n"})
    with server.store.transaction(write=True) as conn:
        server.store._exec(conn, "INSERT INTO team_entries (repo, key, content, checksum, version, updated) "
                                 "VALUES (?, ?, ?, ?, 1, 'x')", (REPO, "../../escape.md", "evil", keys.hash_content("evil")))
    b = tmp_path / "b"
    r = client.pull(make_client(server, b))
    assert r.created == ["ok.md"]
    assert sorted((s.key, s.reason) for s in r.refused) == [("../../escape.md", "invalid-key"), ("creds.md", "secret")]
    assert not (b / "team/creds.md").exists()
    assert not (tmp_path / "escape.md").exists() and not (b / "escape.md").exists()


def test_a_symlink_in_team_cannot_redirect_a_pull(server, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    b = tmp_path / "b"
    (b / "team").mkdir(parents=True)
    os.symlink(str(outside), b / "team" / "linked")
    server.store.put(REPO, {"linked/x.md": "through the link\n", "fine.md": "ok\n"})
    r = client.pull(make_client(server, b))
    assert r.created == ["fine.md"] and [s.key for s in r.refused] == ["linked/x.md"]
    assert list(outside.iterdir()) == []


def test_concurrent_pushes_to_the_same_key_resolve_through_412_with_nothing_lost(any_server, tmp_path):
    cfgs = [make_client(any_server, tmp_path / f"c{i}") for i in range(3)]
    write(tmp_path / "seed", "team/shared.md", "v0\n")
    client.push(make_client(any_server, tmp_path / "seed"))
    for i, cfg in enumerate(cfgs):
        client.pull(cfg)  # everyone starts from the same version: all but one PUT will be stale
        write(tmp_path / f"c{i}", "team/shared.md", f"edit by c{i}\n")
        write(tmp_path / f"c{i}", f"team/own-{i}.md", f"only c{i}\n")
    barrier = threading.Barrier(len(cfgs))
    results, errors = {}, []

    def run(i, cfg):
        barrier.wait()
        try:
            results[i] = client.push(cfg)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(cfgs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert sum(r.conflicts for r in results.values()) >= len(cfgs) - 1
    assert any(r.overwrote == ["shared.md"] for r in results.values())
    data = any_server.store.get(REPO)
    assert {f"own-{i}.md" for i in range(3)} <= set(data.entries)  # every client's own key arrived
    assert data.head.version == 1 + len(cfgs)  # one write per push, none lost to a race
    history = [h.content for h in any_server.store.history(REPO, "shared.md")]
    assert sorted(history) == sorted(["v0\n"] + [f"edit by c{i}\n" for i in range(3)])  # every edit is kept
    # After a sync each, everyone holds the winner.
    for cfg in cfgs:
        client.sync(cfg)
    assert len({files(tmp_path / f"c{i}")["shared.md"] for i in range(3)}) == 1


def test_a_stale_client_recomputes_its_delta_after_412(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    b = make_client(server, tmp_path / "b")
    write(tmp_path / "a", "team/x.md", "x\n")
    client.sync(a)
    client.sync(b)
    write(tmp_path / "a", "team/y.md", "y\n")
    client.push(a)
    write(tmp_path / "b", "team/y.md", "y\n")   # the same content a pushed: not re-sent
    write(tmp_path / "b", "team/z.md", "z\n")
    r = client.push(b)
    assert r.conflicts == 1 and r.uploaded == ["z.md"] and r.overwrote == []
    assert server.requests(method="GET", view="hashes", status=200)


def test_a_structured_413_teaches_the_entry_cap(tmp_path):
    srv = start_server(str(tmp_path / "t.db"), limits=Limits(max_entries=3))
    try:
        a = make_client(srv, tmp_path / "a")
        for name in ("e.md", "d.md", "c.md", "b.md", "a.md"):
            write(tmp_path / "a", f"team/{name}", name)
        r = client.push(a)
        assert r.max_entries == 3 and r.uploaded == ["a.md", "b.md", "c.md"]
        assert [(s.key, s.reason) for s in r.skipped] == [("d.md", "over-entry-cap"), ("e.md", "over-entry-cap")]
        assert client.load_state(a).server_max_entries == 3
        assert [p["status"] for p in srv.requests(method="PUT")] == [413, 200]
        # Next time it trims before sending.
        write(tmp_path / "a", "team/a.md", "changed")
        assert client.push(a).uploaded == ["a.md"]
        assert [p["status"] for p in srv.requests(method="PUT")] == [413, 200, 200]
    finally:
        srv.stop()


def test_wrong_or_missing_token_writes_nothing_anywhere(server, tmp_path):
    write(tmp_path / "a", "team/x.md", "x\n")
    server.store.put(REPO, {"remote.md": "r\n"})
    for token in ("", "memt_wrong", server.token("acme/other")):
        cfg = make_client(server, tmp_path / "a", token=token)
        with pytest.raises(client.TeamAuthError) as exc:
            client.push(cfg)
        assert exc.value.exit_code == 3 and exc.value.status in (401, 403)
        with pytest.raises(client.TeamAuthError):
            client.pull(cfg)
    assert set(server.store.get(REPO).entries) == {"remote.md"}
    assert files(tmp_path / "a") == {"x.md": "x\n"}


def test_status_states(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    for name in ("same", "mine", "theirs", "both"):
        write(tmp_path / "a", f"team/{name}.md", "base\n")
    client.sync(a)
    write(tmp_path / "a", "team/mine.md", "local edit\n")
    write(tmp_path / "a", "team/both.md", "local edit\n")
    write(tmp_path / "a", "team/new.md", "new\n")
    write(tmp_path / "a", "team/creds.md", FAKE_PAT)
    server.store.put(REPO, {"theirs.md": "remote edit\n", "both.md": "remote edit\n", "far.md": "far\n"})
    s = client.status(a)
    assert {c["key"]: c["state"] for c in s.changes} == {
        "mine.md": "local-changed", "both.md": "conflict", "theirs.md": "remote-changed", "new.md": "local-only",
        "far.md": "remote-only", "creds.md": "not-synced"}
    assert not s.in_sync and s.remote["entries"] == 5
    offline = client.status(a, offline=True)
    assert {c["key"]: c["state"] for c in offline.changes}["mine.md"] == "local-changed"
    assert offline.remote is None


def test_get_retries_until_the_server_comes_up(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = client.Config(MemoryDir(tmp_path / "a"), f"http://127.0.0.1:{port}", "t", REPO, timeout=5)
    with pytest.raises(client.TeamError) as exc:
        client.pull(cfg, retries=0)
    assert exc.value.kind == "network" and exc.value.transient
    started = {}

    def later():
        time.sleep(0.3)
        srv = start_server(str(tmp_path / "t.db"), port=port)
        started["srv"] = srv
        started["token"] = srv.token()

    t = threading.Thread(target=later)
    t.start()
    slept = []
    try:
        # retries=3: delays of ~0.5, 1, 2 s; the server is up after 0.3 s, but the token only now
        # exists, so the answer is a 401, which is not retried.
        with pytest.raises(client.TeamAuthError):
            client.pull(cfg, retries=3, sleep=lambda s: (slept.append(s), time.sleep(s)))
        assert 1 <= len(slept) <= 3 and 0.5 <= slept[0] <= 0.625
        t.join()
        ok = client.Config(cfg.memory, cfg.url, started["token"], REPO, timeout=5)
        assert client.pull(ok).status == "empty"
    finally:
        t.join()
        if "srv" in started:
            started["srv"].stop()


def test_config_from_environment_and_git(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    with pytest.raises(ConfigError, match="MEM_TEAM_URL"):
        client.make_config(MemoryDir(tmp_path / "m"), str(repo))
    monkeypatch.setenv("TEAM_MEMORY_SYNC_URL", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="no git remote"):
        client.make_config(MemoryDir(tmp_path / "m"), str(repo))
    git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=repo)
    cfg = client.make_config(MemoryDir(tmp_path / "m"), str(repo))
    assert cfg.repo == "acme/widgets" and cfg.url == "http://127.0.0.1:1" and cfg.token is None
    monkeypatch.setenv("MEM_TEAM_URL", "https://team.example.invalid/prefix")
    monkeypatch.setenv("MEM_TEAM_TOKEN", "memt_x")
    monkeypatch.setenv("MEM_TEAM_REPO", "other/repo")
    cfg = client.make_config(MemoryDir(tmp_path / "m"), str(repo))
    assert (cfg.url, cfg.token, cfg.repo) == ("https://team.example.invalid/prefix", "memt_x", "other/repo")
    assert cfg.endpoint == "https://team.example.invalid/prefix/api/claude_code/team_memory?repo=other%2Frepo"
    with pytest.raises(ConfigError, match="http"):
        client.make_config(MemoryDir(tmp_path / "m"), str(repo), url="ftp://x")


def test_state_is_kept_outside_the_memory_dir_and_reset_for_another_server(server, tmp_path):
    a = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/x.md", "x\n")
    client.sync(a)
    assert sorted(os.listdir(tmp_path / "a")) == ["team"]
    st = client.load_state(a)
    assert st.etag and st.server_checksums == {"x.md": keys.hash_content("x\n")}
    other = client.Config(a.memory, a.url, a.token, "acme/other")
    assert client.load_state(other).etag is None
