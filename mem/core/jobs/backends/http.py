"""One HTTP exchange over the standard library, bounded by a deadline, through the proxy the
environment names: what the stdlib clients (messages_lite, the OpenAI-compatible backend) share.

``import anthropic`` alone costs 1.3-2.8 s here, so the recall hook's requests and every
OpenAI-compatible request go this way; and not through http.client either, whose import (the email
package, ssl) is ~10 ms of a ~40 ms hook: a request goes over a socket of its own, wrapped with
ssl's default context for https, and only a proxy's CONNECT tunnel is left to http.client.

uses: socket, json, backends.protocol (ModelError); http.client only through a proxy
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from mem.core.jobs.backends.protocol import ModelError

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


#: The most an answer's head (status line and headers) may take, and its body: a model's answer and a
#: server's model list are far smaller; more is a server gone wrong, not something to keep reading.
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024


def _direct(method: str, url, full: str, headers: dict, payload: bytes | None, deadline: float,
            budget: float) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 exchange on a socket of its own (``Connection: close``).

    Not http.client: it imports the email package and ssl (~10 ms of the recall hook's ~40), where
    a local server's answer takes 2 ms. https wraps the socket as http.client would (the default
    context: system CAs, the host name checked). The answer is read as http.client reads one:
    1xx heads skipped, the body framed by Transfer-Encoding: chunked, else Content-Length (a body
    cut short is an error), else the connection's close; head and body capped.
    """
    https = url.scheme == "https"
    port = url.port or (443 if https else 80)
    host_header = url.hostname if ":" not in url.hostname else f"[{url.hostname}]"
    lines = [f"{method} {full or '/'} HTTP/1.1",
             f"Host: {host_header}" + ("" if url.port is None else f":{port}"),
             "Connection: close", "Accept-Encoding: identity"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if payload is not None:
        lines.append(f"Content-Length: {len(payload)}")
    for line in lines:  # a name or value from a settings file must not start a header (or a request) of its own
        if any(c in line for c in "\r\n\0"):
            raise ValueError(f"a request header holds a line break or NUL: {line.split(':')[0][:40]}")
    # the host as bytes: a str is encoded with the idna codec, an import (~0.7 ms) an ASCII name does not need
    host = url.hostname.encode("ascii") if url.hostname.isascii() else url.hostname.encode("idna")
    sock = socket.create_connection((host, port), timeout=left(deadline, budget))
    try:
        if https:
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=url.hostname)
        sock.settimeout(left(deadline, budget))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (payload or b""))
        reader = _Reader()
        while not reader.done:
            sock.settimeout(left(deadline, budget))
            chunk = sock.recv(65536)
            if not chunk:
                reader.closed()
                break
            reader.feed(chunk)
    finally:
        sock.close()
    return reader.status, reader.headers, bytes(reader.body)


