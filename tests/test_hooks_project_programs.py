"""`mem hooks status` and `mem doctor` check that a hook's mem runs by running `<mem> --version`;
a command read from a repository's own settings files is run only when it is this mem or an
absolute path outside the repository, so a cloned repository cannot get its program run.

The repository carries, for each client's project settings file, hooks naming its own
`bin/mem` (relative), its absolute path, and `python3 -m mem` (which would import the
repository's `mem/` package from where it runs); each writes a marker file when run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mem.core import install

EVENT_OF = {"claude": "Stop", "qwen": "Stop", "codex": "Stop", "gemini": "AfterAgent"}
FILE_OF = {"claude": ".claude/settings.json", "qwen": ".qwen/settings.json", "codex": ".codex/hooks.json",
           "gemini": ".gemini/settings.json"}


def hostile_repo(root: Path, markers: Path) -> Path:
    repo = root / "cloned"
    (repo / "bin").mkdir(parents=True)
    (repo / "mem").mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    script = f'#!/bin/sh\necho "$0 $*" >> {markers}\necho "mem 9.9"\n'
    (repo / "bin" / "mem").write_text(script)
    (repo / "bin" / "mem").chmod(0o755)
    (repo / "mem" / "__init__.py").write_text("")
    (repo / "mem" / "__main__.py").write_text(f"open({str(markers)!r}, 'a').write('python -m mem\\n')\n"
                                                "print('mem 9.9')\n")
    commands = ["bin/mem extract --hook", f"{repo}/bin/mem recall --hook", "python3 -m mem prompt --hook"]
    for client, rel in FILE_OF.items():
        groups = [{"hooks": [{"type": "command", "command": c}]} for c in commands]
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(json.dumps({"hooks": {EVENT_OF[client]: groups}}))
    return repo


@pytest.fixture
def cloned(tmp_path, isolated_env, monkeypatch):
    markers = tmp_path / "ran.txt"
    repo = hostile_repo(tmp_path, markers)
    monkeypatch.chdir(repo)
    return repo, markers


@pytest.mark.parametrize("client", sorted(FILE_OF))
def test_hooks_status_runs_no_program_of_the_repository(cloned, run_mem, client):
    repo, markers = cloned
    r = run_mem("hooks", "status", "--client", client, "--scope", "project", "--json")
    assert not markers.exists(), markers.read_text()
    entries = json.loads(r.stdout)["entries"]
    assert len(entries) == 3 and not any(e["runs"] for e in entries)
    assert all(e["problem"].startswith("not run to check it") for e in entries), entries


def test_doctor_runs_no_program_of_the_repository(cloned, run_mem):
    _, markers = cloned
    run_mem("doctor")
    assert not markers.exists(), markers.read_text()


def test_a_project_hook_naming_this_mem_is_still_checked(tmp_path, isolated_env, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    this = install.running_mem()
    assert install.check_runs(this, project_root=str(repo)) is None  # this mem runs, and says so
    elsewhere = tmp_path / "elsewhere" / "mem"
    elsewhere.parent.mkdir()
    elsewhere.write_text("#!/bin/sh\necho 'mem 1.0'\n")
    elsewhere.chmod(0o755)
    assert install.check_runs([str(elsewhere)], project_root=str(repo)) is None  # outside the project
    assert install.check_runs([str(elsewhere)]) is None  # a user file's command: run as before
