"""The tool-use loop the model jobs share.

A job (extract, dream, session update, remember, forget) gives a model a fixed
set of tools (jobs/tools.py: ``ToolBox``) and lets it work within a turn budget
and a wall-clock budget:

    toolbox = ToolBox(MemoryDir(root), policy=WritePolicy())
    result = run_agent(model, system=SYSTEM, messages=prompt, toolbox=toolbox, max_turns=5)
    result.created, result.updated, result.usage.as_dict()

A refused or failed tool call comes back to the model as a ``tool_result``
with ``is_error`` set, saying why, so the model can correct itself; it never
ends the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mem.core.jobs.tools import Log, ToolBox, ToolCall

#: The output a turn may take (capped further by the model's own limit).
MAX_OUTPUT = 8_192
#: What the results of one turn may add to the conversation together (further capped by the room
#: the token budget has left): a model asking for forty files at once gets the first ones whole.
TURN_RESULT_CHARS = 100_000
#: A result shorter than this is never elided: the note replacing it would save nothing.
ELIDE_MIN_CHARS = 400
#: Kept free by every ordinary request, so the finishing one (the request before, plus our
#: instruction to wrap up) always fits.
FINISH_RESERVE = 300


# --- the loop ------------------------------------------------------------------------------------


@dataclass
class AgentResult:
    """What one run did: its final words, its budget use, and every file it changed."""

    text: str
    turns: int
    stop_reason: str  # end_turn | max_turns | deadline | budget | run_budget | max_tokens | refusal | error | ...
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Any = None  # llm.Usage
    duration_s: float = 0.0
    error: str | None = None
    error_kind: str | None = None
    messages: list[dict] = field(default_factory=list)  # the conversation, the model's last answer included

    @property
    def files_written(self) -> list[str]:
        return [*self.created, *(p for p in self.updated if p not in self.created)]

    @property
    def refused(self) -> int:
        return sum(1 for c in self.tool_calls if not c.ok)

    @property
    def written_note(self) -> str:
        """``; it had written a.md, b.md`` for an error message, or nothing."""
        return f"; it had written {', '.join(self.files_written)}" if self.files_written else ""

    def timeout_if_unanswered(self, deadline_s: float) -> None:
        """A deadline reached before the model's first answer is a timeout error, not an empty run."""
        if self.error is None and self.stop_reason == "deadline" and self.turns == 0:
            self.error, self.error_kind = f"the time budget ({deadline_s:g}s) ran out before the model answered", "timeout"

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "turns": self.turns,
            "stop_reason": self.stop_reason,
            "created": list(self.created),
            "updated": list(self.updated),
            "deleted": list(self.deleted),
            "tool_calls": [c.as_dict() for c in self.tool_calls],
            "refused": self.refused,
            "usage": self.usage.as_dict() if self.usage is not None else None,
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
        }


_CACHE = {"type": "ephemeral"}


