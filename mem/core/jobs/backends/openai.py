"""OpenAI-compatible chat completions (OpenAI, qwen-code's provider, llama.cpp, vLLM, Ollama,
LM Studio...) over the standard library.

Why no ``openai`` package: the recall hook runs on every prompt and must answer within its
deadline; ``import openai`` pulls in httpx and pydantic (about a second cold here, like the
anthropic SDK), http.client about 20 ms. One stdlib client serves the hook and the agent jobs.

The request arrives in the Messages shape (see ``mem.core.jobs.backends``) and is translated:
the system text becomes a system message, ``tool_use`` blocks an assistant's ``tool_calls``
(arguments as a JSON string), ``tool_result`` blocks ``tool`` messages, tool definitions
``{"type": "function", ...}``, ``tool_choice {"type": "none"}`` ``"none"``, a JSON-schema
``output_config`` ``response_format``. Prompt-cache marks are dropped (no caching here).

The answer is translated back. Providers differ, and each difference is handled here:

* tool-call arguments come as a JSON string: parsed; when one does not parse, the model is
  told so in one corrective turn and asked again; a second malformed answer is a
  ``bad_response`` error, and none of its calls is run (nothing half-done is written);
* no ``usage``: estimated with ``budget``'s estimator, marked ``estimated`` (and counted as
  such in ``--json``);
* 429 with ``Retry-After``: ``overloaded`` with ``retry_after``; 5xx keep their status (the
  agent loop retries both within its deadline); 401/403 ``auth``; a request over the window
  (400 "maximum context length", "exceeds the available context size"...) ``over_window``;
* small windows: ``limits()`` asks the server (``/v1/models``: vLLM's ``max_model_len``,
  ``context_length``, llama.cpp's ``meta.n_ctx_train``; llama.cpp's ``/props`` ``n_ctx``;
  Ollama's ``/api/show`` ``num_ctx``/``context_length``), else ``MEM_CONTEXT_WINDOW``, else
  ``DEFAULT_WINDOW``; ``MEM_CONTEXT_WINDOW`` below what the server reports lowers it. The
  largest output is a quarter of the window, at most the job's own, so extraction windows
  and agent budgets shrink to fit.

uses: backends.protocol (Block, ModelConfig, ModelError, Reply), backends.http, budget (estimates, Limits)
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from typing import Any

from mem.core.jobs.backends.protocol import Block, ModelConfig, ModelError, Reply
from mem.core.jobs.backends.http import error_text, exchange

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The window assumed when neither the server nor MEM_CONTEXT_WINDOW says (a common local n_ctx).
DEFAULT_WINDOW = 32_768
#: How long asking the server for its window may take (it is only an optimisation).
PROBE_TIMEOUT = 3.0
#: How servers word a request over the model's window (OpenAI/vLLM, llama.cpp, LM Studio, others).
OVER_WINDOW = re.compile(r"maximum context length|context[ _](size|length|window)|too many tokens|"
                         r"prompt is too long|exceed", re.I)
FIX_ARGUMENTS = ("Your tool call {name} had arguments that are not valid JSON ({error}). None of your "
                 "tool calls in that answer were run. Send them again, each with its arguments as one "
                 "valid JSON object.")
_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
         "content_filter": "refusal"}


class OpenAIBackend:
    """Chat completions for one ``ModelConfig`` (base URL ending in /v1, as OPENAI_BASE_URL is)."""

    name = "openai"

    def __init__(self, config: ModelConfig, env: Mapping[str, str] | None = None):
        self.config = config
        self.env = os.environ if env is None else env

    # -- the window --

    def limits(self):
        from mem.core.jobs.budget import Limits

        window = self.config.context_window or self.server_window()
        configured = _positive(self.env.get("MEM_CONTEXT_WINDOW"))
        if window is None:
            window = configured or DEFAULT_WINDOW
        elif configured:
            window = min(window, configured)
        output = _positive(self.env.get("MEM_MAX_OUTPUT_TOKENS")) or max(256, window // 4)
        return Limits(window, min(output, max(256, window // 2)))

    def server_window(self) -> int | None:
        """The context window the server reports for the model, or None when it says nothing."""
        base = self.base_url
        root = re.sub(r"/v1/?$", "", base)
        probes = (("GET", base, "/models", None, _from_models),
                  ("GET", root, "/props", None, _from_props),
                  ("POST", root, "/api/show", {"model": self.config.model}, _from_ollama))
        for method, url, path, body, read in probes:
            started = time.monotonic()
            try:
                answer = exchange(method, url, path, self._headers(), body, deadline=started + PROBE_TIMEOUT,
                                  budget=PROBE_TIMEOUT)
            except ModelError:
                continue
            if answer.status == 200 and isinstance(answer.data, dict):
                found = read(answer.data, self.config.model)
                if found:
                    return found
        return None

    @property
    def base_url(self) -> str:
        return (self.config.base_url or DEFAULT_BASE_URL).rstrip("/")

    def _headers(self) -> dict:
        headers = {"content-type": "application/json", "accept": "application/json",
                   "user-agent": "mem (stdlib client)"}
        key = self.config.api_key or self.config.auth_token
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    # -- one request --

    def create(self, *, deadline: float | None = None, **kwargs: Any) -> Reply:
        """One chat completion for a Messages-shaped request; a Reply, or ModelError."""
        started = time.monotonic()
        timeout = kwargs.pop("timeout", None) or self.config.timeout
        deadline = started + timeout if deadline is None else min(deadline, started + timeout)
        body = to_chat(kwargs, self.config)
        data = self._post(body, deadline, timeout)
        reply, bad = from_chat(data)
        if bad is not None:
            # One corrective turn: the model's malformed calls are shown back with what was wrong.
            # Its answer goes back as text, not as tool_calls: some servers parse the arguments of
            # the calls in a conversation and would refuse the malformed ones again.
            name, error = bad
            message = (data.get("choices") or [{}])[0].get("message") or {}
            body["messages"] = [*body["messages"], _assistant_echo(message),
                                {"role": "user", "content": FIX_ARGUMENTS.format(name=name, error=error)}]
            first = reply.usage
            data = self._post(body, deadline, timeout, used=first)
            reply, bad = from_chat(data)
            reply.usage = _sum_usage(first, reply.usage)  # both requests are the run's spending
            if bad is not None:
                raise ModelError(f"the model sent tool call arguments that are not JSON twice ({bad[0]}: {bad[1]})",
                                 "bad_response", usage=reply.usage)
        if reply.usage is None:
            from mem.core.jobs.budget import request_tokens, text_tokens

            out = text_tokens(reply.text) + sum(text_tokens(json.dumps(c.input)) for c in reply.tool_calls)
            reply.usage = {"input_tokens": request_tokens(kwargs), "output_tokens": out, "estimated": True}
            reply.usage_estimated = True
        return reply

    def _post(self, body: dict, deadline: float, budget: float, used: dict | None = None) -> dict:
        """The chat completion ``body`` asks for; a ModelError carries the usage the server reported
        for a failed call, plus ``used`` (an earlier call of the same turn)."""
        answer = exchange("POST", self.base_url, "/chat/completions", self._headers(), body,
                          deadline=deadline, budget=budget)
        status = answer.status
        if status == 400 and "response_format" in body and "response_format" in error_text(answer.data).lower():
            body.pop("response_format")  # a server without structured output: the prompt asks for JSON too
            return self._post(body, deadline, budget, used)
        if status != 200:
            text = error_text(answer.data)
            if status in (429, 529):
                kind = "overloaded"
            elif status in (401, 403):
                kind = "auth"
            elif status in (400, 413) and OVER_WINDOW.search(text):
                kind = "over_window"
            else:
                kind = "status"
            raise ModelError(f"model server answered {status}: {text}", kind, status=status,
                             retry_after=answer.retry_after, usage=_sum_usage(used, _chat_usage(answer.data)))
        data = answer.data
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise ModelError(f"the model server's answer is not a chat completion ({_shape(answer)})", "bad_response",
                             usage=_sum_usage(used, _chat_usage(data)))
        return data


def _shape(answer) -> str:
    """What an answer that is not a completion holds, by shape only: its status, content type and
    top-level keys (or length), never its values (a server that echoes the request would show the key)."""
    kind = (answer.headers.get("content-type") or "no content type").split(";")[0].strip()[:40]
    data = answer.data
    if isinstance(data, dict):
        keys = [str(k)[:20] for k in list(data)[:6]]
        what = f"an object with {', '.join(keys)}" if keys else "an empty object"
    elif isinstance(data, str):
        what = f"{len(data):,} characters of text"
    elif isinstance(data, list):
        what = f"a list of {len(data):,} items"
    else:
        what = type(data).__name__
    return f"{answer.status} {kind}, {what}"


# --- translation ---------------------------------------------------------------------------------


def to_chat(kwargs: Mapping[str, Any], config: ModelConfig) -> dict:
    """The chat-completions body for a Messages-shaped request."""
    messages: list[dict] = []
    system = kwargs.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
    for message in kwargs.get("messages") or []:
        messages.extend(_chat_messages(message))
    body: dict[str, Any] = {"model": kwargs.get("model") or config.model, "messages": messages,
                            "max_tokens": kwargs.get("max_tokens") or config.max_tokens}
    if config.temperature is not None:
        body["temperature"] = config.temperature
    tools = kwargs.get("tools") or []
    if tools:
        body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                          "parameters": t.get("input_schema") or {"type": "object"}}}
                         for t in tools]
        choice = kwargs.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in ("none", "auto", "any"):
            body["tool_choice"] = {"any": "required"}.get(choice["type"], choice["type"])
    fmt = ((kwargs.get("output_config") or {}).get("format") or {})
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "answer", "schema": fmt["schema"], "strict": True}}
    return body


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _chat_messages(message: Mapping[str, Any]) -> list[dict]:
    role, content = message.get("role"), message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    blocks = [b for b in content or [] if isinstance(b, dict)]
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks) or None}
        calls = [{"id": b.get("id"), "type": "function",
                  "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                 for b in blocks if b.get("type") == "tool_use"]
        if calls:
            out["tool_calls"] = calls
        return [out]
    # A user turn: tool results first (they must follow the assistant's calls), then its text.
    out_list = [{"role": "tool", "tool_call_id": b.get("tool_use_id"),
                 "content": ("Error: " if b.get("is_error") else "") + _result_text(b.get("content"))}
                for b in blocks if b.get("type") == "tool_result"]
    text = _text_of(blocks)
    if text or not out_list:
        out_list.append({"role": "user", "content": text})
    return out_list


def _result_text(content: Any) -> str:
    return content if isinstance(content, str) else _text_of(content)


def from_chat(data: dict) -> tuple[Reply, tuple[str, str] | None]:
    """(the Reply, None) for a chat completion, or (a Reply, (tool name, why)) when a tool call's
    arguments are not a JSON object."""
    choice = data["choices"][0] if isinstance(data["choices"][0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content: list[Block] = []
    text = message.get("content")
    if isinstance(text, list):  # some servers answer with parts
        text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
    if isinstance(text, str) and text:
        content.append(Block("text", text=text))
    bad = None
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        name = str(fn.get("name") or "")
        raw = fn.get("arguments")
        try:
            value = raw if isinstance(raw, dict) else json.loads(raw or "{}")
            if not isinstance(value, dict):
                raise ValueError(f"a JSON {type(value).__name__}, not an object")
        except ValueError as exc:
            bad = bad or (name, str(exc).split(":")[0][:100])
            value = None
        content.append(Block("tool_use", id=str(call.get("id") or f"call_{i}"), name=name, input=value))
    stop = choice.get("finish_reason")
    return Reply(content, _chat_usage(data), _STOP.get(stop, stop), str(data.get("model") or "")), bad


def _chat_usage(data: Any) -> dict | None:
    """A chat completion's (or an error answer's) usage as Messages-API fields, None when it has none."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
        return {"input_tokens": usage["prompt_tokens"], "output_tokens": usage.get("completion_tokens") or 0}
    return None


