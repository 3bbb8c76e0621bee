"""Recall: choose the few memories that help with a prompt, and surface them as Claude Code does.

Two selectors return at most ``limit`` (5) topic files:

* **offline** — the lexical ranker of ``mem.core.ranker`` (no network, no SDK
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
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence

from mem.core.errors import ConfigError, MemError
from mem.core.jscompat import cut16, len16  # JavaScript's .length (UTF-16 units), which Claude's limits count
from mem.core.memdir.layout import TEAM_PREFIX
from mem.core.memdir.store import MemoryDir

MAX_SURFACED = 5
MAX_MEMORY_LINES = 200
MAX_MEMORY_BYTES = 4096
MAX_SESSION_BYTES = 60 * 1024  # compared with UTF-16 units of surfaced content
DAY_MS = 86_400_000
DEFAULT_TIMEOUT = 5.0
#: A budget-shortened memory keeps at least this much of its text, or is left out.
MIN_SHORTENED_CHARS = 200
#: How much of a transcript's end is read for recent tools and files already read.
TRANSCRIPT_TAIL_BYTES = 512 * 1024
#: Session state files untouched this long are removed when a new session starts.
SESSION_MAX_AGE_S = 30 * 86400

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


# --- surfacing -----------------------------------------------------------------


# Plain classes rather than dataclasses in this module: defining a dataclass costs about half a
# millisecond at import, and recall runs on every prompt.


class FileRead:
    __slots__ = ("content", "truncated")

    def __init__(self, content: str, truncated: str | None):
        self.content = content
        self.truncated = truncated  # "lines" | "bytes" | None


def read_for_surfacing(path: str) -> FileRead:
    """Up to 200 lines and 4096 UTF-8 bytes of a file, with Claude Code's truncation note."""
    from mem.core.memdir.files import read_bytes

    # Enough for 200 lines of any sane memory; the byte cap cuts long before.
    want = MAX_MEMORY_BYTES * 4 + 65536
    data = read_bytes(path, want + 1, head=True, for_context=True)  # no second hard link, no NUL byte
    data, more = data[:want], len(data) > want
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if more:
        lines.append("")  # at least one more line exists past what was read
    total_lines = len(lines)
    kept: list[str] = []
    size = 0
    by_bytes = False
    for line in lines[:MAX_MEMORY_LINES]:
        if line.endswith("\r"):
            line = line[:-1]
        add = len(line.encode("utf-8")) + (1 if kept else 0)
        if size + add > MAX_MEMORY_BYTES:
            by_bytes = True
            break
        kept.append(line)
        size += add
    content = "\n".join(kept)
    if by_bytes or total_lines > MAX_MEMORY_LINES:
        reason = f"{MAX_MEMORY_BYTES} byte limit" if by_bytes else f"first {MAX_MEMORY_LINES} lines"
        content += truncation_note(reason, path)
        return FileRead(content, "bytes" if by_bytes else "lines")
    return FileRead(content, None)


def truncation_note(reason: str, path: str) -> str:
    return f"\n\n> This memory file was truncated ({reason}). Use the Read tool to view the complete file at: {path}"


