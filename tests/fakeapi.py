"""A real local HTTP server that speaks the Anthropic Messages API, answering from a script.

    api = FakeAnthropic(); api.start()
    api.reply_text('{"selected_memories": ["a.md"]}')
    api.reply_tool_use("write", {"file_path": "a.md", "content": "..."})
    api.reply_status(529)                       # overloaded (consumes a scripted step)
    api.reply_text("late", delay=5)             # slower than the client's timeout
    api.reply_text("held", delay=gate)          # answered once gate (a threading.Event) is set
    api.overload_next(2)                        # the next 2 requests get 529, script untouched
    api.latency = 0.2                           # added to every reply
    api.respond_with(lambda body: message(...)) # answers once the script is empty
    api.context_window = 50_000                 # smaller window for every model
    ... run code with ANTHROPIC_BASE_URL=api.url ...
    api.requests[0]["body"]["messages"]         # what the client sent
    api.requests[0]["input_tokens"]             # what this server counted for it
    api.max_input_tokens                        # the largest count seen

Replies are consumed in order; when the script runs out the responder (if any)
answers, else the server answers 500 "script exhausted", so a test that
expected fewer calls fails loudly. Works for subprocesses too: it is a real
socket on 127.0.0.1 (a ThreadingHTTPServer: a slow reply does not hold up
other requests).

What happens to a POST to /v1/messages, in order:

1. body over ``max_request_bytes`` (32,000,000 by default; the real limit is
   "32 MB") -> 413 ``request_too_large``;
2. body not a JSON object, no ``messages`` list, or no integer ``max_tokens``
   -> 400 ``invalid_request_error``;
3. input over the context window -> 400 ``invalid_request_error``
   "prompt is too long: N tokens > W maximum"; input + ``max_tokens`` over it
   -> 400 "input length and `max_tokens` exceed context limit: N + M > W,
   decrease input length or `max_tokens` and try again" (the real wordings);
4. ``overload_next(n)`` still pending -> 529 ``overloaded_error``;
5. the next scripted step, else the responder, else 500 "script exhausted".

Steps 1-4 do not consume the script (nor call the responder). Every request,
rejected or not, is recorded in ``requests`` with its ``status`` and
``input_tokens`` (None when the body could not be read as JSON). ``latency``
seconds are added to every reply; a scripted ``delay`` is on top of it. A ``delay`` that is a
``threading.Event`` holds the reply until the test sets it (at most a minute): a client kept waiting
for exactly as long as the test needs, not for a guessed number of seconds.
POST /v1/messages/count_tokens answers ``{"input_tokens": N}`` with the same
counter, like the real endpoint (no window check, script untouched).

A scripted message whose ``usage.input_tokens`` is None (``message()``'s
default; every ``reply_*`` helper unless given ``input_tokens=``) is answered
with the counted input tokens of the request it answers, so a client can
correct its estimates from real figures; pass ``input_tokens=N`` to force N.

Token estimate (``count_tokens``): deterministic and deliberately
conservative -- it should count at least as many tokens as the real
tokenizer for English, code, JSON and CJK, so a client that fits under this
server's window fits under the real one. Per string (each rounded up on its own):

* ASCII: 1 token per 4 characters (``ceil(n / 4)``);
* CJK ideographs, kana, Hangul, CJK/fullwidth punctuation: 1 token each;
* characters outside the BMP (emoji, rare ideographs): 2 tokens each;
* any other non-ASCII (accented Latin, Cyrillic, Greek, Arabic, ...): 1 token
  per 2 characters.

What is counted: the ``system`` text; every message's text blocks; tool_use
names and their input as JSON (``ensure_ascii=False``); tool_result contents
(string or blocks) ; thinking text; each tool definition's name,
description and ``input_schema`` JSON. Images count 1,600 tokens (the real
cost of a full-size image); any other block type counts as its whole JSON.
Fixed overheads: 8 per request, 4 per message (and for a non-empty system),
3 per content block, 8 per tool definition, plus 346 once when tools are
present (the real tool-use system prompt). Keys such as ``cache_control``,
``id``/``tool_use_id`` and ``type`` are not counted beyond the block overhead.

Context windows: ``CONTEXT_WINDOWS`` maps model ids or fnmatch patterns to a
window (``claude-*`` -> 200,000); an exact id wins over a pattern, and a model
matching nothing gets ``DEFAULT_CONTEXT_WINDOW`` (200,000). An instance's
``context_window`` (constructor argument or attribute), when set, overrides
the table for every model.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)

DEFAULT_CONTEXT_WINDOW = 200_000
#: model id or fnmatch pattern -> context window in tokens (exact ids win over patterns).
CONTEXT_WINDOWS: dict[str, int] = {"claude-*": 200_000}
#: the real API's request size limit ("32 MB"), taken as the smaller reading.
MAX_REQUEST_BYTES = 32_000_000

ASCII_CHARS_PER_TOKEN = 4
OTHER_CHARS_PER_TOKEN = 2
ASTRAL_TOKENS_PER_CHAR = 2
REQUEST_OVERHEAD = 8
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3
TOOL_OVERHEAD = 8
TOOLS_SYSTEM_PROMPT = 346
IMAGE_TOKENS = 1_600

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_WIDE = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Kanbun, Katakana extensions
    "\u3200-\u4dbf"  # enclosed CJK, CJK compatibility, Extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # halfwidth and fullwidth forms
    "]"
)


def text_tokens(text: str) -> int:
    """The estimate for one string (see the module docstring)."""
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) / ASCII_CHARS_PER_TOKEN)
    others = _NON_ASCII.findall(text)
    ascii_chars = len(text) - len(others)
    wide = astral = 0
    for ch in others:
        if ord(ch) > 0xFFFF:
            astral += 1
        elif _WIDE.match(ch):
            wide += 1
    rest = len(others) - wide - astral
    return (math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + wide + ASTRAL_TOKENS_PER_CHAR * astral
            + math.ceil(rest / OTHER_CHARS_PER_TOKEN))


def _json_tokens(value: Any) -> int:
    return text_tokens(json.dumps(value, ensure_ascii=False))


def _content_tokens(content: Any) -> int:
    """A message's (or tool_result's) content: a string or a list of blocks."""
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if not isinstance(content, list):
        return _json_tokens(content)
    return sum(BLOCK_OVERHEAD + _block_tokens(block) for block in content)


def _block_tokens(block: Any) -> int:
    if isinstance(block, str):
        return text_tokens(block)
    if not isinstance(block, dict):
        return _json_tokens(block)
    kind = block.get("type")
    if kind == "text":
        return text_tokens(str(block.get("text", "")))
    if kind in ("tool_use", "server_tool_use"):
        return text_tokens(str(block.get("name", ""))) + _json_tokens(block.get("input", {}))
    if kind == "tool_result":
        return _content_tokens(block.get("content"))
    if kind == "thinking":
        return text_tokens(str(block.get("thinking", "")))
    if kind == "image":
        return IMAGE_TOKENS
    return _json_tokens(block)


def count_tokens(body: dict) -> int:
    """The input tokens of a Messages API request body: system + messages + tools.

    Deterministic and conservative; the rule is in the module docstring.
    """
    total = REQUEST_OVERHEAD
    system = body.get("system")
    if system:
        total += MESSAGE_OVERHEAD + _content_tokens(system)
    for msg in body.get("messages") or []:
        total += MESSAGE_OVERHEAD
        total += _content_tokens(msg.get("content")) if isinstance(msg, dict) else _json_tokens(msg)
    tools = body.get("tools") or []
    if tools:
        total += TOOLS_SYSTEM_PROMPT
    for tool in tools:
        total += TOOL_OVERHEAD
        if not isinstance(tool, dict):
            total += _json_tokens(tool)
            continue
        total += text_tokens(str(tool.get("name", ""))) + text_tokens(str(tool.get("description", "")))
        extra = {k: v for k, v in tool.items() if k not in ("name", "description", "cache_control", "type")}
        if extra:
            total += _json_tokens(extra)
    return total


def context_window_for(model: str | None) -> int:
    """The window of ``model`` from CONTEXT_WINDOWS (exact id, then the longest matching pattern)."""
    if model in CONTEXT_WINDOWS:
        return CONTEXT_WINDOWS[model]
    for pattern in sorted(CONTEXT_WINDOWS, key=len, reverse=True):
        if model is not None and fnmatch.fnmatchcase(model, pattern):
            return CONTEXT_WINDOWS[pattern]
    return DEFAULT_CONTEXT_WINDOW


def error_body(error_type: str, message_text: str) -> dict:
    return {"type": "error", "error": {"type": error_type, "message": message_text}}


def message(content: list[dict], *, stop_reason: str = "end_turn", model: str = "claude-sonnet-5-5",
            input_tokens: int | None = None, output_tokens: int = 20) -> dict:
    """A Messages API response. ``input_tokens=None``: the server fills in what it counted."""
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


Responder = Callable[[dict], Any]


class FakeAnthropic:
    def __init__(self, *, context_window: int | None = None, latency: float = 0.0,
                 max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.script: deque[tuple[int, Any, float]] = deque()
        self.requests: list[dict] = []
        #: overrides CONTEXT_WINDOWS for every model when set
        self.context_window = context_window
        #: seconds added to every reply
        self.latency = latency
        self.max_request_bytes = max_request_bytes
        #: exceptions raised by the responder (each also answered 500)
        self.errors: list[BaseException] = []
        self._responder: Responder | None = None
        self._overloads = 0
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # -- scripting --

    def reply(self, body: dict, *, status: int = 200, delay: float | threading.Event = 0.0) -> None:
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
        self.reply(error_body(etype, message_text), status=status)

    def overload_next(self, n: int = 1) -> None:
        """The next ``n`` requests (that pass validation) get 529 without consuming the script."""
        with self._lock:
            self._overloads += n

    def respond_with(self, fn: Responder | None) -> None:
        """Answer with ``fn(body)`` once the script is empty (None: stop).

        ``fn`` returns a reply body (status 200), ``(status, body)`` or
        ``(status, body, delay)``. A message whose usage.input_tokens is None
        gets the counted value, as for scripted replies.
        """
        self._responder = fn

    def window_for(self, model: str | None) -> int:
        return self.context_window if self.context_window is not None else context_window_for(model)

    @property
    def remaining(self) -> int:
        return len(self.script)

    @property
    def max_input_tokens(self) -> int:
        """The largest input-token count of any request seen (0 before any)."""
        with self._lock:
            return max((r["input_tokens"] for r in self.requests if r.get("input_tokens") is not None), default=0)

    # -- answering --

    def _validate(self, body: Any, tokens: int | None) -> tuple[int, dict] | None:
        if not isinstance(body, dict):
            return 400, error_body("invalid_request_error", "request body must be a JSON object")
        if not isinstance(body.get("messages"), list):
            return 400, error_body("invalid_request_error", "messages: Field required")
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            return 400, error_body("invalid_request_error", "max_tokens: Field required")
        window = self.window_for(body.get("model"))
        assert tokens is not None
        if tokens > window:
            return 400, error_body("invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum")
        if tokens + max_tokens > window:
            return 400, error_body(
                "invalid_request_error",
                f"input length and `max_tokens` exceed context limit: {tokens} + {max_tokens} > {window}, "
                "decrease input length or `max_tokens` and try again")
        return None

    def _next_step(self, body: dict) -> tuple[int, Any, float]:
        """Under the lock: the scripted step, else a marker to call the responder, else 500."""
        if self.script:
            return self.script.popleft()
        if self._responder is not None:
            return -1, self._responder, 0.0
        return 500, error_body("api_error", "fake server: script exhausted"), 0.0

    def _call_responder(self, fn: Responder, body: dict) -> tuple[int, Any, float]:
        try:
            out = fn(copy.deepcopy(body))
        except Exception as exc:  # noqa: BLE001 - shown to the test through .errors and a 500
            with self._lock:
                self.errors.append(exc)
            return 500, error_body("api_error", f"fake server: responder raised {exc!r}"), 0.0
        if isinstance(out, tuple):
            status, payload, *rest = out
            return status, payload, (rest[0] if rest else 0.0)
        return 200, out, 0.0

    @staticmethod
    def _fill_usage(payload: Any, tokens: int | None) -> Any:
        if not (isinstance(payload, dict) and payload.get("type") == "message"):
            return payload
        payload = copy.deepcopy(payload)
        usage = payload.setdefault("usage", {})
        if usage.get("input_tokens") is None:
            usage["input_tokens"] = tokens or 0
        usage.setdefault("output_tokens", 0)
        usage.setdefault("cache_creation_input_tokens", 0)
        usage.setdefault("cache_read_input_tokens", 0)
        return payload

    def _answer(self, path: str, headers: dict, raw: bytes | None) -> tuple[int, Any, float]:
        body: Any = None
        tokens: int | None = None
        if raw is not None:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if isinstance(body, dict):
                tokens = count_tokens(body)
        entry = {"path": path, "headers": headers, "body": body, "input_tokens": tokens, "status": None}
        with self._lock:
            self.requests.append(entry)
        if raw is None:
            status, payload, delay = 413, error_body(
                "request_too_large", "Request exceeds the maximum allowed number of bytes."), 0.0
        elif path.split("?")[0].rstrip("/").endswith("/count_tokens"):
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                status, payload, delay = 200, {"input_tokens": tokens}, 0.0
            else:
                status, payload, delay = 400, error_body("invalid_request_error", "messages: Field required"), 0.0
        else:
            rejected = self._validate(body, tokens)
            if rejected is not None:
                (status, payload), delay = rejected, 0.0
            else:
                with self._lock:
                    if self._overloads > 0:
                        self._overloads -= 1
                        step: tuple[int, Any, float] = (529, error_body("overloaded_error", "Overloaded"), 0.0)
                    else:
                        step = self._next_step(body)
                status, payload, delay = step
                if status == -1:
                    status, payload, delay = self._call_responder(payload, body)
                payload = self._fill_usage(payload, tokens)
        with self._lock:
            entry["status"] = status
        return status, payload, delay

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

            def _read_body(self) -> bytes | None:
                """The body, or None (drained) when it is over the size limit."""
                length = int(self.headers.get("content-length") or 0)
                if length <= fake.max_request_bytes:
                    return self.rfile.read(length)
                left = length
                while left > 0:
                    chunk = self.rfile.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    left -= len(chunk)
                return None

            def do_POST(self):
                raw = self._read_body()
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, delay = fake._answer(self.path, headers, raw)
                if isinstance(delay, threading.Event):
                    delay.wait(60)
                    delay = 0.0
                wait = fake.latency + delay
                if wait > 0:
                    time.sleep(wait)
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


def first_user_text(body: dict) -> str:
    """The text of a request's first message, its text blocks joined by blank lines."""
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "\n\n".join(b["text"] for b in content if b.get("type") == "text")