def _sum_usage(a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None:
        return a or b
    return {k: (a.get(k) or 0) + (b.get(k) or 0) for k in ("input_tokens", "output_tokens")}


def _assistant_echo(message: dict) -> dict:
    """The model's answer as plain text: what it said, and each call it tried, arguments as sent."""
    parts = [message["content"]] if isinstance(message.get("content"), str) and message["content"] else []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            parts.append(f"[tool call {fn.get('name')} with arguments: {str(fn.get('arguments'))[:2_000]}]")
    return {"role": "assistant", "content": "\n".join(parts) or "(no answer)"}


# --- what servers say about their window ---------------------------------------------------------


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str):
        raw = value.strip().replace("_", "")
        return int(raw) if raw.isdigit() and int(raw) > 0 else None
    return None


def _from_models(data: dict, model: str) -> int | None:
    entries = [e for e in data.get("data") or [] if isinstance(e, dict)]
    mine = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in mine:
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        for value in (entry.get("max_model_len"), entry.get("context_length"), entry.get("context_window"),
                      entry.get("max_context_length"), meta.get("n_ctx"), meta.get("n_ctx_train")):
            if _positive(value):
                return _positive(value)
    return None


def _from_props(data: dict, model: str) -> int | None:
    settings = data.get("default_generation_settings")
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _from_ollama(data: dict, model: str) -> int | None:
    # Ollama serves num_ctx tokens (its parameters), whatever the model was trained on.
    m = re.search(r"^num_ctx\s+(\d+)", str(data.get("parameters") or ""), re.M)
    if m:
        return int(m[1])
    info = data.get("model_info") if isinstance(data.get("model_info"), dict) else {}
    for key, value in info.items():
        if key.endswith(".context_length") and _positive(value):
            return _positive(value)
    return None
