"""The fast transcript search against a straightforward one, on random corpora.

The fast path skips records by their raw bytes, decodes with msgspec when it is
installed, and splits out only the lines a literal was found in. The reference
here decodes every line with the stdlib, splits every message into lines and
runs the patterns on each: both must select the same lines, with the same
numbers, text, spans and message fields.

Known difference, not generated here: a text field holding a non-string (a tool
result's output as an object) is shown as JSON, which the raw record may space
or escape otherwise; a literal reaching into that JSON's punctuation can be
missed by the byte prefilter.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

import pytest

from mem.core import grep as core
from mem.core import transcripts

# What a person's text may hold: what JSON escapes, what case folding treats oddly, CJK, astral.
ALPHABET = (list("abcdeikst KS\"\\/\n\t<>&'.-_()") + ["é", "É", "東", "京", "记忆", "テスト", "🙂", "𝄞", "ſ", "İ", "ı", "K",
                                                  "\u2028", "\x01", "\x7f", "ß"])
WORDS = ["error", "deploy", "tests", "Kelvin", "café", "東京", 'say "hi"', "a\\b", "tab\there", "🙂 ok", "line\nbreak"]


def text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))


def value(rng: random.Random, depth: int = 0):
    """A tool call's argument: strings, numbers (huge ones too), booleans, null, nested."""
    x = rng.random()
    if depth < 2 and x < 0.15:
        return {f"k{i}": value(rng, depth + 1) for i in range(rng.randint(0, 3))}
    if depth < 2 and x < 0.25:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if x < 0.3:
        return rng.choice([0, -7, 12345678901234567890123, 2 ** 64, -(2 ** 63) - 1, 1.5, 1e300, -0.0, 3.0e-7])
    if x < 0.35:
        return rng.choice([True, False, None])
    return text(rng)


def record(rng: random.Random, i: int) -> dict:
    uuid = f"u{i}"
    ts = rng.choice(["2026-03-01T10:00:00.000Z", "2026-03-02T11:30:00+00:00", "not a time", None])
    common = {"uuid": uuid, "sessionId": rng.choice(["s1", "s2", None]), "timestamp": ts}
    kind = rng.random()
    if kind < 0.25:  # a user's words, as text or blocks
        content = text(rng) if rng.random() < 0.5 else [{"type": "text", "text": text(rng)} for _ in range(rng.randint(1, 3))]
        extra = rng.choice([{}, {}, {"isMeta": True}, {"isCompactSummary": True}])
        return {"type": "user", "message": {"role": "user", "content": content}, **common, **extra}
    if kind < 0.5:  # the assistant's text, thinking and tool calls
        blocks = []
        for _ in range(rng.randint(1, 3)):
            b = rng.random()
            if b < 0.4:
                blocks.append({"type": "text", "text": text(rng)})
            elif b < 0.55:
                blocks.append({"type": "thinking", "thinking": text(rng)})
            else:
                blocks.append({"type": "tool_use", "id": "t1", "name": rng.choice(["Bash", "Edit", text(rng)]),
                               "input": {"command": value(rng), "n": value(rng), "deep": value(rng)}})
        return {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": blocks}, **common}
    if kind < 0.65:  # a tool result, as text or blocks
        body = text(rng) if rng.random() < 0.5 else [{"type": "text", "text": text(rng)}, {"type": "image"}]
        return {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": body}]}, "toolUseResult": {"stdout": text(rng)}, **common}
    if kind < 0.75:  # qwen-code
        parts = rng.choice([
            [{"text": text(rng)}],
            [{"text": text(rng), "thought": True}],
            [{"functionCall": {"name": "run", "args": {"cmd": value(rng)}}}],
            [{"functionResponse": {"name": "run", "response": {rng.choice(["output", "error"]): text(rng)}}}],
        ])
        return {"type": rng.choice(["user", "assistant", "tool_result"]), "uuid": uuid, "sessionId": "q",
                "timestamp": ts, "message": {"role": rng.choice(["user", "model"]), "parts": parts}}
    if kind < 0.82:  # plain {role, content}
        return {"role": rng.choice(["user", "assistant", "system"]), "content": text(rng)}
    if kind < 0.88:
        return {"type": "system", "subtype": "compact_boundary", "content": text(rng), **common}
    # bookkeeping that holds text nobody sees as a message
    return {"type": rng.choice(["queue-operation", "attachment", "summary"]), "content": text(rng), "sessionId": "s1"}


def encode(obj: dict, rng: random.Random) -> bytes:
    """A record as one of several JSON writers would spell it."""
    style = rng.random()
    raw = json.dumps(obj, ensure_ascii=style < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))
    if style < 0.2:  # upper-case \u escapes
        raw = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), raw)
    elif style < 0.3:  # escaped slashes and HTML-safe characters
        raw = raw.replace("/", "\\/").replace("<", "\\u003c").replace("&", "\\u0026")
    return raw.encode("utf-8", "surrogatepass")


