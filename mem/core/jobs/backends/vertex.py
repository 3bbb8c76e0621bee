"""Claude on Google Vertex AI, configured as Claude Code configures it, through the SDK's AnthropicVertex.

Claude Code sends its requests to Vertex AI when ``CLAUDE_CODE_USE_VERTEX`` is truthy (1, true,
yes, on) in its environment: the process's, with its settings files' ``env`` blocks applied
over it (``claude_settings.merged_env``). This backend reads the same variables from the same
merged environment:

* the region: ``CLOUD_ML_REGION`` (required; ``global`` for the global endpoint);
* the project: ``ANTHROPIC_VERTEX_PROJECT_ID`` (else the one Google's application-default
  credentials name);
* the credentials: Google's application-default credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
  ``gcloud auth application-default login``, the machine's service account), a bearer token
  each request; ``CLAUDE_CODE_SKIP_VERTEX_AUTH``: none (a gateway in front of Vertex adds its own);
* ``ANTHROPIC_VERTEX_BASE_URL``: another endpoint (default ``https://<region>-aiplatform.googleapis.com/v1``);
* the model: ``ANTHROPIC_MODEL``, the ``model`` setting or ``ANTHROPIC_DEFAULT_SONNET_MODEL``
  as for the Anthropic API (a Vertex version name such as ``claude-sonnet-4-5@20250929``), else
  ``DEFAULT_MODEL``.

Requests go to ``/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``.
The SDK's Vertex client needs google-auth: the ``mem[vertex]`` extra; without it
``require_extra`` is a ConfigError naming it. Nothing here imports it or the SDK until a request
is made; the recall hook only reads the variables.

uses: errors (ConfigError), backends.protocol (ModelError), backends.anthropic (AnthropicBackend),
backends.claude_settings (CLOUD_SWITCHES, merged_env, models, truthy, origin,
refuse_project_endpoint); anthropic and google-auth, only in
``make_client``
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mem.core.errors import ConfigError
from mem.core.jobs.backends.protocol import ModelError
from mem.core.jobs.backends.anthropic import AnthropicBackend
from mem.core.jobs.backends.claude_settings import CLOUD_SWITCHES

#: The model when the configuration names none.
DEFAULT_MODEL = "claude-sonnet-5-5"
SWITCH = CLOUD_SWITCHES["vertex"]
INSTALL = "pip install 'mem[vertex]'"


def find(env: Mapping[str, str], cwd: str | None = None, merged: tuple | None = None):
    """Claude Code's Vertex configuration (``claude_settings.Found`` with ``options``), or None when
    ``CLAUDE_CODE_USE_VERTEX`` is not set. Never runs anything and never asks Google for a token."""
    from mem.core.jobs.backends.claude_settings import (Found, merged_env, models, origin,
                                                          refuse_project_endpoint, truthy)

    merged, where, settings = merged or merged_env(env, cwd)  # ``merged``: merged_env's answer, when known
    if not truthy(merged.get(SWITCH)):
        return None

    def get(key: str) -> str | None:
        return (merged.get(key) or "").strip() or None

    options: dict[str, Any] = {"region": get("CLOUD_ML_REGION"), "project_id": get("ANTHROPIC_VERTEX_PROJECT_ID"),
                               "skip_auth": truthy(merged.get("CLAUDE_CODE_SKIP_VERTEX_AUTH"))}
    if options["skip_auth"]:
        auth = f"no Google auth ({origin(where, 'CLAUDE_CODE_SKIP_VERTEX_AUTH')})"
    elif get("GOOGLE_APPLICATION_CREDENTIALS"):
        auth = f"Google credentials file {get('GOOGLE_APPLICATION_CREDENTIALS')} " \
               f"({origin(where, 'GOOGLE_APPLICATION_CREDENTIALS')})"
        options["credentials_file"] = get("GOOGLE_APPLICATION_CREDENTIALS")
    else:
        auth = "Google application-default credentials"
    region = (f"region {options['region']} ({origin(where, 'CLOUD_ML_REGION')})" if options["region"]
              else "no region (set CLOUD_ML_REGION)")
    project = (f"project {options['project_id']} ({origin(where, 'ANTHROPIC_VERTEX_PROJECT_ID')})"
               if options["project_id"] else "project from the Google credentials")
    source = f"{origin(where, SWITCH)}; {region}; {project}; {auth}"
    # even unsigned: the memories and transcripts a job sends would go to the repository's server
    refuse_project_endpoint(where, "ANTHROPIC_VERTEX_BASE_URL", "your Google access token")
    model, recall_model = models(merged, settings)
    return Found(None, None, get("ANTHROPIC_VERTEX_BASE_URL"), model or DEFAULT_MODEL,
                 recall_model or DEFAULT_MODEL, source, None, options)


def require_extra(options: Mapping[str, Any]) -> None:
    """ConfigError when this configuration cannot be used: no region, no project to name without
    credentials, or no google-auth installed."""
    import importlib.util

    if not options.get("region"):
        raise ConfigError(f"{SWITCH} is set but no region is: set CLOUD_ML_REGION (as Claude Code needs)")
    if options.get("skip_auth"):
        if not options.get("project_id"):
            raise ConfigError("CLAUDE_CODE_SKIP_VERTEX_AUTH needs ANTHROPIC_VERTEX_PROJECT_ID (no credentials to name it)")
        return
    if importlib.util.find_spec("google") is None or importlib.util.find_spec("google.auth") is None:
        raise ConfigError(f"the Vertex backend needs Google's auth library: {INSTALL}")


def claude_name(model: str) -> str:
    """``claude-sonnet-4-5@20250929`` -> ``claude-sonnet-4-5-20250929``."""
    return re.sub(r"@(\d+)$", r"-\1", model.rsplit("/", 1)[-1])


class VertexBackend(AnthropicBackend):
    """The Messages API at Vertex AI's ``...:rawPredict``, with a Google access token."""

    name = "vertex"

    def claude_name(self) -> str:
        return claude_name(self.config.model)

    def make_client(self, anthropic: Any):
        options = self.config.options or {}
        require_extra(options)
        cls = anthropic.AnthropicVertex
        if options.get("skip_auth"):
            class Unsigned(cls):  # a gateway authenticates (or needs nothing): no token
                def _prepare_request(self, request: Any) -> None:
                    pass

            cls = Unsigned
        region = options["region"]
        base_url = self.config.base_url or {
            "global": "https://aiplatform.googleapis.com/v1", "us": "https://aiplatform.us.rep.googleapis.com/v1",
            "eu": "https://aiplatform.eu.rep.googleapis.com/v1"}.get(region, f"https://{region}-aiplatform.googleapis.com/v1")
        more: dict[str, Any] = {"project_id": options["project_id"]} if options.get("project_id") else {}
        if options.get("credentials_file") and not options.get("skip_auth"):
            # named in a settings file's env block, which google-auth's default() does not see
            more["credentials"] = _credentials_from(options["credentials_file"])
        try:
            return cls(region=region, base_url=base_url, timeout=self.config.timeout,
                       max_retries=self.config.max_retries, **more)
        except ValueError as exc:
            raise ConfigError(f"Vertex: {_first_line(exc)}") from None

    def create(self, **kwargs: Any):
        try:
            return super().create(**kwargs)
        except (ModelError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001 - google-auth's errors, raised while getting a token
            module = type(exc).__module__
            if module.startswith("google") or "project_id" in str(exc) or "API token" in str(exc):
                raise ModelError(f"Vertex: cannot get a Google access token: {type(exc).__name__}", "auth") from None
            raise


def _credentials_from(path: str):
    import warnings

    import google.auth
    import google.auth.exceptions

    try:
        with warnings.catch_warnings():  # "validate configurations from external sources": the user's own
            warnings.simplefilter("ignore", DeprecationWarning)
            credentials, _ = google.auth.load_credentials_from_file(
                path, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ConfigError(f"GOOGLE_APPLICATION_CREDENTIALS {path}: not a credentials file "
                          f"({type(exc).__name__})") from None
    return credentials


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
