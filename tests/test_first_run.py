"""From an empty HOME, in a project no client has opened: the first write and every history command work."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def test_first_write_and_history_on_a_fresh_machine(run_mem, isolated_env, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert not (isolated_env / ".claude").exists()
    run = lambda *a: run_mem(*a, cwd=str(project))  # noqa: E731

    for args in (("history",), ("status",), ("undo", "--dry-run")):
        r = run(*args)
        assert "Invalid path" not in r.stderr and r.returncode in (0, 1), (args, r.stderr)
    r = run("remember", "--type", "project", "--name", "freeze", "--description", "release freeze",
            "The release freeze starts on Friday.")
    assert r.returncode == 0, r.stderr
    memdir = isolated_env / ".claude" / "projects"
    saved = list(memdir.rglob("freeze.md"))
    assert len(saved) == 1 and "Friday" in saved[0].read_text()
    r = run("history")
    assert r.returncode == 0 and "remember freeze" in r.stdout, r.stdout + r.stderr
    assert run("log", "first day").returncode == 0
    r = run("undo")
    assert r.returncode == 0, r.stderr
    assert run("status").returncode == 0


# --- in process: click's runner on mem.cli's group, from the same empty HOME ---------------------

import json  # noqa: E402

import click  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from mem.cli import cli  # noqa: E402


def invoke(*args, input=None, cwd=None, env=None):
    """mem ARGS in this process (stdout and stderr apart), run in ``cwd`` when given."""
    runner = CliRunner(**({"mix_stderr": False} if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else {}))
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        return runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False, prog_name="mem")
    finally:
        os.chdir(old)


def _commands_with_json(group=cli, path=()):
    ctx = click.Context(group, info_name="mem")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from _commands_with_json(cmd, (*path, name))
        elif any("--json" in getattr(p, "opts", ()) for p in cmd.params):
            yield (*path, name)


def error_object(stdout: str) -> dict:
    doc = json.loads(stdout)
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "exit_code", "kind"}, doc
    return doc["error"]


@pytest.fixture
def fresh_project(tmp_path, isolated_env):
    """A git project no client has opened, and an empty HOME (no ~/.claude, no ~/.qwen, no state dir)."""
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert not (isolated_env / ".claude").exists() and not (isolated_env / ".qwen").exists()
    assert not os.path.exists(os.environ["MEM_STATE_DIR"])
    return project


@pytest.mark.parametrize("words", sorted(_commands_with_json()), ids=" ".join)
def test_every_json_command_tells_a_failure_in_json(words, fresh_project):
    r = invoke(*words, "--json", "--no-such-option", cwd=fresh_project)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    err = error_object(r.stdout)
    assert err == {"message": err["message"], "exit_code": 2, "kind": "usage"}
    assert "No such option" in err["message"] and r.stderr.startswith("mem: error: No such option")


def test_json_errors_of_real_failures(fresh_project, tmp_path):
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    r = invoke("verify", "--json", cwd=outside)
    assert r.exit_code == 3 and error_object(r.stdout)["kind"] == "config", (r.stdout, r.stderr)
    assert "no repository" in error_object(r.stdout)["message"] and "no repository" in r.stderr
    r = invoke("--json", "verify", cwd=outside)  # --json given before the command counts too
    assert r.exit_code == 3 and error_object(r.stdout)["exit_code"] == 3
    r = invoke("eval", "--from-transcripts", "--json", cwd=fresh_project)
    err = error_object(r.stdout)
    assert r.exit_code == 1 and err["kind"] == "not_found" and err["exit_code"] == 1
    assert "looked in" in err["message"] and "/.claude/projects/" in err["message"]
    r = invoke("scan", "--jsonl", "--dir", str(tmp_path / "nowhere"), cwd=fresh_project)
    assert r.exit_code == 2 and len(r.stdout.splitlines()) == 1 and error_object(r.stdout)["kind"] == "usage"
    # without --json stdout stays empty
    r = invoke("verify", cwd=outside)
    assert r.exit_code == 3 and r.stdout == ""


def test_eval_from_transcripts_says_where_it_looked(fresh_project):
    r = invoke("eval", "--from-transcripts", cwd=fresh_project)
    assert r.exit_code == 1 and "looked in" in r.stderr and "does not exist" in r.stderr
    sessions = fresh_project.parent / "sessions"
    sessions.mkdir()
    r = invoke("eval", "--from-transcripts", str(sessions), cwd=fresh_project)
    assert r.exit_code == 1 and f"looked in {sessions} and found no *.jsonl session" in r.stderr


# --- hooks install on settings files as users have them ------------------------------------------


def test_qwen_settings_with_comments_get_the_hooks_and_keep_the_comments(fresh_project, isolated_env, mem_exe):
    path = isolated_env / ".qwen" / "settings.json"
    path.parent.mkdir()
    text = '{\n  // my theme\n  "theme": "Dracula", /* keep */\n  "url": "http://x//y"\n}\n'
    path.write_text(text)
    r = invoke("hooks", "install", "--client", "qwen", "--mem", mem_exe, cwd=fresh_project)
    assert r.exit_code == 0, r.stderr
    after = path.read_text()
    assert after.startswith('{\n  // my theme\n  "theme": "Dracula", /* keep */\n  "url": "http://x//y",\n  "hooks": {')
    from mem.core import install

    data = install.read_settings(str(path), "qwen").data
    assert "recall --hook" in data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    r = invoke("hooks", "uninstall", "--client", "qwen", cwd=fresh_project)
    assert r.exit_code == 0 and path.read_text() == text


def test_install_changes_only_the_hooks_of_a_claude_settings_file(fresh_project, mem_exe):
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    path.parent.mkdir()
    text = ('{\n    "permissions": {"allow": ["Bash(ls:*)", "Read"],   "deny": []},\n'
            '    "big": 1e400,\n    "ratio": 1.0,\n    "env": {"N": "1"}\n}\n')
    path.write_text(text)
    r = invoke("hooks", "install", "--mem", mem_exe, cwd=fresh_project)
    assert r.exit_code == 0 and "re-indented" not in r.stderr, r.stderr
    after = path.read_text()
    head = text[: text.index("\n}")]
    assert after.startswith(head + ',\n    "hooks": {\n        "SessionStart": [\n'), after
    assert "Infinity" not in after and json.loads(after)["ratio"] == 1.0
    r = invoke("hooks", "uninstall", cwd=fresh_project)
    assert r.exit_code == 0 and path.read_text() == text


def test_numbers_inside_the_hooks_are_kept_as_written(fresh_project, mem_exe):
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e400}]}]}}')
    assert invoke("hooks", "install", "--mem", mem_exe, cwd=fresh_project).exit_code == 0
    assert '"timeout": 1e400' in path.read_text() and "Infinity" not in path.read_text()


def test_a_wrapped_mem_hook_is_seen_by_status_and_left_by_uninstall_with_a_warning(fresh_project, mem_exe):
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    path.parent.mkdir()
    command = f"timeout 5 {mem_exe} recall --hook"
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}))
    r = invoke("hooks", "status", "--scope", "user", "--json", cwd=fresh_project)
    doc = json.loads(r.stdout)
    assert "UserPromptSubmit" not in doc["missing"], doc
    assert [e["wrapped"] for e in doc["entries"]] == [True]
    r = invoke("hooks", "status", "--scope", "user", cwd=fresh_project)
    assert "UserPromptSubmit" in r.stdout and "wrapped" in r.stdout and "UserPromptSubmit  not installed" not in r.stdout
    before = path.read_text()
    r = invoke("hooks", "uninstall", cwd=fresh_project)
    assert r.exit_code == 0 and "left a hook of yours that runs mem inside it" in r.stderr and command in r.stderr
    assert path.read_text() == before


def test_hooks_uninstall_on_a_fresh_machine_makes_no_settings_file(fresh_project, isolated_env):
    r = invoke("hooks", "uninstall", "--dry-run", cwd=fresh_project)
    assert r.exit_code == 0 and r.stdout == "", r.stdout
    r = invoke("hooks", "uninstall", cwd=fresh_project)
    assert r.exit_code == 0 and r.stderr == f"mem: {os.environ['CLAUDE_CONFIG_DIR']}/settings.json: nothing to change\n"
    assert not (isolated_env / ".claude").exists()  # it said "removed ... hooks" and wrote {} there


def test_install_refuses_a_settings_fifo_without_hanging(fresh_project, mem_exe):
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    path.parent.mkdir()
    os.mkfifo(path)
    r = subprocess.run([mem_exe, "hooks", "install"], capture_output=True, text=True, timeout=20, cwd=fresh_project)
    assert r.returncode == 4 and "FIFO" in r.stderr, r.stderr


# --- mem cron from an empty HOME --------------------------------------------------------------------

from test_cron import tools  # noqa: E402,F401 - a stand-in crontab and systemctl on PATH


def cron_env_file(home: Path) -> Path:
    return home / ".config" / "mem" / "cron.env"


def test_a_failed_cron_install_leaves_no_env_file(tools, isolated_env, tmp_path, mem_exe):  # noqa: F811
    r = invoke("cron", "install", "--mem", mem_exe, env={"MEM_CRONTAB": str(tmp_path / "no-such-crontab")})
    assert r.exit_code == 3 and "is not installed" in r.stderr
    assert not cron_env_file(isolated_env).exists() and not (isolated_env / ".config" / "mem").exists()


def test_cron_status_says_when_no_cron_daemon_runs(tools, isolated_env, mem_exe, cron_daemon):  # noqa: F811
    from mem.core import cron

    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    r = invoke("cron", "status", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"], r.stdout
    cron_daemon.kill()
    cron_daemon.wait()
    if cron.cron_daemon_running():
        pytest.skip("a real cron daemon runs on this machine")
    r = invoke("cron", "status")
    assert r.exit_code == 1 and "no cron daemon is running here" in r.stdout, r.stdout


def test_cron_install_dry_run_writes_nothing(tools, isolated_env, mem_exe):  # noqa: F811
    _, table = tools
    r = invoke("cron", "install", "--mem", mem_exe, "--dry-run", "--at", "03:15")
    assert r.exit_code == 1, r.stderr
    assert r.stdout.startswith(f"would schedule nightly at 03:15 via cron (crontab): 15 3 * * * {mem_exe} cron run")
    assert "would write" in r.stdout and not table.exists() and not cron_env_file(isolated_env).exists()
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    r = invoke("cron", "install", "--mem", mem_exe, "--dry-run", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["changed"] is False


@pytest.mark.parametrize("via", ["cron", "systemd"])
def test_a_newline_in_xdg_config_home_adds_no_line(tools, isolated_env, mem_exe, monkeypatch, via):  # noqa: F811
    _, table = tools
    monkeypatch.setenv("FAKE_SYSTEMD", "1")
    evil = str(isolated_env / ".config") + "\n* * * * * touch /tmp/pwned #"
    r = invoke("cron", "install", "--mem", mem_exe, "--via", via, env={"XDG_CONFIG_HOME": evil})
    assert r.exit_code == 2 and "newline" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not table.exists() and not list(isolated_env.rglob("*.service")) and not list(isolated_env.rglob("cron.env"))


def test_a_newline_in_a_carried_variable_is_refused_before_writing(tools, isolated_env, mem_exe):  # noqa: F811
    _, table = tools
    r = invoke("cron", "install", "--mem", mem_exe, env={"MEM_MODEL": "claude\nANTHROPIC_BASE_URL=http://evil"})
    assert r.exit_code == 2 and "MEM_MODEL" in r.stderr
    assert not table.exists() and not cron_env_file(isolated_env).exists()


def test_a_symlinked_cron_env_is_refused_not_chmodded(tools, isolated_env, tmp_path, mem_exe):  # noqa: F811
    target = tmp_path / "shared.txt"
    target.write_text("# shared\n")
    target.chmod(0o644)
    cron_env_file(isolated_env).parent.mkdir(parents=True)
    cron_env_file(isolated_env).symlink_to(target)
    r = invoke("cron", "install", "--mem", mem_exe)
    assert r.exit_code == 4 and "symbolic link" in r.stderr, r.stderr
    assert (target.stat().st_mode & 0o777) == 0o644 and not tools[1].exists()


def test_a_unit_names_a_mem_path_with_spaces_and_dollars_as_one_word(tools, isolated_env, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_SYSTEMD", "1")
    odd = tmp_path / "my $HOME tools" / "mem"
    odd.parent.mkdir()
    odd.write_text("#!/bin/sh\necho mem 0\n")
    odd.chmod(0o755)
    assert invoke("cron", "install", "--mem", str(odd)).exit_code == 0
    service = next(isolated_env.rglob("mem-dream.service")).read_text()
    assert f'ExecStart="{tmp_path}/my $$HOME tools/mem" cron run --env-file ' in service


# --- small things a first day meets ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_grep_takes_r_from_habit_and_hints_at_f_for_a_bad_pattern(fresh_project, memdir):
    (memdir / "note.md").write_text("---\nname: n\ndescription: d\ntype: user\n---\n\ncall f(x) here\n")
    for flag in ("-r", "-R", "--recursive"):
        r = invoke("grep", flag, "call", cwd=fresh_project)
        assert r.exit_code == 0 and "call f(x) here" in r.stdout, (flag, r.stderr)
    r = invoke("grep", "f(", cwd=fresh_project)
    assert r.exit_code == 2 and "use -F: mem grep -F 'f('" in r.stderr and r.stderr.count("\n") == 1
    assert invoke("grep", "-F", "f(", cwd=fresh_project).exit_code == 0


def test_every_usage_message_is_a_sentence_before_try(fresh_project):
    for args in (("scan", "--json", "--jsonl"), ("scan", "--secrets", "--check")):
        r = invoke(*args, cwd=fresh_project)
        assert r.exit_code == 2 and ". Try 'mem scan --help'." in r.stderr, r.stderr


def test_the_readme_runs_scripts_with_python3():
    assert "`python scripts/" not in (ROOT / "README.md").read_text()


def test_make_uninstall_says_hooks_and_cron_still_name_the_binary(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "uninstall", f"PREFIX={tmp_path / 'prefix'}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "mem hooks uninstall" in r.stdout and "mem cron uninstall" in r.stdout


@pytest.fixture
def pg_base():
    """A directory the postgres user can reach (run as root, the script runs the server as postgres)."""
    import tempfile

    top = tempfile.mkdtemp(prefix="mem-first-run-pg-")
    os.chmod(top, 0o755)
    yield Path(top) / "pg"
    data = Path(top) / "pg" / "data"
    if (data / "postmaster.pid").exists():  # never leave one running, whatever the test found
        import glob

        pg_ctl = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1]
        as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run([*as_pg, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
def test_make_test_stops_the_postgresql_it_started(pg_base):
    import glob

    if shutil.which("make") is None or not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        pytest.skip("no make or no PostgreSQL here")
    base = pg_base
    env = {**os.environ, "MEM_TEST_PG_DIR": str(base), "MEM_TEST_PG_PORT": "54391"}
    env.pop("MEM_TEST_PG_URL", None)
    env.pop("MEM_TEST_PG_KEEP", None)
    one = "tests/test_first_run.py::test_the_readme_runs_scripts_with_python3"
    serial = "PARALLEL="  # one test: no worker processes to start for it (about 3 s each run)
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "test", f"TESTS={one}", serial], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (base / "data" / "PG_VERSION").exists(), r.stderr  # it was started for the tests
    assert not (base / "data" / "postmaster.pid").exists() and "stopped PostgreSQL" in r.stderr
    # MEM_TEST_PG_KEEP=1 keeps it; `scripts/ci-postgres.sh stop` stops it
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "test", f"TESTS={one}", serial], capture_output=True, text=True,
                       env={**env, "MEM_TEST_PG_KEEP": "1"}, timeout=300)
    assert r.returncode == 0 and (base / "data" / "postmaster.pid").exists()
    r = subprocess.run(["bash", str(ROOT / "scripts" / "ci-postgres.sh"), "stop"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and not (base / "data" / "postmaster.pid").exists(), r.stderr


# --- mem doctor: each check catches its fault, reintroduced by hand ---------------------------------


def doctor(cwd, env=None) -> tuple[int, dict]:
    r = invoke("doctor", "--json", cwd=cwd, env=env)
    doc = json.loads(r.stdout)
    assert doc["ok"] == (r.exit_code == 0), (r.exit_code, doc)
    return r.exit_code, {c["name"]: c for c in doc["checks"]}


def test_doctor_on_a_fresh_machine_fails_nothing_but_what_is_missing(fresh_project):
    code, checks = doctor(fresh_project)
    for name in ("memory directory", "state directory", "hooks (claude)", "hooks (qwen)", "nightly dream (cron)",
                 "model credentials"):
        assert checks[name]["state"] in ("ok", "note"), checks[name]
    r = invoke("doctor", cwd=fresh_project)
    assert len(r.stdout.splitlines()) == len(checks) and r.stdout.startswith("ok    memory directory: ")


def test_doctor_catches_a_memory_directory_that_cannot_be_made(fresh_project, isolated_env):
    (isolated_env / ".claude").write_text("not a directory")
    code, checks = doctor(fresh_project, env={"CLAUDE_CONFIG_DIR": str(isolated_env / ".claude")})
    assert code == 1 and checks["memory directory"]["state"] == "fail"
    assert "cannot be made" in checks["memory directory"]["detail"]


def test_doctor_catches_a_state_directory_that_is_a_file(fresh_project, tmp_path):
    bad = tmp_path / "state-file"
    bad.write_text("x")
    code, checks = doctor(fresh_project, env={"MEM_STATE_DIR": str(bad)})
    assert code == 1 and checks["state directory"]["state"] == "fail" and "not a directory" in checks["state directory"]["detail"]


def test_doctor_catches_missing_and_broken_hooks(fresh_project, isolated_env, tmp_path):
    (isolated_env / ".claude").mkdir()  # Claude Code has run here: its hooks are expected
    code, checks = doctor(fresh_project)
    assert code == 1 and checks["hooks (claude)"]["state"] == "fail"
    assert checks["hooks (claude)"]["fix"] == "mem hooks install --client claude"
    fake = tmp_path / "bin" / "mem"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho mem 0\n")
    fake.chmod(0o755)
    assert invoke("hooks", "install", "--mem", str(fake), cwd=fresh_project).exit_code == 0
    code, checks = doctor(fresh_project)
    assert checks["hooks (claude)"]["state"] == "ok", checks["hooks (claude)"]
    fake.unlink()  # the mem the hooks name is gone
    code, checks = doctor(fresh_project)
    assert code == 1 and checks["hooks (claude)"]["state"] == "fail" and "exit 127" in checks["hooks (claude)"]["detail"]


def test_doctor_catches_a_cron_line_no_daemon_fires(tools, fresh_project, mem_exe):  # noqa: F811
    from mem.core import cron

    if cron.cron_daemon_running():
        pytest.skip("a real cron daemon runs on this machine")
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    code, checks = doctor(fresh_project)
    assert code == 1 and checks["nightly dream (cron)"]["state"] == "fail"
    assert "no cron daemon" in checks["nightly dream (cron)"]["detail"]


def test_doctor_catches_hooks_the_settings_switch_off(fresh_project, tmp_path):
    fake = tmp_path / "bin" / "mem"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho mem 0\n")
    fake.chmod(0o755)
    assert invoke("hooks", "install", "--mem", str(fake), cwd=fresh_project).exit_code == 0
    assert doctor(fresh_project)[1]["hooks (claude)"]["state"] == "ok"
    local = fresh_project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"disableAllHooks": true}\n')  # by hand, in the project's own settings
    code, checks = doctor(fresh_project)
    assert code == 1 and checks["hooks (claude)"]["state"] == "fail", checks["hooks (claude)"]
    assert "runs no hooks here: disableAllHooks in " in checks["hooks (claude)"]["detail"]


def test_doctor_catches_git_missing_from_path(fresh_project, tmp_path):
    bare = tmp_path / "bare-bin"  # a PATH with sh and man but no git
    bare.mkdir()
    for tool in ("sh", "man"):
        if shutil.which(tool):
            os.symlink(shutil.which(tool), bare / tool)
    code, checks = doctor(fresh_project, env={"PATH": str(bare)})
    assert code == 1 and checks["history"]["state"] == "fail" and checks["history"]["fix"] == "install git"
    assert checks["history"]["detail"].startswith("git is not on PATH: history is off")


def cron_check(project) -> tuple[int, dict]:
    code, checks = doctor(project)
    return code, checks["nightly dream (cron)"]


def test_doctor_notes_a_cron_daemon_with_no_job(tools, fresh_project, cron_daemon):  # noqa: F811
    code, check = cron_check(fresh_project)
    assert check == {"name": "nightly dream (cron)", "state": "note", "detail": "not scheduled (optional)",
                     "fix": "mem cron install"}


def test_doctor_passes_a_scheduled_job_with_its_daemon_and_a_good_run(tools, fresh_project, cron_daemon, mem_exe):  # noqa: F811
    from mem.core import cron

    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    code, check = cron_check(fresh_project)
    assert check["state"] == "ok" and check["detail"] == "scheduled via cron; never run yet", check
    assert cron.run([mem_exe]) == 0  # what the line runs: mem cron run, a real dream
    code, check = cron_check(fresh_project)
    assert check["state"] == "ok" and check["detail"].startswith("scheduled via cron; last run 20"), check
    assert check["fix"] is None


def test_doctor_catches_a_cron_env_file_others_can_read(tools, fresh_project, cron_daemon, mem_exe, isolated_env):  # noqa: F811
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    env_file = cron_env_file(isolated_env)
    env_file.chmod(0o644)  # by hand, as an editor that rewrites the file may leave it
    code, check = cron_check(fresh_project)
    assert code == 1 and check == {"name": "nightly dream (cron)", "state": "fail",
                                   "detail": f"{env_file} is mode 644", "fix": f"chmod 600 {env_file}"}
    env_file.chmod(0o600)
    assert cron_check(fresh_project)[1]["state"] == "ok"


def test_doctor_catches_a_cron_env_file_that_is_a_link(tools, fresh_project, cron_daemon, mem_exe, isolated_env, tmp_path):  # noqa: F811
    # mem cron run reads through it, but mem cron install refuses it: doctor says so before the next install does
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    env_file = cron_env_file(isolated_env)
    shared = tmp_path / "secrets" / "cron.env"
    shared.parent.mkdir()
    shutil.move(env_file, shared)
    env_file.symlink_to(shared)
    assert (shared.stat().st_mode & 0o777) == 0o600
    code, check = cron_check(fresh_project)
    assert code == 1 and check["state"] == "fail", check
    assert check["detail"] == (f"{env_file} is a symbolic link (to {shared}); mem cron install refuses it: "
                               "replace the link with the file")
    subprocess.run(["sh", "-c", check["fix"]], check=True)  # the fix, as printed, mends it
    assert not env_file.is_symlink() and (env_file.stat().st_mode & 0o777) == 0o600
    assert cron_check(fresh_project)[1]["state"] == "ok"
    shared.unlink()
    env_file.unlink()
    env_file.symlink_to(shared)  # a link to nothing
    code, check = cron_check(fresh_project)
    assert code == 1 and "is a symbolic link" in check["detail"]
    r = invoke("cron", "status")
    assert r.exit_code == 1 and f"environment  {env_file}  {env_file} is a symbolic link" in r.stdout, r.stdout


def test_doctor_catches_a_timer_systemd_no_longer_runs(tools, fresh_project, mem_exe, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_SYSTEMD", "1")
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    code, check = cron_check(fresh_project)
    assert check["state"] == "ok" and check["detail"].startswith("scheduled via systemd"), check
    monkeypatch.delenv("FAKE_SYSTEMD")  # the user manager gone (a container, a session without lingering)
    code, check = cron_check(fresh_project)
    assert code == 1 and check["state"] == "fail"
    assert check["detail"] == "systemd: systemctl --user does not answer here, so the timer never fires", check


def test_doctor_catches_a_failed_last_run(tools, fresh_project, cron_daemon, mem_exe, tmp_path):  # noqa: F811
    from mem.core import cron
    from mem.core.memdir.state import cron_log

    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    broken = tmp_path / "broken" / "mem"  # a mem whose dream fails: what cron run logs
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'mem: error: the dream failed' >&2\nexit 3\n")
    broken.chmod(0o755)
    assert cron.run([str(broken)]) == 3
    code, check = cron_check(fresh_project)
    assert code == 1 and check == {"name": "nightly dream (cron)", "state": "fail",
                                   "detail": f"the last run exited 3 ({cron_log()})", "fix": f"tail {cron_log()}"}
    assert cron.run([mem_exe]) == 0  # the next night's run succeeds
    assert cron_check(fresh_project)[1]["state"] == "ok"


def test_doctor_takes_a_night_skipped_for_a_held_lock_as_no_failure(tools, fresh_project, cron_daemon, mem_exe,  # noqa: F811
                                                                     tmp_path):
    """Exit 5: another dream held the lock, the night was skipped and the next one tries again."""
    from mem.core import cron

    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    locked = tmp_path / "locked" / "mem"
    locked.parent.mkdir()
    locked.write_text("#!/bin/sh\necho 'mem: dream: another dream holds the lock' >&2\nexit 5\n")
    locked.chmod(0o755)
    assert cron.run([str(locked)]) == 5
    assert cron_check(fresh_project)[1]["state"] == "ok"
    assert invoke("cron", "status").exit_code == 0


def test_doctor_names_an_unreadable_line_of_cron_env_not_chmod(tools, fresh_project, cron_daemon, mem_exe):  # noqa: F811
    from mem.core import cron

    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    path = cron.env_file()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("this is not a variable\n")
    code, check = cron_check(fresh_project)
    assert code == 1 and check["state"] == "fail" and "expected KEY=VALUE" in check["detail"]
    assert "chmod" not in check["fix"] and path in check["fix"]


def test_doctor_says_whether_a_key_is_set_never_its_value(fresh_project):
    key = "sk-ant-api03-" + "Q" * 40
    r = invoke("doctor", cwd=fresh_project, env={"ANTHROPIC_API_KEY": key})
    assert key not in r.stdout + r.stderr and "Q" * 10 not in r.stdout
    assert "ok    model credentials: ANTHROPIC_API_KEY is set" in r.stdout
    _, checks = doctor(fresh_project)
    assert checks["model credentials"]["state"] == "note"


def test_doctor_catches_man_pages_man_cannot_find(fresh_project, tmp_path):
    if shutil.which("man") is None:
        pytest.skip("no man here")
    env = {"PATH": "/usr/bin:/bin", "MANPATH": str(tmp_path / "nowhere")}
    code, checks = doctor(fresh_project, env=env)
    assert code == 1 and checks["man pages"]["state"] == "fail" and "mem-recall" in checks["man pages"]["detail"]
    (tmp_path / "m" / "man1").mkdir(parents=True)
    shutil.copy(ROOT / "man" / "mem-recall.1", tmp_path / "m" / "man1")
    _, checks = doctor(fresh_project, env={**env, "MANPATH": str(tmp_path / "m")})
    assert checks["man pages"]["state"] == "ok", checks["man pages"]


BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def test_doctor_catches_bash_completions_bash_cannot_find(fresh_project, tmp_path):
    # Asked of bash-completion itself: Debian 12's 2.11 looks in the user's directory and XDG_DATA_DIRS
    # only, not beside the command (a venv's share/), so only a file it loads counts.
    if not os.path.exists(BASH_COMPLETION):
        pytest.skip("no bash-completion here (apt-get install bash-completion)")
    env = {"SHELL": "/bin/bash", "PATH": "/usr/bin:/bin", "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_DATA_DIRS": str(tmp_path / "none")}
    code, checks = doctor(fresh_project, env=env)
    assert code == 1 and checks["completion (bash)"]["state"] == "fail"
    assert checks["completion (bash)"]["fix"] == "mem complete --install"
    venv_share = tmp_path / "venv" / "share" / "bash-completion" / "completions"
    venv_share.mkdir(parents=True)  # where pip puts it: found by bash-completion 2.12 and later only
    shutil.copy(ROOT / "completions" / "mem.bash", venv_share / "mem.bash")
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "bin" / "mem").write_text("#!/bin/sh\n")  # the command it sits beside
    (tmp_path / "venv" / "bin" / "mem").chmod(0o755)
    _, checks = doctor(fresh_project, env={**env, "PATH": f"{tmp_path / 'venv' / 'bin'}:/usr/bin:/bin"})
    assert checks["completion (bash)"]["state"] == ("ok" if _bash_completion_looks_beside_the_command() else "fail")
    r = invoke("complete", "--install", "bash", cwd=fresh_project, env=env)
    assert r.exit_code == 0, r.stderr
    where = tmp_path / "data" / "bash-completion" / "completions" / "mem"
    assert where.read_text() == (ROOT / "completions" / "mem.bash").read_text()
    _, checks = doctor(fresh_project, env=env)
    assert checks["completion (bash)"]["state"] == "ok" and str(where) in checks["completion (bash)"]["detail"]
    # not the user's shell: a note, not a failure
    where.unlink()
    _, checks = doctor(fresh_project, env={**env, "SHELL": "/usr/bin/zsh"})
    assert checks["completion (bash)"]["state"] == "note"


def _bash_completion_looks_beside_the_command() -> bool:
    return "_comp_load" in Path(BASH_COMPLETION).read_text(errors="replace")


def test_doctor_catches_zsh_completions_zsh_cannot_find(fresh_project, isolated_env, tmp_path):
    if shutil.which("zsh") is None:
        pytest.skip("no zsh here (apt-get install zsh)")
    env = {"SHELL": "/usr/bin/zsh", "PATH": "/usr/bin:/bin", "XDG_DATA_HOME": str(tmp_path / "data")}
    code, checks = doctor(fresh_project, env=env)
    zsh = checks["completion (zsh)"]
    assert code == 1 and zsh["state"] == "fail" and zsh["detail"] == "no _mem on zsh's fpath", zsh
    assert zsh["fix"].startswith("mem complete --install zsh, and add 'fpath=(")
    r = invoke("complete", "--install", "zsh", cwd=fresh_project, env=env)
    assert r.exit_code == 0 and (tmp_path / "data/zsh/site-functions/_mem").read_text() == (ROOT / "completions/_mem").read_text()
    assert "zsh: add this line before compinit in ~/.zshrc: fpath=(" in r.stderr
    _, checks = doctor(fresh_project, env=env)
    zsh = checks["completion (zsh)"]
    assert zsh["state"] == "fail" and "is not on zsh's fpath" in zsh["detail"], zsh
    line = zsh["fix"].split("'")[1]
    (isolated_env / ".zshrc").write_text(f"{line}\n")  # the line, but no compinit
    _, checks = doctor(fresh_project, env=env)
    assert checks["completion (zsh)"]["fix"] == "add 'autoload -Uz compinit && compinit' to ~/.zshrc"
    (isolated_env / ".zshrc").write_text(f"{line}\nautoload -Uz compinit && compinit\n")
    code, checks = doctor(fresh_project, env=env)
    assert checks["completion (zsh)"] == {"name": "completion (zsh)", "state": "ok",
                                          "detail": "compinit completes mem with _mem", "fix": None}
    # not the user's shell: a note, not a failure
    (isolated_env / ".zshrc").unlink()
    _, checks = doctor(fresh_project, env={**env, "SHELL": "/bin/bash"})
    assert checks["completion (zsh)"]["state"] == "note"


def test_doctor_catches_a_history_store_damaged_by_hand(fresh_project, isolated_env):
    from mem.core.memdir.state import state_dir
    from mem.core.memdir.store import MemoryDir

    r = invoke("remember", "--type", "project", "--name", "n", "--description", "d", "Deploys on Fridays.",
               cwd=fresh_project)
    assert r.exit_code == 0, r.stderr
    memory_dir = json.loads(invoke("path", "--json", cwd=fresh_project).stdout)["memory_dir"]
    store = Path(state_dir(MemoryDir(memory_dir), create=False))
    assert (store / "history.git").is_dir()
    _, checks = doctor(fresh_project)
    assert checks["state directory"]["state"] == "ok", checks["state directory"]
    shutil.rmtree(store)
    store.write_text("not a directory\n")  # the store replaced by a file, by hand
    code, checks = doctor(fresh_project)
    assert code == 1 and checks["state directory"] == {
        "name": "state directory", "state": "fail", "detail": f"the history {store} is not a directory",
        "fix": f"move {store} away"}


# --- every command from an empty HOME, in a project no client has opened -----------------------------

#: (arguments, the exit statuses it may end with there, what it says on stdout or stderr). Nothing may
#: crash (70) or leave a traceback. "{mem}" is the installed mem (what hooks and cron are to run).
NO_MODEL = "no model credentials: set ANTHROPIC_API_KEY"  # the documented no-model error: exit 3, what to set
NO_TEAM_SERVER = "no team server: set MEM_TEAM_URL (or TEAM_MEMORY_SYNC_URL), or pass --url"
NO_MEMDIR = "no memory directory at "
FRESH_RUNS = [
    (("path",), {0}, "/.claude/projects/"),
    (("path", "--json"), {0}, '"memory_dir"'),
    (("scan",), {0}, NO_MEMDIR),
    (("scan", "--json"), {0}, "[]"),
    (("index",), {1}, "no index at "),
    (("index", "--check"), {0}, "MEMORY.md: no problems"),
    (("recall", "--offline", "how do we deploy"), {1}, "no memories in "),
    (("recall", "how do we deploy"), {1}, "no memories in "),  # no key: the lexical ranker alone
    (("recall", "--hook"), {0}, "no hook payload on stdin"),  # a hook never fails the prompt
    (("eval", "--from-transcripts", "--offline"), {1}, "no transcripts: looked in "),
    (("prompt",), {0}, "# Memory"),
    (("context",), {1}, "no instruction files or memory index for "),
    (("extract",), {3}, NO_MODEL),
    (("remember", "--type", "project", "--name", "first", "--description", "the first one", "It works."), {0},
     "Saved first.md"),
    # placing it (type, name, description) needs a model: without one a usage error naming the key
    (("remember", "It works."), {2}, "required without a model (or set ANTHROPIC_API_KEY"),
    (("remember", "--model", "claude-sonnet-4-5", "It works."), {3}, NO_MODEL),
    (("forget", "nothing-here.md"), {2}, "not at a terminal: use --yes"),
    (("forget", "--yes", "nothing-here.md"), {1}, "no memory file nothing-here.md in "),
    (("dream",), {0}, "not dreaming: 0 sessions since the last consolidation"),
    (("dream", "--offline", "--dry-run"), {0}, "not dreaming: 0 sessions"),
    (("log", "a first log line"), {0}, "/memory/logs/"),
    (("history",), {1}, "no change recorded in "),
    (("undo", "--dry-run"), {1}, "nothing to undo"),
    (("restore", "MEMORY.md", "--at", "1h"), {1}, "no recorded version of MEMORY.md"),
    (("session", "status"), {2}, "which session? give --session ID"),
    (("session", "status", "--session", "s1"), {1}, "no transcript for session s1"),
    (("session", "path", "--session", "s1"), {0}, "/s1/session-memory/summary.md"),
    (("session", "show", "--session", "s1"), {1}, "no session notes at "),
    (("session", "init", "--session", "s1"), {0}, "created the session notes"),
    (("session", "compact", "--session", "s1"), {1}, "no session notes at "),
    (("session", "update", "--session", "s1"), {2}, "needs --transcript PATH (or --hook)"),
    (("grep", "anything"), {1}, NO_MEMDIR),
    (("lint",), {0}, "0 files checked, none flagged"),
    (("status",), {0}, "does not exist yet"),
    (("status", "--json"), {0}, '"memory_dir"'),
    (("cost",), {0}, "session start"),
    (("verify",), {3}, "is not a git repository with a commit"),
    (("team", "status"), {3}, NO_TEAM_SERVER),
    (("team", "pull"), {3}, NO_TEAM_SERVER),
    (("team", "push"), {3}, NO_TEAM_SERVER),
    (("team", "sync"), {3}, NO_TEAM_SERVER),
    (("team", "watch"), {3}, NO_TEAM_SERVER),
    (("team", "token", "list"), {1}, "no team database at "),
    (("team", "token", "revoke", "abc"), {1}, "no team database at "),
    (("team", "token", "add", "--repo", "github.com/acme/app"), {0}, "only its hash is stored"),
    (("export", "-o", "-"), {1}, NO_MEMDIR),
    (("import", "--client", "codex"), {0}, "no memories of codex's own found"),
    (("import", "--client", "gemini"), {0}, "no memories of gemini's own found"),
    (("relocate", "/old/place", "."), {1}, "no memory or transcripts recorded for /old/place"),
    (("promote", "nothing"), {1}, "no memory nothing in "),
    (("demote", "nothing"), {1}, "no memory nothing in "),
    (("hooks", "status"), {1}, "SessionStart  not installed (mem hooks install --client claude)"),
    (("hooks", "install", "--mem", "{mem}"), {0}, "installed SessionStart, UserPromptSubmit"),
    (("hooks", "uninstall"), {0}, "nothing to change"),
    (("cron", "status"), {1}, "not scheduled (mem cron install)"),
    (("cron", "install", "--mem", "{mem}", "--dry-run"), {1}, "would schedule nightly at 04:30 via cron"),
    (("cron", "install", "--mem", "{mem}"), {0}, "scheduled"),
    (("cron", "uninstall"), {0}, "no nightly job of mem's was scheduled"),
    (("cron", "run"), {0}, ""),  # run as a process: it starts the mem that runs it (its log: test_cron.py)
    (("complete", "bash"), {0}, "_mem_completion()"),
    (("complete", "--install", "--dry-run"), {1}, "would "),
    (("complete", "--install"), {0}, "bash-completion/completions/mem"),
    (("model",), {3}, NO_MODEL),
    (("model", "test"), {3}, NO_MODEL),
    (("doctor",), {0, 1}, "ok    memory directory: "),
    (("help",), {0}, "Usage: mem [OPTIONS] COMMAND"),
    (("help", "recall"), {0}, "Usage: mem recall"),
]
#: Commands started from an empty HOME by a test of their own, not by FRESH_RUNS.
FRESH_ELSEWHERE = {("team", "serve"): "test_team_serve_from_an_empty_home"}
#: What only a process shows: the command starts the mem running it (in this process, that is pytest).
AS_A_PROCESS = {("cron", "run")}


@pytest.mark.parametrize("args,codes,says", FRESH_RUNS, ids=[" ".join(a) for a, _, _ in FRESH_RUNS])
def test_every_command_from_an_empty_home(args, codes, says, fresh_project, isolated_env, mem_exe, tools):  # noqa: F811
    args = tuple(mem_exe if a == "{mem}" else a for a in args)
    if args in AS_A_PROCESS:
        p = subprocess.run([mem_exe, *args], capture_output=True, text=True, cwd=fresh_project, timeout=120,
                           stdin=subprocess.DEVNULL)
        code, out, err = p.returncode, p.stdout, p.stderr
    else:
        r = invoke(*args, cwd=fresh_project, input="")
        code, out, err = r.exit_code, r.stdout, r.stderr
    assert code in codes, (code, out[-500:], err[-1000:])
    assert "Traceback" not in err and "(run with --debug" not in err, err
    assert says in out + err, (says, out[-500:], err[-1000:])
    if code != 0:  # a failure, or nothing found, says so: a line on stderr, or a report
        assert err.startswith("mem: ") or out.strip(), (code, err)
    assert not (isolated_env / ".qwen").exists()  # nothing made for a client the user does not have


def _runnable_commands(group=cli, path=()):
    """Every command's words: each leaf, and each group that runs on its own (mem model)."""
    ctx = click.Context(group, info_name="mem")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if not isinstance(cmd, click.Group) or cmd.invoke_without_command:
            yield (*path, name)
        if isinstance(cmd, click.Group):
            yield from _runnable_commands(cmd, (*path, name))


