"""mem path --orphans and mem relocate: a project that moved finds its memory again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, git, write_memory
from mem.cli import cli
from mem import clients
from mem.clients import claude
from mem.core import paths
from mem.core.relocate import decode_name

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "memory"


def mem(*args: str, cwd: Path | None = None):
    if cwd is None:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def checkout(path: Path, *, transcript: bool = True) -> Path:
    """A git checkout with the example memory and (optionally) one Claude Code transcript recorded in it."""
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    memory = Path(clients.resolve(project=str(path)).memory_dir)
    shutil.copytree(EXAMPLES, memory)
    if transcript:  # a real Claude Code transcript, as if recorded here
        text = (FIXTURES / "transcripts" / "claude-code-01-hello.jsonl").read_text()
        (memory.parent / "0b5c6d1e-s1.jsonl").write_text(text.replace("/home/dev/cc-run/repo", str(path)))
    return memory


def orphans() -> list[dict]:
    r = mem("path", "--orphans", "--json")
    return json.loads(r.stdout)


def test_a_moved_checkout_is_found_by_orphans_and_relocated(tmp_path, mem_exe):
    old, new = tmp_path / "src" / "old_app", tmp_path / "src" / "new-app"
    memory = checkout(old)
    assert mem("log", "--dir", str(memory), "moved the app").exit_code == 0  # some history to carry along
    r = mem("path", "--orphans")
    assert r.exit_code == 1 and r.stdout == ""  # nothing moved yet

    shutil.move(old, new)  # `mv`: the memory is keyed by the old path
    found = orphans()
    assert [(o["recorded_path"], o["recorded_from"], o["client"], o["exists"]) for o in found] == [
        (str(old), "transcript", "claude", False)]
    assert found[0]["memory_dir"] == str(memory).rstrip("/") and found[0]["transcripts"] == 1
    assert found[0]["size"] > sum(len(b) for b in tree(EXAMPLES).values())
    assert found[0]["last_used"].startswith("20")
    text = mem("path", "--orphans")
    assert text.exit_code == 0 and text.stdout.startswith(f"{old}\t")

    dry = mem("relocate", "--dry-run", str(old), str(new))
    assert dry.exit_code == 1
    assert "move   " in dry.stdout and "-old-app -> " in dry.stdout
    assert memory.is_dir()  # nothing moved

    r = mem("relocate", str(old), str(new))
    assert r.exit_code == 0, r.stderr
    # the real executable, run in the new location, finds the memory there
    proc = subprocess.run([mem_exe, "path"], cwd=new, capture_output=True, text=True, timeout=60)
    new_memory = Path(proc.stdout.strip())
    assert new_memory != memory and tree(new_memory) == {**tree(EXAMPLES), **{
        k: v for k, v in tree(new_memory).items() if k.startswith("logs/")}}
    assert list((new_memory.parent).glob("*.jsonl"))  # the transcripts came along
    assert not memory.exists()
    hist = subprocess.run([mem_exe, "history"], cwd=new, capture_output=True, text=True, timeout=60)
    assert " log " in hist.stdout  # the history followed its memory directory
    assert mem("path", "--orphans").exit_code == 1


def test_without_transcripts_the_name_is_decoded(tmp_path):
    here = tmp_path / "still_here.v2"
    checkout(here, transcript=False)
    gone = tmp_path / "gone-away"
    checkout(gone, transcript=False)
    shutil.rmtree(gone)
    found = orphans()
    assert len(found) == 1
    assert found[0]["recorded_path"] is None and found[0]["recorded_from"] is None
    assert found[0]["name"] == paths.sanitize_path(str(gone))
    assert decode_name(paths.sanitize_path(str(here))) == str(here)


def moved(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A checkout at old/ with memory, moved to new/: (old, new, its memory dir, the memory dir new/ resolves to)."""
    old, new = tmp_path / "old", tmp_path / "new"
    memory = checkout(old)
    shutil.move(old, new)
    return old, new, memory, Path(clients.resolve(project=str(new)).memory_dir)


def test_relocating_into_memory_that_exists_merges_through_the_write_path(tmp_path):
    old, new, memory, new_memory = moved(tmp_path)
    write_memory(new_memory, "project_new.md", name="new", description="written after the move", type="project")
    (new_memory / "MEMORY.md").write_text("- [New](project_new.md) — written after the move\n")
    r = mem("relocate", "--dry-run", str(old), str(new))
    assert r.exit_code == 1
    assert "merge " in r.stdout and "10 files to write" in r.stdout
    r = mem("relocate", str(old), str(new))
    assert r.exit_code == 0, r.stderr
    assert set(tree(new_memory)) == set(tree(EXAMPLES)) | {"project_new.md"}
    index = (new_memory / "MEMORY.md").read_text()
    assert index.startswith("- [New](project_new.md)") and "(user_role.md)" in index
    assert not memory.exists()  # emptied through its own history
    assert list(new_memory.parent.glob("*.jsonl"))
    history = mem("history", "--dir", str(new_memory)).stdout
    assert " relocate " in history


