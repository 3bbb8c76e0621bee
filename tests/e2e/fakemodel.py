"""A local model server for the real clients: Anthropic Messages and OpenAI chat completions, streamed.

tests/fakeapi.py answers our own code (plain JSON, one dialect). The real
clients need more: Claude Code streams ``/v1/messages`` as server-sent events,
qwen-code streams ``/chat/completions`` in the OpenAI dialect. This server
speaks both, as far as the clients need, and records every request::

    srv = FakeModel(); srv.start()
    srv.main.append(Reply(text="done"))            # the next main-loop turn
    srv.main.append(Reply(tool=("Write", {...})))  # a tool call
    ... claude -p with ANTHROPIC_BASE_URL=srv.url, qwen with OPENAI_BASE_URL=srv.url + "/v1" ...
    srv.requests                                   # [{"path", "dialect", "body"}]

A request is a main-loop turn when it offers the client's file-writing tool
(``Write`` or ``write_file``) and its system prompt is the agent's own, or offers mem's tools
(a job of mem's claude-code backend; see ``is_main``); every other request (titles, memory selectors, qwen's memory
extraction agent, compaction summaries) gets ``side_text``. When the script
of main replies is empty, a main turn gets ``default_text``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any, NamedTuple

_ids = itertools.count(1)


class Reply(NamedTuple):
    text: str = ""
    tool: tuple[str, dict] | None = None  # (name, input)


def system_text(body: dict) -> str:
    """The system prompt of either dialect as one string."""
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    if isinstance(system, str):
        return system
    parts = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "system":
            c = m.get("content")
            parts.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(parts)


def tool_names(body: dict) -> set[str]:
    names = set()
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.add(t.get("name") or (t.get("function") or {}).get("name") or "")
    return names


def is_main(body: dict) -> bool:
    """The agent's own turn, not a side query (side agents carry tools too, with prompts of their own)."""
    system = system_text(body)
    if any(n.startswith("mcp__mem__") for n in tool_names(body)):  # a mem job run through Claude Code
        return True
    if "Write" in tool_names(body):  # Claude Code
        return "Claude" in system
    return system.lstrip().startswith("You are Qwen Code")  # qwen-code: write_file may be a deferred tool


def request_texts(body: dict) -> list[str]:
    """Every text the model reads in a request: system blocks, message strings and text parts."""
    texts = [system_text(body)] if body.get("system") else []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return texts


class FakeModel:
    def __init__(self) -> None:
        self.main: list[Reply] = []
        self.default_text = "Done."
        self.side_text = "{}"
        #: Seconds to wait before answering a request, from its headers and body (a slow model for some).
        self.delay: Callable[[dict, dict], float] | None = None
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def _reply_for(self, body: dict) -> tuple[Reply, bool]:
        with self._lock:
            if is_main(body):
                return (self.main.pop(0) if self.main else Reply(self.default_text)), True
        return Reply(self.side_text), False

    # -- the two dialects --

    @staticmethod
    def _anthropic_events(body: dict, reply: Reply) -> tuple[list[tuple[str, dict]], dict]:
        mid = f"msg_fake_{next(_ids)}"
        model = body.get("model") or "claude"
        usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        blocks: list[dict] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        if reply.tool:
            blocks.append({"type": "tool_use", "id": f"toolu_fake_{next(_ids)}", "name": reply.tool[0],
                           "input": reply.tool[1]})
        stop = "tool_use" if reply.tool else "end_turn"
        events = [("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": b["text"]}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {**b, "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                         "stop_sequence": None}, "usage": {"output_tokens": 10}}))
        events.append(("message_stop", {"type": "message_stop"}))
        whole = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
                 "stop_reason": stop, "stop_sequence": None, "usage": usage}
        return events, whole

    @staticmethod
    def _openai_chunks(body: dict, reply: Reply) -> tuple[list[dict], dict]:
        cid = f"chatcmpl-fake{next(_ids)}"
        model = body.get("model") or "qwen"
        base = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply.text or ""},
                                        "finish_reason": None}]}]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool:
            call = {"index": 0, "id": f"call_fake{next(_ids)}", "type": "function",
                    "function": {"name": reply.tool[0], "arguments": json.dumps(reply.tool[1])}}
            chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
            message["tool_calls"] = [{k: v for k, v in call.items() if k != "index"}]
        finish = "tool_calls" if reply.tool else "stop"
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage})
        whole = {"id": cid, "object": "chat.completion", "created": 0, "model": model, "usage": usage,
                 "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        return chunks, whole

    # -- serving --

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeModel:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, frames: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for f in frames:
                    self.wfile.write(f)
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self):
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                path = self.path.split("?")[0]
                dialect = "openai" if path.endswith("/chat/completions") else "anthropic"
                headers = {k.lower(): v for k, v in self.headers.items()}
                entry = {"path": self.path, "dialect": dialect, "body": body, "main": None,
                         "user_agent": headers.get("user-agent", "")}
                with fake._lock:
                    fake.requests.append(entry)
                if not isinstance(body, dict):
                    return self._send(400, {"error": {"type": "invalid_request_error", "message": "not JSON"}})
                if path.endswith("/count_tokens"):
                    return self._send(200, {"input_tokens": 100})
                if fake.delay is not None:
                    time.sleep(fake.delay(headers, body))
                reply, entry["main"] = fake._reply_for(body)
                entry["reply"] = reply._asdict()
                try:
                    if dialect == "openai":
                        chunks, whole = fake._openai_chunks(body, reply)
                        if body.get("stream"):
                            frames = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
                            return self._stream(frames)
                        return self._send(200, whole)
                    events, whole = fake._anthropic_events(body, reply)
                    if body.get("stream"):
                        return self._stream([f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events])
                    return self._send(200, whole)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
