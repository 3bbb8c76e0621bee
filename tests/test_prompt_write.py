"""`mem prompt --client codex|gemini --write`: the memory block kept in AGENTS.md / GEMINI.md."""

from __future__ import annotations

import json
import os

from conftest import git
from mem.core.prompt import AGENTS_MD_BEGIN, AGENTS_MD_END


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    return repo


def test_creates_the_file_then_leaves_it_byte_identical(tmp_path, run_mem):
    repo = _repo(tmp_path)
    r = run_mem("prompt", "--client", "codex", "--write", cwd=str(repo / "src" / "deep"))
    assert r.returncode == 0, r.stderr
    agents = repo / "AGENTS.md"
    first = agents.read_bytes()
    assert first.startswith(AGENTS_MD_BEGIN.encode()) and first.endswith(f"{AGENTS_MD_END}\n".encode())
    assert f"created {agents}" in r.stderr
    block = run_mem("prompt", "--format", "agents-md", cwd=str(repo)).stdout
    assert first.decode() == block  # the same block `mem export --format agents-md` prints
    os.utime(agents, ns=(1_000_000_000, 1_000_000_000))
    again = run_mem("prompt", "--client", "codex", "--write", "--json", cwd=str(repo))
    assert json.loads(again.stdout) == {"path": str(agents), "changed": False, "created": False}
    assert agents.read_bytes() == first and agents.stat().st_mtime_ns == 1_000_000_000


def test_only_the_text_between_the_markers_changes(tmp_path, run_mem):
    repo = _repo(tmp_path)
    gemini = repo / "GEMINI.md"
    gemini.write_text("# Team rules\n\nUse tabs.")
    assert run_mem("prompt", "--client", "gemini", "--write", cwd=str(repo)).returncode == 0
    text = gemini.read_text()
    assert text.startswith("# Team rules\n\nUse tabs.\n\n" + AGENTS_MD_BEGIN)
    # someone edits inside the block and around it: the block comes back, their text stays
    inside = text.replace("## Memory", "## Memory (edited)")
    gemini.write_text("Top note.\n" + inside + "Bottom note.\n")
    r = run_mem("prompt", "--client", "gemini", "--write", cwd=str(repo))
    assert r.returncode == 0 and "updated" in r.stderr
    assert gemini.read_text() == "Top note.\n" + text + "Bottom note.\n"
    assert not (repo / "AGENTS.md").exists()


def test_crlf_file_keeps_its_line_endings_and_round_trips(tmp_path, run_mem):
    repo = _repo(tmp_path)
    agents = repo / "AGENTS.md"
    agents.write_bytes(b"# Rules\r\n\r\nBe brief.\r\n")
    run_mem("prompt", "--client", "codex", "--write", cwd=str(repo))
    data = agents.read_bytes()
    assert data.startswith(b"# Rules\r\n\r\nBe brief.\r\n\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    r = run_mem("prompt", "--client", "codex", "--write", cwd=str(repo))
    assert "up to date" in r.stderr and agents.read_bytes() == data


def test_broken_markers_are_refused_and_the_file_is_untouched(tmp_path, run_mem):
    repo = _repo(tmp_path)
    agents = repo / "AGENTS.md"
    agents.write_text(f"keep\n{AGENTS_MD_BEGIN}\nhalf a block\n")
    r = run_mem("prompt", "--client", "codex", "--write", cwd=str(repo))
    assert r.returncode == 2 and "fix it by hand" in r.stderr
    assert agents.read_text() == f"keep\n{AGENTS_MD_BEGIN}\nhalf a block\n"


def test_a_linked_instructions_file_stays_a_link(tmp_path, run_mem):
    repo = _repo(tmp_path)
    (repo / "CLAUDE.md").write_text("# Shared rules\n")
    (repo / "AGENTS.md").symlink_to("CLAUDE.md")
    assert run_mem("prompt", "--client", "codex", "--write", cwd=str(repo)).returncode == 0
    assert (repo / "AGENTS.md").is_symlink() and AGENTS_MD_BEGIN in (repo / "CLAUDE.md").read_text()


def test_write_needs_a_client(tmp_path, run_mem):
    r = run_mem("prompt", "--write", cwd=str(_repo(tmp_path)))
    assert r.returncode == 2 and "--write needs --client" in r.stderr
