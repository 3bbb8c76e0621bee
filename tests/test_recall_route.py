"""Which way a prompt is served (ranker alone, model, deadline fallback), and the stdlib client the
selector's request goes through, checked against the SDK on the same local Messages-API server."""

from __future__ import annotations

import json
import shutil
import socket
import time

import pytest

from conftest import FIXTURES, write_memory
from mem.core.memdir.store import MemoryDir
from mem.core import recall
from mem.core.recall.model import SELECTION_SCHEMA
from mem.core.jobs import llm, messages_lite

BENCH = FIXTURES / "recall-bench"
REQUEST = {"system": "Pick files.", "messages": [{"role": "user", "content": "which files?"}],
           "output_config": {"format": {"type": "json_schema", "schema": SELECTION_SCHEMA}}}


def config(**changes) -> llm.ModelConfig:
    return llm.model_config("recall")._replace(**changes)


# --- the stdlib client --------------------------------------------------------------------


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-haiku-4-5"])  # refuses / takes a temperature
def test_the_request_is_the_one_the_sdk_sends(fake_api, model):
    fake_api.reply_text("from the sdk")
    fake_api.reply_text("from the stdlib")
    c = config(model=model)
    llm.Model(c).create(**REQUEST)
    assert messages_lite.create(c, **REQUEST).text == "from the stdlib"
    sdk, lite = fake_api.requests
    assert lite["body"] == sdk["body"]
    assert lite["body"]["max_tokens"] == 256 and lite["body"]["model"] == model
    assert lite["body"].get("temperature") == (None if model.endswith("5-5") else 0.0)
    assert lite["path"] == sdk["path"] == "/v1/messages"
    assert lite["headers"]["content-type"] == "application/json"


def test_credentials_and_api_version_headers(fake_api):
    fake_api.reply_text("a")
    fake_api.reply_text("b")
    messages_lite.create(config(api_key="key-1", auth_token=None), **REQUEST)
    messages_lite.create(config(api_key=None, auth_token="token-2"), **REQUEST)
    first, second = (r["headers"] for r in fake_api.requests)
    assert first["x-api-key"] == "key-1" and "authorization" not in first
    assert second["authorization"] == "Bearer token-2" and "x-api-key" not in second
    assert first["anthropic-version"] == second["anthropic-version"] == messages_lite.API_VERSION


def test_a_base_url_with_a_path_keeps_it(fake_api):
    fake_api.reply_text("ok")
    messages_lite.create(config(base_url=fake_api.url + "/gateway/anthropic/"), **REQUEST)
    assert fake_api.requests[0]["path"] == "/gateway/anthropic/v1/messages"


def test_answer_text_and_usage(fake_api):
    fake_api.reply_text('{"selected_memories": []}', input_tokens=77, output_tokens=5)
    usage = llm.Usage()
    reply = messages_lite.create(config(), usage=usage, **REQUEST)
    assert reply.text == '{"selected_memories": []}'
    assert (usage.input_tokens, usage.output_tokens, usage.calls) == (77, 5, 1)


def _kind(fn) -> str | None:
    try:
        fn()
    except llm.ModelError as exc:
        return exc.kind
    return None


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded"), (429, "overloaded"), (500, "status"),
                                              (400, "status"), (401, "auth"), (403, "auth")])
def test_error_statuses_map_to_the_sdks_kinds(fake_api, status, kind):
    fake_api.reply_status(status, "scripted trouble")
    fake_api.reply_status(status, "scripted trouble")
    c = config()
    assert _kind(lambda: llm.Model(c).create(**REQUEST)) == kind
    try:
        messages_lite.create(c, **REQUEST)
    except llm.ModelError as exc:
        assert exc.kind == kind and f"answered {status}: scripted trouble" in str(exc)
    else:
        pytest.fail("no error")
    assert len(fake_api.requests) == 2  # no retry


def test_a_model_that_refuses_temperature_is_asked_again_without(fake_api):
    fake_api.reply_status(400, "temperature is deprecated for this model")
    fake_api.reply_text("ok")
    reply = messages_lite.create(config(model="claude-sonnet-4-9-preview"), **REQUEST)
    assert reply.text == "ok"
    assert [("temperature" in r["body"]) for r in fake_api.requests] == [True, False]


def test_an_answer_that_is_not_a_message_is_a_bad_response(fake_api):
    fake_api.reply({"type": "message", "content": "not a list"})
    assert _kind(lambda: messages_lite.create(config(), **REQUEST)) == "bad_response"


def test_no_server_is_a_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    c = llm.ModelConfig("m", "k", None, f"http://127.0.0.1:{port}", 5.0, 0, 256, None)
    assert _kind(lambda: messages_lite.create(c, **REQUEST)) == "connection"
    assert _kind(lambda: messages_lite.create(c._replace(base_url="ftp://x"), **REQUEST)) == "connection"


