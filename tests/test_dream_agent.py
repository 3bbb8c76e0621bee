"""mem dream with a model, against a real local Messages-API server."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import (
    STALE_MEMORIES,
    TRUE_MEMORIES,
    moved_repo,
    tree_bytes,
    write_memories,
    write_memory,
)
from mem.core.memdir.store import MemoryDir

A = "---\nname: deploy-day\ndescription: deploys happen on fridays\ntype: project\n---\n\nDeploys happen on Fridays.\n"
B = "---\nname: deploy-day-2\ndescription: deploy on friday afternoons\ntype: project\n---\n\nWe deploy Friday afternoons.\n"
C = "---\nname: old-db\ndescription: the app uses MySQL\ntype: project\n---\n\nThe app uses MySQL.\n"
MERGED = ("---\nname: deploy-day\ndescription: deploys happen on Friday afternoons\ntype: project\n---\n\n"
          "Deploys happen on Friday afternoons (merged 2026-11-22).\n\n**Why:** release cadence.\n\n**How to apply:** plan merges before Friday.\n")
INDEX = "- [Deploy day](a.md) — Friday afternoons\n- [DB](c.md) — MySQL\n"


def seeded(memdir):
    (memdir / "a.md").write_text(A)
    (memdir / "b.md").write_text(B)
    (memdir / "c.md").write_text(C)
    (memdir / "MEMORY.md").write_text("- [Deploy day](a.md) — fridays\n- [Deploy 2](b.md) — friday\n- [DB](c.md) — MySQL\n")
    return memdir


def test_scripted_dream_merges_two_files_and_deletes_a_contradicted_one(run_mem, memdir, fake_api):
    seeded(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}), ("read", {"file_path": "a.md"}), ("read", {"file_path": "b.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}), ("delete", {"file_path": "b.md"}),
                             ("delete", {"file_path": "c.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "MEMORY.md", "content": INDEX.split("\n")[0] + "\n"}))
    fake_api.reply_text("Merged b.md into a.md; deleted c.md (the project moved to Postgres).")
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "agent" and doc["ran"] is True and doc["turns"] == 4
    assert doc["updated"] == ["MEMORY.md", "a.md"] and doc["deleted"] == ["b.md", "c.md"] and doc["created"] == []
    assert doc["tokens"]["calls"] == 4 and doc["summary"].startswith("Merged b.md")
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    # The first request carried our instructions, the manifest, and the confined tools.
    first = fake_api.requests[0]["body"]
    assert "Consolidate the memory directory" in first["messages"][0]["content"][0]["text"]
    assert "- [project] a.md (" in first["messages"][0]["content"][0]["text"]
    assert {t["name"] for t in first["tools"]} == {"read", "grep", "glob", "ls", "write", "edit", "delete"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_a_dangling_pointer_is_repaired_and_the_rest_kept(run_mem, memdir, fake_api):
    seeded(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}), ("read", {"file_path": "a.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}),
                             ("delete", {"file_path": "b.md", "merged_into": "a.md"}))
    # The index it leaves points at a file that does not exist, and still at the deleted b.md.
    fake_api.reply_tool_uses(("write", {"file_path": "MEMORY.md", "content": "- [Ghost](ghost.md) — boo\n"
                                        "- [Deploy day](a.md) — Friday afternoons\n- [Deploy 2](b.md) — friday\n"}))
    fake_api.reply_text("Merged b.md into a.md.")
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["deleted"] == ["b.md"] and (memdir / "a.md").read_text() == MERGED
    index = (memdir / "MEMORY.md").read_text()
    assert "ghost.md" not in index and "](b.md)" not in index  # dangling pointers dropped
    assert "- [Deploy day](a.md) — Friday afternoons\n" in index and "](c.md)" in index  # c.md lost its pointer: back
    assert doc["turns"] == 4 and len(fake_api.requests) == 4  # no extra round was needed


def test_a_merge_keeps_the_older_date(run_mem, memdir, fake_api):
    import os

    seeded(memdir)
    os.utime(memdir / "a.md", (2_000_000_000, 2_000_000_000))
    os.utime(memdir / "b.md", (1_000_000_000, 1_000_000_000))
    fake_api.reply_tool_uses(("read", {"file_path": "a.md"}), ("read", {"file_path": "b.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}),
                             ("delete", {"file_path": "b.md", "merged_into": "a.md"}))
    fake_api.reply_text("Merged b.md into a.md.")
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    assert int((memdir / "a.md").stat().st_mtime) == 1_000_000_000
    assert run_mem("undo").returncode == 0
    assert int((memdir / "a.md").stat().st_mtime) == 2_000_000_000 and (memdir / "b.md").exists()


STACK = "---\nname: stack\ndescription: what the app runs on\ntype: project\n---\n\nPython 3.12; the database is described in [DB](c.md).\n"
FIXED = STACK.replace("described in [DB](c.md)", "Postgres")


def with_a_link(memdir):
    seeded(memdir)
    (memdir / "stack.md").write_text(STACK)
    with open(memdir / "MEMORY.md", "a") as fh:
        fh.write("- [Stack](stack.md) — what the app runs on\n")
    return memdir


def test_a_failed_validation_gets_one_more_round_and_a_fix_is_kept(run_mem, memdir, fake_api):
    with_a_link(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "a.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}), ("delete", {"file_path": "c.md"}))
    fake_api.reply_text("Updated a.md; deleted c.md (the app moved to Postgres).")
    fake_api.reply_tool_uses(("read", {"file_path": "stack.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "stack.md", "content": FIXED}))
    fake_api.reply_text("Dropped the link to c.md from stack.md.")
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["updated"] == ["MEMORY.md", "a.md", "stack.md"] and doc["deleted"] == ["c.md"] and doc["turns"] == 6
    assert doc["summary"] == "Dropped the link to c.md from stack.md." and doc["tokens"]["calls"] == 6
    assert (memdir / "stack.md").read_text() == FIXED and (memdir / "a.md").read_text() == MERGED
    # The extra round continued the conversation, told what failed.
    third = fake_api.requests[3]["body"]["messages"]
    assert third[-2]["role"] == "assistant" and third[-2]["content"][0]["text"].startswith("Updated a.md")
    assert "stack.md: links to c.md, which this dream deleted" in third[-1]["content"][-1]["text"]


def test_a_result_still_failing_after_the_extra_round_is_rolled_back_byte_identically(run_mem, memdir, fake_api):
    with_a_link(memdir)
    before = tree_bytes(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "a.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}), ("delete", {"file_path": "c.md"}))
    fake_api.reply_text("done")
    fake_api.reply_text("I see no problem.")
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 4, r.stderr
    assert "failed validation" in r.stderr and "stack.md: links to c.md" in r.stderr
    assert len(fake_api.requests) == 4
    assert tree_bytes(memdir) == before  # and the lock was rolled back (removed: there was none)


def test_model_failure_restores_and_rolls_back_the_lock(run_mem, memdir, fake_api):
    seeded(memdir)
    lock = memdir / ".consolidate-lock"
    lock.write_text("")
    import os

    os.utime(lock, (1_000_000_000, 1_000_000_000))
    before = tree_bytes(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "c.md"}))
    fake_api.reply_tool_uses(("delete", {"file_path": "c.md"}))
    for _ in range(3):  # the first call and two retries
        fake_api.reply_status(529)
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 70 and "529" in r.stderr
    assert tree_bytes(memdir) == before
    assert int(lock.stat().st_mtime) == 1_000_000_000


def test_a_plain_undo_after_a_failed_dream_does_not_redo_its_half(run_mem, memdir, fake_api):
    """Issue #31 item 5: the dream's take-back is an undo; a plain `mem undo` took it back, deleting c.md again."""
    seeded(memdir)
    fake_api.reply_tool_uses(("delete", {"file_path": "c.md"}))
    for _ in range(3):  # the first call and two retries
        fake_api.reply_status(529)
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 70 and (memdir / "c.md").exists(), r.stderr
    before = tree_bytes(memdir)
    r = run_mem("undo")
    assert r.returncode == 0 and "already an undo" in r.stderr and "(dream, which failed)" in r.stderr, r.stderr
    assert tree_bytes(memdir) == before


