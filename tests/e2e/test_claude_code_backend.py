"""The claude-code backend end to end: mem's jobs through the real Claude Code binary (both pinned
versions), pointed at the local model server, with no key in mem's own environment.

Skipped unless MEM_E2E=1 (the binary comes from npm): run ``make e2e``. The server address and a
fake key reach the Claude Code process only, through MEM_CLAUDE_CODE_ENV_FILE (for tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e import driver  # noqa: E402
from tests.e2e.fakemodel import FakeModel, Reply, request_texts, tool_names  # noqa: E402
from tests.helpers.messy import messy_dir  # noqa: E402
from tests.sessions import write_session  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("MEM_E2E") != "1", reason="end-to-end: set MEM_E2E=1 (make e2e)")

VERSIONS = list(driver.PINNED["claude"])
MEM_TOOLS = {"mcp__mem__read", "mcp__mem__grep", "mcp__mem__glob", "mcp__mem__ls", "mcp__mem__write",
             "mcp__mem__edit"}


@pytest.fixture
def server():
    srv = FakeModel().start()
    yield srv
    srv.stop()


@pytest.fixture(params=VERSIONS, ids=[f"claude-{v}" for v in VERSIONS])
def setup(request, tmp_path, server):
    exe = driver.install("claude", request.param)
    env_file = tmp_path / "claude.env"
    env_file.write_text(f"ANTHROPIC_BASE_URL={server.url}\nANTHROPIC_API_KEY=sk-fake-e2e-not-a-key\n"
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\nDISABLE_TELEMETRY=1\n")
    home, memory = tmp_path / "home", tmp_path / "memory"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "MEM_", "CLAUDE_"))}
    env.update(HOME=str(home), MEM_DIR=str(memory), MEM_STATE_DIR=str(tmp_path / "state"),
               PATH=f"{exe.parent}:{env.get('PATH', '/usr/bin:/bin')}", MEM_CLAUDE_CODE_ENV_FILE=str(env_file),
               PYTHONPATH=str(driver.REPO_ROOT))
    assert not any("ANTHROPIC" in k or "OPENAI" in k for k in env)  # no key in mem's own environment
    return env, home, memory


def mem(env, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "mem", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def mains(server):
    return [r["body"] for r in server.requests if r.get("main")]


def no_transcripts(home: Path) -> list[Path]:
    return sorted((home / ".claude" / "projects").rglob("*.jsonl")) if (home / ".claude").exists() else []


def test_mem_model_detects_claude_code_when_nothing_else_is_configured(setup):
    env, _, _ = setup
    r = mem(env, "model", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert {row["backend"] for row in rows} == {"claude-code"} and rows[0]["reason"] == "detected"


def test_extract_of_a_multi_mb_session_runs_through_claude_with_only_mems_tools(setup, server, tmp_path):
    env, home, memory = setup
    session = tmp_path / "session.jsonl"
    facts = write_session(str(session), target_bytes=3_000_000)
    fact = ("---\nname: e2e-fact\ndescription: a fact saved through Claude Code\ntype: project\n---\n\n"
            "Saved through the claude-code backend.\n")
    server.main += [Reply(tool=("mcp__mem__write", {"file_path": "e2e_fact.md", "content": fact})),
                    Reply(tool=("Bash", {"command": f"touch {tmp_path}/escaped"})),
                    Reply(tool=("Write", {"file_path": f"{tmp_path}/escaped", "content": "x"})),
                    Reply(tool=("ToolSearch", {"query": "select:Bash"})),
                    Reply(tool=("DeferredToolPlaceholder", {})),
                    Reply(text="Saved one memory.")]
    r = mem(env, "extract", "--transcript", str(session), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    bodies = mains(server)
    assert doc["windows"] >= 2 and len(bodies) >= doc["windows"]
    # every planted fact reached a request; only mem's tools were offered; the built-in one was refused
    sent = [t for b in bodies for t in request_texts(b)]
    assert [f for f in facts if not any(f in t for t in sent)] == []
    for body in bodies:
        assert MEM_TOOLS <= tool_names(body) and not tool_names(body) & {"Bash", "Write", "Read", "Edit", "WebFetch"}
        # the job's output budget, not the model's whole output (which would put input + max_tokens over the window)
        assert body["max_tokens"] <= 8_192
    assert not (tmp_path / "escaped").exists()
    refusals = [b for body in bodies for m in body["messages"] if isinstance(m.get("content"), list)
                for b in m["content"] if b.get("type") == "tool_result" and b.get("is_error")]
    assert len(refusals) >= 4  # Bash, Write, ToolSearch and the placeholder: no such tool
    assert (memory / "e2e_fact.md").read_text() == fact and "e2e_fact.md" in doc["created"]
    assert doc["usage"]["input_tokens"] > 0
    # the write went through the one write path: it is in the history, and can be undone
    hist = mem(env, "history", "--json")
    assert hist.returncode == 0 and "e2e_fact.md" in hist.stdout and '"extract"' in hist.stdout
    assert no_transcripts(home) == []  # the job's sessions are not in the user's history
    caches = home / ".cache" / "claude-cli-nodejs"  # Claude Code's per-directory caches: one for mem, not one per job
    assert len(list(caches.iterdir()) if caches.exists() else []) <= 1


def test_agent_dream_on_a_messy_directory_reads_every_memory_through_claude(setup, server):
    env, home, memory = setup
    rels = messy_dir(memory, "MEMORY.md")
    bodies_planted = {rel: (memory / rel).read_text().split("---\n", 2)[2].strip() for rel in rels}
    server.main += [Reply(tool=("mcp__mem__read", {"file_path": rel})) for rel in sorted(rels)]
    server.main.append(Reply(text="Read every memory; nothing to merge tonight."))
    r = mem(env, "dream", "--force", "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "agent" and doc["ran"] is True
    sent = [t for b in mains(server) for t in request_texts(b)]
    # tool results come back as text blocks inside tool_result content
    for b in mains(server):
        for m in b.get("messages") or []:
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    c = block.get("content")
                    sent += [c] if isinstance(c, str) else [x.get("text", "") for x in c or [] if isinstance(x, dict)]
    missing = [rel for rel, body in bodies_planted.items() if not any(body.splitlines()[0] in t for t in sent)]
    assert missing == []
    assert no_transcripts(home) == []


def test_mem_model_test_asks_claude_one_tiny_question(setup, server):
    env, home, _ = setup
    server.side_text = "OK"
    r = mem(env, "model", "test", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    row = json.loads(r.stdout)[0]
    assert row["backend"] == "claude-code" and row["ok"] is True and row["latency_s"] > 0
    body = server.requests[-1]["body"]
    assert tool_names(body) <= {"DeferredToolPlaceholder"} and "Are you there?" in json.dumps(body["messages"])
    assert no_transcripts(home) == []


def test_forget_asks_claude_for_its_json_and_forgets_through_the_write_path(setup, server):
    env, _, memory = setup
    messy_dir(memory, "MEMORY.md")
    server.side_text = json.dumps({"candidates": [{"file": "grafana.md", "confident": True, "reason": "asked"}]})
    r = mem(env, "forget", "--yes", "--json", "the grafana latency dashboards")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (memory / "grafana.md").exists() and (memory / "dashboards.md").exists()
    body = server.requests[-1]["body"]
    assert "matching this JSON schema" in json.dumps(body["system"]) and tool_names(body) <= {"DeferredToolPlaceholder"}
    assert mem(env, "undo").returncode == 0 and (memory / "grafana.md").exists()


def started_by(marker: str) -> list[str]:
    """Live processes whose environment holds ``marker`` (every process of this test's job has it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
            with open(f"/proc/{pid}/status") as fh:
                zombie = "\nState:\tZ" in fh.read()
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        if marker.encode() in environ and not zombie and int(pid) != os.getpid():
            found.append(f"{pid} {cmd}")
    return found


def test_the_deadline_ends_the_claude_session_and_everything_it_started(setup, server, tmp_path):
    env, _, memory = setup
    session = tmp_path / "session.jsonl"
    write_session(str(session), target_bytes=50_000)
    server.delay = lambda headers, body: 60.0  # a model that does not answer in time
    started = time.monotonic()
    r = mem(env, "extract", "--transcript", str(session), "--timeout", "5", "--json")
    took = time.monotonic() - started
    assert r.returncode != 0 and took < 20, (took, r.stderr)
    assert "time budget" in r.stderr or "timeout" in r.stderr.lower(), r.stderr
    time.sleep(0.5)
    assert started_by(env["MEM_CLAUDE_CODE_ENV_FILE"]) == []  # neither claude nor the relay it started outlives the job
    assert not list(memory.glob("*.md")) or (memory / "MEMORY.md").exists()


def test_recall_with_only_claude_code_uses_the_ranker_and_says_why(setup, server):
    env, _, memory = setup
    messy_dir(memory, "MEMORY.md")
    r = mem({**env, "MEM_DEBUG": "1"}, "recall", "--force", "--always-ask", "where are the latency dashboards")
    assert "claude-code" in r.stderr and "not_for_recall" in r.stderr, r.stderr
    assert server.requests == []
