"""The key and the apiKeyHelper's output reach the model server and nowhere else: not stdout or
stderr (with --debug, on success and on failure), not the memory directory, its history or events,
not the state directory (but the helper's own 0600 cache)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import write_memory

GOOD = "---\nname: user-prefers-tabs\ndescription: the user wants tabs, not spaces\ntype: user\n---\n\nTabs.\n"
#: what the helper prints; its command builds it, so the settings file does not hold it
HELPER_OUTPUT = "hk-4f1c-secretpart-9e2d"
HELPER = "printf 'hk-%s-%s-%s' 4f1c secretpart 9e2d"
OPENAI_KEY = "sk-openai-Zq81-leakcheck"


def transcript(tmp_path: Path) -> Path:
    p = tmp_path / "sess-1.jsonl"
    rows = [("u1", "user", "remember that I prefer tabs"), ("a1", "assistant", "Noted.")]
    p.write_text("".join(json.dumps({"type": r, "uuid": u, "sessionId": "sess-1",
                                     "message": {"role": r, "content": c}}) + "\n" for u, r, c in rows))
    return p


def leaks(secret: str, outputs: list, *roots: Path) -> list[str]:
    found = [f"output {i}" for i, text in enumerate(outputs) if secret in text]
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = Path(dirpath) / name
                if name == "api-key-helper.json":
                    continue  # the one place it is kept, 0600 (tests/test_backend_config.py)
                if secret.encode() in path.read_bytes():
                    found.append(str(path))
    return found


def test_the_helper_output_is_sent_and_kept_nowhere_else(fake_api, monkeypatch, memdir, tmp_path, run_mem):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"apiKeyHelper": HELPER, "env": {"ANTHROPIC_BASE_URL": fake_api.url}}))
    write_memory(memdir, "old.md", name="old", description="an old memory", body="Old.\n")
    fake_api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_api.reply_text("Saved.")
    outputs = []
    r = run_mem("--debug", "extract", "--transcript", str(transcript(tmp_path)), "--json")
    assert r.returncode == 0, r.stderr
    outputs += [r.stdout, r.stderr]
    assert (Path(memdir) / "user-prefers-tabs.md").exists()
    fake_api.reply_status(401, "invalid x-api-key")
    r = run_mem("--debug", "remember", "--json", "the deploy target is staging-2")
    assert r.returncode != 0
    outputs += [r.stdout, r.stderr]
    for args in (("model", "--json"), ("model", "test"), ("history", "--json"), ("log", "a note")):
        r = run_mem("--debug", *args)
        outputs += [r.stdout, r.stderr]
    # it was used: as the client sends it, key and bearer token
    headers = fake_api.requests[0]["headers"]
    assert headers.get("x-api-key") == HELPER_OUTPUT or headers.get("authorization") == f"Bearer {HELPER_OUTPUT}"
    assert leaks(HELPER_OUTPUT, outputs, Path(memdir), Path(os.environ["MEM_STATE_DIR"]), Path(os.environ["HOME"])) == []


def test_the_openai_key_is_sent_and_kept_nowhere_else(fake_openai, monkeypatch, memdir, tmp_path, run_mem):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    fake_openai.reply_tool_call("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    fake_openai.reply_text("Saved.")
    outputs = []
    r = run_mem("--debug", "extract", "--transcript", str(transcript(tmp_path)), "--json")
    assert r.returncode == 0, r.stderr
    outputs += [r.stdout, r.stderr]
    fake_openai.reply_status(401, "Incorrect API key provided")
    r = run_mem("--debug", "remember", "--json", "the deploy target is staging-2")
    assert r.returncode != 0 and "401" in r.stderr
    outputs += [r.stdout, r.stderr]
    for args in (("model", "--json"), ("model", "test"), ("history", "--json")):
        r = run_mem("--debug", *args)
        outputs += [r.stdout, r.stderr]
    assert fake_openai.requests[-1]["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert leaks(OPENAI_KEY, outputs, Path(memdir), Path(os.environ["MEM_STATE_DIR"]), Path(os.environ["HOME"])) == []


#: every other configuration's secret, planted where that configuration keeps it
PLANTED = "sk-planted-Wm3-leakcheck-77"


def _anthropic_env(request, monkeypatch, home):
    api = request.getfixturevalue("fake_api")
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    return api, None


def _settings_token(request, monkeypatch, home):
    api = request.getfixturevalue("fake_api")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": PLANTED, "ANTHROPIC_BASE_URL": api.url}}))
    return api, settings


def _bedrock_env(request, monkeypatch, home):
    api = request.getfixturevalue("fake_bedrock")
    ((key, _),) = api.keys.items()
    api.keys[key] = PLANTED  # the server signs with what mem is given
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PLANTED)
    return api, None


def _qwen_settings(request, monkeypatch, home):
    api = request.getfixturevalue("fake_openai")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name)
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "openai", "apiKey": PLANTED,
                                                          "baseUrl": api.url + "/v1"}},
                                    "model": {"name": api.model}}))
    return api, settings


@pytest.mark.parametrize("configure", [_anthropic_env, _settings_token, _bedrock_env, _qwen_settings],
                         ids=lambda f: f.__name__.strip("_"))
def test_no_configurations_secret_reaches_an_output_log_event_or_history(request, monkeypatch, memdir, tmp_path,
                                                                          run_mem, isolated_env, configure):
    api, kept_in = configure(request, monkeypatch, isolated_env)
    openai = configure is _qwen_settings
    if openai:
        api.reply_tool_call("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    else:
        api.reply_tool_use("write", {"file_path": "user-prefers-tabs.md", "content": GOOD})
    api.reply_text("Saved.")
    outputs = []
    r = run_mem("--debug", "extract", "--transcript", str(transcript(tmp_path)), "--json")
    assert r.returncode == 0, r.stderr
    assert (Path(memdir) / "user-prefers-tabs.md").exists()
    outputs += [r.stdout, r.stderr]
    for status in (401, 403, 500):  # refusals: their error messages
        api.reply_status(status, "refused under test")
        r = run_mem("--debug", "remember", "--json", "the deploy target is staging-2")
        assert r.returncode != 0 and str(status) in r.stderr
        outputs += [r.stdout, r.stderr]
    for args in (("model", "--json"), ("model", "test"), ("history", "--json"), ("log", "a note"),
                 ("status", "--json"), ("dream", "--dry-run")):
        r = run_mem("--debug", *args)
        outputs += [r.stdout, r.stderr]
    roots = [Path(memdir), Path(os.environ["MEM_STATE_DIR"]), isolated_env]
    # the grep sees the one file the user keeps the secret in, and nothing mem wrote
    assert leaks(PLANTED, outputs, *roots) == ([] if kept_in is None else [str(kept_in)])
