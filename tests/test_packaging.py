"""Installing mem: `pip install` and `make install` put the man pages and completions where man(1)
and the shells look, and the installed zipapp's hooks run under a client's minimal PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAN_PAGES = sorted(p.name for p in (ROOT / "man").glob("*.1"))
COMPLETIONS = {
    "share/zsh/site-functions/_mem": "_mem",
    "share/fish/vendor_completions.d/mem.fish": "mem.fish",
}


def copy_sources(dest: Path) -> Path:
    """What a build reads, copied, so the build's own build/ and *.egg-info stay out of the tree."""
    for name in ("pyproject.toml", "README.md", "Makefile"):
        shutil.copy(ROOT / name, dest / name)
    for name in ("mem", "man", "completions", "scripts"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def man_finds(prefix: Path, page: str) -> str | None:
    """What `man -w PAGE` answers with PREFIX/bin on PATH (man-db looks in PREFIX/share/man then)."""
    if shutil.which("man") is None:
        return None
    env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": os.environ["HOME"], "LANG": "C"}
    p = subprocess.run(["man", "-w", page], capture_output=True, text=True, env=env)
    return p.stdout.strip()


def test_pip_install_puts_the_man_pages_in_prefix_share_man_man1(tmp_path):
    # --ignore-installed: without it pip uninstalls the mem of the running environment first
    src = tmp_path / "src"
    src.mkdir()
    copy_sources(src)
    prefix = tmp_path / "prefix"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--no-compile", "--ignore-installed", "--prefix", str(prefix), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    man1 = prefix / "share" / "man" / "man1"
    assert sorted(f.name for f in man1.iterdir()) == MAN_PAGES
    assert (man1 / "mem-lint.1").read_bytes() == (ROOT / "man" / "mem-lint.1").read_bytes()
    for rel, name in COMPLETIONS.items():
        assert (prefix / rel).read_bytes() == (ROOT / "completions" / name).read_bytes()
    assert (prefix / "share/bash-completion/completions/mem.bash").exists()
    found = man_finds(prefix, "mem-lint")
    if found is not None:
        assert found == str(man1 / "mem-lint.1")


@pytest.mark.slow
def test_make_install_puts_the_zipapp_man_pages_and_completions_under_prefix(tmp_path, isolated_env):
    src = tmp_path / "src"
    src.mkdir()
    copy_sources(src)
    zipapp = tmp_path / "mem.pyz"
    subprocess.run([sys.executable, str(src / "scripts" / "build_zipapp.py"), str(zipapp)], check=True,
                   capture_output=True, timeout=600)
    prefix = tmp_path / "prefix"
    p = subprocess.run(["make", "-C", str(src), "install", f"PREFIX={prefix}", f"ZIPAPP={zipapp}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in (prefix / "share/man/man1").iterdir()) == MAN_PAGES
    assert (prefix / "share/bash-completion/completions/mem").read_bytes() == (ROOT / "completions/mem.bash").read_bytes()
    for rel, name in COMPLETIONS.items():
        assert (prefix / rel).read_bytes() == (ROOT / "completions" / name).read_bytes()
    found = man_finds(prefix, "mem-hooks")
    if found is not None:
        assert found == str(prefix / "share/man/man1/mem-hooks.1")

    # the installed zipapp installs hooks naming itself, and they run with nothing of ours on PATH
    mem = prefix / "bin" / "mem"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = "/usr/bin:/bin"
    p = subprocess.run([str(mem), "hooks", "install", "--only", "UserPromptSubmit"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    settings = json.loads((Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{mem} recall --hook"
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "prompt": "what do I know about staging deploys"})
    p = subprocess.run(["/bin/sh", "-c", command], input=payload, capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and "not found" not in p.stderr, p.stderr

    p = subprocess.run(["make", "-C", str(src), "uninstall", f"PREFIX={prefix}"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert [f for f in prefix.rglob("*") if f.is_file()] == []


def readme_block(first_line: str) -> str:
    """The README's shell block that starts with ``first_line``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```sh\n" + first_line) + len("```sh\n")
    return text[start:text.index("```", start)]


def bash_completes(home: Path, path: str) -> str | None:
    """`complete -p mem` in a bash with bash-completion loaded, once bash has been asked to complete mem
    (None: no bash-completion on this machine)."""
    script = "/usr/share/bash-completion/bash_completion"
    if not os.path.exists(script):
        return None
    env = {"PATH": path, "HOME": str(home), "LANG": "C"}
    p = subprocess.run(["bash", "-c", f"source {script}; __load_completion mem; complete -p mem"],
                       capture_output=True, text=True, env=env, timeout=60)
    return p.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("route", ["sudo apt install pipx", "python3 -m venv"])
def test_the_readmes_routes_find_man_pages_and_completions(tmp_path, route):
    # As the README says: apt's pipx on Debian 12 (1.1, which links no man pages), or a venv; then its ln lines.
    if shutil.which("man") is None or (route.endswith("pipx") and shutil.which("pipx") is None):
        pytest.skip("no pipx or no man here (apt-get install pipx man-db)")
    src = tmp_path / "src"
    src.mkdir()
    copy_sources(src)
    home = tmp_path / "home"
    home.mkdir()
    path = f"{home / '.local/bin'}:/usr/bin:/bin"  # a login shell's PATH once ~/.local/bin exists
    env = {"HOME": str(home), "PATH": path, "LANG": "C"}
    block = readme_block(route).replace("sudo apt install pipx", "true")
    p = subprocess.run(["bash", "-ec", block], cwd=src, capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    for page in ("mem-recall", "mem"):  # man mem: ours, not the kernel's mem(4)
        r = subprocess.run(["man", "-w", page], capture_output=True, text=True, env=env)
        found = r.stdout.strip()  # man-db names the link's target
        assert found.startswith(str(home)) and found.endswith(f"/man1/{page}.1"), r.stdout + r.stderr
    said = bash_completes(home, path)
    assert said in (None, "complete -o nosort -F _mem_completion mem"), said
