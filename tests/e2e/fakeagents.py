"""A local model server for Codex CLI and Gemini CLI: the OpenAI Responses API and the Gemini API, streamed.

tests/e2e/fakemodel.py speaks Anthropic Messages and OpenAI chat completions
(Claude Code, qwen-code). Codex CLI calls ``POST /v1/responses`` and reads
server-sent events (``response.created``, ``response.output_item.done``,
``response.completed``); Gemini CLI calls
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (and
``generateContent`` for side requests). Each reply comes from a script, in
order; every request is recorded::

    srv = FakeAgents().start()
    srv.replies.append(Reply(tool=("shell", {...})))   # the next turn calls a tool ("ns.name": a namespace's)
    srv.replies.append(Reply(text="done"))
    ... codex exec with a provider base_url of srv.url + "/v1",
        gemini with GOOGLE_GEMINI_BASE_URL=srv.url ...
    srv.requests                                         # [{"path", "body"}]

When the script is empty a turn gets ``default_text``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

_ids = itertools.count(1)


class Reply(NamedTuple):
    text: str = ""
    tool: tuple[str, dict] | None = None  # (name, arguments)
    custom: tuple[str, str] | None = None  # a freeform tool's call (Codex's exec): (name, input)
    delay: float = 0.0  # seconds before answering (to let a side request finish first)


def responses_events(body: dict, reply: Reply) -> list[tuple[str, dict]]:
    """The SSE events of one Responses API turn."""
    rid = f"resp_{next(_ids)}"
    items = []
    if reply.text:
        items.append({"type": "message", "id": f"msg_{next(_ids)}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
    if reply.tool:
        name, args = reply.tool
        item = {"type": "function_call", "id": f"fc_{next(_ids)}", "call_id": f"call_{next(_ids)}",
                "name": name, "arguments": json.dumps(args), "status": "completed"}
        if "." in name:  # a tool of a namespace (Codex's memories.add_ad_hoc_note)
            item["namespace"], item["name"] = name.split(".", 1)
        items.append(item)
    if reply.custom:
        items.append({"type": "custom_tool_call", "id": f"ctc_{next(_ids)}", "call_id": f"call_{next(_ids)}",
                      "name": reply.custom[0], "input": reply.custom[1], "status": "completed"})
    events: list[tuple[str, dict]] = [("response.created", {"type": "response.created",
                                                             "response": {"id": rid, "status": "in_progress"}})]
    for i, item in enumerate(items):
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                       "item": item}))
        if item["type"] == "message":
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                           "output_index": i, "content_index": 0,
                                                           "delta": reply.text}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                      "item": item}))
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
    events.append(("response.completed", {"type": "response.completed",
                                          "response": {"id": rid, "status": "completed", "output": items,
                                                       "usage": usage}}))
    return events


def gemini_chunk(reply: Reply) -> dict:
    parts: list[dict] = []
    if reply.text:
        parts.append({"text": reply.text})
    if reply.tool:
        parts.append({"functionCall": {"name": reply.tool[0], "args": reply.tool[1]}})
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
            "modelVersion": "gemini-2.5-pro"}


class FakeAgents:
    def __init__(self, default_text: str = "OK.") -> None:
        self.replies: list[Reply] = []
        #: For the requests that carry no tools of their own (side requests; Codex's memory agent).
        self.side_replies: list[Reply] = []
        self.requests: list[dict] = []
        self.default_text = default_text
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _next(self, main: bool) -> Reply:
        with self._lock:
            if main and self.replies:
                return self.replies.pop(0)
            if not main and self.side_replies:
                return self.side_replies.pop(0)
        return Reply(text=self.default_text)

    def start(self) -> FakeAgents:
        srv = self

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
                self.send_header("content-length", str(sum(map(len, frames))))
                self.end_headers()
                for f in frames:
                    self.wfile.write(f)

            def do_GET(self):
                srv.requests.append({"path": self.path, "method": "GET"})
                self._send(200, {"data": [], "models": []})

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                srv.requests.append({"path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path.endswith("/responses"):
                    reply = srv._next(bool(body.get("tools")))
                    time.sleep(reply.delay)
                    self._stream([f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                                  for name, data in responses_events(body, reply)])
                elif path.endswith(":streamGenerateContent"):
                    reply = srv._next(bool(body.get("tools")))
                    self._stream([f"data: {json.dumps(gemini_chunk(reply))}\r\n\r\n".encode()])
                elif path.endswith(":generateContent"):
                    self._send(200, gemini_chunk(srv._next(False)))
                elif path.endswith(":countTokens"):
                    self._send(200, {"totalTokens": 100})
                else:
                    self._send(404, {"error": {"message": f"no route {path}"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
