"""Conventions every command keeps, checked with the real ``mem`` executable.

A cap that shortens output says so on stderr and names ``--all``; a kind of
problem has one code whichever command finds it; ``--dry-run`` exits 1 when it
would change something and 0 when it would not, as diff(1) does.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from conftest import write_memory

from mem.core.memdir.problems import NOT_INDEXED, PROBLEMS

ROOT = Path(__file__).resolve().parent.parent


# --- caps ------------------------------------------------------------------------------------------


def test_scan_says_when_it_stops_at_the_newest_200_and_all_lists_every_one(memdir, run_mem):
    for i in range(203):
        write_memory(memdir, f"m{i:03}.md", name=f"m{i}", description=f"memory {i}", mtime=1_700_000_000 + i)
    r = run_mem("scan", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == 200
    assert "newest 200 of 203" in r.stderr and "--all" in r.stderr
    r = run_mem("scan", "--all", "--json")
    assert len(json.loads(r.stdout)) == 203 and r.stderr == ""
    (memdir / "m000.md").unlink(), (memdir / "m001.md").unlink(), (memdir / "m002.md").unlink()
    r = run_mem("scan")
    assert len(r.stdout.splitlines()) == 200 and r.stderr == ""  # exactly at the cap: nothing left out, nothing said


def test_status_events_says_when_it_shows_only_the_last_ones(memdir, run_mem):
    for i in range(3):
        assert run_mem("log", f"note {i}").returncode == 0
    r = run_mem("status", "--events", "-n", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == 2 and "--all" in r.stderr
    r = run_mem("status", "--events", "--all", "--json")
    assert len(json.loads(r.stdout)) == 3 and r.stderr == ""
    r = run_mem("status", "--events", "-n", "3")
    assert len(r.stdout.splitlines()) == 3 and r.stderr == ""


def test_forget_says_when_more_match_than_it_offers(memdir, run_mem):
    for i in range(12):
        write_memory(memdir, f"zebra{i}.md", name=f"zebra {i}", description=f"zebra crossing number {i}")
    r = run_mem("forget", "--dry-run", "--offline", "--json", "zebra crossing")
    assert len(json.loads(r.stdout)["candidates"]) == 10
    assert "more than 10 memories match" in r.stderr and "--limit 20" in r.stderr, r.stderr
    r = run_mem("forget", "--dry-run", "--offline", "--json", "--limit", "12", "zebra crossing")
    assert len(json.loads(r.stdout)["candidates"]) == 12 and "match" not in r.stderr, r.stderr


# --- one name per problem kind ---------------------------------------------------------------------


def _literal_codes() -> dict[str, set[str]]:
    """Every problem code written as a literal where a check of the memory directory makes a problem, by file.

    (mem status wraps these codes with their source; team push's skip reasons are its own.)
    """
    makers = {"Problem", "IndexProblem", "Skipped"}
    found: dict[str, set[str]] = {}
    for path in (ROOT / "mem/core/memdir").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in makers:
                args = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if args and re.fullmatch(r"[a-z]+(?:-[a-z]+)*", args[0].value):
                    found.setdefault(args[0].value, set()).add(str(path.relative_to(ROOT)))
    return found


def _layout_skip_codes() -> set[str]:
    src = (ROOT / "mem/core/memdir/layout.py").read_text(encoding="utf-8")
    return set(re.findall(r'return "([a-z]+(?:-[a-z]+)+)", ', src))


def test_every_problem_code_a_check_makes_is_in_the_one_table():
    codes = _literal_codes()
    assert codes, "no problem literal found: the scan above is broken"
    unknown = {c: files for c, files in codes.items() if c not in PROBLEMS}
    assert not unknown, f"problem codes outside mem.core.memdir.problems.PROBLEMS: {unknown}"
    assert _layout_skip_codes() <= set(PROBLEMS)


@pytest.mark.parametrize("command", ["scan", "index"])
def test_every_code_a_command_reports_is_documented_in_its_man_page(command):
    page = (ROOT / "man/src" / f"mem-{command}.json-fields").read_text(encoding="utf-8")
    documented = {m.replace("\\-", "-") for m in re.findall(r"^\.TP\n\\fB([a-z\\-]+)\\fR\n", page, re.M)}
    emitted = {c for c, (_, commands) in PROBLEMS.items() if command in commands}
    assert emitted <= documented, emitted - documented


def test_a_file_missing_from_the_index_has_one_name_in_scan_index_and_status(memdir, run_mem):
    write_memory(memdir, "listed.md", name="listed", description="in the index")
    write_memory(memdir, "orphan.md", name="orphan", description="not in the index")
    (memdir / "MEMORY.md").write_text("- [listed](listed.md) — in the index\n", encoding="utf-8")
    scan = run_mem("scan", "--check", "--json")
    index = run_mem("index", "--check", "--json")
    status = run_mem("status", "--json")
    assert scan.returncode == index.returncode == 1, (scan.stderr, index.stderr)
    by_scan = {h["relpath"]: [w["code"] for w in h["warnings"]] for h in json.loads(scan.stdout)}
    assert by_scan["orphan.md"] == [NOT_INDEXED]
    assert [(p["code"], p["relpath"]) for p in json.loads(index.stdout)] == [(NOT_INDEXED, "orphan.md")]
    problems = json.loads(status.stdout)["problems"]
    assert {p["code"] for p in problems} == {NOT_INDEXED}, problems
    assert "unindexed" not in scan.stdout + index.stdout + status.stdout


# --- --dry-run exits 1 when it would change something ----------------------------------------------


def test_index_rebuild_dry_run_exits_1_with_changes_pending_and_0_when_up_to_date(memdir, run_mem):
    write_memory(memdir, "a.md", name="a", description="first")
    r = run_mem("index", "--rebuild", "--dry-run")
    assert r.returncode == 1 and "+- [" in r.stdout, (r.returncode, r.stdout, r.stderr)
    assert not (memdir / "MEMORY.md").exists()
    assert run_mem("index", "--rebuild").returncode == 0
    r = run_mem("index", "--rebuild", "--dry-run")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    r = run_mem("index", "--rebuild", "--dry-run", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["changed"] is False


def test_dream_dry_run_exits_1_when_it_would_change_and_says_would_in_plain_plurals(memdir, run_mem):
    for rel in ("dup_a.md", "dup_b.md"):
        write_memory(memdir, rel, name="same", description="same memory", body="The very same body.\n")
    (memdir / "MEMORY.md").write_text("- [dup a](dup_a.md) — same\n- [dup b](dup_b.md) — same\n", encoding="utf-8")
    before = sorted(os.listdir(memdir))
    r = run_mem("dream", "--offline", "--force", "--dry-run")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert sorted(os.listdir(memdir)) == before
    assert "would merge 1 exact duplicate file in 1 group; would repair MEMORY.md" in r.stderr
    assert "(s)" not in r.stderr
    assert run_mem("dream", "--offline", "--force").returncode == 0
    r = run_mem("dream", "--offline", "--force", "--dry-run")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    assert "would merge 0 exact duplicate files in 0 groups; MEMORY.md needs no repair" in r.stderr
    assert "nothing would change" in r.stderr


def test_forget_dry_run_exits_1_when_it_would_forget_and_0_when_nothing_matches(memdir, run_mem):
    write_memory(memdir, "tabs.md", name="tabs", description="tabs over spaces in this repo")
    (memdir / "MEMORY.md").write_text("- [tabs](tabs.md) — tabs\n", encoding="utf-8")
    r = run_mem("forget", "--dry-run", "--offline", "tabs over spaces")
    assert r.returncode == 1 and "tabs.md" in r.stdout, (r.stdout, r.stderr)
    assert (memdir / "tabs.md").exists()
    r = run_mem("forget", "--dry-run", "--offline", "kubernetes helm charts")
    assert r.returncode == 0 and "nothing would be forgotten" in r.stderr, (r.stdout, r.stderr)
    r = run_mem("forget", "--yes", "--offline", "kubernetes helm charts")
    assert r.returncode == 1  # without --dry-run, no match is still "not found"


def test_undo_dry_run_exits_1_when_there_is_something_to_take_back(memdir, run_mem):
    assert run_mem("log", "a note").returncode == 0
    r = run_mem("undo", "--dry-run")
    assert r.returncode == 1 and r.stdout, (r.stdout, r.stderr)
    assert run_mem("undo").returncode == 0


# --- --all-projects visits every layout mem path knows ---------------------------------------------


@pytest.fixture
def two_clients(isolated_env) -> dict[str, Path]:
    """One project with memory in Claude Code's layout, one in qwen-code's, both mentioning zebras."""
    dirs = {"claude": isolated_env / ".claude/projects/-srv-alpha/memory",
            "qwen": isolated_env / ".qwen/projects/-srv-beta/memory"}
    for client, d in dirs.items():
        write_memory(d, f"{client}_zebra.md", name=f"{client} zebra", description=f"zebras in {client}")
        (d / "MEMORY.md").write_text(f"- [{client}]({client}_zebra.md) — zebras\n", encoding="utf-8")
    return dirs


def test_grep_all_projects_covers_claude_and_qwen_and_layout_narrows(two_clients, run_mem, tmp_path):
    r = run_mem("grep", "-l", "--all-projects", "zebras", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    listed = r.stdout.splitlines()
    assert any(line.endswith("-srv-alpha/memory/claude_zebra.md") for line in listed), listed
    assert any(line.endswith("-srv-beta/memory/qwen_zebra.md") for line in listed), listed
    for layout, other in (("claude", "qwen"), ("qwen", "claude")):
        r = run_mem("grep", "-l", "--all-projects", "--layout", layout, "zebras", cwd=str(tmp_path))
        assert r.returncode == 0 and f"{layout}_zebra.md" in r.stdout and f"{other}_zebra" not in r.stdout, r


def test_dream_all_projects_covers_claude_and_qwen_and_layout_narrows(two_clients, run_mem_forked, tmp_path):
    run_mem = run_mem_forked  # a finished dream's lock names its process: one process cannot dream twice in a row
    r = run_mem("dream", "--all-projects", "--offline", "--force", "-v", "--json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(d["memory_dir"].rstrip(os.sep) for d in json.loads(r.stdout)) == sorted(map(str, two_clients.values()))
    r = run_mem("dream", "--all-projects", "--offline", "--force", "--layout", "qwen", "--json", cwd=str(tmp_path))
    assert [d["memory_dir"].rstrip(os.sep) for d in json.loads(r.stdout)] == [str(two_clients["qwen"])]


# --- session status from the session id alone -----------------------------------------------------


def test_session_status_finds_the_transcript_by_session_id(run_mem, tmp_path, isolated_env):
    from mem.core.paths import sanitize_path

    fixture = ROOT / "tests/fixtures/session/06-compact.jsonl"
    sid = "63ec8da7-3d1c-4d82-927e-992a0039be2f"
    folder = isolated_env / ".claude/projects" / sanitize_path(str(tmp_path))
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(fixture.read_bytes())
    r = run_mem("session", "status", "--session", sid, "--project", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    by_id = json.loads(r.stdout)
    r = run_mem("session", "status", "--transcript", str(fixture), "--project", str(tmp_path), "--json")
    assert by_id == json.loads(r.stdout)
    r = run_mem("session", "status", "--session", "0000-none", "--project", str(tmp_path))
    assert r.returncode == 1 and "no transcript for session 0000-none" in r.stderr and "--transcript" in r.stderr
    r = run_mem("session", "status", "--project", str(tmp_path))
    assert r.returncode == 2 and "--session" in r.stderr


# --- daily logs: listed as Claude Code's own scan lists them ---------------------------------------


def test_daily_logs_are_listed_by_scan_as_claude_code_lists_them_and_never_checked(memdir, run_mem, fake_api):
    write_memory(memdir, "topic.md", name="topic", description="a topic")
    (memdir / "MEMORY.md").write_text("- [topic](topic.md) — a topic\n", encoding="utf-8")
    assert run_mem("log", "deploys go out on Tuesdays").returncode == 0
    rels = [h["relpath"] for h in json.loads(run_mem("scan", "--json").stdout)]
    assert sorted(rels)[0].startswith("logs/") and "topic.md" in rels
    r = run_mem("scan", "--check")
    assert r.returncode == 0 and "logs/" not in r.stdout, (r.stdout, r.stderr)
    log = next(rel for rel in rels if rel.startswith("logs/"))
    fake_api.reply_text(json.dumps({"selected_memories": [log]}))
    r = run_mem("recall", "--always-ask", "which day do deploys go out")
    assert log in json.dumps(fake_api.requests[0]["body"]["messages"])  # the selector is shown the log, as Claude's is
    assert "deploys go out on Tuesdays" in r.stdout, (r.stdout, r.stderr)


def test_hooks_install_dry_run_keeps_the_same_rule(run_mem, isolated_env):
    r = run_mem("hooks", "install", "--dry-run")
    assert r.returncode == 1 and not (isolated_env / ".claude/settings.json").exists(), r.stderr
    assert run_mem("hooks", "install").returncode == 0
    r = run_mem("hooks", "install", "--dry-run")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
