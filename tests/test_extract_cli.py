"""`mem extract` as hooks and scripts run it, against a real local Messages-API server: in-process,
the installed executable where the process is the point (a hook's background job), and a child forked
from the test process (helpers/forked.py) where a second process matters but its start-up does not
(the run that holds the lock, the run killed with -9)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mem.core.memdir.store import MemoryDir

from fakeapi import first_user_text

from fakeapi import message, tool_use_block
from helpers import forked

FIX = Path(__file__).parent / "fixtures" / "transcripts"
CC_MEMORY = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory"
GOOD = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"


def line(uuid: str, role: str, text: str, session: str = "sess-1") -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": role, "uuid": uuid, "sessionId": session, "message": {"role": role, "content": content}}) + "\n"


@pytest.fixture
def transcript(tmp_path) -> Path:
    p = tmp_path / "sess-1.jsonl"
    p.write_text(line("u1", "user", "remember that I prefer tabs") + line("a1", "assistant", "Noted."))
    return p


def state_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def wait_for(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    give_up = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def forked_extract(*args: str) -> forked.Forked:
    """``mem extract ARGS`` in a forked child, with the SDK already loaded (import anthropic: 1.3 s of CPU a process)."""
    import anthropic  # noqa: F401 - loaded here, once, so the child does not load it again

    return forked.Forked(["extract", *args])


def open_files() -> set[str]:
    """What this process has open, by path."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed meanwhile
            pass
    return found


def lock_held_by_other(memdir: Path) -> bool:
    from mem.core.jobs.extract import RunLock

    lock = RunLock(MemoryDir(memdir))
    if lock.acquire():
        lock.release()
        return False
    return True


# --- the plain command -----------------------------------------------------------------------------


