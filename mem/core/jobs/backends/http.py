"""One HTTP exchange over the standard library, bounded by a deadline, through the proxy the
environment names: what the stdlib clients (messages_lite, the OpenAI-compatible backend) share.

``import anthropic`` alone costs 1.3-2.8 s here, so the recall hook's requests and every
OpenAI-compatible request go this way; and not through http.client either, whose import (the email
package, ssl) is ~10 ms of a ~40 ms hook: a request goes over a socket of its own, wrapped with
ssl's default context for https, and only a proxy's CONNECT tunnel is left to http.client.

uses: socket, json, backends (ModelError); http.client only through a proxy
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
    from urllib.parse import urlsplit

    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ModelError(f"the base URL of {what} is not an http(s) URL: {base_url}", "connection")
    full = url.path.rstrip("/") + path
    payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    try:
        if _proxy(url.scheme, url.hostname) is None:
            status, answer_headers, raw = _direct(method, url, full, headers, payload, deadline, budget)
        else:
            status, answer_headers, raw = _through_proxy(method, url, full, headers, payload, deadline, budget)
    except (TimeoutError, socket.timeout):
        raise ModelError(f"model call timed out after {budget:.3g}s", "timeout") from None
    except (OSError, ValueError) as exc:  # ValueError: an answer that is not HTTP (http.client's HTTPException too)
        raise ModelError(f"cannot reach {what}: {exc}", "connection") from None
    try:
        data = json.loads(raw)
    except ValueError:
        data = raw.decode("utf-8", "replace")
    return Answer(status, answer_headers, data)


def _direct(method: str, url, full: str, headers: dict, payload: bytes | None, deadline: float,
            budget: float) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 exchange on a socket of its own (``Connection: close``).

    Not http.client: it imports the email package and ssl (~10 ms of the recall hook's ~40), where
    a local server's answer takes 2 ms. https wraps the socket as http.client would (the default
    context: system CAs, the host name checked).
    """
    https = url.scheme == "https"
    port = url.port or (443 if https else 80)
    # the host as bytes: a str is encoded with the idna codec, an import (~0.7 ms) an ASCII name does not need
    host = url.hostname.encode("ascii") if url.hostname.isascii() else url.hostname.encode("idna")
    sock = socket.create_connection((host, port), timeout=left(deadline, budget))
    try:
        if https:
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=url.hostname)
        host = url.hostname if ":" not in url.hostname else f"[{url.hostname}]"
        lines = [f"{method} {full or '/'} HTTP/1.1",
                 f"Host: {host}" + ("" if url.port is None else f":{port}"),
                 "Connection: close", "Accept-Encoding: identity"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if payload is not None:
            lines.append(f"Content-Length: {len(payload)}")
        sock.settimeout(left(deadline, budget))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (payload or b""))
        raw = bytearray()
        while True:
            sock.settimeout(left(deadline, budget))
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
            if _complete(raw):
                break
    finally:
        sock.close()
    return _parse(bytes(raw))


def _complete(raw: bytearray) -> bool:
    """Whether ``raw`` holds a whole answer already (a server may keep the connection open)."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = raw[:end].decode("latin-1").lower()
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip() == "content-length" and value.strip().isdigit():
            return len(raw) - end - 4 >= int(value)
    if "transfer-encoding: chunked" in head:
        try:
            _unchunk(bytes(raw[end + 4:]))  # whole when its last chunk and the blank line after it are here
        except ValueError:
            return False
        return True
    return False  # no length: the server closes the connection when it is done


def _parse(raw: bytes) -> tuple[int, dict, bytes]:
    """(status, headers with lower-case names, body) of an HTTP/1.x answer; ValueError when it is not one."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(None, 2)
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer: {lines[0][:80]!r}")
    found: dict = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    length = found.get("content-length", "")
    if "chunked" in found.get("transfer-encoding", "").lower():
        body = _unchunk(body)
    elif length.isdigit():
        body = body[:int(length)]
    return int(parts[1]), found, body


def _unchunk(body: bytes) -> bytes:
    """The body of a chunked answer; ValueError when it is cut short or is not chunks."""
    out, at = bytearray(), 0
    while True:
        end = body.index(b"\r\n", at)
        size = int(body[at:end].split(b";")[0], 16)
        if size == 0:
            if not body.endswith(b"\r\n\r\n", end):
                raise ValueError("a chunked answer without its end")
            return bytes(out)
        if len(body) < end + 2 + size + 2:
            raise ValueError("a chunked answer cut short")
        out += body[end + 2:end + 2 + size]
        at = end + 2 + size + 2


def _through_proxy(method: str, url, full: str, headers: dict, payload: bytes | None, deadline: float,
                   budget: float) -> tuple[int, dict, bytes]:
    """The exchange through the proxy the environment names (http.client's CONNECT tunnel), as the SDKs do."""
    import http.client

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
        return response.status, {k.lower(): v for k, v in response.getheaders()}, raw
    except http.client.HTTPException as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    finally:
        conn.close()


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
    """An HTTP(S) connection to the server through the proxy the environment names."""
    import http.client

    https = url.scheme == "https"
    port = url.port or (443 if https else 80)
    cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
    from urllib.parse import urlsplit

    proxy = _proxy(url.scheme, url.hostname) or ""
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
