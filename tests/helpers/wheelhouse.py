"""The packages the tests' builds and installs of mem ask pip for, downloaded once per run.

pip spends half of its CPU in a build or an install of mem (2.6 s of 5.5 s here) reading the index's
pages (pydantic-core's alone lists thousands of files) for each of some twenty packages. The tests that
build or install mem are not about the index: there pip takes mem's dependencies, setuptools (its
build backend), pip, wheel and pipx from one directory, downloaded once per run from the index pip is
configured with, and asks no index (``offline``). Every build and install of the run also gets the
same versions, so two builds in one run cannot differ by a release made between them.

uses: tests/helpers/session.py (the shared directory and its lock)

Example: env = {**os.environ, **offline(wheelhouse(tmp_path_factory))}
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.session import locked, shared_dir, temp_env

ROOT = Path(__file__).resolve().parent.parent.parent
#: pip's cache (it spares every build and install of the run a download), read at import, before a test's own
#: HOME is set; the zipapp and packaging tests take it from here.
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")
#: Besides mem's dependencies: what pipx's shared libraries install, and pipx itself.
TOOLS = ("pip", "setuptools", "wheel", "pipx")


def wheelhouse(tmp_path_factory) -> Path:
    """A directory of wheels: mem's dependencies for the running Python, setuptools and TOOLS."""
    shared = shared_dir(tmp_path_factory) / "wheelhouse"
    shared.mkdir(exist_ok=True)
    wheels = shared / "wheels"
    with locked(shared / "lock"):
        if not (shared / "done").exists():
            p = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                                "--dest", str(wheels), *requirements(), *TOOLS], capture_output=True, text=True,
                                timeout=600,
                                env={**os.environ, "PIP_CACHE_DIR": PIP_CACHE, **temp_env(tmp_path_factory)})
            assert p.returncode == 0, p.stderr[-2000:]
            (shared / "done").touch()
    return wheels


def requirements() -> list[str]:
    """What mem's pyproject.toml asks for: its dependencies and its build system's (setuptools)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        from pip._vendor import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [*project["project"]["dependencies"], *project["build-system"]["requires"]]


def offline(wheels: Path) -> dict:
    """pip's settings, as environment variables, that take every package from WHEELS and ask no index."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
