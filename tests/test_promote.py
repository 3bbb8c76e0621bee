"""mem promote / mem demote: user-level memory, and how it reaches the agent (session start, recall)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_memory
from mem.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "memory"
FISH = "---\nname: shell\ndescription: the user's shell is fish, not bash\ntype: user\n---\n\nThe user uses fish, not bash: give fish syntax for shell snippets.\n"


def mem(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "user-memory"
    monkeypatch.setenv("MEM_USER_DIR", str(d))
    return d


@pytest.fixture
def project(memdir) -> Path:
    shutil.copytree(EXAMPLES, memdir, dirs_exist_ok=True)
    (memdir / "user_shell.md").write_text(FISH)
    with open(memdir / "MEMORY.md", "a") as fh:
        fh.write("- [Shell](user_shell.md) — fish, not bash\n")
    return memdir


def test_the_default_user_level_directory_is_ours_not_a_clients(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    r = mem("path", "--user")
    home = Path(r.stdout.strip()).parents[3]
    assert r.stdout.strip() == str(home / ".local" / "share" / "mem" / "memory")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert mem("path", "--user").stdout.strip() == str(tmp_path / "data" / "mem" / "memory")


def test_promote_moves_the_file_and_its_pointer_and_each_side_is_undoable(project, user_dir):
    r = mem("promote", "user_shell.md", "--to", "user")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"{user_dir / 'user_shell.md'}\n"
    assert (user_dir / "user_shell.md").read_text() == FISH
    assert (user_dir / "MEMORY.md").read_text() == "- [Shell](user_shell.md) — fish, not bash\n"
    assert not (project / "user_shell.md").exists()
    assert "user_shell.md" not in (project / "MEMORY.md").read_text()
    assert " promote " in mem("history", "--dir", str(user_dir)).stdout
    assert mem("undo", "--dir", str(project)).exit_code == 0  # the project's side comes back
    assert (project / "user_shell.md").read_text() == FISH
    assert "(user_shell.md)" in (project / "MEMORY.md").read_text()


def test_copy_keeps_the_project_one_and_a_different_user_file_is_refused(project, user_dir):
    assert mem("promote", "--copy", "user_shell.md").exit_code == 0
    assert (project / "user_shell.md").exists() and (user_dir / "user_shell.md").exists()
    assert mem("promote", "--copy", "user_shell.md").exit_code == 0  # the same bytes: nothing to do
    (project / "user_shell.md").write_text(FISH.replace("fish", "zsh"))
    r = mem("promote", "user_shell.md")
    assert r.exit_code == 4 and "already has a different user_shell.md" in r.stderr
    assert (user_dir / "user_shell.md").read_text() == FISH


def test_demote_brings_it_back(project, user_dir):
    assert mem("promote", "user_shell.md").exit_code == 0
    r = mem("demote", "user_shell.md")
    assert r.exit_code == 0, r.stderr
    assert (project / "user_shell.md").read_text() == FISH
    assert (project / "MEMORY.md").read_text().count("(user_shell.md)") == 1
    assert not (user_dir / "user_shell.md").exists()
    assert (user_dir / "MEMORY.md").read_text() == ""


@pytest.mark.parametrize("target,code,message", [
    ("MEMORY.md", 2, "not a topic file"),
    ("missing.md", 1, "no memory missing.md"),
    ("../outside.md", 4, "escapes"),
])
def test_what_cannot_be_promoted(project, user_dir, target, code, message):
    r = mem("promote", target)
    assert r.exit_code == code and message in r.stderr
    assert not user_dir.exists()


def test_session_start_adds_the_user_level_index(project, user_dir, tmp_path):
    assert mem("promote", "user_shell.md").exit_code == 0
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionStart"})
    r = mem("prompt", "--hook", input=payload)
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    project_index = context.index("## MEMORY.md")
    user_index = context.index("## User-level memory (shared by all the user's projects)")
    assert project_index < user_index
    assert context[user_index:].count("- [Shell](user_shell.md) — fish, not bash") == 1
    assert str(user_dir) in context[user_index:]


def test_recall_searches_user_level_after_the_projects_own_labelled(project, user_dir):
    write_memory(project, "project_shell_scripts.md", name="shell scripts",
                 description="the shell scripts in deploy/ are bash, run by CI", type="project",
                 body="deploy/*.sh are bash scripts run by CI; keep them POSIX.\n")
    assert mem("promote", "user_shell.md").exit_code == 0
    r = mem("recall", "--offline", "--json", "which shell syntax for the deploy scripts, fish or bash")
    selected = json.loads(r.stdout)["selected"]
    paths = [s["path"] for s in selected]
    assert paths[0] == str(project / "project_shell_scripts.md")
    assert str(user_dir / "user_shell.md") in paths
    user = next(s for s in selected if s["path"] == str(user_dir / "user_shell.md"))
    assert user["header"].startswith("User-level memory (the user's own, shared by all their projects):\n")
    text = mem("recall", "--offline", "fish or bash").stdout
    assert "User-level memory" in text and "The user uses fish" in text


def test_recall_with_no_project_memories_still_finds_user_level(memdir, user_dir):
    user_dir.mkdir()
    (user_dir / "user_shell.md").write_text(FISH)
    r = mem("recall", "--offline", "--json", "fish or bash for shell snippets")
    data = json.loads(r.stdout)
    assert [s["path"] for s in data["selected"]] == [str(user_dir / "user_shell.md")]
    assert data["skipped"] is None


def test_demote_into_a_qwen_project_lifts_the_type_qwen_code_reads(user_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    user_dir.mkdir()
    shutil.copy(EXAMPLES / "user-prefers-tabs.md", user_dir)  # Claude Code's metadata: layout
    project = tmp_path / "proj"
    project.mkdir()
    r = mem("demote", "user-prefers-tabs.md", "--project", str(project), "--layout", "qwen")
    assert r.exit_code == 0, r.stderr
    text = Path(r.stdout.strip()).read_text()
    assert ".qwen" in r.stdout and "\n  type: user\n" in text and "\ntype: user\n---\n" in text


def test_a_copy_left_in_the_project_is_not_surfaced_twice(project, user_dir):
    assert mem("promote", "--copy", "user_shell.md").exit_code == 0
    r = mem("recall", "--offline", "--json", "fish or bash for shell snippets")
    paths = [s["path"] for s in json.loads(r.stdout)["selected"]]
    assert str(project / "user_shell.md") in paths and str(user_dir / "user_shell.md") not in paths


def test_a_user_level_directory_linked_to_the_projects_is_refused(project, tmp_path, monkeypatch):
    """Issue #31: with MEM_USER_DIR a symlink to the project's directory, promote said "moved" and deleted the file."""
    link = tmp_path / "user-link"
    link.symlink_to(project)
    monkeypatch.setenv("MEM_USER_DIR", str(link))
    r = mem("promote", "user_shell.md")
    assert r.exit_code == 2 and "is the user-level one" in r.stderr
    assert (project / "user_shell.md").read_text() == FISH