def corpus(rng: random.Random) -> bytes:
    lines = []
    for i in range(rng.randint(1, 30)):
        x = rng.random()
        if x < 0.04:
            lines.append(b"")
        elif x < 0.07:
            lines.append(b'{"type": "user", "message": {"content": "torn')  # half-written
        elif x < 0.09:
            lines.append(b"\xff\xfe not json \x00")
        elif x < 0.11:  # invalid UTF-8 inside a string: the stdlib reads it as U+FFFD
            lines.append(b'{"type":"user","uuid":"x","message":{"content":"bad \xff byte error"}}')
        elif x < 0.12:  # what the stdlib reads and msgspec refuses
            lines.append(b'{"type":"user","uuid":"n","message":{"content":"NaN error"},"n":NaN}')
        elif x < 0.13:
            lines.append(b'{"type":"user","uuid":"s","message":{"content":"lone \\ud800 error"}}')
        else:
            lines.append(encode(record(rng, i), rng))
    data = b"\n".join(lines)
    return data if rng.random() < 0.3 else data + b"\n"


def pattern(rng: random.Random, sample: str, fixed: bool) -> str:
    if rng.random() < 0.6 and sample:
        start = rng.randrange(len(sample))
        p = sample[start:start + rng.randint(1, 8)]
    else:
        p = rng.choice(WORDS + ["e", "K", "ſ", "é", "京", "🙂", '"', "\\", "/", "<"])
    if fixed:
        return p
    return rng.choice([re.escape(p), "err(or)?", "d.pl", "[Kk]elvin|café", "東+京", "^t", "s$", "a\\\\b"])


# --- the reference: decode every line with the stdlib, search every line of every message ---------


def reference(data: bytes, matcher: core.Matcher, o: core.Options) -> list[tuple]:
    out = []
    budget = o.max_count
    selected_total = 0
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        at, offset = offset, offset + len(raw) + 1
        parsed = transcripts.parse_lines([raw])
        for message in parsed.messages:
            if message.kind == "meta":
                continue
            role = "tool" if message.kind == "tool_result" else message.role
            if o.roles is not None and role not in o.roles:
                continue
            body = core.message_text(message)
            if not body:
                continue
            lines = body.split("\n")
            picked = reference_spans(lines, matcher)
            session = message.session_id or parsed.session_id or "t"
            shown: dict[int, bool] = {}
            for i, spans in enumerate(picked):
                if spans is None or (budget is not None and selected_total >= budget):
                    continue
                selected_total += 1
                shown[i] = True
                for j in range(max(i - o.before, 0), min(i + o.after, len(lines) - 1) + 1):
                    shown.setdefault(j, False)
            for i in sorted(shown):
                selected = shown[i]
                out.append((number, at, i + 1, lines[i], "\n" if i < len(lines) - 1 else "",
                            picked[i] if selected else [], selected,
                            session, message.uuid, message.timestamp, role, message.kind))
    return out


def reference_spans(lines: list[str], matcher: core.Matcher) -> list[list[tuple[int, int]] | None]:
    """Per line, its match spans when selected, else None: each line on its own, or (a pattern
    holding a newline) the whole text, each match cut into the lines it touches."""
    found: list[list[tuple[int, int]] | None] = [None] * len(lines)
    if not matcher.multiline:
        for k, line in enumerate(lines):
            for rx in matcher.regexes:
                for m in rx.finditer(line):
                    found[k] = found[k] or []
                    if m.end() > m.start():
                        found[k].append(m.span())
            if found[k] and len(matcher.regexes) > 1:
                spans = sorted(found[k])
                found[k] = [spans[0]]
                for span in spans[1:]:
                    if span[0] >= found[k][-1][1]:
                        found[k].append(span)
    else:
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)

        def line_of(pos: int) -> int:
            return max(k for k, start in enumerate(starts) if start <= pos)

        for rx in matcher.regexes:
            for m in rx.finditer("\n".join(lines)):
                for k in range(line_of(m.start()), line_of(max(m.start(), m.end() - 1)) + 1):
                    found[k] = found[k] or []
                    a, b = max(m.start(), starts[k]) - starts[k], min(m.end(), starts[k] + len(lines[k])) - starts[k]
                    if b > a:
                        found[k].append((a, b))
        for spans in found:
            if spans:
                spans.sort()
    if matcher.invert:
        return [[] if spans is None else None for spans in found]
    return found