def memory_age_days(mtime_ms: int, now_ms: int) -> int:
    # The age is the file's mtime, not the frontmatter's metadata.modified: Claude Code 2.1.330
    # reads both when it scans the memory directory, but its recall header ("This memory is N
    # days old") and its manifest use the mtime; the stamp only dates its memory list.
    return max(0, (now_ms - mtime_ms) // DAY_MS)


def freshness_text(days: int) -> str:
    if days <= 1:
        return ""
    return (
        f"This memory is {days} days old. Memories are point-in-time observations, not live state — "
        "claims about code behavior or file:line citations may be outdated. "
        "Verify against current code before asserting as fact."
    )


def memory_header(path: str, mtime_ms: int, now_ms: int) -> str:
    days = memory_age_days(mtime_ms, now_ms)
    if days <= 1:
        return f"Memory (saved {'today' if days == 0 else 'yesterday'}): {path}:"
    return f"{freshness_text(days)}\n\nMemory: {path}:"


def reminder(header: str, content: str) -> str:
    return f"<system-reminder>\n{header}\n\n{content}\n</system-reminder>"


def hook_block(item: Surfaced, wrapped: bool) -> str:
    """One memory as injected: Claude Code's exact ``<system-reminder>`` block, or plain text.

    Plain (the same block without its two tag lines: header, blank line, text;
    a team memory keeps its shared-content marking) is for a client that
    escapes hook context (``hooks.escapes_context``): there the tags would
    reach the model as ``&lt;system-reminder>`` noise around every memory.
    """
    block = item.block
    return block if wrapped else block.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>")


class Surfaced:
    """One memory as it is injected."""

    __slots__ = ("path", "relpath", "mtime_ms", "type", "description", "score", "header", "content",
                 "truncated", "age_days")

    def __init__(self, path: str, relpath: str, mtime_ms: int, type: str | None, description: str | None,
                 score: float | None, header: str, content: str, truncated: str | None, age_days: int):
        self.path = path
        self.relpath = relpath
        self.mtime_ms = mtime_ms
        self.type = type
        self.description = description
        self.score = score
        self.header = header
        self.content = content
        self.truncated = truncated  # "lines" | "bytes" | "budget" | None
        self.age_days = age_days

    def __repr__(self) -> str:
        return f"Surfaced({self.relpath!r}, chars={self.chars}, truncated={self.truncated!r})"

    @property
    def shared(self) -> bool:
        """A team memory (under team/), synced from teammates."""
        return self.relpath.startswith(TEAM_PREFIX)

    @property
    def block(self) -> str:
        from mem.core.tags import neutralise  # memory text cannot close or open the wrapper

        if self.shared:
            from mem.core.team.routing import wrap_team_content

            # Shared memory arrives marked as such, as Claude Code marks its team memory.
            return reminder(neutralise(self.header), wrap_team_content(self.content))
        return reminder(neutralise(self.header), neutralise(self.content))

    @property
    def chars(self) -> int:
        return len16(self.content)

    def as_dict(self) -> dict:
        from mem.core.jscompat import iso_utc_ms

        return {
            "path": self.path,
            "relpath": self.relpath,
            "type": self.type,
            "description": self.description,
            "score": None if self.score is None else round(self.score, 4),
            "mtime": iso_utc_ms(self.mtime_ms),
            "mtime_ms": self.mtime_ms,
            "age_days": self.age_days,
            "header": self.header,
            "content": self.content,
            "truncated": self.truncated,
            "chars": self.chars,
            "shared": self.shared,
        }


def fit_to_budget(items: list[Surfaced], max_chars: int, *, separator: str = "\n") -> list[Surfaced]:
    """Shorten memories so their blocks, joined, take at most ``max_chars`` UTF-16 units.

    Short memories stay whole; the long ones share what is left equally, each
    cut at a line break where one is near and closed with a note naming the
    full file. When even that cannot fit, memories are left out from the end.
    """
    items = list(items)
    while items:
        total = sum(len16(i.block) for i in items) + len16(separator) * (len(items) - 1)
        if total <= max_chars:
            return items
        overhead = sum(len16(i.block) - i.chars for i in items) + len16(separator) * (len(items) - 1)
        available = max_chars - overhead
        shares = _water_fill([i.chars for i in items], available)
        out = []
        ok = True
        for item, share in zip(items, shares):
            if share >= item.chars:
                out.append(item)
                continue
            shortened = _shorten(item, share)
            if shortened is None:
                ok = False
                break
            out.append(shortened)
        if ok:
            return out
        items = items[:-1]
    return []


def _water_fill(lengths: Sequence[int], available: int) -> list[int]:
    """Equal shares of ``available``; what a short item does not need goes to the others."""
    shares = [0] * len(lengths)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    left, remaining = available, len(lengths)
    for i in order:
        share = left // remaining if remaining else 0
        shares[i] = min(lengths[i], share)
        left -= shares[i]
        remaining -= 1
    return shares


def _shorten(item: Surfaced, share: int) -> Surfaced | None:
    note = truncation_note("hook output limit", item.path)
    # Cut the text the file gave, not a truncation note it already carried.
    body = item.content
    if item.truncated in ("lines", "bytes"):
        body = body[: body.rfind("\n\n> This memory file was truncated (")]
    room = share - len16(note)
    if room < MIN_SHORTENED_CHARS:
        return None
    head = cut16(body, room)
    cut = head.rfind("\n")
    if cut >= room * 3 // 4:
        head = head[:cut]
    head = head.rstrip()
    return Surfaced(
        item.path, item.relpath, item.mtime_ms, item.type, item.description, item.score,
        item.header, head + note, "budget", item.age_days,
    )


# --- the offline selector --------------------------------------------------------


def read_body(path: str) -> str:
    from mem.core import ranker
    from mem.core.memdir.frontmatter import strip_frontmatter

    from mem.core.memdir.files import read_bytes

    text = read_bytes(path, ranker.BODY_CHARS * 3 + 4096, head=True).decode("utf-8", "replace")
    return strip_frontmatter(text[1:] if text.startswith("\ufeff") else text)


INDEX_CACHE = "recall-index.marshal"


def offline_index(headers: Sequence, cache_dir: str | None = None):
    """A ranker index over scanned headers (files that cannot be read are left out).

    Each memory is matched on its name, description, body and its line in
    MEMORY.md. With ``cache_dir``, the terms of each file are kept there
    between runs, keyed by its modification time and size (and the index
    lines by the index files' own), so a hook called on every prompt
    re-reads only what changed.
    """
    from mem.core import ranker

    root = headers[0].path[: len(headers[0].path) - len(headers[0].relpath)] if headers else ""
    index_stamp = _index_stamp(root) if headers else []
    cache_path = os.path.join(cache_dir, INDEX_CACHE) if cache_dir else None
    cached, cached_df, cached_stamp = _load_index_cache(cache_path) if cache_path else ({}, None, None)
    lines: dict[str, str] | None = None if index_stamp == cached_stamp else _index_lines(root)
    docs = []
    fresh: dict[str, tuple] = {}
    changed = lines is not None and bool(cached)
    for h in headers:
        stamp = (h.mtime_ms, h.size)
        entry = cached.get(h.relpath)
        if isinstance(entry, tuple) and len(entry) == 3 and entry[0] == stamp:
            doc = ranker.Doc(h.relpath, entry[1], entry[2])
            if lines is not None:  # MEMORY.md changed: its lines are read again, the files are not
                doc.fields["index"], doc.lengths["index"] = ranker.count_terms(lines.get(h.relpath, ""))
        else:
            try:
                body = read_body(h.path)
            except OSError:
                continue
            if lines is None:
                lines = _index_lines(root)
            doc = ranker.make_doc(h.relpath, ranker.name_text(h.relpath, h.name), h.description or "", body,
                                  lines.get(h.relpath, ""))
            changed = True
        docs.append(doc)
        fresh[h.relpath] = (stamp, doc.fields, doc.lengths)
    changed = changed or len(fresh) != len(cached) or not isinstance(cached_df, dict)
    index = ranker.Index(docs, df=None if changed else cached_df)
    if cache_path and (changed or index_stamp != cached_stamp):
        _save_index_cache(cache_path, fresh, index.all_df(), index_stamp)
    return index


def _index_stamp(root: str) -> list:
    """(name, mtime, size) of each index file: the cached index lines are good while these hold."""
    from mem.core.memdir.layout import INDEX_NAME, TEAM_INDEX

    out = []
    for name in (INDEX_NAME, TEAM_INDEX):
        try:
            st = os.stat(os.path.join(root, name))
            out.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((name, None, None))
    return out


#: A pointer line of MEMORY.md, read for ranking only: its title, target and hook. (memdir.index
#: parses pointers fully, but importing it builds dataclasses, which this path does not pay for.)
_POINTER = re.compile(r"^\s*[-*+]\s+\[((?:[^\]\\]|\\.)*)\]\(<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\)(.*)$", re.M)


def _index_lines(root: str) -> dict[str, str]:
    """relpath -> the title and hook of its pointer in MEMORY.md (or team/MEMORY.md)."""
    from mem.core.memdir.files import read_text
    from mem.core.memdir.layout import INDEX_NAME, TEAM_INDEX

    lines: dict[str, str] = {}
    for name in (INDEX_NAME, TEAM_INDEX):
        try:  # a FIFO index blocked the hook, /dev/zero behind a link filled its memory: typed and capped
            text = read_text(os.path.join(root, name), errors="replace", inside=root)
        except OSError:
            continue
        prefix = name[: -len(INDEX_NAME)]
        for title, target, hook in _POINTER.findall(text):
            if "%" in target:
                from urllib.parse import unquote

                target = unquote(target)
            rel = os.path.normpath(target.split("#", 1)[0]).replace(os.sep, "/")
            lines.setdefault(prefix + rel, f"{title} {hook}")
    return lines


def _cache_version(ranker) -> tuple:
    import sys

    # marshal's format may change between Python versions; the terms, between mem versions.
    return (ranker.INDEX_VERSION, sys.version_info[:2])


def _load_index_cache(path: str) -> tuple[dict, dict | None, list | None]:
    """(relpath -> (stamp, fields, lengths), term -> document frequency, index files' stamp), or ({}, None, None)."""
    import marshal

    from mem.core import ranker

    try:
        with open(path, "rb") as fh:
            data = marshal.loads(fh.read())  # marshal.load(fh) reads in tiny pieces: 10x slower
    except (OSError, ValueError, EOFError, TypeError):
        return {}, None, None
    if not isinstance(data, dict) or data.get("version") != _cache_version(ranker):
        return {}, None, None
    docs, df = data.get("docs"), data.get("df")
    if not isinstance(docs, dict):
        return {}, None, None
    return docs, df if isinstance(df, dict) else None, data.get("index_stamp")


def _save_index_cache(path: str, docs: dict, df: dict, index_stamp: list) -> None:
    import marshal

    from mem.core import ranker
    from mem.core.memdir.store import atomic_write

    try:
        atomic_write(path, marshal.dumps({"version": _cache_version(ranker), "docs": docs, "df": df,
                                          "index_stamp": index_stamp}))
    except (OSError, ValueError):
        pass  # a cache: recall works without it


# --- the model selector -------------------------------------------------------------

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
    debug: bool = False,
) -> ModelSelection:
    """Ask the model, by ``deadline`` (a ``time.monotonic()`` instant) if given; ModelError (with
    .kind) when its answer cannot be used.

    The request goes through the standard library's HTTP client, not the SDK,
    whose import alone takes seconds (see mem.core.jobs.messages_lite).
    """
    import json

    import sys

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
        if debug:
            sys.stderr.write(f"mem: debug: model {config.model} (openai) {time.monotonic() - started:.2f}s "
                             f"in={reply.usage.get('input_tokens')} out={reply.usage.get('output_tokens')} "
                             f"stop={reply.stop_reason}\n")
    else:
        from mem.core.jobs import messages_lite

        reply = messages_lite.create(config, deadline=deadline, usage=usage, debug=debug, **request)
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


