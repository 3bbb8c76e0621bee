"""The zipapp runs on its own and is reproducible from any path."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_memory

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
    assert r.returncode == 2 and r.stderr == "mem: error: No such option '--bogus'. Try 'mem scan --help'.\n"


def _imported(pyz: Path, env: dict, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    r = subprocess.run([sys.executable, "-sE", "-X", "importtime", str(pyz), *args], capture_output=True, text=True, env=env)
    names = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:") and "|" in line}
    return r, names


def test_launcher_starts_from_shivs_cache_without_reopening_the_archive(two_builds, tmp_path, memdir):
    pyz = two_builds[0]
    write_memory(memdir, "a.md", name="a", description="launcher check", type="user")
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    first, imported = _imported(pyz, env, "scan")
    assert first.returncode == 0 and "launcher check" in first.stdout
    assert "_bootstrap" in imported  # first run: shiv's bootstrap extracts site-packages
    (cached,) = (tmp_path / "shiv").glob("mem.pyz_*/site-packages")
    assert (cached / "mem" / "__init__.py").is_file()
    again, imported = _imported(pyz, env, "scan")
    assert again.stdout == first.stdout and again.returncode == 0
    assert not {"_bootstrap", "zipfile", "compileall", "subprocess", "anthropic"} & imported
    # Any other shiv setting goes through shiv's bootstrap, as before.
    forced, imported = _imported(pyz, {**env, "SHIV_FORCE_EXTRACT": "1"}, "scan")
    assert forced.returncode == 0 and forced.stdout == first.stdout and "_bootstrap" in imported
    # A cache removed behind its back is extracted again.
    shutil.rmtree(cached.parent)
    rebuilt, imported = _imported(pyz, env, "scan")
    assert rebuilt.stdout == first.stdout and "_bootstrap" in imported and cached.is_dir()


def test_launcher_puts_the_extracted_packages_before_the_interpreters_own(two_builds, tmp_path):
    # The test venv has click installed too; the zipapp must still load its own copy, as shiv does.
    pyz = two_builds[0]
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    subprocess.run([sys.executable, "-sE", str(pyz), "--version"], capture_output=True, env=env, check=True)
    r = subprocess.run([sys.executable, "-sE", "-v", str(pyz), "--version"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("mem")
    loaded = [line for line in r.stderr.splitlines() if "/click/" in line and "code object from" in line]
    assert loaded and all(str(tmp_path / "shiv") in line for line in loaded), loaded
    assert "/_bootstrap/" not in r.stderr  # started by the launcher, not shiv's runtime


def test_launcher_reads_a_shiv_root_named_by_another_variable(two_builds, tmp_path):
    pyz = two_builds[0]
    env = {**os.environ, "SHIV_ROOT": "$MEM_ZIPAPP_CACHE", "MEM_ZIPAPP_CACHE": str(tmp_path / "elsewhere")}
    first, imported = _imported(pyz, env, "--version")
    assert first.returncode == 0 and "_bootstrap" in imported
    assert list((tmp_path / "elsewhere").glob("mem.pyz_*/site-packages"))
    again, imported = _imported(pyz, env, "--version")
    assert again.stdout == first.stdout and "_bootstrap" not in imported
