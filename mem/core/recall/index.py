"""The ranker's index over a memory directory, and its cache between prompts.

Each memory is matched on its name, description, body and its line in
MEMORY.md; the terms of each file are cached in the state directory, keyed by
its modification time and size, so a hook called on every prompt re-reads only
what changed.

uses: recall.ranker, memdir (files, frontmatter, layout, store).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from mem.core.memdir.store import MemoryDir


def read_body(path: str) -> str:
    from mem.core.recall import ranker
    from mem.core.memdir.frontmatter import strip_frontmatter

    from mem.core.memdir.files import read_bytes

    text = read_bytes(path, ranker.BODY_CHARS * 3 + 4096, head=True).decode("utf-8", "replace")
    return strip_frontmatter(text[1:] if text.startswith("\ufeff") else text)


INDEX_CACHE = "recall-index.marshal"


def offline_index(memory: MemoryDir, headers: Sequence, cache_dir: str | None = None):
    """A ranker index over headers scanned from ``memory`` (files that cannot be read are left out).

    Each memory is matched on its name, description, body and its line in
    MEMORY.md. With ``cache_dir``, the terms of each file are kept there
    between runs, keyed by its modification time and size (and the index
    lines by the index files' own), so a hook called on every prompt
    re-reads only what changed.
    """
    from mem.core.recall import ranker

    index_stamp = _index_stamp(memory) if headers else []
    cache_path = os.path.join(cache_dir, INDEX_CACHE) if cache_dir else None
    cached, cached_df, cached_stamp = _load_index_cache(cache_path) if cache_path else ({}, None, None)
    lines: dict[str, str] | None = None if index_stamp == cached_stamp else _index_lines(memory)
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
                lines = _index_lines(memory)
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


def _index_stamp(memory: MemoryDir) -> list:
    """(name, mtime, size) of each index file of ``memory``: the cached index lines are good while these hold."""
    from mem.core.memdir.layout import INDEX_NAME, TEAM_INDEX

    out = []
    for name in (INDEX_NAME, TEAM_INDEX):
        try:
            st = os.stat(os.path.join(memory.root, name))
            out.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((name, None, None))
    return out


#: A pointer line of MEMORY.md, read for ranking only: its title, target and hook. (memdir.index
#: parses pointers fully, but importing it builds dataclasses, which this path does not pay for.)
#: Compiled on first use (re's cache): compiling costs ~0.2 ms, and the hook reads MEMORY.md only when it changed.
_POINTER = r"^\s*[-*+]\s+\[((?:[^\]\\]|\\.)*)\]\(<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\)(.*)$"


def _index_lines(memory: MemoryDir) -> dict[str, str]:
    """relpath -> the title and hook of its pointer in ``memory``'s MEMORY.md (or team/MEMORY.md)."""
    from mem.core.memdir.files import read_text
    from mem.core.memdir.layout import INDEX_NAME, TEAM_INDEX

    lines: dict[str, str] = {}
    for name in (INDEX_NAME, TEAM_INDEX):
        try:  # a FIFO index blocked the hook, /dev/zero behind a link filled its memory: typed and capped
            text = read_text(os.path.join(memory.root, name), errors="replace", inside=memory.root)
        except OSError:
            continue
        prefix = name[: -len(INDEX_NAME)]
        for title, target, hook in re.findall(_POINTER, text, re.M):
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

    from mem.core.recall import ranker

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

    from mem.core.recall import ranker
    from mem.core.memdir.store import atomic_write

    try:
        atomic_write(path, marshal.dumps({"version": _cache_version(ranker), "docs": docs, "df": df,
                                          "index_stamp": index_stamp}))
    except (OSError, ValueError):
        pass  # a cache: recall works without it


def select_offline(memory: MemoryDir, query: str, headers: Sequence, limit: int, cache_dir: str | None = None,
                   exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """(relpath, score) of the memories of ``memory`` the ranker finds relevant, best first.

    ``headers`` is the whole manifest (so the cached index stays whole and word
    frequencies do not shift during a session); ``exclude`` holds the relpaths
    that are not candidates.
    """
    index = offline_index(memory, headers, cache_dir)
    return [(h.key, h.score) for h in index.rank(query, limit, exclude)]
