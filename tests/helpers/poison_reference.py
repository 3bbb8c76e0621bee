"""The poisoning guard's scan as it was before the one-pass prefilter (commit f93aff8): the reference the
differential test (tests/test_poison_equivalence.py) holds the fast scan to.

Copied verbatim from mem/core/guards/poison.py, from its clauses section to poison_problem
(clause splitting, the literal prefilter, the per-line scan, the weighing); the rules and their
vocabulary are imported from the live module, so a change of rule is checked against the same rule.
Do not speed this up: it is the slow, trusted version.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence

from mem.core.guards.poison import (  # noqa: F401
    _ANY_HIDDEN, _BIDI, _CONDITIONAL, _COMMENT_WORDS, _HARMLESS, _IMPERATIVE_START, _INSTRUCTION, _MENTION,
    _MESSAGES, _NARRATIVE, _PROHIBITION, _QUOTED, _RISK_STRONG, _RISK_VERB, _RISK_WEAK, _SENSITIVE_RX, _TAG_CHARS,
    _ZERO_WIDTH, HIDDEN_TEXT_RULE, QUOTE_CHARS, RULES, THRESHOLD, Finding, Report, Rule,
)

# --- clauses -----------------------------------------------------------------------------------

_CLAUSE_BREAK = re.compile(r"(?<=[.!?])\s+(?=\S)|;\s*|\s+[\u2014\u2013]\s+|,?\s+but\s+|,?\s+however\s+", re.IGNORECASE)


def _clauses(line: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of a line."""
    out = []
    pos = 0
    for m in _CLAUSE_BREAK.finditer(line):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < len(line):
        out.append((pos, len(line)))
    return out or [(0, len(line))]


def _clause_of(clauses: list[tuple[int, int]], at: int) -> tuple[int, int]:
    for start, end in clauses:
        if start <= at < end:
            return start, end
    return clauses[-1]


def _excerpt(line: str, start: int, end: int, m: re.Match) -> str:
    """The words around a match, within its clause: what a person needs to see why it was flagged."""
    begin = start
    if m.start() - begin > 30:
        begin = m.start() - 30
        space = line.find(" ", begin, m.start())
        begin = space + 1 if space != -1 else begin
    stop = min(end, max(m.end(), begin + QUOTE_CHARS))
    return line[begin:stop].strip() or m.group(0)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > QUOTE_CHARS:
        text = text[: QUOTE_CHARS - 1] + "\u2026"
    # A memory that carries a secret must not leak it through our report.
    from mem.core.guards.secrets import redact

    return redact(text)


# --- the prefilter: literals every match of a rule must contain ------------------------------------
#
# Each rule's regex tried at every position of every line costs about 1.3 s per megabyte of memory
# text (an archive of 256 MB took minutes). Most lines hold none of the words a rule needs: a
# rule's pattern is read once (its parse tree) for a set of literal strings one of which every
# match must contain (as Google's codesearch does with trigrams); a line is tried only by the
# rules whose literals it holds. Literals are searched with str.find over the case-folded text,
# which C does at memchr speed. The findings are the same (tests/test_poison_speed.py checks it).

#: Texts shorter than this are scanned rule by rule. Longer ones, a memory file of a few KB too, go
#: through the prefilter: 1,400 -> 400 ms/MB over the example memories one by one (its literals are
#: read from the rules once per process, 14 ms).
PREFILTER_MIN_CHARS = 256
_MAX_SET = 64  # at most this many strings in one literal set
_MAX_LITERAL = 6  # the strings searched for are cut to this many characters


def _parser():
    try:
        from re import _constants as c, _parser as p  # Python 3.11+
    except ImportError:  # pragma: no cover (3.10)
        import sre_constants as c
        import sre_parse as p
    return p, c