def _block_param(block: Any) -> dict | None:
    """A response content block as a request parameter (the assistant turn sent back)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text} if block.text else None
    if kind == "tool_use":
        value = block.input if isinstance(block.input, dict) else {}
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": value}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": getattr(block, "signature", "")}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    dump = getattr(block, "model_dump", None)
    return dump(exclude_none=True) if dump else None


def _with_cache_mark(message: dict) -> dict:
    """A copy of ``message`` whose last content block carries a cache breakpoint."""
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return message
    content = [*content[:-1], {**content[-1], "cache_control": _CACHE}]
    return {**message, "content": content}


#: The last request of a run whose token budget is spent (no tools offered): our words.
FINISH_NOW = ("This job's token budget is spent, so no more tools can be used. Do not ask for any. "
              "Answer now, in one or two sentences, with what you saved or changed and what, if anything, "
              "you had to leave undone.")


def _call_label(name: str, value: Any) -> str:
    """``read foo.md``: a tool call by its name and target, for the notes that replace its result."""
    if isinstance(value, dict):
        for key in ("file_path", "path", "pattern"):
            if isinstance(value.get(key), str) and value[key]:
                return f"{name} {value[key][:200]}"
    return name


def _answered(history: list[dict]) -> Iterator[tuple[dict, str, str]]:
    """(holder, key, label) of each large text the model has already answered, oldest first: a
    result it read, or a long input it sent (a file it wrote). The newest message is left out:
    the model has not seen its results yet."""
    for message in history[:-1]:
        if not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                yield block, "content", "result"
            elif block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                for key, value in block["input"].items():
                    if isinstance(value, str):
                        yield block["input"], key, "input"


def _elide_answered(history: list[dict], labels: dict[str, str], excess: int, *, apply: bool = True) -> int:
    """Replace answered results (and long inputs) with a short note, oldest first, until ``excess``
    tokens are saved or none is left; the tokens saved, as ``budget.request_tokens`` counts them.
    ``apply=False`` only counts what eliding could save."""
    from mem.core.jobs.budget import text_tokens

    saved = 0
    for holder, key, kind in list(_answered(history)):
        if saved >= excess:
            break
        value = holder[key]
        if len(value) < ELIDE_MIN_CHARS:
            continue
        if kind == "result":
            note = f"[result of {labels.get(holder.get('tool_use_id'), 'a tool call')} elided: {len(value):,} chars, already seen]"
        else:
            note = f"[{len(value):,} chars elided, already sent]"
        saved += text_tokens(value) - text_tokens(note)
        if apply:
            holder[key] = note
    return saved


def _finish_request(history: list[dict], labels: dict[str, str], *, drop_last_turn: bool) -> list[dict]:
    """The conversation for the last, tool-less turn, ending with our instruction to wrap up.

    The newest results are reduced to a note; with ``drop_last_turn`` the newest exchange is left
    out altogether (the request before it fitted, so this one does too) and only named.
    """
    finish = FINISH_NOW
    if drop_last_turn:
        ran = [labels.get(b.get("tool_use_id"), "a tool call") for b in history[-1]["content"]
               if b.get("type") == "tool_result"]
        history = history[:-2]
        finish += f" (The tools you asked for last were run: {', '.join(ran)}.)"
    last = history[-1]
    content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    blocks = []
    for block in content:
        if not drop_last_turn and block.get("type") == "tool_result":
            label = labels.get(block.get("tool_use_id"), "a tool call")
            block = {**block, "content": f"[result of {label} not shown: the token budget is spent]"}
        blocks.append(block)
    return [*history[:-1], {**last, "content": [*blocks, {"type": "text", "text": finish}]}]


def _request(system: list[dict], history: list[dict], tools: list[dict], max_tokens: int) -> dict:
    """The arguments of one model call; the newest turn carries a cache breakpoint."""
    messages = history if len(history) < 2 else [*history[:-1], _with_cache_mark(history[-1])]
    kwargs: dict[str, Any] = dict(system=system, messages=messages, max_tokens=max_tokens)
    if tools:
        kwargs["tools"] = tools
    return kwargs


def _retryable(exc: Any) -> bool:
    """Worth another try: overloaded, timed out, no connection, or a 5xx from the server."""
    if exc.kind in ("overloaded", "timeout", "connection"):
        return True
    return isinstance(exc.status, int) and exc.status >= 500


def run_agent(
    model: Any,
    *,
    system: str,
    messages: str | list[dict],
    toolbox: ToolBox,
    max_turns: int = 5,
    deadline_s: float | None = None,
    max_tokens: int = MAX_OUTPUT,
    retries: int = 0,
    log: Log | None = None,
    spend: Any = None,
) -> AgentResult:
    """Let ``model`` (an ``llm.Model``) work with ``toolbox`` until it stops or a budget runs out.

    A turn is one model call; the tools a turn asks for are run, even on the
    last turn, and their results go back in the next. The run stops when the
    model answers without a tool call (``end_turn``), after ``max_turns``
    (``max_turns``), when ``deadline_s`` seconds have passed (``deadline``, also
    when the budget runs out during a call, which is then cut short), or
    when a model call fails (``error``, with ``error`` and ``error_kind`` set;
    files already changed stay changed and are listed). Token usage is summed
    over the run. The system prompt (with the tool definitions before it) and
    the first user message are marked for prompt caching, and so is the newest turn, so each
    call reads the previous one's prefix from the cache.

    Every request is kept inside the model's token budget (``budget.Budget``:
    the context window less the output reserved and a margin, corrected by each
    reply's usage). When the next request would not fit, results the model has
    already answered (and long inputs it sent, such as the content of a file it
    wrote) are replaced by a one-line note, oldest first; one turn's
    results together may add at most ``TURN_RESULT_CHARS`` and what the budget
    has room for (the rest is cut, with a note saying so). When even that does
    not fit, the run ends with one last request offering no tools and asking the
    model to finish (``budget``); what it wrote before stays written.

    ``spend`` (a ``budget.Spend``) caps what the whole job may spend, over this run and the job's
    others: before every request its estimated input is checked against what is left (and its
    ``max_tokens`` lowered to the output left); a request that would go over is not sent, and the
    run stops (``run_budget``) with what it wrote kept.

    ``retries`` retries a call that failed in a way worth retrying (overloaded,
    timed out, no connection, a 5xx) after a short pause, within the deadline.
    Give such a run a model with ``max_retries=0``, so the SDK's own retries
    cannot overrun the wall-clock budget.
    """
    from mem.core.jobs.budget import Budget, cut_to_fit, request_tokens, text_tokens
    from mem.core.jobs.llm import ModelError, Usage

    started = time.monotonic()
    toolbox.deadline = None if deadline_s is None else started + deadline_s
    usage = Usage()
    limits = getattr(model, "limits", None)
    budget = Budget(limits(), max_tokens) if limits is not None else \
        Budget.for_model(getattr(getattr(model, "config", None), "model", None), max_tokens)
    labels: dict[str, str] = {}  # tool_use id -> "read foo.md", for the notes that replace results
    if isinstance(messages, str):
        history: list[dict] = [{"role": "user", "content": messages}]
    else:
        history = [dict(m) for m in messages]
    if history:
        history[0] = _with_cache_mark(history[0])
    # No mark on the tools: they precede the system prompt in the cached prefix, so its mark covers
    # them, and the API allows 4 marks (the first message may carry two: its stable part and the rest).
    tools = toolbox.definitions()
    system_blocks = [{"type": "text", "text": system, "cache_control": _CACHE}]
    calls_before = len(toolbox.calls)
    configured_timeout = getattr(getattr(model, "config", None), "timeout", None)

    def left() -> float | None:
        return None if deadline_s is None else deadline_s - (time.monotonic() - started)

    def call(turn: int, kwargs: dict, estimated: int) -> tuple[Any, ModelError | None, str | None]:
        """(response, failure, why it stopped short) for one turn, retries included.

        Why: ``deadline`` (cut by it) or ``run_budget`` (a failed attempt's usage, which the
        server reported and the run's cap is charged, left no room for the retry).
        """
        attempt = 0
        while True:
            remaining = left()
            cut = False
            if remaining is not None:
                kwargs["timeout"] = max(1.0, min(remaining, configured_timeout or remaining))
                cut = configured_timeout is None or kwargs["timeout"] < configured_timeout
            try:
                return model.create(**kwargs), None, None
            except ModelError as exc:
                failure = exc
            if failure.usage:  # the server counted this attempt: it is spent
                usage.add(failure.usage)
                if spend is not None:
                    spend.charge(failure.usage)
            if failure.kind == "timeout" and cut:
                return None, failure, "deadline"
            # a server that says when to come back (429 Retry-After) is believed, within the deadline
            pause = max(0.5 * 2 ** attempt, min(failure.retry_after or 0.0, 60.0))
            remaining = left()
            if attempt >= retries or not _retryable(failure) or (remaining is not None and remaining < pause + 1):
                return None, failure, None
            if spend is not None and spend.allow(estimated, kwargs["max_tokens"]) is None:
                if log is not None:
                    log(f"agent turn {turn}: {failure}; no retry: the run's budget is spent ({spend.stopped} "
                        f"tokens: {spend.input:,} in, {spend.output:,} out; the retry is ~{estimated:,} in)")
                return None, failure, "run_budget"
            attempt += 1
            if log is not None:
                log(f"agent turn {turn}: {failure}; retry {attempt}/{retries} in {pause:g}s")
            time.sleep(pause)

    turns = 0
    text = ""
    stop_reason = "end_turn"
    error = error_kind = None
    while True:
        if turns >= max_turns:
            stop_reason = "max_turns"
            break
        remaining = left()
        if remaining is not None and remaining <= 0:
            stop_reason = "deadline"
            break
        finishing = False
        kwargs = _request(system_blocks, history, tools, budget.max_output)
        raw = request_tokens(kwargs)
        if budget.over_by(raw + FINISH_RESERVE):
            saved = _elide_answered(history, labels, budget.over_by(raw + FINISH_RESERVE))
            kwargs = _request(system_blocks, history, tools, budget.max_output)
            raw = request_tokens(kwargs)
            if log is not None and saved:
                log(f"agent turn {turns + 1}: elided answered tool calls and results (~{saved:,} tokens)")
        if budget.over_by(raw + FINISH_RESERVE):
            finishing = True
            for drop in (False, True) if len(history) > 2 else (False,):
                kwargs = _request(system_blocks, _finish_request(history, labels, drop_last_turn=drop), tools,
                                  budget.max_output)
                kwargs["tool_choice"] = {"type": "none"}
                raw = request_tokens(kwargs)
                if not budget.over_by(raw):
                    break
            else:
                if log is not None:
                    log(f"agent turn {turns + 1}: the request does not fit the token budget")
                stop_reason = "budget"
                break
        estimated = max(raw, budget.estimate(raw))
        if spend is not None:
            allowed = spend.allow(estimated, kwargs["max_tokens"])
            if allowed is None:
                if log is not None:
                    log(f"agent turn {turns + 1}: stopped at the run's budget ({spend.stopped} tokens: "
                        f"{spend.input:,} in, {spend.output:,} out spent; the next request is ~{estimated:,} in)")
                stop_reason = "run_budget"
                break
            kwargs["max_tokens"] = allowed
        if log is not None:
            log(f"agent turn {turns + 1}/{max_turns}: {len(history)} messages"
                + (" (finish now: the token budget is spent)" if finishing else ""))
        response, failure, short = call(turns + 1, kwargs, estimated)
        if failure is not None:
            if short == "deadline":
                stop_reason = "deadline"  # the budget ran out while the model was answering
            elif short == "run_budget":
                stop_reason = "run_budget"
            else:
                stop_reason, error, error_kind = "error", str(failure), failure.kind
            break
        turns += 1
        if spend is not None:
            reply_usage = getattr(response, "usage", None)
            spend.charge(reply_usage if reply_usage is not None
                         else {"input_tokens": estimated, "output_tokens": kwargs["max_tokens"]})
        usage.add(getattr(response, "usage", None))
        budget.observe(raw, getattr(response, "usage", None))
        raw_blocks = getattr(response, "content", None) or []
        content = [b for b in (_block_param(x) for x in raw_blocks) if b is not None]
        text = "\n".join(b["text"] for b in content if b["type"] == "text")
        uses = [b for b in content if b["type"] == "tool_use"]
        if finishing:
            stop_reason = "budget"  # tools it asked for anyway are not run: it was told there are none
            break
        # what the model actually sent as input, even when it is not an object (the history gets {})
        raw_inputs = {getattr(x, "id", None): getattr(x, "input", None)
                      for x in raw_blocks if getattr(x, "type", None) == "tool_use"}
        if not uses:
            stop_reason = getattr(response, "stop_reason", None) or "end_turn"
            if content:
                history.append({"role": "assistant", "content": content})
            break
        history.append({"role": "assistant", "content": content})
        # What this turn's results may add: the room left once every answered result is elided.
        elidable = _elide_answered(history, labels, 1 << 62, apply=False)
        tokens_left = budget.room - FINISH_RESERVE - budget.estimate(
            request_tokens(_request(system_blocks, history, tools, budget.max_output)) - elidable) - 50 * len(uses)
        chars_left = TURN_RESULT_CHARS
        results = []
        for use in uses:
            labels[use["id"]] = _call_label(use["name"], raw_inputs.get(use["id"], use["input"]))
            result, is_error = toolbox.call(use["name"], raw_inputs.get(use["id"], use["input"]))
            fitted = cut_to_fit(result, max(0, tokens_left), max(0, chars_left),
                                "; this turn's share of the token budget is used up: ask for less, "
                                "e.g. with offset and limit")
            if fitted is not result and log is not None:
                log(f"agent turn {turns}: result of {labels[use['id']]} cut from {len(result):,} to {len(fitted):,} chars")
            tokens_left -= text_tokens(fitted) + 10
            chars_left -= len(fitted)
            block = {"type": "tool_result", "tool_use_id": use["id"], "content": fitted}
            if is_error:
                block["is_error"] = True
            results.append(block)
        history.append({"role": "user", "content": results})

    return AgentResult(
        text=text,
        turns=turns,
        stop_reason=stop_reason,
        created=list(toolbox.created),
        updated=list(toolbox.updated),
        deleted=list(toolbox.deleted),
        tool_calls=toolbox.calls[calls_before:],
        usage=usage,
        duration_s=time.monotonic() - started,
        error=error,
        error_kind=error_kind,
        messages=history,
    )
