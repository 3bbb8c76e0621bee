"""Which model backend is configured, and with what: ``find_credentials`` (for ``mem model`` and
the factory, mem/core/jobs/llm.py), ``configured_backends`` (every one present, for ``mem model``)
and ``has_credentials`` (does any job have a model?).

The backend is ``--backend`` / ``MEM_BACKEND``, else the first configured of ``DETECTION``
(llm.py's docstring says why in that order). The recall hook asks ``has_credentials`` on every
prompt, so this module is apart from the factory: a keyless prompt loads no protocol module.

uses: errors (ConfigError), record; backends.bedrock, backends.vertex, backends.claude_settings,
backends.qwen and backends (find_claude) lazily, each when its turn in DETECTION comes
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mem.core.errors import ConfigError
from mem.core.record import Record


class Credentials(Record):
    """Which backend, with what, and why: the answer ``mem model`` prints (never the secret)."""

    backend: str  # a name of backends.NAMES
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    model: str | None  # the model this configuration names, if it names one
    source: str  # where the credentials came from: "env ANTHROPIC_API_KEY", "~/.qwen/settings.json ..."
    reason: str  # why this backend: "--backend", "MEM_BACKEND", "detected"
    recall_model: str | None = None  # the recall selector's model, when the configuration names one
    options: dict | None = None  # a cloud backend's settings (ModelConfig.options); may hold secrets


#: How backends are detected when neither --backend nor MEM_BACKEND names one, in this order:
#: a cloud switched on first (Claude Code then sends nothing to the Anthropic API), a key or a
#: server configured for mem's own loop next; Claude Code's CLI (one process per job, seconds of
#: start-up) only when nothing else is.
DETECTION = ("bedrock", "vertex", "anthropic", "claude-settings", "openai", "claude-code")


def find_credentials(env: Mapping[str, str] | None = None, backend: str | None = None,
                     cwd: str | None = None, *, run_helper: bool = True) -> Credentials | None:
    """The backend ``backend`` (else MEM_BACKEND, else the first of DETECTION configured) with its
    credentials, or None when it has none. ConfigError for a backend name that does not exist.

    ``run_helper=False`` does not run Claude Code's apiKeyHelper (its key is then None): enough
    to say which backend and why."""
    env = os.environ if env is None else env
    reason = "--backend" if backend else "MEM_BACKEND" if env.get("MEM_BACKEND") else "detected"
    backend = backend or env.get("MEM_BACKEND") or None
    if backend is not None and backend not in DETECTION:
        raise ConfigError(f"no backend named {backend!r} ({reason}); backends: {', '.join(DETECTION)}")
    seen: dict = {}  # Claude Code's merged environment, read once for bedrock and vertex
    for name in (backend,) if backend else DETECTION:
        found = _credentials(name, env, cwd, run_helper, seen)
        if found is not None:
            return found._replace(reason=reason)
    return None


def _credentials(name: str, env: Mapping[str, str], cwd: str | None, run_helper: bool,
                 seen: dict | None = None) -> Credentials | None:
    if name in ("bedrock", "vertex"):
        from mem.core.jobs.backends.claude_settings import CLOUD_SWITCHES, merged_env, truthy

        seen = {} if seen is None else seen
        if "merged" not in seen:
            seen["merged"] = merged_env(env, cwd)
        if not truthy(seen["merged"][0].get(CLOUD_SWITCHES[name])):
            return None  # as the backend's ``find`` would say, without loading it and the Anthropic backend under it
        from mem.core.jobs.backends import bedrock, vertex

        cloud = (bedrock if name == "bedrock" else vertex).find(env, cwd, seen["merged"])
        if cloud is None:
            return None
        return Credentials(name, cloud.api_key, None, cloud.base_url, cloud.model, cloud.source, "",
                           cloud.recall_model, cloud.options)
    if name == "anthropic":
        key, token = env.get("ANTHROPIC_API_KEY") or None, env.get("ANTHROPIC_AUTH_TOKEN") or None
        if not (key or token):
            return None
        return Credentials("anthropic", key, token, env.get("ANTHROPIC_BASE_URL") or None, None,
                           "env ANTHROPIC_API_KEY" if key else "env ANTHROPIC_AUTH_TOKEN", "")
    if name == "claude-settings":
        from mem.core.jobs.backends import claude_settings

        found = claude_settings.find(env, cwd, run_helper=run_helper)
        if found is None:
            return None
        return Credentials("claude-settings", found.api_key, found.auth_token, found.base_url, found.model,
                           found.source, "", found.recall_model)
    if name == "claude-code":
        from mem.core.jobs.backends import find_claude

        exe = find_claude(env)
        if exe is None:
            return None
        return Credentials("claude-code", None, None, None, None, f"Claude Code's own login ({exe})", "")
    from mem.core.jobs.backends import qwen

    found = qwen.find(env, cwd)
    if found is None:
        return None
    return Credentials("openai", found.api_key, None, found.base_url, found.model, found.source, "")


def has_credentials(env: Mapping[str, str] | None = None) -> bool:
    """Whether any backend is configured (``find_credentials`` finds one)."""
    try:
        return find_credentials(env, run_helper=False) is not None
    except ConfigError:
        return True  # a misspelt MEM_BACKEND: the job's own model_config says so (exit 3)


def configured_backends(env: Mapping[str, str] | None = None, cwd: str | None = None) -> list[str]:
    """Every backend whose configuration is present here, in detection order."""
    env = os.environ if env is None else env
    seen: dict = {}
    return [name for name in DETECTION if _credentials(name, env, cwd, False, seen) is not None]