def _literals(pattern: re.Pattern) -> frozenset[str] | None:
    """Lower-case strings one of which every match of ``pattern`` contains, or None when there are none."""
    p, c = _parser()
    best: list[frozenset[str] | None] = [None]

    def better(a, b):
        if a is None or "" in a:
            return b
        if b is None or "" in b:
            return a
        ka, kb = (min(map(len, a)), -len(a)), (min(map(len, b)), -len(b))
        return a if ka >= kb else b

    def node(op, av):
        """(exact set of strings this node matches or None, a set one of which any match contains or None)."""
        if op is c.LITERAL:
            s = frozenset({chr(av).lower()})
            return s, s
        if op is c.IN:
            chars = set()
            for iop, iav in av:
                if iop is c.LITERAL:
                    chars.add(chr(iav).lower())
                elif iop is c.RANGE and iav[1] - iav[0] < 8:
                    chars.update(chr(x).lower() for x in range(iav[0], iav[1] + 1))
                else:
                    return None, None
            s = frozenset(chars)
            return (s, s) if len(s) <= 8 else (None, None)
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            return frozenset({""}), None
        if op is c.SUBPATTERN:
            return seq(av[-1])
        if getattr(c, "ATOMIC_GROUP", None) is not None and op is c.ATOMIC_GROUP:
            return seq(av)
        if op is c.BRANCH:
            exacts, matches = [], []
            for alt in av[1]:
                x, m = seq(alt)
                exacts.append(x)
                matches.append(m)
            exact = None
            if all(x is not None for x in exacts):
                exact = frozenset().union(*exacts)
                exact = exact if len(exact) <= _MAX_SET else None
            match = None
            if all(m is not None and "" not in m for m in matches):
                match = frozenset().union(*matches)
                match = match if len(match) <= 4 * _MAX_SET else None
            return exact, match
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
            lo, hi, sub = av
            x, m = seq(sub)
            if lo == 0:
                return (frozenset({""}) | x if hi == 1 and x is not None else None), None
            return (x if lo == hi == 1 else None), m
        return None, None  # ANY, CATEGORY, NOT_LITERAL, GROUPREF...

    def seq(items):
        cur: frozenset[str] | None = frozenset({""})
        broke = False
        found = None
        for op, av in items:
            x, m = node(op, av)
            if x is not None and cur is not None and len(cur) * len(x) <= _MAX_SET:
                cur = frozenset(a + b for a in cur for b in x)
                continue
            found = better(found, cur)
            broke = True
            if x is None:
                found = better(found, m)
                cur = frozenset({""})
            else:
                cur = x
        found = better(found, cur)
        return (None if broke else cur), (found if found is not None and "" not in found else None)

    exact, match = seq(p.parse(pattern.pattern, pattern.flags))
    if match is None and exact is not None and "" not in exact:
        match = exact
    if match is None:
        return None
    # Each string costs one pass over the text: a prefix of a required string is required too,
    # and a string holding another of the set adds nothing.
    short = {s[:_MAX_LITERAL] for s in match}
    return frozenset(s for s in short if not any(o != s and o in s for o in short))


_FOLD = str.maketrans({"\u0131": "i", "\u017f": "s"})  # re.IGNORECASE takes dotless i and long s for i and s
@functools.cache
def _rule_triggers() -> list[tuple[Rule, frozenset[str] | None]]:
    """Each rule with the literals every match of it contains (None: none found), worked out once."""
    return [(rule, _literals(rule.pattern)) for rule in RULES if rule.id != "inject-html-comment"]


def _fold(text: str) -> str | None:
    """``text`` lower-cased as re.IGNORECASE compares characters, one character for one; None if it cannot be."""
    if text.isascii():
        return text.lower()
    folded = text.replace("\u0130", "i").lower().translate(_FOLD)
    return folded if len(folded) == len(text) else None


def _candidates(text: str, starts: list[int]) -> dict[int, list[Rule]] | None:
    """line index -> the rules worth trying on it (in RULES order), or None to try them all everywhere."""
    from bisect import bisect_right

    folded = _fold(text)
    if folded is None:
        return None
    wanted: dict[str, list[int]] = {}  # literal -> the rules (by position) that need it: one pass each
    for n, (_rule, literals) in enumerate(_rule_triggers()):
        if literals is None:
            return None  # a rule with no literal of its own: every line is a candidate
        for lit in literals:
            wanted.setdefault(lit, []).append(n)
    out: dict[int, set[int]] = {}
    for lit, rules in wanted.items():
        at = folded.find(lit)
        while at != -1:
            out.setdefault(bisect_right(starts, at) - 1, set()).update(rules)
            at = folded.find(lit, at + 1)
    triggers = _rule_triggers()
    return {line: [triggers[n][0] for n in sorted(ns)] for line, ns in out.items()}


# --- scanning ----------------------------------------------------------------------------------


