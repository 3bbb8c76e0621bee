"""The team-memory server: the other side of the sync contract, for a team to self-host.

    GET  /api/claude_code/team_memory?repo=OWNER/REPO               entries, checksums, version (ETag; 304; 404)
    GET  /api/claude_code/team_memory?repo=OWNER/REPO&view=hashes   checksums only
    GET  /api/claude_code/team_memory?repo=OWNER/REPO&view=history&key=K   a key's kept versions
    PUT  /api/claude_code/team_memory?repo=OWNER/REPO               {"entries": {key: content}}, upsert;
                                                                    If-Match → 412; limits → structured 413
    GET  /healthz                                                   liveness (no token)

Every team-memory request needs ``Authorization: Bearer <token>``: a missing
or unknown token is 401, a token not scoped to the repo 403, and nothing is
read or written. Keys are validated like the client does (reference §8.3),
entries over 250,000 bytes are refused, and an entry carrying a secret is
refused (422) so a secret never reaches the database, whoever sends it.

Standard library only (``http.server``'s ThreadingHTTPServer, HTTP/1.1 with
keep-alive); one JSON log object per request on the log stream; ``drain()``
stops accepting, lets requests in flight finish and closes idle connections.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO
from urllib.parse import parse_qs, urlsplit

from mem import __version__
from mem.core.team import keys
from mem.core.team.storage import PreconditionFailed, SQLStore, StoreError, TooManyEntries, now_iso

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8737
DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_BODY = 1_048_576
ORGANIZATION = "self-hosted"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class Limits:
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_body: int = DEFAULT_MAX_BODY
    max_entry_bytes: int = keys.MAX_FILE_SIZE_BYTES


class JsonLog:
    """One JSON object per line on ``stream``, whole lines only (a lock keeps threads from interleaving).

    With no stream, records are dropped.
    """

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: str, level: str = "info", **fields) -> None:
        stream = self.stream
        if stream is None:
            return
        record = {"time": now_iso(), "level": level, "event": event, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError):
                pass


class HttpError(Exception):
    def __init__(self, status: int, type_: str, message: str, details: dict | None = None,
                 headers: tuple = (), close: bool = False):
        super().__init__(message)
        self.status = status
        self.body = {"error": {"type": type_, "message": message, **({"details": details} if details else {})}}
        self.headers = headers
        self.close = close
        self.error_code = (details or {}).get("error_code")


def _etag(checksum: str) -> str:
    return f'"{checksum}"'


def _tags(header: str | None) -> list[str]:
    """Entity tags of an If-Match / If-None-Match header, quotes and W/ stripped."""
    if not header:
        return []
    out = []
    for part in header.split(","):
        part = part.strip()
        if part.startswith("W/"):
            part = part[2:]
        part = part.strip('"').strip()
        if part:
            out.append(part)
    return out


class TeamHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # drain() joins the handlers itself, with a deadline
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], store: SQLStore, *, limits: Limits = Limits(),
                 log: JsonLog | None = None, idle_timeout: float = 30.0):
        host = address[0]
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__(address, TeamRequestHandler)
        self.store = store
        self.limits = limits
        self.log = log or JsonLog()
        self.idle_timeout = idle_timeout
        self.draining = False
        self._conns: dict[socket.socket, bool] = {}  # socket -> busy
        self._conns_lock = threading.Lock()
        self._handler_threads: set[threading.Thread] = set()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    def process_request(self, request, client_address):
        t = threading.Thread(target=self._handle, args=(request, client_address), daemon=True)
        with self._conns_lock:
            self._handler_threads.add(t)
        t.start()

    def _handle(self, request, client_address):
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._conns_lock:
                self._handler_threads.discard(threading.current_thread())

    # connection states, so drain() can close the idle ones and let busy ones finish
    def conn_state(self, sock: socket.socket, busy: bool | None) -> bool:
        """Record a connection as busy/idle (None: gone); False when it should close now."""
        with self._conns_lock:
            if busy is None:
                self._conns.pop(sock, None)
                return False
            if self.draining and busy:
                return False
            self._conns[sock] = busy
            return True

    def drain(self, timeout: float = 30.0) -> int:
        """Stop serving: close idle connections, wait up to ``timeout`` s for busy ones; return those left."""
        with self._conns_lock:
            self.draining = True
            for sock, busy in self._conns.items():
                if not busy:
                    try:
                        sock.shutdown(socket.SHUT_RD)
                    except OSError:
                        pass
        deadline = time.monotonic() + timeout
        while True:
            with self._conns_lock:
                alive = [t for t in self._handler_threads if t.is_alive()]
            if not alive or time.monotonic() >= deadline:
                return len(alive)
            alive[0].join(min(0.05, max(0.0, deadline - time.monotonic())))


class TeamRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"mem-team/{__version__}"
    server: TeamHTTPServer

    def version_string(self) -> str:
        return self.server_version

    # -- connection bookkeeping

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.server.conn_state(self.connection, False)

    def finish(self) -> None:
        self.server.conn_state(self.connection, None)
        try:
            super().finish()
        except OSError:
            pass

    def parse_request(self) -> bool:
        # The request line has just arrived: this connection is busy until the response is out.
        self._started = time.monotonic()
        self._logged = False
        self._error_code = None
        self._repo = self._token_id = self._view = None
        self._bytes_in = 0
        if not self.server.conn_state(self.connection, True):
            self.close_connection = True
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError, socket.timeout):
            self.close_connection = True
        if not self.server.conn_state(self.connection, False):
            self.close_connection = True

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's name
        pass  # every request gets one structured line from _finish_request instead

    def log_error(self, format: str, *args) -> None:  # noqa: A002
        message = format % args
        if message.startswith("Request timed out"):
            return  # an idle keep-alive connection closing: routine
        self.server.log("http_error", "warning", message=message, remote=self.client_address[0])

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Malformed request lines and headers: answer in JSON like everything else.
        self.close_connection = True
        try:
            self._send(code, {"error": {"type": "invalid_request_error", "message": message or explain or "bad request"}})
        except OSError:
            pass

    # -- dispatch

    def do_GET(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    do_POST = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD

    def _dispatch(self) -> None:
        try:
            self._route()
        except HttpError as exc:
            self._error_code = exc.error_code
            if exc.close:
                self.close_connection = True
            self._send(exc.status, exc.body, exc.headers)
        except StoreError as exc:
            self._error_code = "store_unavailable"
            self.server.log("store_error", "error", message=str(exc))
            self._send(503, {"error": {"type": "overloaded_error", "message": "the team database is unavailable"}},
                       (("Retry-After", "1"),))
        except (ConnectionError, TimeoutError, socket.timeout):
            self.close_connection = True
            self._error_code = "client_gone"
            self._log_request(499)
        except Exception as exc:  # noqa: BLE001 - a handler bug must not kill the server
            self._error_code = "internal_error"
            self.server.log("internal_error", "error", message=f"{type(exc).__name__}: {exc}")
            self.close_connection = True
            try:
                self._send(500, {"error": {"type": "api_error", "message": "internal server error"}})
            except OSError:
                pass

    def _log_request(self, status: int) -> None:
        if getattr(self, "_logged", False):
            return
        self._logged = True
        error_code = getattr(self, "_error_code", None)
        started = getattr(self, "_started", None)
        fields = {
            "method": getattr(self, "command", None), "path": urlsplit(getattr(self, "path", "") or "").path,
            "status": status, "repo": getattr(self, "_repo", None),
            "duration_ms": round((time.monotonic() - started) * 1000, 2) if started else None,
            "remote": self.client_address[0] if self.client_address else None,
        }
        if getattr(self, "_view", None):
            fields["view"] = self._view
        if getattr(self, "_token_id", None):
            fields["token"] = self._token_id
        if getattr(self, "_bytes_in", 0):
            fields["bytes_in"] = self._bytes_in
        if error_code:
            fields["error_code"] = error_code
        self.server.log("request", "info" if status < 500 else "error", **fields)

    def _route(self) -> int:
        url = urlsplit(self.path)
        if url.path == "/healthz":
            if self.command not in ("GET", "HEAD"):
                raise HttpError(405, "invalid_request_error", "use GET", headers=(("Allow", "GET, HEAD"),), close=True)
            self.server.store.head("-/-")  # the database answers
            return self._send(200, {"status": "ok", "version": __version__})
        if url.path.rstrip("/") != keys.API_PATH:
            raise HttpError(404, "not_found_error", f"no such endpoint: {url.path}", close=self._has_body())
        if self.command not in ("GET", "PUT"):
            raise HttpError(405, "invalid_request_error", f"{self.command} is not supported here",
                            headers=(("Allow", "GET, PUT"),), close=True)
        query = parse_qs(url.query, keep_blank_values=True)
        repo = (query.get("repo") or [""])[0]
        token = self._authenticate()
        try:
            keys.check_repo(repo)
        except Exception:  # noqa: BLE001 - UsageError, but any failure is the client's
            raise HttpError(400, "invalid_request_error", "the repo parameter must be OWNER/REPO",
                            {"error_code": "team_memory_invalid_repo"}, close=self._has_body()) from None
        self._repo = repo
        if not token.allows(repo):
            raise HttpError(403, "permission_error", f"this token is not allowed to use {repo}", close=self._has_body())
        if self.command == "GET":
            view = (query.get("view") or [""])[0]
            self._view = view or None
            if view == "hashes":
                return self._get_hashes(repo)
            if view == "history":
                return self._get_history(repo, (query.get("key") or [""])[0])
            if view:
                raise HttpError(400, "invalid_request_error", f"unknown view {view!r} (hashes, history)")
            return self._get(repo)
        return self._put(repo, token.id)

    def _has_body(self) -> bool:
        return bool(self.headers.get("Content-Length", "0").strip() not in ("", "0") or self.headers.get("Transfer-Encoding"))

    def _authenticate(self):
        header = self.headers.get("Authorization", "")
        scheme, _, secret = header.partition(" ")
        challenge = (("WWW-Authenticate", 'Bearer realm="mem-team"'),)
        if scheme.lower() != "bearer" or not secret.strip():
            raise HttpError(401, "authentication_error", "a bearer token is required", headers=challenge, close=self._has_body())
        token = self.server.store.authenticate(secret.strip())
        if token is None:
            raise HttpError(401, "authentication_error", "invalid or revoked token",
                            headers=(("WWW-Authenticate", 'Bearer realm="mem-team", error="invalid_token"'),),
                            close=self._has_body())
        self._token_id = token.id
        return token

    # -- GET

    def _get(self, repo: str) -> int:
        wanted = _tags(self.headers.get("If-None-Match"))
        head = self.server.store.head(repo)
        if head is None:
            raise HttpError(404, "not_found_error", f"no team memory for {repo}")
        if head.checksum in wanted or "*" in wanted:
            return self._send(304, None, (("ETag", _etag(head.checksum)),))
        data = self.server.store.get(repo)
        if data is None:
            raise HttpError(404, "not_found_error", f"no team memory for {repo}")
        h = data.head
        body = {
            "organizationId": ORGANIZATION, "repo": repo, "version": h.version, "lastModified": h.last_modified,
            "checksum": h.checksum, "content": {"entries": data.entries, "entryChecksums": data.checksums},
        }
        return self._send(200, body, (("ETag", _etag(h.checksum)),))

    def _get_hashes(self, repo: str) -> int:
        data = self.server.store.get(repo, bodies=False)
        if data is None:
            raise HttpError(404, "not_found_error", f"no team memory for {repo}")
        h = data.head
        body = {"repo": repo, "version": h.version, "lastModified": h.last_modified, "checksum": h.checksum,
                "entryChecksums": data.checksums}
        return self._send(200, body, (("ETag", _etag(h.checksum)),))

    def _get_history(self, repo: str, key: str) -> int:
        try:
            keys.check_key(key)
        except keys.InvalidKeyError as exc:
            raise HttpError(400, "invalid_request_error", str(exc), {"error_code": "team_memory_invalid_key"}) from None
        items = self.server.store.history(repo, key)
        if not items:
            raise HttpError(404, "not_found_error", f"no entry {key!r} in {repo}")
        return self._send(200, {"repo": repo, "key": key, "versions": [i.as_dict() for i in items]})

    # -- PUT

    def _read_body(self) -> bytes:
        limits = self.server.limits
        if self.headers.get("Transfer-Encoding"):
            raise HttpError(411, "invalid_request_error", "send a Content-Length, not a chunked body", close=True)
        raw = self.headers.get("Content-Length")
        if raw is None:
            raise HttpError(411, "invalid_request_error", "Content-Length is required", close=True)
        try:
            length = int(raw)
            if length < 0:
                raise ValueError
        except ValueError:
            raise HttpError(400, "invalid_request_error", "bad Content-Length", close=True) from None
        if length > limits.max_body:
            raise HttpError(413, "request_too_large", f"the body is {length} bytes; the limit is {limits.max_body}",
                            {"error_code": "team_memory_body_too_large", "max_bytes": limits.max_body,
                             "received_bytes": length}, close=True)
        body = self.rfile.read(length)
        self._bytes_in = len(body)
        if len(body) != length:
            raise HttpError(400, "invalid_request_error", "the body ended early", close=True)
        return body

    def _put(self, repo: str, token_id: str) -> int:
        body = self._read_body()
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise HttpError(400, "invalid_request_error", "the body is not JSON") from None
        except RecursionError:  # nested deeper than the parser goes: the client's fault, not ours
            raise HttpError(400, "invalid_request_error", "the body is nested too deeply") from None
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if not isinstance(entries, dict):
            raise HttpError(400, "invalid_request_error", 'the body must be {"entries": {key: content}}')
        limits = self.server.limits
        for key, value in entries.items():
            try:
                keys.check_key(key)
            except keys.InvalidKeyError as exc:
                raise HttpError(400, "invalid_request_error", str(exc),
                                {"error_code": "team_memory_invalid_key", "key": key, "reason": exc.reason}) from None
            if not isinstance(value, str):
                raise HttpError(400, "invalid_request_error", f"entry {key!r} is not a string",
                                {"error_code": "team_memory_invalid_entry", "key": key})
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError:
                raise HttpError(400, "invalid_request_error", f"entry {key!r} is not valid Unicode",
                                {"error_code": "team_memory_invalid_entry", "key": key}) from None
            if size > limits.max_entry_bytes:
                raise HttpError(413, "request_too_large", f"entry {key!r} is {size} bytes; the limit is {limits.max_entry_bytes}",
                                {"error_code": "team_memory_entry_too_large", "key": key,
                                 "max_bytes": limits.max_entry_bytes, "received_bytes": size})
        from mem.core.guards.secrets import first_secret

        found = []
        for key in sorted(entries):
            hit = first_secret(entries[key])
            if hit is not None:
                found.append({"key": key, "rule_id": hit.rule_id, "label": hit.label})
        if found:
            names = ", ".join(f"{f['key']} ({f['label']})" for f in found)
            raise HttpError(422, "invalid_request_error", f"refused: entries contain secrets: {names}",
                            {"error_code": "team_memory_secret_detected", "entries": found})
        if_match = _tags(self.headers.get("If-Match"))
        if_none = _tags(self.headers.get("If-None-Match"))
        try:
            if "*" in if_match:
                head = self.server.store.head(repo)
                if head is None:
                    raise PreconditionFailed(None)
                if_match = [head.checksum]
            result = self.server.store.put(
                repo, entries, if_match=if_match[0] if if_match else None, if_none_match_any="*" in if_none,
                max_entries=limits.max_entries, token_id=token_id,
            )
        except PreconditionFailed as exc:
            head = exc.head
            raise HttpError(412, "precondition_failed", "the team memory changed since the checksum given",
                            {"error_code": "team_memory_conflict", "checksum": head.checksum if head else None,
                             "version": head.version if head else None},
                            headers=(("ETag", _etag(head.checksum)),) if head else ()) from None
        except TooManyEntries as exc:
            raise HttpError(413, "request_too_large", str(exc),
                            {"error_code": "team_memory_too_many_entries", "max_entries": exc.max_entries,
                             "received_entries": exc.received}) from None
        h = result.head
        return self._send(200, {"repo": repo, "version": h.version, "lastModified": h.last_modified,
                                "checksum": h.checksum, "changedKeys": result.changed},
                          (("ETag", _etag(h.checksum)),))

    # -- output

    def _send(self, status: int, body: dict | None, headers: tuple = ()) -> int:
        data = b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.server.draining:
            self.close_connection = True
        # Logged before the bytes go out, so a client's next request never logs first.
        self._log_request(status)
        lines = [f"{self.protocol_version} {status} {self.responses.get(status, ('',))[0]}",
                 f"Server: {self.version_string()}", f"Date: {self.date_time_string()}"]
        if status != 304:
            lines += ["Content-Type: application/json; charset=utf-8", f"Content-Length: {len(data)}"]
        lines.append("Cache-Control: no-store")
        lines += [f"{name}: {value}" for name, value in headers]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        # One write: headers and body in separate segments meet Nagle and delayed ACKs (40 ms stalls).
        self.wfile.write(head if self.command == "HEAD" or status == 304 else head + data)
        return status


def make_server(store: SQLStore, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
                limits: Limits = Limits(), log: JsonLog | None = None) -> TeamHTTPServer:
    """A bound (not yet serving) server; ``port=0`` picks a free port (see ``.url``)."""
    return TeamHTTPServer((host, port), store, limits=limits, log=log)


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")