def test_a_file_that_would_be_overwritten_refuses_the_whole_relocation(tmp_path):
    old, new, memory, new_memory = moved(tmp_path)
    new_memory.mkdir(parents=True)
    (new_memory / "user_role.md").write_text("---\nname: role\ndescription: other\ntype: user\n---\n\nother\n")
    before_old, before_new = tree(memory.parent), tree(new_memory.parent)
    r = mem("relocate", str(old), str(new))
    assert r.exit_code == 4
    assert "already has other versions of user_role.md: refusing to overwrite" in r.stderr
    assert tree(memory.parent) == before_old and tree(new_memory.parent) == before_new


def test_an_empty_memory_dir_the_client_made_at_start_is_replaced(tmp_path):
    old, new, memory, new_memory = moved(tmp_path)
    new_memory.mkdir(parents=True)
    (new_memory / "MEMORY.md").write_text("")  # what qwen-code creates at start-up
    r = mem("relocate", str(old), str(new))
    assert r.exit_code == 0, r.stderr
    assert "over the empty one there" in r.stdout
    assert tree(new_memory) == tree(EXAMPLES) and not memory.exists()


def test_a_transcript_is_never_overwritten(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    memory = checkout(old)
    shutil.move(old, new)
    new_folder = Path(claude.transcripts_dir(str(new)))
    new_folder.mkdir(parents=True)
    (new_folder / "0b5c6d1e-s1.jsonl").write_text("{}\n")
    r = mem("relocate", str(old), str(new))
    assert r.exit_code == 4 and "refusing to overwrite a transcript" in r.stderr
    assert memory.is_dir() and (new_folder / "0b5c6d1e-s1.jsonl").read_text() == "{}\n"


def test_qwen_code_folders_move_too(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    git("init", "-q", cwd=old)
    memory = Path(clients.resolve(project=str(old), layout="qwen").memory_dir)
    shutil.copytree(EXAMPLES, memory)
    chats = memory.parent / "chats"
    chats.mkdir()
    (chats / "s1.jsonl").write_text(json.dumps({"cwd": str(old), "sessionId": "s1"}) + "\n")
    shutil.move(old, new)
    assert [o["client"] for o in orphans()] == ["qwen"]
    assert mem("relocate", str(old), str(new)).exit_code == 0
    r = mem("path", "--project", str(new), "--layout", "qwen")
    assert tree(Path(r.stdout.strip())) == tree(EXAMPLES)
    assert (Path(r.stdout.strip()).parent / "chats" / "s1.jsonl").exists()


@pytest.mark.parametrize("case", ["new-missing", "nothing-recorded", "same"])
def test_bad_arguments(tmp_path, case):
    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    if case == "new-missing":
        r = mem("relocate", str(old), str(tmp_path / "nowhere"))
        assert r.exit_code == 1 and "must exist" in r.stderr
    elif case == "nothing-recorded":
        r = mem("relocate", str(old), str(new))
        assert r.exit_code == 1 and "no memory or transcripts recorded" in r.stderr
    else:
        r = mem("relocate", str(new), str(new))
        assert r.exit_code == 2


def test_a_merge_removes_only_what_it_merged_so_saves_made_during_the_move_survive(tmp_path):
    """Issue #31: memories saved into the old directory while the merge ran ended in neither directory."""
    from mem.core.jobs.remember import RememberRequest, remember
    from mem.core.memdir.store import MemoryDir
    from mem.core.relocate import apply_relocation, plan_relocation

    old, new, memory, new_memory = moved(tmp_path)
    write_memory(new_memory, "project_new.md", name="new", description="written after the move", type="project")
    (new_memory / "MEMORY.md").write_text("- [New](project_new.md) — written after the move\n")
    plan = plan_relocation(str(old), str(new))
    # the agent, still in the old session, saves while the move runs (between the plan and its end)
    for n in range(4):
        remember(RememberRequest(memory=MemoryDir(str(memory)), text=f"Late fact {n}.", name=f"Late {n}",
                                 type="project", description=f"late {n}", offline=True))
    apply_relocation(plan)
    both = {**tree(memory), **tree(new_memory)} if memory.exists() else tree(new_memory)
    for n in range(4):
        assert f"late_{n}.md" in both or f"late-{n}.md" in both or any(f"Late fact {n}." in v.decode() for v in both.values()), n
    index = (memory / "MEMORY.md").read_text()
    assert index.count("\n") == 4 and "Late 3" in index  # only the late pointers stay behind
    assert "(user_role.md)" in (new_memory / "MEMORY.md").read_text()
