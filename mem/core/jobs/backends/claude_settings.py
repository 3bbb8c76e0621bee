"""Claude Code's own model configuration, read the way the client reads it, for the Anthropic backend.

Claude Code applies the ``env`` blocks of its settings files over the process environment,
the higher source winning key by key: managed (policy) settings, then the project's
``.claude/settings.local.json``, then its ``.claude/settings.json``, then the user's
``settings.json`` under ``CLAUDE_CONFIG_DIR`` (default ``~/.claude``) — the files and order
``mem.clients.claude.load_settings`` already knows. From the result this module takes
``ANTHROPIC_AUTH_TOKEN``, else ``ANTHROPIC_API_KEY``, else the ``apiKeyHelper`` setting (first
source holding it): a shell command run with ``/bin/sh -c`` whose standard output is the key,
sent, as the client sends it, both as ``x-api-key`` and as a bearer token. Its output is a
secret: it is cached for ``CLAUDE_CODE_API_KEY_HELPER_TTL_MS`` (default five minutes) in
``<state root>/api-key-helper.json`` (mode 0600, keyed by the command's digest), never logged
and never put in an error message. ``ANTHROPIC_BASE_URL`` and the model variables
(``ANTHROPIC_MODEL``, else the ``model`` setting, else ``ANTHROPIC_DEFAULT_SONNET_MODEL``; the
recall selector takes ``ANTHROPIC_DEFAULT_SONNET_MODEL`` first, as Claude Code's does) come from
the same merged environment.

uses: errors (ConfigError), clients.claude (load_settings), paths (project_root), memdir.state (state_root), memdir.files, record
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from mem.core.errors import ConfigError
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

#: The switches that send Claude Code's requests to a cloud instead of the Anthropic API, by the
#: backend that follows them (``truthy`` in the merged environment); backends.bedrock and
#: backends.vertex read the rest of each cloud's configuration.
CLOUD_SWITCHES = {"bedrock": "CLAUDE_CODE_USE_BEDROCK", "vertex": "CLAUDE_CODE_USE_VERTEX"}

#: Claude Code's default cache time for the helper's output.
DEFAULT_TTL_MS = 5 * 60 * 1000
#: How long the helper may run.
HELPER_TIMEOUT = 30.0
CACHE_NAME = "api-key-helper.json"


class Found(Record):
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    model: str | None
    recall_model: str | None  # the recall selector's: ANTHROPIC_DEFAULT_SONNET_MODEL first
    source: str  # where the credentials came from, for people
    helper: str | None  # the apiKeyHelper command, when that is where the key comes from
    #: a cloud backend's settings (bedrock: region, AWS keys...; vertex: region, project...)
    options: dict | None = None


def label(src, env: Mapping[str, str]) -> str:
    home = (env.get("HOME") or os.path.expanduser("~")).rstrip("/")
    path = src.path or "inline settings"
    return "~" + path[len(home):] if home and path.startswith(home + "/") else path


#: Settings files that live in the project's directory, so a cloned repository may have written them.
#: Claude Code applies them once the user has said the folder is trusted; mem cannot ask, so from
#: them it takes only variables that choose a model, a region or a switch (``PROJECT_ENV``), and the
#: endpoints, which ``find`` refuses to pair with the user's own key. Never a command to run
#: (apiKeyHelper, awsCredentialExport) nor a variable that makes an SDK run one or read a file of
#: the repository's choosing (AWS_CONFIG_FILE with credential_process, GOOGLE_APPLICATION_CREDENTIALS
#: with an executable source, AWS_PROFILE...).
PROJECT_SOURCES = ("local", "project")
#: Where a command may come from: the managed policy, the user's own settings, a file given with --settings.
COMMAND_SOURCES = ("policy", "flag", "user")
PROJECT_ENV = frozenset({
    "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
    "AWS_REGION", "AWS_DEFAULT_REGION", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    # read only to be refused (``refuse_project_endpoint``): a repository's server would get the
    # user's key and every memory and transcript a job sends; never a key of the repository's own,
    # which would put the user's memories on the repository owner's account
    "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL",
})


def merged_env(env: Mapping[str, str], cwd: str | None) -> tuple[dict[str, str], dict[str, str], Any]:
    """(the environment as Claude Code sees it, key -> the settings file that set it, the Settings)."""
    from mem.clients.claude import load_settings
    from mem.core.paths import project_root

    settings = load_settings(project_root(cwd or os.getcwd()), env=env)
    merged = dict(env)
    where: dict[str, str] = {}
    for src in reversed(settings.sources):  # lowest first, so the highest source wins
        block = src.data.get("env") if src.data else None
        if isinstance(block, dict):
            for key, value in block.items():
                if src.name in PROJECT_SOURCES and key not in PROJECT_ENV:
                    continue
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    merged[key] = str(value)
                    where[key] = f"{label(src, env)} env"
                    where["scope:" + key] = src.name
    return merged, where, settings


def find(env: Mapping[str, str], cwd: str | None = None, *, run_helper: bool = True) -> Found | None:
    """Claude Code's credentials from its settings, or None when its settings name none.

    ``run_helper=False`` only says whether a helper is configured (its key is then None).
    """
    merged, where, settings = merged_env(env, cwd)
    helper_found = command_setting(settings, "apiKeyHelper")
    token = merged.get("ANTHROPIC_AUTH_TOKEN") if "ANTHROPIC_AUTH_TOKEN" in where else None
    key = merged.get("ANTHROPIC_API_KEY") if "ANTHROPIC_API_KEY" in where else None
    helper = None
    if token:
        source = f"{where['ANTHROPIC_AUTH_TOKEN']} ANTHROPIC_AUTH_TOKEN"
    elif key:
        source = f"{where['ANTHROPIC_API_KEY']} ANTHROPIC_API_KEY"
    elif helper_found is not None:
        helper = helper_found[0]
        source = f"apiKeyHelper ({label(helper_found[1], env)})"
        if run_helper:
            key = token = helper_key(helper, merged, cwd)
    else:
        return None
    refuse_project_endpoint(where, "ANTHROPIC_BASE_URL", f"the key from {source}")
    model, recall_model = models(merged, settings)
    return Found(key, token if not helper else key, merged.get("ANTHROPIC_BASE_URL") or None, model,
                 recall_model, source, helper)


def command_setting(settings: Any, key: str):
    """(command, source) of a setting that names a command to run, from the sources a user owns only;
    ConfigError when only the project's own settings name one (it is never run)."""
    def named(v: object) -> bool:
        return isinstance(v, str) and v.strip() != ""

    found = settings.first(key, names=COMMAND_SOURCES, accept=named)
    if found is None:
        planted = settings.first(key, names=PROJECT_SOURCES, accept=named)
        if planted is not None:
            raise ConfigError(f"{key} in {planted[1].path} (the project's settings) is not run: mem runs no command "
                              f"a repository names; set it in ~/.claude/settings.json")
    return found


