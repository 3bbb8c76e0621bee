"""mem log: append-only daily logs."""

from __future__ import annotations

import json
import time

import pytest
from helpers import forked

from mem.core.memdir import dailylog, layout
from mem.core.memdir.store import MemoryDir
from mem.core.errors import SecretError, UsageError


def test_path_uses_local_date():
    t = time.mktime((2026, 3, 9, 23, 59, 0, 0, 0, -1))
    assert layout.daily_log(t) == "logs/2026/03/2026-03-09.md"


def test_entries_append_and_never_rewrite(memdir):
    t = time.mktime((2026, 3, 9, 8, 5, 0, 0, 0, -1))
    e1 = dailylog.append(MemoryDir(str(memdir)), "first thing", now=t)
    e2 = dailylog.append(MemoryDir(str(memdir)), "second\nwith detail\n\nand more", now=t + 60)
    assert e1.created and not e2.created
    text = (memdir / "logs/2026/03/2026-03-09.md").read_text()
    assert text == "- 08:05 first thing\n- 08:06 second\n  with detail\n\n  and more\n"


def test_empty_and_secret_refused(memdir):
    with pytest.raises(UsageError):
        dailylog.append(MemoryDir(str(memdir)), "  \n ")
    with pytest.raises(SecretError):
        dailylog.append(MemoryDir(str(memdir)), "token " + "glpat-" + "a" * 20)
    assert not (memdir / "logs").exists()


def test_concurrent_appends_lose_nothing(memdir):
    # twelve processes at once (forked from this one: started together, no Python start-up to stagger them)
    procs = [forked.Forked(["log", f"entry {i}"]) for i in range(12)]
    assert all(p.wait().returncode == 0 for p in procs)
    files = list((memdir / "logs").rglob("*.md"))
    text = "".join(f.read_text() for f in files)
    assert sorted(int(line.rsplit(" ", 1)[1]) for line in text.splitlines()) == list(range(12))


def test_cli_stdin_json_and_scan_check_ignores_logs(run_mem, memdir):
    r = run_mem("log", "-", "--json", input="from stdin\n")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["relpath"].startswith("logs/") and doc["entry"].endswith(" from stdin\n")
    assert run_mem("scan", "--check").returncode == 0


def test_cli_secret_exits_4_without_echo(run_mem, memdir):
    token = "npm_" + "b" * 36
    r = run_mem("log", f"publish with {token}")
    assert r.returncode == 4 and token not in r.stderr and "npm-access-token" in r.stderr
