"""`mem recall` as scripts use it: arguments, stdin, output, exit status, documentation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import write_memory
from mem.core import recall

ROOT = Path(__file__).resolve().parent.parent


def _memories(memdir):
    write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    write_memory(memdir, "tabs.md", name="tabs", description="user prefers tabs in Go code", body="Tabs.\n")


def test_text_output_is_the_injected_blocks(memdir, run_mem):
    _memories(memdir)
    p = run_mem("recall", "--offline", "the", "staging", "deploy", "timed", "out")
    assert p.returncode == 0, p.stderr
    path = memdir / "staging.md"
    assert p.stdout == recall.reminder(f"Memory (saved today): {path}:", path.read_text()) + "\n"
    assert p.stderr == ""


def test_query_from_stdin(memdir, run_mem):
    _memories(memdir)
    p = run_mem("recall", "--offline", "--json", "-", input="why did the staging deploy time out?\n")
    data = json.loads(p.stdout)
    assert data["query"] == "why did the staging deploy time out?\n"
    assert [s["relpath"] for s in data["selected"]] == ["staging.md"]


def test_nothing_relevant_exits_1_and_says_why(memdir, run_mem):
    _memories(memdir)
    p = run_mem("recall", "--offline", "write a haiku about autumn leaves")
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr == "mem: no memory is relevant to the query\n"
    p = run_mem("recall", "--offline", "--json", "write a haiku about autumn leaves")
    assert p.returncode == 1
    data = json.loads(p.stdout)
    assert (data["strategy"], data["selected"], data["skipped"]) == ("offline", [], None)


def test_one_word_is_skipped_unless_forced(memdir, run_mem):
    _memories(memdir)
    p = run_mem("recall", "--offline", "--json", "staging")
    assert p.returncode == 1
    assert json.loads(p.stdout)["skipped"] == "one_word" and json.loads(p.stdout)["strategy"] == "none"
    assert "one-word" in p.stderr
    p = run_mem("recall", "--offline", "--force", "--json", "staging")
    assert json.loads(p.stdout)["selected"][0]["relpath"] == "staging.md"


def test_a_chinese_sentence_is_not_one_word(memdir, run_mem):
    write_memory(memdir, "zh.md", name="数仓迁移", description="数据仓库从 Hive 迁移到 Iceberg，截止日期 6 月 30 日",
                 type="project", body="新表直接建在 Iceberg 上。\n")
    p = run_mem("recall", "--offline", "--json", "数据仓库迁移的截止时间是什么时候")
    data = json.loads(p.stdout)
    assert data["skipped"] is None
    assert [s["relpath"] for s in data["selected"]] == ["zh.md"]


def test_json_fields(memdir, run_mem):
    _memories(memdir)
    p = run_mem("recall", "--offline", "--json", "--session", "abc", "staging deploy timeouts")
    data = json.loads(p.stdout)
    assert set(data) == {"strategy", "route", "query", "memory_dir", "selected", "skipped", "fallback_reason", "fallback_detail",
                         "model", "tokens", "rejected", "recent_tools", "session_id", "surfaced_bytes",
                         "session_bytes", "candidates", "duration_s"}
    (s,) = data["selected"]
    assert set(s) == {"path", "relpath", "type", "description", "score", "mtime", "mtime_ms", "age_days", "header",
                      "content", "truncated", "chars", "shared"}
    assert data["session_id"] == "abc" and data["candidates"] == 2
    assert data["surfaced_bytes"] == data["session_bytes"] == s["chars"]
    p = run_mem("recall", "--offline", "--jsonl", "staging deploy timeouts")
    assert len(p.stdout.splitlines()) == 1 and json.loads(p.stdout)["strategy"] == "offline"


def test_every_json_field_is_documented():
    roff = (ROOT / "man" / "mem-recall.1").read_text(encoding="utf-8")
    for field in ("strategy", "query", "memory_dir", "selected", "skipped", "fallback_reason", "fallback_detail",
                  "model", "tokens", "rejected", "recent_tools", "session_id", "surfaced_bytes", "session_bytes",
                  "candidates", "duration_s", "path", "relpath", "type", "description", "score", "mtime",
                  "mtime_ms", "age_days", "header", "content", "truncated", "chars", "state_file", "reset"):
        assert f"\\fB{field.replace('_', '_')}\\fR (" in roff, field
    for reason in recall.SKIP_REASONS:
        assert reason.replace("_", "_") in roff, reason
    for reason in ("no_credentials", "timeout", "overloaded", "connection", "status", "bad_response", "unknown_names"):
        assert reason in roff, reason


def test_reset_session(memdir, run_mem):
    _memories(memdir)
    run_mem("recall", "--offline", "--session", "s1", "staging deploy timeouts")
    p = run_mem("recall", "--offline", "--session", "s1", "staging deploy timeouts")
    assert (p.returncode, p.stdout) == (1, "")  # staging.md was surfaced; nothing else is relevant
    p = run_mem("recall", "--reset-session", "s1", "--json")
    assert p.returncode == 0
    data = json.loads(p.stdout)
    assert data["reset"] is True and data["session_id"] == "s1" and not os.path.exists(data["state_file"])
    assert run_mem("recall", "--offline", "--session", "s1", "staging deploy timeouts").returncode == 0
    p = run_mem("recall", "--reset-session", "never-seen")
    assert p.returncode == 0 and "nothing recorded" in p.stderr


def test_usage_errors(memdir, run_mem):
    for args in (["recall"], ["recall", "--limit", "0", "a b"], ["recall", "--timeout", "0", "a b"],
                 ["recall", "--reset-session", "s", "a b"], ["recall", "--json", "--jsonl", "a b"],
                 ["recall", "--max-chars", "0", "a b"]):
        p = run_mem(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stdout == ""
        assert len(p.stderr.strip().splitlines()) >= 1


def test_missing_memory_dir(tmp_path, run_mem):
    p = run_mem("recall", "--offline", "--dir", str(tmp_path / "none"), "staging deploy timeouts")
    assert p.returncode == 2  # a typo in --dir is an error (test_cli_conventions)
    assert "does not exist" in p.stderr


def test_the_memory_dir_is_never_written(memdir, run_mem):
    _memories(memdir)
    before = {p: p.stat().st_mtime_ns for p in memdir.rglob("*")}
    run_mem("recall", "--offline", "--session", "s", "staging deploy timeouts")
    assert {p: p.stat().st_mtime_ns for p in memdir.rglob("*")} == before


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_readme_hook_blocks_are_valid_settings_that_run(project_for_readme, run_mem):
    import re

    transcript = project_for_readme / "t.jsonl"
    transcript.write_text('{"role": "user", "content": "hello"}\n')
    for title, events in (("Use with Claude Code", {"SessionStart", "UserPromptSubmit", "PreToolUse", "Stop",
                                                            "PreCompact"}),
                          ("Use with qwen-code", {"SessionStart", "UserPromptSubmit"})):
        blocks = re.findall(r"```json\n(.*?)```", _readme_section(title), re.S)
        assert len(blocks) == 1, title
        settings = json.loads(blocks[0])
        assert set(settings["hooks"]) == events
        for event, groups in settings["hooks"].items():
            for group in groups:
                for hook in group["hooks"]:
                    assert hook["type"] == "command"
                    # qwen-code 0.15 reads a timeout as milliseconds: its block gives none
                    assert hook["timeout"] > 5 if "Claude" in title else "timeout" not in hook
                    argv = hook["command"].split()
                    assert argv[0].endswith("/mem") and "--hook" in argv  # an absolute path, as mem hooks install writes
                    stdin = json.dumps({"session_id": "readme", "cwd": str(project_for_readme),
                                        "hook_event_name": event, "source": group.get("matcher", "startup"),
                                        "transcript_path": str(transcript), "trigger": "manual",
                                        "prompt": "how do staging deploys go", "tool_name": "Bash",
                                        "tool_input": {"command": "git status"}})
                    p = run_mem(*argv[1:], input=stdin)
                    assert p.returncode == 0, (hook, p.stderr)
                    if event == "Stop":  # no key in the tests: one line naming it, nothing on stdout
                        assert p.stdout == "" and "ANTHROPIC_API_KEY" in p.stderr and p.stderr.count("\n") == 1
                    else:
                        assert p.stderr == "", (hook, p.stderr)


@pytest.fixture
def project_for_readme(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo


def test_team_memories_are_surfaced_wrapped_as_shared(memdir, run_mem):
    from conftest import write_memory

    write_memory(memdir, "team/deploy.md", name="deploy", type="project",
                 description="staging deploys run through the release train on thursdays",
                 body="Staging deploys go out with the Thursday release train.\n")
    r = run_mem("recall", "--offline", "--json", "when do staging deploys go out")
    assert r.returncode == 0, r.stderr
    (item,) = json.loads(r.stdout)["selected"]
    assert item["shared"] is True and item["relpath"] == "team/deploy.md"
    text = run_mem("recall", "--offline", "when do staging deploys go out").stdout
    assert '<team-memory-content source="shared">\n---\nname: deploy' in text
    assert text.rstrip().endswith("</team-memory-content>\n</system-reminder>")
