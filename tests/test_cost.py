"""mem cost: the context mem's hooks added, read back from the client's transcripts, and model jobs' spend."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from conftest import write_memory
from mem.core import cost
from mem.core.memdir.store import MemoryDir

FIXTURES = Path(__file__).parent / "fixtures"
#: A session recorded from the real Claude Code 2.1.330 with mem's hooks installed.
RECORDED = FIXTURES / "claude-code-2.1.330" / "01-hooks" / "transcript.jsonl"


def hand_count(text: str) -> int:
    """The estimate's own rule for plain ASCII prose, applied by hand: 4 characters a token, plus a
    quarter per punctuation mark and an eighth per digit."""
    punct = sum(1 for ch in text if ch.isascii() and not ch.isalnum() and not ch.isspace() and ch.isprintable())
    digits = sum(ch.isdigit() for ch in text)
    return math.ceil(len(text) / 4 + punct / 4 + digits / 8)


def test_the_recorded_session_start_is_read_back_and_counted():
    session = cost.session_cost(str(RECORDED))
    assert session.hooked and session.prompts == 1
    [start] = session.start
    # the SessionStart line of the recorded transcript, parsed by hand
    line = next(json.loads(raw) for raw in RECORDED.read_text().splitlines() if '"mem prompt --hook"' in raw)
    context = json.loads(line["attachment"]["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# Memory tools")
    assert abs(start - hand_count(context)) <= 0.10 * hand_count(context)
    assert session.prompt == [] and session.tool == []  # no recall hook ran in that session


def _line(event: str, command: str, context: str | None, session: str = "s") -> str:
    stdout = "" if context is None else json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})
    return json.dumps({"type": "attachment", "sessionId": session, "attachment": {
        "type": "hook_success", "hookName": event, "hookEvent": event, "content": "", "stdout": stdout,
        "stderr": "", "exitCode": 0, "command": command, "durationMs": 30}})


def _prompt(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


def _tool_result() -> str:
    return json.dumps({"type": "user", "toolUseResult": {"stdout": "ok"},
                       "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}})


def test_prompts_tools_and_other_hooks_are_told_apart(tmp_path):
    mem = "/home/me/.local/bin/mem"
    surfaced = "Memory (saved today): /m/deploy.md:\n\n" + "Deploys go out on Fridays after QA. " * 20
    lines = [
        _line("SessionStart", f"{mem} prompt --hook", "# Memory tools\n\nSave what matters."),
        _prompt("how do we deploy?"),
        _line("UserPromptSubmit", f"{mem} recall --hook", surfaced),
        _line("UserPromptSubmit", "python3 /opt/other-hook.py", "not ours " * 50),   # another tool's hook
        _line("PreToolUse", f"'{mem}' recall --hook", "Never force-push to main."),
        _tool_result(),
        _prompt("thanks"),
        _line("UserPromptSubmit", f"{mem} recall --hook", None),  # surfaced nothing
        _line("Stop", f"{mem} extract --hook --background", None),
        "not json at all",
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = cost.session_cost(str(path))
    assert s.prompts == 2
    assert s.prompt == [cost_of(surfaced), 0]
    assert s.tool == [cost_of("Never force-push to main.")]
    assert len(s.start) == 1 and s.total == sum(s.start) + cost_of(surfaced) + s.tool[0]


def cost_of(text: str) -> int:
    from mem.core.jobs.budget import text_tokens

    return text_tokens(text)


@pytest.mark.parametrize("command, sub", [
    ("/usr/local/bin/mem recall --hook", "recall"),
    ("'/home/a b/.local/bin/mem' prompt --hook --mode auto", "prompt"),
    ("/opt/venv/bin/python3 -m mem recall --hook", "recall"),
    ("/h/dist/mem-py3.11.pyz recall --hook", "recall"),
    ("mem recall --offline how", None),       # not a hook
    ("python3 /opt/dump.py --hook", None),      # not mem
    ("memcached --hook", None),
    ("mem 'unclosed", None),
])
def test_which_hook_commands_are_mem(command, sub):
    assert cost.is_mem_hook(command) == sub


def test_percentiles_by_nearest_rank():
    assert cost.Spread.of([]) == cost.Spread(0, 0, 0, 0, 0)
    s = cost.Spread.of([0, 0, 0, 0, 0, 0, 0, 0, 100, 1000])
    assert (s.count, s.median, s.p90, s.total) == (10, 0, 100, 1100)
    assert cost.Spread.of([5]).p90 == 5


def test_mem_cost_over_the_projects_sessions_and_jobs(run_mem, isolated_env, tmp_path, memdir):
    from mem.core.memdir import events
    from mem.clients import resolve

    project = tmp_path / "proj"
    project.mkdir()
    transcripts = Path(resolve(project=str(project)).transcripts_dir)
    transcripts.mkdir(parents=True)
    write_memory(memdir, "deploy.md", name="deploy", description="deploys on Friday", type="project")
    mem = "/usr/bin/mem"
    for i, sizes in enumerate(([400, 0, 0], [800, 0], [0])):
        lines = [_line("SessionStart", f"{mem} prompt --hook", "# Memory tools")]
        for n in sizes:
            lines += [_prompt("q"), _line("UserPromptSubmit", f"{mem} recall --hook", "x" * n if n else None)]
        (transcripts / f"session-{i}.jsonl").write_text("\n".join(lines) + "\n")
        os.utime(transcripts / f"session-{i}.jsonl", (2000 + i, 2000 + i))
    shutil.copy(RECORDED, transcripts / "recorded.jsonl")
    os.utime(transcripts / "recorded.jsonl", (1000, 1000))  # the oldest: left out by --sessions 3
    events.record(MemoryDir(memdir), "extract", created=["a.md"], tokens={"input_tokens": 1200, "output_tokens": 80})
    events.record(MemoryDir(memdir), "extract", tokens={"input_tokens": 800, "output_tokens": 20})
    events.record(MemoryDir(memdir), "dream", tokens={"input_tokens": 5000, "output_tokens": 300})
    events.record(MemoryDir(memdir), "log", created=["logs/x.md"])

    r = run_mem("cost", "--json", "--project", str(project), "--sessions", "3")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["estimated"] is True and data["sessions_read"] == 3
    prompts = data["per_prompt"]
    assert prompts["count"] == 6 and prompts["median"] == 0 and prompts["p90"] == cost_of("x" * 800)
    assert {j["command"]: (j["runs"], j["input_tokens"], j["output_tokens"]) for j in data["jobs"]} == \
        {"extract": (2, 2000, 100), "dream": (1, 5000, 300)}
    assert data["session_start_now_tokens"] > 0

    r = run_mem("cost", "--project", str(project))
    assert r.returncode == 0, r.stderr
    assert "4 sessions with mem's hooks of the 4 sessions read" in r.stdout
    assert "per prompt" in r.stdout and "extract: 2 runs, 2,000 in, 100 out" in r.stdout and "estimates" in r.stdout


def test_mem_cost_on_a_fresh_machine(run_mem, tmp_path):
    project = tmp_path / "new"
    project.mkdir()
    r = run_mem("cost", "--project", str(project))
    assert r.returncode == 0, r.stderr
    assert "no transcripts in" in r.stdout and "none recorded" in r.stdout
