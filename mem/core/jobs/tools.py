"""The confined tool set the model jobs offer a model: read, grep, glob, ls, write, edit, delete.

    toolbox = ToolBox(MemoryDir(root), policy=WritePolicy())
    run_agent(model, system=SYSTEM, messages=prompt, toolbox=toolbox, max_turns=5)  # jobs/agent.py

``read``, ``grep``, ``glob`` and ``ls`` see the memory directory plus any extra
read-only roots a job names (the transcripts directory, say); ``write`` and
``edit`` (and ``delete``, only when the policy allows it) change the memory
directory and nothing else, through ``MemoryDir.write``/``delete``, so
containment, the secret scanner and atomic replacement apply to the model as to
every other writer. There is no shell and no network.

Every path is checked on every call: relative paths are taken from the memory
directory, absolute ones must lie inside a root, ``..`` escapes, symbolic links
leading out and dangling links are refused. A refused or failed call comes back
to the model as a ``tool_result`` with ``is_error`` set, saying why, so the
model can correct itself; it never ends the run.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from mem.core.errors import MemError, SecretError
from mem.core.jscompat import glob_to_regex
from mem.core.memdir.files import OVERLONG, capped_lines, open_regular, read_bytes
from mem.core.memdir.layout import INDEX_NAME, UNINDEXED_DIRS, is_temp_name
from mem.core.memdir.files import within
from mem.core.memdir.store import MemoryDir

#: What a single tool result may carry back to the model.
MAX_RESULT_CHARS = 60_000
#: read: lines per call by default and at most, and the cut for one long line.
READ_DEFAULT_LINES = 2_000
READ_MAX_LINE_CHARS = 2_000
#: grep / glob / ls: how many lines or entries come back.
GREP_MAX_MATCHES = 200
GREP_MAX_LINE_CHARS = 250
GREP_MAX_FILES = 5_000
#: search_transcripts: matches per call, and the excerpt shown around each.
TRANSCRIPT_MATCHES = 40
EXCERPT_CHARS = 300
GLOB_MAX_RESULTS = 200
LS_MAX_ENTRIES = 500
#: How far a walk goes before it gives up (a tree this large is not a memory directory).
WALK_MAX_ENTRIES = 50_000
#: A file with a NUL byte in its first block is treated as binary and not read.
BINARY_SNIFF = 8_192
#: read / grep: the longest line looked at (one past it is shown as cut, and not searched).
LINE_MAX_BYTES = 1 << 20

Log = Callable[[str], None]


class ToolError(Exception):
    """A tool call refused or failed; the message goes back to the model as an error result."""


# --- tool definitions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """One tool the model may call: its name, what it is for, its input schema, and the code."""

    name: str
    description: str
    schema: dict
    handler: Callable[[dict], str]

    def definition(self) -> dict:
        return {"name": self.name, "description": self.description, "input_schema": self.schema}


def _schema(required: Iterable[str], **properties: tuple[str, str]) -> dict:
    """A JSON schema for an object of ``name=(type, description)`` properties."""
    return {
        "type": "object",
        "properties": {name: {"type": t, "description": d} for name, (t, d) in properties.items()},
        "required": list(required),
        "additionalProperties": False,
    }


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def validate_input(tool: Tool, value: Any) -> dict:
    """The input as a dict if it fits ``tool.schema``; ToolError naming the first problem otherwise."""
    if not isinstance(value, dict):
        raise ToolError(f"invalid input for {tool.name}: expected a JSON object, got {type(value).__name__}")
    props = tool.schema.get("properties", {})
    expected = ", ".join(props) or "none"
    for name in value:
        if name not in props:
            raise ToolError(f"invalid input for {tool.name}: unknown field {name!r} (fields: {expected})")
    for name in tool.schema.get("required", ()):
        if name not in value or value[name] is None:
            raise ToolError(f"invalid input for {tool.name}: missing required field {name!r} (fields: {expected})")
    for name, v in value.items():
        spec = props[name]
        if v is None and name not in tool.schema.get("required", ()):
            continue
        check = _JSON_TYPES.get(spec.get("type", ""))
        if check is not None and not check(v):
            article = "an" if spec["type"][0] in "aeiou" else "a"
            raise ToolError(f"invalid input for {tool.name}: field {name!r} must be {article} {spec['type']}, "
                            f"got {type(v).__name__}")
    return {k: v for k, v in value.items() if v is not None}


# --- the write policy ----------------------------------------------------------------------------


@dataclass(frozen=True)
class WritePolicy:
    """What a job lets the model change inside the memory directory.

    The default suits the memory jobs: Markdown files only, nothing hidden,
    nothing under ``logs/`` (append-only daily logs) or ``team/`` (synced), topic
    files must carry frontmatter with ``name``, ``description`` and a valid
    ``type``, and no deletes. The session job narrows ``only`` to its one file;
    forget turns ``allow_delete`` on.
    """

    only: tuple[str, ...] | None = None  # the only relpaths that may be changed
    exclude: tuple[str, ...] = UNINDEXED_DIRS
    suffixes: tuple[str, ...] = (".md",)
    require_frontmatter: bool = True
    allow_delete: bool = False
    max_bytes: int = 100_000
    #: refuse content the poisoning guard flags (a permission grant, a rule bypass...)
    refuse_poison: bool = True

    def check_path(self, action: str, relpath: str) -> str | None:
        """Why ``action`` on ``relpath`` is refused, or None when it is allowed."""
        if action == "delete" and not self.allow_delete:
            return "deleting files is not allowed in this job"
        if self.only is not None:
            if relpath not in self.only:
                return f"this job may only change {', '.join(self.only)}"
            return None
        if action != "delete":
            from mem.core.memdir.layout import foreign_reason

            why = foreign_reason(relpath)  # what may land in a memory directory, asked by every route
            if why is not None:
                return why
        parts = relpath.split("/")
        if any(p.startswith(".") for p in parts):
            return "hidden files and directories are off limits"
        for prefix in self.exclude:
            if relpath.startswith(prefix):
                return f"files under {prefix} are not changed by this job"
        if self.suffixes and not relpath.endswith(self.suffixes):
            return f"only {', '.join(self.suffixes)} files may be written"
        return None

    def check_content(self, relpath: str, text: str, old: str | None = None) -> str | None:
        """Why ``text`` may not be the new content of ``relpath`` (now ``old``), or None."""
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            return "content is not valid UTF-8 text"
        if size > self.max_bytes:
            return f"content is {size} bytes; the limit for one file is {self.max_bytes}"
        if "\0" in text:
            return "content contains a NUL byte"
        if self.refuse_poison:
            from mem.core.guards.poison import poison_problem

            reason = poison_problem(text, old)
            if reason:
                return reason
        name = relpath.rsplit("/", 1)[-1]
        if name == INDEX_NAME:
            from mem.core.memdir.frontmatter import FRONTMATTER_RE

            if FRONTMATTER_RE.match(text):
                return f"{INDEX_NAME} is an index and has no frontmatter; write only '- [Title](file.md) — hook' lines"
            return None
        if self.require_frontmatter and relpath.endswith(".md"):
            return frontmatter_problem(text)
        return None


def frontmatter_problem(text: str) -> str | None:
    """What a topic file's frontmatter lacks, or None when it is complete."""
    from mem.core.memdir.frontmatter import MEMORY_TYPES, description_of, memory_type_of, parse_frontmatter

    parsed = parse_frontmatter(text)
    example = "---\\nname: ...\\ndescription: ...\\ntype: user|feedback|project|reference\\n---"
    if not parsed.present:
        return f"a memory file must start with frontmatter ({example})"
    if parsed.error:
        return f"the frontmatter is not valid YAML: {parsed.error.splitlines()[0]}"
    data = parsed.data
    missing = [k for k in ("name",) if not isinstance(data.get(k), str) or not data.get(k).strip()]
    if description_of(data) is None:
        missing.append("description")
    valid, raw = memory_type_of(data)
    if valid is None:
        if raw is None:
            missing.append("type")
        else:
            return f"type {raw!r} is not one of {', '.join(MEMORY_TYPES)}"
    if missing:
        return f"the frontmatter lacks {', '.join(missing)} ({example})"
    if not parsed.content.strip():
        return "the memory has frontmatter but no body"
    return None