# --- per-session state ---------------------------------------------------------------

_SAFE_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"


def session_file(memory_dir: str, session_id: str) -> str:
    from mem.core.memdir.state import StateDir

    if re.fullmatch(_SAFE_ID, session_id):
        name = session_id
    else:
        import hashlib

        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", session_id).strip("-.")[:60]
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = f"{slug}-{digest}" if slug else digest
    return StateDir(memory_dir).recall_session(name)


class SessionState:
    __slots__ = ("session_id", "path", "surfaced", "created")

    def __init__(self, session_id: str, path: str, surfaced: list[dict] | None = None, created: bool = False):
        self.session_id = session_id
        self.path = path
        self.surfaced = [] if surfaced is None else surfaced  # {"path", "relpath", "chars", "time"}
        self.created = created

    @property
    def surfaced_paths(self) -> set[str]:
        return {os.path.normpath(s["path"]) for s in self.surfaced}

    @property
    def surfaced_chars(self) -> int:
        return sum(int(s.get("chars", 0)) for s in self.surfaced)

    def add(self, item: Surfaced, now_ms: int) -> None:
        from mem.core.jscompat import iso_utc_ms

        self.surfaced.append({"path": item.path, "relpath": item.relpath, "chars": item.chars, "time": iso_utc_ms(now_ms)})


