"""The zipapp runs on its own and is reproducible from any path."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IGNORE = shutil.ignore_patterns(".venv", "build", "dist", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info")

pytestmark = pytest.mark.slow


def build_from_copy(tmp: Path, name: str) -> Path:
    src = tmp / name / "mem-src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    out = tmp / name / "mem.pyz"
    subprocess.run([sys.executable, str(src / "scripts" / "build_zipapp.py"), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("zipapp")
    return build_from_copy(tmp, "a"), build_from_copy(tmp, "elsewhere-b")


def test_two_builds_from_different_paths_are_identical(two_builds):
    a, b = two_builds
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()


def test_zipapp_runs_directly_and_names_itself_mem(two_builds, tmp_path, memdir):
    pyz = two_builds[0]
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env -S python3 -sE\n")
    assert os.access(pyz, os.X_OK)
    (memdir / "a.md").write_text("---\nname: a\ndescription: from the zipapp\ntype: user\n---\n")
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    r = subprocess.run([str(pyz), "scan"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("- [user] a.md (") and r.stdout.rstrip().endswith("from the zipapp")
    r = subprocess.run([str(pyz), "--help"], capture_output=True, text=True, env=env)
    assert r.stdout.startswith("Usage: mem ")
    r = subprocess.run([str(pyz), "scan", "--bogus"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "Usage: mem scan" in r.stderr