def test_the_deadline_bounds_a_slow_server(fake_api):
    fake_api.reply_text("late", delay=8)
    started = time.monotonic()
    assert _kind(lambda: messages_lite.create(config(), deadline=started + 0.5, **REQUEST)) == "timeout"
    assert time.monotonic() - started < 4  # the answer would have taken 8 s
    assert _kind(lambda: messages_lite.create(config(), deadline=time.monotonic() - 1, **REQUEST)) == "timeout"


# --- routing --------------------------------------------------------------------------------


@pytest.fixture
def bench_memories(memdir):
    for f in (BENCH / "memories").iterdir():
        shutil.copy(f, memdir / f.name)
    return memdir


def _best(memdir, query: str) -> float:
    from mem.core.memdir import manifest

    index = recall.offline_index(MemoryDir(memdir), manifest.scan(str(memdir)))
    hits = index.scores(query)
    return hits[0].score if hits else 0.0


def _labelled(memdir, sure: bool) -> str:
    """A labelled query the ranker is (or is not) sure of, as the ranker scores today."""
    queries = json.loads((BENCH / "queries.json").read_text(encoding="utf-8"))
    for q in queries:
        if recall.ranker_is_sure(_best(memdir, q["query"])) == sure and (sure or q["relevant"]):
            return q["query"]
    pytest.fail(f"no labelled query the ranker is {'sure' if sure else 'unsure'} of")


def test_routes_are_named_in_one_place():
    assert recall.SURE_NOTHING_BELOW < recall.SURE_MATCH_FROM
    assert not recall.ranker_is_sure((recall.SURE_NOTHING_BELOW + recall.SURE_MATCH_FROM) / 2)
    assert recall.ranker_is_sure(0.0) and recall.ranker_is_sure(recall.SURE_MATCH_FROM)


def test_a_sure_ranker_answers_without_the_model(bench_memories, fake_api):
    query = _labelled(bench_memories, sure=True)
    offline = recall.recall(MemoryDir(bench_memories), query, offline=True)
    r = recall.recall(MemoryDir(bench_memories), query)
    assert fake_api.requests == []
    assert (r.route, r.strategy, r.fallback_reason) == ("offline-confident", "offline", None)
    assert [s.relpath for s in r.selected] == [s.relpath for s in offline.selected]


def test_an_unrelated_prompt_asks_no_model(bench_memories, fake_api):
    r = recall.recall(MemoryDir(bench_memories), "what is the capital of Australia?")
    assert (r.route, r.selected, fake_api.requests) == ("offline-confident", [], [])


def test_an_unsure_ranker_lets_the_model_decide(bench_memories, fake_api):
    query = _labelled(bench_memories, sure=False)
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}')
    r = recall.recall(MemoryDir(bench_memories), query)
    assert len(fake_api.requests) == 1
    assert (r.route, r.strategy) == ("model", "model")
    assert [s.relpath for s in r.selected] == ["user_role.md"]


def test_a_late_model_leaves_the_rankers_pick(bench_memories, fake_api):
    query = _labelled(bench_memories, sure=False)
    offline = recall.recall(MemoryDir(bench_memories), query, offline=True)
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}', delay=8)
    started = time.monotonic()
    r = recall.recall(MemoryDir(bench_memories), query, deadline=started + 0.5)
    assert time.monotonic() - started < 4
    assert (r.route, r.strategy, r.fallback_reason) == ("deadline-fallback", "offline", "timeout")
    assert [s.relpath for s in r.selected] == [s.relpath for s in offline.selected]


def test_a_failing_model_is_its_own_route(bench_memories, fake_api):
    fake_api.reply_status(529)
    r = recall.recall(MemoryDir(bench_memories), _labelled(bench_memories, sure=False))
    assert (r.route, r.fallback_reason) == ("model-failed", "overloaded")


def test_routes_without_a_choice(memdir, fake_api, monkeypatch):
    assert {"no-candidates", "offline", "offline-confident", "model", "deadline-fallback", "model-failed"} == set(
        recall.ROUTES)  # the values this file sees, and the man page lists
    assert recall.recall(MemoryDir(memdir), "how do we deploy").route == "no-candidates"
    write_memory(memdir, "a.md", name="a", description="deploys go through the staging cluster")
    assert recall.recall(MemoryDir(memdir), "how do we deploy", offline=True).route == "offline"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert recall.recall(MemoryDir(memdir), "how do we deploy").route == "offline"
    assert recall.recall(MemoryDir(memdir), "").route is None  # skipped before choosing
    assert fake_api.requests == []


