"""mem complete: the script each shell needs, printed, or installed where the shell looks in the home."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = {"bash": "mem.bash", "zsh": "_mem", "fish": "mem.fish"}


def test_prints_the_script_gendocs_writes(run_mem):
    for shell, name in FILES.items():
        r = run_mem("complete", shell)
        assert r.returncode == 0 and r.stdout == (ROOT / "completions" / name).read_text(), shell
    r = run_mem("complete", env={"SHELL": "/usr/bin/zsh"})
    assert r.stdout == (ROOT / "completions" / "_mem").read_text()
    r = run_mem("complete", "bash", "zsh")
    assert r.returncode == 2 and "one shell's script at a time" in r.stderr


def test_install_writes_each_shells_file_once(run_mem, isolated_env):
    home = isolated_env
    r = run_mem("complete", "--install", "--dry-run", "bash", "zsh", "fish")
    assert r.returncode == 1 and not (home / ".local").exists() and "would write" in r.stdout
    r = run_mem("complete", "--install", "--json", "bash", "zsh", "fish")
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    expected = {"bash": home / ".local/share/bash-completion/completions/mem",
                "zsh": home / ".local/share/zsh/site-functions/_mem",
                "fish": home / ".config/fish/completions/mem.fish"}
    assert {f["shell"]: (f["path"], f["action"]) for f in files} == {
        s: (str(p), "written") for s, p in expected.items()}
    for shell, path in expected.items():
        assert path.read_text() == (ROOT / "completions" / FILES[shell]).read_text()
        assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    r = run_mem("complete", "--install", "--dry-run", "bash", "zsh", "fish")
    assert r.returncode == 0 and r.stdout.count("unchanged") == 3
    r = run_mem("complete", "--install", "--json", "bash")
    assert json.loads(r.stdout)["files"][0]["action"] == "unchanged"
    # XDG_DATA_HOME and BASH_COMPLETION_USER_DIR move them, as they move where the shells look
    r = run_mem("complete", "--install", "bash", "zsh",
                env={"XDG_DATA_HOME": str(home / "data"), "BASH_COMPLETION_USER_DIR": str(home / "bc")})
    assert r.returncode == 0
    assert (home / "bc/completions/mem").is_file() and (home / "data/zsh/site-functions/_mem").is_file()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_users_file_that_loads_mems_completion_is_kept(run_mem, isolated_env):
    where = isolated_env / ".local/share/bash-completion/completions"
    where.mkdir(parents=True)
    mine = 'eval "$(_MEM_COMPLETE=bash_source mem)"\ncomplete -F _mem_completion -o default m\nalias m=mem\n'
    (where / "mem").write_text(mine)
    r = run_mem("complete", "--install", "--json", "bash")
    assert r.returncode == 0, r.stderr
    placed = json.loads(r.stdout)["files"][0]
    assert placed["action"] == "replaced" and placed["backup"] == str(where / "mem~")
    assert (where / "mem~").read_text() == mine
    assert (where / "mem").read_text() == (ROOT / "completions/mem.bash").read_text()
    # mem's own file, replaced without a backup; a second backup is not written over the first
    r = run_mem("complete", "--install", "--json", "bash")
    assert json.loads(r.stdout)["files"][0] == {"shell": "bash", "path": str(where / "mem"),
                                                "action": "unchanged", "backup": None}
    (where / "mem").write_text(mine)
    r = run_mem("complete", "--install", "bash")
    assert r.returncode == 4 and "mem~ exists" in r.stderr and (where / "mem").read_text() == mine
    # the header is the zsh script's second line: #compdef must stay first
    zsh = (ROOT / "completions/_mem").read_text().splitlines()
    assert zsh[0] == "#compdef mem" and zsh[1].startswith("# mem's shell completion, written by `mem complete`")


def test_install_replaces_mem_s_own_file_and_refuses_anyone_elses(run_mem, isolated_env):
    where = isolated_env / ".local/share/bash-completion/completions"
    where.mkdir(parents=True)
    (where / "mem").write_text("# an older mem's\n_mem_completion() { _MEM_COMPLETE=bash_complete; }\n")
    r = run_mem("complete", "--install", "--json", "bash")
    assert r.returncode == 0 and json.loads(r.stdout)["files"][0]["action"] == "replaced"
    assert (where / "mem").read_text() == (ROOT / "completions/mem.bash").read_text()
    (where / "mem").write_text("complete -W 'my own words' mem\n")
    r = run_mem("complete", "--install", "bash")
    assert r.returncode == 4 and "is not mem's completion" in r.stderr and r.stderr.count("\n") == 1
    assert (where / "mem").read_text() == "complete -W 'my own words' mem\n"
    # a link to mem's script (pipx's, the README's ln) is left as it is; a dangling one is replaced
    (where / "mem").unlink()
    (where / "mem").symlink_to(ROOT / "completions/mem.bash")
    r = run_mem("complete", "--install", "--json", "bash")
    assert json.loads(r.stdout)["files"][0]["action"] == "unchanged" and (where / "mem").is_symlink()
    (where / "mem").unlink()
    (where / "mem").symlink_to(isolated_env / "removed-venv/mem.bash")
    r = run_mem("complete", "--install", "--json", "bash")
    assert r.returncode == 0 and json.loads(r.stdout)["files"][0]["action"] == "replaced"
    assert not (where / "mem").is_symlink() and (where / "mem").read_text() == (ROOT / "completions/mem.bash").read_text()


# --- --man: the man pages of the environment mem came with, linked where man looks in the home ----------

import shutil  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def venv_mem(tmp_path, mem_exe, isolated_env):
    """A mem as pip or pipx leave it: <env>/bin/mem with the pages in <env>/share/man/man1 (the test venv
    is editable, without them); and an empty HOME whose ~/.local/bin is on PATH, as a login shell has it."""
    env_dir = tmp_path / "mem-venv"
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "mem").symlink_to(mem_exe)
    pages = env_dir / "share" / "man" / "man1"
    pages.mkdir(parents=True)
    for page in (ROOT / "man").glob("*.1"):
        shutil.copy(page, pages)
    (isolated_env / ".local" / "bin").mkdir(parents=True)
    env = {**os.environ, "PATH": f"{isolated_env}/.local/bin:/usr/bin:/bin", "MANPATH": ""}
    env.pop("MANPATH")

    def run(*args, **extra):
        return subprocess.run([str(env_dir / "bin" / "mem"), *args], capture_output=True, text=True, timeout=60,
                              env={**env, **extra}, stdin=subprocess.DEVNULL)

    return run, pages


@pytest.mark.process
def test_install_man_links_the_pages_where_man_finds_them(venv_mem, isolated_env):
    run, pages = venv_mem
    target = isolated_env / ".local" / "share" / "man" / "man1"
    r = run("complete", "--install", "--man", "--dry-run", "bash")
    assert r.returncode == 1 and f"would write {target} (man)" in r.stdout and not target.exists()
    r = run("complete", "--install", "--man", "bash")
    assert r.returncode == 0 and f"man: {target} written" in r.stderr, r.stderr
    assert "once ~/.local/bin is on PATH" not in r.stderr  # it is, here
    names = sorted(p.name for p in pages.iterdir())
    assert sorted(p.name for p in target.iterdir()) == names and len(names) > 50
    assert all(os.readlink(target / n) == str(pages / n) for n in names)
    if shutil.which("man"):
        found = subprocess.run(["man", "-w", "mem-recall"], capture_output=True, text=True,
                               env={"HOME": str(isolated_env), "PATH": f"{isolated_env}/.local/bin:/usr/bin:/bin"})
        assert found.stdout.strip() == str(pages / "mem-recall.1"), found.stderr  # man -w names the link's page
        doctor = json.loads(run("doctor", "--json").stdout)
        man = next(c for c in doctor["checks"] if c["name"] == "man pages")
        assert man["state"] == "ok" and man["detail"] == str(pages), man
    r = run("complete", "--install", "--man", "--dry-run", "bash")
    assert r.returncode == 0 and f"unchanged {target} (man)" in r.stdout
    # a page gone from a newer mem: its link, left dangling, goes; a page of mem's copied there is replaced
    (target / "mem-gone.1").symlink_to(pages / "mem-gone.1")
    (target / "mem-lint.1").unlink()
    shutil.copy(pages / "mem-lint.1", target / "mem-lint.1")
    r = run("complete", "--install", "--man", "--json", "bash")
    assert r.returncode == 0 and {"shell": "man", "path": str(target), "action": "replaced", "backup": None} in json.loads(r.stdout)["files"]
    assert not os.path.lexists(target / "mem-gone.1") and os.readlink(target / "mem-lint.1") == str(pages / "mem-lint.1")


@pytest.mark.process
def test_install_man_refuses_a_page_not_mems_and_says_where_man_looks(venv_mem, isolated_env):
    run, pages = venv_mem
    target = isolated_env / ".local" / "share" / "man" / "man1"
    target.mkdir(parents=True)
    (target / "mem.1").write_text('.TH "PERL-MEM" 1\nsomeone else\'s page\n')
    r = run("complete", "--install", "--man", "bash")
    assert r.returncode == 4 and r.stderr == f"mem: error: {target}/mem.1 is not one of mem's man pages; move it away, " \
                                           "then run this again\n", r.stderr
    assert sorted(p.name for p in target.iterdir()) == ["mem.1"]
    (target / "mem.1").unlink()
    r = run("complete", "--install", "--man", "bash", PATH="/usr/bin:/bin")
    assert r.returncode == 0 and f"man: man looks in {target} once ~/.local/bin is on PATH" in r.stderr, r.stderr


def test_man_goes_with_install_and_needs_pages_to_link(run_mem, isolated_env):
    r = run_mem("complete", "--man", "bash")
    assert r.returncode == 2 and "--man goes with --install" in r.stderr
    from mem.core.doctor import installed_man_pages

    if installed_man_pages() is not None:
        pytest.skip("this mem was installed with its man pages")
    r = run_mem("complete", "--install", "--man", "bash")
    assert r.returncode == 3 and "this mem came without its man pages" in r.stderr
    assert not (isolated_env / ".local" / "share" / "man").exists()
