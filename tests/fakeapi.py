"""A real local HTTP server that speaks the Anthropic Messages API, answering from a script.

    api = FakeAnthropic(); api.start()
    api.reply_text('{"selected_memories": ["a.md"]}')
    api.reply_tool_use("write", {"file_path": "a.md", "content": "..."})
    api.reply_status(529)                       # overloaded
    api.reply_text("late", delay=5)             # slower than the client's timeout
    ... run code with ANTHROPIC_BASE_URL=api.url ...
    api.requests[0]["body"]["messages"]         # what the client sent

Replies are consumed in order; when the script runs out the server answers 500,
so a test that expected fewer calls fails loudly. Works for subprocesses too:
it is a real socket on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


def message(content: list[dict], *, stop_reason: str = "end_turn", model: str = "claude-sonnet-5-5",
            input_tokens: int = 100, output_tokens: int = 20) -> dict:
    return {
        "id": f"msg_fake_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def tool_use_block(name: str, input: dict, id: str | None = None) -> dict:
    return {"type": "tool_use", "id": id or f"toolu_fake_{next(_ids)}", "name": name, "input": input}


class FakeAnthropic:
    def __init__(self) -> None:
        self.script: deque[tuple[int, Any, float]] = deque()
        self.requests: list[dict] = []
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # -- scripting --

    def reply(self, body: dict, *, status: int = 200, delay: float = 0.0) -> None:
        self.script.append((status, body, delay))

    def reply_text(self, text: str, **kw) -> None:
        delay = kw.pop("delay", 0.0)
        self.reply(message([{"type": "text", "text": text}], **kw), delay=delay)

    def reply_tool_uses(self, *calls: tuple[str, dict], text: str | None = None, **kw) -> None:
        blocks = ([{"type": "text", "text": text}] if text else []) + [tool_use_block(n, i) for n, i in calls]
        self.reply(message(blocks, stop_reason="tool_use", **kw))

    def reply_tool_use(self, name: str, input: dict, **kw) -> None:
        self.reply_tool_uses((name, input), **kw)

    def reply_status(self, status: int, message_text: str = "scripted error", *, error_type: str | None = None) -> None:
        etype = error_type or {529: "overloaded_error", 429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
        self.reply({"type": "error", "error": {"type": etype, "message": message_text}}, status=status)

    @property
    def remaining(self) -> int:
        return len(self.script)

    # -- serving --

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                    step = fake.script.popleft() if fake.script else None
                if step is None:
                    status, payload, delay = 500, {"type": "error", "error": {"type": "api_error", "message": "fake server: script exhausted"}}, 0.0
                else:
                    status, payload, delay = step
                if delay:
                    time.sleep(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_fake_{next(_ids)}")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
