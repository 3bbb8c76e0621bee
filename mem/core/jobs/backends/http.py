"""One HTTP exchange over the standard library, bounded by a deadline, through the proxy the
environment names: what the stdlib clients (messages_lite, the OpenAI-compatible backend) share.

``import anthropic`` alone costs 1.3-2.8 s here, http.client about 20 ms, so the recall hook's
requests and every OpenAI-compatible request go this way.

uses: http.client, json, backends (ModelError)
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from mem.core.jobs.backends import ModelError

#: Longest error text kept from a server's answer.
ERROR_CHARS = 200


class Answer:
    """A server's answer: status, headers (lower-cased names), and its body as JSON (or text)."""

    __slots__ = ("status", "headers", "data")

    def __init__(self, status: int, headers: dict, data: Any):
        self.status = status
        self.headers = headers
        self.data = data

    @property
    def retry_after(self) -> float | None:
        """Retry-After in seconds, when the server gave it as a number."""
        raw = (self.headers.get("retry-after") or "").strip()
        try:
            value = float(raw)
        except ValueError:
            return None
        return value if value >= 0 else None


def exchange(method: str, base_url: str, path: str, headers: dict, body: Any = None, *,
             deadline: float, budget: float, what: str = "the model server") -> Answer:
    """``method`` ``base_url`` + ``path`` with ``body`` as JSON; ModelError on timeout or no connection.

    Connecting, sending, waiting and reading each get only the time left until ``deadline``.
    """
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ModelError(f"the base URL of {what} is not an http(s) URL: {base_url}", "connection")
    full = url.path.rstrip("/") + path
    payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    conn = _connection(url, left(deadline, budget))
    try:
        conn.connect()
        sock = conn.sock  # kept: the connection lets go of it once the answer says it will close
        sock.settimeout(left(deadline, budget))
        conn.request(method, full, body=payload, headers=headers)
        sock.settimeout(left(deadline, budget))
        response = conn.getresponse()
        sock.settimeout(left(deadline, budget))
        raw = response.read()
        status = response.status
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
    except (TimeoutError, socket.timeout):
        raise ModelError(f"model call timed out after {budget:.3g}s", "timeout") from None
    except (OSError, http.client.HTTPException) as exc:
        raise ModelError(f"cannot reach {what}: {exc}", "connection") from None
    finally:
        conn.close()
    try:
        data = json.loads(raw)
    except ValueError:
        data = raw.decode("utf-8", "replace")
    return Answer(status, answer_headers, data)


def left(deadline: float, budget: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ModelError(f"model call timed out after {budget:.3g}s", "timeout")
    return remaining


def error_text(data: Any) -> str:
    """The message of an error answer, short (both APIs put it at error.message)."""
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:ERROR_CHARS]
        if isinstance(err, str) and err:
            return err[:ERROR_CHARS]
        return json.dumps(data)[:ERROR_CHARS]
    return " ".join(str(data).split())[:ERROR_CHARS]


def _connection(url, timeout: float):
    """An HTTP(S) connection to the server, through the proxy the environment names, as the SDKs do."""
    import http.client

    https = url.scheme == "https"
    port = url.port or (443 if https else 80)
    cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
    proxy = _proxy(url.scheme, url.hostname)
    if proxy is None:
        return cls(url.hostname, port, timeout=timeout)
    from urllib.parse import urlsplit

    p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    conn = cls(p.hostname, p.port or 80, timeout=timeout)
    conn.set_tunnel(url.hostname, port)
    return conn


def _proxy(scheme: str, host: str) -> str | None:
    if not any(k.lower().endswith("_proxy") for k in os.environ):
        return None  # the usual case: no urllib.request to import
    from urllib.request import getproxies_environment, proxy_bypass_environment

    proxy = getproxies_environment().get(scheme)
    if proxy and not proxy_bypass_environment(host):
        return proxy
    return None
