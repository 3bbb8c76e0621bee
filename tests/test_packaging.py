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
from helpers.session import temp_env
from helpers.wheelhouse import PIP_CACHE, offline, wheelhouse
from helpers.zipapp import this_trees_zipapp, warm_shiv_root

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


def test_pip_install_puts_the_man_pages_in_prefix_share_man_man1(tmp_path, wheel):
    # --ignore-installed: without it pip uninstalls the mem of the running environment first. The session's
    # wheel is what `pip install <sources>` builds and then installs (the build is paid once, in `wheel`).
    prefix = tmp_path / "prefix"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--no-compile", "--ignore-installed", "--prefix", str(prefix), str(wheel)],
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


@pytest.fixture(scope="module")
def builds(request, tmp_path_factory):
    """What the module's tests install, built at once when its first test starts (each mostly waits on pip):
    the zipapp of a copy of the sources (the session's, tests/helpers/zipapp.py), mem's wheel, and a venv
    holding the newest pipx. Futures."""
    from concurrent.futures import ThreadPoolExecutor

    # Only what the selected tests use; each gets its environment now: the tests' own (a HOME each) come and
    # go while the builds run.
    # pip takes every package from the run's wheelhouse (tests/helpers/wheelhouse.py), the tests' installs too.
    wanted = _wanted(request)
    env = dict(os.environ)
    tmp_path_factory.getbasetemp()  # made here: the threads below would race to make it
    with ThreadPoolExecutor(3) as pool:
        yield {"zipapp": pool.submit(this_trees_zipapp, tmp_path_factory) if "zipapp_build" in wanted else None,
               "wheel": pool.submit(build_wheel, tmp_path_factory, env) if "wheel" in wanted else None,
               "pipx": pool.submit(install_current_pipx, tmp_path_factory, env) if "current_pipx" in wanted else None}


def _wanted(request) -> set[str]:
    """The fixtures this module's selected tests ask for."""
    return {name for item in request.session.items if item.module is request.module for name in item.fixturenames}


@pytest.fixture(scope="module", autouse=True)
def _start_builds(request):
    """Only where a test of this module needs one (a -k that picks the man-page test builds the wheel alone)."""
    if _wanted(request) & {"builds", "wheel", "current_pipx", "zipapp_build"}:
        request.getfixturevalue("builds")


@pytest.fixture
def zipapp_build(builds) -> tuple[Path, Path]:
    """The copy of the sources the zipapp was built from (src/dist/mem-pyX.Y.pyz), and the zipapp."""
    zipapp = builds["zipapp"].result()
    return zipapp.parent.parent, zipapp


