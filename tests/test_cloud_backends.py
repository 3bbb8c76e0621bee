"""Bedrock and Vertex: Claude Code's CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX configuration, read as the
client reads it, and the jobs run through the SDK's own clients against local servers that speak each cloud's
URLs and auth (tests/fakecloud.py: SigV4 recomputed, OAuth tokens minted)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from fakeapi import message
from mem.core.errors import ConfigError
from mem.core.jobs import llm
from mem.core.jobs.llm import ModelError
from sessions import write_session

OUTPUT = 8_192  # what the extraction agent reserves for the model's answer


def nothing(body: dict) -> dict:
    return message([{"type": "text", "text": "Nothing worth saving."}])


def prompts(requests: list[dict]) -> list[str]:
    return ["\n\n".join(b["text"] for b in r["body"]["messages"][0]["content"] if b.get("type") == "text")
            for r in requests]


def extract_a_long_session(run_mem, fake, tmp_path, monkeypatch) -> list[str]:
    """mem extract of a ~3 MB session through ``fake``: every planted fact reaches a request, none over the window."""
    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=3_000_000)
    assert path.stat().st_size > 3_000_000 and len(facts) >= 10
    fake.context_window = 40_000
    monkeypatch.setenv("MEM_CONTEXT_WINDOW", "40000")
    fake.respond_with(nothing)
    r = run_mem("extract", "--transcript", str(path), "--json")
    assert r.returncode == 0, r.stderr
    assert {q["status"] for q in fake.requests} == {200}  # not one over the window, not one refused
    assert fake.max_input_tokens + OUTPUT <= 40_000
    sent = prompts(fake.requests)
    assert len(sent) > 5 and [f for f in facts if not any(f in p for p in sent)] == []
    for q in fake.requests:
        assert "model" not in q["body"] and q["body"]["anthropic_version"]
    return [q["path"] for q in fake.requests]


def test_mem_extract_of_a_multi_mb_session_through_bedrock(run_mem, fake_bedrock, memdir, tmp_path, monkeypatch):
    paths = extract_a_long_session(run_mem, fake_bedrock, tmp_path, monkeypatch)
    assert set(paths) == {"/model/global.anthropic.claude-sonnet-5-5/invoke"}
    key = next(iter(fake_bedrock.keys))
    for q in fake_bedrock.requests:  # signed for the region and service, and the server recomputed it
        assert q["headers"]["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={key}/")
        assert "/us-east-1/bedrock/aws4_request" in q["headers"]["authorization"]
    assert fake_bedrock.rejected_auth == 0


def test_mem_extract_of_a_multi_mb_session_through_vertex(run_mem, fake_vertex, memdir, tmp_path, monkeypatch):
    paths = extract_a_long_session(run_mem, fake_vertex, tmp_path, monkeypatch)
    assert set(paths) == {"/v1/projects/mem-test-project/locations/us-east5/publishers/anthropic/models/"
                          "claude-sonnet-5-5:rawPredict"}
    assert fake_vertex.token_requests == 1  # one token for the whole run
    assert all(q["headers"]["authorization"] in {f"Bearer {t}" for t in fake_vertex.tokens} for q in fake_vertex.requests)


A = "---\nname: deploy-day\ndescription: deploys happen on fridays\ntype: project\n---\n\nDeploys happen on Fridays.\n"
B = "---\nname: deploy-day-2\ndescription: deploy on friday afternoons\ntype: project\n---\n\nWe deploy Friday afternoons.\n"
MERGED = ("---\nname: deploy-day\ndescription: deploys happen on Friday afternoons\ntype: project\n---\n\n"
          "Deploys happen on Friday afternoons.\n\n**Why:** release cadence.\n\n**How to apply:** plan merges before Friday.\n")


@pytest.mark.parametrize("cloud", ["fake_bedrock", "fake_vertex"])
def test_an_agent_dream_runs_to_completion(cloud, run_mem, memdir, request):
    fake = request.getfixturevalue(cloud)
    (memdir / "a.md").write_text(A)
    (memdir / "b.md").write_text(B)
    (memdir / "MEMORY.md").write_text("- [Deploy day](a.md) — fridays\n- [Deploy 2](b.md) — friday\n")
    fake.reply_tool_uses(("read", {"file_path": "a.md"}), ("read", {"file_path": "b.md"}))
    fake.latency = 0.1  # a slow answer is still an answer
    fake.overload_next(1)  # 529 for the first request: retried inside the deadline
    fake.reply_status(429, "Too many requests")  # and a throttle: retried too
    fake.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}), ("delete", {"file_path": "b.md"}),
                         ("write", {"file_path": "MEMORY.md", "content": "- [Deploy day](a.md) — Friday afternoons\n"}))
    fake.reply_text("Merged b.md into a.md.")
    r = run_mem("dream", "--force", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "agent" and doc["ran"] is True and doc["deleted"] == ["b.md"]
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    assert [q["status"] for q in fake.requests] == [529, 200, 429, 200, 200]
    assert {t["name"] for t in fake.requests[0]["body"]["tools"]} >= {"read", "write", "delete"}


# --- the server's refusals, as the backend reports them ---------------------------------------------


@pytest.mark.parametrize("cloud", ["fake_bedrock", "fake_vertex"])
def test_refusals_become_model_errors(cloud, request, monkeypatch):
    fake = request.getfixturevalue(cloud)
    fake.context_window = 1_000
    model = llm.model_for("extract")
    ask = dict(messages=[{"role": "user", "content": "word " * 2_000}], max_tokens=100)
    with pytest.raises(ModelError) as exc:
        model.create(**ask)
    assert exc.value.status == 400 and "too long" in str(exc.value)
    fake.context_window = None
    for status, kind in ((429, "overloaded"), (529, "overloaded"), (500, "status"), (503, "status")):
        fake.reply_status(status, "scripted")
        with pytest.raises(ModelError) as exc:
            model.create(**ask)
        assert (exc.value.kind, exc.value.status) == (kind, status)
    fake.reply_text("late", delay=3)
    with pytest.raises(ModelError) as exc:
        llm.model_for("extract", timeout=0.5).create(**ask)
    assert exc.value.kind == "timeout"


def post(url: str, body: dict, headers: dict | None = None) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json",
                                                                                 **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_local_clouds_refuse_what_the_real_ones_refuse(fake_bedrock, fake_vertex):
    fake_bedrock.reply_text("never")
    fake_vertex.reply_text("never")
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    invoke = f"{fake_bedrock.url}/model/global.anthropic.claude-sonnet-5-5/invoke"
    assert post(invoke, body) == 403  # unsigned
    assert post(invoke, body, {"authorization": "AWS4-HMAC-SHA256 Credential=AKIAFAKECLOUDTEST001/20260101/us-east-1/"
                                                "bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
                               "x-amz-date": "20260101T000000Z"}) == 403  # a signature that does not verify
    vbody = {**body, "anthropic_version": "vertex-2023-10-16"}
    predict = f"{fake_vertex.url}/v1/projects/{fake_vertex.project}/locations/{fake_vertex.region}/publishers/" \
              "anthropic/models/claude-sonnet-5-5:rawPredict"
    assert post(predict, vbody) == 401 and post(predict, vbody, {"authorization": "Bearer made-up"}) == 401
    assert post(predict.replace(fake_vertex.project, "other"), vbody) == 404
    fake_vertex.tokens.add("ok-token")
    assert post(predict, {**vbody, "model": "claude-sonnet-5-5"}, {"authorization": "Bearer ok-token"}) == 400
    assert post(predict, vbody, {"authorization": "Bearer ok-token"}) == 200
    assert fake_bedrock.remaining == 1  # nothing unsigned got an answer


def test_a_wrong_aws_secret_is_a_403_that_names_no_secret(run_mem, fake_bedrock, tmp_path):
    r = run_mem("model", "test", env={"AWS_SECRET_ACCESS_KEY": "wrong/Secret+Key0123456789abcdefghijklm"})
    assert r.returncode == 1
    assert "bedrock\tglobal.anthropic.claude-sonnet-5-5\tfailed\tmodel server answered 403" in r.stdout
    assert "wrong/Secret" not in r.stdout + r.stderr and fake_bedrock.rejected_auth == 1


def test_bedrock_api_key_and_skip_auth(fake_bedrock, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    fake_bedrock.bearer_tokens = ("ABSKfakebedrockapikey",)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKfakebedrockapikey")
    fake_bedrock.reply_text("OK")
    assert llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}]).content[0].text == "OK"
    assert fake_bedrock.requests[-1]["headers"]["authorization"] == "Bearer ABSKfakebedrockapikey"
    # a gateway that signs on our behalf: nothing sent, not even the key in the environment
    monkeypatch.setenv("CLAUDE_CODE_SKIP_BEDROCK_AUTH", "1")
    fake_bedrock.open = True
    fake_bedrock.reply_text("OK")
    llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert "authorization" not in fake_bedrock.requests[-1]["headers"]


def test_vertex_skip_auth_sends_no_token(fake_vertex, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_SKIP_VERTEX_AUTH", "true")
    fake_vertex.open = True
    fake_vertex.reply_text("OK")
    llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert "authorization" not in fake_vertex.requests[-1]["headers"] and fake_vertex.token_requests == 0


# --- which configuration, named for people (mem model), never the secret ------------------------------


def settings_env(home, block: dict) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"env": block}))


def credentials(run_mem, env: dict | None = None, *args: str) -> dict:
    r = run_mem("model", "--json", *args, env=env or {})
    assert r.returncode == 0, r.stderr
    rows = {row["job"]: row for row in json.loads(r.stdout)}
    return rows["extract"]


SECRET = "aws/Secret+NeverShown0123456789abcdefghij"


@pytest.mark.parametrize("env, backend, source", [
    ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
      "AWS_SECRET_ACCESS_KEY": SECRET},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region us-east-1 (env AWS_REGION); AWS credentials from env AWS_ACCESS_KEY_ID"),
    ({"CLAUDE_CODE_USE_BEDROCK": "true", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_PROFILE": "work"},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region eu-west-1 (env AWS_DEFAULT_REGION); AWS profile work (env AWS_PROFILE)"),
    ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-west-2", "AWS_BEARER_TOKEN_BEDROCK": SECRET},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region us-west-2 (env AWS_REGION); Bedrock API key from env AWS_BEARER_TOKEN_BEDROCK"),
    ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
      "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region us-east-1 (env AWS_REGION); no AWS auth (env CLAUDE_CODE_SKIP_BEDROCK_AUTH)"),
    ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region us-east-1 (env AWS_REGION); AWS credentials from boto3's default chain "
                "(~/.aws, SSO, instance role)"),
    ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p1"},
     "vertex", "env CLAUDE_CODE_USE_VERTEX; region us-east5 (env CLOUD_ML_REGION); project p1 (env ANTHROPIC_VERTEX_PROJECT_ID); "
               "Google application-default credentials"),
    ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "global", "GOOGLE_APPLICATION_CREDENTIALS": "/k/sa.json"},
     "vertex", "env CLAUDE_CODE_USE_VERTEX; region global (env CLOUD_ML_REGION); project from the Google credentials; "
               "Google credentials file /k/sa.json (env GOOGLE_APPLICATION_CREDENTIALS)"),
    ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p1",
      "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"},
     "vertex", "env CLAUDE_CODE_USE_VERTEX; region us-east5 (env CLOUD_ML_REGION); project p1 (env ANTHROPIC_VERTEX_PROJECT_ID); "
               "no Google auth (env CLAUDE_CODE_SKIP_VERTEX_AUTH)"),
    # Claude Code with the switch set sends nothing to the Anthropic API, whatever key is also there
    ({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "ANTHROPIC_API_KEY": SECRET, "CLAUDE_CODE_USE_VERTEX": "1"},
     "bedrock", "env CLAUDE_CODE_USE_BEDROCK; region us-east-1 (env AWS_REGION); AWS credentials from boto3's default chain "
                "(~/.aws, SSO, instance role)"),
    ({"CLAUDE_CODE_USE_BEDROCK": "0", "ANTHROPIC_API_KEY": SECRET}, "anthropic", "env ANTHROPIC_API_KEY"),
])
def test_mem_model_names_the_source_of_each_configuration(run_mem, env, backend, source):
    row = credentials(run_mem, env)
    assert (row["backend"], row["credentials"], row["reason"]) == (backend, source, "detected")
    assert SECRET not in json.dumps(row)


def test_claude_codes_settings_env_blocks_configure_bedrock_and_vertex(run_mem, isolated_env, tmp_path):
    home = isolated_env
    settings_env(home, {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "ap-northeast-1", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
                        "AWS_SECRET_ACCESS_KEY": SECRET,
                        "ANTHROPIC_MODEL": "apac.anthropic.claude-sonnet-4-20250514-v1:0"})
    row = credentials(run_mem)
    where = f"{home}/.claude/settings.json env".replace(str(home), "~")
    assert (row["backend"], row["model"]) == ("bedrock", "apac.anthropic.claude-sonnet-4-20250514-v1:0")
    assert row["credentials"] == (f"{where} CLAUDE_CODE_USE_BEDROCK; region ap-northeast-1 ({where} AWS_REGION); "
                                  f"AWS credentials from {where} AWS_ACCESS_KEY_ID")
    config = llm.model_config("extract", env={**os.environ})
    assert config.options["aws_secret_key"] == SECRET and config.options["region"] == "ap-northeast-1"
    settings_env(home, {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "europe-west1",
                        "ANTHROPIC_VERTEX_PROJECT_ID": "p2", "ANTHROPIC_MODEL": "claude-sonnet-4-5@20250929"})
    row = credentials(run_mem)
    assert (row["backend"], row["model"]) == ("vertex", "claude-sonnet-4-5@20250929")
    assert row["credentials"].startswith(f"{where} CLAUDE_CODE_USE_VERTEX; region europe-west1 ({where} CLOUD_ML_REGION)")
    row = credentials(run_mem, {"ANTHROPIC_API_KEY": "k"}, "--backend", "anthropic")
    assert (row["backend"], row["reason"]) == ("anthropic", "--backend")


def test_a_cloud_models_limits_are_its_claude_models(fake_bedrock):
    from mem.core.jobs.backends import bedrock, vertex

    assert bedrock.claude_name("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5-20250929"
    assert bedrock.claude_name("arn:aws:bedrock:us-east-1:123:inference-profile/global.anthropic.claude-opus-4-6-v1") \
        == "claude-opus-4-6"
    assert vertex.claude_name("claude-3-5-haiku@20241022") == "claude-3-5-haiku-20241022"
    assert llm.model_for("extract", "us.anthropic.claude-3-5-haiku-20241022-v1:0").limits().max_output == 8_192


def test_no_region_or_no_extra_is_exit_3_naming_the_fix(run_mem, monkeypatch):
    r = run_mem("extract", "--transcript", os.devnull, env={"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert r.returncode == 3 and "AWS_REGION" in r.stderr
    with pytest.raises(ConfigError) as exc:
        llm.model_config("extract", env={"CLAUDE_CODE_USE_VERTEX": "1", "HOME": os.environ["HOME"]})
    assert "CLOUD_ML_REGION" in str(exc.value)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in ("boto3", "botocore", "google") else real(name, *a))
    for env, fix in (({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"}, "pip install 'mem[bedrock]'"),
                     ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5"}, "pip install 'mem[vertex]'")):
        with pytest.raises(ConfigError) as exc:
            llm.model_config("extract", env={**env, "HOME": os.environ["HOME"]})
        assert fix in str(exc.value)


# --- no credential anywhere mem writes -------------------------------------------------------------


def every_byte_under(*roots) -> bytes:
    out = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as fh:
                    out.append(fh.read())
    return b"\n".join(out)


GOOD = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"


@pytest.mark.parametrize("cloud", ["fake_bedrock", "fake_vertex"])
def test_no_credential_in_logs_events_history_or_errors(cloud, run_mem, memdir, request, tmp_path, isolated_env):
    fake = request.getfixturevalue(cloud)
    (memdir / "a.md").write_text(A)
    (memdir / "MEMORY.md").write_text("- [Deploy day](a.md) — fridays\n")
    session = tmp_path / "s.jsonl"
    session.write_text("".join(json.dumps({"type": r, "uuid": u, "sessionId": "s", "message": {"role": r, "content": c}})
                               + "\n" for u, r, c in (("u1", "user", "remember that I prefer tabs"),
                                                      ("a1", "assistant", "Noted."))))
    outputs = []
    fake.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake.reply_text("Saved.")
    r = run_mem("--debug", "extract", "--transcript", str(session), "--json")
    assert r.returncode == 0, r.stderr
    assert (memdir / "user-prefers-tabs.md").exists()  # history and events have something to say
    outputs += [r.stdout, r.stderr]
    fake.reply_status(403 if cloud == "fake_bedrock" else 401, "denied")  # a refused call, traceback and all
    r = run_mem("--debug", "remember", "--json", "the deploy target is staging-2")
    assert r.returncode != 0
    outputs += [r.stdout, r.stderr]
    fake.reply_text("Nothing to merge.")
    for args in (("dream", "--force", "--json"), ("model",), ("model", "--json"), ("model", "test"),
                 ("history", "--json"), ("log", "a note"), ("status",)):
        r = run_mem("--debug", *args)
        outputs += [r.stdout, r.stderr]
    if cloud == "fake_bedrock":
        secrets = list(fake.keys.values())
    else:
        with open(os.environ["GOOGLE_APPLICATION_CREDENTIALS"]) as fh:
            key = json.load(fh)["private_key"]
        secrets = sorted(fake.tokens) + key.splitlines()[1:-1]
        assert fake.tokens
    written = every_byte_under(memdir, os.environ["MEM_STATE_DIR"], isolated_env).decode("utf-8", "replace")
    assert len(fake.requests) >= 4
    assert [s for s in secrets if s in "\n".join(outputs) + written] == []


def test_the_projects_committed_settings_cannot_send_the_users_cloud_credentials_elsewhere(run_mem, isolated_env, tmp_path):
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    for block, variable in (({"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1",
                              "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"}, "ANTHROPIC_BEDROCK_BASE_URL"),
                            ({"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5",
                              "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:9"}, "ANTHROPIC_VERTEX_BASE_URL")):
        (project / ".claude" / "settings.json").write_text(json.dumps({"env": block}))
        r = run_mem("model", cwd=str(project), env={"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET})
        assert r.returncode == 3 and variable in r.stderr and SECRET not in r.stderr
        # nor settings.local.json (a repository can carry it too), nor unsigned: the memories would go there
        skip = "CLAUDE_CODE_SKIP_BEDROCK_AUTH" if "BEDROCK" in variable else "CLAUDE_CODE_SKIP_VERTEX_AUTH"
        assert run_mem("model", cwd=str(project), env={skip: "1"}).returncode == 3
        (project / ".claude" / "settings.json").write_text(json.dumps({"env": {k: v for k, v in block.items()
                                                                                if k != variable}}))
        (project / ".claude" / "settings.local.json").write_text(json.dumps({"env": {variable: "http://127.0.0.1:9"}}))
        assert run_mem("model", cwd=str(project)).returncode == 3
        (project / ".claude" / "settings.local.json").unlink()
        # the user's own environment may name one
        assert run_mem("model", cwd=str(project), env={variable: "http://127.0.0.1:9"}).returncode == 0


def test_no_credentials_anywhere_is_an_auth_error_naming_what_is_missing(run_mem):
    # the chains end at the clouds' metadata servers; the suite turns them off (conftest), and the error
    # says what is missing
    r = run_mem("model", "test", env={"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1",
                                      "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"})
    assert r.returncode == 1 and "Bedrock: cannot sign the request: " in r.stdout
    assert "could not resolve" in r.stdout.lower() and "credentials" in r.stdout
    r = run_mem("model", "test", env={"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5",
                                      "ANTHROPIC_VERTEX_PROJECT_ID": "p", "ANTHROPIC_VERTEX_BASE_URL": "http://127.0.0.1:9"})
    assert r.returncode == 1 and "Vertex: cannot get a Google access token: DefaultCredentialsError" in r.stdout


def test_aws_credential_export_signs_the_requests_and_runs_once_per_ttl(fake_bedrock, monkeypatch, isolated_env, tmp_path,
                                                                        run_mem):
    ((key, secret),) = fake_bedrock.keys.items()
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    counter = tmp_path / "runs"
    creds = tmp_path / "creds.json"  # the command prints it; the settings file does not hold the secret
    creds.write_text(json.dumps({"Credentials": {"AccessKeyId": key, "SecretAccessKey": secret, "SessionToken": None}}))
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"awsCredentialExport": f"echo run >> {counter}; cat {creds}"}))
    row = credentials(run_mem)
    assert row["credentials"].endswith("; awsCredentialExport (~/.claude/settings.json)") and not counter.exists()
    for _ in range(2):
        fake_bedrock.reply_text("OK")
        assert llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}]).content[0].text == "OK"
    assert fake_bedrock.rejected_auth == 0 and counter.read_text().count("run") == 1  # the second from the 0600 cache
    cache = os.path.join(os.environ["MEM_STATE_DIR"], "aws-credential-export.json")
    assert os.stat(cache).st_mode & 0o777 == 0o600
    assert fake_bedrock.requests[-1]["headers"]["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={key}/")
    settings.write_text(json.dumps({"awsCredentialExport": f"cat {creds}; echo oops; exit 2"}))
    with pytest.raises(ConfigError) as exc:
        llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert "awsCredentialExport failed (exit 2)" in str(exc.value) and secret not in str(exc.value)
    settings.write_text(json.dumps({"awsCredentialExport": "echo '{\"AccessKeyId\": \"x\"}'"}))
    with pytest.raises(ConfigError) as exc:
        llm.model_for("recall").create(messages=[{"role": "user", "content": "hi"}])
    assert "printed no" in str(exc.value)
