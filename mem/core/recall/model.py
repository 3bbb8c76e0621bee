"""The model selector, asked only where the offline ranker is unsure (``recall.ranker_is_sure``).

One call to a Sonnet-class model, over the standard library's HTTP client,
with the query, the manifest (exactly as ``mem scan`` prints it, minus what
this session has already seen) and the recently used tools; the answer is
structured JSON ``{"selected_memories": [...]}`` whose names are checked
against the manifest.

uses: jobs (llm, messages_lite, backends.openai), memdir.manifest (the manifest it is shown).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from mem.core.recall import DEFAULT_TIMEOUT  # the package's own constant: imported by the time this is
from mem.core.recall.surfacing import MAX_SURFACED

SELECTOR_SYSTEM = """\
You pick which saved memory files an AI coding assistant should be shown before it answers \
the user's message. Memories are notes from earlier conversations: facts about the user, \
guidance the user gave, project context, and pointers to outside resources.

You get the user's message and a list of memory files, one per line: type, file name, \
last-modified time and a one-line description. Choose by the description and the file name; \
you cannot see the contents.

Return the file names, exactly as listed, of at most {limit} memories that will clearly help \
with this message, most useful first. Every memory you choose costs the assistant attention, \
so leave out anything that is only loosely related or that you are unsure about. An empty \
list is the right answer when nothing clearly helps, and it is a common one.

- Judge by what the message is about, not by shared words. A memory that mentions the same \
tool, file or term but concerns a different task does not help.
- Be especially sparing with memories that describe the user in general or give an overview \
of the project: choose one only when the message calls for exactly that knowledge (for \
example, how to explain something to this user), not because it is broadly related.
- If recently used tools are listed, the assistant is already using them successfully: skip \
memories that only document how to use those tools, but do choose warnings, known problems \
and gotchas about them.

Answer with JSON only: {{"selected_memories": ["file.md", ...]}}."""

SELECTION_SCHEMA = {
    "type": "object",
    "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
    "required": ["selected_memories"],
    "additionalProperties": False,
}


def selector_message(query: str, manifest: str, recent_tools: Sequence[str]) -> list[dict]:
    """The manifest first, marked for the prompt cache (it changes only when a memory does or is
    surfaced), then the query and the tools, which change with every prompt."""
    tools = f"\n\nRecently used tools: {', '.join(recent_tools)}" if recent_tools else ""
    return [{"type": "text", "text": f"Available memories:\n{manifest}", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": f"Query: {query}{tools}"}]


class ModelSelection:
    __slots__ = ("names", "rejected", "model", "tokens")

    def __init__(self, names: list[str], rejected: list[str], model: str, tokens: dict):
        self.names = names  # valid manifest names, the model's order
        self.rejected = rejected  # names it gave that are not in the manifest
        self.model = model
        self.tokens = tokens


def select_with_model(
    query: str,
    headers: Sequence,
    recent_tools: Sequence[str],
    *,
    limit: int = MAX_SURFACED,
    model: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    log: Callable[[str], None] | None = None,
) -> ModelSelection:
    """Ask the model, by ``deadline`` (a ``time.monotonic()`` instant) if given; ModelError (with
    .kind) when its answer cannot be used. ``log`` takes the call's debug line.

    The request goes through the standard library's HTTP client, not the SDK,
    whose import alone takes seconds (see mem.core.jobs.messages_lite).
    """
    import json

    from mem.core.jobs import llm
    from mem.core.memdir.manifest import format_manifest

    config = llm.model_config("recall", model, timeout=timeout)
    if config.backend == "claude-code":
        raise llm.ModelError("the claude-code backend starts a Claude Code session per call (seconds): "
                             "too slow for a prompt, so recall does not use it", "not_for_recall")
    usage = llm.Usage()
    request = dict(
        system=SELECTOR_SYSTEM.format(limit=limit),
        messages=[{"role": "user", "content": selector_message(query, format_manifest(list(headers)), recent_tools)}],
        output_config={"format": {"type": "json_schema", "schema": SELECTION_SCHEMA}},
    )
    if config.backend == "openai":
        # also a standard-library client: no SDK on the hook's path
        from mem.core.jobs.backends.openai import OpenAIBackend

        started = time.monotonic()
        reply = OpenAIBackend(config).create(deadline=deadline, **request)
        usage.add(reply.usage)
        if log is not None:
            log(f"model {config.model} (openai) {time.monotonic() - started:.2f}s "
                f"in={reply.usage.get('input_tokens')} out={reply.usage.get('output_tokens')} stop={reply.stop_reason}")
    else:
        from mem.core.jobs import messages_lite

        reply = messages_lite.create(config, deadline=deadline, usage=usage, log=log, **request)
    text = reply.text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        raise llm.ModelError(f"the selector's answer is not JSON: {text[:80]!r}", "bad_response") from None
    names = data.get("selected_memories") if isinstance(data, dict) else None
    if not isinstance(names, list):
        raise llm.ModelError("the selector's answer has no selected_memories list", "bad_response")
    known = {h.relpath for h in headers}
    valid: list[str] = []
    rejected: list[str] = []
    for n in names:
        if isinstance(n, str) and n in known:
            if n not in valid:
                valid.append(n)
        else:
            rejected.append(n if isinstance(n, str) else json.dumps(n))
    if rejected and not valid:
        raise llm.ModelError(f"the selector named only files that are not in the manifest: {', '.join(rejected[:3])}",
                             "unknown_names")
    return ModelSelection(valid[:limit], rejected, config.model, usage.as_dict())