@pytest.mark.slow
def test_make_install_puts_the_zipapp_man_pages_and_completions_under_prefix(tmp_path, tmp_path_factory, isolated_env,
                                                                              zipapp_build):
    # The README's `make install PREFIX=~/.local`, from a new account: mem runs, man finds its pages, a login
    # bash its completion, zsh its _mem after the README's fpath line.
    src, zipapp = zipapp_build
    home = fresh_home(tmp_path)
    prefix = home / ".local"
    p = subprocess.run(["make", "-C", str(src), "install", f"PREFIX={prefix}", f"ZIPAPP={zipapp}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in (prefix / "share/man/man1").iterdir()) == MAN_PAGES
    assert (prefix / "share/bash-completion/completions/mem").read_bytes() == (ROOT / "completions/mem.bash").read_bytes()
    for rel, name in COMPLETIONS.items():
        assert (prefix / rel).read_bytes() == (ROOT / "completions" / name).read_bytes()
    path = f"{prefix / 'bin'}:/usr/bin:/bin"
    found = man_finds(prefix, "mem-hooks")
    if found is not None:
        assert found == str(prefix / "share/man/man1/mem-hooks.1")
        r = subprocess.run(["man", "-w", "mem-recall"], capture_output=True, text=True,
                           env={"HOME": str(home), "PATH": path, "LANG": "C"})
        assert r.stdout.strip() == str(prefix / "share/man/man1/mem-recall.1"), r.stderr
    assert login_bash_completes(home, path) in (None, BASH_SAYS)
    assert zsh_completes(home, path, ZSHRC) in (None, "_mem")
    # the default PREFIX=/usr/local needs no line: its site-functions is on zsh's own fpath
    if shutil.which("zsh"):
        assert f"zsh: add this line before compinit in ~/.zshrc: fpath=({prefix}/share/zsh/site-functions $fpath)" in p.stdout
        r = subprocess.run(["zsh", "-fc", "print -rl -- $fpath"], capture_output=True, text=True)
        assert "/usr/local/share/zsh/site-functions" in r.stdout.splitlines()

    # its doctor, where man looks elsewhere (MANPATH), names the pages make install put beside it
    mem = prefix / "bin" / "mem"
    # its first run, which unpacks, is test_zipapp's: these start from shiv's cache (in HOME's ~/.shiv for the hooks)
    for shiv_root in (tmp_path / "shiv", isolated_env / ".shiv"):
        warm_shiv_root(tmp_path_factory, zipapp, shiv_root, name="mem")
    if found is not None:
        r = subprocess.run([str(mem), "doctor", "--json"], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, "MANPATH": str(tmp_path / "nowhere"), "SHIV_ROOT": str(tmp_path / "shiv")})
        man = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "man pages")
        assert man["state"] == "fail" and f"mem complete --install --man (it links {prefix}/share/man/man1/*.1 " in man["fix"], man

    # the installed zipapp installs hooks naming itself, and they run with nothing of ours on PATH
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

    installed = {f for f in prefix.rglob("*") if f.is_file()}
    p = subprocess.run(["make", "-C", str(src), "uninstall", f"PREFIX={prefix}"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert not any(f.exists() for f in installed)


def readme_block(first_line: str) -> str:
    """The README's shell block that starts with ``first_line``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```sh\n" + first_line) + len("```sh\n")
    return text[start:text.index("```", start)]


#: pip's settings from the environment (an index, a proxy), kept in the fresh accounts' environments.
PIP_SETTINGS = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}


def build_wheel(tmp_path_factory, env: dict) -> Path:
    """mem's wheel, built from a copy of the sources (~2 s)."""
    env = {**env, **offline(wheelhouse(tmp_path_factory)), **temp_env(tmp_path_factory)}
    src = copy_sources(tmp_path_factory.mktemp("wheel-src"))
    out = tmp_path_factory.mktemp("wheel")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--wheel-dir", str(out), str(src)], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    (built,) = out.glob("mem-*.whl")
    return built


def install_current_pipx(tmp_path_factory, env: dict) -> tuple[Path, str]:
    """The bin directory of a throwaway venv holding the newest pipx from PyPI (the run's wheelhouse took it
    from there), and pip's complaint if it failed."""
    env = {**env, "PIP_CACHE_DIR": PIP_CACHE, **offline(wheelhouse(tmp_path_factory)),
           **temp_env(tmp_path_factory)}
    # The venv has no pip of its own (ensurepip's is 2.7 s of CPU): this one installs into it.
    venv = tmp_path_factory.mktemp("pipx-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                   timeout=300, env=env)
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                        "--disable-pip-version-check", "pipx"], capture_output=True, text=True, timeout=600, env=env)
    return venv / "bin", ("" if p.returncode == 0 else p.stderr.strip()[-300:])


@pytest.fixture
def wheel(builds) -> Path:
    """mem's wheel, built once for the module."""
    return builds["wheel"].result()


@pytest.fixture
def current_pipx(builds) -> Path:
    """The bin directory of a throwaway venv holding the newest pipx from PyPI."""
    bin_dir, failed = builds["pipx"].result()
    if failed:
        pytest.skip(f"pipx could not be installed from PyPI: {failed}")
    return bin_dir


def fresh_home(tmp_path: Path) -> Path:
    """An empty HOME but for the files a new Debian account starts with (~/.profile puts ~/.local/bin on PATH)."""
    home = tmp_path / "home"
    if os.path.isdir("/etc/skel"):
        shutil.copytree("/etc/skel", home, symlinks=True)
    else:
        home.mkdir()
    return home


def login_bash_completes(home: Path, path: str) -> str | None:
    """What a login bash (as a terminal starts one) says of mem once TAB has made bash-completion load
    its completion: `complete -p mem`. None: no bash-completion on this machine."""
    if not os.path.exists("/usr/share/bash-completion/bash_completion"):
        return None
    probe = ("if declare -F _comp_load >/dev/null; then _comp_load mem; else _completion_loader mem; fi; "
             "complete -p mem")
    p = subprocess.run(["bash", "-lic", probe], capture_output=True, text=True, timeout=60,
                       env={"HOME": str(home), "PATH": path, "LANG": "C"}, stdin=subprocess.DEVNULL)
    return p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-300:]


def zsh_completes(home: Path, path: str, zshrc: str) -> str | None:
    """What an interactive zsh with this ~/.zshrc completes mem with ($_comps[mem]); None: no zsh here."""
    if shutil.which("zsh") is None:
        return None
    (home / ".zshrc").write_text(zshrc)
    p = subprocess.run(["zsh", "-ic", "print -r -- \"comps:${_comps[mem]-}\""], capture_output=True, text=True,
                       timeout=60, env={"HOME": str(home), "PATH": path, "LANG": "C"}, stdin=subprocess.DEVNULL)
    said = [line for line in p.stdout.splitlines() if line.startswith("comps:")]
    return said[0][len("comps:"):] if said else p.stderr[-300:]


#: The ~/.zshrc of a user who followed the README: its one fpath line, before compinit.
ZSHRC = "fpath=(~/.local/share/zsh/site-functions $fpath)\nautoload -Uz compinit && compinit\n"
BASH_SAYS = "complete -o nosort -F _mem_completion mem"

