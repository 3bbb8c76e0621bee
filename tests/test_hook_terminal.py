"""A hook run by hand at a terminal says what it waits for (the hint comes from the caller, not core)."""

from __future__ import annotations

import json
import os
import pty
import subprocess

import pytest

pytestmark = pytest.mark.process  # a terminal on stdin: only a real process has one


@pytest.mark.parametrize("args", [["recall", "--hook", "--offline"], ["extract", "--hook"],
                                  ["session", "compact", "--hook"]])
def test_a_hook_at_a_terminal_says_it_reads_a_payload(mem_exe, memdir, tmp_path, args):
    main, side = pty.openpty()
    try:
        proc = subprocess.Popen([mem_exe, *args], stdin=side, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ))
        os.close(side)
        payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
        os.write(main, json.dumps(payload).encode() + b"\n\x04")  # then Ctrl-D: end of input
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(main)
    assert proc.returncode == 0
    assert err.decode().startswith("mem: --hook reads the hook's JSON payload on stdin"), err


def test_core_reads_a_payload_without_a_word(tmp_path, capsys):
    """hooks.read_payload writes nothing itself: without a notice there is no hint, even at a terminal."""
    import io

    from mem.core.hooks import read_payload

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    said = []
    text = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "Stop"})
    assert read_payload(Tty(text)).session_id == "s"
    assert capsys.readouterr().err == ""
    assert read_payload(Tty(text), notice=said.append).session_id == "s" and said and "Ctrl-D" in said[0]
