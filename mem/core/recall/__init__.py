"""Recall: choose the few memories that help with a prompt, and surface them as Claude Code does.

Two selectors return at most ``limit`` (5) topic files:

* **offline** — the lexical ranker of ``mem.core.recall.ranker`` (no network, no SDK
  import), with a threshold so an unrelated prompt selects nothing. It always
  runs first.
* **model** — with a key, and only where the ranker is unsure (its best score
  between two bounds, see ``ranker_is_sure``): one call to a Sonnet-class
  model, over the standard library's HTTP client, with the query, the manifest
  (exactly as ``mem scan`` prints it, minus what this session has already
  seen) and the recently used tools; the answer is structured JSON
  ``{"selected_memories": [...]}`` whose names are checked against the
  manifest. A failure, or no answer by the deadline, leaves the ranker's pick.

Surfacing reproduces Claude Code byte for byte: each file read up to 200
lines / 4096 UTF-8 bytes with its truncation note, a header saying how old it
is, the whole wrapped in ``<system-reminder>``. A session (``session_id``)
remembers what it surfaced, in the state directory, so nothing is shown twice
and nothing more once 60 KiB (UTF-16 units, as Claude counts) went out.

This module is the flow (when to recall, which selector answers, what is
surfaced); its parts: ``ranker`` (the lexical ranker), ``index`` (the ranker's
index over a memory directory and its cache), ``surfacing`` (Claude Code's
blocks and the output budget), ``sessions`` (a session's state and what its
transcript says), ``model`` (the model selector, imported only when it is asked).

uses: recall's parts below, memdir (manifest, state, store), jobs.credentials, jobs.llm (ModelError), verifynotes (stale
notes), paths (the user-level memory).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from mem.core.errors import ConfigError
from mem.core.memdir.store import MemoryDir

# What callers use, re-exported: every hook that surfaces loads these modules. The ranker and the
# model selector are imported where they are used (the model selector only with a key).
from mem.core.recall.index import INDEX_CACHE, offline_index, read_body, select_offline
from mem.core.recall.sessions import (
    MAX_SESSION_BYTES, READ_TOOLS, SessionState, TranscriptFacts, _save_state, _save_state_if_possible, reset_session,
    session, session_file, transcript_facts,
)
from mem.core.recall.surfacing import (
    MAX_SURFACED, Surfaced, fit_to_budget, freshness_text, hook_block, memory_age_days, memory_header,
    read_for_surfacing, reminder,
)

DEFAULT_TIMEOUT = 5.0

SKIP_REASONS = (
    "empty_prompt", "one_word", "budget_exhausted", "no_memories", "all_surfaced", "auto_memory_disabled",
)


# --- when to recall ------------------------------------------------------------

_SPACELESS = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3041-\u309f\U00020000-\U0003134f]+"
_KATAKANA_RUN = r"[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+"


def word_count(text: str) -> int:
    """Words as a person counts them.

    Whitespace separates words, except in Chinese and Japanese, which are
    written without spaces: there a run of Han or hiragana characters counts
    as one word per two characters (the usual length of a word) and a run of
    katakana as one word (a loanword).
    """
    if text.isascii():
        return len(text.split())
    n = 0
    for chunk in text.split():
        if chunk.isascii():
            n += 1
            continue
        cjk = sum(max(1, len(run) // 2) for run in re.findall(_SPACELESS, chunk))
        rest = re.sub(_SPACELESS, " ", chunk)
        kata = re.findall(_KATAKANA_RUN, rest)
        cjk += len(kata)
        rest = re.sub(_KATAKANA_RUN, " ", rest)
        latin = sum(1 for part in rest.split() if any(c.isalnum() for c in part))
        n += (cjk + latin) if cjk else 1
    return n


def skip_reason(query: str, *, force: bool = False) -> str | None:
    """Why a prompt gets no recall (Claude skips single-word prompts), or None."""
    if not query.strip():
        return "empty_prompt"
    if not force and word_count(query) <= 1:
        return "one_word"
    return None


# --- which selector answers ----------------------------------------------------------

#: The offline ranker answers alone, and the model is not asked, when the best candidate's raw
#: score (``ranker.Index.scores``, before the ranker's own thresholds) is below SURE_NOTHING_BELOW
#: (nothing comes near being surfaced) or at least SURE_MATCH_FROM (a clear match); in between,
#: where the ranker errs, the model decides. Chosen on the tune half of tests/fixtures/recall-bench
#: (bench/recall.py reports the share of queries each way serves and how often the ranker is right
#: there): every tune query outside the band but one is answered right by the ranker.
SURE_NOTHING_BELOW = 0.5
SURE_MATCH_FROM = 1.0
#: How each prompt was served (``route`` in --json and in the debug line).
ROUTES = ("no-candidates", "offline", "offline-confident", "model", "deadline-fallback", "model-failed")


def ranker_is_sure(best_score: float) -> bool:
    """Whether the offline ranker's answer stands without the model, from its best raw score."""
    return best_score < SURE_NOTHING_BELOW or best_score >= SURE_MATCH_FROM