class _Reader:
    """An HTTP/1.x answer read as its bytes arrive, each byte looked at a bounded number of times.

    ``feed`` the bytes, ``closed`` at the connection's end; ``done`` once the answer is whole.
    ValueError for what is not HTTP, a head or body over its cap, a chunk size that is not hex,
    or a body the close cut short.
    """

    def __init__(self):
        self.buf = bytearray()
        self.status = 0
        self.headers: dict = {}
        self.body = bytearray()
        self.done = False
        self._framing: str | None = None  # None: reading the head; "length", "chunked", "close"
        self._length = 0
        self._chunk_left = -1  # -1: a chunk-size line is next; 0: the CRLF after a chunk's data
        self._trailers = False

    def feed(self, data: bytes) -> None:
        self.buf += data
        while not self.done and self._step():
            pass

    def closed(self) -> None:
        if self._framing == "close":
            self.done = True
            return
        if self._framing is None:
            raise ValueError("not an HTTP answer" if not self.buf else "an answer cut short in its head")
        if self._framing == "length":
            raise ValueError(f"an answer cut short: {len(self.body)} of {self._length} bytes")
        raise ValueError("a chunked answer cut short")

    def _step(self) -> bool:
        """Parse what the buffer holds; False when more bytes are needed."""
        if self._framing is None:
            return self._head()
        if self._framing == "length":
            take = min(len(self.buf), self._length - len(self.body))
            self.body += self.buf[:take]
            del self.buf[:take]
            self.done = len(self.body) >= self._length
            return False
        if self._framing == "close":
            self.body += self.buf
            self.buf.clear()
            self._cap()
            return False
        return self._chunk()

    def _head(self) -> bool:
        end = self.buf.find(b"\n\n")
        crlf = self.buf.find(b"\r\n\r\n")
        if crlf >= 0 and (end < 0 or crlf < end):
            end, sep = crlf, 4
        elif end >= 0:
            sep = 2
        else:
            if len(self.buf) > MAX_HEAD_BYTES:
                raise ValueError(f"an answer's head over {MAX_HEAD_BYTES // 1024} KiB")
            return False
        if end > MAX_HEAD_BYTES:
            raise ValueError(f"an answer's head over {MAX_HEAD_BYTES // 1024} KiB")
        lines = self.buf[:end].decode("latin-1").replace("\r\n", "\n").split("\n")
        del self.buf[:end + sep]
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
            raise ValueError(f"not an HTTP answer: {lines[0][:80]!r}")
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            return True  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        found: dict = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            found[name.strip().lower()] = value.strip()
        self.status, self.headers = status, found
        codings = [c.strip().lower() for c in found.get("transfer-encoding", "").split(",") if c.strip()]
        length = found.get("content-length", "").strip()
        if codings and codings[-1] == "chunked":
            self._framing = "chunked"
        elif length:
            if not length.isdigit():
                raise ValueError(f"an answer with a Content-Length that is not a number: {length[:40]!r}")
            self._framing, self._length = "length", int(length)
            if self._length > MAX_BODY_BYTES:
                raise ValueError(f"an answer over {MAX_BODY_BYTES:,} bytes")
            self.done = self._length == 0
        elif status == 204 or status == 304:
            self._framing, self.done = "length", True
        else:
            self._framing = "close"
        return True

    def _chunk(self) -> bool:
        if self._trailers:  # after the last chunk: trailer lines, then an empty line
            at = self.buf.find(b"\n")
            if at < 0:
                return False
            line = bytes(self.buf[:at]).rstrip(b"\r")
            del self.buf[:at + 1]
            self.done = not line
            return not self.done
        if self._chunk_left == 0:  # the line end after a chunk's data
            at = self.buf.find(b"\n")
            if at < 0:
                return False
            if bytes(self.buf[:at]).rstrip(b"\r"):
                raise ValueError("a chunked answer with data past its chunk's size")
            del self.buf[:at + 1]
            self._chunk_left = -1
            return True
        if self._chunk_left < 0:  # a chunk-size line
            at = self.buf.find(b"\n")
            if at < 0:
                if len(self.buf) > 1024:
                    raise ValueError("a chunked answer with a chunk-size line over 1 KiB")
                return False
            field = bytes(self.buf[:at]).split(b";")[0].strip()
            del self.buf[:at + 1]
            if not field or any(c not in b"0123456789abcdefABCDEF" for c in field) or len(field) > 8:
                raise ValueError(f"a chunked answer with a chunk size that is not hex: {field[:20]!r}")
            size = int(field, 16)
            if size == 0:
                self._trailers = True
                return True
            if len(self.body) + size > MAX_BODY_BYTES:
                raise ValueError(f"an answer over {MAX_BODY_BYTES:,} bytes")
            self._chunk_left = size
            return True
        take = min(len(self.buf), self._chunk_left)
        self.body += self.buf[:take]
        del self.buf[:take]
        self._chunk_left -= take
        if self._chunk_left == 0:
            return True
        return False

    def _cap(self) -> None:
        if len(self.body) > MAX_BODY_BYTES:
            raise ValueError(f"an answer over {MAX_BODY_BYTES:,} bytes")


def _parse(raw: bytes) -> tuple[int, dict, bytes]:
    """(status, headers with lower-case names, body) of a whole HTTP/1.x answer; ValueError when it is not one."""
    reader = _Reader()
    reader.feed(raw)
    if not reader.done:
        reader.closed()
    return reader.status, reader.headers, bytes(reader.body)


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
