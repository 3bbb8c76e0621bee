"""mem model: which backend and model each job uses and why, never the secret; mem model test."""

from __future__ import annotations

import json

import pytest


def test_no_backend_is_exit_3(run_mem, tmp_path):
    r = run_mem("model", cwd=str(tmp_path))
    assert r.returncode == 3 and r.stdout == "" and "ANTHROPIC_API_KEY" in r.stderr


def test_each_job_its_backend_model_and_source_never_the_key(run_mem, tmp_path):
    env = {"ANTHROPIC_API_KEY": "sk-ant-model-cli-secret", "OPENAI_API_KEY": "sk-openai-model-cli-secret",
           "OPENAI_MODEL": "local-model", "MEM_MODEL_EXTRACT": "claude-haiku-4-5"}
    r = run_mem("model", "--json", env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    rows = {row["job"]: row for row in json.loads(r.stdout)}
    assert set(rows) == {"recall", "forget", "extract", "remember", "session", "dream"}
    assert rows["extract"] == {"job": "extract", "backend": "anthropic", "model": "claude-haiku-4-5", "base_url": None,
                               "credentials": "env ANTHROPIC_API_KEY", "reason": "detected"}
    r = run_mem("model", "--backend", "openai", env=env, cwd=str(tmp_path))
    assert r.returncode == 0 and "recall\topenai\tlocal-model\tenv OPENAI_API_KEY (--backend)" in r.stdout
    assert "secret" not in r.stdout + r.stderr


def test_model_test_reports_latency_or_the_error_in_one_line(run_mem, fake_openai, fake_api, tmp_path):
    fake_openai.reply_text("OK")
    fake_api.reply_status(401, "invalid x-api-key")
    r = run_mem("model", "test", cwd=str(tmp_path))
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("anthropic\tclaude-sonnet-5-5\tfailed\tmodel server answered 401")
    backend, model, ok, latency = lines[1].split("\t")
    assert (backend, model, ok) == ("openai", "local-model", "ok") and latency.endswith("s")
    fake_openai.reply_text("OK")
    r = run_mem("model", "test", "--backend", "openai", "--json", cwd=str(tmp_path))
    assert r.returncode == 0
    (row,) = json.loads(r.stdout)
    assert row["ok"] and row["latency_s"] >= 0 and row["error"] is None
    assert "not-a-secret" not in r.stdout + r.stderr


def test_backend_on_a_job_command_chooses_the_server(run_mem, fake_openai, fake_api, memdir, tmp_path):
    p = tmp_path / "sess-1.jsonl"
    p.write_text("".join(json.dumps({"type": r, "uuid": u, "sessionId": "sess-1", "message": {"role": r, "content": c}}) + "\n"
                         for u, r, c in (("u1", "user", "remember that I prefer tabs"), ("a1", "assistant", "Noted."))))
    fake_openai.reply_text("Nothing to save.")
    r = run_mem("extract", "--backend", "openai", "--transcript", str(p), "--json")
    assert r.returncode == 0, r.stderr
    assert [q["path"] for q in fake_openai.requests if q["method"] == "POST"] == ["/v1/chat/completions"]
    assert fake_api.requests == []  # the anthropic key in the environment was not used


# --- mem model names where each configuration's credentials came from (issue #28) ----------------

#: the one secret of every configuration below; never in what mem model prints
SECRET = "sk-secret-Vq7-never-printed"


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _claude(home, block: dict) -> None:
    _write(home / ".claude" / "settings.json", json.dumps(block))


def _anthropic_key(home, tmp_path):
    return {"ANTHROPIC_API_KEY": SECRET}


def _anthropic_token(home, tmp_path):
    return {"ANTHROPIC_AUTH_TOKEN": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}


def _settings_key(home, tmp_path):
    _claude(home, {"env": {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_MODEL": "claude-opus-4-1"}})
    return {}


def _settings_token(home, tmp_path):
    _claude(home, {"env": {"ANTHROPIC_AUTH_TOKEN": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    return {}


def _api_key_helper(home, tmp_path):
    # mem model does not run the helper: it would print the key it is asked never to show
    _claude(home, {"apiKeyHelper": f"touch {tmp_path}/helper-ran; echo {SECRET}"})
    return {}


def _bedrock(home, tmp_path):
    return {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-central-1", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": SECRET}


def _vertex(home, tmp_path):
    return {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p9"}


def _claude_code(home, tmp_path):
    exe = tmp_path / "bin" / "claude"
    _write(exe, "#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return {"PATH": f"{exe.parent}:/usr/bin:/bin"}


def _openai_env(home, tmp_path):
    return {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_MODEL": "qwen3-coder"}


def _qwen_settings(home, tmp_path):
    _write(home / ".qwen" / "settings.json", json.dumps(
        {"security": {"auth": {"selectedType": "openai", "apiKey": SECRET, "baseUrl": "http://127.0.0.1:9/v1"}},
         "model": {"name": "qwen3-coder-plus"}}))
    return {}


def _qwen_dotenv(home, tmp_path):
    _write(home / ".qwen" / "settings.json", json.dumps(
        {"security": {"auth": {"selectedType": "openai", "baseUrl": "http://127.0.0.1:9/v1"}},
         "model": {"name": "qwen3-coder"}}))
    _write(home / ".qwen" / ".env", f"OPENAI_API_KEY={SECRET}\n")
    return {}


@pytest.mark.parametrize(("configure", "backend", "model", "source"), [
    (_anthropic_key, "anthropic", "claude-sonnet-5-5", "env ANTHROPIC_API_KEY"),
    (_anthropic_token, "anthropic", "claude-sonnet-5-5", "env ANTHROPIC_AUTH_TOKEN"),
    (_settings_key, "claude-settings", "claude-opus-4-1", "~/.claude/settings.json env ANTHROPIC_API_KEY"),
    (_settings_token, "claude-settings", "claude-sonnet-5-5", "~/.claude/settings.json env ANTHROPIC_AUTH_TOKEN"),
    (_api_key_helper, "claude-settings", "claude-sonnet-5-5", "apiKeyHelper (~/.claude/settings.json)"),
    (_bedrock, "bedrock", None,
     "env CLAUDE_CODE_USE_BEDROCK; region eu-central-1 (env AWS_REGION); AWS credentials from env AWS_ACCESS_KEY_ID"),
    (_vertex, "vertex", None, "env CLAUDE_CODE_USE_VERTEX; region us-east5 (env CLOUD_ML_REGION); "
                              "project p9 (env ANTHROPIC_VERTEX_PROJECT_ID); Google application-default credentials"),
    (_claude_code, "claude-code", "claude-sonnet-5-5", "Claude Code's own login ({bin}/claude)"),
    (_openai_env, "openai", "qwen3-coder", "env OPENAI_API_KEY"),
    (_qwen_settings, "openai", "qwen3-coder-plus", "~/.qwen/settings.json security.auth.apiKey; provider from ~/.qwen/settings.json"),
    (_qwen_dotenv, "openai", "qwen3-coder", "~/.qwen/.env OPENAI_API_KEY; provider from ~/.qwen/settings.json"),
], ids=lambda v: v.__name__.strip("_") if callable(v) else None)
def test_mem_model_names_the_source_of_each_configuration(run_mem, isolated_env, tmp_path, configure, backend,
                                                          model, source):
    env = configure(isolated_env, tmp_path)
    r = run_mem("model", "--json", env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert {row["backend"] for row in rows} == {backend} and {row["reason"] for row in rows} == {"detected"}
    extract = next(row for row in rows if row["job"] == "extract")
    assert extract["credentials"] == source.format(bin=tmp_path / "bin")
    if model:
        assert extract["model"] == model
    text = run_mem("model", env=env, cwd=str(tmp_path))
    assert text.returncode == 0 and backend in text.stdout
    assert SECRET not in r.stdout + r.stderr + text.stdout + text.stderr
    assert not (tmp_path / "helper-ran").exists()
