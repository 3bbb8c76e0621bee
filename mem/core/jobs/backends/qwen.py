"""qwen-code's model provider, read the way qwen-code reads it, for the OpenAI-compatible backend.

qwen-code loads ``.env`` files before its settings: walking up from the working directory,
the first directory holding ``.qwen/.env`` (preferred) or ``.env`` gives that one file, and the
home files follow (``$QWEN_HOME/.env`` or ``~/.qwen/.env``, then ``~/.env``); a variable already
in the environment is never replaced, and of two files the first to set a variable wins. Its
settings (``$QWEN_HOME/settings.json``, default ``~/.qwen/settings.json``) name the provider:
``security.auth.selectedType`` ("openai"), ``security.auth.apiKey`` / ``security.auth.baseUrl``,
``model.name``, and ``modelProviders.openai`` entries (``id``, ``baseUrl``, ``envKey``: the
variable holding that model's key). Then, as in qwen-code: the key is ``OPENAI_API_KEY``
(environment or .env) or the matching provider's ``envKey``, else ``security.auth.apiKey``;
the base URL ``OPENAI_BASE_URL``, else the provider's ``baseUrl``, else ``security.auth.baseUrl``;
the model ``OPENAI_MODEL``, else ``model.name``. One refusal qwen-code makes through its folder
trust, which mem cannot ask about: a base URL from a project's .env is not used at all (ConfigError),
so a repository cannot have the user's key, or the memories a job sends, go to its own server.

uses: memdir.files (read_text: capped, regular files only), record
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

#: A settings or .env file larger than this is not a configuration file.
MAX_BYTES = 1 << 20


class Found(Record):
    api_key: str | None
    base_url: str | None
    model: str | None
    source: str  # where the key (or, without one, the base URL) came from, for people


def qwen_dir(env: Mapping[str, str]) -> str:
    home = env.get("QWEN_HOME")
    return os.path.expanduser(home) if home else os.path.join(_home(env), ".qwen")


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def env_files(env: Mapping[str, str], cwd: str) -> list[str]:
    """The .env files qwen-code loads from ``cwd``, in its order."""
    home = os.path.realpath(_home(env))
    homes = [os.path.join(qwen_dir(env), ".env")]
    if env.get("QWEN_HOME"):
        homes.append(os.path.join(home, ".qwen", ".env"))
    homes.append(os.path.join(home, ".env"))
    found: list[str] = []
    here = os.path.realpath(cwd)
    while here != home:
        for candidate in (os.path.join(here, ".qwen", ".env"), os.path.join(here, ".env")):
            if os.path.isfile(candidate):
                found.append(candidate)
                break
        if found:
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for candidate in homes:
        if os.path.isfile(candidate) and candidate not in found:
            found.append(candidate)
    return found


def _home_env_files(env: Mapping[str, str]) -> set[str]:
    home = os.path.realpath(_home(env))
    return {os.path.join(qwen_dir(env), ".env"), os.path.join(home, ".qwen", ".env"), os.path.join(home, ".env")}


def parse_dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines as dotenv reads them: comments, ``export``, quotes; the first KEY wins."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key.replace("_", "").isalnum():
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
            value = value[1:-1]
            if line.partition("=")[2].strip()[0] == '"':
                value = value.replace("\\n", "\n")
        else:
            value = value.split(" #", 1)[0].strip()
        out.setdefault(key, value)
    return out


def _read(path: str) -> str | None:
    from mem.core.memdir.files import read_text

    try:
        return read_text(path, MAX_BYTES, errors="replace")
    except (OSError, ValueError):
        return None


def settings(env: Mapping[str, str]) -> dict:
    text = _read(os.path.join(qwen_dir(env), "settings.json"))
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def find(env: Mapping[str, str], cwd: str | None = None) -> Found | None:
    """qwen-code's OpenAI-compatible provider as it would use it from ``cwd``, or None when it has none."""
    merged: dict[str, str] = {}
    where: dict[str, str] = {}
    home_files = _home_env_files(env)
    project_files: set[str] = set()
    for path in env_files(env, cwd or os.getcwd()):
        text = _read(path)
        for key, value in parse_dotenv(text or "").items():
            if key not in merged:
                merged[key], where[key] = value, _tilde(path, env)
                if path not in home_files:
                    project_files.add(where[key])
    data = settings(env)
    settings_path = _tilde(os.path.join(qwen_dir(env), "settings.json"), env)
    auth_type = _get(data, "security", "auth", "selectedType")
    model = env.get("OPENAI_MODEL") or merged.get("OPENAI_MODEL") or _str(_get(data, "model", "name"))
    providers = [p for p in _get(data, "modelProviders", "openai") or [] if isinstance(p, dict)]
    provider = next((p for p in providers if p.get("id") == model), None)
    if auth_type not in (None, "openai") and provider is None:
        data = {}  # qwen-code is set up for another protocol: its settings name no OpenAI provider
    key_name = _str(provider.get("envKey")) if provider else None
    key, source = None, ""
    for name in ("OPENAI_API_KEY", *([key_name] if key_name else [])):
        if env.get(name):
            key, source = env[name], f"env {name}"
            break
        if merged.get(name):
            key, source = merged[name], f"{where[name]} {name}"
            break
    if key is None and _str(_get(data, "security", "auth", "apiKey")):
        key, source = _get(data, "security", "auth", "apiKey"), f"{settings_path} security.auth.apiKey"
    base = (env.get("OPENAI_BASE_URL") or merged.get("OPENAI_BASE_URL")
            or (_str(provider.get("baseUrl")) if provider else None) or _str(_get(data, "security", "auth", "baseUrl")))
    if key is None and base is None:
        return None
    base_from = "env" if env.get("OPENAI_BASE_URL") else where.get("OPENAI_BASE_URL") if "OPENAI_BASE_URL" in merged \
        else "settings"
    if base_from in project_files:
        # A repository's .env must not choose the server: the user's key (or the repository's own)
        # and every memory and transcript a job sends would go there (qwen-code asks whether the
        # folder is trusted first; mem cannot ask, so it refuses).
        from mem.core.errors import ConfigError

        sent = f"the key from {source}" if key is not None else "your requests"
        raise ConfigError(f"OPENAI_BASE_URL in {base_from} (a project's file) would send {sent} and your memories "
                          "to a server the repository chose; set OPENAI_BASE_URL in the environment or ~/.qwen/.env")
    if not source:
        source = ("env OPENAI_BASE_URL" if env.get("OPENAI_BASE_URL") else
                  f"{where['OPENAI_BASE_URL']} OPENAI_BASE_URL" if "OPENAI_BASE_URL" in merged else settings_path) \
            + " (no key)"
    if auth_type == "openai" or provider is not None:
        source += f"; provider from {settings_path}"
    return Found(key, base, model, source)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _tilde(path: str, env: Mapping[str, str]) -> str:
    home = _home(env).rstrip("/")
    return "~" + path[len(home):] if home and path.startswith(home + "/") else path
