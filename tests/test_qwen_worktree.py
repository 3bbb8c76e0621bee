"""qwen-code 0.24 keys a linked worktree's memory folder by the worktree (0.15: by the main repository).

Facts: reference/real-clients.md (2026-11-26: 0.24.4 run in a repository and in a linked worktree
made two project folders, each with memory/), and the 0.24.4 bundle's getAutoMemoryRoot: the key is
findGitRoot(projectRoot) (the nearest directory holding .git, a worktree's own), or the project root
with QWEN_CODE_MEMORY_PROJECT_SCOPE=workspace. Which release is installed is read from the package.json
of the ``qwen`` on PATH, as npm installs it (bin/qwen -> lib/node_modules/@qwen-code/qwen-code/cli.js).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import write_memory
from mem import clients
from mem.clients import qwen
from mem.core import paths


def install_qwen(tmp: Path, version: str) -> str:
    """A qwen-code 'installed' as npm lays it out; returns the bin directory for PATH."""
    package = tmp / f"npm-{version}" / "lib" / "node_modules" / "@qwen-code" / "qwen-code"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@qwen-code/qwen-code", "version": version}))
    (package / "cli.js").write_text("#!/usr/bin/env node\n")
    (package / "cli.js").chmod(0o755)
    bin_dir = tmp / f"npm-{version}" / "bin"
    bin_dir.mkdir()
    os.symlink(package / "cli.js", bin_dir / "qwen")
    return str(bin_dir)


@pytest.fixture
def worktree(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo, wt = tmp_path / "repo", tmp_path / "wt"
    repo.mkdir()

    def git(*args, cwd=repo):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    git("init", "-q")
    (repo / "README").write_text("x\n")
    git("add", "README")
    git("commit", "-q", "-m", "init")
    git("worktree", "add", "-q", "--detach", str(wt))
    (wt / "sub").mkdir()
    return repo, wt


def folder(path: Path) -> str:
    return str(Path.home() / ".qwen" / "projects" / paths.sanitize_path(str(path)) / "memory")


def test_the_installed_release_decides_the_folder(worktree, tmp_path):
    repo, wt = worktree
    for version, keyed_by in (("0.15.10", repo), ("0.24.4", wt)):
        env = {**os.environ, "PATH": install_qwen(tmp_path, version)}
        assert qwen.installed_version(env) == tuple(int(p) for p in version.split("."))
        for where in (wt, wt / "sub"):
            assert clients.resolve(project=str(where), layout="qwen", env=env).memory_dir == folder(keyed_by)
    env = {**os.environ, "PATH": str(tmp_path / "nothing")}
    assert qwen.installed_version(env) is None  # not installed: the current release's rule
    assert clients.resolve(project=str(wt), layout="qwen", env=env).memory_dir == folder(wt)
    env["QWEN_CODE_MEMORY_PROJECT_SCOPE"] = "workspace"
    assert clients.resolve(project=str(wt / "sub"), layout="qwen", env=env).memory_dir == folder(wt / "sub")


def test_a_qwen_hook_in_a_worktree_recalls_the_worktrees_memory(worktree, tmp_path, run_mem):
    repo, wt = worktree
    for where, what in ((repo, "main checkout"), (wt, "worktree")):
        write_memory(Path(folder(where)), "staging.md", name="staging", description=f"{what}: staging deploys fail",
                     type="project", body="Rerun.\n")
    payload = json.dumps({"session_id": "s", "cwd": str(wt), "hook_event_name": "UserPromptSubmit",
                          "transcript_path": str(Path.home() / ".qwen/projects/x/chats/s.jsonl"),
                          "timestamp": "2026-11-27T00:00:00.000Z", "prompt": "why do staging deploys fail"})
    out = run_mem("recall", "--hook", "--offline", input=payload, env={"MEM_QWEN_VERSION": "0.24.4"}).stdout
    assert "worktree: staging" in out and "main checkout" not in out
    out = run_mem("recall", "--hook", "--offline", input=payload, env={"MEM_QWEN_VERSION": "0.15.10"}).stdout
    assert "main checkout: staging" in out and "worktree:" not in out


def test_mem_path_offers_the_folder_qwen_015_shared(worktree, run_mem):
    repo, wt = worktree
    write_memory(Path(folder(repo)), "learned.md", name="learned", description="learned in the worktree under 0.15",
                 body="Kept with the main checkout's.\n")
    where = ("--project", str(wt), "--layout", "qwen")
    new = {"MEM_QWEN_VERSION": "0.24.4"}
    data = json.loads(run_mem("path", *where, "--json", env=new).stdout)
    assert (data["memory_dir"], data["earlier_memory_dir"]) == (folder(wt), folder(repo))
    r = run_mem("path", *where, env=new)
    assert f"mem import --layout qwen --from-project {repo}" in r.stderr
    assert json.loads(run_mem("path", *where, "--json", env={"MEM_QWEN_VERSION": "0.15.10"}).stdout)[
        "earlier_memory_dir"] is None  # 0.15: the same folder
    r = run_mem("import", "--layout", "qwen", "--from-project", str(repo), "--project", str(wt), env=new)
    assert r.returncode == 0, r.stderr
    assert (Path(folder(wt)) / "learned.md").exists()
    assert json.loads(run_mem("path", *where, "--json", env=new).stdout)["earlier_memory_dir"] is None


def test_qwen_codes_own_dirs_move_with_its_environment(tmp_path):
    """0.24.4's Storage and getMemoryBaseDir: QWEN_HOME (settings and all), QWEN_RUNTIME_DIR (sessions and
    memory), QWEN_CODE_MEMORY_BASE_DIR (memory only)."""
    project = tmp_path / "p"
    project.mkdir()
    slug = paths.sanitize_path(str(project))
    env = {**os.environ, "QWEN_HOME": str(tmp_path / "qh")}
    r = clients.resolve(project=str(project), layout="qwen", env=env)
    assert (r.memory_dir, r.transcripts_dir) == (f"{tmp_path}/qh/projects/{slug}/memory", f"{tmp_path}/qh/projects/{slug}/chats")
    env["QWEN_RUNTIME_DIR"] = str(tmp_path / "rt")
    env["QWEN_CODE_MEMORY_BASE_DIR"] = str(tmp_path / "mb")
    r = clients.resolve(project=str(project), layout="qwen", env=env)
    assert (r.memory_dir, r.transcripts_dir) == (f"{tmp_path}/mb/projects/{slug}/memory", f"{tmp_path}/rt/projects/{slug}/chats")
    assert [b for b in clients.project_bases("qwen", env)] == [("qwen", f"{tmp_path}/mb/projects", f"{tmp_path}/rt/projects")]
    from mem.core.install import settings_path

    assert settings_path("qwen", "user", str(project), env) == f"{tmp_path}/qh/settings.json"


def test_no_env_given_means_the_process_environment(tmp_path, monkeypatch):
    """env=None is the process's environment in every qwen function, as everywhere in mem.clients
    (paths.environ_of): the same answers as given os.environ explicitly."""
    project = tmp_path / "p"
    project.mkdir()
    root, home = str(project), paths.home_dir()
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qh"))
    assert qwen.global_dir(home) == f"{tmp_path}/qh"
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "rt"))
    monkeypatch.setenv("QWEN_CODE_MEMORY_BASE_DIR", str(tmp_path / "mb"))
    slug = paths.sanitize_path(root)
    assert qwen.runtime_dir(home) == f"{tmp_path}/rt"
    assert qwen.memory_base(home) == f"{tmp_path}/mb"
    assert qwen.keyed_memory_dir(root, home) == f"{tmp_path}/mb/projects/{slug}/memory"
    assert qwen.user_tier_dir(home) == f"{tmp_path}/mb/memories"
    assert qwen.transcripts_dir(root) == f"{tmp_path}/rt/projects/{slug}/chats"
    assert qwen.memory_dir(root, None, None)[0] == f"{tmp_path}/mb/projects/{slug}/memory"
    for name in ("global_dir", "runtime_dir", "memory_base", "user_tier_dir"):
        assert getattr(qwen, name)(home) == getattr(qwen, name)(home, os.environ), name


def test_mem_path_follows_qwen_home_in_the_environment(tmp_path, monkeypatch, run_mem):
    """The public entry: QWEN_HOME set in the environment mem runs in moves qwen-code's directories."""
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qh"))
    doc = json.loads(run_mem("path", "--layout", "qwen", "--project", str(project), "--json").stdout)
    slug = paths.sanitize_path(str(project))
    assert (doc["memory_dir"], doc["transcripts_dir"]) == (f"{tmp_path}/qh/projects/{slug}/memory",
                                                           f"{tmp_path}/qh/projects/{slug}/chats")


