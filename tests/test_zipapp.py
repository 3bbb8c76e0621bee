"""The zipapp runs on its own, on the Python it was built for and no other, and is reproducible from any path."""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_memory
from helpers.wheelhouse import offline, wheelhouse
from helpers.zipapp import build_env, build_from_copy, this_trees_zipapp, warm_shiv_root

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow
HERE = "%d.%d" % sys.version_info[:2]
NAME = f"mem-py{HERE}.pyz"
PYENV = os.path.expanduser("~/.pyenv")  # read before the tests' own HOME is set


def other_python() -> str | None:
    """An interpreter of another minor version (3.10 or later, with pip), if this machine has one."""
    names = [os.environ.get("MEM_TEST_OTHER_PYTHON", "")]
    names += sorted(glob.glob(os.path.join(PYENV, "versions/3.*/bin/python3.*[0-9]")))
    names += [f"/usr/bin/python3.{m}" for m in range(10, 20)] + [f"/usr/local/bin/python3.{m}" for m in range(10, 20)]
    for name in names:
        if not name or not os.access(name, os.X_OK):
            continue
        r = subprocess.run([name, "-c", "import sys, pip; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
        version = r.stdout.strip()
        if r.returncode == 0 and version != HERE and tuple(map(int, version.split("."))) >= (3, 10):
            return name
    return None


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The module's builds, all at once: each mostly waits for pip's index and its build environment (16 s, 8 s
    of it CPU). This tree's (the session's, tests/helpers/zipapp.py), another of it from a different path, and
    one for another Python when there is one (whose pip asks the index: the run's wheelhouse is this Python's)."""
    from concurrent.futures import ThreadPoolExecutor

    tmp = tmp_path_factory.mktemp("zipapp")
    python = other_python()
    env = build_env(tmp_path_factory, tmp / "home")
    with ThreadPoolExecutor(3) as pool:
        a = pool.submit(this_trees_zipapp, tmp_path_factory)
        b = pool.submit(lambda: build_from_copy(tmp, "elsewhere-b", env={**env, **offline(wheelhouse(tmp_path_factory))}))
        theirs = pool.submit(build_from_copy, tmp, "other", python, env) if python else None
        yield a, b, python, theirs


@pytest.fixture(scope="module")
def two_builds(builds):
    a, b, _, _ = builds
    return a.result(), b.result()


def test_two_builds_from_different_paths_are_identical(two_builds):
    a, b = two_builds
    assert a.name == b.name == NAME
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()


def test_zipapp_runs_directly_and_names_itself_mem(two_builds, tmp_path, tmp_path_factory, memdir):
    pyz = two_builds[0]
    warm_shiv_root(tmp_path_factory, pyz, tmp_path / "shiv")  # the first run: test_launcher_starts_from_shivs_cache...
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env -S python3 -sE\n")
    assert os.access(pyz, os.X_OK)
    (memdir / "a.md").write_text("---\nname: a\ndescription: from the zipapp\ntype: user\n---\n")
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    # Started as its shebang starts it, by this Python (python3.X on PATH may be another, or a shim).
    r = subprocess.run([sys.executable, "-sE", str(pyz), "scan"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("- [user] a.md (") and r.stdout.rstrip().endswith("from the zipapp")
    if subprocess.run(["python3", "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{HERE}'"],
                      capture_output=True).returncode == 0:
        direct = subprocess.run([str(pyz), "scan"], capture_output=True, text=True, env=env)
        assert direct.returncode == 0 and direct.stdout == r.stdout
    r = subprocess.run([sys.executable, "-sE", str(pyz), "--help"], capture_output=True, text=True, env=env)
    assert r.stdout.startswith("Usage: mem ")
    r = subprocess.run([sys.executable, "-sE", str(pyz), "scan", "--bogus"], capture_output=True, text=True, env=env)
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
    assert first.stderr.count("unpacking") == 1 and f"mem: first run of {NAME}: unpacking into " in first.stderr
    (cached,) = (tmp_path / "shiv").glob(f"{NAME}_*/site-packages")
    assert (cached / "mem" / "__init__.py").is_file()
    again, imported = _imported(pyz, env, "scan")
    assert again.stdout == first.stdout and again.returncode == 0 and "unpacking" not in again.stderr
    assert not {"_bootstrap", "zipfile", "compileall", "subprocess", "anthropic"} & imported
    # Any other shiv setting goes through shiv's bootstrap, as before.
    forced, imported = _imported(pyz, {**env, "SHIV_FORCE_EXTRACT": "1"}, "scan")
    assert forced.returncode == 0 and forced.stdout == first.stdout and "_bootstrap" in imported
    # A cache removed behind its back is extracted again.
    shutil.rmtree(cached.parent)
    rebuilt, imported = _imported(pyz, env, "scan")
    assert rebuilt.stdout == first.stdout and "_bootstrap" in imported and cached.is_dir()


def test_launcher_puts_the_extracted_packages_before_the_interpreters_own(two_builds, tmp_path, tmp_path_factory):
    # The test venv has click installed too; the zipapp must still load its own copy, as shiv does.
    pyz = two_builds[0]
    warm_shiv_root(tmp_path_factory, pyz, tmp_path / "shiv")
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
    assert list((tmp_path / "elsewhere").glob(f"{NAME}_*/site-packages"))
    again, imported = _imported(pyz, env, "--version")
    assert again.stdout == first.stdout and "_bootstrap" not in imported


def _wrong_python_line(r: subprocess.CompletedProcess, built: str, running: str, name: str) -> None:
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr == (f"mem: {name} is built for Python {built}, not {running}; run it with python{built}, "
                        "or use the mem zipapp built for this Python (make zipapp)\n")


def test_a_zipapp_declared_for_another_python_refuses_in_one_line(two_builds, tmp_path):
    # The guard reads only the version the launcher declares: an archive declaring another one,
    # started here, must stop before shiv's bootstrap (or anything compiled) is imported.
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_zipapp

    major, minor = sys.version_info[:2]
    other = tmp_path / f"mem-py{major}.{minor + 1}.pyz"
    shutil.copy(two_builds[0], other)
    build_zipapp.replace_main(str(other), build_zipapp.launcher((major, minor + 1)))
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    r = subprocess.run([sys.executable, "-sE", "-X", "importtime", str(other), "scan"], capture_output=True, text=True, env=env)
    lines = [line for line in r.stderr.splitlines() if not line.startswith("import time:")]
    assert r.returncode == 3 and len(lines) == 1 and f"built for Python {major}.{minor + 1}, not {HERE}" in lines[0]
    assert "_bootstrap" not in r.stderr and not (tmp_path / "shiv").exists()


def test_run_directly_where_python3_is_another_version_it_says_so_in_one_line(two_builds, tmp_path, tmp_path_factory):
    # A machine whose python3 is not the one the archive was built for, and which has no python3.X
    # of that version: env found no python3.X (exit 127); now python3 starts and the launcher says why.
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_zipapp

    major, minor = sys.version_info[:2]
    other = tmp_path / f"mem-py{major}.{minor + 1}.pyz"
    shutil.copy(two_builds[0], other)
    build_zipapp.replace_main(str(other), build_zipapp.launcher((major, minor + 1)))
    other.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)  # python3 here, and no python3.{minor + 1}
    env = {**os.environ, "PATH": str(bin_dir), "SHIV_ROOT": str(tmp_path / "shiv")}
    r = subprocess.run([str(other), "scan"], capture_output=True, text=True, env=env)
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert f"built for Python {major}.{minor + 1}, not {HERE}; run it with python{major}.{minor + 1}" in r.stderr
    two_builds[0].chmod(0o755)
    warm_shiv_root(tmp_path_factory, two_builds[0], tmp_path / "shiv")
    r = subprocess.run([str(two_builds[0]), "--version"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("mem "), r.stderr


def test_one_zipapp_per_python_each_runs_on_its_own_and_refuses_the_other(builds, two_builds, tmp_path, memdir):
    _, _, python, their_build = builds
    if python is None:
        pytest.skip("no second Python (3.10 or later, with pip) on this machine; set MEM_TEST_OTHER_PYTHON")
    theirs_version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                    capture_output=True, text=True, check=True).stdout.strip()
    ours = two_builds[0]
    theirs = their_build.result()
    assert theirs.name == f"mem-py{theirs_version}.pyz"
    assert theirs.read_bytes().startswith(b"#!/usr/bin/env -S python3 -sE\n")
    write_memory(memdir, "a.md", name="a", description="deploys go through staging", type="project")
    env = {**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")}
    _wrong_python_line(subprocess.run([python, "-sE", str(ours), "scan"], capture_output=True, text=True, env=env),
                       HERE, theirs_version, ours.name)
    _wrong_python_line(subprocess.run([sys.executable, "-sE", str(theirs), "scan"], capture_output=True, text=True,
                                      env=env), theirs_version, HERE, theirs.name)
    for py, pyz in ((sys.executable, ours), (python, theirs)):
        first = subprocess.run([py, "-sE", str(pyz), "scan"], capture_output=True, text=True, env=env)
        assert first.returncode == 0 and "deploys go through staging" in first.stdout, first.stderr
        assert "unpacking" in first.stderr
        # The model path imports the SDK and its compiled modules: they load on this Python too.
        r = subprocess.run([py, "-sE", str(pyz), "remember", "deploys need a second reviewer"], capture_output=True,
                           text=True, env={**env, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
        assert "ImportError" not in r.stderr and "ModuleNotFoundError" not in r.stderr
        assert "cannot reach the model server" in r.stderr, r.stderr
    # Run directly, as a user runs it (from the cache unpacked above): its shebang starts whichever python3 is first
    # on PATH. On the one it was built for it runs; on the other it says so in one line, exit 3 (never env's 127).
    for pyz, built, runs in ((ours, HERE, sys.executable), (theirs, theirs_version, python)):
        pyz.chmod(0o755)
        for py, version in ((sys.executable, HERE), (python, theirs_version)):
            bin_dir = tmp_path / f"bin-{version}"
            bin_dir.mkdir(exist_ok=True)
            if not (bin_dir / "python3").exists():
                (bin_dir / "python3").symlink_to(py)
            direct = subprocess.run([str(pyz), "--version"], capture_output=True, text=True,
                                    env={**env, "PATH": f"{bin_dir}:/usr/bin:/bin", "SHIV_ROOT": str(tmp_path / "shiv")})
            if py == runs:
                assert direct.returncode == 0 and direct.stdout.startswith("mem "), (pyz.name, version, direct.stderr)
            else:
                _wrong_python_line(direct, built, version, pyz.name)