def test_saves_and_reports(fake_api, memdir, transcript, run_mem):
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_text("Saved.")
    r = run_mem("extract", "--transcript", str(transcript), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["saved"] == ["user-prefers-tabs.md"] and data["written"] == ["user-prefers-tabs.md", "MEMORY.md"]
    assert data["skipped"] is None and data["queued"] is False and data["turns"] == 2
    assert data["usage"]["calls"] == 2
    assert data["usage"]["input_tokens"] == sum(r["input_tokens"] for r in fake_api.requests) > 0  # what the server counted
    assert data["cursor"] == {"before": None, "after": "a1", "reset": False}
    assert isinstance(data["duration_s"], float) and data["trailing"] == []
    assert r.stderr.splitlines() == ["mem: Saved 1 memory: user-prefers-tabs.md", "mem: added 1 pointer to MEMORY.md"]
    # again: nothing new, no model call, still 0
    r = run_mem("extract", "--transcript", str(transcript))
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr == "mem: nothing new since the last extraction\n"
    assert len(fake_api.requests) == 2


def test_no_api_key_exits_3_and_writes_nothing(memdir, transcript, run_mem, tmp_path):
    r = run_mem("extract", "--transcript", str(transcript))
    assert r.returncode == 3
    [message] = r.stderr.splitlines()
    assert "ANTHROPIC_API_KEY" in message and "--model" in message
    assert list(memdir.iterdir()) == []
    assert state_files(Path(os.environ["MEM_STATE_DIR"])) == []


def test_usage_and_missing_transcript(fake_api, memdir, run_mem, tmp_path):
    r = run_mem("extract", "--transcript", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 1 and r.stderr.strip() == f"mem: error: no such transcript: {tmp_path / 'nope.jsonl'}"
    r = run_mem("extract", "--transcript", "x", "--wait", "--no-queue")
    assert r.returncode == 2 and "mutually exclusive" in r.stderr
    r = run_mem("extract", "--max-turns", "0")
    assert r.returncode == 2
    r = run_mem("extract", "--project", str(tmp_path))  # no transcript given, none found
    assert r.returncode == 2 and "no transcript found" in r.stderr
    assert fake_api.requests == []


def test_a_file_that_is_not_a_transcript_is_an_error_not_nothing_new(fake_api, memdir, run_mem, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("remember to rotate the keys\n\n{\"not\": \"a message\"}\n")
    r = run_mem("extract", "--transcript", str(notes))
    assert r.returncode == 2
    assert r.stderr.strip() == (f"mem: error: {notes} is not a transcript: none of its 2 lines is Claude Code, "
                                "qwen-code, Codex CLI, Gemini CLI or {role, content} JSON")
    r = run_mem("extract", "--transcript", "-", "--session", "s1", input="plain words\nmore words\n")
    assert r.returncode == 2
    assert "standard input is not a transcript: its line is not Claude Code" in r.stderr
    # Blank input is an empty transcript (a session that has said nothing yet), not an error;
    # so is a lone line that does not parse: the client may be writing it.
    for data in ("\n\n", '{"type": "user", "mess'):
        r = run_mem("extract", "--transcript", "-", "--session", "s1", input=data)
        assert r.returncode == 0 and "nothing new" in r.stderr, data
    # Claude Code's bookkeeping lines, before any message, are a transcript too.
    data = '{"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}\n{"type": "custom-title", "customTitle": "x"}\n'
    r = run_mem("extract", "--transcript", "-", "--session", "s1", input=data)
    assert r.returncode == 0 and "nothing new" in r.stderr
    assert fake_api.requests == [] and list(memdir.iterdir()) == []


def test_default_transcript_is_the_projects_newest(fake_api, memdir, run_mem, tmp_path):
    from mem.clients.claude import transcripts_dir

    project = tmp_path / "proj"
    project.mkdir()
    tdir = Path(transcripts_dir(str(project)))
    tdir.mkdir(parents=True)
    (tdir / "old.jsonl").write_text(line("o1", "user", "old session", session="old"))
    os.utime(tdir / "old.jsonl", (1_600_000_000, 1_600_000_000))
    (tdir / "new.jsonl").write_text(line("n1", "user", "new session", session="new"))
    fake_api.reply_text("Nothing.")
    r = run_mem("extract", "--project", str(project), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["session"] == "new"
    assert f"reading {tdir / 'new.jsonl'}" in r.stderr


def test_stdin_transcript(fake_api, memdir, run_mem):
    fake_api.reply_text("Nothing.")
    data = json.dumps({"role": "user", "content": "our on-call rota is in PagerDuty"}) + "\n"
    r = run_mem("extract", "--transcript", "-", "--session", "cron-1", "--json", input=data)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["transcript"] == "-" and out["session"] == "cron-1" and out["messages"] == 1
    assert "No new memories (1 message read, 1 turn)" in r.stderr
    assert "PagerDuty" in first_user_text(fake_api.requests[0]["body"])


def test_model_failure_exits_70_and_keeps_the_cursor(fake_api, memdir, transcript, run_mem):
    fake_api.reply_status(400, "bad request from the fake")
    r = run_mem("extract", "--transcript", str(transcript))
    assert r.returncode == 70
    [message] = r.stderr.splitlines()
    assert message.startswith("mem: error: extraction failed: model server answered 400") and "cursor stays" in message
    from mem.core.jobs.extract import read_cursor

    assert read_cursor(MemoryDir(memdir), "sess-1") is None


def test_agent_wrote_memory_is_reported(fake_api, memdir, run_mem, tmp_path):
    t = tmp_path / "t.jsonl"
    t.write_text((FIX / "claude-code-05-tool-use-write-memory.jsonl").read_text().replace(CC_MEMORY, str(memdir)))
    r = run_mem("extract", "--transcript", str(t), "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["skipped"] == "agent_wrote_memory"
    assert "the agent wrote memory itself" in r.stderr
    assert fake_api.requests == []


# --- hook mode -------------------------------------------------------------------------------------


def payload_for(transcript: Path, cwd: Path, fixture: str = "claude-code-05-Stop.json") -> str:
    data = json.loads((FIX / fixture).read_text())
    data.update(transcript_path=str(transcript), cwd=str(cwd))
    return json.dumps(data)


def test_hook_resolves_the_memory_dir_from_the_payload(fake_api, run_mem, transcript, tmp_path):
    from mem.clients import resolve

    project = tmp_path / "repo"
    project.mkdir()
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_text("Saved.")
    r = run_mem("extract", "--hook", input=payload_for(transcript, project))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""  # a Stop hook's stdout is read by the client
    memory = Path(resolve(project=str(project)).memory_dir)
    assert (memory / "user-prefers-tabs.md").read_text() == GOOD
    # the session comes from the payload
    from mem.core.jobs.extract import read_cursor

    assert read_cursor(MemoryDir(memory), "63ec8da7-3d1c-4d82-927e-992a0039be2f")["last_uuid"] == "a1"


@pytest.mark.parametrize("args, stdin", [
    (["--bogus-flag"], "{}"),
    (["--max-turns", "nope"], "{}"),
    ([], "not json"),
    ([], json.dumps({"session_id": "s", "hook_event_name": "Stop", "cwd": "/tmp"})),  # no transcript_path
    ([], "PAYLOAD-MISSING-FILE"),
])
def test_hook_never_fails_the_session(run_mem, memdir, fake_api, tmp_path, args, stdin):
    if stdin == "PAYLOAD-MISSING-FILE":
        stdin = payload_for(tmp_path / "gone.jsonl", tmp_path)
    r = run_mem("extract", "--hook", *args, input=stdin)
    assert r.returncode == 0  # exit 2 from a Stop hook would make Claude Code keep going
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("mem: hook: ")
    assert fake_api.requests == []


def test_hook_without_api_key_exits_0_with_one_line(run_mem, memdir, transcript, tmp_path):
    r = run_mem("extract", "--hook", input=payload_for(transcript, tmp_path))
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr.startswith("mem: hook: ") and "ANTHROPIC_API_KEY" in r.stderr
    assert list(memdir.iterdir()) == []


def test_hook_respects_auto_memory_off(run_mem, fake_api, transcript, tmp_path):
    r = run_mem("extract", "--hook", input=payload_for(transcript, tmp_path),
                env={"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"})
    assert r.returncode == 0 and "auto memory is turned off" in r.stderr
    assert fake_api.requests == []


def test_qwen_hook_payload(fake_api, memdir, run_mem, tmp_path):
    t = tmp_path / "chat.jsonl"
    t.write_text((FIX / "qwen-code-04-hooks-json.jsonl").read_text())
    fake_api.reply_text("Nothing.")
    r = run_mem("extract", "--hook", input=payload_for(t, tmp_path, "qwen-code-03-Stop.json"))
    assert r.returncode == 0 and r.stdout == ""
    assert "No new memories" in r.stderr
    assert "hello hooks json" in first_user_text(fake_api.requests[0]["body"])


# --- background ------------------------------------------------------------------------------------


def test_background_returns_at_once_and_closes_the_pipes(fake_api, memdir, transcript, mem_exe):
    answer = threading.Event()  # the model answers once the hook has been seen to return
    fake_api.reply(message([tool_use_block("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})],
                           stop_reason="tool_use"), delay=answer)
    fake_api.reply_text("Saved.")
    started = time.monotonic()
    parent = subprocess.Popen([mem_exe, "extract", "--hook", "--background"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    out, err = parent.communicate(payload_for(transcript, memdir.parent).encode(), timeout=10)
    elapsed = time.monotonic() - started  # communicate returns at EOF on both pipes
    assert parent.returncode == 0 and out == b"" and err == b""
    assert elapsed < 1.5, f"the hook held the client for {elapsed:.2f}s"
    assert not (memdir / "user-prefers-tabs.md").exists()  # the model has not answered yet
    answer.set()
    wait_for(lambda: (memdir / "MEMORY.md").exists(), what="the background extraction")
    assert (memdir / "user-prefers-tabs.md").read_text() == GOOD
    from mem.core.memdir.state import state_dir

    log = Path(state_dir(MemoryDir(memdir))) / "logs" / "extract.log"
    wait_for(lambda: "Saved 1 memory" in log.read_text(), what="the log")
    text = log.read_text()
    assert text.startswith("--- ") and text.splitlines()[0].endswith(f": {transcript}")


def test_background_from_stdin_with_json(fake_api, memdir, run_mem):
    fake_api.reply_text("Nothing.")
    data = json.dumps({"role": "user", "content": "I lead the payments team"}) + "\n"
    r = run_mem("extract", "--transcript", "-", "--session", "s", "--background", "--json", input=data)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["background"] is True and info["log"].endswith("extract.log")
    wait_for(lambda: len(fake_api.requests) == 1, what="the model call")
    assert "payments team" in first_user_text(fake_api.requests[0]["body"])
    wait_for(lambda: not os.path.exists(f"/proc/{info['pid']}") or
             Path(f"/proc/{info['pid']}/stat").read_text().split()[2] == "Z", what="the child to finish")
    spool = Path(info["transcript"])
    assert not spool.exists()  # the stdin copy is removed once read


# --- concurrency -----------------------------------------------------------------------------------


def test_two_extracts_at_once_one_runs_one_trails(fake_api, memdir, transcript, run_mem, tmp_path):
    other = tmp_path / "sess-2.jsonl"
    other.write_text(line("b1", "user", "I work on the billing service", session="sess-2"))
    answer = threading.Event()  # the first run holds the lock until the other two have tried it
    fake_api.reply_text("Nothing from one.", delay=answer)
    fake_api.reply_text("Nothing from two.")
    first = forked_extract("--transcript", str(transcript), "--json")
    wait_for(lambda: len(fake_api.requests) == 1, what="the first run's model call")
    assert lock_held_by_other(memdir)
    second = run_mem("extract", "--transcript", str(other), "--json")
    assert second.returncode == 0, second.stderr
    queued = json.loads(second.stdout)
    assert queued["queued"] is True and queued["holder"]["pid"] == first.pid
    assert "this one will run after it" in second.stderr
    third = run_mem("extract", "--transcript", str(other), "--no-queue")
    assert third.returncode == 5 and f"pid {first.pid}" in third.stderr
    answer.set()
    done = first.wait(timeout=30)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    result = json.loads(out)
    assert result["session"] == "sess-1" and result["queued"] is False
    assert [(t["session"], t["messages"]) for t in result["trailing"]] == [("sess-2", 1)]
    assert len(fake_api.requests) == 2
    assert "billing service" in first_user_text(fake_api.requests[1]["body"])
    assert "queued run for session sess-2" in err
    assert not lock_held_by_other(memdir)


def test_wait_runs_after_the_holder(fake_api, memdir, transcript, run_mem, tmp_path):
    other = tmp_path / "sess-2.jsonl"
    other.write_text(line("b1", "user", "hello", session="sess-2"))
    answer = threading.Event()  # the holder's model answers once the second run is waiting for the lock
    fake_api.reply_text("one", delay=answer)
    fake_api.reply_text("two")
    first = forked_extract("--transcript", str(transcript))
    wait_for(lambda: len(fake_api.requests) == 1, what="the first run's model call")
    from mem.core.jobs.extract import RunLock

    lock_file = RunLock(MemoryDir(memdir)).path

    def answer_once_the_second_waits() -> None:  # it has the lock file open: it is polling for the lock
        try:
            wait_for(lambda: lock_file in open_files(), what="the second run to wait for the lock")
        finally:
            answer.set()

    threading.Thread(target=answer_once_the_second_waits, daemon=True).start()
    second = run_mem("extract", "--transcript", str(other), "--wait", "--json")
    first.wait(timeout=30)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    assert out["queued"] is False and out["session"] == "sess-2" and out["turns"] == 1


# --- kill -9 ---------------------------------------------------------------------------------------


def test_kill_9_mid_write_leaves_no_partial_file(fake_api, memdir, transcript, run_mem):
    old = GOOD
    (memdir / "user-prefers-tabs.md").write_text(old)
    new = GOOD.replace("Tabs.", "Tabs, always. " + "t" * 90_000)
    expected = {f"m{i:02d}.md": f"---\nname: m{i}\ndescription: d{i}\ntype: user\n---\n\n" + "x" * 90_000 + "\n"
                for i in range(20)}
    calls = [("read", {"file_path": "user-prefers-tabs.md"}), ("write", {"file_path": "user-prefers-tabs.md", "content": new})]
    calls += [("write", {"file_path": name, "content": content}) for name, content in expected.items()]
    partial_seen = 0
    # a name: kill the moment that file (or, for "", any temp file or new file: a write takes a millisecond or two,
    # so a poll can miss every temp file) shows up; a number: after that many seconds
    for delay in ("", "m05.md", 0.01):
        for p in memdir.iterdir():
            if p.name != "user-prefers-tabs.md":
                p.unlink()
        (memdir / "user-prefers-tabs.md").write_text(old)
        fake_api.script.clear()
        fake_api.requests.clear()
        fake_api.reply_tool_uses(*calls)
        fake_api.reply_text("done", delay=5)
        proc = forked_extract("--transcript", str(transcript), "--all")  # a process of its own, killed below
        give_up = time.monotonic() + 20
        if isinstance(delay, str):
            while time.monotonic() < give_up and not (
                    (memdir / delay).exists() if delay else any(n.endswith(".tmp") or n in expected
                                                                for n in os.listdir(memdir))):
                time.sleep(0.0002)
        else:
            while not fake_api.requests and time.monotonic() < give_up:
                time.sleep(0.001)
            time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        names = {p.name for p in memdir.iterdir()}
        visible = {n for n in names if not n.startswith(".")}
        assert (memdir / "user-prefers-tabs.md").read_text() in (old, new)
        if "MEMORY.md" in visible:  # the run got as far as its index (the writes take milliseconds): whole, too
            visible.discard("MEMORY.md")
            index = (memdir / "MEMORY.md").read_text()
            pointed = re.findall(r"^- \[[^\]]+\]\(([^)]+)\)", index, re.MULTILINE)
            assert index.endswith("\n") and len(pointed) == len(index.splitlines()), index
            assert set(pointed) <= visible, (pointed, visible)
        for name in visible - {"user-prefers-tabs.md"}:
            assert name in expected, name
            assert (memdir / name).read_text() == expected[name], f"{name} is partial"
        assert all(n.endswith(".tmp") for n in names - visible - {"MEMORY.md"})  # at most a temp file left behind
        if names - visible - {"MEMORY.md"} or 0 < len(visible) - 1 < len(expected):
            partial_seen += 1  # killed inside a write, or between two of them
    assert partial_seen, "no kill landed while the files were being written"
    # a temp file left by a killed writer is swept by the next run once it is clearly stale
    temp = memdir / ".m07.md.abcd1234.tmp"
    temp.write_text("half")
    os.utime(temp, (time.time() - 3600, time.time() - 3600))
    fresh = memdir / ".m08.md.abcd1234.tmp"
    fresh.write_text("in progress")
    fake_api.script.clear()
    fake_api.reply_text("Nothing.")
    assert run_mem("extract", "--transcript", str(transcript), "--all").returncode == 0
    assert not temp.exists() and fresh.exists()
    # the scan never shows a temp file, and the lock was not left held
    r = run_mem("scan", "--all", "--json")
    assert all(not e["relpath"].startswith(".") for e in json.loads(r.stdout))
    assert not lock_held_by_other(memdir)


def test_prompt_carries_the_projects_claude_md(run_mem, tmp_path, fake_api, memdir):
    """Issue 9: extraction sees the CLAUDE.md files, so it can skip what they already say."""
    import shutil
    from pathlib import Path

    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("Always run the linter before committing.\n")
    fix = Path(__file__).parent / "fixtures" / "transcripts"
    src = fix / "claude-code-01-hello.jsonl"
    shutil.copy(src, tmp_path / "t.jsonl")
    fake_api.reply_text("Nothing worth saving.")
    r = run_mem("extract", "--transcript", str(tmp_path / "t.jsonl"), "--project", str(project), "--json",
                env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    text = json.dumps(fake_api.requests[0]["body"]["messages"])
    assert "Always run the linter before committing." in text and "CLAUDE.md" in text


def test_a_long_session_is_read_in_windows_and_says_so(fake_api, memdir, run_mem, tmp_path):
    from sessions import write_session

    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=600_000, fact_every=3)
    fake_api.context_window = 30_000
    fake_api.respond_with(lambda body: message([{"type": "text", "text": "Nothing worth saving."}]))
    env = {"ANTHROPIC_BASE_URL": fake_api.url, "MEM_CONTEXT_WINDOW": "30000"}
    r = run_mem("extract", "--transcript", str(path), env=env)
    assert r.returncode == 0, r.stderr
    windows = len(fake_api.requests)
    assert windows > 1 and {q["status"] for q in fake_api.requests} == {200}
    assert f"read in {windows} windows, in order" in r.stderr
    sent = json.dumps([q["body"]["messages"] for q in fake_api.requests])
    assert all(f in sent for f in facts)
    r = run_mem("extract", "--transcript", str(path), "--json", env=env)  # nothing new after the last window
    assert json.loads(r.stdout)["skipped"] == "no_new_messages" and len(fake_api.requests) == windows