def test_a_qwen_code_projects_user_level_is_its_user_tier(tmp_path, run_mem):
    """qwen-code 0.24.4 puts ~/.qwen/memories/MEMORY.md into every session's system prompt (seen with the
    real client): for its projects, that is the user level mem path --user names and promote moves to."""
    project = tmp_path / "p"
    project.mkdir()
    memory = Path(clients.resolve(project=str(project), layout="qwen").memory_dir)
    write_memory(memory, "pnpm.md", name="pnpm", description="the user prefers pnpm", body="pnpm.\n")
    (memory / "MEMORY.md").write_text("- [pnpm](pnpm.md) — the user prefers pnpm\n")
    tier = Path.home() / ".qwen" / "memories"
    where = ("--project", str(project), "--layout", "qwen")
    assert run_mem("path", "--user", *where, env={"MEM_QWEN_VERSION": "0.24.4"}).stdout.strip() == str(tier)
    assert run_mem("path", "--user", *where, env={"MEM_QWEN_VERSION": "0.15.10"}).stdout.strip() == \
        paths.user_memory_dir()  # 0.15 has no user tier: mem's own
    assert run_mem("path", "--user", "--project", str(project), "--layout", "claude").stdout.strip() == \
        paths.user_memory_dir()
    r = run_mem("promote", "pnpm.md", *where, env={"MEM_QWEN_VERSION": "0.24.4"})
    assert r.returncode == 0, r.stderr
    assert (tier / "pnpm.md").exists() and not (memory / "pnpm.md").exists()
    assert "pnpm.md" in (tier / "MEMORY.md").read_text()
