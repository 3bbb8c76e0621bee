"""The interactive paths, at a real terminal: tmux runs the real ``mem`` in a pane.

forget's prompt answered with numbers, and a --hook command started by hand at a
terminal (where it says what it waits for). Skipped when tmux is not installed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import write_memory

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

#: How long a step may take before the test gives up (a deadline, not a measurement).
DEADLINE_S = 30


class Pane:
    """One tmux pane on a private server (its own socket), running one command."""

    def __init__(self, tmp_path: Path, mem_exe: str, args: list[str]):
        self.socket = str(tmp_path / f"tmux-{uuid.uuid4().hex[:8]}")
        script = tmp_path / "run.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in os.environ.items()
                          if k.isidentifier() and k not in ("TMUX", "TMUX_PANE"))
        script.write_text(f"{exports}{shlex.join([mem_exe, *args])}\necho \"[exit $?]\"\nsleep {DEADLINE_S * 4}\n")
        self.tmux("new-session", "-d", "-x", "160", "-y", "50", f"sh {shlex.quote(str(script))}")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              env={**os.environ, "TMUX": ""}).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200")

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the pane shows:\n{screen}")
            time.sleep(0.1)

    def type(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def pane(tmp_path, mem_exe):
    opened: list[Pane] = []

    def start(*args: str) -> Pane:
        p = Pane(tmp_path, mem_exe, list(args))
        opened.append(p)
        return p

    yield start
    for p in opened:
        p.close()


def test_forget_prompt_forgets_the_numbers_answered(memdir, pane):
    for rel, desc in (("tabs.md", "tabs over spaces in this repo"), ("spaces.md", "spaces in yaml files, tabs never"),
                      ("deploy.md", "deploys go out on tuesdays")):
        write_memory(memdir, rel, name=rel[:-3], description=desc)
    (memdir / "MEMORY.md").write_text("".join(f"- [{r[:-3]}]({r}) — x\n" for r in ("tabs.md", "spaces.md", "deploy.md")))
    p = pane("forget", "--offline", "tabs")
    screen = p.wait_for("Forget which?")
    numbered = {line.split(". ", 1)[1].split(" ", 1)[0]: line.split(".", 1)[0].strip()
                for line in screen.splitlines() if line.strip()[:1].isdigit() and ". " in line}
    assert set(numbered) == {"tabs.md", "spaces.md"}, screen
    p.type("banana", "Enter")
    p.wait_for("answer all, none, or numbers from 1 to 2")  # a nonsense answer is asked again
    p.type(numbered["tabs.md"], "Enter")
    screen = p.wait_for("[exit ")
    assert "[exit 0]" in screen and "forgot 1 memory" in screen, screen
    assert not (memdir / "tabs.md").exists()
    assert (memdir / "spaces.md").exists() and (memdir / "deploy.md").exists()


def test_forget_prompt_answering_none_keeps_everything(memdir, pane):
    write_memory(memdir, "tabs.md", name="tabs", description="tabs over spaces")
    p = pane("forget", "--offline", "tabs")
    p.wait_for("Forget which?")
    p.type("Enter")
    screen = p.wait_for("[exit ")
    assert "[exit 0]" in screen and "nothing forgotten" in screen, screen
    assert (memdir / "tabs.md").exists()


def test_a_hook_command_at_a_terminal_says_it_reads_a_payload_then_takes_one(memdir, pane, tmp_path):
    write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 body="Rerun with MIGRATION_TIMEOUT=900.\n")
    (memdir / "MEMORY.md").write_text("- [staging](staging.md) — staging deploys and migration timeouts\n")
    p = pane("recall", "--hook", "--offline")
    screen = p.wait_for("--hook reads the hook's JSON payload on stdin")
    assert "Ctrl-D" in screen and "[exit " not in screen  # it waits: nothing was read yet
    payload = json.dumps({"session_id": "0b0e7a8e-1111-2222-3333-444455556666", "cwd": str(tmp_path),
                          "hook_event_name": "UserPromptSubmit", "transcript_path": str(tmp_path / "none.jsonl"),
                          "prompt": "why do staging deploys fail on migration timeouts?"})
    p.type("-l", payload)
    p.type("Enter", "C-d")
    screen = p.wait_for("[exit ")
    assert "[exit 0]" in screen and "MIGRATION_TIMEOUT=900" in screen, screen


def test_a_hook_command_fed_by_a_pipe_says_nothing_extra(memdir, run_mem, tmp_path):
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "prompt": "anything"})
    r = run_mem("recall", "--hook", "--offline", input=payload)
    assert r.returncode == 0 and "payload on stdin" not in r.stderr, r.stderr
