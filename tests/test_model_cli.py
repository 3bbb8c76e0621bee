"""mem model: which backend and model each job uses and why, never the secret; mem model test."""

from __future__ import annotations

import json


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