def _load_state(path: str, session_id: str) -> SessionState:
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return SessionState(session_id, path, created=True)
    except (OSError, ValueError):
        data = {}  # a damaged state file: start the session over rather than fail the prompt
    surfaced = data.get("surfaced") if isinstance(data, dict) else None
    rows = [s for s in surfaced or [] if isinstance(s, dict) and isinstance(s.get("path"), str)]
    return SessionState(session_id, path, rows)


def _save_state(state: SessionState, memory_dir: str) -> None:
    import json

    from mem.core.memdir.store import atomic_write

    data = {
        "version": 1,
        "session_id": state.session_id,
        "memory_dir": memory_dir,
        "surfaced_chars": state.surfaced_chars,
        "surfaced": state.surfaced,
    }
    os.makedirs(os.path.dirname(state.path), mode=0o700, exist_ok=True)
    atomic_write(state.path, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))


def _save_state_if_possible(state: SessionState, memory_dir: str) -> None:
    """Save the session's state unless the state dir refuses writes: the memories are surfaced all the same."""
    from mem.core.errors import is_storage_error

    try:
        _save_state(state, memory_dir)
    except OSError as exc:
        if not is_storage_error(exc):
            raise


@contextlib.contextmanager
def session(memory_dir: str, session_id: str | None) -> Iterator[SessionState | None]:
    """The session's state, locked for the whole recall (concurrent hooks queue up)."""
    if not session_id:
        yield None
        return
    from mem.core.errors import is_storage_error
    from mem.core.memdir.store import file_lock

    path = session_file(memory_dir, session_id)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(path + ".lock"))
        except OSError as exc:
            if not is_storage_error(exc):
                raise
            # The state dir refuses writes (read-only, full): recall all the same, from what it holds.
            yield _load_state(path, session_id)
            return
        state = _load_state(path, session_id)
        yield state
    if state.created:
        _prune_sessions(os.path.dirname(path))


