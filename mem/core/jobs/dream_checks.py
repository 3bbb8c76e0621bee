"""What a dream reports about a memory directory: near-duplicates, stale and relative dates, contradictions.

Example: findings(memories, today=date(2026, 11, 25)) -> [Finding("stale-date", ["freeze.md"], [...]), ...]

Each check is a small rule a person can follow from its evidence lines:

* **near-duplicate** — two memories the offline recall ranker scores as about
  the same thing: each one, asked as a query, finds the other with at least
  ``NEAR_DUPLICATE`` of the score it gives itself (both ways, so a short note
  inside a long one does not count). Two memories with the same body under
  different names or descriptions ("staging rate limit" / "prod rate limit")
  are never near-duplicates: the same words said of two things is the point.
* **stale-date** — a project memory whose absolute dates (2026-03-12,
  March 12, 2026, 12 Mar 2026) have all passed.
* **relative-date** — "yesterday", "next week", "last Thursday", "in two
  days", "three weeks ago": a date a later session cannot resolve.
* **contradiction** — two memories on the same subject (ranker similarity of at
  least ``SAME_SUBJECT``) where one says always/use/prefer X and the other
  never/don't use/avoid X, or they give one key ("port") different values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

#: Both memories find each other with this share of their own score: a near-duplicate.
#: Calibrated on the labelled pairs of tests/helpers/messy.py: paraphrases score 0.53-0.79, distinct
#: memories at most 0.23 (the pairs planted as contradictions, about one subject, score 0.64-0.72 and are
#: reported as both). The shingle Jaccard this replaces gave the paraphrases 0.00-0.15.
NEAR_DUPLICATE = 0.38
#: A memory is compared with the memories holding at least MIN_SHARED of its QUERY_TERMS rarest terms.
QUERY_TERMS = 16
MIN_SHARED = 3
#: Memories this similar are about the same subject; only those are compared for contradictions.
SAME_SUBJECT = 0.2
#: Evidence lines are cut to this many characters.
EVIDENCE_CHARS = 160


@dataclass
class Finding:
    kind: str  # near-duplicate | stale-date | relative-date | contradiction | unreachable | prose-moved | stale-claim
    files: list[str]
    evidence: list[str] = field(default_factory=list)
    fixed: bool = False
    similarity: float | None = None  # near-duplicates: the ranker similarity

    def as_dict(self) -> dict:
        return {"kind": self.kind, "files": self.files, "evidence": self.evidence, "fixed": self.fixed}

    def line(self) -> str:
        shown = "; ".join(self.evidence[:2])
        return f"{self.kind}{' (fixed)' if self.fixed else ''}: {', '.join(self.files)}" + (f": {shown}" if shown else "")


@dataclass(frozen=True)
class Memory:
    """A topic file as the checks see it."""

    relpath: str
    name: str
    description: str
    type: str | None
    body: str
    mtime_ms: int = 0


def normalise(text: str) -> str:
    """Whitespace collapsed: how texts are compared for being the same."""
    return " ".join(text.split())


def _clip(line: str) -> str:
    line = normalise(line)
    return line if len(line) <= EVIDENCE_CHARS else line[:EVIDENCE_CHARS - 1] + "…"


# --- similarity -----------------------------------------------------------------------------------


def similarities(memories: list[Memory]) -> dict[tuple[str, str], float]:
    """(a, b) -> how alike the ranker finds two memories (0..1, symmetric), for pairs sharing a query term.

    Each memory is asked as a query of its ``QUERY_TERMS`` rarest terms (what
    sets it apart; a whole body as a query would make this quadratic in the
    size of the directory) against the memories holding ``MIN_SHARED`` of them or more.
    """
    from mem.core.recall import ranker

    docs = [ranker.make_doc(m.relpath, ranker.name_text(m.relpath, m.name), m.description, m.body) for m in memories]
    index = ranker.Index(docs)
    index = ranker.Index(docs, df=index.all_df())
    postings: dict[str, list] = {}
    for d in docs:
        for t in {t for counts in d.fields.values() for t in counts}:
            postings.setdefault(t, []).append(d)
    scores: dict[str, dict[str, float]] = {}
    for d in docs:
        held = {t for counts in d.fields.values() for t in counts}
        rare = sorted(held, key=lambda t: (index.df(t), t))[:QUERY_TERMS]
        query = ranker.Query({t: 1.0 for t in rare}, [("latin", (t,)) for t in rare])
        shared: dict[int, int] = {}
        for t in rare:
            for c in postings[t]:
                shared[id(c)] = shared.get(id(c), 0) + 1
        # A word or two in common does not make two memories alike; scoring every such pair would
        # make this quadratic (2,000 memories of random words: 3.6 s with two, 1.8 s with three; 10,000: 38 s).
        candidates = [c for c in {id(c): c for t in rare for c in postings[t]}.values()
                      if c is d or shared[id(c)] >= MIN_SHARED]
        hits = {h.key: h.score for h in index.scores(query, candidates)}
        own = hits.get(d.key, 0.0)
        scores[d.key] = {k: s / own for k, s in hits.items() if own and k != d.key}
    out = {}
    for a, row in scores.items():
        for b, s in row.items():
            if a < b:
                out[(a, b)] = min(s, scores.get(b, {}).get(a, 0.0))
    return out


# --- dates ----------------------------------------------------------------------------------------

_MONTHS = {name: i for i, names in enumerate(
    ("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
     "august aug", "september sep sept", "october oct", "november nov", "december dec"), start=1)
    for name in names.split()}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = (
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), ("y", "m", "d")),
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), ("M", "d", "y")),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I), ("d", "M", "y")),
)
_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)"
_UNIT = r"(?:days?|weeks?|months?|years?)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_RELATIVE = re.compile(
    rf"\b(?:yesterday|tomorrow|(?:last|next|this|coming)\s+(?:week|month|year|quarter|weekend|{_WEEKDAY})"
    rf"|in\s+{_NUMBER}\s+{_UNIT}|{_NUMBER}\s+{_UNIT}\s+ago)\b", re.I)


def dates_in(text: str) -> list[tuple[date, str]]:
    """Every absolute date in ``text`` with the line it is on."""
    found = []
    for line in text.split("\n"):
        for rx, order in _DATE_PATTERNS:
            for m in rx.finditer(line):
                parts = dict(zip(order, m.groups()))
                month = int(parts["m"]) if "m" in parts else _MONTHS[parts["M"].lower()]
                try:
                    found.append((date(int(parts["y"]), month, int(parts["d"])), line))
                except ValueError:
                    continue  # 2026-13-45 is not a date
    return found


def stale_dates(m: Memory, today: date) -> Finding | None:
    """A project memory whose dates have all passed."""
    if m.type != "project":
        return None
    found = dates_in(f"{m.description}\n{m.body}")
    if not found or any(d >= today for d, _ in found):
        return None
    lines = list(dict.fromkeys(_clip(line) for _, line in found))
    return Finding("stale-date", [m.relpath], [f"every date has passed (latest {max(d for d, _ in found)}): {lines[0]}",
                                               *lines[1:]])


def relative_dates(m: Memory) -> Finding | None:
    lines = [line for line in f"{m.description}\n{m.body}".split("\n") if _RELATIVE.search(line)]
    if not lines:
        return None
    words = sorted({x.group(0).lower() for line in lines for x in _RELATIVE.finditer(line)})
    return Finding("relative-date", [m.relpath], [f"relative date ({', '.join(words)}): {_clip(lines[0])}",
                                                  *(_clip(x) for x in lines[1:3])])


# --- contradictions -------------------------------------------------------------------------------

_NEGATIVE = re.compile(r"\b(?:never|don'?t|do not|does not|doesn'?t|avoid|stop(?:ped)? using|no longer)\s+(?:use\s+|using\s+)?"
                       r"((?:[\w.+#-]+\s*){1,3})", re.I)
_POSITIVE = re.compile(r"\b(?:always|use|uses|prefer|prefers|switched to|moved to)\s+((?:[\w.+#-]+\s*){1,3})", re.I)
_VALUE = re.compile(r"\b([a-z][a-z_]{2,})\s*(?:is|=|:|of|at|to)?\s*(\d+(?:\.\d+)?)\b(?![-/:.]\d)", re.I)


def _first_terms(text: str) -> set[str]:
    from mem.core.recall import ranker

    return set(ranker.terms(text)[:2])


def _stances(body: str) -> tuple[dict[str, str], dict[str, str]]:
    """(term -> line said in favour, term -> line said against)."""
    pro: dict[str, str] = {}
    con: dict[str, str] = {}
    for line in body.split("\n"):
        rest = line
        for m in _NEGATIVE.finditer(line):
            for t in _first_terms(m.group(1)):
                con.setdefault(t, line)
            rest = rest.replace(m.group(0), " ")  # "don't use X" must not read as "use X"
        for m in _POSITIVE.finditer(rest):
            for t in _first_terms(m.group(1)):
                pro.setdefault(t, line)
    return pro, con


def _values(body: str) -> dict[str, tuple[set[str], str]]:
    """key term -> (the numbers given for it, a line saying so); dates and months are not keys."""
    from mem.core.recall import ranker

    out: dict[str, tuple[set[str], str]] = {}
    for line in body.split("\n"):
        plain = line
        for rx, _ in _DATE_PATTERNS:
            plain = rx.sub(" ", plain)
        for m in _VALUE.finditer(plain):
            if m.group(1).lower() in _MONTHS:
                continue
            for key in ranker.terms(m.group(1)):
                values, first = out.get(key, (set(), line))
                out[key] = (values | {m.group(2)}, first)
    return out


def contradiction(a: Memory, b: Memory) -> Finding | None:
    """Evidence that two memories on one subject disagree, or None."""
    evidence = []
    (pro_a, con_a), (pro_b, con_b) = _stances(a.body), _stances(b.body)
    for term in sorted(set(pro_a) & set(con_b)):
        evidence += [f"{a.relpath}: {_clip(pro_a[term])}", f"{b.relpath}: {_clip(con_b[term])}"]
    for term in sorted(set(con_a) & set(pro_b)):
        evidence += [f"{a.relpath}: {_clip(con_a[term])}", f"{b.relpath}: {_clip(pro_b[term])}"]
    values_a, values_b = _values(a.body), _values(b.body)
    for key in sorted(set(values_a) & set(values_b)):
        (va, la), (vb, lb) = values_a[key], values_b[key]
        if len(va) == 1 and len(vb) == 1 and va != vb:
            evidence += [f"{a.relpath}: {_clip(la)}", f"{b.relpath}: {_clip(lb)}"]
    if not evidence:
        return None
    return Finding("contradiction", [a.relpath, b.relpath], list(dict.fromkeys(evidence))[:4])


# --- all of them ----------------------------------------------------------------------------------


def findings(memories: list[Memory], today: date, similar: dict[tuple[str, str], float] | None = None) -> list[Finding]:
    """Everything the checks report about ``memories`` (near-duplicates first, then per file, then contradictions)."""
    similar = similarities(memories) if similar is None else similar
    by_path = {m.relpath: m for m in memories}
    out = [Finding("near-duplicate", [a, b], [f"ranker similarity {s:.2f}"], similarity=round(s, 3))
           for (a, b), s in sorted(similar.items(), key=lambda kv: -kv[1])
           if s >= NEAR_DUPLICATE and normalise(by_path[a].body) != normalise(by_path[b].body)]
    for m in memories:
        out += [f for f in (stale_dates(m, today), relative_dates(m)) if f is not None]
    for (a, b), s in sorted(similar.items()):
        if s >= SAME_SUBJECT:
            found = contradiction(by_path[a], by_path[b])
            if found is not None:
                out.append(found)
    return out
