"""Claude on Amazon Bedrock, configured as Claude Code configures it, through the SDK's AnthropicBedrock.

Claude Code sends its requests to Bedrock when ``CLAUDE_CODE_USE_BEDROCK`` is truthy (1, true,
yes, on) in its environment: the process's, with its settings files' ``env`` blocks applied
over it (``claude_settings.merged_env``). This backend reads the same variables from the same
merged environment:

* the region: ``AWS_REGION``, else ``AWS_DEFAULT_REGION`` (required, as in Claude Code, which
  does not take it from ~/.aws/config);
* the credentials, the first present of: ``CLAUDE_CODE_SKIP_BEDROCK_AUTH`` (no signing: a
  gateway in front of Bedrock adds its own), ``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key,
  sent as a bearer token), ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
  ``AWS_SESSION_TOKEN``, Claude Code's ``awsCredentialExport`` setting (a command printing
  ``{"Credentials": {...}}``, run as apiKeyHelper is and cached the same way for 15 minutes),
  ``AWS_PROFILE``; else boto3's default chain (~/.aws/credentials, SSO,
  the instance's role). Requests are signed with SigV4 (service ``bedrock``) by the SDK;
* ``ANTHROPIC_BEDROCK_BASE_URL``: another endpoint (default
  ``https://bedrock-runtime.<region>.amazonaws.com``);
* the model: ``ANTHROPIC_MODEL``, the ``model`` setting or ``ANTHROPIC_DEFAULT_SONNET_MODEL``
  as for the Anthropic API (an inference profile id such as
  ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, or its ARN), else ``DEFAULT_MODEL``.

The SDK's Bedrock client needs boto3 and botocore: the ``mem[bedrock]`` extra. Without them
``require_extra`` is a ConfigError naming it. Nothing here imports them or the SDK until a
request is made; the recall hook only reads the variables.

uses: errors (ConfigError), backends.protocol (ModelError), backends.anthropic
(AnthropicBackend), backends.claude_settings (CLOUD_SWITCHES, merged_env, models, truthy, origin,
refuse_project_endpoint, label, helper_key); anthropic and boto3, only in ``make_client``
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mem.core.errors import ConfigError
from mem.core.jobs.backends.protocol import ModelError
from mem.core.jobs.backends.anthropic import AnthropicBackend
from mem.core.jobs.backends.claude_settings import CLOUD_SWITCHES

#: The model when the configuration names none: a cross-region inference profile every
#: commercial region offers.
DEFAULT_MODEL = "global.anthropic.claude-sonnet-5-5"
SWITCH = CLOUD_SWITCHES["bedrock"]
INSTALL = "pip install 'mem[bedrock]'"


def find(env: Mapping[str, str], cwd: str | None = None, merged: tuple | None = None):
    """Claude Code's Bedrock configuration (``claude_settings.Found`` with ``options``), or None
    when ``CLAUDE_CODE_USE_BEDROCK`` is not set. Never runs anything; the secrets are in
    ``api_key`` and ``options``, never in ``source``."""
    from mem.core.jobs.backends.claude_settings import (Found, command_setting, label, merged_env, models, origin,
                                                          refuse_project_endpoint, truthy)

    merged, where, settings = merged or merged_env(env, cwd)  # ``merged``: merged_env's answer, when known
    if not truthy(merged.get(SWITCH)):
        return None

    def get(key: str) -> str | None:
        return (merged.get(key) or "").strip() or None

    region_key = "AWS_REGION" if get("AWS_REGION") else "AWS_DEFAULT_REGION" if get("AWS_DEFAULT_REGION") else None
    options: dict[str, Any] = {"region": get(region_key) if region_key else None,
                               "skip_auth": truthy(merged.get("CLAUDE_CODE_SKIP_BEDROCK_AUTH"))}
    token = None
    export = command_setting(settings, "awsCredentialExport")
    if options["skip_auth"]:
        auth = f"no AWS auth ({origin(where, 'CLAUDE_CODE_SKIP_BEDROCK_AUTH')})"
    elif get("AWS_BEARER_TOKEN_BEDROCK"):
        token = get("AWS_BEARER_TOKEN_BEDROCK")
        auth = f"Bedrock API key from {origin(where, 'AWS_BEARER_TOKEN_BEDROCK')}"
    elif get("AWS_ACCESS_KEY_ID"):
        options.update(aws_access_key=get("AWS_ACCESS_KEY_ID"), aws_secret_key=get("AWS_SECRET_ACCESS_KEY"),
                       aws_session_token=get("AWS_SESSION_TOKEN"))
        auth = f"AWS credentials from {origin(where, 'AWS_ACCESS_KEY_ID')}"
    elif export is not None:
        options["credential_export"] = export[0]
        auth = f"awsCredentialExport ({label(export[1], env)})"
    elif get("AWS_PROFILE"):
        options["aws_profile"] = get("AWS_PROFILE")
        auth = f"AWS profile {options['aws_profile']} ({origin(where, 'AWS_PROFILE')})"
    else:
        auth = "AWS credentials from boto3's default chain (~/.aws, SSO, instance role)"
    region = (f"region {options['region']} ({origin(where, region_key)})" if region_key
              else "no region (set AWS_REGION)")
    source = f"{origin(where, SWITCH)}; {region}; {auth}"
    # even unsigned: the memories and transcripts a job sends would go to the repository's server
    refuse_project_endpoint(where, "ANTHROPIC_BEDROCK_BASE_URL", "your AWS-signed requests")
    model, recall_model = models(merged, settings)
    return Found(token, None, get("ANTHROPIC_BEDROCK_BASE_URL"), model or DEFAULT_MODEL,
                 recall_model or DEFAULT_MODEL, source, None, options)


def require_extra(options: Mapping[str, Any]) -> None:
    """ConfigError when this configuration cannot be used: no region, or no AWS SDK installed."""
    import importlib.util

    if not options.get("region"):
        raise ConfigError(f"{SWITCH} is set but no AWS region is: set AWS_REGION (as Claude Code needs)")
    if importlib.util.find_spec("boto3") is None or importlib.util.find_spec("botocore") is None:
        raise ConfigError(f"the Bedrock backend needs the AWS SDK: {INSTALL}")


#: How long awsCredentialExport's credentials are reused before it is run again (STS credentials
#: last an hour at least; the cache is the apiKeyHelper's kind: 0600, in the state directory).
EXPORT_TTL_MS = 15 * 60 * 1000


def exported_credentials(command: str) -> dict:
    """The AWS keys Claude Code's ``awsCredentialExport`` command prints, as
    ``{"Credentials": {"AccessKeyId", "SecretAccessKey", "SessionToken"}}`` (``aws sts assume-role``'s
    shape); ConfigError naming neither its output nor the keys when it fails or prints another shape."""
    import json
    import os

    from mem.core.jobs.backends.claude_settings import helper_key

    raw = helper_key(command, os.environ, what="awsCredentialExport", cache_name="aws-credential-export.json",
                     ttl_ms=EXPORT_TTL_MS)
    try:
        found = json.loads(raw)["Credentials"]
        keys = {"aws_access_key": found["AccessKeyId"], "aws_secret_key": found["SecretAccessKey"],
                "aws_session_token": found.get("SessionToken")}
    except (ValueError, KeyError, TypeError):
        raise ConfigError('awsCredentialExport printed no {"Credentials": {"AccessKeyId": ..., '
                          '"SecretAccessKey": ...}}') from None
    if not all(isinstance(v, str) for k, v in keys.items() if k != "aws_session_token"):
        raise ConfigError("awsCredentialExport printed credentials that are not strings")
    return keys


def claude_name(model: str) -> str:
    """``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` (or its ARN) -> ``claude-sonnet-4-5-20250929``."""
    name = model.rsplit("/", 1)[-1]
    name = re.sub(r"^(?:[a-z]{2,6}\.)?anthropic\.", "", name)
    return re.sub(r"-v\d+(?::\d+)?$", "", name)


class BedrockBackend(AnthropicBackend):
    """The Messages API at Bedrock's ``/model/{id}/invoke``, SigV4-signed (or with a Bedrock API key)."""

    name = "bedrock"

    def claude_name(self) -> str:
        return claude_name(self.config.model)

    def make_client(self, anthropic: Any):
        options = self.config.options or {}
        require_extra(options)
        cls = anthropic.AnthropicBedrock
        keys = {name: options.get(name) for name in ("aws_access_key", "aws_secret_key", "aws_session_token",
                                                     "aws_profile")}
        token = None if options.get("skip_auth") else self.config.api_key
        if options.get("skip_auth") or token:
            # A Bedrock API key is a bearer token (the SDK takes one only from 2.x, and then also from
            # the process environment); a gateway signs for us (or needs nothing). No SigV4 either way.
            class Unsigned(cls):
                def _prepare_request(self, request: Any) -> None:
                    request.headers.pop("Authorization", None)
                    if token:
                        request.headers["Authorization"] = f"Bearer {token}"

            cls, keys = Unsigned, {}
        if options.get("credential_export") and not (options.get("skip_auth") or token):
            keys = exported_credentials(options["credential_export"])
        base_url = self.config.base_url or f"https://bedrock-runtime.{options['region']}.amazonaws.com"
        try:
            return cls(aws_region=options["region"], base_url=base_url, timeout=self.config.timeout,
                       max_retries=self.config.max_retries, **keys)
        except ValueError as exc:
            raise ConfigError(f"Bedrock: {_first_line(exc)}") from None

    def create(self, **kwargs: Any):
        try:
            return super().create(**kwargs)
        except (ModelError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001 - botocore's credential errors, raised while signing
            # the SDK's own "could not resolve (AWS) credentials from session", worded per version
            if type(exc).__module__.startswith("botocore") or "credentials" in str(exc).lower():
                raise ModelError(f"Bedrock: cannot sign the request: {_first_line(exc)}", "auth") from None
            raise


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
