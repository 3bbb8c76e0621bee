"""The event log: every command that changes a memory directory appends one event; mem status --events shows them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import write_memory


@dataclass(frozen=True)
class Mutation:
    """A command that changes the memory directory, and the event it must leave."""

    argv: tuple[str, ...]
    command: str  # the event's "command" field
    setup: Callable[[Path, Callable], None] | None = None  # (memdir, run_mem) -> None, before the run
    created: int | None = None  # expected counts, None: not checked
    updated: int | None = None
    deleted: int | None = None


def _unindexed(memdir: Path, run_mem) -> None:
    write_memory(memdir, "a.md", name="a", description="A")


def _duplicates(memdir: Path, run_mem) -> None:
    write_memory(memdir, "a.md", name="a", description="A", body="Same body.\n")
    write_memory(memdir, "b.md", name="a", description="A", body="Same body.\n")


def _snapshot_then_change(memdir: Path, run_mem) -> None:
    _duplicates(memdir, run_mem)
    assert run_mem("dream", "--offline", "--force").returncode == 0


def _tabs_memory(memdir: Path, run_mem) -> None:
    write_memory(memdir, "tabs.md", name="Tabs", description="the user prefers tabs over spaces")
    (memdir / "MEMORY.md").write_text("- [Tabs](tabs.md) — the user prefers tabs over spaces\n")


def _restore_setup(memdir: Path, run_mem) -> None:
    _tabs_memory(memdir, run_mem)
    assert run_mem("index", "--rebuild").returncode == 0  # records the first version of tabs.md before it
    [op] = json.loads(run_mem("history", "--json", "-n", "1").stdout)
    os.environ["MEM_TEST_AT"] = op["id"]
    (memdir / "tabs.md").write_text((memdir / "tabs.md").read_text().replace("tabs over", "tabs, never"))


def _verify_setup(memdir: Path, run_mem) -> None:
    from conftest import moved_repo

    os.environ["MEM_TEST_REPO"] = str(moved_repo(memdir.parent / "repo"))
    write_memory(memdir, "slugs.md", name="slugs", description="where slugs are made", type="project",
                 body="Slugs are made in `src/util/strings.py`.\n")
    (memdir / "MEMORY.md").write_text("- [slugs](slugs.md) — slugs\n")


def _import_setup(memdir: Path, run_mem) -> None:
    other = memdir.parent / "other"
    write_memory(other, "tabs.md", name="Tabs", description="the user prefers tabs")
    (other / "MEMORY.md").write_text("- [Tabs](tabs.md) — tabs\n")
    archive = memdir.parent / "memory.tar.gz"
    r = run_mem("export", "--dir", str(other), "-o", str(archive))
    assert r.returncode == 0, r.stderr
    os.environ["MEM_TEST_ARCHIVE"] = str(archive)


def _promote_setup(memdir: Path, run_mem) -> None:
    _tabs_memory(memdir, run_mem)
    os.environ["MEM_USER_DIR"] = str(memdir.parent / "user-memory")


# ---------------------------------------------------------------------------------------------------
# MUTATING_COMMANDS: every command that writes into a memory directory. When you add one (extract,
# remember, forget, team pull...), add it here: the tests below then check that one run appends
# exactly one event naming it, and that `mem status --events` shows it. Model commands can use the
# fake_api fixture in their setup.
# ---------------------------------------------------------------------------------------------------
MUTATING_COMMANDS = {
    "index --rebuild": Mutation(("index", "--rebuild"), "index --rebuild", _unindexed, created=1),
    "log": Mutation(("log", "shipped the release"), "log", created=1),
    "dream --offline --force": Mutation(("dream", "--offline", "--force"), "dream", _duplicates),
    "undo": Mutation(("undo",), "undo", _snapshot_then_change),
    "remember": Mutation(("remember", "--type", "user", "--name", "Tabs", "--description", "prefers tabs",
                          "The user prefers tabs."), "remember", created=2, updated=0),
    "forget --yes": Mutation(("forget", "--yes", "tabs"), "forget", _tabs_memory, updated=1, deleted=1),
    "restore": Mutation(("restore", "tabs.md", "--at", "$MEM_TEST_AT"), "restore", _restore_setup, updated=1),
    "verify --fix": Mutation(("verify", "--fix", "--repo", "$MEM_TEST_REPO"), "verify", _verify_setup, updated=1),
    "import": Mutation(("import", "$MEM_TEST_ARCHIVE"), "import", _import_setup, created=2),
    "promote": Mutation(("promote", "tabs.md"), "promote", _promote_setup, updated=1, deleted=1),
}
#: Setups name what the command is run on in these variables (the runs are in this process or a child).
_SETUP_VARIABLES = ("MEM_TEST_AT", "MEM_TEST_REPO", "MEM_TEST_ARCHIVE", "MEM_USER_DIR")


def _events(run_mem) -> list[dict]:
    r = run_mem("status", "--events", "-n", "0", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", list(MUTATING_COMMANDS))
def test_each_mutating_command_appends_one_event(name, memdir, run_mem, monkeypatch):
    for var in _SETUP_VARIABLES:
        monkeypatch.setenv(var, "")  # so the setup's value is taken back after the test
    m = MUTATING_COMMANDS[name]
    if m.setup:
        m.setup(memdir, run_mem)
    before = _events(run_mem)
    r = run_mem(*(os.path.expandvars(a) for a in m.argv))
    assert r.returncode == 0, r.stderr
    after = _events(run_mem)
    assert len(after) == len(before) + 1, after[len(before):]
    event = after[-1]
    assert event["command"] == m.command and event["outcome"] == "ok"
    assert os.path.normpath(event["memory_dir"]) == str(memdir)
    for key in ("time", "created", "updated", "deleted", "strategy", "tokens", "duration_s"):
        assert key in event
    for key in ("created", "updated", "deleted"):
        want = getattr(m, key)
        if want is not None:
            assert len(event[key]) == want, event
    line = run_mem("status", "--events", "-n", "1").stdout
    assert line == f"{event['time']} {m.command} ok +{len(event['created'])} ~{len(event['updated'])} -{len(event['deleted'])}\n"


def test_events_text_json_jsonl_and_limit(memdir, run_mem):
    for i in range(3):
        assert run_mem("log", f"note {i}").returncode == 0
    write_memory(memdir, "a.md", name="a", description="A")
    assert run_mem("index", "--rebuild").returncode == 0
    lines = run_mem("status", "--events").stdout.splitlines()
    assert [ln.split(" ", 1)[1] for ln in lines] == [
        "log ok +1 ~0 -0", "log ok +0 ~1 -0", "log ok +0 ~1 -0", "index --rebuild ok +1 ~0 -0"]
    assert len(run_mem("status", "--events", "-n", "2").stdout.splitlines()) == 2
    rows = [json.loads(x) for x in run_mem("status", "--events", "--jsonl", "-n", "2").stdout.splitlines()]
    assert [r["command"] for r in rows] == ["log", "index --rebuild"]
    assert run_mem("status", "--json").returncode == 0
    status = json.loads(run_mem("status", "--json").stdout)
    assert status["last_event"]["command"] == "index --rebuild"
    assert "last change   " + lines[-1] in run_mem("status").stdout


def test_events_of_other_memory_dirs_are_not_shown(memdir, tmp_path, run_mem):
    other = tmp_path / "other"
    other.mkdir()
    assert run_mem("log", "elsewhere", "--dir", str(other)).returncode == 0
    assert run_mem("log", "here").returncode == 0
    assert [os.path.normpath(e["memory_dir"]) for e in _events(run_mem)] == [str(memdir)]


def test_no_events_yet(memdir, run_mem):
    r = run_mem("status", "--events")
    assert (r.returncode, r.stdout) == (0, "")
    assert "no events for" in r.stderr
    assert json.loads(run_mem("status", "--events", "--json").stdout) == []


def test_events_log_tolerates_garbage(memdir, run_mem):
    from mem.core.memdir.events import events_path

    assert run_mem("log", "one").returncode == 0
    with open(events_path(), "a", encoding="utf-8") as fh:
        fh.write("not json\n[1]\n")
    assert run_mem("log", "two").returncode == 0
    assert [e["command"] for e in _events(run_mem)] == ["log", "log"]


def test_a_full_log_rotates_once_and_both_generations_are_read(memdir, run_mem):
    from mem.core.memdir.events import MAX_BYTES, events_path

    path = events_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = json.dumps({"time": "2026-01-01T00:00:00.000Z", "command": "log", "memory_dir": f"{memdir}/",
                      "created": [], "updated": [], "deleted": [], "outcome": "ok", "pad": "x" * 200}) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(old * (MAX_BYTES // len(old) + 1))
    assert os.path.getsize(path) > MAX_BYTES
    assert run_mem("log", "the line that fills it").returncode == 0
    assert os.path.getsize(path + ".1") > MAX_BYTES and not os.path.exists(path)
    assert run_mem("log", "the first line of the new log").returncode == 0
    assert os.path.getsize(path) < 1000  # a fresh log
    last = _events(run_mem)[-3:]
    assert [e["time"] for e in last[:1]] == ["2026-01-01T00:00:00.000Z"]
    assert [e["command"] for e in last] == ["log", "log", "log"] and last[1]["time"] != last[0]["time"]
    rows = json.loads(run_mem("status", "--events", "-n", "2", "--json").stdout)
    assert [r["time"] for r in rows] == [last[1]["time"], last[2]["time"]]


def test_concurrent_writers_at_the_limit_lose_no_line(memdir, tmp_path):
    import subprocess
    import sys

    from mem.core.memdir.events import MAX_BYTES, events_path

    path = events_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    filler = json.dumps({"command": "filler", "memory_dir": "/elsewhere/", "pad": "y" * 300}) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(filler * (MAX_BYTES // len(filler) - 20))
    before = sum(1 for _ in open(path, encoding="utf-8"))
    code = ("import sys; from mem.core.memdir import events; from mem.core.memdir.store import MemoryDir\n"
            "for i in range(60): events.record(MemoryDir(sys.argv[1]), 'log', detail={'writer': sys.argv[2], 'i': i})\n")
    writers = [subprocess.Popen([sys.executable, "-c", code, str(memdir), str(n)], env=os.environ) for n in range(6)]
    assert all(w.wait(timeout=60) == 0 for w in writers)
    lines = []
    for name in (path + ".1", path):
        with open(name, encoding="utf-8") as fh:
            lines += fh.read().splitlines()
    assert len(lines) == before + 6 * 60  # rotated exactly once: the filler is all still there
    assert sum(1 for line in lines if '"filler"' in line) == before
    assert os.path.getsize(path) < MAX_BYTES
