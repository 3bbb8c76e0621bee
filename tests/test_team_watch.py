"""`mem team watch`: debounced pushes, outages survived, clean stops on signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

from test_team_support import REPO, make_client, server, start_server, write  # noqa: F401 - fixtures

from mem.core.memdir.store import MemoryDir
from mem.core.team import client
from mem.core.team.watch import Watcher


def _wait(cond, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return False


def _run(cfg, **kw):
    events: list[dict] = []
    stop = threading.Event()
    w = Watcher(cfg, stop=stop, emit=events.append, **{"debounce": 0.3, "poll": 0.02, "pull_every": 0, **kw})
    t = threading.Thread(target=w.run)
    t.start()
    return w, stop, t, events


def _entries(srv):
    data = srv.store.get(REPO)
    return data.entries if data else {}


def test_a_burst_of_writes_becomes_one_push_after_the_quiet_period(server, tmp_path):
    cfg = make_client(server, tmp_path / "a")
    w, stop, t, events = _run(cfg, debounce=1.0)
    try:
        assert _wait(lambda: any(e["event"] == "pull" for e in events))
        started = time.monotonic()
        for i in range(5):
            write(tmp_path / "a", "team/notes.md", f"draft {i}\n")
            time.sleep(0.1)
        assert _wait(lambda: _entries(server).get("notes.md") == "draft 4\n")
        assert time.monotonic() - started >= 0.4 + 1.0 - 0.05  # the last write + the debounce
        time.sleep(0.5)
        assert len(server.requests(method="PUT")) == 1
    finally:
        stop.set()
        t.join(10)
    assert [e["event"] for e in events] == ["start", "pull", "push", "stop"]


def test_it_pulls_at_start_and_periodically(server, tmp_path):
    server.store.put(REPO, {"seed.md": "from the team\n"})
    cfg = make_client(server, tmp_path / "a")
    w, stop, t, events = _run(cfg, pull_every=0.2)
    try:
        assert _wait(lambda: (tmp_path / "a/team/seed.md").exists())
        server.store.put(REPO, {"later.md": "arrived later\n"})
        assert _wait(lambda: (tmp_path / "a/team/later.md").exists())
        assert _wait(lambda: server.requests(method="GET", status=304))  # later pulls carry the ETag
        assert len(server.requests(method="PUT")) == 0  # what was pulled is not pushed back
    finally:
        stop.set()
        t.join(10)


def test_it_survives_a_server_outage(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from mem.core.team.stores import open_store

    store = open_store(str(tmp_path / "t.db"))
    token = store.add_token([REPO])[1]
    store.close()
    cfg = client.Config(MemoryDir(tmp_path / "a"), f"http://127.0.0.1:{port}", token, REPO, timeout=2)
    w, stop, t, events = _run(cfg, max_backoff=0.3)
    srv = None
    try:
        write(tmp_path / "a", "team/during-outage.md", "written while the server was down\n")
        assert _wait(lambda: sum(e["event"] == "error" for e in events) >= 3)
        assert all(e["transient"] for e in events if e["event"] == "error")
        srv = start_server(str(tmp_path / "t.db"), port=port)
        assert _wait(lambda: _entries(srv).get("during-outage.md") == "written while the server was down\n")
    finally:
        stop.set()
        t.join(10)
        if srv:
            srv.stop()
    assert any(e["event"] == "retry" for e in events)


def test_a_refused_token_stops_pushing_until_the_next_change(server, tmp_path):
    cfg = make_client(server, tmp_path / "a", token="memt_wrong")
    w, stop, t, events = _run(cfg, max_backoff=0.1)
    try:
        assert _wait(lambda: any(e["event"] == "error" and e["operation"] == "pull" for e in events))
        write(tmp_path / "a", "team/x.md", "x\n")
        assert _wait(lambda: any(e["event"] == "error" and e["operation"] == "push" for e in events))
        time.sleep(0.6)
        pushes = [e for e in events if e["event"] == "error" and e["operation"] == "push"]
        assert len(pushes) == 1 and pushes[0]["transient"] is False and pushes[0]["status"] == 401
        write(tmp_path / "a", "team/x.md", "x2\n")
        assert _wait(lambda: len([e for e in events if e["event"] == "error" and e["operation"] == "push"]) == 2)
    finally:
        stop.set()
        t.join(10)
    assert _entries(server) == {}


def test_unpushed_edits_from_before_the_watch_go_up_before_the_first_pull(server, tmp_path):
    cfg = make_client(server, tmp_path / "a")
    write(tmp_path / "a", "team/x.md", "v1\n")
    client.sync(cfg)
    write(tmp_path / "a", "team/x.md", "edited while nobody watched\n")
    server.store.put(REPO, {"y.md": "teammate\n"})
    w, stop, t, events = _run(cfg)
    try:
        assert _wait(lambda: (tmp_path / "a/team/y.md").exists())
    finally:
        stop.set()
        t.join(10)
    assert _entries(server)["x.md"] == "edited while nobody watched\n"
    assert (tmp_path / "a/team/x.md").read_text() == "edited while nobody watched\n"


def _start_watch(mem_exe, srv, memory_dir, *extra):
    env = {**os.environ, "MEM_TEAM_URL": srv.url, "MEM_TEAM_TOKEN": srv.token(), "MEM_TEAM_REPO": REPO}
    return subprocess.Popen([mem_exe, "team", "watch", "--dir", str(memory_dir), "--jsonl", "--poll", "0.05", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_sigterm_and_sigint_stop_it_cleanly_with_a_last_push(mem_exe, server, tmp_path):
    for sig in (signal.SIGTERM, signal.SIGINT):
        memory = tmp_path / sig.name
        proc = _start_watch(mem_exe, server, memory, "--debounce", "30")
        try:
            first = json.loads(proc.stdout.readline())
            assert first["event"] == "start" and first["repo"] == REPO
            assert json.loads(proc.stdout.readline())["event"] == "pull"
            write(memory, f"team/{sig.name}.md", "pending when the signal came\n")
            time.sleep(0.3)  # seen, but the 30 s debounce has not passed
        finally:
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        events = [json.loads(line) for line in out.splitlines()]
        assert [e["event"] for e in events] == ["push", "stop"]
        assert events[0]["final"] is True and events[0]["uploaded"] == [f"{sig.name}.md"]
        assert _entries(server)[f"{sig.name}.md"] == "pending when the signal came\n"
        assert err == ""
