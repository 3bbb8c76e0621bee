"""The poisoning guard's speed: ms per MB on 1, 4 and 16 MB of ordinary and hostile text.

    make bench-poison        # or: .venv/bin/python bench/poison.py [--no-write] [--sizes 1,4,16]

Every write, import, promote and team pull runs ``scan_text`` over the text it lands (an archive of
256 MB included), so the check must be linear and fast: the goal is at most 50 ms per MB of CPU time
(issue #32).
The cases: ordinary memory prose (the example memories, repeated), the same as one line, CJK prose,
and hostile texts: ``<!--`` repeated (never closed, and closed around an instruction word), the
rules' trigger words strewn in sentences (and on one line), one phrase a rule starts with repeated
(``claude.md``, ``do not tell``), two-byte lines. Each size is timed several times and the best run
kept (the machine is shared: the best is the run least disturbed); wall and CPU time both, the goal
judged on CPU time (wall time includes waiting for a core). The
1 MB column of the scan before the one-pass prefilter (tests/helpers/poison_reference.py) is the
"before". Writes the ``poison`` section of bench/RESULTS.md; exits 1 if a case misses the goal.
"""

from __future__ import annotations

import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

MB = 1 << 20
GOAL_MS_PER_MB = 50.0


def _fill(unit: str, size: int) -> str:
    """``unit`` repeated to ``size`` bytes of UTF-8 (cut at a character)."""
    nbytes = len(unit.encode())
    text = unit * (size // nbytes + 1)
    return text.encode()[:size].decode("utf-8", errors="ignore")


def _trigger_words() -> list[str]:
    from mem.core.guards import poison

    words = set()
    for rule in poison.ALL_RULES:
        words |= {w.strip(".,:;\"'()") for w in rule.example.split()}
    for rx in (poison._PROHIBITION, poison._RISK_STRONG, poison._RISK_VERB, poison._INSTRUCTION, poison._MENTION):
        words |= {w for w in rx.pattern.replace("(?:", "|").replace(")", "|").replace("\\b", "").split("|")
                  if w.replace(" ", "").isalpha()}
    return sorted(w for w in words if w)


def _sentences(words: list[str], size: int, seed: int, newline: str) -> str:
    rng = random.Random(seed)
    out, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(6, 16))).capitalize() + rng.choice(".;:,!?")
        out.append(line)
        total += len(line.encode()) + 1
    return _fill(newline.join(out) + newline, size)


def cases(size: int) -> dict[str, str]:
    examples = sorted(os.path.join(d, f) for d, _s, fs in os.walk(os.path.join(ROOT, "examples")) for f in fs
                      if f.endswith(".md"))
    prose = "".join(open(p, encoding="utf-8").read() for p in examples)
    triggers = _trigger_words()
    cjk = ("## \u90e8\u7f72\n\u6bcf\u5468\u4e94\u4e0b\u5348\u90e8\u7f72\u5230\u751f\u4ea7\u73af\u5883\uff0c"
           "\u5148\u8dd1\u5b8c\u96c6\u6210\u6d4b\u8bd5\u3002\u4e0d\u8981\u5728\u5468\u672b\u63a8\u9001\u5230 main\u3002\n"
           "- \u30c6\u30b9\u30c8\u306f `pytest -q` \u3067\u5b9f\u884c\u3059\u308b\u3002\u30ec\u30d3\u30e5\u30fc\u306e"
           "\u524d\u306b\u30ea\u30f3\u30c8\u3092\u901a\u3059\u3002\n")
    return {
        "memory prose": _fill(prose, size),
        "memory prose, one line": _fill(prose.replace("\n", " "), size),
        "CJK prose": _fill(cjk, size),
        "`<!-- ` repeated (never closed)": _fill("<!-- ", size),
        "`<!-- must --> ` repeated": _fill("<!-- must --> ", size),
        "trigger words in sentences": _sentences(triggers, size, 32, "\n"),
        "trigger words, one line": _sentences(triggers, size, 32, " "),
        "`claude.md ` repeated, one line": _fill("claude.md ", size),
        "`do not tell ` repeated, one line": _fill("do not tell ", size),
        "`a\\n` repeated (2-byte lines)": _fill("a\n", size),
    }


