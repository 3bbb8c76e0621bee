"""Per-session state: nothing surfaced twice, 60 KiB and no more, reset, safe under concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

from conftest import write_memory
from mem.core.memdir.store import MemoryDir
from mem.core import recall
from mem.core.jscompat import len16
from mem.core.memdir.state import state_dir


def _state_files(memdir):
    d = os.path.join(state_dir(MemoryDir(memdir)), "recall-sessions")
    return sorted(f for f in os.listdir(d) if f.endswith(".json")) if os.path.isdir(d) else []


def test_a_memory_is_surfaced_once_per_session(memdir):
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    first = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert [s.relpath for s in first.selected] == ["a.md"]
    again = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert again.selected == [] and again.skipped == "all_surfaced"
    other = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s2")
    assert [s.relpath for s in other.selected] == ["a.md"]
    no_session = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True)
    assert [s.relpath for s in no_session.selected] == ["a.md"]


def test_state_lives_in_the_state_dir_not_the_memory_dir(memdir):
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    before = sorted(os.listdir(memdir))
    recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert sorted(os.listdir(memdir)) == before
    assert _state_files(memdir) == ["s1.json"]
    data = json.loads(open(recall.session_file(MemoryDir(memdir), "s1"), encoding="utf-8").read())
    assert data["session_id"] == "s1"
    assert data["surfaced"][0]["relpath"] == "a.md"
    assert data["surfaced_chars"] == len16((memdir / "a.md").read_text())


def test_sixty_kib_then_nothing(memdir):
    # 20 memories of about 3.8 KB on 20 different subjects: the session's budget runs out first.
    for i in range(20):
        body = "\n".join(f"note {j} " + "y" * 66 for j in range(50)) + "\n"
        write_memory(memdir, f"n{i:02d}.md", name=f"topic-{i}", description=f"zork{i} and quux{i} procedures",
                     body=body)
    total = 0
    for i in range(20):
        r = recall.recall(MemoryDir(memdir), f"how do the zork{i} quux{i} procedures work", offline=True, session_id="big")
        if r.skipped:
            break
        assert [s.relpath for s in r.selected] == [f"n{i:02d}.md"]
        total += r.surfaced_bytes
        assert r.session_bytes == total
    assert r.skipped == "budget_exhausted" and r.selected == []
    # checked before each recall, as Claude does: the last one crossed the line, the next got nothing
    assert total >= recall.MAX_SESSION_BYTES
    assert total - 4200 < recall.MAX_SESSION_BYTES
    assert r.session_bytes == total


def test_the_budget_counts_utf16_units(memdir, monkeypatch):
    monkeypatch.setattr(recall, "MAX_SESSION_BYTES", 100)
    write_memory(memdir, "e.md", name="staging-deploy-emoji", description="staging deploy emoji", body="😀" * 40 + "\n")
    write_memory(memdir, "f.md", name="other", description="staging deploy emoji notes", body="x\n")
    r = recall.recall(MemoryDir(memdir), "staging deploy emoji", offline=True, session_id="u", limit=1)
    content = r.selected[0].content
    assert r.session_bytes == len(content) + content.count("😀")  # two units per emoji
    assert r.session_bytes >= 100
    assert recall.recall(MemoryDir(memdir), "staging deploy emoji", offline=True, session_id="u").skipped == "budget_exhausted"


def test_reset_forgets_a_session(memdir):
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    path, existed = recall.reset_session(MemoryDir(memdir), "s1")
    assert existed and not os.path.exists(path)
    assert recall.reset_session(MemoryDir(memdir), "s1")[1] is False
    r = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert [s.relpath for s in r.selected] == ["a.md"]


def test_odd_session_ids_stay_inside_the_state_dir(memdir):
    base = os.path.join(state_dir(MemoryDir(memdir)), "recall-sessions")
    for sid in ("../../etc/passwd", "a/b", ".hidden", "x" * 300, "名前", "-"):
        path = recall.session_file(MemoryDir(memdir), sid)
        assert os.path.dirname(path) == base, sid
        assert not os.path.basename(path).startswith(".")
    assert recall.session_file(MemoryDir(memdir), "a/b") != recall.session_file(MemoryDir(memdir), "a-b")
    uuid = "7b81b00d-454e-470b-8bbf-c40d037b7677"
    assert recall.session_file(MemoryDir(memdir), uuid).endswith(f"{uuid}.json")


def test_a_damaged_state_file_starts_the_session_over(memdir):
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    path = recall.session_file(MemoryDir(memdir), "s1")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("{not json")
    r = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert [s.relpath for s in r.selected] == ["a.md"]
    assert json.loads(open(path).read())["surfaced"][0]["relpath"] == "a.md"


def test_concurrent_hooks_of_one_session_never_repeat_or_corrupt(memdir, mem_exe):
    for i in range(6):
        write_memory(memdir, f"m{i}.md", name=f"m{i}", description=f"staging deploy rule number {i}", body=f"rule {i}\n")
    outputs: list[str] = []

    def run():
        p = subprocess.run([mem_exe, "recall", "--offline", "--json", "--limit", "1", "--session", "race",
                            "staging deploy rule number"], capture_output=True, text=True, env=dict(os.environ))
        outputs.append(p.stdout)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    surfaced = [s["relpath"] for out in outputs for s in json.loads(out)["selected"]]
    assert len(surfaced) == 6 and len(set(surfaced)) == 6
    state = json.loads(open(recall.session_file(MemoryDir(memdir), "race")).read())
    assert sorted(s["relpath"] for s in state["surfaced"]) == sorted(surfaced)


def test_a_session_leaves_the_cached_index_whole(memdir):
    for i in range(3):
        write_memory(memdir, f"m{i}.md", name=f"m{i}", description=f"staging deploy rule number {i}", body="x\n")
    recall.recall(MemoryDir(memdir), "staging deploy rule number", offline=True, session_id="s", limit=1)
    cache = os.path.join(state_dir(MemoryDir(memdir)), recall.INDEX_CACHE)
    before = os.stat(cache).st_mtime_ns
    r = recall.recall(MemoryDir(memdir), "staging deploy rule number", offline=True, session_id="s", limit=1)
    assert len(r.selected) == 1 and r.candidates == 2
    assert os.stat(cache).st_mtime_ns == before


def test_the_session_state_is_written_without_waiting_for_the_disk(memdir, monkeypatch):
    # The state is written on every prompt that surfaces something; an fsync pair costs ~10 ms on
    # a busy disk. A state lost with the machine only lets a memory surface again, so it is not
    # synced, and it still lands whole (temp file + rename) and is read back by the next prompt.
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    recall.recall(MemoryDir(memdir), "unrelated words", offline=True, session_id="warm")  # the caches, synced
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    first = recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1")
    assert [s.relpath for s in first.selected] == ["a.md"] and synced == []
    assert json.loads(open(recall.session_file(MemoryDir(memdir), "s1"), encoding="utf-8").read())["surfaced"]
    assert recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="s1").selected == []


def test_old_sessions_are_pruned_at_most_once_a_day(memdir):
    # A session's first prompt removes the states untouched for 30 days; the scan stats every
    # session's file (~1 ms for a month of them), so it runs once a day, not on every new session.
    write_memory(memdir, "a.md", name="a", description="staging deploy timeouts", body="x\n")
    folder = os.path.dirname(recall.session_file(MemoryDir(memdir), "x"))
    os.makedirs(folder, exist_ok=True)
    month_ago = time.time() - 31 * 86400

    def old_session(name):
        path = os.path.join(folder, name + ".json")
        with open(path, "w") as fh:
            fh.write("{}")
        os.utime(path, (month_ago, month_ago))
        return path

    first = old_session("old-1")
    recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="new-1")
    assert not os.path.exists(first)
    second = old_session("old-2")
    recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="new-2")
    assert os.path.exists(second)  # pruned today already
    stamp = os.path.join(folder, recall.sessions.PRUNED_STAMP)
    os.utime(stamp, (time.time() - 2 * 86400,) * 2)
    recall.recall(MemoryDir(memdir), "staging deploy timeouts", offline=True, session_id="new-3")
    assert not os.path.exists(second)
    assert _state_files(memdir) == ["new-1.json", "new-2.json", "new-3.json"]
