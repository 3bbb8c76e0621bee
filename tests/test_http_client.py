"""The stdlib clients' one HTTP exchange (mem/core/jobs/backends/http.py) against raw local servers that
answer the ways real ones do: a length, chunks, no length and a close, a connection kept open, garbage."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from mem.core.jobs.backends.protocol import ModelError
from mem.core.jobs.backends.http import exchange


@pytest.fixture
def raw_server():
    """A one-answer-per-connection TCP server; set ``answer`` (bytes) and whether it ``closes``; ``seen`` holds
    each request as received."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    state = {"answer": b"", "closes": True, "seen": [], "delay": 0.0}

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    body += conn.recv(65536)
                state["seen"].append((head.decode(), body))
                time.sleep(state["delay"])
                conn.sendall(state["answer"])
                if not state["closes"]:
                    time.sleep(3)  # holds the connection: the client must not wait for the close

    threading.Thread(target=serve, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    yield state
    listener.close()


def ask(server, timeout: float = 2.0):
    return exchange("POST", server["url"], "/messages", {"content-type": "application/json", "x-api-key": "k"},
                    {"ask": "é"}, deadline=time.monotonic() + timeout, budget=timeout)


def test_a_length_delimited_answer_and_the_request_as_sent(raw_server):
    raw_server["answer"] = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'
    answer = ask(raw_server)
    assert (answer.status, answer.data, answer.headers["content-type"]) == (200, {"ok": True}, "application/json")
    head, body = raw_server["seen"][0]
    lines = head.split("\r\n")
    assert lines[0] == "POST /v1/messages HTTP/1.1"
    assert f"Host: {raw_server['url'].split('/')[2]}" in lines and "x-api-key: k" in lines
    assert body == '{"ask": "é"}'.encode()


def test_a_chunked_answer(raw_server):
    raw_server["answer"] = (b"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
                            b"5\r\n{\"err\r\n8;ext=1\r\nor\": \"x\"\r\n1\r\n}\r\n0\r\n\r\n")
    answer = ask(raw_server)
    assert (answer.status, answer.data, answer.retry_after) == (429, {"error": "x"}, 3.0)


def test_an_answer_without_a_length_ends_at_the_close(raw_server):
    raw_server["answer"] = b"HTTP/1.0 500 Internal Server Error\r\n\r\nupstream exploded"
    answer = ask(raw_server)
    assert (answer.status, answer.data) == (500, "upstream exploded")


def test_a_server_that_keeps_the_connection_open_is_not_waited_for(raw_server):
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    raw_server["closes"] = False
    started = time.monotonic()
    assert ask(raw_server).data == {}
    assert time.monotonic() - started < 1.0


def test_a_chunked_answer_on_a_connection_kept_open_is_not_waited_for(raw_server):
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    raw_server["closes"] = False
    started = time.monotonic()
    assert ask(raw_server).data == {}
    assert time.monotonic() - started < 1.0


def test_an_answer_that_is_not_http_is_a_connection_error(raw_server):
    raw_server["answer"] = b"SSH-2.0-OpenSSH_9.6\r\n\r\n"
    with pytest.raises(ModelError) as exc:
        ask(raw_server)
    assert exc.value.kind == "connection" and "not an HTTP answer" in str(exc.value)


def test_a_late_answer_is_a_timeout(raw_server):
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    raw_server["delay"] = 1.5
    started = time.monotonic()
    with pytest.raises(ModelError) as exc:
        ask(raw_server, timeout=0.4)
    assert exc.value.kind == "timeout" and time.monotonic() - started < 1.0


def test_no_server_is_a_connection_error():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(ModelError) as exc:
        exchange("GET", f"http://127.0.0.1:{port}", "/v1/models", {}, deadline=time.monotonic() + 2, budget=2)
    assert exc.value.kind == "connection"


def test_https_checks_the_certificate_and_the_host_name(tmp_path, monkeypatch):
    """The public APIs are https: the socket is wrapped with the system's trust (SSL_CERT_FILE here)."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve():
        for _ in range(2):
            conn, _ = listener.accept()
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += tls.recv(65536)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"tls\": true}")
            except (ssl.SSLError, OSError):
                pass  # the client refused the certificate

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    answer = exchange("GET", f"https://localhost:{port}", "/v1/models", {}, deadline=time.monotonic() + 5, budget=5)
    assert answer.data == {"tls": True}
    with pytest.raises(ModelError) as exc:  # the certificate is not for this name
        exchange("GET", f"https://127.0.0.1:{port}", "/v1/models", {}, deadline=time.monotonic() + 5, budget=5)
    assert exc.value.kind == "connection"
    listener.close()


# Answers real servers and proxies give, or broken ones do (found by a second reading of the client).

def test_a_negative_chunk_size_is_an_error_not_an_endless_loop(raw_server):
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\n"
    raw_server["closes"] = False
    started = time.monotonic()
    with pytest.raises(ModelError, match="not hex"):
        ask(raw_server, timeout=3)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("interim", [b"HTTP/1.1 100 Continue\r\n\r\n",
                                     b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"])
def test_interim_answers_are_skipped(raw_server, interim):
    raw_server["answer"] = interim + b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"ok": true}'
    raw_server["closes"] = False
    answer = ask(raw_server)
    assert (answer.status, answer.data) == (200, {"ok": True})


def test_a_body_shorter_than_its_length_is_an_error(raw_server):
    raw_server["answer"] = b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"a": 1}'
    with pytest.raises(ModelError, match="cut short: 8 of 100 bytes"):
        ask(raw_server)


def test_transfer_encoding_without_a_space_and_an_open_connection(raw_server):
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding:chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    raw_server["closes"] = False
    started = time.monotonic()
    assert ask(raw_server, timeout=2.5).data == {}
    assert time.monotonic() - started < 1.5  # not waited out to the deadline


def test_bare_line_feeds_are_read(raw_server):
    raw_server["answer"] = b'HTTP/1.1 200 OK\nContent-Length: 2\n\n{}'
    assert ask(raw_server).data == {}


def test_a_head_or_body_over_its_cap_is_an_error(raw_server, monkeypatch):
    from mem.core.jobs.backends import http

    raw_server["answer"] = b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 70_000 + b"\r\n\r\n{}"
    with pytest.raises(ModelError, match="head over 64 KiB"):
        ask(raw_server)
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 1000)
    raw_server["answer"] = b"HTTP/1.1 200 OK\r\n\r\n" + b"b" * 5000
    with pytest.raises(ModelError, match="over 1,000 bytes"):
        ask(raw_server)


def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent(raw_server):
    with pytest.raises(ModelError, match="line break or NUL"):
        exchange("POST", raw_server["url"], "/messages", {"x-api-key": "k\r\nX-Evil: 1"}, {},
                 deadline=time.monotonic() + 2, budget=2)
    assert raw_server["seen"] == []
