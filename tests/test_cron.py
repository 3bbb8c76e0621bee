"""`mem cron`: the nightly dream scheduled through a crontab or a systemd user timer.

`crontab` and `systemctl` are stand-in shell scripts (real executables that keep their state in
files), put on PATH; mem runs them as it runs the real ones.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from helpers import forked
from mem.core import install

FAKE_CRONTAB = """#!/bin/sh
echo "crontab $*" >> "$FAKE_LOG"
case "$1" in
  -l) if [ -f "$FAKE_CRONTAB_FILE" ]; then cat "$FAKE_CRONTAB_FILE"; else echo "no crontab for $(id -un)" >&2; exit 1; fi ;;
  -) cat > "$FAKE_CRONTAB_FILE" ;;
  *) echo "usage: crontab [-l|-]" >&2; exit 1 ;;
esac
"""

FAKE_SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "$FAKE_LOG"
[ "$1" = "--user" ] || exit 1
[ -n "$FAKE_SYSTEMD" ] || { echo "Failed to connect to bus: No medium found" >&2; exit 1; }
exit 0
"""


@pytest.fixture
def tools(tmp_path, monkeypatch, isolated_env):
    """A stand-in crontab and systemctl first on PATH; returns their call log and the crontab file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("crontab", FAKE_CRONTAB), ("systemctl", FAKE_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log, table = tmp_path / "calls.log", tmp_path / "crontab.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(table))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated_env / ".config"))
    return log, table


def mem(mem_exe, *args, env=None):
    """``mem_exe ARGS`` in a child forked from the test process, named as the console script names itself (it
    writes its own path into the crontab line), without a Python start-up."""
    return forked.run(list(args), env=env, timeout=120, argv0=mem_exe)


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_install_adds_one_line_with_absolute_paths_and_no_key(tools, mem_exe, isolated_env, monkeypatch):
    log, table = tools
    table.write_text("MAILTO=me@example.invalid\n0 * * * * /usr/local/bin/backup\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 40)
    p = mem(mem_exe, "cron", "install", "--at", "03:15")
    assert p.returncode == 0, p.stderr
    lines = table.read_text().splitlines()
    assert lines[:2] == ["MAILTO=me@example.invalid", "0 * * * * /usr/local/bin/backup"]
    env_file = isolated_env / ".config" / "mem" / "cron.env"
    assert lines[2] == (f"15 3 * * * {mem_exe} cron run --env-file {env_file} # mem-cron nightly dream; "
                        "mem cron uninstall removes it")
    assert "sk-ant" not in table.read_text()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "sk-ant" not in env_file.read_text()  # only with --with-key
    assert "systemctl --user show-environment" in calls(log)  # auto asked systemd first
    before = calls(log)
    p = mem(mem_exe, "cron", "install", "--at", "03:15")
    assert p.returncode == 0 and "already scheduled" in p.stderr
    assert [c for c in calls(log)[len(before):] if c == "crontab -"] == []  # nothing rewritten
    assert table.read_text().splitlines() == lines


def test_with_key_puts_the_key_in_the_0600_file_only(tools, mem_exe, isolated_env, monkeypatch):
    _, table = tools
    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    assert mem(mem_exe, "cron", "install", "--with-key").returncode == 0
    env_file = isolated_env / ".config" / "mem" / "cron.env"
    assert f"ANTHROPIC_API_KEY={key}" in env_file.read_text().splitlines()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert key not in table.read_text()
    status = json.loads(mem(mem_exe, "cron", "status", "--json").stdout)
    assert "ANTHROPIC_API_KEY" in status["env_file"]["keys"] and key not in json.dumps(status)


def test_the_crontab_line_runs_under_crons_path_and_logs(tools, mem_exe, isolated_env, cron_daemon):
    _, table = tools
    assert mem(mem_exe, "cron", "install").returncode == 0
    line = next(ln for ln in table.read_text().splitlines() if ln.endswith("removes it"))
    command = line.split(" ", 5)[5].replace("\\%", "%")
    keep = ("HOME", "CLAUDE_CONFIG_DIR", "MEM_STATE_DIR", "MEM_MANAGED_SETTINGS", "PYTHONPATH", "XDG_CONFIG_HOME")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = install.MINIMAL_PATH  # what cron gives a job
    p = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    log = Path(os.environ["MEM_STATE_DIR"]) / "cron.log"
    text = log.read_text()
    assert f"start: {mem_exe} dream --all-projects -q" in text and "exit 0 after" in text
    report = json.loads(mem(mem_exe, "cron", "status", "--json").stdout)
    assert report["ok"] and report["last_run"]["exit"] == 0
    assert [j["runs"] for j in report["jobs"]] == [True]


def test_uninstall_removes_only_our_line(tools, mem_exe):
    _, table = tools
    table.write_text("0 * * * * /usr/local/bin/backup # mem-cronological, not ours\n")
    assert mem(mem_exe, "cron", "install").returncode == 0
    p = mem(mem_exe, "cron", "uninstall")
    assert p.returncode == 0 and "removed crontab line" in p.stderr
    assert table.read_text() == "0 * * * * /usr/local/bin/backup # mem-cronological, not ours\n"
    p = mem(mem_exe, "cron", "status")
    assert p.returncode == 1 and "not scheduled" in p.stdout


def test_systemd_user_timer_when_systemctl_user_works(tools, mem_exe, isolated_env, monkeypatch):
    log, table = tools
    monkeypatch.setenv("FAKE_SYSTEMD", "1")
    p = mem(mem_exe, "cron", "install", "--at", "05:07")
    assert p.returncode == 0, p.stderr
    units = isolated_env / ".config" / "systemd" / "user"
    service = (units / "mem-dream.service").read_text()
    env_file = isolated_env / ".config" / "mem" / "cron.env"
    assert f"ExecStart={mem_exe} cron run --env-file {env_file}\n" in service
    assert "OnCalendar=*-*-* 05:07:00\n" in (units / "mem-dream.timer").read_text()
    assert "systemctl --user enable --now mem-dream.timer" in calls(log)
    assert not table.exists()
    before = (units / "mem-dream.service").stat().st_mtime_ns
    assert mem(mem_exe, "cron", "install", "--at", "05:07").returncode == 0
    assert (units / "mem-dream.service").stat().st_mtime_ns == before
    assert mem(mem_exe, "cron", "uninstall").returncode == 0
    assert not (units / "mem-dream.service").exists() and not (units / "mem-dream.timer").exists()
    assert "systemctl --user disable --now mem-dream.timer" in calls(log)


def test_run_refuses_an_env_file_others_can_read(tools, mem_exe, isolated_env):
    env_file = isolated_env / ".config" / "mem" / "cron.env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("ANTHROPIC_API_KEY=sk-ant-api03-zzzz\n")
    env_file.chmod(0o644)
    p = mem(mem_exe, "cron", "run", "--env-file", str(env_file))
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "chmod 600" in p.stderr


def test_run_loads_the_env_file(tools, mem_exe, isolated_env, tmp_path):
    """A variable from the file reaches the dream: MEM_STATE_DIR moves the log with it."""
    env_file = tmp_path / "cron.env"
    elsewhere = tmp_path / "other-state"
    env_file.write_text(f"# comment\nexport MEM_STATE_DIR={shlex.quote(str(elsewhere))}\n")
    env_file.chmod(0o600)
    p = mem(mem_exe, "cron", "run", "--env-file", str(env_file))
    assert p.returncode == 0, p.stderr
    assert "exit 0 after" in (elsewhere / "cron.log").read_text()


def test_bad_time_is_a_usage_error(tools, mem_exe):
    p = mem(mem_exe, "cron", "install", "--at", "25:00")
    assert p.returncode == 2 and "expected HH:MM" in p.stderr


def test_without_crontab_or_systemd_install_says_what_is_missing(tools, mem_exe, tmp_path):
    env = {**os.environ, "MEM_CRONTAB": str(tmp_path / "no-such-crontab")}
    p = mem(mem_exe, "cron", "install", env=env)
    assert p.returncode == 3 and p.stderr.count("\n") == 1
    assert "no-such-crontab is not installed (Debian/Ubuntu: apt install cron)" in p.stderr


def test_status_names_a_crontab_it_cannot_read_and_still_reports_the_rest(tools, run_mem, tmp_path):
    """`crontab -l` failing (a locked account, a broken cron) is not "no crontab": the line may be there,
    unseen. status says so, goes on with the environment file and the backend, and exits 1 (was 70)."""
    locked = tmp_path / "locked-crontab"
    locked.write_text("#!/bin/sh\necho 'crontab: your account has expired' >&2\nexit 1\n")
    locked.chmod(0o755)
    p = run_mem("cron", "status", env={"MEM_CRONTAB": str(locked)})
    assert p.returncode == 1, p.stderr
    assert "crontab  could not be read: crontab -l failed (exit 1): crontab: your account has expired" in p.stdout
    assert "environment  " in p.stdout and "not scheduled" not in p.stdout
    report = json.loads(run_mem("cron", "status", "--json", env={"MEM_CRONTAB": str(locked)}).stdout)
    assert report["crontab_problem"].startswith("crontab -l failed (exit 1)") and report["ok"] is False
    healthy = json.loads(run_mem("cron", "status", "--json").stdout)
    assert healthy["crontab_problem"] is None


@pytest.mark.parametrize("unit_kind", ["latin1", "directory", "huge"])
def test_a_unit_file_mem_cannot_read_is_named_not_a_crash(tools, run_mem, isolated_env, tmp_path, unit_kind):
    """A mem-dream.service that is not UTF-8, is a directory or is over the cap: `mem status` and `mem cron
    status` name it and go on (status exited 70 on it after scheduled_via began to read units)."""
    from mem.core import cron

    unit = next(u for u in cron.unit_files([], "00:00") if u.endswith(".service"))
    os.makedirs(os.path.dirname(unit), exist_ok=True)
    if unit_kind == "directory":
        os.mkdir(unit)
    else:
        Path(unit).write_bytes(b"[Service]\nExecStart=caf\xe9\n" if unit_kind == "latin1" else b"#" * (2 << 20))
    project = tmp_path / "proj"
    project.mkdir()
    p = run_mem("status", cwd=str(project))
    assert p.returncode == 0, p.stderr
    report = json.loads(run_mem("cron", "status", "--json").stdout)
    assert [j["via"] for j in report["jobs"]] == ["systemd"] and report["ok"] is False
