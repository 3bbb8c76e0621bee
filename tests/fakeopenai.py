"""A real local HTTP server that speaks OpenAI's chat completions, answering from a script.

    api = FakeOpenAI(context_window=32_768).start()
    api.reply_text('{"selected_memories": ["a.md"]}')
    api.reply_tool_call("write", {"file_path": "a.md", "content": "..."})
    api.reply_malformed_tool_call("write", '{"file_path": "a.md", ')   # arguments that are not JSON
    api.reply_status(429, retry_after=1)        # rate limited (consumes a scripted step)
    api.reply_status(503)                       # a 5xx
    api.reply_text("late", delay=5)             # slower than the client's timeout
    api.usage = False                           # answers carry no usage (some servers)
    api.models_report_window = False            # /v1/models says nothing of the window
    api.respond_with(lambda body: ...)          # answers once the script is empty
    ... run code with OPENAI_BASE_URL=api.url (it ends in /v1) ...
    api.requests[0]["body"]["messages"]; api.requests[0]["prompt_tokens"]; api.max_prompt_tokens

What happens to a POST to /v1/chat/completions, in order: a body that is not a JSON object
with a ``messages`` list -> 400; prompt tokens + ``max_tokens`` over the window -> 400
"This model's maximum context length is W tokens. However, you requested N tokens (P in the
messages, M in the completion). Please reduce the length of the messages or completion."
(OpenAI's and vLLM's wording, ``code: context_length_exceeded``); then the next scripted step,
else the responder, else 500 "script exhausted". ``"stream": true`` gets the same answer as
server-sent events (one chunk per piece, tool-call arguments split in two, ``data: [DONE]``).
GET /v1/models lists the served model with ``max_model_len`` (vLLM's field) unless
``models_report_window`` is False; with ``flavour`` "llama.cpp" GET /props answers
``default_generation_settings.n_ctx``, with "ollama" POST /api/show answers ``num_ctx`` in its
``parameters`` (and a larger trained ``context_length``, which Ollama does not serve).

Token counter (``prompt_tokens``): deliberately independent of mem's estimator and at least as
high as a real tokenizer, as tests/fakeapi.py's: fakeapi.text_tokens per string (message
contents, tool-call names and arguments, tool definitions as JSON), 4 per message, 8 per
request.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakeapi import text_tokens

MODEL = "local-model"
_ids = itertools.count(1)
Responder = Callable[[dict], Any]


def count_tokens(body: dict) -> int:
    total = 8
    for message in body.get("messages") or []:
        total += 4
        content = message.get("content")
        if isinstance(content, str):
            total += text_tokens(content)
        elif content is not None:
            total += text_tokens(json.dumps(content, ensure_ascii=False))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += 4 + text_tokens(str(fn.get("name", ""))) + text_tokens(str(fn.get("arguments", "")))
    for tool in body.get("tools") or []:
        total += 8 + text_tokens(json.dumps(tool, ensure_ascii=False))
    return total


def completion(message: dict, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    out = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
           "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}
    if usage is not None:
        out["usage"] = usage
    return out


def tool_call(name: str, arguments: Any) -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": args}}


class FakeOpenAI:
    def __init__(self, *, context_window: int = 32_768, latency: float = 0.0, model: str = MODEL):
        self.script: deque[tuple[int, Any, float, dict]] = deque()
        self.requests: list[dict] = []
        self.context_window = context_window
        self.latency = latency
        self.model = model
        #: whether answers carry usage
        self.usage = True
        #: whether /v1/models reports the window (max_model_len)
        self.models_report_window = True
        #: also answer as llama.cpp (GET /props n_ctx) or Ollama (POST /api/show num_ctx): None, "llama.cpp", "ollama"
        self.flavour: str | None = None
        self.errors: list[BaseException] = []
        self._responder: Responder | None = None
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # -- scripting --

    def reply(self, body: dict, *, status: int = 200, delay: float = 0.0, headers: dict | None = None) -> None:
        self.script.append((status, body, delay, headers or {}))

    def reply_text(self, text: str, *, delay: float = 0.0) -> None:
        self.reply(completion({"role": "assistant", "content": text}), delay=delay)

    def reply_tool_calls(self, *calls: tuple[str, Any], text: str | None = None) -> None:
        self.reply(completion({"role": "assistant", "content": text, "tool_calls": [tool_call(n, a) for n, a in calls]},
                              "tool_calls"))

    def reply_tool_call(self, name: str, arguments: dict) -> None:
        self.reply_tool_calls((name, arguments))

    def reply_malformed_tool_call(self, name: str, arguments: str = '{"file_path": "a.md", ') -> None:
        self.reply_tool_calls((name, arguments))

    def reply_status(self, status: int, message_text: str = "scripted error", *, retry_after: float | None = None) -> None:
        etype = {429: "rate_limit_exceeded", 400: "invalid_request_error", 401: "invalid_api_key"}.get(status, "server_error")
        self.reply({"error": {"message": message_text, "type": etype, "code": etype}}, status=status,
                   headers={} if retry_after is None else {"retry-after": f"{retry_after:g}"})

    def respond_with(self, fn: Responder | None) -> None:
        self._responder = fn

    @property
    def max_prompt_tokens(self) -> int:
        return max((r["prompt_tokens"] or 0 for r in self.requests if r["path"].endswith("/chat/completions")), default=0)

    # -- answering --

    def _answer(self, method: str, path: str, headers: dict, raw: bytes | None) -> tuple[int, Any, float, dict]:
        entry: dict[str, Any] = {"method": method, "path": path, "headers": headers, "body": None, "prompt_tokens": None}
        with self._lock:
            self.requests.append(entry)
        if method == "GET" and path.rstrip("/").endswith("/v1/models"):
            model = {"id": self.model, "object": "model", "owned_by": "fake"}
            if self.models_report_window:
                model["max_model_len"] = self.context_window
            entry["status"] = 200
            return 200, {"object": "list", "data": [model]}, 0.0, {}
        if self.flavour == "llama.cpp" and method == "GET" and path == "/props":
            entry["status"] = 200
            return 200, {"default_generation_settings": {"n_ctx": self.context_window}, "total_slots": 1}, 0.0, {}
        if self.flavour == "ollama" and method == "POST" and path == "/api/show":
            entry["status"] = 200
            return 200, {"parameters": f"num_ctx                        {self.context_window}\nstop \"<|im_end|>\"",
                         "model_info": {"qwen2.context_length": 131072}}, 0.0, {}
        if method != "POST" or not path.rstrip("/").endswith("/v1/chat/completions"):
            entry["status"] = 404
            return 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}, 0.0, {}
        try:
            body = json.loads(raw or b"")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            entry["status"] = 400
            return 400, {"error": {"message": "messages: field required", "type": "invalid_request_error"}}, 0.0, {}
        entry["body"] = body
        tokens = entry["prompt_tokens"] = count_tokens(body)
        wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if tokens + wanted > self.context_window:
            entry["status"] = 400
            return 400, {"error": {
                "message": (f"This model's maximum context length is {self.context_window} tokens. However, you "
                            f"requested {tokens + wanted} tokens ({tokens} in the messages, {wanted} in the "
                            "completion). Please reduce the length of the messages or completion."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}, 0.0, {}
        with self._lock:
            step = self.script.popleft() if self.script else None
        if step is None and self._responder is not None:
            try:
                got = self._responder(body)
            except BaseException as exc:  # noqa: BLE001 - reported to the test, answered 500
                self.errors.append(exc)
                got = (500, {"error": {"message": f"responder failed: {exc}", "type": "server_error"}})
            step = (200, got, 0.0, {}) if isinstance(got, dict) else (*got, 0.0, {})[:4]
        if step is None:
            step = (500, {"error": {"message": "script exhausted", "type": "server_error"}}, 0.0, {})
        status, payload, delay, extra = step
        if status == 200 and isinstance(payload, dict) and "choices" in payload:
            payload = json.loads(json.dumps(payload))
            if self.usage:
                out = sum(text_tokens(json.dumps(c.get("message"))) for c in payload["choices"])
                payload["usage"] = {"prompt_tokens": tokens, "completion_tokens": out, "total_tokens": tokens + out}
            else:
                payload.pop("usage", None)
        entry["status"] = status
        return status, payload, delay, extra

    # -- serving --

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, delay, extra = fake._answer(method, self.path, headers, raw)
                wait = fake.latency + delay
                if wait > 0:
                    time.sleep(wait)
                body = None
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    pass
                try:
                    if status == 200 and isinstance(body, dict) and body.get("stream") and "choices" in payload:
                        self._stream(payload)
                        return
                    data = json.dumps(payload).encode()
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, payload: dict) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                choice = payload["choices"][0]
                message = choice["message"]
                base = {k: payload[k] for k in ("id", "object", "created", "model")}
                base["object"] = "chat.completion.chunk"

                def send(delta: dict, finish=None, **more) -> None:
                    chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

                send({"role": "assistant", "content": ""})
                text = message.get("content") or ""
                for i in range(0, len(text), 20):
                    send({"content": text[i:i + 20]})
                for n, call in enumerate(message.get("tool_calls") or []):
                    args = call["function"]["arguments"]
                    half = len(args) // 2
                    send({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": args[:half]}}]})
                    send({"tool_calls": [{"index": n, "function": {"arguments": args[half:]}}]})
                send({}, choice.get("finish_reason"), **({"usage": payload["usage"]} if "usage" in payload else {}))
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def do_POST(self):
                self._serve("POST")

            def do_GET(self):
                self._serve("GET")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
