"""mem/entry.py: the recall hook's command line read without click gives what click's path gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import write_memory
from mem.entry import parse_recall_hook

CLICK = "import sys; from mem.cli import cli; cli.main(args=sys.argv[1:], prog_name='mem')"
LEAN = "from mem.entry import main; main()"


def run(code: str, args: list[str], payload: str) -> tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-c", code, *args], input=payload, capture_output=True, text=True,
                       env=dict(os.environ), timeout=60)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("argv, lean", [
    (["recall", "--hook"], True),
    (["recall", "--hook", "--offline", "--dir", "/m", "--limit", "2", "--max-chars=900"], True),
    (["recall", "--hook", "--recent-tools", "Bash,Edit", "--recent-tools=Read", "--layout", "qwen"], True),
    (["recall", "--hook", "--agent", "rev", "--scope", "project"], True),
    (["recall"], False),                                  # not a hook
    (["recall", "how", "--hook"], False),                 # a QUERY: click says it is refused
    (["--dir", "/m", "recall", "--hook"], False),         # a group option first
    (["recall", "--hook", "--json"], False),              # an option the hook refuses
    (["recall", "--hook", "--limit", "0"], False),        # out of range
    (["recall", "--hook", "--layout", "gemini"], False),  # not a choice
    (["recall", "--hook", "--timeout", "nan"], False),
    (["recall", "--hook", "--agent", "rev"], False),      # --agent needs --scope
    (["recall", "--hook", "--dir", "/a", "--dir", "/b"], False),
    (["recall", "--hook", "--dir"], False),               # a value missing
    (["recall", "--hook", "-h"], False),
    (["recall", "--hook", "--backend", "openai"], True),
    (["recall", "--hook", "--backend", "ollama"], False),  # not a backend
])
def test_which_command_lines_are_read_without_click(argv, lean):
    assert (parse_recall_hook(argv) is not None) is lean


def test_the_parsed_options_are_typed():
    got = parse_recall_hook(["recall", "--hook", "--limit=3", "--timeout", "2.5", "--recent-tools", "A,B"])
    assert got["limit"] == 3 and got["timeout"] == 2.5 and got["recent_tools"] == ["A,B"] and got["hook"]


@pytest.mark.process
def test_lean_and_click_paths_print_the_same(memdir, tmp_path):
    write_memory(memdir, "deploy.md", name="deploy", description="how we deploy to staging", type="project",
                 body="Staging deploys go through `make ship` after the smoke tests.\n")
    write_memory(memdir, "tabs.md", name="tabs", description="the user wants tabs for indentation", type="feedback")
    (memdir / "MEMORY.md").write_text("- [deploy](deploy.md) — staging\n- [tabs](tabs.md) — tabs\n")
    prompt = {"transcript_path": None, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
              "prompt": "how do we deploy to staging with tabs?"}
    cases = [
        (["recall", "--hook", "--offline"], {**prompt, "session_id": "s1"}),
        (["recall", "--hook", "--offline", "--limit", "1", "--max-chars=400"], {**prompt, "session_id": "s2"}),
        (["recall", "--hook", "--offline", "--dir", str(memdir)], {**prompt, "session_id": "s3"}),
        (["recall", "--hook"], {**prompt, "session_id": "s4", "prompt": "deploy"}),  # one word: skipped
        (["recall", "--hook"], {"session_id": "s5", "hook_event_name": "SessionStart", "source": "compact",
                                "cwd": str(tmp_path)}),
        (["recall", "--hook", "--offline"], {**prompt, "session_id": "s6", "hook_event_name": "Stop"}),  # refused
        (["recall", "--hook", "--layout", "claude", "--dir", str(tmp_path / "nowhere")], {**prompt, "session_id": "s7"}),
    ]
    for args, payload in cases:
        text = json.dumps(payload)
        lean = run(LEAN, args, text)
        # the same session again through click would see what the first run surfaced: a fresh id
        clicked = run(CLICK, args, text.replace(payload["session_id"], payload["session_id"] + "c"))
        assert parse_recall_hook(args) is not None
        assert lean == clicked, (args, lean, clicked)
    surfaced = run(LEAN, cases[0][0], json.dumps({**prompt, "session_id": "s8"}))[1]
    assert "deploy.md" in json.loads(surfaced)["hookSpecificOutput"]["additionalContext"]
    garbage = run(LEAN, ["recall", "--hook"], "not json")
    assert garbage[0] == 0 and garbage[1] == "" and garbage[2].startswith("mem: hook: hook payload is not JSON")
    assert garbage == run(CLICK, ["recall", "--hook"], "not json")