# --- records of what happened --------------------------------------------------------------------


@dataclass
class ToolCall:
    """One tool call, as the log and ``--json`` show it."""

    name: str
    input: dict
    ok: bool
    summary: str  # the first line of the result, for people
    path: str | None = None  # the file touched, relative to the memory dir when inside it
    duration_s: float = 0.0

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "path": self.path, "summary": self.summary,
                "duration_s": round(self.duration_s, 4)}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_binary(head: bytes) -> bool:
    return b"\0" in head


def _clip(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… output cut at {limit} characters]"


# --- the tool box --------------------------------------------------------------------------------


class ToolBox:
    """The confined tools over one memory directory; one instance per run (it keeps the run's record).

    ``read_roots`` are extra directories the read-only tools may see (never
    written); ``transcripts`` a directory of session transcripts that
    ``search_transcripts`` searches. ``policy=None`` gives a read-only tool set; ``tools`` narrows the
    set to the names given (a job that only edits one file offers ``edit``). The box records every
    file it created, updated or deleted, and the content digest of every file
    the model has seen, so an existing file is only overwritten by a model
    that has read its current content.
    """

    def __init__(self, memory: MemoryDir, *, read_roots: Iterable[str] = (),
                 policy: WritePolicy | None = WritePolicy(), tools: Iterable[str] | None = None,
                 transcripts: str | None = None, log: Log | None = None):
        self.memory = memory
        roots = [self.memory.root, *(os.path.abspath(r) for r in read_roots if r)]
        # (lexical, real) pairs: a path may be named either way.
        self._roots = [(os.path.normpath(r), os.path.realpath(r)) for r in roots]
        self.policy = policy
        self.log = log
        self.created: list[str] = []
        self.updated: list[str] = []
        self.deleted: list[str] = []
        #: survivor relpath -> the oldest modification time (ns) of a file the model merged into it
        self.merged: dict[str, int] = {}
        self.transcripts = transcripts
        #: time.monotonic() by which the job must end (run_agent sets it): searches stop there
        self.deadline: float | None = None
        self.calls: list[ToolCall] = []
        self._seen: dict[str, str] = {}  # real path -> digest of the content the model saw
        offered = self._make_tools()
        if tools is not None:
            wanted = set(tools)
            unknown = wanted - {t.name for t in offered}
            if unknown:
                raise ValueError(f"no such tool in this tool box: {', '.join(sorted(unknown))}")
            offered = [t for t in offered if t.name in wanted]
        self._tools = {t.name: t for t in offered}

    # -- what the model is offered --

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def definitions(self) -> list[dict]:
        return [t.definition() for t in self._tools.values()]

    def note_seen(self, target: str) -> None:
        """The model was shown ``target``'s current content some other way (in the prompt, say)."""
        try:
            real = self.memory.resolve(target)
            self._seen[real] = _digest(read_bytes(real))
        except (OSError, MemError):
            pass

    # -- dispatch --

    def call(self, name: str, value: Any) -> tuple[str, bool]:
        """Run one tool call: (result text, is_error). Never raises for the model's mistakes."""
        started = time.monotonic()
        tool = self._tools.get(name)
        shown_input = value if isinstance(value, dict) else {"input": value}
        try:
            if tool is None:
                raise ToolError(f"there is no tool named {name!r}; available: {', '.join(self._tools)}")
            args = validate_input(tool, value)
            text, ok = tool.handler(args), True
        except ToolError as exc:
            text, ok = f"Error: {exc}", False
        except SecretError as exc:
            text, ok = (f"Refused: the content contains a secret ({exc.label}, rule {exc.rule_id}). "
                        "Never store credentials in memory; leave the secret out."), False
        except MemError as exc:
            text, ok = f"Error: {exc}", False
        except OSError as exc:
            what = exc.strerror or str(exc)
            text, ok = f"Error: {what}" + (f": {self._show_any(exc.filename)}" if exc.filename else ""), False
        except Exception as exc:  # noqa: BLE001 - a tool bug must not end the run
            text, ok = f"Error: internal error in {name}: {type(exc).__name__}: {exc}", False
        text = _clip(text)
        path = self._call_path(shown_input)
        record = ToolCall(name, shown_input, ok, text.split("\n", 1)[0][:200], path, time.monotonic() - started)
        self.calls.append(record)
        if self.log is not None:
            args_text = _short_json(shown_input)
            self.log(f"tool {name} {args_text} -> {'ok' if ok else 'refused'}: {record.summary}")
        return text, not ok

    def _call_path(self, value: dict) -> str | None:
        p = value.get("file_path") if isinstance(value, dict) else None
        if not isinstance(p, str):
            p = value.get("path") if isinstance(value, dict) else None
        return p if isinstance(p, str) else None

    # -- containment --

    def resolve_read(self, path: str | None, *, default_root: bool = True) -> str:
        """The real path a read of ``path`` touches, or ToolError when it is outside every root."""
        if default_root and (path is None or (isinstance(path, str) and path.strip() in ("", "."))):
            return self._roots[0][1]
        if not isinstance(path, str) or not path.strip():
            raise ToolError("the path is empty")
        if "\0" in path:
            raise ToolError("refused: the path contains a NUL byte")
        if os.path.isabs(path):
            candidate = os.path.normpath(path)
        else:
            candidate = os.path.normpath(os.path.join(self.memory.root, path))
        if not any(within(candidate, lex) or within(candidate, real) for lex, real in self._roots):
            raise ToolError(f"refused: {path} is outside the directories you may read ({self._roots_text()})")
        if os.path.islink(candidate) and not os.path.exists(candidate):
            raise ToolError(f"refused: {path} is a dangling symbolic link")
        real = os.path.realpath(candidate)
        if not any(within(real, r) for _, r in self._roots):
            raise ToolError(f"refused: {path} is a symbolic link leading outside the directories you may read")
        return real

    def _inside_roots(self, real: str) -> bool:
        return any(within(real, r) for _, r in self._roots)

    def _roots_text(self) -> str:
        return ", ".join(lex for lex, _ in self._roots)

    def show(self, real: str) -> str:
        """How a path is shown to the model: relative inside the memory dir, absolute elsewhere."""
        root = self.memory.real_root
        if real == root:
            return "."
        if within(real, root):
            return os.path.relpath(real, root).replace(os.sep, "/")
        return real

    def _show_any(self, path: Any) -> str:
        try:
            return self.show(os.path.realpath(os.fsdecode(path)))
        except (TypeError, ValueError):
            return str(path)

    def _resolve_write(self, action: str, path: str) -> tuple[str, str]:
        """(real path, relpath) for a change to ``path``, or a refusal."""
        if self.policy is None:
            raise ToolError("this job is read-only")
        real = self.memory.resolve(path)  # PathEscapeError for every way out
        rel = os.path.relpath(real, self.memory.real_root).replace(os.sep, "/")
        try:
            if not stat.S_ISREG(os.stat(real).st_mode):
                raise ToolError(f"refused: {rel} is not a regular file")  # a FIFO would block us
        except FileNotFoundError:
            pass
        reason = self.policy.check_path(action, rel)
        if reason:
            raise ToolError(f"refused: {rel}: {reason}")
        return real, rel

    # -- the tools --

    def _make_tools(self) -> list[Tool]:
        where = "Relative paths are taken from the memory directory; absolute paths must lie inside "
        where += "it" if len(self._roots) == 1 else f"one of: {self._roots_text()}"
        tools = [
            Tool("read", "Read a text file, with line numbers. " + where + ". Use offset and limit for long files.",
                 _schema(["file_path"],
                         file_path=("string", "The file to read."),
                         offset=("integer", "The first line to show, counting from 1 (default 1)."),
                         limit=("integer", f"How many lines to show (default and maximum {READ_DEFAULT_LINES}).")),
                 self._read),
            Tool("grep", "Search file contents with a Python regular expression; prints path:line:text for "
                 f"each matching line (at most {GREP_MAX_MATCHES}). " + where + ".",
                 _schema(["pattern"],
                         pattern=("string", "The regular expression (Python syntax)."),
                         path=("string", "A file or directory to search (default: the memory directory)."),
                         glob=("string", "Only files whose name (or path, if it has a /) matches this glob, e.g. *.md."),
                         ignore_case=("boolean", "Match case-insensitively.")),
                 self._grep),
            Tool("glob", "List files matching a glob pattern, newest first. * and ? stay within one directory; "
                 "**/ spans directories (e.g. **/*.md). " + where + ".",
                 _schema(["pattern"],
                         pattern=("string", "The glob pattern, relative to path."),
                         path=("string", "The directory to search from (default: the memory directory).")),
                 self._glob),
            Tool("ls", "List a directory: subdirectories end in /, files show their size in bytes and "
                 "modification time. " + where + ".",
                 _schema([], path=("string", "The directory (default: the memory directory).")),
                 self._ls),
        ]
        if self.transcripts is not None:
            tools.append(Tool(
                "search_transcripts",
                "Search the session transcripts as the text people and tools wrote (not raw JSON) with a Python "
                f"regular expression. Each match comes back as an excerpt of at most {EXCERPT_CHARS} characters "
                f"centred on it, with the session id, time and role; at most {TRANSCRIPT_MATCHES} matches, newest "
                "sessions first.",
                _schema(["pattern"],
                        pattern=("string", "The regular expression (Python syntax); keep it narrow."),
                        ignore_case=("boolean", "Match case-insensitively.")),
                self._search_transcripts))
        if self.policy is not None:
            tools += [
                Tool("write", "Create a file in the memory directory, or replace one you have read in full. "
                     "The path is relative to the memory directory. Content is checked: no secrets, "
                     "and memory files need their frontmatter.",
                     _schema(["file_path", "content"],
                             file_path=("string", "The file to write, relative to the memory directory."),
                             content=("string", "The complete new content of the file.")),
                     self._write),
                Tool("edit", "Replace exact text in an existing file of the memory directory. old_string must "
                     "match exactly once (including whitespace), unless replace_all is true.",
                     _schema(["file_path", "old_string", "new_string"],
                             file_path=("string", "The file to change, relative to the memory directory."),
                             old_string=("string", "The exact text to replace."),
                             new_string=("string", "The text to put in its place."),
                             replace_all=("boolean", "Replace every occurrence (default false).")),
                     self._edit),
            ]
            if self.policy.allow_delete:
                tools.append(Tool("delete", "Delete a file of the memory directory (never MEMORY.md).",
                                  _schema(["file_path"],
                                          file_path=("string", "The file to delete, relative to the memory directory."),
                                          merged_into=("string", "When its content now lives in another memory file: "
                                                       "that file (it keeps the older date).")),
                                  self._delete))
        return tools

    def _read(self, args: dict) -> str:
        real = self.resolve_read(args["file_path"], default_root=False)
        offset = args.get("offset", 1)
        limit = args.get("limit", READ_DEFAULT_LINES)
        if offset < 1:
            raise ToolError("offset counts from 1")
        if limit < 1:
            raise ToolError("limit must be at least 1")
        limit = min(limit, READ_DEFAULT_LINES)
        st = os.stat(real)
        shown = self.show(real)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{shown} is a directory; use ls")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"refused: {shown} is not a regular file")
        out: list[str] = []
        total = 0
        more_from = None
        n = 0
        with os.fdopen(open_regular(real), "rb") as fh:  # a FIFO swapped in since the stat is refused too
            if _is_binary(fh.read(BINARY_SNIFF)):
                raise ToolError(f"refused: {shown} is a binary file")
            fh.seek(0)
            for n, raw in enumerate(capped_lines(fh, LINE_MAX_BYTES), start=1):
                if n < offset:
                    continue
                if len(out) >= limit or total > MAX_RESULT_CHARS - READ_MAX_LINE_CHARS:
                    more_from = n
                    break
                if raw is OVERLONG:
                    raw = f"[a line of more than {LINE_MAX_BYTES:,} bytes, not shown]".encode()
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if len(line) > READ_MAX_LINE_CHARS:
                    line = line[:READ_MAX_LINE_CHARS] + f"… [line cut: {len(line)} characters]"
                out.append(f"{n:>6}\t{line}")
                total += len(out[-1]) + 1
        if within(real, self.memory.real_root):
            self.note_seen(real)
        if not out:
            return f"{shown} is empty." if n == 0 else f"{shown} has {n} lines; offset {offset} is past the end."
        text = "\n".join(out)
        if more_from is not None:
            text += f"\n[… more lines follow: read again with offset={more_from}]"
        return text

    def _walk_files(self, base: str) -> Iterator[str]:
        """Real paths of regular files under ``base`` (no links followed out, no temp files)."""
        if os.path.isfile(base):
            yield base
            return
        seen = 0
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                seen += 1
                if seen > WALK_MAX_ENTRIES:
                    return
                if is_temp_name(name):
                    continue  # a write in progress
                path = os.path.join(dirpath, name)
                real = os.path.realpath(path)
                if not self._inside_roots(real):
                    continue
                try:
                    if not stat.S_ISREG(os.stat(real).st_mode):
                        continue
                except OSError:
                    continue
                yield real

    def _grep(self, args: dict) -> str:
        return self._until_deadline(self._grep_here, args)

    def _search_transcripts(self, args: dict) -> str:
        return self._until_deadline(self._search_transcripts_here, args)

    def _until_deadline(self, search: Callable[[dict], str], args: dict) -> str:
        """``search(args)`` in a child process that the job's deadline ends.

        Python's regular expressions backtrack, and one call on one line cannot be interrupted
        (``(a+)+$`` against forty a's and a b takes longer than any job has): the pattern comes
        from the model, and the model from whatever text it read. A forked child runs the search
        with the pattern exactly as Python reads it; when the deadline comes first it is killed and
        the model gets an error. Without a deadline (or fork) the search runs here.
        """
        if self.deadline is None or not hasattr(os, "fork"):
            return search(args)
        import json
        import select
        import signal

        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolError("the job's time is up; no more searches")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: search, send (ok, text), and leave without running the parent's exit code
            code = 0
            try:
                os.close(r)
                try:
                    reply = [True, search(args)]
                except (ToolError, MemError) as exc:
                    reply = [False, str(exc)]
                except OSError as exc:  # as call() words it
                    where = f": {self._show_any(exc.filename)}" if exc.filename else ""
                    reply = [False, f"{exc.strerror or exc}{where}"]
                with os.fdopen(w, "wb") as out:
                    out.write(json.dumps(reply).encode())
            except BaseException:  # noqa: BLE001 - the parent sees no reply and says so
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        try:
            while True:
                wait = self.deadline - time.monotonic()
                if wait <= 0 or not select.select([r], [], [], wait)[0]:
                    os.kill(pid, signal.SIGKILL)
                    raise ToolError(f"the search ran out of the job's time ({left:.0f} s were left); "
                                    "use a simpler pattern (no nested repetition) or a narrower path")
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(r)
            os.waitpid(pid, 0)
        try:
            ok, text = json.loads(b"".join(chunks))
        except (ValueError, TypeError):
            raise ToolError("the search failed") from None
        if not ok:
            raise ToolError(text)
        return text

    def _grep_here(self, args: dict) -> str:
        try:
            rx = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        base = self.resolve_read(args.get("path"))
        name_filter = _glob_regex(args["glob"]) if args.get("glob") else None
        lines: list[str] = []
        extra = 0
        files = 0
        for real in self._walk_files(base):
            shown = self.show(real)
            if name_filter is not None:
                subject = os.path.relpath(real, base) if "/" in args["glob"] else os.path.basename(real)
                if not name_filter.match(subject.replace(os.sep, "/")):
                    continue
            files += 1
            if files > GREP_MAX_FILES:
                break
            try:
                with os.fdopen(open_regular(real), "rb") as fh:
                    if _is_binary(fh.read(BINARY_SNIFF)):
                        continue
                    fh.seek(0)
                    for n, raw in enumerate(capped_lines(fh, LINE_MAX_BYTES), start=1):
                        if raw is OVERLONG:
                            continue
                        line = raw.decode("utf-8", "replace").rstrip("\r\n")
                        if not rx.search(line):
                            continue
                        if len(lines) >= GREP_MAX_MATCHES:
                            extra += 1
                            continue
                        lines.append(f"{shown}:{n}:{excerpt(line, rx.search(line), GREP_MAX_LINE_CHARS)}")
            except OSError:
                continue
        if not lines:
            return "No matches."
        text = "\n".join(lines)
        if extra:
            text += f"\n[… {extra} more matching lines not shown; narrow the pattern or the path]"
        return text

    def _search_transcripts_here(self, args: dict) -> str:
        from mem.core import grep

        try:
            matcher = grep.Matcher([args["pattern"]], ignore_case=bool(args.get("ignore_case")))
        except MemError as exc:
            raise ToolError(str(exc)) from None
        targets = grep.dir_targets(self.transcripts, "transcript")
        targets.sort(key=lambda t: -_mtime(t.path))
        searcher = grep.Searcher(matcher, grep.Options(max_count=TRANSCRIPT_MATCHES + 1))  # one more tells there is more
        found: list[str] = []
        for result in grep.search_all(searcher, targets, workers=0):
            found += [_transcript_excerpt(line) for group in result.groups for line in group if line.selected]
            if len(found) > TRANSCRIPT_MATCHES:
                break  # a transcript tree can hold gigabytes: stop once there is more than can be shown
        if not found:
            return "No matches."
        more = "\n[… more matches not shown; narrow the pattern]" if len(found) > TRANSCRIPT_MATCHES else ""
        return "\n".join(found[:TRANSCRIPT_MATCHES]) + more

    def _glob(self, args: dict) -> str:
        pattern = args["pattern"]
        if os.path.isabs(pattern) or "\0" in pattern:
            raise ToolError("the pattern must be relative; give the directory in path")
        if ".." in pattern.split("/"):
            raise ToolError("refused: the pattern may not contain ..")
        base = self.resolve_read(args.get("path"))
        if not os.path.isdir(base):
            raise ToolError(f"{self.show(base)} is not a directory")
        rx = _glob_regex(pattern)
        found = []
        for real in self._walk_files(base):
            rel = os.path.relpath(real, base).replace(os.sep, "/")
            if rx.match(rel):
                try:
                    found.append((os.stat(real).st_mtime, real))
                except OSError:
                    continue
        if not found:
            return "No files matched."
        found.sort(key=lambda x: (-x[0], x[1]))
        shown = [self.show(r) for _, r in found[:GLOB_MAX_RESULTS]]
        if len(found) > GLOB_MAX_RESULTS:
            shown.append(f"[… {len(found) - GLOB_MAX_RESULTS} more files; narrow the pattern]")
        return "\n".join(shown)

    def _ls(self, args: dict) -> str:
        real = self.resolve_read(args.get("path"))
        shown = self.show(real)
        if not os.path.isdir(real):
            raise ToolError(f"{shown} is not a directory")
        rows = []
        with os.scandir(real) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if is_temp_name(e.name):
                continue
            if len(rows) >= LS_MAX_ENTRIES:
                rows.append(f"[… {len(entries) - LS_MAX_ENTRIES} more entries]")
                break
            try:
                if e.is_symlink():
                    target = os.path.realpath(e.path)
                    where = "" if self._inside_roots(target) else " (outside; not readable)"
                    rows.append(f"{e.name} -> {os.readlink(e.path)}{where}")
                elif e.is_dir():
                    rows.append(f"{e.name}/")
                else:
                    st = e.stat()
                    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.st_mtime))
                    rows.append(f"{e.name}  {st.st_size} bytes  {when}")
            except OSError:
                rows.append(f"{e.name}  (unreadable)")
        head = f"{shown}/" if shown != "." else "./"
        if not rows:
            return f"{head} is empty."
        return head + "\n" + "\n".join(rows)

    # -- changes --

    def _locked(self, rel: str):
        """The index lock for MEMORY.md files (read-modify-write shared with other writers)."""
        import contextlib

        if rel.rsplit("/", 1)[-1] == INDEX_NAME:
            return self.memory.index_lock()
        return contextlib.nullcontext()

    def _write(self, args: dict) -> str:
        real, rel = self._resolve_write("write", args["file_path"])
        content = args["content"]
        with self._locked(rel):
            try:
                current = read_bytes(real)
            except FileNotFoundError:
                current = None
            old = current.decode("utf-8", "replace") if current is not None else None
            reason = self.policy.check_content(rel, content, old)
            if reason:
                raise ToolError(f"refused: {rel}: {reason}")
            if current is not None:
                seen = self._seen.get(real)
                if seen is None:
                    raise ToolError(f"{rel} already exists and you have not read it; read it first, "
                                    "or change it with edit")
                if seen != _digest(current):
                    raise ToolError(f"{rel} has changed since you read it; read it again first")
            result = self.memory.write(real, content)
        self._record(rel, created=result.created, changed=result.changed)
        self._seen[real] = _digest(content.encode("utf-8"))
        if not result.changed:
            return f"{rel} already had this content; nothing written."
        verb = "Created" if result.created else "Updated"
        return f"{verb} {rel} ({len(content.encode('utf-8'))} bytes)."

    def _edit(self, args: dict) -> str:
        real, rel = self._resolve_write("edit", args["file_path"])
        old, new = args["old_string"], args["new_string"]
        if old == "":
            raise ToolError("old_string is empty; to create a file use write")
        if old == new:
            raise ToolError("old_string and new_string are the same; nothing to do")
        with self._locked(rel):
            try:
                data = read_bytes(real)
            except FileNotFoundError:
                raise ToolError(f"{rel} does not exist; use write to create it") from None
            if _is_binary(data[:BINARY_SNIFF]):
                raise ToolError(f"refused: {rel} is a binary file")
            text = data.decode("utf-8", "surrogateescape")
            count = text.count(old)
            if count == 0:
                raise ToolError(f"old_string was not found in {rel}; read the file and copy the text exactly")
            if count > 1 and not args.get("replace_all"):
                raise ToolError(f"old_string matches {count} times in {rel}; add surrounding text to make it "
                                "unique, or set replace_all")
            updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
            reason = self.policy.check_content(rel, updated, text)
            if reason:
                raise ToolError(f"refused: {rel}: {reason}")
            content = updated.encode("utf-8", "surrogateescape")
            result = self.memory.write(real, content)
        self._record(rel, created=False, changed=result.changed)
        self._seen[real] = _digest(content)
        n = count if args.get("replace_all") else 1
        return f"Edited {rel}: replaced {n} occurrence{'s' if n != 1 else ''}."

    def _delete(self, args: dict) -> str:
        real, rel = self._resolve_write("delete", args["file_path"])
        if not os.path.lexists(real):
            raise ToolError(f"{rel} does not exist")
        if args.get("merged_into"):
            _, survivor = self._resolve_write("write", args["merged_into"])
            mtime = os.lstat(real).st_mtime_ns
            self.merged[survivor] = min(mtime, self.merged.get(survivor, mtime))
        self.memory.delete(real)
        self._seen.pop(real, None)
        if rel in self.created:
            self.created.remove(rel)
        else:
            if rel in self.updated:
                self.updated.remove(rel)
            self.deleted.append(rel)
        return f"Deleted {rel}."

    def _record(self, rel: str, *, created: bool, changed: bool) -> None:
        if not changed:
            return
        if rel in self.deleted:  # deleted, then written again: an update of the original
            self.deleted.remove(rel)
            created = False
        if created:
            if rel not in self.created:
                self.created.append(rel)
        elif rel not in self.created and rel not in self.updated:
            self.updated.append(rel)


