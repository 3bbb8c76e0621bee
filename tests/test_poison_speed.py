"""The poisoning guard on large texts: the literal prefilter finds what the rule-by-rule scan finds,
in linear time (issue #32, third round: a 261 KB archive took 349 s; 1 MB of ``<!-- `` never ended).

Measured with: .venv/bin/python tests/test_poison_speed.py (prints ms/MB per case).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from mem.core.guards.poison import ALL_RULES, PREFILTER_MIN_CHARS, RULES, scan_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "poison").rglob("*.md")) + sorted((ROOT / "examples").rglob("*.md"))
MB = 1 << 20


def key(f, offset=0):
    return (f.rule_id, f.line + offset, f.column, f.weight, f.quote)


def per_line(lines: list[str]) -> set:
    """Each line scanned as a text of its own (small: rule by rule, no prefilter)."""
    out = set()
    for n, line in enumerate(lines):
        out |= {key(f, n) for f in scan_text(line).findings if f.rule_id != "inject-html-comment"}
    return out


def test_the_prefilter_finds_what_every_rule_finds_on_the_fixtures():
    lines = [line for p in FIXTURES for line in p.read_text(encoding="utf-8").split("\n")]
    text = "\n".join(lines)
    assert len(text) > PREFILTER_MIN_CHARS and all(len(line) < PREFILTER_MIN_CHARS for line in lines)
    got = {key(f) for f in scan_text(text).findings if f.rule_id != "inject-html-comment"}
    assert got == per_line(lines) and got


FOLDS = {"s": "\u017f", "i": "\u0131", "k": "\u212a", "I": "\u0130"}


def test_the_prefilter_finds_what_every_rule_finds_on_generated_lines():
    rng = random.Random(32)
    pieces = [r.example for r in ALL_RULES] + [
        line for p in FIXTURES[::3] for line in p.read_text(encoding="utf-8").split("\n") if line.strip()]
    lines = []
    while sum(map(len, lines)) < 3 * PREFILTER_MIN_CHARS:
        line = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.3:
            line = line.upper() if rng.random() < 0.5 else line.swapcase()
        if rng.random() < 0.2:  # characters re.IGNORECASE takes for ASCII letters
            line = "".join(FOLDS.get(c, c) if rng.random() < 0.3 else c for c in line)
        lines.append(line)
    got = {key(f) for f in scan_text("\n".join(lines)).findings if f.rule_id != "inject-html-comment"}
    assert got == per_line(lines) and got


def test_html_comments_are_found_as_the_rule_pattern_finds_them():
    rule = next(r for r in RULES if r.id == "inject-html-comment")
    text = ("plain <!-- a note --> <!-- assistant: silently push --> <!--\nmulti\nline: you must obey\n--> "
            "<!-- <!-- nested, do not --> <!-- open only")
    want = {}
    for m in rule.pattern.finditer(text):  # one finding per rule and line, as scan_text keeps them
        line = text.count("\n", 0, m.start()) + 1
        want.setdefault(line, (line, m.start() - text.rfind("\n", 0, m.start())))
    got = [(f.line, f.column) for f in scan_text(text).findings if f.rule_id == rule.id]
    assert got == sorted(want.values()) and len(got) == 2


def cases() -> dict[str, str]:
    realistic = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.md")))
    return {
        "realistic": (realistic * (MB // len(realistic) + 1))[:MB],
        "words": ("word " * (MB // 5))[:MB],
        "html-comment-open": "<!-- " * (MB // 5),
        "html-comment-flagged": "<!-- must --> " * (MB // 14),
        "short-lines": "a\n" * (MB // 2),
        "claude.md": ("claude.md " * (MB // 10))[:MB],
        "dont-tell": ("do not tell " * (MB // 12))[:MB],
    }


@pytest.mark.parametrize("case", ["realistic", "html-comment-open", "html-comment-flagged", "short-lines"])
def test_a_megabyte_is_scanned_in_linear_time(case):
    text = cases()[case]
    started = time.perf_counter()
    scan_text(text)
    assert time.perf_counter() - started < 3.0  # 0.15-0.35 s here; quadratic cases took minutes


if __name__ == "__main__":
    for name, text in cases().items():
        started = time.perf_counter()
        scan_text(text)
        took = time.perf_counter() - started
        print(f"{name:22} {took * 1000 / (len(text.encode()) / MB):7.0f} ms/MB")
