"""mem dream with a model, against a real local Messages-API server."""

from __future__ import annotations

import json

from conftest import tree_bytes, write_memory

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


def test_result_failing_validation_is_rolled_back_byte_identically(run_mem, memdir, fake_api):
    seeded(memdir)
    before = tree_bytes(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}))
    # The index now points at a file that does not exist: validation must fail.
    fake_api.reply_tool_uses(("write", {"file_path": "MEMORY.md", "content": "- [Ghost](ghost.md) — boo\n"}))
    fake_api.reply_text("done")
    r = run_mem("dream", "--force", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 4, r.stderr
    assert "failed validation" in r.stderr and "ghost.md" in r.stderr
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


def test_dry_run_with_the_agent_leaves_the_dir_untouched(run_mem, memdir, fake_api):
    seeded(memdir)
    before = tree_bytes(memdir)
    fake_api.reply_tool_uses(("read", {"file_path": "c.md"}))
    fake_api.reply_tool_uses(("delete", {"file_path": "c.md"}), ("read", {"file_path": "MEMORY.md"}))
    fake_api.reply_tool_uses(("edit", {"file_path": "MEMORY.md", "old_string": "- [DB](c.md) — MySQL\n", "new_string": ""}))
    fake_api.reply_text("Deleted c.md.")
    r = run_mem("dream", "--force", "--dry-run", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
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
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url, "MEM_CONTEXT_WINDOW": "60000"})
    assert r.returncode == 0, r.stderr
    assert {q["status"] for q in fake_api.requests} == {200} and fake_api.max_input_tokens + 8_192 <= 60_000
    doc = json.loads(r.stdout)
    assert doc["turns"] == len(fake_api.requests) >= 20
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    assert (memdir / "MEMORY.md").read_text() == index