#: The newest pipx needs none of the block's lines: test_the_newest_pipx_links_man_pages_and_completions_itself.
ROUTES = ["sudo apt install pipx", "python3 -m venv"]


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_the_readmes_routes_give_mem_man_pages_and_completions(tmp_path, tmp_path_factory, route, wheel):
    # As the README says, from a new account: apt's pipx on Debian 12 (1.1, which links neither man pages nor
    # completions) or a venv; then its lines. The block's `.` is the
    # session's wheel (what pip would build from it), so the build is paid once; pip takes its dependencies (and
    # pipx its pip) from the run's wheelhouse, with no index (tests/helpers/wheelhouse.py).
    if shutil.which("man") is None or (route.endswith("apt install pipx") and shutil.which("pipx") is None):
        pytest.skip("no pipx or no man here (apt-get install pipx man-db)")
    home = fresh_home(tmp_path)
    path = f"{home / '.local/bin'}:/usr/bin:/bin"  # a login shell's PATH once ~/.local/bin exists
    env = {**PIP_SETTINGS, "HOME": str(home), "PATH": path, "LANG": "C", "PIP_CACHE_DIR": PIP_CACHE,
           **offline(wheelhouse(tmp_path_factory)), **temp_env(tmp_path_factory)}
    block = readme_block("python3 -m venv" if route == "python3 -m venv" else "sudo apt install pipx")
    assert "install .  " in block and "mem complete --install --man" in block and "man1/*.1" not in block
    block = block.replace("sudo apt install pipx", "true").replace("install .  ", f"install {wheel}  ")
    p = subprocess.run(["bash", "-ec", block], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    r = subprocess.run(["mem", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("mem "), r.stderr
    for page in ("mem-recall", "mem"):  # man mem: ours, not the kernel's mem(4)
        r = subprocess.run(["man", "-w", page], capture_output=True, text=True, env=env)
        found = r.stdout.strip()  # man-db names the link's target
        assert found.startswith(str(home)) and found.endswith(f"/man1/{page}.1"), r.stdout + r.stderr
    assert login_bash_completes(home, path) in (None, BASH_SAYS)
    assert zsh_completes(home, path, ZSHRC) in (None, "_mem")
    r = subprocess.run(["mem", "doctor"], capture_output=True, text=True, cwd=tmp_path,
                       env={**env, "SHELL": "/bin/bash"})
    for name in ("man pages", "completion (bash)", "completion (zsh)"):
        line = next(line for line in r.stdout.splitlines() if f" {name}: " in line)
        assert line.startswith("ok ") or "no zsh here" in line or "not installed" in line, r.stdout


@pytest.mark.slow
def test_the_newest_pipx_links_man_pages_and_completions_itself(tmp_path, tmp_path_factory, wheel, current_pipx):
    # pipx install and nothing else, into pipx's own directories named by its variables: man finds the pages
    # and bash-completion the completion with no step of ours; zsh needs the README's one fpath line.
    home = fresh_home(tmp_path)
    path = f"{home / '.local/bin'}:/usr/bin:/bin"
    env = {**PIP_SETTINGS, "HOME": str(home), "PATH": f"{current_pipx}:{path}", "LANG": "C", "PIP_CACHE_DIR": PIP_CACHE,
           "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(home / ".local/bin"),
           "PIPX_MAN_DIR": str(home / ".local/share/man"), **offline(wheelhouse(tmp_path_factory)),
           **temp_env(tmp_path_factory)}
    version = subprocess.run(["pipx", "--version"], capture_output=True, text=True, env=env).stdout.strip()
    p = subprocess.run(["pipx", "install", str(wheel)], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    r = subprocess.run(["man", "-w", "mem-recall"], capture_output=True, text=True, env={"HOME": str(home), "PATH": path})
    assert r.stdout.strip() == str(tmp_path / "pipx/venvs/mem/share/man/man1/mem-recall.1"), (version, r.stderr)
    assert login_bash_completes(home, path) in (None, BASH_SAYS), version
    assert zsh_completes(home, path, ZSHRC) in (None, "_mem"), version
    # the README's lines for pipx 1.1 do no harm here
    lines = readme_block("sudo apt install pipx").split("\n", 2)[2]
    p = subprocess.run(["bash", "-ec", lines], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    r = subprocess.run(["man", "-w", "mem-recall"], capture_output=True, text=True, env={"HOME": str(home), "PATH": path})
    assert r.stdout.strip() == str(tmp_path / "pipx/venvs/mem/share/man/man1/mem-recall.1"), r.stderr
    assert login_bash_completes(home, path) in (None, BASH_SAYS)
    r = subprocess.run(["mem", "doctor"], capture_output=True, text=True, cwd=tmp_path, env={**env, "SHELL": "/bin/bash"})
    assert all(f" {name}: " not in line for line in r.stdout.splitlines() if line.startswith("fail")
               for name in ("man pages", "completion (bash)", "completion (zsh)")), r.stdout
