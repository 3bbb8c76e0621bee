"""The backend the nightly dream will use, as `mem cron status`, `mem cron install` and `mem status` name it.

The job runs in its own environment (HOME, the scheduler's PATH, the environment file), not this
shell's: a key exported here does not reach it, a key in the file does, and so do Claude Code's and
qwen-code's user settings under HOME. Stand-in crontab and systemctl as in tests/test_cron.py.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from test_cron import tools  # noqa: F401  (the stand-in crontab and systemctl)

KEY = "sk-ant-api03-" + "n" * 40


def env_file(home):
    path = home / ".config" / "mem" / "cron.env"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def nightly(run_mem, *args):
    r = run_mem("cron", "status", "--json", *args)
    return json.loads(r.stdout)["backend"], r


def test_with_nothing_configured_the_dream_runs_mechanically_and_says_how_to_give_it_a_model(
        tools, run_mem, isolated_env):  # noqa: F811
    backend, _ = nightly(run_mem)
    assert backend["backend"] is None and "mechanical" in backend["reason"]
    assert "--with-key" in backend["reason"]
    text = run_mem("cron", "status").stdout
    assert "backend  none: no model in the job's environment" in text


def test_a_key_exported_in_this_shell_does_not_reach_the_job(tools, run_mem, isolated_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert run_mem("model", "--json").returncode == 0  # here, a model answers
    backend, r = nightly(run_mem)
    assert backend["backend"] is None  # ... but not in the nightly job
    assert KEY not in r.stdout + r.stderr


def test_a_key_in_the_environment_file_is_named_with_the_file_never_its_value(
        tools, run_mem, isolated_env, monkeypatch):  # noqa: F811
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    path = env_file(isolated_env)
    path.write_text(f"ANTHROPIC_API_KEY={KEY}\nMEM_MODEL_DREAM=claude-test-dream\n")
    path.chmod(0o600)
    backend, r = nightly(run_mem)
    assert backend == {"backend": "anthropic", "model": "claude-test-dream",
                       "credentials": f"ANTHROPIC_API_KEY in {path}", "reason": "detected"}
    text = run_mem("cron", "status").stdout
    assert f"backend  anthropic  claude-test-dream  ANTHROPIC_API_KEY in {path}" in text
    assert KEY not in r.stdout + text


def test_claude_codes_user_settings_reach_the_job(tools, run_mem, isolated_env):  # noqa: F811
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": "token-in-settings"}}))
    backend, r = nightly(run_mem)
    assert backend["backend"] == "claude-settings"
    assert "settings.json" in backend["credentials"] and "token-in-settings" not in r.stdout


def test_an_openai_compatible_server_in_the_environment_file(tools, run_mem, isolated_env):  # noqa: F811
    path = env_file(isolated_env)
    path.write_text("OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=qwen3-coder\nOPENAI_API_KEY=local\n")
    path.chmod(0o600)
    backend, _ = nightly(run_mem)
    assert (backend["backend"], backend["model"]) == ("openai", "qwen3-coder")


def test_install_names_the_backend_and_stores_no_key_without_with_key(
        tools, run_mem, isolated_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    r = run_mem("cron", "install")
    assert r.returncode == 0, r.stderr
    assert "backend: none: no model in the job's environment" in r.stderr  # the shell's key stays here
    path = isolated_env / ".config" / "mem" / "cron.env"
    assert KEY not in path.read_text() and stat.S_IMODE(path.stat().st_mode) == 0o600
    r = run_mem("cron", "install", "--with-key", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"]["credentials"] == f"ANTHROPIC_API_KEY in {path}"
    assert KEY not in r.stdout + r.stderr


def test_mem_status_names_the_nightly_backend(tools, run_mem, isolated_env, memdir):  # noqa: F811
    path = env_file(isolated_env)
    path.write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    path.chmod(0o600)
    r = run_mem("status")
    assert r.returncode == 0, r.stderr
    assert "nightly: anthropic, " in r.stdout and f"ANTHROPIC_API_KEY in {path}" in r.stdout
    doc = json.loads(run_mem("status", "--json").stdout)
    assert doc["nightly_backend"]["backend"] == "anthropic" and KEY not in json.dumps(doc)


@pytest.mark.parametrize("via", ["cron", "systemd"])
def test_the_schedulers_path_is_the_one_searched_for_claude(tools, run_mem, isolated_env, tmp_path, via):  # noqa: F811
    """A `claude` only on this shell's PATH is not the job's: cron's PATH is /usr/bin:/bin."""
    from mem.core import cron

    bin_dir = tmp_path / "mybin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    env = {"HOME": str(isolated_env), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    assert cron.nightly_backend(env, via=via)["backend"] != "claude-code"
    assert cron.job_environment(env, via)["PATH"] == (cron.CRON_PATH if via == "cron" else cron.SYSTEMD_PATH)
