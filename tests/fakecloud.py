"""Local servers that speak Claude on Amazon Bedrock and on Google Vertex AI, URLs and auth included.

Both are ``FakeAnthropic`` (tests/fakeapi.py: the script, the token counter, the window, the
413, ``latency``, ``overload_next``, ``reply_status``...) behind each cloud's own front door:

FakeBedrock (``ANTHROPIC_BEDROCK_BASE_URL=bedrock.url``)
    POST /model/{modelId}/invoke. The request must carry a SigV4 signature made with one of
    ``keys`` (access key id -> secret) for this ``region`` and service ``bedrock``:
    ``Authorization: AWS4-HMAC-SHA256 Credential=<key>/<yyyymmdd>/<region>/bedrock/aws4_request,
    SignedHeaders=...;host;...;x-amz-date..., Signature=<64 hex>`` and ``X-Amz-Date``; the
    signature is recomputed with botocore over the signed headers and the body and must match
    (else 403 ``InvalidSignatureException``; no or another scheme: 403
    ``MissingAuthenticationTokenException``/``UnrecognizedClientException``). Or
    ``Authorization: Bearer <one of bearer_tokens>`` (a Bedrock API key), or anything at all when
    ``open`` (a gateway that signs itself). The body must hold ``anthropic_version`` (one of
    ``ANTHROPIC_VERSIONS``) and no ``model`` (400 ``ValidationException``). Bedrock's error
    bodies are ``{"message": ...}`` with ``x-amzn-ErrorType``; over the window: 400
    "Input is too long for requested model." (the real wording), 429 ``ThrottlingException``.

FakeVertex (``ANTHROPIC_VERTEX_BASE_URL=vertex.url``)
    POST /projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict
    (the SDK's base URL ends in /v1; this server takes the path with or without it). The
    project and region must be this server's (404 otherwise); ``Authorization: Bearer <token>``
    with a token this server minted (401 ``UNAUTHENTICATED`` otherwise) unless ``open``. It
    mints them at POST /token, Google's OAuth 2.0 JWT-bearer grant: a service account's RS256
    assertion (verified against ``service_account``'s public key, its ``aud`` Google's token
    endpoint, which google-auth always names) ->
    ``{"access_token", "expires_in", "token_type"}``. ``service_account_file(dir)`` writes the
    matching credentials file for ``GOOGLE_APPLICATION_CREDENTIALS``. The body must hold
    ``anthropic_version`` and no ``model``; errors are the Anthropic API's bodies.

``requests`` entries gain ``cloud_model`` (the model of the URL); their ``body`` is what was
sent (no ``model``); ``path`` is the real path.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any
from urllib.parse import parse_qs, unquote

from fakeapi import FakeAnthropic

#: What the SDKs send as the body's anthropic_version: bedrock-2023-05-31 / vertex-2023-10-16
#: before anthropic 2.x, the API's dated version since.
ANTHROPIC_VERSIONS = {"bedrock": ("bedrock-2023-05-31", "2026-10-21"), "vertex": ("vertex-2023-10-16", "2026-10-21")}

GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
                   r"(?P<service>[a-z0-9-]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?"
                   r"Signature=(?P<sig>[0-9a-f]{64})$")


class _Cloud(FakeAnthropic):
    kind = ""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        #: accept any request, authenticated or not (a gateway in front of the cloud)
        self.open = False
        self.rejected_auth = 0

    def _refuse(self, path: str, headers: dict, body: Any, status: int, payload: Any) -> tuple[int, Any, float]:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body, "input_tokens": None,
                                  "status": status, "cloud_model": None})
            if status in (401, 403):
                self.rejected_auth += 1
        return status, payload, 0.0

    def _route(self, path: str) -> str | None:
        raise NotImplementedError

    def _auth_error(self, path: str, headers: dict, raw: bytes) -> tuple[int, Any] | None:
        raise NotImplementedError

    def _error(self, status: int, etype: str, text: str) -> Any:
        raise NotImplementedError

    def _answer(self, path: str, headers: dict, raw: bytes | None) -> tuple[int, Any, float]:
        model = self._route(path)
        if model is None:
            return self._refuse(path, headers, None, 404, self._error(404, "NotFound", f"no route {path}"))
        if raw is not None and not self.open:
            denied = self._auth_error(path, headers, raw)
            if denied is not None:
                return self._refuse(path, headers, None, *denied)
        body: Any = None
        if raw is not None:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if isinstance(body, dict):
                if "model" in body:
                    return self._refuse(path, headers, body, 400, self._error(
                        400, "ValidationException", "extraneous key [model] is not permitted"))
                if body.get("anthropic_version") not in ANTHROPIC_VERSIONS[self.kind]:
                    return self._refuse(path, headers, body, 400, self._error(
                        400, "ValidationException", f"invalid anthropic_version {body.get('anthropic_version')!r}"))
                raw = json.dumps({**body, "model": model}).encode()
        status, payload, delay = super()._answer("/v1/messages", headers, raw)
        with self._lock:
            entry = self.requests[-1]
            entry.update(path=path, cloud_model=model)
            if isinstance(entry["body"], dict):
                entry["body"].pop("model", None)
        if status >= 400 and isinstance(payload, dict) and payload.get("type") == "error":
            err = payload["error"]
            payload = self._error(status, err.get("type", ""), err.get("message", ""))
        return status, payload, delay


class FakeBedrock(_Cloud):
    kind = "bedrock"

    def __init__(self, *, region: str = "us-east-1", keys: dict[str, str] | None = None,
                 bearer_tokens: tuple[str, ...] = (), **kw: Any) -> None:
        super().__init__(**kw)
        self.region = region
        self.keys = dict(keys or {"AKIAFAKECLOUDTEST001": "fake/Secret+AccessKey0123456789abcdefghij"})
        self.bearer_tokens = bearer_tokens

    def _route(self, path: str) -> str | None:
        m = re.fullmatch(r"/model/([^/?]+)/invoke", path.split("?")[0])
        return unquote(m[1]) if m else None

    def _error(self, status: int, etype: str, text: str) -> Any:
        if status == 400 and text.startswith(("prompt is too long", "input length and `max_tokens`")):
            text = f"Input is too long for requested model. ({text})"
        name = {400: "ValidationException", 403: etype or "AccessDeniedException", 404: "ResourceNotFoundException",
                413: "ValidationException", 429: "ThrottlingException", 529: "ServiceUnavailableException",
                500: "InternalServerException", 503: "ServiceUnavailableException"}.get(status, etype)
        return {"message": text, "__type": name}

    def _auth_error(self, path: str, headers: dict, raw: bytes) -> tuple[int, Any] | None:
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer "):
            if auth[7:] in self.bearer_tokens:
                return None
            return 403, self._error(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        m = _AUTH.match(auth)
        if m is None:
            return 403, self._error(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        if m["service"] != "bedrock" or m["region"] != self.region or m["key"] not in self.keys:
            return 403, self._error(403, "UnrecognizedClientException",
                                    f"credential scope {m['region']}/{m['service']} or key not recognised")
        signed = m["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed or not headers.get("x-amz-date", "").startswith(m["date"]):
            return 403, self._error(403, "InvalidSignatureException", "host and x-amz-date must be signed")
        if self._signature(path, headers, raw, m["key"], signed) != m["sig"]:
            return 403, self._error(403, "InvalidSignatureException",
                                    "The request signature we calculated does not match the signature you provided.")
        return None

    def _signature(self, path: str, headers: dict, raw: bytes, key: str, signed: list[str]) -> str:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        request = AWSRequest(method="POST", url=f"http://{headers.get('host', '')}{path}",
                             headers={name: headers.get(name, "") for name in signed}, data=raw)
        request.context["timestamp"] = headers["x-amz-date"]
        signer = SigV4Auth(Credentials(key, self.keys[key], headers.get("x-amz-security-token")), "bedrock", self.region)
        return signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)


class FakeVertex(_Cloud):
    kind = "vertex"

    def __init__(self, *, project: str = "mem-test-project", region: str = "us-east5", **kw: Any) -> None:
        super().__init__(**kw)
        self.project = project
        self.region = region
        self.tokens: set[str] = set()
        self.token_requests = 0
        from cryptography.hazmat.primitives.asymmetric import rsa

        self._private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def _route(self, path: str) -> str | None:
        m = re.fullmatch(r"(?:/v1)?/projects/([^/]+)/locations/([^/]+)/publishers/anthropic/models/([^/:]+):rawPredict",
                         path.split("?")[0])
        if m is None or m[1] != self.project or m[2] != self.region:
            return None
        return unquote(m[3])

    def _error(self, status: int, etype: str, text: str) -> Any:
        etype = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
                 529: "overloaded_error"}.get(status, etype if etype.endswith("_error") else "invalid_request_error"
                                              if status < 500 else "api_error")
        return {"type": "error", "error": {"type": etype, "message": text}}

    def _auth_error(self, path: str, headers: dict, raw: bytes) -> tuple[int, Any] | None:
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer ") and auth[7:] in self.tokens:
            return None
        return 401, {"error": {"code": 401, "status": "UNAUTHENTICATED", "message":
                               "Request had invalid authentication credentials. Expected OAuth 2 access token."}}

    # -- the OAuth token endpoint --

    def service_account_file(self, directory) -> str:
        """A service-account credentials file whose token_uri is this server's /token."""
        from cryptography.hazmat.primitives import serialization

        pem = self._private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()).decode()
        path = f"{directory}/service-account.json"
        with open(path, "w") as fh:
            json.dump({"type": "service_account", "project_id": self.project, "private_key_id": "fake-key-1",
                       "private_key": pem, "client_email": "mem-test@mem-test-project.iam.gserviceaccount.com",
                       "client_id": "1234567890", "token_uri": f"{self.url}/token"}, fh)
        return path

    def _mint(self, raw: bytes) -> tuple[int, Any]:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or "assertion" not in form:
            return 400, {"error": "unsupported_grant_type"}
        head, claims, sig = form["assertion"].split(".")
        unb64 = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))  # noqa: E731
        try:
            self._private_key.public_key().verify(unb64(sig), f"{head}.{claims}".encode(), padding.PKCS1v15(),
                                                  hashes.SHA256())
        except InvalidSignature:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        if json.loads(unb64(claims)).get("aud") != GOOGLE_TOKEN_AUDIENCE:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT audience."}
        token = "ya29.fake-" + os.urandom(16).hex()
        with self._lock:
            self.tokens.add(token)
            self.token_requests += 1
        return 200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}

    def start(self) -> FakeVertex:
        super().start()
        fake, answer = self, self._answer

        def route(path: str, headers: dict, raw: bytes | None):
            if path.split("?")[0] == "/token":
                return (*fake._mint(raw or b""), 0.0)
            return answer(path, headers, raw)

        self._answer = route  # type: ignore[method-assign]
        return self
