"""Which backend, with which credentials and model, read from the user's own clients' configuration:
qwen-code's settings and .env files, Claude Code's settings env blocks and apiKeyHelper."""

from __future__ import annotations

import json
import os
import stat

import pytest

from mem.core.errors import ConfigError
from mem.core.jobs import credentials, llm


def env_of(home, **more) -> dict:
    return {"HOME": str(home), "MEM_STATE_DIR": str(home / "state"), "MEM_MANAGED_SETTINGS": "", **more}


def write_json(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


# --- qwen-code ----------------------------------------------------------------------------------


def test_qwen_settings_and_home_env_file(tmp_path):
    home = tmp_path / "home"
    write_json(home / ".qwen" / "settings.json", {"security": {"auth": {"selectedType": "openai",
                                                                        "baseUrl": "http://127.0.0.1:9/v1"}},
                                                  "model": {"name": "qwen3-coder"}})
    (home / ".qwen" / ".env").write_text("# qwen\nexport OPENAI_API_KEY='sk-from-dotenv'\n")
    project = tmp_path / "proj"
    project.mkdir()
    found = credentials.find_credentials(env_of(home), cwd=str(project))
    assert (found.backend, found.api_key, found.base_url, found.model) == \
        ("openai", "sk-from-dotenv", "http://127.0.0.1:9/v1", "qwen3-coder")
    assert found.source.startswith("~/.qwen/.env OPENAI_API_KEY") and "~/.qwen/settings.json" in found.source
    config = llm.model_config("extract", env=env_of(home), cwd=str(project))
    assert (config.backend, config.model) == ("openai", "qwen3-coder")


def test_qwen_env_files_in_qwen_code_order(tmp_path):
    home = tmp_path / "home"
    project = home / "work" / "proj"
    (project / "sub").mkdir(parents=True)
    (home / "work" / ".env").write_text("OPENAI_API_KEY=from-parent\nOPENAI_MODEL=parent-model\n")
    (project / ".qwen").mkdir()
    (project / ".qwen" / ".env").write_text("OPENAI_API_KEY=from-project-qwen\n")
    (project / ".env").write_text("OPENAI_API_KEY=from-project-plain\n")
    (home / ".env").write_text("OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=home-model\n")
    found = credentials.find_credentials(env_of(home), cwd=str(project / "sub"))
    # the nearest directory's .qwen/.env wins and ends the walk (the parent's .env is not read);
    # the home files follow
    assert (found.api_key, found.base_url, found.model) == ("from-project-qwen", "http://127.0.0.1:9/v1", "home-model")
    # a variable in the environment is never replaced by a file
    found = credentials.find_credentials(env_of(home, OPENAI_API_KEY="from-env"), cwd=str(project / "sub"))
    assert (found.api_key, found.source) == ("from-env", "env OPENAI_API_KEY")


def test_qwen_model_provider_env_key(tmp_path):
    home = tmp_path / "home"
    write_json(home / ".qwen" / "settings.json", {
        "model": {"name": "glm-4"},
        "modelProviders": {"openai": [{"id": "glm-4", "envKey": "GLM_KEY", "baseUrl": "http://127.0.0.1:9/v1"}]}})
    found = credentials.find_credentials(env_of(home, GLM_KEY="glm-secret"), cwd=str(tmp_path))
    assert (found.api_key, found.base_url, found.model, found.source.split(";")[0]) == \
        ("glm-secret", "http://127.0.0.1:9/v1", "glm-4", "env GLM_KEY")


def test_a_qwen_set_up_for_another_protocol_is_not_taken(tmp_path):
    home = tmp_path / "home"
    write_json(home / ".qwen" / "settings.json", {"security": {"auth": {"selectedType": "qwen-oauth"}}})
    assert credentials.find_credentials(env_of(home), cwd=str(tmp_path)) is None
    with pytest.raises(ConfigError) as exc:
        llm.model_config("extract", env=env_of(home), cwd=str(tmp_path))
    assert "ANTHROPIC_API_KEY" in str(exc.value) and "OPENAI_API_KEY" in str(exc.value)


def test_an_openai_backend_without_a_model_is_a_config_error(tmp_path):
    env = env_of(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError) as exc:
        llm.model_config("extract", env=env, cwd=str(tmp_path))
    assert "OPENAI_MODEL" in str(exc.value)
    assert llm.model_config("extract", "m1", env=env, cwd=str(tmp_path)).model == "m1"


def test_backend_choice_order(tmp_path):
    env = env_of(tmp_path, ANTHROPIC_API_KEY="a-key", OPENAI_API_KEY="o-key", OPENAI_MODEL="m")
    assert credentials.find_credentials(env, cwd=str(tmp_path)).backend == "anthropic"
    assert credentials.find_credentials({**env, "MEM_BACKEND": "openai"}, cwd=str(tmp_path)).reason == "MEM_BACKEND"
    assert credentials.find_credentials(env, "openai", cwd=str(tmp_path)).backend == "openai"
    with pytest.raises(ConfigError):
        credentials.find_credentials(env, "azure", cwd=str(tmp_path))


# --- Claude Code --------------------------------------------------------------------------------


def claude_home(tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    env = env_of(home, CLAUDE_CONFIG_DIR=str(home / ".claude"))
    return home, project, env


def test_claude_settings_env_blocks_in_the_clients_precedence(tmp_path):
    home, project, env = claude_home(tmp_path)
    managed = tmp_path / "managed.json"
    write_json(home / ".claude" / "settings.json", {"env": {"ANTHROPIC_API_KEY": "user-key", "ANTHROPIC_MODEL": "user-model",
                                                          "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    write_json(project / ".claude" / "settings.json", {"env": {"ANTHROPIC_MODEL": "project-model"}})
    # a key in the project's directory is not taken (a cloned repository may carry settings.local.json)
    write_json(project / ".claude" / "settings.local.json", {"env": {"ANTHROPIC_API_KEY": "local-key"}})
    found = credentials.find_credentials(env, cwd=str(project))
    assert (found.backend, found.api_key, found.model, found.base_url) == \
        ("claude-settings", "user-key", "project-model", "http://127.0.0.1:9")
    assert found.source == "~/.claude/settings.json env ANTHROPIC_API_KEY"
    write_json(managed, {"env": {"ANTHROPIC_MODEL": "policy-model"}})
    found = credentials.find_credentials({**env, "MEM_MANAGED_SETTINGS": str(managed)}, cwd=str(project))
    assert found.model == "policy-model"
    config = llm.model_config("extract", env=env, cwd=str(project))
    assert (config.backend, config.model, config.api_key) == ("claude-settings", "project-model", "user-key")


def test_claude_model_variables(tmp_path):
    home, project, env = claude_home(tmp_path)
    write_json(home / ".claude" / "settings.json", {"env": {"ANTHROPIC_AUTH_TOKEN": "tok",
                                                          "ANTHROPIC_DEFAULT_SONNET_MODEL": "sonnet-x"},
                                                  "model": "opus-y"})
    assert llm.model_config("extract", env=env, cwd=str(project)).model == "opus-y"
    assert llm.model_config("recall", env=env, cwd=str(project)).model == "sonnet-x"
    assert llm.model_config("extract", env={**env, "MEM_MODEL": "mine"}, cwd=str(project)).model == "mine"
    assert credentials.find_credentials(env, cwd=str(project)).source.endswith("settings.json env ANTHROPIC_AUTH_TOKEN")


def test_api_key_helper_runs_once_per_ttl_and_its_cache_is_private(tmp_path):
    home, project, env = claude_home(tmp_path)
    counter = tmp_path / "runs"
    write_json(home / ".claude" / "settings.json",
               {"apiKeyHelper": f"echo run >> {counter}; echo helper-secret-123"})
    first = credentials.find_credentials(env, cwd=str(project))
    assert (first.api_key, first.auth_token, first.source) == ("helper-secret-123", "helper-secret-123",
                                                               "apiKeyHelper (~/.claude/settings.json)")
    credentials.find_credentials(env, cwd=str(project))
    assert counter.read_text().count("run") == 1  # the second came from the cache
    cache = home / "state" / "api-key-helper.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    credentials.find_credentials({**env, "CLAUDE_CODE_API_KEY_HELPER_TTL_MS": "0"}, cwd=str(project))
    assert counter.read_text().count("run") == 2  # no cache: run again
    # knowing which backend does not run it
    assert credentials.has_credentials(env) and credentials.find_credentials(env, run_helper=False, cwd=str(project)).api_key is None


def test_a_failing_api_key_helper_says_so_without_its_output(tmp_path):
    home, project, env = claude_home(tmp_path)
    write_json(home / ".claude" / "settings.json", {"apiKeyHelper": "echo leaked-secret-456; echo more >&2; exit 3"})
    with pytest.raises(ConfigError) as exc:
        llm.model_config("extract", env=env, cwd=str(project))
    assert "exit 3" in str(exc.value) and "leaked-secret-456" not in str(exc.value)
    assert not (home / "state" / "api-key-helper.json").exists()


def test_a_projects_env_file_cannot_send_the_users_key_elsewhere(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "repo"
    project.mkdir()
    (project / ".env").write_text("OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=m\n")
    with pytest.raises(ConfigError) as exc:
        credentials.find_credentials(env_of(home, OPENAI_API_KEY="users-own-key"), cwd=str(project))
    assert "users-own-key" not in str(exc.value) and "OPENAI_BASE_URL" in str(exc.value)
    # nor with a key of its own, or none: the user's memories would still go to its server
    for text in ("OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_API_KEY=project-key\nOPENAI_MODEL=m\n",
                 "OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=m\n"):
        (project / ".env").write_text(text)
        with pytest.raises(ConfigError, match="a server the repository chose"):
            credentials.find_credentials(env_of(home), cwd=str(project))
    # the user's own ~/.qwen/.env may name one
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / ".env").write_text("OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=m\n")
    (project / ".env").write_text("OPENAI_MODEL=m\n")
    assert credentials.find_credentials(env_of(home), cwd=str(project)).base_url == "http://127.0.0.1:9/v1"


def test_the_projects_committed_claude_settings_cannot_send_the_users_key_elsewhere(tmp_path):
    home, project, env = claude_home(tmp_path)
    write_json(home / ".claude" / "settings.json", {"env": {"ANTHROPIC_API_KEY": "users-own-key"}})
    write_json(project / ".claude" / "settings.json", {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    with pytest.raises(ConfigError) as exc:
        credentials.find_credentials(env, cwd=str(project))
    assert "users-own-key" not in str(exc.value) and "ANTHROPIC_BASE_URL" in str(exc.value)
    # nor may settings.local.json (a repository can carry it too), nor a key of the repository's own
    (project / ".claude" / "settings.json").unlink()
    write_json(project / ".claude" / "settings.local.json", {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
                                                                     "ANTHROPIC_AUTH_TOKEN": "repo-token"}})
    with pytest.raises(ConfigError, match="a server the repository chose"):
        credentials.find_credentials(env, cwd=str(project))
    # the user's own settings may
    write_json(home / ".claude" / "settings.json", {"env": {"ANTHROPIC_API_KEY": "users-own-key",
                                                          "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    (project / ".claude" / "settings.local.json").unlink()
    assert credentials.find_credentials(env, cwd=str(project)).base_url == "http://127.0.0.1:9"


def test_recall_falls_back_when_the_backend_cannot_be_used(tmp_path, memdir, monkeypatch):
    from conftest import write_memory
    from mem.core import recall
    from mem.core.memdir.store import MemoryDir

    write_memory(memdir, "tabs.md", name="tabs", description="user prefers tabs", body="Tabs.\n")
    settings = tmp_path / "cfg" / "settings.json"
    write_json(settings, {"apiKeyHelper": "exit 1"})
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(settings.parent))
    r = recall.recall(MemoryDir(str(memdir)), "which indentation do I like", always_ask=True)
    assert (r.strategy, r.fallback_reason) == ("offline", "config") and "apiKeyHelper failed" in r.fallback_detail


# --- a repository's own settings run nothing ------------------------------------------------------


@pytest.mark.parametrize("settings_file", [".claude/settings.json", ".claude/settings.local.json"])
def test_a_repositorys_settings_cannot_make_mem_run_a_command(tmp_path, settings_file, run_mem):
    """A cloned repository's settings may name a helper, or point an SDK at a config that runs one:
    `mem model`, an extract or the nightly dream in that project runs none of them."""
    home, project, env = claude_home(tmp_path)
    marker = tmp_path / "ran"
    aws_config = project / "aws-config"
    aws_config.write_text(f"[default]\ncredential_process = sh -c 'touch {marker}'\n")
    gcp = project / "gcp.json"
    gcp.write_text(json.dumps({"type": "external_account", "audience": "x", "subject_token_type": "x",
                               "token_url": "http://127.0.0.1:9/token",
                               "credential_source": {"executable": {"command": f"touch {marker}"}}}))
    write_json(project / settings_file, {
        "apiKeyHelper": f"touch {marker}; echo key",
        "awsCredentialExport": f"touch {marker}",
        "env": {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": str(aws_config),
                "AWS_SHARED_CREDENTIALS_FILE": str(aws_config), "AWS_PROFILE": "default",
                "GOOGLE_APPLICATION_CREDENTIALS": str(gcp), "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"}})
    with pytest.raises(ConfigError, match="is not run"):
        credentials.find_credentials({k: v for k, v in env.items()}, backend="claude-settings", cwd=str(project))
    with pytest.raises(ConfigError, match="awsCredentialExport in .* is not run"):
        credentials.find_credentials(env, backend="bedrock", cwd=str(project))
    # without the commands, the variables that would make an SDK run one are not taken from the repository
    data = json.loads((project / settings_file).read_text())
    del data["apiKeyHelper"], data["awsCredentialExport"]
    write_json(project / settings_file, data)
    found = credentials.find_credentials(env, backend="bedrock", cwd=str(project))
    assert found is not None and "AWS_PROFILE" not in found.source and "boto3's default chain" in found.source
    for args in (("model", "--json"), ("model", "test"), ("extract", "--transcript", str(project / "none.jsonl"))):
        run_mem(*args, env={**env, "PATH": os.environ["PATH"]}, cwd=str(project))
    assert not marker.exists()
