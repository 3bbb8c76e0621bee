"""examples/codex-mem, the README's worked wrapper, run as a user runs it: around a fake `codex`.

The fake `codex` records its arguments and stdin and writes the session file the
real codex-cli 0.171.0 wrote (tests/fixtures/codex-0.171.0), as `codex exec` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, write_memory
from fakeapi import first_user_text
from mem.core.prompt import AGENTS_MD_BEGIN

ROOT = Path(__file__).resolve().parent.parent
WRAPPER = ROOT / "examples" / "codex-mem"
ROLLOUT = next((ROOT / "tests" / "fixtures" / "codex-0.171.0" / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl"))

FAKE_CODEX = f"""#!{sys.executable}
import json, os, shutil, sys
home = os.environ.get("CODEX_HOME") or os.path.join(os.environ["HOME"], ".codex")
with open(os.environ["FAKE_CODEX_LOG"], "w") as log:
    json.dump({{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}, log)
day = os.path.join(home, "sessions", "2026", "11", "27")
os.makedirs(day, exist_ok=True)
shutil.copy({str(ROLLOUT)!r}, os.path.join(day, {ROLLOUT.name!r}))
print("Noted: the staging database is named tern-42.")
sys.exit(int(os.environ.get("FAKE_CODEX_STATUS", "0")))
"""


@pytest.fixture
def wrapped(tmp_path, mem_exe, memdir, fake_api):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text(FAKE_CODEX)
    (bin_dir / "codex").chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    log = tmp_path / "codex.json"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.path.dirname(mem_exe)}:{os.environ['PATH']}",
           "FAKE_CODEX_LOG": str(log)}

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", str(WRAPPER), *args], cwd=repo, env={**env, **extra}, capture_output=True,
                              text=True, timeout=120)

    return run, repo, log


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_recall_and_prompt_before_extract_after(wrapped, memdir, fake_api):
    run, repo, log = wrapped
    write_memory(memdir, "deploy-staging.md", name="deploy-staging", description="how staging deploys run",
                 type="project", body="Staging deploys need MIGRATION_TIMEOUT=900.")
    fake_api.reply_text("Nothing.")
    r = run("-s", "read-only", "how do staging deploys run")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Noted: the staging database is named tern-42.\n"
    called = json.loads(log.read_text())
    assert called["argv"] == ["exec", "-s", "read-only", "how do staging deploys run"]
    assert "MIGRATION_TIMEOUT=900" in called["stdin"]  # the relevant memory reached Codex
    assert AGENTS_MD_BEGIN in (repo / "AGENTS.md").read_text()
    (request,) = fake_api.requests  # one extraction, over the session Codex wrote
    prompt = first_user_text(request["body"])
    for fact in ("blue-heron", "quartz-7", "tern-42"):
        assert fact in prompt


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_codex_status_is_kept_and_nothing_relevant_means_empty_stdin(wrapped, fake_api):
    run, repo, log = wrapped
    fake_api.reply_text("Nothing.")
    r = run("unrelated words entirely", FAKE_CODEX_STATUS="3")
    assert r.returncode == 3
    assert json.loads(log.read_text())["stdin"] == ""
    assert len(fake_api.requests) == 1  # extraction still ran on what the session wrote


def test_the_readme_shows_the_script_as_it_is():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("### A wrapper around Codex", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    script = WRAPPER.read_text().splitlines(keepends=True)
    body = "".join(script[:1] + script[next(i for i, line in enumerate(script) if line.startswith("set -u")):])
    assert block == body
