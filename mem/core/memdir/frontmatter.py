"""Topic-file frontmatter: parsed as Claude Code parses it, rewritten losslessly.

Two jobs live here:

* ``parse_frontmatter`` reproduces Claude Code's scanner: the frontmatter must
  start at byte 0, ends at the first ``---`` after the opening one (even
  mid-line), is parsed as YAML 1.2 core, and on a YAML error is parsed once
  more after re-quoting simple ``key: value`` lines that carry YAML
  indicators.
* ``Document`` keeps the exact text of a topic file. Changing one key edits
  only that key's lines; everything else, unknown keys and their order
  included, stays byte for byte. An unchanged document renders to its input.
"""

from __future__ import annotations

import re
from functools import cache

from mem.core.jscompat import JS_WHITESPACE as JS_WS  # JavaScript's \s, as a character-class body
from mem.core.jscompat import js_trim  # noqa: F401 - part of this module's interface
from mem.core.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

FRONTMATTER_RE = re.compile(rf"^---[{JS_WS}]*\n([\s\S]*?)---[{JS_WS}]*\n?")

MEMORY_TYPES = ("user", "feedback", "project", "reference")

_SIMPLE_LINE = re.compile(r"^([a-zA-Z_-]+):[" + JS_WS + r"]+(.+)$")
_YAML_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")


# --- YAML ------------------------------------------------------------------

@cache  # the class is built once per process, when the first YAML is read
def _yaml_loader():
    """A YAML 1.2-core flavoured safe loader (C-accelerated when available).

    Claude Code parses with a YAML 1.2 parser, where ``yes``/``on`` are strings,
    dates stay strings and ``010`` is ten. PyYAML implements 1.1, so the
    implicit resolvers are replaced by the 1.2 core schema's.
    """
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    Loader.yaml_implicit_resolvers = {}
    bool_tag = "tag:yaml.org,2002:bool"
    int_tag = "tag:yaml.org,2002:int"
    float_tag = "tag:yaml.org,2002:float"
    null_tag = "tag:yaml.org,2002:null"
    Loader.add_implicit_resolver(
        bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    Loader.add_implicit_resolver(
        int_tag, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
    )
    Loader.add_implicit_resolver(
        float_tag,
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+0123456789."),
    )
    Loader.add_implicit_resolver(
        null_tag, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
    )

    def construct_int(loader, node):
        value = loader.construct_scalar(node)
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)

    def construct_float(loader, node):
        value = loader.construct_scalar(node).lower()
        if value.endswith(".inf"):
            return float("-inf") if value.startswith("-") else float("inf")
        if value == ".nan":
            return float("nan")
        return float(value)

    def construct_bool(loader, node):
        return loader.construct_scalar(node).lower() == "true"

    Loader.add_constructor(int_tag, construct_int)
    Loader.add_constructor(float_tag, construct_float)
    Loader.add_constructor(bool_tag, construct_bool)
    # Timestamps resolve no more, but an explicit !!timestamp tag still should
    # not produce a datetime that JSON output cannot carry.
    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    return Loader


class YamlError(ValueError):
    pass


#: What one frontmatter may hold, its aliases expanded: a real one has a dozen values, two levels.
#: Aliases share what they point at, so loading a "billion laughs" is cheap; what is costly is
#: every later walk over it (a description joined from a list, a JSON dump): it is refused here.
MAX_YAML_VALUES = 10_000
MAX_YAML_DEPTH = 32


def load_yaml(text: str) -> Any:
    import yaml

    try:
        value = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader subclass
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from exc
    except (ValueError, TypeError, RecursionError) as exc:
        raise YamlError(str(exc)) from exc
    _check_bounds(value)
    return value


