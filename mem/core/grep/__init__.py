"""Search topic files and transcripts line by line, as grep does, over the text a person saw.

The package's parts: ``matcher`` (patterns and the raw-record prefilter),
``search`` (targets, the Searcher, transcript decoding), ``pool`` (forked
workers over many targets) and ``printers`` (grep's text and ripgrep's
``--json`` output, as strings: the CLI writes them). The names below are the
package's interface; the CLI, lint, scan and the agent's tools use them.

uses: grep.matcher, grep.search, grep.pool
"""

from mem.core.grep.matcher import Matcher, byte_spans
from mem.core.grep.pool import search_all
from mem.core.grep.search import (
    MEMORY_SUFFIX,
    TRANSCRIPT_SUFFIX,
    FileResult,
    Line,
    MessageRef,
    Options,
    Searcher,
    Target,
    dir_targets,
    message_text,
    parse_since,
    path_targets,
    timestamp_seconds,
    walk,
)

__all__ = [
    "MEMORY_SUFFIX", "TRANSCRIPT_SUFFIX", "FileResult", "Line", "Matcher", "MessageRef", "Options", "Searcher",
    "Target", "byte_spans", "dir_targets", "message_text", "parse_since", "path_targets", "search_all",
    "timestamp_seconds", "walk",
]