def excerpt(text: str, match, width: int) -> str:
    """At most ``width`` characters of ``text`` centred on ``match`` (a re.Match or a (start, end) span)."""
    start, end = match.span() if isinstance(match, re.Match) else (match or (0, 0))
    if len(text) <= width:
        return text
    left = max(0, min(start - (width - (end - start)) // 2, len(text) - width))
    cut = text[left:left + width]
    return ("…" if left else "") + cut + ("…" if left + width < len(text) else "")


def _transcript_excerpt(line) -> str:
    """A transcript match as search_transcripts shows it: where it was said, and the words around it.

    Secrets are redacted from the whole line before it is cut, as extract redacts the conversation
    it sends, so a secret the scanner recognises in the line never reaches the model, nor half of
    one at the cut. (A line of a private key's body, alone, is not recognisable as one.)
    """
    from mem.core.guards.secrets import redact

    ref = line.message
    text = redact(line.text)
    span = line.spans[0] if line.spans else None
    if span is not None and text != line.text:  # where the match is now that secrets before it got shorter
        start = len(redact(line.text[:span[0]]))
        span = (start, start + span[1] - span[0])
    return f"[session {ref.session_id} {ref.timestamp or '(no time)'} {ref.role}] {excerpt(text, span, EXCERPT_CHARS)}"


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _glob_regex(pattern: str) -> re.Pattern:
    """A glob as a regex over '/'-paths: * and ? stay in one segment, **/ spans any number."""
    return re.compile(glob_to_regex(pattern) + r"\Z")


def _short_json(value: Any, limit: int = 300) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