def _command_of(args) -> tuple:
    """The command words at the head of ``args`` (options and operands after them left out)."""
    group, words = cli, []
    for word in args:
        cmd = group.get_command(click.Context(group, info_name="mem"), word) if isinstance(group, click.Group) else None
        if cmd is None:
            break
        words.append(word)
        group = cmd
    return tuple(words)


def test_every_command_has_a_first_run_case():
    commands = set(_runnable_commands())
    assert len(commands) >= 50
    covered = {_command_of(args) for args, _, _ in FRESH_RUNS} | set(FRESH_ELSEWHERE)
    missing = sorted(" ".join(c) for c in commands - covered)
    assert not missing, f"give these a case in FRESH_RUNS (run from an empty HOME): {missing}"
    assert covered <= commands, sorted(covered - commands)
    assert all(name in globals() for name in FRESH_ELSEWHERE.values())


def test_team_serve_from_an_empty_home(fresh_project, isolated_env, mem_exe):
    """The server makes its database in an empty HOME, listens, and exits 0 on SIGTERM."""
    import signal

    proc = subprocess.Popen([mem_exe, "team", "serve", "--port", "0"], cwd=fresh_project, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        line = proc.stderr.readline()
        assert '"listening"' in line or "listening" in line, line
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert (isolated_env / ".local" / "share" / "mem" / "team.sqlite3").exists()


def test_cron_uninstall_dry_run_removes_nothing(tools, isolated_env, mem_exe):  # noqa: F811
    _, table = tools
    assert invoke("cron", "install", "--mem", mem_exe).exit_code == 0
    before = table.read_text()
    r = invoke("cron", "uninstall", "--dry-run")
    assert r.exit_code == 1 and r.stdout == "would remove crontab line\n" and table.read_text() == before
    assert invoke("cron", "uninstall").exit_code == 0
    r = invoke("cron", "uninstall", "--dry-run")
    assert r.exit_code == 0 and r.stdout == ""


def test_a_json_document_already_printed_gets_no_error_document_after_it(fresh_project, memdir):
    r = invoke("forget", "--yes", "--json", "terraform modules", cwd=fresh_project)
    assert r.exit_code == 1 and json.loads(r.stdout)["candidates"] == [] and "no memory matches" in r.stderr