def best(scan, text: str, runs: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``runs`` scans."""
    wall = cpu = float("inf")
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        scan(text)
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


def main(argv: list[str]) -> int:
    from helpers import poison_reference
    from mem.core.guards.poison import scan_text

    sizes = [1, 4, 16]
    if "--sizes" in argv:
        sizes = [int(s) for s in argv[argv.index("--sizes") + 1].split(",")]
    scan_text("warm up " * 64)  # the tries are built once per process
    poison_reference.scan_text("warm up " * 64)
    rows, missed = [], []
    for name in cases(MB):
        row = {"case": name}
        text = cases(MB)[name]
        row["before"] = best(poison_reference.scan_text, text, 2)[0] * 1000
        for size in sizes:
            text = cases(size * MB)[name]
            wall, cpu = best(scan_text, text, 5 if size == 1 else 3)
            row[size] = (wall * 1000 / size, cpu * 1000 / size)
            if cpu * 1000 / size > GOAL_MS_PER_MB:
                missed.append((name, size))
        rows.append(row)
        print(name, {k: v for k, v in row.items() if k != "case"}, file=sys.stderr)

    head = "| case | before, 1 MB | " + " | ".join(f"{s} MB" for s in sizes) + f" | {sizes[-1]} MB / 1 MB |"
    lines = [head, "|" + "---|" * (len(sizes) + 3)]
    for row in rows:
        cells = [f"{row[s][0]:.0f} ({row[s][1]:.0f})" for s in sizes]
        ratio = row[sizes[-1]][1] / row[sizes[0]][1]
        lines.append(f"| {row['case']} | {row['before']:.0f} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    body = "\n".join([
        "## The poisoning guard's speed (`make bench-poison`, bench/poison.py)",
        "",
        f"ms per MB of text for `scan_text` (the check every write, import, promote and team pull runs), "
        f"{time.strftime('%Y-%m-%d')}; best of 5 runs at 1 MB, 3 at 4 and 16 MB: wall time, CPU time in "
        "brackets. The machine is shared (2 cores, 8 jobs): wall time there includes waiting for a core, "
        "so the goal (at most "
        f"{GOAL_MS_PER_MB:.0f} ms/MB) and the last column are judged on CPU time. \"before\": wall time "
        "of the scan before the one-pass prefilter (tests/helpers/poison_reference.py), best of 2. The "
        "last column divides the largest size's CPU ms/MB by the smallest's: about 1 for a linear scan.",
        "",
        *lines,
        "",
        "Missed the goal: " + ("; ".join(
            f"{name} ({', '.join(f'{size} MB' for n, size in missed if n == name)})"
            for name in dict.fromkeys(n for n, _size in missed)) if missed else "none") + ".",
    ])
    print(body)
    if "--no-write" not in argv:
        from results import write_section

        write_section("poison", body + "\n\n" + NOTES)
    return 1 if missed else 0


NOTES = """How: each rule's pattern is read once for what every match must contain (alternatives, each a
conjunction of sets of strings); one trie of strings, the most telling set of each alternative,
spots the lines worth a look in one pass over the lower-cased text; a spotted line is tried only by
the rules one of whose alternatives has all its sets on it, and on a line over 4 KB a rule is tried
only where a string its matches begin with is. Findings are the same as the rule-by-rule scan's
(tests/test_poison_equivalence.py); tests/test_poison_speed.py fails if 4x the text takes 8x as long.

Where the goal is missed, the work left is the rules' own, on text that holds what they look for:
a whole line is one unit for the rules (clauses, quotes and matches can run across sentences), so a
megabyte of prose on one line is read end to end by each rule whose strings it holds; text strewn
with trigger words is spotted on every line and holds findings on most (about 2,100 per MB here),
each weighed in its clause; a phrase a rule starts with, every 12 characters, is tried every 12
characters; 75,000 comments per MB are each cut once. All stay linear (last column)."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
