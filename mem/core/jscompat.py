"""JavaScript string semantics that Claude Code's behaviour depends on: UTF-16 lengths and cuts, trim;
and the comments qwen-code allows in its JSON settings.

Example: len16("😀x") == 3; cut16("😀x", 1) == ""; js_trim("\ufeff a ") == "a"
"""

from __future__ import annotations

import re

#: JavaScript's ``\s``, which String.prototype.trim strips: ECMAScript WhiteSpace + LineTerminator,
#: BOM included. It differs from Python's: it has U+FEFF and lacks the \x1c-\x1f separators.
#: No character in it is special inside a regex character class.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def len16(s: str) -> int:
    """Length in UTF-16 code units, i.e. JavaScript's `.length`.

    Example: len16("😀x") == 3
    """
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def cut16(s: str, units: int) -> str:
    """``s.slice(0, units)`` in UTF-16 units (a split surrogate pair is dropped)."""
    if len16(s) <= units:
        return s
    out = s.encode("utf-16-le")[: units * 2]
    return out.decode("utf-16-le", "ignore")


def code_units(s: str):
    for c in s:
        o = ord(c)
        if o > 0xFFFF:
            o -= 0x10000
            yield 0xD800 + (o >> 10)
            yield 0xDC00 + (o & 0x3FF)
        else:
            yield o  # lone surrogates (from surrogateescape) are one unit each, as in JS


def js_trim(s: str) -> str:
    """String.prototype.trim."""
    return s.strip(JS_WHITESPACE)


def glob_to_regex(pattern: str) -> str:
    """A picomatch-style glob (``**``, ``*``, ``?``, ``[...]``, ``{a,b}``; dotfiles match) as a regex."""
    out, i, n = [], 0, len(pattern)
    depth = 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                j = i + 2
                at_start = i == 0 or pattern[i - 1] == "/"
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                out.append(".*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)


def iso_utc_ms(mtime_ms: int) -> str:
    """``new Date(ms).toISOString()``."""
    import time

    secs, ms = divmod(int(mtime_ms), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ms:03d}Z"


def now_iso() -> str:
    """Now, as ``new Date().toISOString()`` gives it."""
    import time

    return iso_utc_ms(time.time_ns() // 1_000_000)


def blank_comments(text: str) -> str:
    """``text`` with every // and /* */ comment outside strings turned into spaces (newlines kept),
    so positions in it are positions in ``text``.

    Example: blank_comments('{"a": 1 // one\n}') == '{"a": 1       \n}'
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)
