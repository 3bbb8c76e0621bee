"""qwen-code 0.24's pinned/ (hand-curated memories): read and listed, never written, merged or deleted by mem.

qwen-code's docs (bundled/qc-helper/docs/features/memory.md in the 0.24.4 package): only the
top-level ``pinned/`` of a managed-memory directory is protected, matched case-insensitively,
including paths that resolve through a symbolic link into it; a nested ``project/pinned/`` is
ordinary memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import write_memory
from mem.core.errors import ExitCode, PinnedError
from mem.core.memdir.store import MemoryDir

PINNED = "pinned/architecture.md"
BODY = "The service is three processes behind one queue.\n"


@pytest.fixture
def memory(memdir):
    write_memory(memdir, PINNED, name="architecture", description="how the service is built", type="project",
                 body=BODY)
    write_memory(memdir, "tabs.md", name="tabs", description="tabs not spaces", body="Tabs.\n")
    (memdir / "MEMORY.md").write_text("- [Architecture](pinned/architecture.md) — how the service is built\n"
                                      "- [Tabs](tabs.md) — tabs not spaces\n")
    return memdir


def test_the_write_path_refuses_pinned_files_by_every_route(memory):
    m = MemoryDir(memory)
    before = (memory / PINNED).read_bytes()
    os.symlink("pinned/architecture.md", memory / "alias.md")
    os.symlink("pinned", memory / "door")
    for target in (PINNED, "Pinned/architecture.md", "PINNED/new.md", "alias.md", "door/architecture.md",
                   str(memory / PINNED)):
        with pytest.raises(PinnedError, match="never writes, merges or deletes"):
            m.write(target, "---\nname: x\ndescription: y\ntype: user\n---\nchanged\n")
    for target in (PINNED, "door/architecture.md"):
        with pytest.raises(PinnedError):
            m.delete(target)
    assert (memory / PINNED).read_bytes() == before
    assert PinnedError("x").exit_code == ExitCode.REFUSED
    assert m.write("project/pinned/ordinary.md", "---\nname: o\ndescription: d\ntype: user\n---\nok\n").changed


def test_scan_lists_pinned_files_with_a_mark(memory, run_mem):
    lines = run_mem("scan").stdout.splitlines()
    assert [line.endswith(" [pinned]") for line in sorted(lines)] == [True, False]
    rows = {r["relpath"]: r["pinned"] for r in json.loads(run_mem("scan", "--json").stdout)}
    assert rows == {PINNED: True, "tabs.md": False}


def test_forget_leaves_pinned_files_out_and_refuses_one_named(memory, run_mem):
    (memory / "arch.md").write_text("---\nname: arch\ndescription: how the service is built: three processes "
                                    "behind one queue\ntype: project\n---\nThree.\n")
    before = (memory / PINNED).read_bytes()
    r = run_mem("forget", "--offline", "-y", "service", "processes", "queue")
    assert r.returncode == 0, r.stderr
    assert not (memory / "arch.md").exists() and (memory / PINNED).read_bytes() == before
    r = run_mem("forget", "--offline", "-y", PINNED)
    assert r.returncode == ExitCode.REFUSED and "pinned/ holds hand-curated memories" in r.stderr
    assert (memory / PINNED).read_bytes() == before


def test_import_leaves_pinned_files_out_with_the_reason(memory, tmp_path, run_mem):
    src = tmp_path / "theirs"
    write_memory(src, PINNED, name="architecture", description="their version", type="project", body="Theirs.\n")
    write_memory(src, "pinned/deploy.md", name="deploy", description="deploys go through staging", body="Staging.\n")
    write_memory(src, "new.md", name="new", description="something new", body="New.\n")
    (src / "MEMORY.md").write_text("- [Deploy](pinned/deploy.md) — deploys\n- [New](new.md) — something new\n")
    os.symlink("pinned/architecture.md", memory / "alias.md")
    write_memory(src, "alias.md", name="alias", description="through a link into pinned/", body="Sneaky.\n")
    before = (memory / PINNED).read_bytes()
    r = run_mem("import", str(src), "--on-conflict", "theirs")
    assert r.returncode == 0, r.stderr
    assert (memory / PINNED).read_bytes() == before and (memory / "new.md").exists()
    assert not (memory / "pinned/deploy.md").exists()
    for rel in (PINNED, "pinned/deploy.md", "alias.md"):
        assert f"skipped {rel}: pinned/ holds hand-curated memories" in r.stderr
    assert "pinned/deploy.md" not in (memory / "MEMORY.md").read_text()


def test_undo_does_not_write_through_a_link_into_pinned(memory, tmp_path, run_mem):
    src = tmp_path / "theirs"
    write_memory(src, "tabs.md", name="tabs", description="tabs, imported", body="Imported.\n")
    assert run_mem("import", str(src), "--on-conflict", "theirs").returncode == 0
    (memory / "tabs.md").unlink()
    os.symlink("pinned/architecture.md", memory / "tabs.md")  # what undo would put back now leads into pinned/
    before = (memory / PINNED).read_bytes()
    r = run_mem("undo", "--force")
    assert r.returncode == ExitCode.REFUSED and "pinned/ holds hand-curated memories" in r.stderr
    assert (memory / PINNED).read_bytes() == before


def test_dream_merges_duplicates_into_a_pinned_file_never_away(memory, run_mem):
    text = (memory / PINNED).read_text()
    for rel in ("arch.md", "aaa.md"):
        (memory / rel).write_text(text)
        os.utime(memory / rel, (1_000_000_000, 1_000_000_000))  # older than the pinned one
    (memory / "pinned" / "copy.md").write_text(text)
    before = {p: (memory / p).read_bytes() for p in (PINNED, "pinned/copy.md")}
    r = run_mem("dream", "--offline", "--force")
    assert r.returncode == 0, r.stderr
    assert not (memory / "arch.md").exists() and not (memory / "aaa.md").exists()
    assert {p: (memory / p).read_bytes() for p in before} == before


def test_the_extract_and_dream_agents_tools_refuse_pinned_files(memory):
    """The tools the models call (extract's policy; dream's, which may delete) answer with the reason."""
    from mem.core.jobs.tools import ToolBox, WritePolicy
    from mem.core.jobs.extract import extract_policy

    before = (memory / PINNED).read_bytes()
    os.symlink("pinned/architecture.md", memory / "alias.md")
    text = "---\nname: architecture\ndescription: rewritten\ntype: project\n---\nRewritten.\n"
    for policy in (extract_policy(), WritePolicy(allow_delete=True)):
        box = ToolBox(MemoryDir(memory), policy=policy)
        for target in (PINNED, "alias.md"):
            assert not box.call("read", {"file_path": target})[1]
            reply, is_error = box.call("write", {"file_path": target, "content": text})
            assert is_error and "pinned/ holds hand-curated memories" in reply, reply
            reply, is_error = box.call("edit", {"file_path": target, "old_string": "Three", "new_string": "Four"})
            assert is_error and "pinned/" in reply, reply
    reply, is_error = ToolBox(MemoryDir(memory), policy=WritePolicy(allow_delete=True)).call("delete", {"file_path": PINNED})
    assert is_error and "pinned/" in reply, reply
    assert (memory / PINNED).read_bytes() == before


def test_a_relocation_that_merges_leaves_pinned_files_where_they_are_and_says_so(tmp_path, run_mem, monkeypatch):
    from mem import clients

    monkeypatch.delenv("MEM_DIR", raising=False)
    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    old_memory = Path(clients.resolve(project=str(old)).memory_dir)
    new_memory = Path(clients.resolve(project=str(new)).memory_dir)
    write_memory(old_memory, PINNED, name="architecture", description="how it is built", body=BODY)
    write_memory(old_memory, "b.md", name="b", description="b", body="B.\n")
    write_memory(new_memory, "c.md", name="c", description="c", body="C.\n")  # so the two are merged
    r = run_mem("relocate", str(old), str(new))
    assert r.returncode == 0, r.stderr
    assert (new_memory / "b.md").exists() and not (new_memory / PINNED).exists()
    assert (old_memory / PINNED).read_text().endswith(BODY)
    assert f"skip   {old_memory / PINNED} -> {new_memory / PINNED} (pinned/ holds" in r.stdout + r.stderr


def test_an_agent_dream_against_the_model_server_leaves_a_pinned_file_byte_for_byte(memory, run_mem, fake_api):
    """The whole agent dream, its model a local Messages-API server scripted to rewrite, edit, delete and
    merge away the pinned file, directly and through a link: each call is refused with the reason, the
    model is told, the dream still does the rest, and the pinned file keeps every byte and its mtime."""
    os.symlink("pinned/Architecture.md".replace("A", "a"), memory / "alias.md")
    (memory / "arch.md").write_text((memory / PINNED).read_text().replace("how the service is built", "the service layout"))
    before = (memory / PINNED).read_bytes()
    mtime = os.stat(memory / PINNED).st_mtime_ns
    rewritten = "---\nname: architecture\ndescription: rewritten\ntype: project\n---\n\nFour processes.\n"
    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}), ("read", {"file_path": PINNED}),
                             ("read", {"file_path": "arch.md"}))
    fake_api.reply_tool_uses(
        ("write", {"file_path": PINNED, "content": rewritten}),
        ("edit", {"file_path": PINNED, "old_string": "three", "new_string": "four"}),
        ("write", {"file_path": "PINNED/extra.md", "content": rewritten}),
        ("write", {"file_path": "alias.md", "content": rewritten}),
        ("write", {"file_path": "arch.md", "content": rewritten.replace("rewritten", "the service layout, merged")}),
        ("delete", {"file_path": PINNED, "merged_into": "arch.md"}),
        ("delete", {"file_path": "alias.md"}),
    )
    fake_api.reply_text("Merged the architecture notes into arch.md.")
    r = run_mem("dream", "--force", "--json", env={"ANTHROPIC_BASE_URL": fake_api.url})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (memory / PINNED).read_bytes() == before and os.stat(memory / PINNED).st_mtime_ns == mtime
    assert os.path.islink(memory / "alias.md")
    assert doc["updated"] == ["MEMORY.md", "arch.md"] and doc["deleted"] == []  # the allowed merge went through
    # every refused call came back to the model as an error naming the reason...
    results = [block for block in fake_api.requests[2]["body"]["messages"][-1]["content"]
               if block.get("type") == "tool_result"]
    assert len(results) == 7
    refused = [b for b in results if b.get("is_error")]
    assert len(refused) == 6
    for b in refused:
        assert "pinned/ holds hand-curated memories" in b["content"], b["content"]
    # ...and to the user: in --json and one line each on stderr
    assert [(x["tool"], x["path"]) for x in doc["refused"]] == [
        ("write", PINNED), ("edit", PINNED), ("write", "PINNED/extra.md"), ("write", "alias.md"),
        ("delete", PINNED), ("delete", "alias.md")]
    assert all("pinned/ holds hand-curated memories" in x["reason"] for x in doc["refused"])
    assert r.stderr.count("was refused: ") == 6 and f"the model's delete of {PINNED} was refused" in r.stderr
    assert not (memory / "PINNED").exists()