def _prune_sessions(directory: str) -> None:
    cutoff = time.time() - SESSION_MAX_AGE_S
    try:
        with os.scandir(directory) as it:
            old = [e.path for e in it if e.name.endswith(".json") and e.stat().st_mtime < cutoff]
    except OSError:
        return
    for path in old:
        for p in (path, path + ".lock"):
            with contextlib.suppress(OSError):
                os.unlink(p)


def reset_session(memory: MemoryDir, session_id: str) -> tuple[str, bool]:
    """Forget what a session surfaced (after a compaction); (state file, whether it existed)."""
    memory_dir = memory.spelled
    from mem.core.memdir.store import file_lock

    if not session_id:
        raise MemError("empty session id")
    path = session_file(memory_dir, session_id)
    with file_lock(path + ".lock"):
        try:
            os.unlink(path)
            return path, True
        except FileNotFoundError:
            return path, False


# --- what a transcript tells us -------------------------------------------------------


class TranscriptFacts:
    __slots__ = ("recent_tools", "touched", "version")

    def __init__(self, recent_tools: list[str], touched: set[str], version: tuple[int, ...] | None = None):
        self.recent_tools = recent_tools
        self.touched = touched  # files tools read or wrote since the last compaction
        self.version = version  # the client's, as its lines say (hooks.escapes_context)