def test_the_hook_says_which_way_it_went_and_keeps_its_deadline(bench_memories, fake_api, run_mem, tmp_path):
    query = _labelled(bench_memories, sure=False)
    offline = recall.recall(MemoryDir(bench_memories), query, offline=True)
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}', delay=10)
    hook = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(tmp_path),
                       "hook_event_name": "UserPromptSubmit", "prompt": query})
    started = time.monotonic()
    p = run_mem("recall", "--hook", "--deadline", "1", input=hook, env={"MEM_DEBUG": "1"})
    assert time.monotonic() - started < 6  # the answer would have taken 10 s
    assert p.returncode == 0, p.stderr
    assert "hook: route=deadline-fallback " in p.stderr
    context = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"] if p.stdout else ""
    # the ranker's pick, not the model's (as plain text: no transcript tells the client's version)
    assert context.count("Memory (saved") == len(offline.selected) and "<system-reminder>" not in context
    assert all(s.relpath in context for s in offline.selected)


def test_debug_says_how_the_model_call_went_on_the_command_and_in_the_hook(bench_memories, fake_api, run_mem, tmp_path):
    # core hands the line to the caller's log (issue #26: core never writes to stderr); the command prints it
    query = _labelled(bench_memories, sure=False)
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}')
    p = run_mem("recall", "--always-ask", query, env={"MEM_DEBUG": "1"})
    assert p.returncode == 0, p.stderr
    assert "mem: debug: model " in p.stderr and "(stdlib client) in=" in p.stderr, p.stderr
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}')
    hook = json.dumps({"session_id": "s2", "transcript_path": "", "cwd": str(tmp_path),
                       "hook_event_name": "UserPromptSubmit", "prompt": query})
    # the hook's deadline counts from the process's start: in this process, the test session's
    p = run_mem("recall", "--hook", "--always-ask", "--deadline", "86400", input=hook, env={"MEM_DEBUG": "1"})
    assert p.returncode == 0 and "user_role.md" in p.stdout, p.stderr
    assert "mem: debug: model " in p.stderr and "hook: route=model " in p.stderr, p.stderr
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}')
    p = run_mem("recall", "--always-ask", query)
    assert "debug" not in p.stderr


def test_the_deadline_must_be_positive(run_mem, memdir):
    p = run_mem("recall", "--deadline", "0", "some query words")
    assert p.returncode == 2 and p.stderr.startswith("mem: ") and "--deadline" in p.stderr


def test_the_keyed_hook_that_asks_the_model_loads_no_sdk(bench_memories, fake_api, tmp_path):
    import os
    import subprocess
    import sys

    query = _labelled(bench_memories, sure=False)
    fake_api.reply_text('{"selected_memories": ["user_role.md"]}')
    hook = json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path),
                       "hook_event_name": "UserPromptSubmit", "prompt": query})
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "mem", "recall", "--hook"], input=hook,
                       capture_output=True, text=True, env={**os.environ, "MEM_DEBUG": "1"})
    assert p.returncode == 0 and "hook: route=model " in p.stderr, p.stderr[-500:]
    assert "user_role.md" in p.stdout and len(fake_api.requests) == 1
    loaded = {line.rsplit("|", 1)[1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert "mem.core.jobs.messages_lite" in loaded
    assert not {"anthropic", "httpx", "pydantic", "pydantic_core", "jiter"} & loaded
    # a plain-http server needs neither http.client (it imports the email package) nor ssl: ~10 ms of the hook
    assert not {"http.client", "email.parser", "ssl"} & loaded


@pytest.fixture
def connect_proxy():
    """A local proxy that tunnels CONNECT requests; yields (its URL, the targets it was asked for)."""
    import socketserver
    import threading

    asked: list[str] = []

    class Tunnel(socketserver.StreamRequestHandler):
        def handle(self):
            target = self.rfile.readline().decode().split()[1]
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
            asked.append(target)
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

            def pipe(src, dst):
                while data := src.recv(65536):
                    dst.sendall(data)
                dst.shutdown(socket.SHUT_WR)

            back = threading.Thread(target=pipe, args=(upstream, self.connection), daemon=True)
            back.start()
            pipe(self.connection, upstream)
            back.join(5)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Tunnel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def test_the_proxy_the_environment_names_is_used(fake_api, connect_proxy, monkeypatch):
    proxy, asked = connect_proxy
    fake_api.reply_text("through the proxy")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    assert messages_lite.create(config(), **REQUEST).text == "through the proxy"
    assert asked == [fake_api.url.removeprefix("http://")]
    fake_api.reply_text("around it")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert messages_lite.create(config(), **REQUEST).text == "around it"
    assert len(asked) == 1