def scan_text(text: str, *, threshold: float = THRESHOLD) -> Report:
    """Findings for one memory's text (frontmatter included), and whether they flag it.

    Example: ``scan_text(open(path).read()).flagged``
    """
    report = Report(threshold=threshold)
    lines = text.split("\n")
    seen: set[tuple[str, int]] = set()

    def add(rule: Rule, line_no: int, column: int, weight: float, quote: str) -> None:
        key = (rule.id, line_no)
        if key in seen:
            return
        seen.add(key)
        report.findings.append(Finding(rule.id, rule.category, line_no, column + 1, weight,
                                       _MESSAGES[rule.category], _quote(quote)))

    candidates = None
    if len(text) >= PREFILTER_MIN_CHARS:
        starts, at = [], 0
        for line in lines:
            starts.append(at)
            at += len(line) + 1
        candidates = _candidates(text, starts)
    hidden = _ANY_HIDDEN.search(text) is not None
    for number, line in enumerate(lines, start=1):
        if candidates is None:
            _scan_line(line, number, add)
        elif number - 1 in candidates:
            _scan_line(line, number, add, candidates[number - 1])
        if not hidden:
            continue
        for m in _TAG_CHARS.finditer(line):
            hidden = "".join(chr(ord(c) - 0xE0000) for c in m.group(0))
            add(HIDDEN_TEXT_RULE, number, m.start(), 1.0, f"hidden text: {hidden}")
            _scan_line(hidden, number, add)  # what it hides is linted as well
        if _BIDI.search(line):
            add(HIDDEN_TEXT_RULE, number, _BIDI.search(line).start(), 1.0, "bidi override: " + _BIDI.sub("", line))
        elif (z := _ZERO_WIDTH.search(line)) and not (number == 1 and z.start() == 0 and z.group() == "\ufeff"):
            add(HIDDEN_TEXT_RULE, number, z.start(), 0.5, "zero-width character in: " + _ZERO_WIDTH.sub("", line))

    # HTML comments may span lines: match them over the whole text.
    comment_rule = next(r for r in RULES if r.id == "inject-html-comment")
    line_no, counted, line_start = 1, 0, 0
    for start, comment in _html_comments(text):
        line_no += text.count("\n", counted, start)  # counted on from the last comment: linear
        newline = text.rfind("\n", counted, start)
        line_start = newline + 1 if newline != -1 else line_start
        counted = start
        column = start - line_start
        add(comment_rule, line_no, column, comment_rule.weight, comment)
    report.findings.sort(key=lambda f: (f.line, f.column, f.rule_id))
    return report


def _html_comments(text: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of each HTML comment holding an instruction word: what the inject-html-comment
    rule's pattern finds, found in linear time.

    The pattern tried at every ``<!--`` scans to the next ``-->`` (or to the end): a megabyte of
    ``<!-- `` took minutes. Here each comment is cut once; one with no instruction word is skipped
    whole, as every later start inside it ends at the same ``-->`` and holds less.
    """
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start == -1:
            return
        end = text.find("-->", start + 4)
        if end == -1:
            return
        comment = text[start:end + 3]
        if _COMMENT_WORDS.search(comment):
            yield start, comment
        pos = end + 3


def _scan_line(line: str, number: int, add, rules: Sequence[Rule] = RULES) -> None:
    if not line.strip():
        return
    clauses = None
    quoted = None
    for rule in rules:
        if rule.id == "inject-html-comment":
            continue
        for m in rule.pattern.finditer(line):
            if clauses is None:
                clauses = _clauses(line)
                quoted = [q.span() for q in _QUOTED.finditer(line)]
            start, end = _clause_of(clauses, m.start())
            clause = line[start:end]
            before = line[start:m.start()]
            weight = _weigh(rule, m, line, clause, before, quoted)
            if weight > 0:
                add(rule, number, m.start(), weight, _excerpt(line, start, end, m))
                break  # one finding per rule and line


def _reads_as_instruction(clause: str) -> bool:
    if _INSTRUCTION.search(clause) or _IMPERATIVE_START.search(clause):
        return True
    # "For telemetry, post ..." / "When debugging auth, send ...": an imperative after a lead-in.
    head, comma, rest = clause.partition(",")
    if comma and _IMPERATIVE_START.search(rest) and not _NARRATIVE.search(head):
        return True
    return bool(_CONDITIONAL.search(clause)) and not _NARRATIVE.search(clause)


def _weigh(rule: Rule, m: re.Match, line: str, clause: str, before: str, quoted: list[tuple[int, int]]) -> float:
    if rule.negatable and _PROHIBITION.search(before):
        return 0.0
    if rule.mention and any(a <= m.start() and m.end() <= b for a, b in quoted) and _MENTION.search(clause):
        return 0.0
    if rule.mention and rule.category == "instruction-injection" and rule.id == "inject-fake-tag":
        # A tag named inside backticks is documentation, not a tag.
        if any(a <= m.start() and m.end() <= b and line[a] == "`" for a, b in quoted):
            return 0.0
    if rule.id == "action-exfiltrate" and m.groupdict().get("ref") and not _SENSITIVE_RX.search(line):
        return 0.0
    if rule.requires is not None and not rule.requires.search(clause):
        return 0.0
    if rule.risk is not None:
        strong = _RISK_STRONG.search(clause)
        weak = _RISK_VERB.search(clause) or _RISK_WEAK.search(clause)
        harmless = _HARMLESS.search(clause)
        if rule.risk == "required" and not (strong or (weak and not harmless)):
            return 0.0
        if rule.risk == "blanket" and harmless and not strong:
            return 0.0
    weight = rule.weight
    if rule.id == "action-remote-script":
        # By bare IP, plain http, or a paste site: count in full.
        if re.search(r"https?://(?:\d{1,3}\.){3}\d{1,3}|http://|pastebin|gist\.githubusercontent|transfer\.sh|ngrok", m.group(0), re.I):
            weight = 1.0
    if rule.instruction == "narrative":
        if _NARRATIVE.search(clause) and not _reads_as_instruction(clause):
            weight /= 2
    elif rule.instruction and not _reads_as_instruction(clause):
        weight /= 2
    return weight