def fast(path: str, matcher: core.Matcher, o: core.Options) -> list[tuple]:
    result = core.Searcher(matcher, o).search(core.Target(path, "t", "transcript"))
    assert result.error is None, result.error
    return [(line.number, line.offset, line.message_line, line.text, line.eol, line.spans, line.selected,
             line.message.session_id, line.message.uuid, line.message.timestamp, line.message.role, line.message.kind)
            for group in result.groups for line in group]


def groups(path: str, matcher: core.Matcher, o: core.Options) -> list[int]:
    """How many lines each group of the result holds (text output puts -- between groups)."""
    return [len(group) for group in core.Searcher(matcher, o).search(core.Target(path, "t", "transcript")).groups]


def runs(lines: list[tuple]) -> list[int]:
    """The reference's lines as groups: a group is a run of adjacent lines of one record's message."""
    sizes: list[int] = []
    previous = None
    for number, _, message_line, *_ in lines:
        if previous != (number, message_line - 1):
            sizes.append(0)
        sizes[-1] += 1
        previous = (number, message_line)
    return sizes


@pytest.fixture(params=["msgspec", "stdlib"])
def decoder(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(transcripts, "FAST_AFTER", -1)  # never looked for
    else:
        pytest.importorskip("msgspec")
        monkeypatch.setattr(transcripts, "FAST_AFTER", 1)  # from the first record on
    return request.param


@pytest.mark.parametrize("seed", range(150))
def test_fast_search_selects_what_the_reference_does(tmp_path, decoder, seed):
    rng = random.Random(seed)
    data = corpus(rng)
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    texts = [core.message_text(m) for m in transcripts.parse_lines(data.split(b"\n")).messages] or ["error"]
    for _ in range(6):
        fixed = rng.random() < 0.6
        patterns = [pattern(rng, rng.choice(texts), fixed) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        flags = {"fixed": fixed, "ignore_case": rng.random() < 0.4, "word": rng.random() < 0.1,
                 "whole_line": rng.random() < 0.05, "invert": rng.random() < 0.05}
        context = rng.random() < 0.2
        o = core.Options(before=rng.randint(0, 2) if context else 0, after=rng.randint(0, 2) if context else 0,
                         max_count=rng.choice([None, None, None, 1, 3]) if not context else None,
                         roles=rng.choice([None, None, frozenset({"user"}), frozenset({"assistant", "tool"})]))
        try:
            matcher = core.Matcher(patterns, **flags)
        except Exception:  # noqa: BLE001 - a random regex that does not compile
            continue
        want = reference(data, matcher, o)
        assert fast(str(path), matcher, o) == want, (patterns, flags, o)
        # Unnumbered (what text output asks for): the same lines in the same groups, message_line at most left out.
        unnumbered = replace(o, message_lines=False)
        got = fast(str(path), matcher, unnumbered)
        assert [g[:2] + g[3:] for g in got] == [w[:2] + w[3:] for w in want], (patterns, flags, o)
        assert all(g[2] in (None, w[2]) for g, w in zip(got, want))
        assert groups(str(path), matcher, unnumbered) == groups(str(path), matcher, o) == runs(want)
    searcher = core.Searcher(core.Matcher(["x"], invert=True), core.Options())  # no prefilter: every record decoded
    searcher.search(core.Target(str(path), "t.jsonl", "transcript"))
    assert bool(searcher._decoder.fast) == (decoder == "msgspec" and searcher._decoder.decoded > 0)


def test_load_record_reads_what_the_stdlib_reads():
    for raw in [b'{"n": 123456789012345678901234, "f": 0.1, "e": 1e400}', b'{"s": "\\ud800 lone"}', b' {"a": 1}\r',
                b'{"a": NaN}', b'{"bad": "\xff"}', b'{"a": 1, "a": 2}', b"", b"not json", b'{"t": "\\u00e9\\n\\"q\\""}']:
        want = transcripts.parse_lines([raw]).messages, _stdlib(raw)
        assert (transcripts.parse_lines([raw]).messages, transcripts.load_record(raw)) == want or \
            (want[1] != want[1] and raw == b'{"a": NaN}'), raw


def _stdlib(raw: bytes):
    try:
        return json.loads(raw.decode("utf-8", "replace").strip())
    except ValueError:
        return None