READ_TOOLS = frozenset({"Read", "read_file", "read_many_files"})


def transcript_facts(path: str, prompt: str | None, memory_dir: str) -> TranscriptFacts:
    """Recently used successful tools, and memory files tools already touched, from a transcript's tail."""
    from mem.core import transcripts
    from mem.core.messages import prompt_text, tool_file

    from mem.core.memdir.files import open_regular

    with os.fdopen(open_regular(path), "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        start = max(0, size - TRANSCRIPT_TAIL_BYTES)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # the first one is cut
    messages = transcripts.parse_lines(lines).messages
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].kind == "compact_boundary":
            messages = messages[i + 1:]
            break
    human = [i for i, m in enumerate(messages) if m.is_human]
    span = messages
    # The client may already have written this prompt: then the tools that count are the ones before it.
    if human and prompt is not None and prompt_text(messages[human[-1]]) == prompt.strip() \
            and not any(m.tool_uses() for m in messages[human[-1] + 1:]):
        span = messages[: human[-1]]
    tools = transcripts.recent_successful_tools(span)
    root = os.path.normpath(memory_dir)
    touched: set[str] = set()
    for m in messages:
        if m.role != "assistant":
            continue
        for b in m.tool_uses():
            if b.name not in READ_TOOLS and b.name not in transcripts.WRITE_TOOLS:
                continue
            p = tool_file(b.input)
            if p:
                norm = os.path.normpath(p)
                if norm.startswith(root + os.sep):
                    touched.add(norm)
    from mem.core.hooks import version_in_lines

    return TranscriptFacts(tools, touched, version_in_lines(lines))


# --- the whole of it --------------------------------------------------------------------


class RecallResult:
    """What recall did: which selector ran, what it surfaced, or why nothing."""

    def __init__(self, strategy: str, query: str, memory_dir: str, *, recent_tools: Sequence[str] = (),
                 session_id: str | None = None):
        self.strategy = strategy  # model | offline | none
        self.route: str | None = None  # one of ROUTES; None when recall was skipped before choosing
        self.query = query
        self.memory_dir = memory_dir
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
    debug: bool = False,
    enabled: bool = True,
) -> RecallResult:
    """Select and surface the memories relevant to ``query``.

    ``enabled`` False (the client's auto memory is off) skips recall, as Claude Code does.
    With a key, the model is asked only when the offline ranker is unsure (``ranker_is_sure``),
    or always with ``always_ask``; if it has not answered by ``deadline`` (a
    ``time.monotonic()`` instant) or within ``timeout``, the ranker's selection is surfaced.
    """
    started = time.monotonic()
    memory_dir = memory.spelled  # shown as the client spells it
    result = RecallResult("none", query, memory_dir, recent_tools=recent_tools, session_id=session_id)
    reason = None if enabled else "auto_memory_disabled"
    reason = reason or skip_reason(query, force=force)
    if reason:
        result.skipped = reason
        return _done(result, started)
    with session(memory_dir, session_id) as state:
        already = state.surfaced_chars if state else 0
        result.session_bytes = already
        if already >= MAX_SESSION_BYTES:
            result.skipped = "budget_exhausted"
            return _done(result, started)
        _select(result, query, limit=limit, offline=offline, model=model, timeout=timeout, deadline=deadline,
                always_ask=always_ask, state=state, exclude=exclude, max_chars=max_chars, now_ms=now_ms,
                debug=debug)
        _select_user_level(result, query, limit=limit, state=state, exclude=exclude, max_chars=max_chars,
                           now_ms=now_ms)
        if state is not None and result.selected:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            for item in result.selected:
                state.add(item, now)
            _save_state_if_possible(state, memory_dir)
        result.session_bytes = already + result.surfaced_bytes
    return _done(result, started)


