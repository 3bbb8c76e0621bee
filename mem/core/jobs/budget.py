"""Token budgets for model requests: per-model limits, a conservative estimator, and the room left.

    budget = Budget.for_model("claude-sonnet-5-5", max_output=8_192)
    raw = request_tokens({"system": ..., "messages": ..., "tools": ...})
    if budget.over_by(raw): ...                          # shrink the request by that many tokens first
    budget.observe(raw, response.usage)                  # the server's count corrects later estimates

The window and the largest output of a model come from ``MODEL_LIMITS`` (fnmatch
patterns, the longest match wins; anything else gets ``DEFAULT_LIMITS``).
``MEM_CONTEXT_WINDOW`` and ``MEM_MAX_OUTPUT_TOKENS`` override them, for a proxy
or a model this table does not know.

The estimator counts more tokens than real tokenizers do for English, code,
JSON and CJK/Hangul/kana alike, so a request it passes fits; each reply's
usage then says how far off it was, and later estimates follow that ratio,
never dropping below ``MIN_CORRECTION`` of the conservative count.

Uses: nothing beyond the standard library (the agent loop imports it on every run,
before any model call).
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple


class Limits(NamedTuple):
    context_window: int
    max_output: int


#: model id pattern -> limits; the longest matching pattern wins.
MODEL_LIMITS: dict[str, Limits] = {
    "claude-*": Limits(200_000, 32_000),
    "claude-3-haiku*": Limits(200_000, 4_096),
    "claude-3-opus*": Limits(200_000, 4_096),
    "claude-3-5-*": Limits(200_000, 8_192),
}
DEFAULT_LIMITS = Limits(200_000, 8_192)

#: Left free in every window: estimates are bounds, not counts, and the real overheads vary.
SAFETY_FRACTION = 0.05
SAFETY_MIN = 1_000
#: How far a server's counts may pull our estimates down (real / estimated): no further than the
#: safety margin covers, since the next request may hold text our estimate fits less tightly.
MIN_CORRECTION = 0.95

# Fixed costs of a request's structure, at least what the Messages API charges.
REQUEST_OVERHEAD = 10
MESSAGE_OVERHEAD = 5
BLOCK_OVERHEAD = 4
TOOL_OVERHEAD = 10
#: The instructions the API adds when tools are offered (measured ~350; rounded up).
TOOLS_PREAMBLE = 400
IMAGE_TOKENS = 1_600

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_DIGIT = re.compile(r"[0-9]")
# Scripts whose tokenizers give about one token per character (or more): ideographs, kana, Hangul,
# CJK and fullwidth punctuation.
_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3200-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
)


def limits_for(model: str | None, env: Mapping[str, str] | None = None) -> Limits:
    """The context window and largest output of ``model``, environment overrides applied."""
    env = os.environ if env is None else env
    found = DEFAULT_LIMITS
    for pattern in sorted(MODEL_LIMITS, key=len, reverse=True):
        if model and fnmatch.fnmatchcase(model, pattern):
            found = MODEL_LIMITS[pattern]
            break
    window, output = found
    for name, value in (("MEM_CONTEXT_WINDOW", "window"), ("MEM_MAX_OUTPUT_TOKENS", "output")):
        raw = env.get(name, "").strip().replace("_", "")
        if raw.isdigit() and int(raw) > 0:
            if value == "window":
                window = int(raw)
            else:
                output = int(raw)
    return Limits(window, output)


def text_tokens(text: str) -> int:
    """A bound on the tokens of ``text``: ASCII 4 characters a token, more for punctuation and digits
    (code and JSON split finely), CJK, kana and Hangul 1.2 a character, other scripts 1 a character,
    characters outside the BMP 2 each."""
    if not text:
        return 0
    punct = len(_PUNCT.findall(text))
    digits = len(_DIGIT.findall(text))
    if text.isascii():
        return math.ceil(len(text) / 4 + punct / 4 + digits / 8)
    others = _NON_ASCII.findall(text)
    wide = astral = 0
    for ch in others:
        if ord(ch) > 0xFFFF:
            astral += 1
        elif _WIDE.match(ch):
            wide += 1
    rest = len(others) - wide - astral
    ascii_chars = len(text) - len(others)
    return math.ceil(ascii_chars / 4 + punct / 4 + digits / 8 + 1.2 * wide + 2 * astral + rest)


def _json_tokens(value: Any) -> int:
    return text_tokens(json.dumps(value, ensure_ascii=False, default=str))


def content_tokens(content: Any) -> int:
    """A message's or a tool result's content: a string or a list of blocks."""
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if not isinstance(content, list):
        return _json_tokens(content)
    return sum(BLOCK_OVERHEAD + _block_tokens(b) for b in content)


def _block_tokens(block: Any) -> int:
    if not isinstance(block, dict):
        return text_tokens(block) if isinstance(block, str) else _json_tokens(block)
    kind = block.get("type")
    if kind == "text":
        return text_tokens(str(block.get("text", "")))
    if kind in ("tool_use", "server_tool_use"):
        return text_tokens(str(block.get("name", ""))) + _json_tokens(block.get("input", {}))
    if kind == "tool_result":
        return content_tokens(block.get("content"))
    if kind == "thinking":
        return text_tokens(str(block.get("thinking", "")))
    if kind == "image":
        return IMAGE_TOKENS
    return _json_tokens(block)


def request_tokens(body: Mapping[str, Any]) -> int:
    """The conservative input-token estimate of a Messages API request (system, messages, tools).

    It walks the request as the API bills it, which is why it reads like tests/fakeapi.py's
    counter: that one stands for the server and must stay independent of this estimate, so the
    tests can hold one against the other.
    """
    total = REQUEST_OVERHEAD
    system = body.get("system")
    if system:
        total += MESSAGE_OVERHEAD + content_tokens(system)
    for msg in body.get("messages") or []:
        total += MESSAGE_OVERHEAD + (content_tokens(msg.get("content")) if isinstance(msg, dict) else _json_tokens(msg))
    tools = body.get("tools") or []
    if tools:
        total += TOOLS_PREAMBLE
    for tool in tools:
        total += TOOL_OVERHEAD + _json_tokens(tool)
    return total


def cut_to_fit(text: str, tokens: int, chars: int | None = None, note: str = "") -> str:
    """``text`` itself when it fits in ``tokens`` (and ``chars``), else its head and tail around a
    marker, the whole within both.

    The marker says how many characters were left out, then ``note``.
    """
    if text_tokens(text) <= tokens and (chars is None or len(text) <= chars):
        return text
    keep = len(text) if chars is None else max(0, min(len(text), chars - len(cut_middle(text, 0, note))))
    while True:
        cut = cut_middle(text, keep, note)
        if keep == 0 or text_tokens(cut) <= tokens:
            return cut
        # scale by the ratio measured on what we keep, then step down until it fits
        keep = max(0, min(keep - 1, int(keep * tokens / max(1, text_tokens(cut)))))


def cut_middle(text: str, keep: int, note: str = "") -> str:
    """The first two thirds and last third of ``keep`` characters of ``text``, a marker between."""
    head = keep * 2 // 3
    tail = keep - head
    marker = f"\n[… {len(text) - keep:,} characters cut{note}]\n"
    return text[:head] + marker + (text[len(text) - tail:] if tail else "")


class Budget:
    """The room a model's window leaves for a request, corrected by what the server counted."""

    def __init__(self, limits: Limits, max_output: int | None = None):
        self.limits = limits
        self.max_output = min(max_output or limits.max_output, limits.max_output)
        self.margin = max(SAFETY_MIN, int(limits.context_window * SAFETY_FRACTION))
        #: real tokens per estimated token, the highest seen (1.0 until a reply says otherwise)
        self.correction: float | None = None

    @classmethod
    def for_model(cls, model: str | None, max_output: int | None = None,
                  env: Mapping[str, str] | None = None) -> Budget:
        return cls(limits_for(model, env), max_output)

    @property
    def room(self) -> int:
        """The input tokens a request may carry: the window less the output reserved and the margin."""
        return max(0, self.limits.context_window - self.max_output - self.margin)

    def estimate(self, raw: int) -> int:
        """The corrected estimate of a request whose conservative count is ``raw``."""
        factor = 1.0 if self.correction is None else self.correction
        return math.ceil(raw * factor)

    def over_by(self, raw: int) -> int:
        """How many tokens (as ``request_tokens`` counts them) a request of ``raw`` must shed to fit."""
        factor = 1.0 if self.correction is None else self.correction
        return max(0, math.ceil(raw - self.room / factor))

    def observe(self, raw: int, usage: Any) -> None:
        """Learn from a reply: the input the server counted (cached parts included) against ``raw``.

        The highest ratio seen wins, so one request of easy text cannot talk a run
        into under-counting the next; it never goes below MIN_CORRECTION.
        """
        if isinstance(usage, dict) and usage.get("estimated"):
            return  # our own estimate (the server reported no usage): nothing to learn
        counted = 0
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
            if isinstance(value, int):
                counted += value
        if counted <= 0 or raw <= 0:
            return
        ratio = max(MIN_CORRECTION, counted / raw)
        self.correction = ratio if self.correction is None else max(self.correction, ratio)
