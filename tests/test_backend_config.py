"""Which backend, with which credentials and model, read from the user's own clients' configuration:
qwen-code's settings and .env files, Claude Code's settings env blocks and apiKeyHelper."""

from __future__ import annotations

import json
import os
import stat

import pytest

from mem.core.errors import ConfigError
from mem.core.jobs import llm


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
    found = llm.find_credentials(env_of(home), cwd=str(project))
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
    found = llm.find_credentials(env_of(home), cwd=str(project / "sub"))
    # the nearest directory's .qwen/.env wins and ends the walk (the parent's .env is not read);
    # the home files follow
    assert (found.api_key, found.base_url, found.model) == ("from-project-qwen", "http://127.0.0.1:9/v1", "home-model")
    # a variable in the environment is never replaced by a file
    found = llm.find_credentials(env_of(home, OPENAI_API_KEY="from-env"), cwd=str(project / "sub"))
    assert (found.api_key, found.source) == ("from-env", "env OPENAI_API_KEY")


def test_qwen_model_provider_env_key(tmp_path):
    home = tmp_path / "home"
    write_json(home / ".qwen" / "settings.json", {
        "model": {"name": "glm-4"},
        "modelProviders": {"openai": [{"id": "glm-4", "envKey": "GLM_KEY", "baseUrl": "http://127.0.0.1:9/v1"}]}})
    found = llm.find_credentials(env_of(home, GLM_KEY="glm-secret"), cwd=str(tmp_path))
    assert (found.api_key, found.base_url, found.model, found.source.split(";")[0]) == \
        ("glm-secret", "http://127.0.0.1:9/v1", "glm-4", "env GLM_KEY")


def test_a_qwen_set_up_for_another_protocol_is_not_taken(tmp_path):
    home = tmp_path / "home"
    write_json(home / ".qwen" / "settings.json", {"security": {"auth": {"selectedType": "qwen-oauth"}}})
    assert llm.find_credentials(env_of(home), cwd=str(tmp_path)) is None
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
    assert llm.find_credentials(env, cwd=str(tmp_path)).backend == "anthropic"
    assert llm.find_credentials({**env, "MEM_BACKEND": "openai"}, cwd=str(tmp_path)).reason == "MEM_BACKEND"
    assert llm.find_credentials(env, "openai", cwd=str(tmp_path)).backend == "openai"
    with pytest.raises(ConfigError):
        llm.find_credentials(env, "bedrock", cwd=str(tmp_path))