def stale_notes(root: str, headers: Sequence) -> dict[str, str]:
    """relpath -> the note mem verify left for each of these memories, if made for its content now.

    No git and nothing imported unless mem verify has left notes: one small file is read.
    """
    from mem.core.memdir.state import StateDir

    path = StateDir(root).verify_notes
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


def select_offline(query: str, headers: Sequence, limit: int, cache_dir: str | None = None,
                   exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """(relpath, score) of the memories the ranker finds relevant, best first.

    ``headers`` is the whole manifest (so the cached index stays whole and word
    frequencies do not shift during a session); ``exclude`` holds the relpaths
    that are not candidates.
    """
    index = offline_index(headers, cache_dir)
    return [(h.key, h.score) for h in index.rank(query, limit, exclude)]


USER_LEVEL_LABEL = "User-level memory (the user's own, shared by all their projects):"


def _select_user_level(result: RecallResult, query: str, *, limit, state, exclude, max_chars, now_ms) -> None:
    """After the project's own, the user-level memories (``mem promote``) for the slots left, labelled.

    The offline ranker chooses them, with its threshold: no second model call on the prompt's path.
    A project memory of the same relpath shadows the user-level one.
    """
    from mem.core.paths import user_memory_dir

    root = user_memory_dir()
    room = limit - len(result.selected)
    if room <= 0 or not os.path.isdir(root) or os.path.normpath(root) == os.path.normpath(result.memory_dir):
        return
    from mem.core.memdir import manifest
    from mem.core.memdir.state import cache_dir

    headers = manifest.scan(root, cache_dir=cache_dir(root))
    seen = {os.path.normpath(p) for p in exclude} | (state.surfaced_paths if state is not None else set())
    # a project memory of the same name (a promote --copy) shadows the user-level one
    not_candidates = {h.relpath for h in headers if os.path.normpath(h.path) in seen
                      or os.path.exists(os.path.join(result.memory_dir, h.relpath))}
    by_rel = {h.relpath: h for h in headers}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    items = []
    for rel, score in select_offline(query, headers, room, cache_dir(root), not_candidates)[:room]:
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


def _select(result: RecallResult, query: str, *, limit, offline, model, timeout, deadline, always_ask, state,
            exclude, max_chars, now_ms, debug) -> None:
    from mem.core.memdir import manifest
    from mem.core.memdir.state import cache_dir

    root = result.memory_dir
    headers = manifest.scan(root, cache_dir=cache_dir(root)) if os.path.isdir(root) else []
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
    from mem.core.ranker import query_terms

    index = offline_index(every, cache_dir(root))
    q = query_terms(query)
    hits = index.scores(q, [d for d in index.docs if d.key in by_rel])  # once: the pick and how sure it is
    chosen: list[tuple[str, float | None]] = [(h.key, h.score) for h in index.worth_surfacing(q, hits, limit)]
    result.strategy, result.route = "offline", "offline"
    if not offline:
        from mem.core.jobs import llm

        if not llm.has_credentials():
            result.fallback_reason = "no_credentials"
        elif not always_ask and ranker_is_sure(hits[0].score if hits else 0.0):
            result.route = "offline-confident"
        else:
            try:
                picked = select_with_model(query, headers, result.recent_tools, limit=limit, model=model,
                                           timeout=timeout, deadline=deadline, debug=debug)
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
    notes = stale_notes(root, [by_rel[rel] for rel, _ in chosen[:limit]])
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