def test_dry_run_with_the_agent_leaves_the_dir_untouched(run_mem, memdir, fake_api):
    seeded(memdir)
    before = tree_bytes(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "c.md"}))
    fake_api.reply_tool_uses(("delete", {"file_path": "c.md"}), ("read", {"file_path": "MEMORY.md"}))
    fake_api.reply_tool_uses(("edit", {"file_path": "MEMORY.md", "old_string": "- [DB](c.md) — MySQL\n", "new_string": ""}))
    fake_api.reply_text("Deleted c.md.")
    r = run_mem("dream", "--force", "--dry-run", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 1, r.stderr  # it would change something
    assert "--- a/c.md" in r.stdout and "-- [DB](c.md) — MySQL" in r.stdout
    assert tree_bytes(memdir) == before


def test_model_escape_attempts_are_refused_in_dream(run_mem, memdir, fake_api, tmp_path):
    seeded(memdir)
    fake_api.reply_tool_uses(("write", {"file_path": "../../escape.md", "content": A}),
                             ("write", {"file_path": str(tmp_path / "abs.md"), "content": A}),
                             ("read", {"file_path": "/etc/passwd"}))
    fake_api.reply_text("gave up")
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "abs.md").exists() and not (memdir.parent.parent / "escape.md").exists()
    results = fake_api.requests[1]["body"]["messages"][-1]["content"]
    assert all(block["is_error"] for block in results if block["type"] == "tool_result")


