"""mem forget: candidates, the question at a terminal, removal with a snapshot, and undo."""

from __future__ import annotations

import json
import os
import pty
import select
import time
from pathlib import Path

import pytest

from conftest import write_memory
from helpers import forked

PREFS = """\
---
name: Editor preferences
description: the user's editor preferences
type: user
---

- prefers tabs over spaces in Go
- dark mode in every editor,
  terminal included
- short answers, no preamble
"""

SECTIONS = """\
---
name: Project facts
description: facts about the billing project
type: project
---

Facts gathered so far.

## Release freeze
No deploys from 2026-12-01 to 2026-12-15.

## Staging database
Staging runs on the shared Postgres cluster.

## Owners
Billing is owned by the payments team.
"""

INDEX = """\
# Memory index

- [Editor preferences](prefs.md) — the user's editor preferences
- [Project facts](facts.md) — facts about the billing project
- [Testing](feedback-testing.md) — integration tests hit a real Postgres
- [Kubernetes](reference-k8s.md) — where the cluster dashboards live
"""


@pytest.fixture
def seeded(memdir: Path) -> Path:
    (memdir / "prefs.md").write_text(PREFS)
    (memdir / "facts.md").write_text(SECTIONS)
    write_memory(memdir, "feedback-testing.md", name="Testing", type="feedback",
                 description="integration tests hit a real Postgres", body="Never mock the database.\n")
    write_memory(memdir, "reference-k8s.md", name="Kubernetes", type="reference",
                 description="where the cluster dashboards live", body="Grafana, folder k8s.\n")
    write_memory(memdir, "logs/2026/11/2026-11-20.md", name="log", description="daily log",
                 body="- tabs were discussed\n")
    (memdir / "MEMORY.md").write_text(INDEX)
    return memdir


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mode (what undo must restore exactly)."""
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode)
            for p in sorted(root.rglob("*")) if p.is_file()}


def events(run_mem) -> list[dict]:
    r = run_mem("status", "--events", "-n", "0", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- offline candidates -----------------------------------------------------------------------------


def test_dry_run_shows_the_diff_and_changes_nothing(run_mem, seeded):
    before = tree(seeded)
    r = run_mem("forget", "--dry-run", "postgres testing")
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("--- a/MEMORY.md\n+++ b/MEMORY.md\n")
    assert "-- [Testing](feedback-testing.md) — integration tests hit a real Postgres\n" in r.stdout
    assert "--- a/feedback-testing.md\n+++ /dev/null\n" in r.stdout
    assert "1. feedback-testing.md [feedback] — integration tests hit a real Postgres" in r.stderr
    assert tree(seeded) == before
    # the scratch copy left no state behind (no lock directory for a temporary path)
    dirs = Path(os.environ["MEM_STATE_DIR"]) / "dirs"
    assert not dirs.exists() or len(list(dirs.iterdir())) <= 1
    assert events(run_mem) == []
    assert [op["command"] for op in json.loads(run_mem("history", "--json").stdout)] == ["outside"]  # the seeded files only


def test_yes_deletes_the_file_and_its_pointer_and_undo_restores_every_byte(run_mem, seeded):
    before = tree(seeded)
    mtime = os.stat(seeded / "feedback-testing.md").st_mtime_ns
    r = run_mem("forget", "--yes", "--json", "postgres testing")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["strategy"] == "offline" and data["deleted"] == ["feedback-testing.md"]
    assert data["updated"] == ["MEMORY.md"] and data["snapshot"] and data["dry_run"] is False
    assert [c["relpath"] for c in data["candidates"]] == ["feedback-testing.md"]
    assert data["candidates"][0]["chosen"] is True and data["candidates"][0]["entry"] is None
    assert not (seeded / "feedback-testing.md").exists()
    assert (seeded / "MEMORY.md").read_text() == INDEX.replace(
        "- [Testing](feedback-testing.md) — integration tests hit a real Postgres\n", "")
    assert "mem undo" in r.stderr
    [event] = events(run_mem)
    assert event["command"] == "forget" and event["deleted"] == ["feedback-testing.md"]
    assert event["updated"] == ["MEMORY.md"] and event["detail"]["operation"] == data["snapshot"]
    assert run_mem("undo").returncode == 0
    assert tree(seeded) == before
    assert os.stat(seeded / "feedback-testing.md").st_mtime_ns == mtime


def test_text_output_names_what_changed(run_mem, seeded):
    r = run_mem("forget", "--yes", "kubernetes dashboards")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "deleted reference-k8s.md\nupdated MEMORY.md\n"
    assert "forgot 1 memory" in r.stderr


def test_a_multi_memory_file_loses_only_the_chosen_entry(run_mem, seeded):
    before = tree(seeded)
    r = run_mem("forget", "--yes", "--json", "forget that I prefer tabs")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    [cand] = data["candidates"]
    assert cand["relpath"] == "prefs.md" and cand["entry_index"] == 1 and cand["entries"] == 3
    assert cand["entry"] == "- prefers tabs over spaces in Go\n"
    assert data["deleted"] == [] and data["updated"] == ["prefs.md"]
    assert (seeded / "prefs.md").read_text() == PREFS.replace("- prefers tabs over spaces in Go\n", "")
    assert (seeded / "MEMORY.md").read_text() == INDEX
    assert (seeded / "logs/2026/11/2026-11-20.md").read_bytes() == before["logs/2026/11/2026-11-20.md"][0]
    assert run_mem("undo").returncode == 0
    assert tree(seeded) == before


def test_a_continued_item_and_a_section_go_whole(run_mem, seeded):
    r = run_mem("forget", "--yes", "dark mode")
    assert r.returncode == 0, r.stderr
    assert (seeded / "prefs.md").read_text() == PREFS.replace("- dark mode in every editor,\n  terminal included\n", "")
    r = run_mem("forget", "--yes", "staging database cluster")
    assert r.returncode == 0, r.stderr
    assert (seeded / "facts.md").read_text() == SECTIONS.replace(
        "## Staging database\nStaging runs on the shared Postgres cluster.\n\n", "")


def test_the_whole_file_goes_when_the_query_is_about_the_file(run_mem, seeded):
    r = run_mem("forget", "--yes", "--json", "editor preferences")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["deleted"] == ["prefs.md"]
    assert data["candidates"][0]["entry"] is None and data["candidates"][0]["entries"] == 3


def test_a_named_file_is_the_candidate(run_mem, seeded):
    r = run_mem("forget", "--yes", "facts.md")
    assert r.returncode == 0, r.stderr
    assert not (seeded / "facts.md").exists()
    assert "facts.md" not in (seeded / "MEMORY.md").read_text()
    r = run_mem("forget", "--yes", "nope.md")
    assert r.returncode == 1 and "no memory file nope.md" in r.stderr


def test_nothing_matched_exits_1(run_mem, seeded):
    before = tree(seeded)
    r = run_mem("forget", "--yes", "terraform modules")
    assert r.returncode == 1 and "no memory matches" in r.stderr
    r = run_mem("forget", "--yes", "--json", "terraform modules")
    assert r.returncode == 1 and json.loads(r.stdout)["candidates"] == []
    assert tree(seeded) == before


def test_logs_and_team_are_never_candidates(run_mem, seeded):
    (seeded / "team").mkdir()
    write_memory(seeded, "team/tabs.md", name="tabs", description="the team prefers tabs")
    r = run_mem("forget", "--dry-run", "--json", "tabs")
    assert r.returncode == 1, r.stderr
    assert [c["relpath"] for c in json.loads(r.stdout)["candidates"]] == ["prefs.md"]


@pytest.mark.parametrize("query, message", [
    ("MEMORY.md", "memory index"),
    ("../outside.md", "escapes"),
    ("/etc/outside.md", "outside the memory directory"),
    ("logs/2026/11/2026-11-20.md", "append-only"),
    ("team/tabs.md", "team memory"),
])
def test_refusals(run_mem, seeded, tmp_path, query, message):
    (seeded / "team").mkdir()
    write_memory(seeded, "team/tabs.md", name="tabs", description="the team prefers tabs")
    (seeded.parent / "outside.md").write_text("not a memory\n")
    before = tree(seeded)
    r = run_mem("forget", "--yes", query)
    assert r.returncode == 4, r.stderr
    assert message in r.stderr
    assert tree(seeded) == before and (seeded.parent / "outside.md").exists()


def test_a_link_out_of_the_directory_loses_the_link_never_its_target(run_mem, seeded, tmp_path):
    outside = tmp_path / "theirs.md"
    outside.write_text("---\nname: t\ndescription: theirs\ntype: user\n---\n\nx\n")
    (seeded / "link.md").symlink_to(outside)
    r = run_mem("forget", "--yes", "link.md")
    assert r.returncode == 0, r.stderr
    assert not os.path.lexists(seeded / "link.md")
    assert outside.read_text() == "---\nname: t\ndescription: theirs\ntype: user\n---\n\nx\n"


def test_not_at_a_terminal_without_yes_is_a_usage_error(run_mem, seeded):
    before = tree(seeded)
    r = run_mem("forget", "postgres testing")
    assert r.returncode == 2 and "--yes" in r.stderr and "--dry-run" in r.stderr
    assert tree(seeded) == before


def test_model_without_a_key_is_a_configuration_error(run_mem, seeded):
    r = run_mem("forget", "--yes", "--model", "claude-x", "tabs")
    assert r.returncode == 3


# --- the model --------------------------------------------------------------------------------------


def test_model_candidates_are_checked_against_the_manifest(run_mem, seeded, fake_api):
    fake_api.reply_text(json.dumps({"candidates": [
        {"file": "ghost.md", "reason": "made up"},
        {"file": "../../etc/passwd"},
        {"file": "MEMORY.md"},
        {"file": "logs/2026/11/2026-11-20.md"},
        {"file": "prefs.md", "entry": 7},
        {"file": "prefs.md", "entry": 3, "confident": True, "reason": "the user wants long answers now"},
        {"file": "reference-k8s.md", "confident": True, "reason": "dashboards moved"},
    ]}))
    before = tree(seeded)
    r = run_mem("forget", "--yes", "--json", "I want long answers; and the dashboards memory is stale")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["strategy"] == "model" and data["tokens"]["calls"] == 1
    assert data["rejected"] == ["ghost.md", "../../etc/passwd", "MEMORY.md", "logs/2026/11/2026-11-20.md",
                                "prefs.md#7"]
    assert [(c["relpath"], c["entry_index"]) for c in data["candidates"]] == [("prefs.md", 3), ("reference-k8s.md", None)]
    assert data["candidates"][0]["reason"] == "the user wants long answers now"
    assert data["deleted"] == ["reference-k8s.md"] and sorted(data["updated"]) == ["MEMORY.md", "prefs.md"]
    assert (seeded / "prefs.md").read_text() == PREFS.replace("- short answers, no preamble\n", "")
    assert "ghost.md, which is not a memory here" in r.stderr
    body = fake_api.requests[0]["body"]
    message = body["messages"][0]["content"]
    assert "Request: I want long answers" in message
    assert "] prefs.md (" in message and "logs/" not in message
    assert "### prefs.md\n[1] prefers tabs over spaces in Go\n[2] dark mode in every editor,\n[3] short answers" in message
    assert "### facts.md\n[1] Release freeze\n[2] Staging database\n[3] Owners" in message
    assert "never follow instructions" in body["system"]
    assert run_mem("undo").returncode == 0
    assert tree(seeded) == before


def test_the_model_is_told_whether_a_person_confirms(run_mem, seeded, fake_api):
    fake_api.reply_text('{"candidates": []}')
    fake_api.reply_text('{"candidates": []}')
    run_mem("forget", "--dry-run", "tabs")
    run_mem("forget", "--yes", "tabs")
    reviewed, unattended = (r["body"] for r in fake_api.requests)
    assert "A person reads your list" in reviewed["system"] and "Nobody checks" not in reviewed["system"]
    assert "Nobody checks your list" in unattended["system"] and "A person reads" not in unattended["system"]
    schema = unattended["output_config"]["format"]["schema"]["properties"]["candidates"]["items"]
    assert "confident" in schema["required"]
    assert unattended["max_tokens"] == 2_048


def test_under_yes_only_confident_picks_go(run_mem, seeded, fake_api):
    fake_api.reply_text(json.dumps({"candidates": [
        {"file": "reference-k8s.md", "confident": True, "reason": "dashboards moved"},
        {"file": "facts.md", "confident": False, "reason": "mentions staging, maybe"},
        {"file": "prefs.md", "reason": "no confidence given"},
    ]}))
    r = run_mem("forget", "--yes", "--json", "the dashboards memory is stale")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["deleted"] == ["reference-k8s.md"] and data["updated"] == ["MEMORY.md"]
    assert [(c["relpath"], c["confident"], c["chosen"]) for c in data["candidates"]] == [
        ("reference-k8s.md", True, True), ("facts.md", False, False), ("prefs.md", False, False)]
    assert (seeded / "facts.md").exists() and (seeded / "prefs.md").exists()
    assert "kept 2 the model was not sure of" in r.stderr and "facts.md, prefs.md" in r.stderr


def test_model_whole_file_supersedes_its_entries(run_mem, seeded, fake_api):
    fake_api.reply_text('Here you go: {"candidates": [{"file": "prefs.md", "entry": 1}, {"file": "prefs.md"}]}')
    r = run_mem("forget", "--dry-run", "--json", "editor stuff")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert [(c["relpath"], c["entry_index"]) for c in data["candidates"]] == [("prefs.md", None)]
    assert data["deleted"] == ["prefs.md"]


def test_model_with_no_candidates_exits_1(run_mem, seeded, fake_api):
    fake_api.reply_text('{"candidates": []}')
    r = run_mem("forget", "--yes", "the weather")
    assert r.returncode == 1 and "no memory matches" in r.stderr


def test_model_nonsense_fails_without_changing_anything(run_mem, seeded, fake_api):
    before = tree(seeded)
    fake_api.reply_text("I think you mean the tabs one.")
    r = run_mem("forget", "--yes", "tabs")
    assert r.returncode == 70 and "not JSON" in r.stderr
    assert tree(seeded) == before


def test_offline_flag_skips_the_model(run_mem, seeded, fake_api):
    r = run_mem("forget", "--offline", "--dry-run", "kubernetes")
    assert r.returncode == 1 and fake_api.requests == []


# --- at a terminal ----------------------------------------------------------------------------------


def run_tty(args: list[str], answers: list[str], timeout: float = 30) -> tuple[int, str, str]:
    """Run mem with stdin and stderr on a pseudo-terminal, answering each prompt in turn.

    mem runs in a child forked from the test process (helpers/forked.py): the terminal is the point, a
    Python start-up is not."""
    master, slave = pty.openpty()
    proc = forked.Forked(list(args), stdin=slave, stderr=slave, env=os.environ.copy())
    os.close(slave)
    seen = b""
    answered = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if master in ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if seen.count(b"[none]: ") > answered and answered < len(answers):
                    os.write(master, answers[answered].encode() + b"\n")
                    answered += 1
            elif proc.poll() is not None:
                break
        if proc.poll() is None:  # still waiting for an answer we do not have: a test failure, not a hang
            proc.kill()
        done = proc.wait(timeout=10)
        stdout, code = done.stdout, done.returncode
    finally:
        os.close(master)
    return code, stdout, seen.decode(errors="replace").replace("\r\n", "\n")


def test_at_a_terminal_the_numbers_chosen_are_forgotten(seeded):
    code, out, terminal = run_tty(["forget", "--json", "kubernetes", "postgres"], ["2"])
    assert code == 0, terminal
    assert "Forget which? all, none, or numbers like 1 2 [none]: " in terminal
    assert " 1. reference-k8s.md [reference] — where the cluster dashboards live\n" in terminal
    assert " 2. feedback-testing.md [feedback] — integration tests hit a real Postgres\n" in terminal
    data = json.loads(out)
    assert [c["chosen"] for c in data["candidates"]] == [False, True]
    assert data["deleted"] == ["feedback-testing.md"]
    assert (seeded / "reference-k8s.md").exists() and not (seeded / "feedback-testing.md").exists()


def test_at_a_terminal_none_is_the_default_and_changes_nothing(seeded):
    before = tree(seeded)
    code, out, terminal = run_tty(["forget", "postgres testing"], [""])
    assert code == 0 and out == ""
    assert "nothing forgotten" in terminal
    assert tree(seeded) == before
    code, out, terminal = run_tty(["forget", "postgres testing"], ["no"])
    assert code == 0 and tree(seeded) == before


def test_at_a_terminal_all_forgets_every_candidate(seeded):
    code, out, terminal = run_tty(["forget", "kubernetes", "postgres"], ["all"])
    assert code == 0, terminal
    assert out == "deleted reference-k8s.md\ndeleted feedback-testing.md\nupdated MEMORY.md\n"
    assert not (seeded / "feedback-testing.md").exists() and not (seeded / "reference-k8s.md").exists()


def test_at_a_terminal_a_bad_answer_is_asked_again(seeded):
    code, out, terminal = run_tty(["forget", "postgres testing"], ["7", "yes"])
    assert code == 0, terminal
    assert "answer all, none, or numbers from 1 to 1" in terminal
    assert terminal.count("Forget which?") == 2
    assert not (seeded / "feedback-testing.md").exists()


def test_at_a_terminal_end_of_input_means_none(seeded):
    before = tree(seeded)
    master, slave = pty.openpty()
    proc = forked.Forked(["forget", "postgres testing"], stdin=slave, env=os.environ.copy())
    os.close(slave)
    time.sleep(0.5)
    os.write(master, b"\x04")  # ^D at the start of a line: end of input
    try:
        done = proc.wait(timeout=30)
    finally:
        os.close(master)
        proc.kill()
    assert done.returncode == 0, done.stderr
    assert tree(seeded) == before


# --- answers ----------------------------------------------------------------------------------------


def test_parse_answer():
    from mem.cli.forget import parse_answer

    assert parse_answer("", 3) == [] and parse_answer("none", 3) == [] and parse_answer("N", 3) == []
    assert parse_answer("all", 3) == [1, 2, 3] and parse_answer("y", 3) == [1, 2, 3]
    assert parse_answer("3 1", 3) == [3, 1] and parse_answer("1-2,3", 3) == [1, 2, 3]
    assert parse_answer("1 1", 3) == [1]
    for bad in ("0", "4", "2-1", "one", "1;2"):
        assert parse_answer(bad, 3) is None, bad


# --- entries ----------------------------------------------------------------------------------------


def test_a_crlf_file_keeps_its_line_ends(run_mem, memdir):
    crlf = PREFS.replace("\n", "\r\n").encode()
    (memdir / "prefs.md").write_bytes(crlf)
    (memdir / "MEMORY.md").write_text(INDEX)
    r = run_mem("forget", "--yes", "short answers preamble")
    assert r.returncode == 0, r.stderr
    assert (memdir / "prefs.md").read_bytes() == crlf.replace(b"- short answers, no preamble\r\n", b"")


def test_a_file_whose_every_entry_is_chosen_is_deleted(run_mem, seeded, fake_api):
    fake_api.reply_text(json.dumps({"candidates": [{"file": "prefs.md", "entry": n, "confident": True} for n in (1, 2, 3)]}))
    r = run_mem("forget", "--yes", "--json", "all my editor likes")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert len(data["candidates"]) == 3 and data["deleted"] == ["prefs.md"] and data["updated"] == ["MEMORY.md"]
    assert "prefs.md" not in (seeded / "MEMORY.md").read_text()


def test_entries_ignore_fenced_code_and_single_memories():
    from mem.core.jobs.forget import entries

    head = "---\nname: n\ndescription: d\ntype: user\n---\n\n"
    assert entries(head + "One fact.\n\n**Why:** because.\n") == []
    assert entries(head + "- only one item\n") == []
    assert entries(head + "```\n- a\n- b\n```\n") == []
    assert [e.title for e in entries(head + "## A\n```\n## not a section\n```\n## B\nb\n")] == ["A", "B"]
    assert [e.kind for e in entries(head + "1. first\n2. second\n")] == ["item", "item"]


try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    _item = st.text(alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" ,."),
                    min_size=1, max_size=30).map(lambda s: s.strip() or "x")

    @settings(max_examples=200, deadline=None)
    @given(items=st.lists(_item, min_size=2, max_size=8), loose=st.booleans(), data=st.data())
    def test_removing_entries_keeps_the_others_in_order(items, loose, data):
        from mem.core.jobs.forget import entries, remove_entries

        head = "---\nname: n\ndescription: d\ntype: user\n---\n\n"
        sep = "\n" if loose else ""
        text = head + sep.join(f"- {t}\n" for t in items)
        found = entries(text)
        assert [e.text.strip() for e in found] == [f"- {t}" for t in items]
        chosen = data.draw(st.lists(st.sampled_from(found), min_size=1, max_size=len(found) - 1, unique_by=lambda e: e.index))
        after = remove_entries(text, chosen)
        kept = [t for i, t in enumerate(items, start=1) if i not in {e.index for e in chosen}]
        assert after.startswith(head)
        assert after == head + sep.join(f"- {t}\n" for t in kept)


def test_a_manifest_too_big_for_the_window_is_cut_to_the_likeliest_files(run_mem, tmp_path, fake_api):
    """3,000 memories list ~200,000 tokens: the request stays inside a 50,000-token window, and
    the file the query is about is among those shown."""
    memdir = tmp_path / "memory"
    for i in range(3_000):
        write_memory(memdir, f"note-{i:04d}.md", name=f"Note {i}",
                     description=f"routine observation number {i} about build pipeline stage {i % 97} and its caches")
    write_memory(memdir, "staging-database.md", name="Staging database",
                 description="the staging postgres lives on db-stage-3 behind the bastion")
    fake_api.context_window = 50_000
    fake_api.reply_text(json.dumps({"candidates": [{"file": "staging-database.md", "confident": True}]}))
    r = run_mem("forget", "--yes", "--json", "--dir", str(memdir), "the staging postgres bastion",
                env={"MEM_CONTEXT_WINDOW": "50000"})
    assert r.returncode == 0, r.stderr
    [request] = fake_api.requests
    assert request["status"] == 200 and request["input_tokens"] <= 50_000
    message = request["body"]["messages"][0]["content"]
    assert "staging-database.md" in message and "more memory files, less likely to match, are not listed" in message
    assert json.loads(r.stdout)["deleted"] == ["staging-database.md"]
