"""The model's tools under hostile input: a catastrophic regex, a FIFO, a huge line; a killed job's lock.

The regex runs go in a subprocess with a time limit: Python's regular expressions cannot be
interrupted once they backtrack, so a search the deadline does not end hangs whoever runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import write_memory
from mem.core.jobs.tools import ToolBox
from mem.core.memdir.store import MemoryDir

#: ``(a+)+$`` against this backtracks 2**40 times: days.
LINE = "a" * 40 + "b"

JOB = textwrap.dedent("""
    import json, sys, time
    from mem.core.jobs.tools import ToolBox
    from mem.core.memdir.store import MemoryDir

    root, transcripts, tool = sys.argv[1:]
    box = ToolBox(MemoryDir(root), policy=None, transcripts=transcripts)
    # what run_agent sets from the job's deadline_s: a second, since the search spins a core until then
    box.deadline = time.monotonic() + 1
    print(json.dumps([box.call(tool, {"pattern": p}) for p in ("(a+)+$", "a")]))
""")


@pytest.mark.parametrize("tool", ["grep", "search_transcripts"])
def test_a_catastrophic_regex_ends_with_the_jobs_deadline(tmp_path, tool):
    root = tmp_path / "memory"
    write_memory(root, "note.md", name="note", description="a line of a's", body=LINE + "\n")
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    (transcripts / "s.jsonl").write_text(json.dumps({"role": "user", "content": LINE}) + "\n")
    r = subprocess.run([sys.executable, "-c", JOB, str(root), str(transcripts), tool], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    (first, first_error), (second, second_error) = json.loads(r.stdout)
    # the search is killed when the deadline comes, and the model told; the next finds no time left
    assert first_error and "ran out of the job's time" in first
    assert second_error and "time is up" in second


def test_run_agent_gives_the_tools_its_deadline(fake_api, tmp_path):
    from mem.core.jobs import llm
    from mem.core.jobs.agent import run_agent

    root = tmp_path / "memory"
    write_memory(root, "note.md", name="note", description="d", body="alpha\n")
    fake_api.reply_tool_use("grep", {"pattern": "alph."})
    fake_api.reply_text("done")
    box = ToolBox(MemoryDir(root), policy=None)
    before = time.monotonic()
    run_agent(llm.Model(llm.model_config("extract", timeout=10)), system="S", messages="U", toolbox=box,
              max_turns=3, deadline_s=120)
    assert before + 120 <= box.deadline <= time.monotonic() + 120
    assert [(c.name, c.ok, c.summary) for c in box.calls] == [("grep", True, "note.md:7:alpha")]


def test_searches_without_a_deadline_run_in_process_and_find_what_they_should(tmp_path):
    root = tmp_path / "memory"
    write_memory(root, "note.md", name="note", description="d", body="alpha\nbeta\n")
    box = ToolBox(MemoryDir(root), policy=None)
    text, is_error = box.call("grep", {"pattern": "bet."})
    assert (text, is_error) == ("note.md:8:beta", False)
    box.deadline = time.monotonic() + 30  # in a child now: the same answer
    assert box.call("grep", {"pattern": "bet."}) == ("note.md:8:beta", False)
    assert box.call("grep", {"pattern": "("})[1] is True  # a bad pattern is still the model's error


def test_a_fifo_is_an_error_for_the_model_never_a_hang(tmp_path):
    root = tmp_path / "memory"
    write_memory(root, "note.md", name="note", description="d", body="alpha\n")
    os.mkfifo(root / "trap.md")
    box = ToolBox(MemoryDir(root), policy=None)
    text, is_error = box.call("read", {"file_path": "trap.md"})
    assert is_error and "not a regular file" in text
    assert box.call("grep", {"pattern": "alpha"}) == ("note.md:7:alpha", False)
    assert box.call("glob", {"pattern": "*.md"})[0] == "note.md"


def test_reads_are_capped_per_line(tmp_path):
    from mem.core.jobs.tools import LINE_MAX_BYTES

    root = tmp_path / "memory"
    root.mkdir()
    with open(root / "huge.md", "wb") as fh:
        fh.write(b"first\n" + b"x" * (LINE_MAX_BYTES + 10) + b"\nlast needle\n")
    box = ToolBox(MemoryDir(root), policy=None)
    text, is_error = box.call("read", {"file_path": "huge.md"})
    assert not is_error
    assert text.splitlines() == ["     1\tfirst", f"     2\t[a line of more than {LINE_MAX_BYTES:,} bytes, not shown]",
                                 "     3\tlast needle"]
    assert box.call("grep", {"pattern": "needle|x{5}"}) == ("huge.md:3:last needle", False)


HOLD = textwrap.dedent("""
    import sys, time
    from mem.core.jobs.extract import RunLock
    from mem.core.memdir.store import MemoryDir
    assert RunLock(MemoryDir(sys.argv[1])).acquire()
    print("held", flush=True)
    time.sleep(600)
""")


def test_a_job_killed_with_sigkill_releases_the_extract_lock(memdir):
    from mem.core.jobs.extract import RunLock
    from mem.core.memdir.store import MemoryDir

    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(memdir)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    try:
        assert proc.stdout.readline() == "held\n"
        lock = RunLock(MemoryDir(memdir))
        assert not lock.acquire()
        assert lock.holder()["pid"] == proc.pid and lock.holder()["alive"]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    # the kernel drops a dead process's flock: the next Stop hook's extract gets the lock at once
    assert lock.acquire()
    lock.release()
