"""The one interface every model backend speaks, and the types it shares with the jobs.

A backend is one small module of this package (``anthropic``, ``openai``, ``claude_code``; ``bedrock``
and ``vertex`` are the anthropic one with the SDK's Bedrock and Vertex clients) with a class that
takes a ``ModelConfig`` and offers::

    backend.create(system=..., messages=[...], tools=[...], max_tokens=N,
                   tool_choice=..., output_config=..., timeout=...)  -> a reply
    backend.limits()                                                   -> budget.Limits

The request is written in the Messages API's shape (system text or text blocks, user and
assistant turns of text, ``tool_use`` and ``tool_result`` blocks, tool definitions with an
``input_schema``), the one the agent loop, the budgets and the token estimator already speak;
a backend for another protocol translates it on the way out and its answer on the way back.
A reply has ``content`` (blocks with ``type`` text or tool_use, a tool_use's ``input``
already parsed to a dict), ``text``, ``tool_calls``, ``usage`` (input/output tokens, or None
when the server reports none) and ``stop_reason`` (end_turn, tool_use, max_tokens...).

Every failure is a ``ModelError`` whose ``kind`` says what to do about it: overloaded (429,
529; ``retry_after`` when the server said), timeout, connection, status (any other refusal,
``status`` set), auth (401, 403), over_window (the request is larger than the model's window),
bad_response (an answer that is not one), not_for_recall (the claude-code backend, too slow for a
prompt). The agent loop retries the first three and 5xx.

uses: errors (MemError)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from mem.core.errors import MemError


class ModelError(MemError):
    """A model call failed: overloaded, timed out, refused, or answered nonsense."""

    def __init__(self, message: str, kind: str = "error", *, status: int | None = None,
                 retry_after: float | None = None, usage: dict | None = None):
        super().__init__(message)
        #: the tokens the failed call used, when the server reported them ({"input_tokens": ..., ...}):
        #: charged to the run's spending cap like a reply's
        self.usage = usage
        self.kind = kind  # overloaded | timeout | connection | status | auth | over_window | bad_response | not_for_recall
        self.status = status  # the HTTP status the server answered, when it answered one
        self.retry_after = retry_after  # seconds the server asked us to wait, when it said


class ModelConfig(NamedTuple):
    model: str
    api_key: str | None
    auth_token: str | None
    base_url: str | None
    timeout: float
    max_retries: int
    max_tokens: int
    temperature: float | None
    #: which backend module speaks to the server (a name of NAMES; claude-settings speaks anthropic;
    #: claude-code runs agent jobs as one Claude Code session, ``claude_code.run_agent``)
    backend: str = "anthropic"
    #: where the credentials came from, for people ("env ANTHROPIC_API_KEY"); never the secret
    source: str = ""
    #: the model's context window when configuration or the server said (None: budget's table)
    context_window: int | None = None
    #: a cloud backend's own settings (bedrock: region, AWS keys or profile, skip_auth; vertex:
    #: region, project_id, credentials_file, skip_auth); may hold secrets, like api_key
    options: dict | None = None


class Block:
    """One content block of a reply: ``text`` or ``tool_use`` (``id``, ``name``, ``input``)."""

    __slots__ = ("type", "text", "id", "name", "input")

    def __init__(self, type: str, text: str = "", id: str = "", name: str = "", input: Any = None):
        self.type = type
        self.text = text
        self.id = id
        self.name = name
        self.input = input

    def __repr__(self) -> str:
        return f"Block({self.type!r}, {self.text or self.name!r})"


class ToolCall(NamedTuple):
    id: str
    name: str
    input: Any  # the parsed arguments (a dict when the model sent an object)


class Reply:
    """A backend's answer: its blocks, usage (or None), why it stopped, and how usage was had."""

    __slots__ = ("content", "usage", "stop_reason", "model", "usage_estimated")

    def __init__(self, content: list, usage: Any, stop_reason: str | None, model: str = "",
                 usage_estimated: bool = False):
        self.content = content
        self.usage = usage
        self.stop_reason = stop_reason
        self.model = model
        #: True when the server reported no usage and ``usage`` is our estimate
        self.usage_estimated = usage_estimated

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.content if getattr(b, "type", None) == "text" and b.text)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [ToolCall(b.id, b.name, b.input) for b in self.content if getattr(b, "type", None) == "tool_use"]


def reply_text(response: Any) -> str:
    """The first text block of any backend's reply (the SDK's message included)."""
    for block in getattr(response, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""