def test_a_dream_agent_that_never_stops_reading_keeps_its_night_within_the_window(run_mem, memdir, fake_api):
    """The model keeps reading a 36 KB file, turn after turn: every request stays inside the window
    (answered reads are elided), the run ends at its turn budget, and the merge it made is kept."""
    from fakeapi import message, tool_use_block

    seeded(memdir)
    notes = "".join(f"{i:05d} the nightly ETL reads from the replica; the runbook says so in step {i % 13}.\n"
                    for i in range(480))
    write_memory(memdir, "notes.md", name="notes", description="long ETL notes", type="reference", body=notes)
    assert (memdir / "notes.md").stat().st_size > 36_000
    index = INDEX + "- [Notes](notes.md) — ETL\n"
    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}), ("read", {"file_path": "a.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}), ("delete", {"file_path": "b.md"}),
                             ("write", {"file_path": "MEMORY.md", "content": index}))
    fake_api.respond_with(lambda body: message([tool_use_block("read", {"file_path": "notes.md"}) for _ in range(2)],
                                               stop_reason="tool_use"))
    fake_api.context_window = 60_000
    # no spending cap: the point here is the window (tests/test_run_budget.py caps the same reader)
    r = run_mem("dream", "--force", "--json", "--budget", "none",
                env={"ANTHROPIC_BASE_URL": fake_api.url, "MEM_CONTEXT_WINDOW": "60000"})
    assert r.returncode == 0, r.stderr
    assert {q["status"] for q in fake_api.requests} == {200} and fake_api.max_input_tokens + 8_192 <= 60_000
    doc = json.loads(r.stdout)
    assert doc["turns"] == len(fake_api.requests) >= 20
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    assert (memdir / "MEMORY.md").read_text() == index


SESSION = "0b6f1c2e-8d4a-4e9b-9f3a-2c1d5e7f8a90"


def transcript_line(uuid: str, text: str, ts: str) -> str:
    # Claude Code's records carry most of their bytes as metadata before the words people wrote.
    meta = {"parentUuid": "p" * 36, "isSidechain": False, "userType": "external", "cwd": "/home/u/" + "project/" * 20,
            "sessionId": SESSION, "version": "2.1.0", "gitBranch": "main", "type": "user", "uuid": uuid, "timestamp": ts}
    return json.dumps({**meta, "message": {"role": "user", "content": text}})


def test_search_transcripts_shows_the_matched_words_with_session_and_time(tmp_path, memdir):
    from mem.core.jobs.tools import EXCERPT_CHARS, TRANSCRIPT_MATCHES, ToolBox

    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    words = "filler words " * 200
    (transcripts / f"{SESSION}.jsonl").write_text(
        transcript_line("u1", f"{words}we decided: the payments service moves to Postgres 16 {words}", "2026-11-20T09:30:00.000Z")
        + "\n" + transcript_line("u2", "nothing here", "2026-11-20T09:31:00.000Z") + "\n")
    box = ToolBox(MemoryDir(memdir), transcripts=str(transcripts), policy=None)
    text, is_error = box.call("search_transcripts", {"pattern": "postgres 16", "ignore_case": True})
    assert not is_error
    line = text.split("\n")[0]
    assert line.startswith(f"[session {SESSION} 2026-11-20T09:30:00.000Z user] …")
    assert "the payments service moves to Postgres 16" in line and len(line) < EXCERPT_CHARS + 80
    assert len(text.split("\n")) == 1
    assert box.call("search_transcripts", {"pattern": "absent"})[0] == "No matches."
    (transcripts / "other.jsonl").write_text("".join(transcript_line(f"m{i}", f"mention {i}", "2026-11-21T00:00:00.000Z") + "\n"
                                                     for i in range(TRANSCRIPT_MATCHES + 5)))
    many = box.call("search_transcripts", {"pattern": "mention"})[0].split("\n")
    assert len(many) == TRANSCRIPT_MATCHES + 1 and many[-1].startswith("[… more matches not shown")
    assert box.call("search_transcripts", {"pattern": "("})[1] is True  # a bad pattern is the model's error


def test_the_dream_agent_searches_transcripts_and_cannot_read_them_raw(run_mem, tmp_path, fake_api):
    from mem.clients import resolve

    project = tmp_path / "proj"
    project.mkdir()
    res = resolve(project=str(project))
    os.makedirs(res.memory_dir)
    seeded(Path(res.memory_dir))
    path = Path(res.transcripts_dir) / f"{SESSION}.jsonl"
    path.write_text(transcript_line("u1", "the payments service moves to Postgres 16", "2026-11-20T09:30:00.000Z") + "\n")
    fake_api.reply_tool_uses(("search_transcripts", {"pattern": "Postgres"}), ("read", {"file_path": str(path)}))
    fake_api.reply_text("Nothing to change.")
    r = run_mem("dream", "--force", "--project", str(project), env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    assert "search_transcripts" in {t["name"] for t in fake_api.requests[0]["body"]["tools"]}
    found, refused = fake_api.requests[1]["body"]["messages"][-1]["content"]
    assert "Postgres 16" in found["content"] and SESSION in found["content"] and not found.get("is_error")
    assert refused["is_error"] and "outside" in refused["content"]


def test_grep_cuts_a_long_line_around_the_match(memdir):
    from mem.core.jobs.tools import GREP_MAX_LINE_CHARS, ToolBox

    (memdir / "long.md").write_text("x" * 2000 + " the needle is here " + "y" * 2000 + "\n")
    text, _ = ToolBox(MemoryDir(memdir), policy=None).call("grep", {"pattern": "needle"})
    assert text.startswith("long.md:1:…") and "the needle is here" in text and text.endswith("…")
    assert len(text) <= len("long.md:1:") + GREP_MAX_LINE_CHARS + 2


# --- stale claims: the agent is told what no longer holds in the repository -----------------------


def test_the_agent_is_given_the_stale_claims_and_fixes_a_moved_path(run_mem, memdir, fake_api, tmp_path):
    repo = moved_repo(tmp_path / "repo")
    write_memories(memdir, STALE_MEMORIES)
    fixed = (memdir / "project_slugs.md").read_text().replace("src/util/strings.py", "src/common/strings.py")
    fake_api.reply_tool_uses(("read", {"file_path": "project_slugs.md"}), ("read", {"file_path": "project_freeze.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "project_slugs.md", "content": fixed}),
                             ("delete", {"file_path": "project_freeze.md"}))
    fake_api.reply_text("Moved the slugs path to src/common/strings.py; dropped the freeze, which ended.")
    r = run_mem("dream", "--force", "--json", cwd=str(repo))
    assert r.returncode == 0, r.stderr
    prompt = fake_api.requests[0]["body"]["messages"][0]["content"][0]["text"]
    section = prompt[prompt.index("Stale claims:"):]
    assert "- project_slugs.md: line 7: src/util/strings.py: moved (renamed in " in section
    assert "-> src/common/strings.py)" in section
    assert "- project_freeze.md: line 7: 2020-03-12: expired (" in section
    assert section.index("project_slugs.md") < section.index("project_freeze.md")  # moved first: it has its fix
    # what the agent fixed is no longer reported; the findings are of the directory as the dream left it
    doc = json.loads(r.stdout)
    assert doc["updated"] == ["MEMORY.md", "project_slugs.md"] and doc["deleted"] == ["project_freeze.md"]
    assert [f for f in doc["findings"] if f["kind"] == "stale-claim"] == []


def test_the_agent_prompt_has_no_stale_section_when_every_claim_holds(run_mem, memdir, fake_api, tmp_path):
    repo = moved_repo(tmp_path / "repo")
    write_memories(memdir, TRUE_MEMORIES)
    fake_api.reply_text("Nothing needed to change.")
    r = run_mem("dream", "--force", "--json", cwd=str(repo))
    assert r.returncode == 0, r.stderr
    prompt = fake_api.requests[0]["body"]["messages"][0]["content"][0]["text"]
    assert "Consolidate the memory directory" in prompt and "Stale claims" not in prompt
    assert "src/common/strings.py" not in prompt  # no claim line of any kind


def test_the_stale_section_keeps_to_its_limit_moved_paths_first():
    from mem.core.jobs.dream_agent import MAX_STALE, stale_section
    from mem.core.jobs.dream_checks import Finding

    many = [Finding("stale-claim", [f"m{i:02}.md"], [f"line 3: 2020-01-0{i % 9 + 1}: expired (passed)"]) for i in range(40)]
    many.append(Finding("stale-claim", ["z.md"], ["line 5: a/b.py: moved (renamed in abc1234 -> c/b.py)"]))
    lines = [line for line in stale_section(many).split("\n") if line.startswith("- ")]
    assert len(lines) == MAX_STALE + 1 and lines[0] == "- z.md: line 5: a/b.py: moved (renamed in abc1234 -> c/b.py)"
    assert lines[-1] == f"- and {41 - MAX_STALE} more, not listed here"
    assert stale_section([]) == ""


def test_a_failed_dream_leaves_no_pointer_to_a_file_it_took_back(run_mem, memdir, fake_api):
    """Issue #31: the dream's pointer line, reworded by the agent while the dream ran, pointed to nothing after."""
    import threading
    import time

    from fakeapi import error_body

    seeded(memdir)
    index = (memdir / "MEMORY.md").read_text()
    new_file = "---\nname: cadence\ndescription: the release cadence\ntype: project\n---\n\nWeekly releases.\n"
    fake_api.reply_tool_uses(("write", {"file_path": "cadence.md", "content": new_file}),
                             ("edit", {"file_path": "MEMORY.md", "old_string": "- [DB](c.md) — MySQL\n",
                                       "new_string": "- [DB](c.md) — MySQL\n- [Cadence](cadence.md) — weekly\n"}))
    reworded = threading.Event()
    # the call and its two retries fail, the first once the agent's edit has landed
    for delay in (reworded, 0, 0):
        fake_api.reply(error_body("overloaded_error", "Overloaded"), status=529, delay=delay)

    def reword() -> None:  # the agent's own Edit tool, outside mem, on the dream's line
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                text = (memdir / "MEMORY.md").read_text()
                if "(cadence.md) — weekly\n" in text:
                    (memdir / "MEMORY.md").write_text(text.replace("(cadence.md) — weekly",
                                                                   "(cadence.md) — weekly, Tuesdays"))
                    return
                time.sleep(0.01)
        finally:
            reworded.set()

    editor = threading.Thread(target=reword)
    editor.start()
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    editor.join()
    assert r.returncode == 70 and "529" in r.stderr, r.stderr
    assert not (memdir / "cadence.md").exists()  # the dream's file is taken back ...
    assert "cadence.md" not in (memdir / "MEMORY.md").read_text()  # ... and no pointer to it is left
    assert (memdir / "MEMORY.md").read_text() == index  # everyone else's lines stay