# --- the whole of it --------------------------------------------------------------------


class RecallResult:
    """What recall did: which selector ran, what it surfaced, or why nothing."""

    def __init__(self, strategy: str, query: str, memory: MemoryDir, *, recent_tools: Sequence[str] = (),
                 session_id: str | None = None):
        self.strategy = strategy  # model | offline | none
        self.route: str | None = None  # one of ROUTES; None when recall was skipped before choosing
        self.query = query
        self.memory_dir = memory.spelled  # shown as the client spells it
        self.selected: list[Surfaced] = []
        self.skipped: str | None = None
        self.fallback_reason: str | None = None
        self.fallback_detail: str | None = None
        self.model: str | None = None
        self.tokens: dict | None = None
        self.rejected: list[str] = []
        self.recent_tools = list(recent_tools)
        self.session_id = session_id
        self.session_bytes = 0  # surfaced in the session so far, this call included
        self.candidates = 0
        self.duration = 0.0

    @property
    def surfaced_bytes(self) -> int:
        return sum(s.chars for s in self.selected)

    def context(self, separator: str = "\n", *, wrapped: bool = True) -> str:
        return separator.join(hook_block(s, wrapped) for s in self.selected)

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "route": self.route,
            "query": self.query,
            "memory_dir": self.memory_dir,
            "selected": [s.as_dict() for s in self.selected],
            "skipped": self.skipped,
            "fallback_reason": self.fallback_reason,
            "fallback_detail": self.fallback_detail,
            "model": self.model,
            "tokens": self.tokens,
            "rejected": self.rejected,
            "recent_tools": self.recent_tools,
            "session_id": self.session_id,
            "surfaced_bytes": self.surfaced_bytes,
            "session_bytes": self.session_bytes,
            "candidates": self.candidates,
            "duration_s": round(self.duration, 3),
        }


