"""How well recall does on a user's own memories: labelled cases, or cases mined from sessions.

A case is a prompt and the memory files relevant to it (none: nothing should
surface). Each selector — the offline ranker, and with an API key the model
path of ``mem recall`` — runs on every case over the memory directory, and
the report gives Recall@5, top-1 precision, no-result precision and the
median time per query.

Cases from transcripts: for each prompt a person typed in a session, the
memory files the agent then read (a Read tool call) or was shown (a recall
hook's context, or the client's own recalled memories) before the next
prompt. Prompts after which no memory file was read or shown are left out:
they say nothing about which memory would have helped.

uses: recall, transcripts, messages, memdir.manifest
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence

from mem.core.errors import UsageError
from mem.core.memdir.store import MemoryDir

#: A memory's header inside surfaced context: "Memory: /abs/path.md:" or "Memory (saved today): /abs/path.md:".
_SHOWN = re.compile(r"^Memory(?: \([^)\n]*\))?: (.+\.md):$", re.M)


class Case:
    """A prompt and the relpaths of the memories relevant to it."""

    __slots__ = ("query", "relevant", "source")

    def __init__(self, query: str, relevant: Sequence[str], source: str | None = None):
        self.query = query
        self.relevant = list(relevant)
        self.source = source  # where it came from: "file:line" or "transcript:line"

    def as_dict(self) -> dict:
        out = {"query": self.query, "relevant": self.relevant}
        if self.source:
            out["source"] = self.source
        return out


def load_cases(lines: Iterable[str], name: str) -> list[Case]:
    """Cases from JSON Lines: ``{"query": "...", "relevant": ["a.md", ...]}``; UsageError on a bad line."""
    cases = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{name}:{n}: not JSON: {exc}") from None
        except RecursionError:
            raise UsageError(f"{name}:{n}: not a case (JSON nested too deep)") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or not obj["query"].strip():
            raise UsageError(f"{name}:{n}: a case needs a non-empty \"query\" string")
        relevant = obj.get("relevant", [])
        if not isinstance(relevant, list) or not all(isinstance(r, str) and r for r in relevant):
            raise UsageError(f"{name}:{n}: \"relevant\" must be a list of memory file paths (empty: nothing relevant)")
        cases.append(Case(obj["query"], [os.path.normpath(r).replace(os.sep, "/") for r in relevant], f"{name}:{n}"))
    return cases


# --- cases from sessions --------------------------------------------------------------


def transcript_files(path: str) -> list[str]:
    """A transcript, or the ``*.jsonl`` sessions of a directory, oldest first."""
    if os.path.isfile(path):
        return [path]
    try:
        with os.scandir(path) as it:
            found = [(e.stat().st_mtime, e.path) for e in it if e.name.endswith(".jsonl") and e.is_file()]
    except OSError as exc:
        raise UsageError(f"cannot read the transcripts at {path}: {exc.strerror or exc}") from None
    return [p for _, p in sorted(found)]


def cases_from_transcripts(paths: Iterable[str], memory: MemoryDir, known: Iterable[str]) -> list[Case]:
    """One case per prompt after which the agent read or was shown memory files that still exist (``known``)."""
    known = set(known)
    cases = []
    for path in paths:
        cases.extend(_session_cases(path, memory, known))
    return cases


def _session_cases(path: str, memory: MemoryDir, known: set[str]) -> list[Case]:
    from mem.core import transcripts
    from mem.core.messages import prompt_text, tool_file
    from mem.core.recall import READ_TOOLS

    try:
        with open(path, "rb") as fh:
            raw = fh.read().split(b"\n")
    except OSError:
        return []
    relpath = _relpath_in(memory)
    prompts: list[tuple[int, str, set[str]]] = []  # (line, prompt, memory files read or shown after it)
    for m in transcripts.parse_lines(raw).messages:
        if m.is_human:
            # qwen-code adds hook context to the prompt's message as further text parts.
            texts = [b.text for b in m.blocks if b.type == "text"]
            prompts.append((m.line, prompt_text(m), _shown(texts[1:], relpath)))
        elif prompts and m.role == "assistant":
            for b in m.tool_uses():
                p = tool_file(b.input)
                if b.name in READ_TOOLS and p and (rel := relpath(p)):
                    prompts[-1][2].add(rel)
    # Claude Code keeps what a hook added (and its own recalled memories) in attachment lines,
    # which the conversation parser leaves out: each belongs to the prompt before it.
    for n, line in enumerate(raw, start=1):
        if b'"attachment"' not in line or b"Memory" not in line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        before = [p for p in prompts if p[0] < n]
        if before and isinstance(obj, dict) and obj.get("type") == "attachment" and not obj.get("isSidechain"):
            before[-1][2].update(_shown(_strings(obj.get("attachment")), relpath))
    return [Case(prompt, sorted(f for f in files if f in known), f"{path}:{line}")
            for line, prompt, files in prompts if prompt and any(f in known for f in files)]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _shown(texts: Iterable[str], relpath) -> set[str]:
    return {rel for t in texts for p in _SHOWN.findall(t) if (rel := relpath(p))}


def _relpath_in(memory: MemoryDir):
    """path -> its relpath in the memory directory (through a symbolic link too), or None."""
    roots = {memory.root, memory.real_root}

    def relpath(path: str) -> str | None:
        if not path or "\0" in path or not os.path.isabs(path):
            return None
        norm = os.path.normpath(path)
        for form in (norm, os.path.realpath(norm)):
            for root in roots:
                if form.startswith(root.rstrip(os.sep) + os.sep):
                    return os.path.relpath(form, root).replace(os.sep, "/")
        return None

    return relpath


# --- running the selectors -------------------------------------------------------------


def measure(cases: Sequence[Case], selections: Sequence[Sequence[str]]) -> dict:
    """Recall@5, top-1 precision, false-surface rate (and no-result precision, its complement) of
    what a selector chose for each case, with the cases it missed."""
    recalls, top1, surfaced_any, misses = [], [], [], []
    surfaced = precise = 0
    for case, got in zip(cases, selections):
        relevant = set(case.relevant)
        got = list(got)
        if relevant:
            found = relevant & set(got)
            recalls.append(len(found) / len(relevant))
            top1.append(bool(got) and got[0] in relevant)
            if len(found) < len(relevant) or not top1[-1]:
                misses.append({"query": case.query, "source": case.source, "missing": sorted(relevant - found),
                               "selected": got})
        else:
            surfaced_any.append(bool(got))
            if got:
                misses.append({"query": case.query, "source": case.source, "missing": [], "selected": got})
        surfaced += len(got)
        precise += len(relevant & set(got))

    def mean(xs: list) -> float | None:
        return sum(xs) / len(xs) if xs else None

    false_surface = mean(surfaced_any)
    return {
        "cases": len(cases),
        "with_relevant": len(recalls),
        "without_relevant": len(surfaced_any),
        "recall_at_5": mean(recalls),
        "top1_precision": mean(top1),
        "false_surface": false_surface,
        "no_result_precision": None if false_surface is None else 1 - false_surface,
        "precision": precise / surfaced if surfaced else None,
        "misses": misses,
    }


def run(memory: MemoryDir, cases: Sequence[Case], selector: str, *, limit: int = 5, model: str | None = None,
        timeout: float = 5.0, log: Callable[[str], None] | None = None) -> dict:
    """One selector over every case, as ``mem recall`` runs it (``offline``: the lexical ranker;
    ``model``: the model, asked for every case, falling back to the ranker when it fails)."""
    from mem.core import recall

    selections, times, paths = [], [], {}
    for case in cases:
        started = time.perf_counter()
        # the model selector is asked every time (mem recall asks it only where the ranker is unsure)
        result = recall.recall(memory, case.query, limit=limit, offline=selector == "offline", model=model,
                               timeout=timeout, always_ask=selector == "model", force=True, log=log)
        times.append(time.perf_counter() - started)
        selections.append([s.relpath for s in result.selected])
        path = result.strategy if not result.fallback_reason else f"{result.strategy} ({result.fallback_reason})"
        paths[path] = paths.get(path, 0) + 1
    report = {"selector": selector, **measure(cases, selections),
              "median_ms": round(statistics.median(times) * 1000, 2) if times else None,
              "paths": paths}
    report["results"] = [{"query": c.query, "relevant": c.relevant, "selected": s, "ms": round(t * 1000, 2)}
                         for c, s, t in zip(cases, selections, times)]
    return report


def unknown_files(cases: Sequence[Case], known: Iterable[str]) -> list[str]:
    """Relevant files named by cases that are not memories of the directory (a typo, or deleted since)."""
    known = set(known)
    return sorted({r for c in cases for r in c.relevant if r not in known})
