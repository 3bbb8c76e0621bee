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

A job run's total spending is capped too (``Spend``): input and output tokens summed over its
requests, from each reply's usage, checked before every request against that request's estimate,
so a run stops before it would go over. ``caps_for`` reads ``--budget`` / ``MEM_BUDGET_<JOB>``
(``parse_budget``: ``500k``, ``in=1M,out=50k``, ``none``) over the job's default.

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


# --- the spending cap of one job run ---------------------------------------------------------------

#: A reply needs at least this many output tokens to be worth asking for: below it the run stops.
MIN_OUTPUT = 256
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kKmM]?)")
_UNITS = {"": 1, "k": 1_000, "m": 1_000_000}
BUDGET_SYNTAX = "SIZE (input tokens) or in=SIZE,out=SIZE; SIZE like 500k, 1.5M, 20000 or none"


class Caps(NamedTuple):
    """A run's total input and output tokens at most (None: no cap)."""

    input: int | None
    output: int | None


def parse_budget(text: str, default: Caps = Caps(None, None)) -> Caps:
    """``default`` with what ``text`` sets: ``500k`` (input tokens), ``in=1M,out=50k``, ``none`` (no cap).

    ValueError with a one-line reason for anything else (an empty part, an unknown key, a
    size of 0, a negative or fractional token count, a unit other than k or M).
    """
    text = text.strip()
    if not text:
        raise ValueError(f"empty budget; expected {BUDGET_SYNTAX}")
    if text.lower() == "none":
        return Caps(None, None)
    if "=" not in text:
        return default._replace(input=_size(text))
    found: dict[str, int | None] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("in", "out"):
            raise ValueError(f"bad budget part {part.strip()!r}; expected {BUDGET_SYNTAX}")
        if key in found:
            raise ValueError(f"budget names {key}= twice")
        found[key] = _size(value)
    return default._replace(**{"input" if k == "in" else "output": v for k, v in found.items()})


def _size(text: str) -> int | None:
    text = text.strip()
    if text.lower() == "none":
        return None
    from decimal import Decimal

    m = _SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"bad token count {text!r}; expected {BUDGET_SYNTAX}")
    value = Decimal(m.group(1)) * _UNITS[m.group(2).lower()]  # exact: 2.05M is 2,050,000, not 2,049,999.99…
    if value != value.to_integral_value() or value < 1:
        raise ValueError(f"bad token count {text!r}: a whole number of tokens, at least 1")
    return int(value)


def format_size(value: int | None) -> str:
    """``1M``, ``50k``, ``12,345`` or ``none``: a cap as people write it."""
    if value is None:
        return "none"
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if value >= size and value % (size // 10 if unit == "M" else size) == 0:
            return f"{value / size:g}{unit}"
    return f"{value:,}"


def caps_for(job: str, option: str | None, default: Caps, env: Mapping[str, str] | None = None) -> tuple[Caps, str]:
    """(the caps of one run of ``job``, where they came from): ``--budget``, else ``MEM_BUDGET_<JOB>``,
    else ``default``. ValueError naming the source for a value that does not parse."""
    env = os.environ if env is None else env
    name = f"MEM_BUDGET_{job.upper()}"
    for source, value in (("--budget", option), (name, env.get(name))):
        if value is not None and (source == "--budget" or value.strip()):
            try:
                return parse_budget(value, default), source
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None
    return default, "default"


def _counted_input(usage: Any) -> int:
    total = 0
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        if isinstance(value, int) and value > 0:
            total += value
    return total


class Spend:
    """What one job run has spent against its caps, checked before every request.

    Input is every input token a reply's usage counts, cached ones included (a cache read is
    cheaper, but it is still context the run sent); output is the reply's output tokens. A
    request is allowed only when its estimated input fits what is left of the input cap, and its
    ``max_tokens`` is lowered to what is left of the output cap, so a run never goes over either.
    ``reserve`` input tokens are held back for a later round (the dream's fix round).
    """

    def __init__(self, caps: Caps, source: str = "default"):
        self.caps = caps
        self.source = source
        self.input = 0
        self.output = 0
        self.requests = 0
        self.reserve = 0
        #: why the run stopped at its budget ("input" or "output"), None while it has not
        self.stopped: str | None = None

    def allow(self, estimated_input: int, max_tokens: int) -> int | None:
        """The ``max_tokens`` the next request may have, or None (``stopped`` set) when it would
        overrun the caps."""
        if self.caps.input is not None and self.input + estimated_input > self.caps.input - self.reserve:
            self.stopped = "input"
            return None
        if self.caps.output is not None:
            left = self.caps.output - self.output
            if left < min(MIN_OUTPUT, max_tokens):
                self.stopped = "output"
                return None
            max_tokens = min(max_tokens, left)
        return max_tokens

    def charge(self, usage: Any) -> None:
        """Count one reply's usage (or mem's estimate of it, for a server that reports none)."""
        self.requests += 1
        self.input += _counted_input(usage)
        out = usage.get("output_tokens") if isinstance(usage, dict) else getattr(usage, "output_tokens", None)
        if isinstance(out, int) and out > 0:
            self.output += out

    def as_dict(self) -> dict:
        return {"input_tokens": self.caps.input, "output_tokens": self.caps.output, "source": self.source,
                "spent_input_tokens": self.input, "spent_output_tokens": self.output,
                "stopped": self.stopped}