def recall(
    memory: MemoryDir,
    query: str,
    *,
    limit: int = MAX_SURFACED,
    offline: bool = False,
    model: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    always_ask: bool = False,
    recent_tools: Sequence[str] = (),
    session_id: str | None = None,
    exclude: Iterable[str] = (),
    force: bool = False,
    max_chars: int | None = None,
    now_ms: int | None = None,
    log: Callable[[str], None] | None = None,
    enabled: bool = True,
    env: Mapping[str, str] | None = None,
) -> RecallResult:
    """Select and surface the memories relevant to ``query``.

    ``enabled`` False (the client's auto memory is off) skips recall, as Claude Code does.
    With a key, the model is asked only when the offline ranker is unsure (``ranker_is_sure``),
    or always with ``always_ask``; if it has not answered by ``deadline`` (a
    ``time.monotonic()`` instant) or within ``timeout``, the ranker's selection is surfaced.
    ``log`` takes the debug line of a model call (the caller gives it with --debug or MEM_DEBUG=1).
    ``env``: the environment variables that say whether a model is configured and where the
    user-level memory is (the process's by default); ``now_ms`` the clock's time (now by default).
    """
    started = time.monotonic()
    result = RecallResult("none", query, memory, recent_tools=recent_tools, session_id=session_id)
    reason = None if enabled else "auto_memory_disabled"
    reason = reason or skip_reason(query, force=force)
    if reason:
        result.skipped = reason
        return _done(result, started)
    with session(memory, session_id) as state:
        already = state.surfaced_chars if state else 0
        result.session_bytes = already
        if already >= MAX_SESSION_BYTES:
            result.skipped = "budget_exhausted"
            return _done(result, started)
        _select(result, memory, query, limit=limit, offline=offline, model=model, timeout=timeout, deadline=deadline,
                always_ask=always_ask, state=state, exclude=exclude, max_chars=max_chars, now_ms=now_ms,
                log=log, env=env)
        _select_user_level(result, query, limit=limit, state=state, exclude=exclude, max_chars=max_chars,
                           now_ms=now_ms, env=env)
        if state is not None and result.selected:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            for item in result.selected:
                state.add(item, now)
            _save_state_if_possible(state, memory)
        result.session_bytes = already + result.surfaced_bytes
    return _done(result, started)


def stale_notes(memory: MemoryDir, headers: Sequence) -> dict[str, str]:
    """relpath -> the note mem verify left for each of these memories, if made for its content now.

    No git and nothing imported unless mem verify has left notes: one small file is read.
    """
    path = memory.state.verify_notes
    if not os.path.exists(path):
        return {}
    from mem.core.verifynotes import StaleNotes

    from mem.core.memdir.files import read_bytes

    notes = StaleNotes(path)
    out = {}
    for h in headers:
        if h.relpath in notes:
            try:
                note = notes.note(h.relpath, read_bytes(h.path))
            except OSError:
                continue
            if note:
                out[h.relpath] = note
    return out


USER_LEVEL_LABEL = "User-level memory (the user's own, shared by all their projects):"


def _select_user_level(result: RecallResult, query: str, *, limit, state, exclude, max_chars, now_ms,
                       env=None) -> None:
    """After the project's own, the user-level memories (``mem promote``) for the slots left, labelled.

    The offline ranker chooses them, with its threshold: no second model call on the prompt's path.
    A project memory of the same relpath shadows the user-level one.
    """
    from mem.core.paths import user_memory_dir

    root = user_memory_dir(env)
    room = limit - len(result.selected)
    if room <= 0 or not os.path.isdir(root) or os.path.normpath(root) == os.path.normpath(result.memory_dir):
        return
    from mem.core.memdir import manifest
    from mem.core.memdir.state import cache_dir

    user = MemoryDir(root)
    cache = cache_dir(user)  # once: each asks realpath and a digest of the path
    headers = manifest.scan(root, cache_dir=cache)
    seen = {os.path.normpath(p) for p in exclude} | (state.surfaced_paths if state is not None else set())
    # a project memory of the same name (a promote --copy) shadows the user-level one
    not_candidates = {h.relpath for h in headers if os.path.normpath(h.path) in seen
                      or os.path.exists(os.path.join(result.memory_dir, h.relpath))}
    by_rel = {h.relpath: h for h in headers}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    items = []
    for rel, score in select_offline(user, query, headers, room, cache, not_candidates)[:room]:
        h = by_rel[rel]
        try:
            read = read_for_surfacing(h.path)
        except OSError:
            continue
        header = f"{USER_LEVEL_LABEL}\n{memory_header(h.path, h.mtime_ms, now)}"
        items.append(Surfaced(h.path, h.relpath, h.mtime_ms, h.type, h.description, score, header, read.content,
                              read.truncated, memory_age_days(h.mtime_ms, now)))
    if not items:
        return
    result.selected = result.selected + items
    if max_chars is not None:
        result.selected = fit_to_budget(result.selected, max_chars)
    if result.strategy == "none":
        result.strategy = "offline"
    result.skipped = None