def models(merged: Mapping[str, str], settings: Any) -> tuple[str | None, str | None]:
    """(the model, the recall selector's model) Claude Code's configuration names, or None."""
    model_setting = settings.first("model", accept=lambda v: isinstance(v, str) and v != "")
    model = merged.get("ANTHROPIC_MODEL") or (model_setting[0] if model_setting else None) \
        or merged.get("ANTHROPIC_DEFAULT_SONNET_MODEL")
    return model or None, merged.get("ANTHROPIC_DEFAULT_SONNET_MODEL") or model or None


def refuse_project_endpoint(where: Mapping[str, str], variable: str, what: str) -> None:
    """ConfigError when ``variable`` (an endpoint) comes from a settings file in the project's directory
    (settings.json or settings.local.json: a cloned repository may carry both): the user's ``what``,
    and every memory and transcript a job sends, would go to a server the repository chose. Claude
    Code asks whether the folder is trusted first; mem cannot ask, so it refuses."""
    if where.get("scope:" + variable) in PROJECT_SOURCES:
        raise ConfigError(f"{variable} in {where[variable]} (the project's own settings) would send {what} "
                          "and your memories to a server the repository chose; set it in ~/.claude/settings.json "
                          "or the environment")


def truthy(value: str | None) -> bool:
    """A switch such as CLAUDE_CODE_USE_BEDROCK, read as Claude Code reads it: 1, true, yes, on."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def origin(where: Mapping[str, str], key: str) -> str:
    """Where ``key`` of the merged environment came from: "env KEY" or "<settings file> env KEY"."""
    return f"{where[key]} {key}" if key in where else f"env {key}"


def helper_key(command: str, env: Mapping[str, str], cwd: str | None = None, *, what: str = "apiKeyHelper",
               cache_name: str = CACHE_NAME, ttl_ms: int | None = None) -> str:
    """The helper's key (``what``: the setting, for messages; awsCredentialExport's JSON uses it too), from
    its cache while it is fresh, else by running it (ConfigError when it fails: the message never holds
    its output)."""
    import hashlib

    digest = hashlib.sha256(command.encode("utf-8")).hexdigest()
    ttl = _ttl_ms(env) if ttl_ms is None else ttl_ms
    cache = os.path.join(os.path.dirname(_cache_path(env)), cache_name)
    cached = _read_cache(cache)
    now_ms = int(time.time() * 1000)
    written = cached.get("written_ms", 0)
    if cached.get("command") == digest and isinstance(cached.get("key"), str) and isinstance(written, int) \
            and written <= now_ms < written + ttl:  # the TTL in force now decides, not the one it was written under
        return cached["key"]
    import subprocess

    try:
        done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, timeout=HELPER_TIMEOUT,
                              env=dict(env), cwd=cwd or None, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what} did not answer within {HELPER_TIMEOUT:g}s") from None
    except OSError as exc:
        raise ConfigError(f"{what} could not be run: {exc.strerror or type(exc).__name__}") from None
    key = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        raise ConfigError(f"{what} failed (exit {done.returncode})")
    if not key:
        raise ConfigError(f"{what} printed nothing")
    if ttl > 0:
        _write_cache(cache, {"command": digest, "written_ms": now_ms, "key": key})
    return key


def _ttl_ms(env: Mapping[str, str]) -> int:
    raw = (env.get("CLAUDE_CODE_API_KEY_HELPER_TTL_MS") or "").strip()
    return int(raw) if raw.isdigit() else DEFAULT_TTL_MS


def _cache_path(env: Mapping[str, str]) -> str:
    from mem.core.memdir.state import state_root

    return os.path.join(state_root(env), CACHE_NAME)


def _read_cache(path: str) -> dict:
    from mem.core.memdir.files import read_bytes

    try:
        if os.stat(path).st_mode & 0o077:
            return {}  # someone widened it: not trusted, rewritten 0600 on the next run
        data = json.loads(read_bytes(path, 65_536))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: str, data: dict) -> None:
    """Written 0600 from its first byte, then renamed over the old one: a cache, so failures pass."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
