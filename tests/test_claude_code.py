"""The claude-code backend without the real binary: the MCP tool server (in-process and through the
relay process Claude Code starts), the command line, detection, and the run's budgets.

The real Claude Code runs these jobs in tests/e2e/test_claude_code_backend.py (make e2e).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from mem.core.jobs import credentials, llm
from mem.core.jobs.tools import ToolBox, WritePolicy
from mem.core.memdir.store import MemoryDir
from mem.core.jobs.backends import claude_code, mcp_tools

AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"  # the scanner's AWS access key rule; split so this file is not a hit
FACT = "---\nname: fact\ndescription: a fact\ntype: project\n---\n\nThe build uses Bazel.\n"


def rpc(id_, method, **params):
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


@pytest.fixture
def box(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("")
    return ToolBox(MemoryDir(memory), policy=WritePolicy())


def test_the_server_offers_exactly_the_boxs_tools_and_runs_them_through_it(box, tmp_path):
    init = mcp_tools.handle(box, rpc(1, "initialize", protocolVersion="2025-03-26", capabilities={}))
    assert init["result"]["protocolVersion"] == "2025-03-26" and "tools" in init["result"]["capabilities"]
    assert mcp_tools.handle(box, {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    listed = mcp_tools.handle(box, rpc(2, "tools/list"))["result"]["tools"]
    assert [t["name"] for t in listed] == [t.name for t in box.tools] == ["read", "grep", "glob", "ls", "write", "edit"]
    assert all(t["inputSchema"]["type"] == "object" for t in listed)
    done = mcp_tools.handle(box, rpc(3, "tools/call", name="write", arguments={"file_path": "fact.md", "content": FACT}))
    assert done["result"]["isError"] is False and (tmp_path / "memory" / "fact.md").read_text() == FACT
    assert box.created == ["fact.md"]
    secret = "---\nname: k\ndescription: k\ntype: project\n---\n\nkey " + AWS_KEY + "\n"
    refused = mcp_tools.handle(box, rpc(4, "tools/call", name="write", arguments={"file_path": "k.md", "content": secret}))
    assert refused["result"]["isError"] is True and "secret" in refused["result"]["content"][0]["text"]
    assert not (tmp_path / "memory" / "k.md").exists()
    outside = mcp_tools.handle(box, rpc(5, "tools/call", name="read", arguments={"file_path": "/etc/passwd"}))
    assert outside["result"]["isError"] is True
    assert mcp_tools.handle(box, rpc(6, "tools/call", name="Bash", arguments={"command": "id"}))["result"]["isError"]
    assert mcp_tools.handle(box, rpc(7, "resources/list"))["error"]["code"] == -32601


def test_the_relay_claude_code_starts_reaches_the_server_in_mems_process(box, tmp_path):
    with mcp_tools.ToolServer(box) as server:
        spec = server.mcp_config()["mcpServers"]["mem"]
        lines = [rpc(1, "initialize", protocolVersion="2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 rpc(2, "tools/list"), rpc(3, "tools/call", name="write", arguments={"file_path": "fact.md", "content": FACT})]
        done = subprocess.run([spec["command"], *spec["args"]], input="".join(json.dumps(m) + "\n" for m in lines),
                              capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"]})
        assert done.returncode == 0, done.stderr
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        assert [a["id"] for a in answers] == [1, 2, 3] and answers[2]["result"]["isError"] is False
        assert box.created == ["fact.md"]  # recorded by the box in this process
        assert oct(os.stat(server.dir).st_mode & 0o777) == "0o700"
    assert not os.path.exists(server.dir)


def test_a_closed_server_leaves_no_thread_that_could_answer_a_later_socket(box):
    """close() left the accept thread running: blocked in accept(), or about to call it on the closed socket's
    file descriptor number, which the next socket of the process reuses (a later job's server, a model
    connection): a suite run hung on a model request that thread had accepted."""
    import socket
    import threading

    before = set(threading.enumerate())
    server = mcp_tools.ToolServer(box)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:  # one connection: the loop goes round once
        client.connect(server.path)
        client.sendall(json.dumps(rpc(1, "ping")).encode() + b"\n")
        assert json.loads(client.makefile("rb").readline())["id"] == 1
    server.close()
    deadline = time.monotonic() + 5
    while (left := [t for t in set(threading.enumerate()) - before if t.name.endswith("(_accept)")]) and \
            time.monotonic() < deadline:
        time.sleep(0.01)
    assert left == []


def test_the_command_line_allows_mems_tools_and_nothing_built_in():
    args = claude_code.argv("/bin/claude", model="claude-sonnet-5-5", system="sys", max_turns=7,
                            tools=["read", "write"], mcp_config={"mcpServers": {}})
    value = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}
    assert args[:2] == ["/bin/claude", "-p"] and value["--tools"] == "" and "--strict-mcp-config" in args
    assert value["--allowedTools"] == "mcp__mem__read,mcp__mem__write"
    assert {"Bash", "Write", "Edit", "Read", "WebFetch", "WebSearch", "Task", "NotebookEdit"} <= set(
        value["--disallowedTools"].split(","))
    assert value["--permission-mode"] == "dontAsk" and value["--max-turns"] == "7" and "--no-session-persistence" in args
    assert value["--setting-sources"] == "" and json.loads(value["--settings"])["disableAllHooks"] is True
    assert value["--output-format"] == "stream-json" and value["--model"] == "claude-sonnet-5-5"


def test_the_conversation_so_far_becomes_one_prompt():
    assert claude_code.prompt_text("hello") == "hello"
    assert claude_code.prompt_text([{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                  {"type": "text", "text": "b"}]}]) == "a\n\nb"
    text = claude_code.prompt_text([{"role": "user", "content": "task"}, {"role": "assistant", "content": "did it"},
                                    {"role": "user", "content": [{"type": "text", "text": "fix x"}]}])
    assert text.index("task") < text.index("<your_earlier_answer>\ndid it") < text.index("fix x")


def fake_claude(tmp_path, script: str) -> str:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    exe = folder / "claude"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    return str(folder)


def test_detected_last_only_when_claude_is_on_path(tmp_path):
    folder = fake_claude(tmp_path, "exit 0\n")
    env = {"PATH": f"{folder}:/usr/bin:/bin", "HOME": str(tmp_path)}
    found = credentials.find_credentials(env)
    assert found.backend == "claude-code" and found.reason == "detected" and folder in found.source
    assert credentials.find_credentials({**env, "ANTHROPIC_API_KEY": "sk-ant-x"}).backend == "anthropic"
    assert credentials.find_credentials({**env, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}).backend == "openai"
    assert credentials.find_credentials({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}) is None
    assert credentials.find_credentials({**env, "ANTHROPIC_API_KEY": "k"}, backend="claude-code").backend == "claude-code"
    assert credentials.DETECTION[-1] == "claude-code"


def model(tmp_path):
    config = llm.model_config("extract", env={"PATH": os.environ["PATH"]}, backend="claude-code")
    return llm.Model(config)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that does not reap it is not)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "\nState:\tZ" not in fh.read()
    except FileNotFoundError:
        return False


def test_the_deadline_ends_the_session_and_its_process_group(tmp_path, box, monkeypatch):
    from mem.core.jobs import claude_agent

    pidfile = tmp_path / "pid"
    folder = fake_claude(tmp_path, f"sleep 60 & echo $! > {pidfile}\nwait\n")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    started = time.monotonic()
    run = claude_agent.run_agent(model(tmp_path), system="s", messages="m", toolbox=box, max_turns=3, deadline_s=1.5)
    assert run.stop_reason == "deadline" and time.monotonic() - started < 10
    run.timeout_if_unanswered(1.5)
    assert run.error_kind == "timeout"
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not alive(child)


def test_a_session_that_dies_is_an_error_with_its_words(tmp_path, box, monkeypatch):
    from mem.core.jobs import claude_agent

    folder = fake_claude(tmp_path, "cat >/dev/null; echo 'Invalid API key · Please run /login' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    run = claude_agent.run_agent(model(tmp_path), system="s", messages="m", toolbox=box, max_turns=3, deadline_s=20)
    assert run.stop_reason == "error" and "Please run /login" in run.error and run.turns == 0
    assert run.error_kind == "auth"


def test_a_result_event_gives_the_turns_usage_and_stop(tmp_path, box, monkeypatch):
    """The stream-json events as Claude Code 2.1.330 prints them (two blocks of one message, then the result)."""
    from mem.core.jobs import claude_agent

    events = [{"type": "system", "subtype": "init", "model": "claude-sonnet-5-5", "tools": ["mcp__mem__read"]},
              {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Reading."}]}},
              {"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t", "name": "x"}]}},
              {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "Done."}]}},
              {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 2,
               "usage": {"input_tokens": 1200, "output_tokens": 30, "cache_read_input_tokens": 5}}]
    out = tmp_path / "events.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in events))
    folder = fake_claude(tmp_path, f"cat >/dev/null; cat {out}\n")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    m = model(tmp_path)
    run = claude_agent.run_agent(m, system="s", messages="m", toolbox=box, max_turns=2, deadline_s=20)
    assert (run.turns, run.stop_reason, run.text, run.error) == (2, "max_turns", "Done.", None)
    assert run.usage.as_dict()["input_tokens"] == 1200 and run.usage.as_dict()["cache_read_input_tokens"] == 5
    assert run.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}


@pytest.mark.parametrize("version", ["2.1.197", "2.1.330"])
def test_not_logged_in_is_an_auth_error_and_no_turn(tmp_path, box, monkeypatch, version):
    """Recorded from the real binary with an empty HOME and no network (unshare -rn)."""
    from pathlib import Path

    from mem.core.jobs import claude_agent

    recorded = Path(__file__).parent / "fixtures" / "claude-code-print" / f"{version}-not-logged-in.jsonl"
    folder = fake_claude(tmp_path, f"cat >/dev/null; cat {recorded}\n")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    run = claude_agent.run_agent(model(tmp_path), system="s", messages="m", toolbox=box, max_turns=3, deadline_s=20)
    assert (run.stop_reason, run.error_kind, run.turns, run.text) == ("error", "auth", 0, "")
    assert "Not logged in" in run.error and "/login" in run.error


def test_the_env_file_reaches_claude_only(tmp_path, monkeypatch):
    env_file = tmp_path / "claude.env"
    env_file.write_text("# for tests\nANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
    monkeypatch.setenv(claude_code.ENV_FILE, str(env_file))
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    child = claude_code.child_env()
    assert child["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and "ANTHROPIC_BASE_URL" not in os.environ
    assert child["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1"


def test_claude_code_is_held_to_the_jobs_output_budget(tmp_path, box, monkeypatch):
    from mem.core.jobs import claude_agent

    seen = tmp_path / "seen"
    folder = fake_claude(tmp_path, f'cat >/dev/null; echo "$CLAUDE_CODE_MAX_OUTPUT_TOKENS" >> {seen}\n')
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    m = model(tmp_path)
    claude_agent.run_agent(m, system="s", messages="m", toolbox=box, max_turns=2, deadline_s=20)
    monkeypatch.setenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "4000")  # the user's own lower limit stays
    claude_agent.run_agent(m, system="s", messages="m", toolbox=box, max_turns=2, deadline_s=20)
    with pytest.raises(llm.ModelError):
        claude_code.ClaudeCodeBackend(m.config).create(messages=[{"role": "user", "content": "hi"}], max_tokens=2048)
    assert seen.read_text().split() == [str(llm.JOBS["extract"].max_tokens), "4000", "2048"]


def test_recall_with_only_claude_code_uses_the_ranker_and_debug_says_why(run_mem, memdir, tmp_path):
    (memdir / "deploy.md").write_text("---\nname: deploy\ndescription: how we deploy to staging\ntype: project\n---\n\n"
                                      "Deploy with make ship.\n")
    (memdir / "MEMORY.md").write_text("- [Deploy](deploy.md) — staging\n")
    called = tmp_path / "called"
    folder = fake_claude(tmp_path, f"touch {called}\n")
    env = {"PATH": f"{folder}:{os.environ['PATH']}", "MEM_DEBUG": "1"}
    r = run_mem("recall", "--always-ask", "how do we deploy to staging", env=env)
    assert "deploy.md" in r.stdout and "not_for_recall" in r.stderr and "too slow for a prompt" in r.stderr
    assert not called.exists()


def test_the_recall_hook_with_only_claude_code_answers_from_the_ranker_and_debug_says_why(run_mem, memdir, tmp_path):
    (memdir / "deploy.md").write_text("---\nname: deploy\ndescription: how we deploy to staging\ntype: project\n---\n\n"
                                      "Deploy with make ship.\n")
    (memdir / "MEMORY.md").write_text("- [Deploy](deploy.md) — staging\n")
    called = tmp_path / "called"
    folder = fake_claude(tmp_path, f"touch {called}\n")
    payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": str(memdir),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"})
    r = run_mem("recall", "--hook", "--always-ask", "--dir", str(memdir), input=payload,
                env={"PATH": f"{folder}:{os.environ['PATH']}", "MEM_DEBUG": "1"})
    assert "deploy.md" in r.stdout and not called.exists()
    assert "route=offline " in r.stderr and "fallback=not_for_recall" in r.stderr, r.stderr


def test_a_session_starts_only_within_the_jobs_spending_cap(tmp_path, box, monkeypatch):
    """Claude Code runs its own loop, so the cap is checked before each session and the session's
    usage charged after it: the second session of a job whose first spent its cap is never started."""
    from mem.core.jobs.runner import RUN_BUDGET, Job

    started = tmp_path / "started"
    result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3, "result": "Done.",
              "usage": {"input_tokens": 9_000, "output_tokens": 40, "cache_read_input_tokens": 500}}
    out = tmp_path / "events.jsonl"
    out.write_text(json.dumps(result) + "\n")
    folder = fake_claude(tmp_path, f"cat >/dev/null; echo x >> {started}; cat {out}\n")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setenv("MEM_BACKEND", "claude-code")
    job = Job("extract", budget="in=10k")
    first = job.agent("s", "m", box)
    assert first.stop_reason == "end_turn" and (job.spend.input, job.spend.output) == (9_500, 40)
    second = job.agent("s", "m", box)
    assert second.stop_reason == RUN_BUDGET and second.turns == 0 and job.stopped_at_budget
    assert started.read_text() == "x\n"  # one session, not two