def _done(result: RecallResult, started: float) -> RecallResult:
    result.duration = time.monotonic() - started
    return result


def _select(result: RecallResult, memory: MemoryDir, query: str, *, limit, offline, model, timeout, deadline,
            always_ask, state, exclude, max_chars, now_ms, log, env=None) -> None:
    from mem.core.memdir import manifest
    from mem.core.memdir.state import cache_dir

    root = result.memory_dir
    is_dir = os.path.isdir(root)
    cache = cache_dir(memory) if is_dir else None  # once: each asks realpath and a digest of the path
    headers = manifest.scan(root, cache_dir=cache) if is_dir else []
    if not headers:
        result.skipped, result.route = "no_memories", "no-candidates"
        return
    seen = {os.path.normpath(p) for p in exclude}
    if state is not None:
        seen |= state.surfaced_paths
    every = headers
    headers = [h for h in every if os.path.normpath(h.path) not in seen]
    result.candidates = len(headers)
    if not headers:
        result.skipped, result.route = "all_surfaced", "no-candidates"
        return
    by_rel = {h.relpath: h for h in headers}

    # The ranker always runs first (a few ms): it is the answer when the model is not asked,
    # fails, or is late. The whole manifest is indexed so word frequencies stay put in a session.
    from mem.core.recall.ranker import query_terms

    index = offline_index(memory, every, cache)
    q = query_terms(query)
    hits = index.scores(q, [d for d in index.docs if d.key in by_rel])  # once: the pick and how sure it is
    chosen: list[tuple[str, float | None]] = [(h.key, h.score) for h in index.worth_surfacing(q, hits, limit)]
    result.strategy, result.route = "offline", "offline"
    if not offline:
        from mem.core.jobs.credentials import has_credentials

        if not has_credentials(env):
            result.fallback_reason = "no_credentials"
        elif not always_ask and ranker_is_sure(hits[0].score if hits else 0.0):
            result.route = "offline-confident"
        else:
            from mem.core.jobs import llm
            from mem.core.recall.model import select_with_model

            try:
                picked = select_with_model(query, headers, result.recent_tools, limit=limit, model=model,
                                           timeout=timeout, deadline=deadline, log=log)
            except llm.ModelError as exc:
                result.fallback_reason = exc.kind
                result.fallback_detail = str(exc)
                result.route = ("deadline-fallback" if exc.kind == "timeout"
                                else "offline" if exc.kind == "not_for_recall" else "model-failed")
            except ConfigError as exc:  # a backend configured but unusable (a failing apiKeyHelper...)
                result.fallback_reason = "config"
                result.fallback_detail = str(exc)
                result.route = "model-failed"
            else:
                result.strategy, result.route = "model", "model"
                result.model = picked.model
                result.tokens = picked.tokens
                result.rejected = picked.rejected
                chosen = [(n, None) for n in picked.names]

    now = int(time.time() * 1000) if now_ms is None else now_ms
    notes = stale_notes(memory, [by_rel[rel] for rel, _ in chosen[:limit]])
    if notes and all(score is not None for _, score in chosen):
        # Of two memories the ranker scores alike, the one with a stale claim goes second.
        chosen = sorted(chosen, key=lambda c: (-c[1], c[0] in notes))
    items: list[Surfaced] = []
    for rel, score in chosen[:limit]:
        h = by_rel[rel]
        try:
            read = read_for_surfacing(h.path)
        except OSError:
            continue  # gone or unreadable since the scan: dropped, as Claude does
        content = read.content + (f"\n\n> {notes[rel]}" if rel in notes else "")
        items.append(Surfaced(
            h.path, h.relpath, h.mtime_ms, h.type, h.description, score,
            memory_header(h.path, h.mtime_ms, now), content, read.truncated,
            memory_age_days(h.mtime_ms, now),
        ))
    if max_chars is not None:
        items = fit_to_budget(items, max_chars)
    result.selected = items
