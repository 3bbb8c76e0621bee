"""git as a tool, never as an executor: a repository configured to run programs runs none of them under mem.

A cloned repository's .git/config (or a file its include.path names) can make git run a command
of its choice: core.fsmonitor on any index read, hooks, filter drivers, textconv, an external
diff, a pager, gpg.program for a signed commit, ssh, credential and askpass helpers. Every one
here points at a script that leaves a marker file; every mem command that reads that repository
or keeps the history of a memory directory inside it must leave none.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, STALE_MEMORIES, git, moved_repo, write_memories

HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "post-merge",
              "pre-auto-gc", "post-rewrite", "reference-transaction", "post-index-change", "pre-push",
              "fsmonitor-watchman", "push-to-checkout", "sendemail-validate")


def _marker_script(bin_dir: Path, markers: Path, name: str) -> str:
    """An executable that leaves markers/<name> and succeeds (a filter passes its input through)."""
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\ntouch '{markers}/{name}'\ncat 2>/dev/null\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def _program_settings(bin_dir: Path, markers: Path, prefix: str) -> str:
    """A git config text setting every program git can be told to run, each to its own marker script."""
    hooks = bin_dir / f"{prefix}hooks"
    hooks.mkdir()
    for hook in HOOK_NAMES:
        _marker_script(hooks, markers, f"{prefix}hook-{hook}")

    def run(name: str) -> str:
        return _marker_script(bin_dir, markers, f"{prefix}{name}")

    return (
        "[core]\n"
        f"\tfsmonitor = {run('fsmonitor')}\n"
        f"\thooksPath = {hooks}\n"
        f"\tpager = {run('core-pager')}\n"
        f"\tsshCommand = {run('ssh')}\n"
        f"\taskPass = {run('askpass')}\n"
        f"\teditor = {run('editor')}\n"
        f"\talternateRefsCommand = {run('alternate-refs')}\n"
        "\tuntrackedCache = true\n"
        "[pager]\n"
        f"\tlog = {run('pager-log')}\n"
        f"\tgrep = {run('pager-grep')}\n"
        f"\tstatus = {run('pager-status')}\n"
        "[filter \"evil\"]\n"
        f"\tclean = {run('filter-clean')}\n"
        f"\tsmudge = {run('filter-smudge')}\n"
        "\trequired = false\n"
        "[diff \"evil\"]\n"
        f"\ttextconv = {run('textconv')}\n"
        f"\tcommand = {run('diff-command')}\n"
        "[diff]\n"
        f"\texternal = {run('diff-external')}\n"
        "[credential]\n"
        f"\thelper = !{run('credential')}\n"
        "[gpg]\n"
        f"\tprogram = {run('gpg')}\n"
        "[gpg \"ssh\"]\n"
        f"\tprogram = {run('gpg-ssh')}\n"
        "[log]\n"
        "\tshowSignature = true\n"
        "[commit]\n"
        "\tgpgSign = true\n"
        "[sequence]\n"
        f"\teditor = {run('sequence-editor')}\n"
    )


def _sign(repo: Path) -> None:
    """Replace HEAD with the same commit carrying a (bogus) signature: `git log` with showSignature checks it."""
    body = git("cat-file", "commit", "HEAD", cwd=repo)
    head, _, message = body.partition("\n\n")
    signed = (head + "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\n"
              + message + "\n")
    oid = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=signed,
                         capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", "HEAD", oid, cwd=repo)


def hostile_repo(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``moved_repo`` armed: every program setting in .git/config and in an included file; returns (repo, markers)."""
    moved_repo(root)
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (root / "src/net/retry.py").write_text("def backoff(n):\n    return 3 ** n\n")  # a change for status/diff
    git("add", ".gitattributes", cwd=root)
    git("commit", "-q", "-m", "attributes", cwd=root)
    _sign(root)
    markers = tmp_path / "markers"
    markers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    included = tmp_path / "included.gitconfig"
    included.write_text(_program_settings(bin_dir, markers, "include-"))
    # git runs nothing from here on in this test except through mem
    with open(root / ".git" / "config", "a") as config:
        config.write(_program_settings(bin_dir, markers, ""))
        config.write(f"[include]\n\tpath = {included}\n")
        config.write("[remote \"origin\"]\n\turl = ext::sh -c touch% " + str(markers / "ext-remote") + "\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    return root, markers


def ran(markers: Path) -> list[str]:
    return sorted(os.listdir(markers))


@pytest.fixture
def armed(tmp_path, memdir):
    repo, markers = hostile_repo(tmp_path / "repo", tmp_path)
    write_memories(memdir, STALE_MEMORIES)  # src/util/strings.py: a path not at HEAD
    return repo, markers


def test_the_armed_repository_does_run_its_programs_under_plain_git(armed):
    """The test's own check: the settings are live (else every assertion below would pass for nothing)."""
    repo, markers = armed
    subprocess.run(["git", "check-ignore", "--stdin"], cwd=repo, input="src/util/strings.py\n",
                   capture_output=True, text=True)
    subprocess.run(["git", "log", "-1"], cwd=repo, capture_output=True, text=True)
    assert {"fsmonitor", "include-fsmonitor", "include-gpg"} & set(ran(markers))


def test_verify_runs_no_program_of_the_repository(armed, run_mem):
    repo, markers = armed
    r = run_mem("verify", cwd=str(repo))
    assert r.returncode in (0, 1), r.stderr
    assert "src/util/strings.py" in r.stdout + r.stderr
    assert ran(markers) == []
    r = run_mem("verify", "--json", "--repo", str(repo))
    assert r.returncode in (0, 1), r.stderr
    assert ran(markers) == []


def test_dream_runs_no_program_of_the_repository(armed, run_mem):
    repo, markers = armed
    r = run_mem("dream", "--offline", "--force", "--json", cwd=str(repo))
    assert r.returncode == 0, r.stderr
    stale = [f for f in json.loads(r.stdout)["findings"] if f["kind"] == "stale-claim"]
    assert stale  # the repository was read
    assert ran(markers) == []


def test_dream_all_projects_runs_no_program_of_any_projects_repository(armed, run_mem, tmp_path, monkeypatch):
    from mem.core.paths import sanitize_path

    repo, markers = armed
    monkeypatch.delenv("MEM_DIR")
    project = tmp_path / "env-home" / "projects" / sanitize_path(str(repo.resolve()))
    write_memories(project / "memory", STALE_MEMORIES)
    (project / f"{uuid.uuid4()}.jsonl").write_text(json.dumps({"type": "user", "cwd": str(repo / "src")}) + "\n")
    r = run_mem("dream", "--all-projects", "--offline", "--force", "--json",
                env={"CLAUDE_CONFIG_DIR": str(tmp_path / "env-home")}, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert any(f["kind"] == "stale-claim" for d in json.loads(r.stdout) for f in d["findings"])
    assert ran(markers) == []


def test_status_and_the_hooks_run_no_program_of_the_repository(armed, run_mem, tmp_path):
    repo, markers = armed
    assert run_mem("verify", cwd=str(repo)).returncode in (0, 1)  # leaves notes: recall reads them
    assert run_mem("status", cwd=str(repo)).returncode == 0
    assert run_mem("status", "--json", cwd=str(repo)).returncode == 0
    for event, command in (("UserPromptSubmit.json", ("recall", "--hook", "--offline")),
                           ("SessionStart-startup.json", ("prompt", "--hook"))):
        data = json.loads((FIXTURES / "hooks" / "claude-code" / event).read_text(encoding="utf-8"))
        data.update(cwd=str(repo), transcript_path=str(tmp_path / "no-transcript.jsonl"))
        if "prompt" in data:
            data["prompt"] = "where are slugs made, src/util/strings.py?"
        r = run_mem(*command, input=json.dumps(data), cwd=str(repo))
        assert r.returncode == 0, r.stderr
    assert ran(markers) == []


def test_history_of_a_memory_directory_inside_the_repository_runs_none_of_its_programs(tmp_path, run_mem,
                                                                                         monkeypatch):
    repo, markers = hostile_repo(tmp_path / "repo", tmp_path)
    memdir = repo / "notes" / "memory"
    memdir.mkdir(parents=True)
    (memdir / ".gitattributes").write_text("* filter=evil diff=evil\n")
    monkeypatch.setenv("MEM_DIR", str(memdir))
    r = run_mem("remember", "--type", "project", "--name", "slugs", "--description", "where slugs are made",
                "Slugs are made in `src/util/strings.py`.", cwd=str(repo))
    assert r.returncode == 0, r.stderr
    (memdir / "outside.md").write_text("---\nname: outside\ndescription: written by hand\ntype: user\n---\n\nHi.\n")
    for args in (("history",), ("history", "--json"), ("status",), ("verify",), ("undo",),
                 ("dream", "--offline", "--force")):
        r = run_mem(*args, cwd=str(repo))
        assert r.returncode in (0, 1), (args, r.stderr)
    assert ran(markers) == []


def test_git_variables_of_the_callers_environment_reach_no_git(armed, run_mem, tmp_path):
    """A GIT_DIR inherited from a hook would point git at another repository; the others name programs."""
    repo, markers = armed
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other)
    hostile = _marker_script(tmp_path / "bin", markers, "env-program")
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_EXTERNAL_DIFF": hostile,
           "GIT_SSH_COMMAND": hostile, "GIT_ASKPASS": hostile, "SSH_ASKPASS": hostile, "GIT_PAGER": hostile,
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": hostile,
           "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{hostile}'"}
    r = run_mem("verify", "--json", "--repo", str(repo), env=env)
    assert r.returncode in (0, 1), r.stderr
    assert "src/util/strings.py" in r.stdout  # this repository was read, not the other
    assert ran(markers) == []
