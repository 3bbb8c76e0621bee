"""The zipapp of this tree, built once per test session, and shiv's cache of it, unpacked once.

tests/test_zipapp.py and tests/test_packaging.py both need the zipapp `make zipapp` builds from this
tree (8 s of CPU, most of it pip's); under `make test` (xdist, --dist loadfile) the two modules run on
different workers, often at the same time. The first to ask builds it, holding a file lock in the
directory every worker's basetemp lives in; the other waits for it and takes the same file.

Each run of the archive with a new SHIV_ROOT unpacks it (38 MB, 2.8 s of CPU): a test whose point is not
the first run starts from a copy of one unpacked cache instead (``warm_shiv_root``).

uses: tests/helpers/session.py (the shared directory and its lock), tests/helpers/wheelhouse.py (pip's packages)

Example: pyz = this_trees_zipapp(tmp_path_factory); warm_shiv_root(tmp_path_factory, pyz, tmp_path / "shiv")
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.isolation import LEAKY_PREFIXES
from helpers.session import locked, shared_dir, temp_env
from helpers.wheelhouse import PIP_CACHE, offline, wheelhouse

ROOT = Path(__file__).resolve().parent.parent.parent
IGNORE = shutil.ignore_patterns(".venv", "build", "dist", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info")


def build_from_copy(tmp: Path, name: str, python: str = sys.executable, env: dict | None = None) -> Path:
    """Build from a copy of the tree at another path; the archive gets its default name there (src/dist)."""
    src = tmp / name / "mem-src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    r = subprocess.run([sys.executable, str(src / "scripts" / "build_zipapp.py"), "--python", python],
                       check=True, capture_output=True, text=True, env=env)
    out = Path(r.stdout.strip())
    assert out.parent == src / "dist"
    return out


def build_env(tmp_path_factory, home: Path) -> dict:
    """The environment a build runs in, fixed when it starts: the tests' own (a HOME each) come and go
    while it runs in a thread."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY_PREFIXES)}
    home.mkdir(parents=True, exist_ok=True)
    return {**clean, "HOME": str(home), "PIP_CACHE_DIR": PIP_CACHE, **temp_env(tmp_path_factory)}


def this_trees_zipapp(tmp_path_factory) -> Path:
    """dist/mem-pyX.Y.pyz of a copy of this tree, for the running Python, built once per run. Read-only
    for the tests: one that changes it works on a copy."""
    wheels = wheelhouse(tmp_path_factory)
    shared = shared_dir(tmp_path_factory) / "mem-zipapp"
    shared.mkdir(exist_ok=True)
    done = shared / "built"
    with locked(shared / "lock"):
        if not done.exists():
            env = {**build_env(tmp_path_factory, shared / "home"), **offline(wheels)}
            out = build_from_copy(shared, "this-tree", env=env)
            done.write_text(str(out))
        return Path(done.read_text())


def _unpacked(tmp_path_factory, pyz: Path) -> Path:
    """shiv's cache directory of PYZ (<name>_<build id>, holding site-packages), unpacked once per run."""
    shared = shared_dir(tmp_path_factory) / "mem-zipapp"
    root = shared / "shiv"
    with locked(shared / "lock"):
        found = list(root.glob(f"{pyz.name}_*/site-packages"))
        if not found:
            env = {**build_env(tmp_path_factory, shared / "home"), "SHIV_ROOT": str(root)}
            subprocess.run([sys.executable, "-sE", str(pyz), "--version"], check=True, capture_output=True, env=env)
            found = list(root.glob(f"{pyz.name}_*/site-packages"))
        (site,) = found
        return site.parent


def build_id(pyz: Path) -> str:
    import zipfile

    with zipfile.ZipFile(pyz) as z:
        return json.loads(z.read("environment.json"))["build_id"]


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def warm_shiv_root(tmp_path_factory, pyz: Path, shiv_root: Path, name: str | None = None) -> Path:
    """SHIV_ROOT as the first run of PYZ (this tree's zipapp, or a copy) left it, for an archive called NAME
    (default: PYZ's own name); the unpacked files are hard links to one shared cache (or copies across file
    systems), which neither shiv nor Python writes into. Returns the site-packages a run starts from."""
    cache = _unpacked(tmp_path_factory, this_trees_zipapp(tmp_path_factory))
    ident = build_id(pyz)
    assert cache.name.endswith("_" + ident), "not this tree's zipapp"
    dest = shiv_root / f"{name or pyz.name}_{ident}"
    shiv_root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(cache, dest, copy_function=_link_or_copy)
    return dest / "site-packages"