def _check_bounds(value: Any) -> None:
    """YamlError when ``value`` nests deeper than MAX_YAML_DEPTH or expands past MAX_YAML_VALUES
    (a walk without recursion that stops at the limit, so a self-referencing alias ends it too)."""
    stack = [(value, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_YAML_VALUES:
            raise YamlError(f"more than {MAX_YAML_VALUES:,} values once its aliases are expanded")
        if depth > MAX_YAML_DEPTH:
            raise YamlError(f"nested more than {MAX_YAML_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def quote_problematic_values(frontmatter_text: str) -> str:
    """Claude Code's retry: double-quote simple values that carry YAML indicators."""
    out = []
    for line in frontmatter_text.split("\n"):
        m = _SIMPLE_LINE.match(line)
        if m:
            key, value = m.group(1), m.group(2)
            quoted = (value.startswith('"') and value.endswith('"')) or (
                value.startswith("'") and value.endswith("'")
            )
            if not quoted and _YAML_SPECIAL.search(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                out.append(f'{key}: "{escaped}"')
                continue
        out.append(line)
    return "\n".join(out)


class Parsed(Record):
    """The result of parsing a text's frontmatter the way Claude Code does."""

    data: dict  # {} when absent or unparseable
    content: str  # text after the frontmatter block
    present: bool  # an opening and closing delimiter were found
    error: str | None = None  # YAML error that survived the retry
    retried: bool = False  # parsed only after re-quoting


_FAST_KEY = re.compile(r"^( *)([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*))?$")
# Values whose meaning a YAML 1.2 core parser could read as anything but the
# plain string itself: indicators up front, mapping or comment markers inside,
# or the spellings of null, booleans and numbers.
_FAST_UNSAFE = re.compile(
    r"^[-?:,\[\]{}#&*!|>'\"%@`\s]|: |:$| #|\t"
    r"|^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE)$"
    r"|^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"
    r"|^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _fast_load(fm_text: str) -> dict | None:
    """The common frontmatter (``key: plain text`` lines, one nested mapping
    level) without loading YAML; None when the text needs the real parser.

    Memory files are nearly always this simple, and skipping the YAML import
    is a large share of ``mem scan``'s start-up time.
    """
    if "\r" in fm_text:
        return None
    data: dict = {}
    parent: dict | None = None
    child_indent = ""
    for line in fm_text.split("\n"):
        if not line.strip(" "):
            continue
        m = _FAST_KEY.match(line)
        if not m:
            return None
        indent, key, value = m.group(1), m.group(2), m.group(3)
        if value is not None:
            value = value.rstrip(" ")
            if not value:
                value = None
            elif _FAST_UNSAFE.search(value) or not value.isprintable():
                return None
        if not indent:
            if key in data:
                return None
            parent = None
            if value is None:
                data[key] = None
                parent, child_indent = data, ""
                parent_key = key
            else:
                data[key] = value
        else:
            if parent is None or value is None:
                return None
            if not child_indent:
                child_indent = indent
                data[parent_key] = {}
            elif indent != child_indent:
                return None
            children = data[parent_key]
            if key in children:
                return None
            children[key] = value
    return data


def strip_frontmatter(text: str) -> str:
    """The text after its frontmatter block (all of it when there is none)."""
    m = FRONTMATTER_RE.match(text)
    return text[m.end():] if m else text


def parse_frontmatter(text: str) -> Parsed:
    m = FRONTMATTER_RE.match(text)
    if not m:
        return Parsed({}, text, False)
    fm_text = m.group(1) or ""
    content = text[m.end():]
    fast = _fast_load(fm_text)
    if fast is not None:
        return Parsed(fast, content, True)
    try:
        parsed = load_yaml(fm_text)
        return Parsed(parsed if isinstance(parsed, dict) else {}, content, True)
    except YamlError:
        try:
            parsed = load_yaml(quote_problematic_values(fm_text))
        except YamlError as exc:
            return Parsed({}, content, True, error=str(exc))
        return Parsed(parsed if isinstance(parsed, dict) else {}, content, True, retried=True)


def js_string(value: Any) -> str | None:
    """How a JS template literal would show a YAML value; None for null/undefined."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else (js_string(v) or "") for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def memory_type_of(data: dict) -> tuple[str | None, Any]:
    """(valid type or None, the raw value) from top-level ``type`` or ``metadata.type``."""
    raw = data.get("type")
    if raw is None and isinstance(data.get("metadata"), dict):
        raw = data["metadata"].get("type")
    return (raw if isinstance(raw, str) and raw in MEMORY_TYPES else None), raw


def description_of(data: dict) -> str | None:
    """``frontmatter.description || null`` rendered as a string."""
    value = data.get("description")
    if value is None or value is False or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (value == 0 or value != value):
        return None  # 0 and NaN are falsy in JS too
    return js_string(value)


# --- lossless documents ----------------------------------------------------


class Verbatim(str):
    """A scalar written as it is, unquoted (a timestamp in the form the client writes it)."""


def dump_scalar(value: Any) -> str:
    """One YAML scalar on one line, quoted only when YAML needs it."""
    import yaml

    if value is None:
        return ""
    if isinstance(value, Verbatim):
        return str(value)
    if isinstance(value, str) and (
        "---" in value or any(c in value for c in "\n\r\x85\u2028\u2029") or not value.isprintable()
    ):
        # One line, whatever the text: a YAML double-quoted scalar with
        # escapes. A literal --- would close the frontmatter early, so dashes
        # are escaped in that case.
        return '"' + "".join(_escape_char(c, "---" in value) for c in value) + '"'
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1 << 30)
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def _escape_char(c: str, dashes: bool) -> str:
    if c in '"\\':
        return "\\" + c
    if c == "-" and dashes:
        return "\\x2d"
    o = ord(c)
    if o < 0x20 or 0x7F <= o <= 0x9F or c in "\u2028\u2029\ufeff" or 0xD800 <= o <= 0xDFFF:
        return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"
    return c


_KEY_LINE = re.compile(r"^(?P<indent>[ ]*)(?P<key>[^\s#:][^:]*?)[ ]*:(?:[ \t]|$)")


class Document:
    """A topic file's exact text with key-level edits.

    ``render()`` returns the input unchanged until a key or the body is set.
    """

    def __init__(self, text: str):
        self._original = text
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        rest = text[len(self.bom):]
        self.newline = "\r\n" if "\r\n" in rest[:4096] else "\n"
        m = FRONTMATTER_RE.match(rest)
        if m:
            self.has_frontmatter = True
            self._open = rest[: m.start(1)]
            self._fm = m.group(1)
            self._close = rest[m.end(1): m.end()]
            self.body = rest[m.end():]
        else:
            self.has_frontmatter = False
            self._open = self._close = self._fm = ""
            self.body = rest
        self.parsed = parse_frontmatter(rest)
        self._dirty = False

    @property
    def data(self) -> dict:
        return self.parsed.data

    @property
    def changed(self) -> bool:
        return self._dirty

    def render(self) -> str:
        if not self._dirty:
            return self._original
        if not self.has_frontmatter:
            return self.bom + self.body
        return self.bom + self._open + self._fm + self._close + self.body

    # -- edits --

    def set_body(self, body: str) -> None:
        if body != self.body:
            self.body = body
            self._dirty = True

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` (or ``parent.key`` for one level of nesting) to a scalar."""
        if "." in key:
            parent, child = key.split(".", 1)
        else:
            parent, child = None, key
        if parent and not isinstance(self.data.get(parent), dict) and parent in self.data:
            raise ValueError(f"frontmatter key {parent!r} is not a mapping")
        current = self.data.get(parent, {}).get(child) if parent else self.data.get(child)
        if current == value and (child in (self.data.get(parent) or {}) if parent else child in self.data):
            return
        nl = self.newline
        if not self.has_frontmatter:
            self._open, self._close, self._fm = "---" + nl, "---" + nl, ""
            self.has_frontmatter = True
            if not self.body.startswith(("\n", "\r\n")):
                self.body = nl + self.body
        lines = self._fm.split("\n")
        # A trailing "" after the final newline is not a line of its own.
        tail_empty = lines and lines[-1] == ""
        if tail_empty:
            lines.pop()
        elif self._fm:
            raise ValueError("the frontmatter's closing --- is not on a line of its own")
        if parent is None:
            lines = _set_in_block(lines, 0, len(lines), "", child, value, nl)
        else:
            start = _find_key(lines, 0, len(lines), "", parent)
            if start is None:
                lines.append(f"{parent}:" + ("\r" if nl == "\r\n" else ""))
                lines.append(f"  {child}: {dump_scalar(value)}" + ("\r" if nl == "\r\n" else ""))
            else:
                end = _block_end(lines, start, "")
                indent = _child_indent(lines, start + 1, end) or "  "
                lines = _set_in_block(lines, start + 1, end, indent, child, value, nl)
        self._fm = "\n".join(lines) + ("\n" if tail_empty or not self._fm else "")
        self._dirty = True
        self.parsed = parse_frontmatter(self._open + self._fm + self._close + self.body)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" "))]


def _find_key(lines: list[str], start: int, end: int, indent: str, key: str) -> int | None:
    for i in range(start, end):
        m = _KEY_LINE.match(lines[i])
        if m and m.group("indent") == indent and m.group("key").strip("'\"") == key:
            return i
    return None


def _block_end(lines: list[str], key_index: int, indent: str) -> int:
    """Index after the last line that belongs to the key at ``key_index``."""
    i = key_index + 1
    while i < len(lines):
        line = lines[i].rstrip("\r")
        # Blank lines, deeper lines and a compact "- item" sequence belong to the key.
        if line.strip() == "" or len(_indent_of(line)) > len(indent) or line.startswith(indent + "-"):
            i += 1
            continue
        break
    # Trailing blank lines belong to whatever follows.
    while i > key_index + 1 and lines[i - 1].strip() == "":
        i -= 1
    return i


def _child_indent(lines: list[str], start: int, end: int) -> str | None:
    for i in range(start, end):
        if lines[i].strip():
            return _indent_of(lines[i])
    return None


def _set_in_block(lines, start, end, indent, key, value, nl):
    cr = "\r" if nl == "\r\n" else ""
    new_line = f"{indent}{key}: {dump_scalar(value)}".rstrip(" ") + cr
    at = _find_key(lines, start, end, indent, key)
    if at is None:
        insert = end
        return lines[:insert] + [new_line] + lines[insert:]
    stop = _block_end(lines, at, indent)
    return lines[:at] + [new_line] + lines[stop:]


def render_new(fields: dict, body: str) -> str:
    """A new topic file: frontmatter with ``fields`` in order, a blank line, the body."""
    head = "".join(f"{k}: {dump_scalar(v)}".rstrip(" ") + "\n" for k, v in fields.items())
    body = body if body.endswith("\n") or not body else body + "\n"
    return f"---\n{head}---\n\n{body}"


def keep_modified_true(old: bytes | None, new: bytes, now_ms: int | None = None) -> bytes:
    """``new`` with ``metadata.modified`` set to now where the file keeps that stamp.

    Claude Code (2.1.330) writes ``metadata.modified`` (ISO-8601 UTC with
    milliseconds) into the memory files it writes, and rewrites it on each of
    its own edits; 2.1.197 wrote none. An edit ``mem`` makes to a file that has
    the key (before or after the edit) sets it to the time of the edit, so the
    stamp never claims a file is older than its content. Files without the key
    are left as they are, byte for byte, and so is the rest of the frontmatter.

    The client does not read this stamp for freshness: its recall ("This memory
    is N days old") and its manifest use the file's mtime (see mem.core.recall).
    """
    import time

    from mem.core.jscompat import iso_utc_ms

    def stamped(raw: bytes | None) -> bool:
        if not raw or b"modified" not in raw:
            return False
        meta = parse_frontmatter(raw.decode("utf-8", "replace")).data.get("metadata")
        return isinstance(meta, dict) and "modified" in meta

    if not (stamped(new) or stamped(old)):
        return new
    try:
        doc = Document(new.decode("utf-8"))
        if not isinstance(doc.data.get("metadata", {}), dict):
            return new
        # Unquoted, as the client writes it: `modified: 2026-11-24T00:30:02.342Z`.
        doc.set("metadata.modified", Verbatim(iso_utc_ms(time.time() * 1000 if now_ms is None else now_ms)))
    except (UnicodeDecodeError, ValueError):
        return new
    return doc.render().encode("utf-8")
