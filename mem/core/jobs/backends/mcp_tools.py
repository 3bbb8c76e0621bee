"""A job's confined tools as an MCP server, for the claude-code backend.

Claude Code runs its own agent loop; mem offers it the job's ``ToolBox`` and nothing else. The
tools stay in mem's own process, so every call goes through the same ``ToolBox`` instance as in
mem's own loop: the one write path, its checks, the run's record of what was written, the
history operation the job holds open, the job's deadline. Claude Code starts MCP servers as
child processes speaking JSON-RPC over stdio, so the server it starts is ``RELAY``, a few lines
of standard-library Python that carry each line between its stdin/stdout and a Unix socket on
which ``ToolServer`` (a thread of mem's process) answers::

    with ToolServer(toolbox) as server:          # listens on a socket in a private temp dir
        config = server.mcp_config()             # {"mcpServers": {"mem": {... RELAY ...}}}
        ... claude -p --strict-mcp-config --mcp-config <config> ...

The protocol (MCP 2024-11-05 and later, as far as a tools-only server needs it): ``initialize``,
``notifications/initialized``, ``ping``, ``tools/list`` (the box's definitions, ``input_schema``
renamed ``inputSchema``) and ``tools/call`` (the result as one text block, ``isError`` for a
refusal); any other request is answered with JSON-RPC's method-not-found error. ``handle`` is one
message in, its answer (or None for a notification) out.

uses: backends (nothing else of mem's: the tool box is handed in)
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from typing import Any

#: The name Claude Code knows the server by: its tools are ``mcp__mem__read`` and so on.
SERVER_NAME = "mem"
PROTOCOL_VERSION = "2025-06-18"

#: The process Claude Code starts (``python -I -c RELAY <socket>``): stdin lines to the socket,
#: the socket's lines to stdout, until either side closes. Standard library only, no mem import
#: (a zipapp's interpreter could not import mem by name).
RELAY = r"""
import os, signal, socket, sys, threading
signal.signal(signal.SIGINT, lambda *_: os._exit(0))
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
def up():
    for line in sys.stdin.buffer:
        s.sendall(line)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while True:
    data = s.recv(65536)
    if not data:
        break
    out.write(data)
    out.flush()
os._exit(0)
"""


def tool_name(name: str) -> str:
    """How Claude Code names one of our tools: ``mcp__mem__read``."""
    return f"mcp__{SERVER_NAME}__{name}"


def _error(id_: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def handle(toolbox: Any, message: Any) -> dict | None:
    """The answer to one JSON-RPC message (None for a notification or a response)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, -32600, "not a JSON-RPC 2.0 message")
    method = message.get("method")
    id_ = message.get("id")
    if "id" not in message or method is None:
        return None  # a notification (initialized, cancelled...) or a response to us: nothing to say
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": asked if isinstance(asked, str) and asked else PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": "1"},
        }}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": id_, "result": {}}
    if method == "tools/list":
        tools = [{"name": d["name"], "description": d["description"], "inputSchema": d["input_schema"]}
                 for d in toolbox.definitions()]
        return {"jsonrpc": "2.0", "id": id_, "result": {"tools": tools}}
    if method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str):
            return _error(id_, -32602, "tools/call needs a tool name")
        arguments = params.get("arguments")
        text, is_error = toolbox.call(name, {} if arguments is None else arguments)
        return {"jsonrpc": "2.0", "id": id_, "result": {
            "content": [{"type": "text", "text": text}], "isError": bool(is_error)}}
    return _error(id_, -32601, f"method not found: {method}")


class ToolServer:
    """``handle`` for ``toolbox`` on a Unix socket in a private temp dir, one thread per connection."""

    def __init__(self, toolbox: Any):
        self.toolbox = toolbox
        self.dir = tempfile.mkdtemp(prefix="mem-tools-")  # 0700: only this user reaches the socket
        self.path = os.path.join(self.dir, "tools.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(4)
        self._lock = threading.Lock()  # one tool call at a time: the box keeps one record
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def mcp_config(self) -> dict:
        """The ``--mcp-config`` that makes Claude Code start the relay to this server."""
        return {"mcpServers": {SERVER_NAME: {"type": "stdio", "command": sys.executable,
                                             "args": ["-I", "-c", RELAY, self.path]}}}

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    answer: dict | None = _error(None, -32700, "not JSON")
                else:
                    with self._lock:
                        answer = handle(self.toolbox, message)
                if answer is not None:
                    try:
                        conn.sendall(json.dumps(answer).encode() + b"\n")
                    except OSError:
                        return

    def close(self) -> None:
        # The accept thread ends before the socket's descriptor is let go: left blocked in accept(), or about
        # to call it, it would accept on whatever socket of this process gets that descriptor number next.
        self._closed = True
        try:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept() (EINVAL)
            except OSError:
                pass
            self._acceptor.join(timeout=5)
            self._sock.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
