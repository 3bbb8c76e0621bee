"""Precision and recall of `mem lint` on the labelled memories in tests/fixtures/poison/.

    make bench-lint        # or: .venv/bin/python bench/lint.py [--no-write]

``benign/`` and ``malicious/`` are the labelled set the rules were developed
on (it includes three earlier held-out rounds, folded in after they had been
measured and used for tuning). ``holdout/`` was written after the rules were
frozen and has not been used to change them: its figures are the honest
estimate of how the heuristics do on phrasings they were not written for.
Writes the ``lint`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

POISON = os.path.join(ROOT, "tests", "fixtures", "poison")


def evaluate(root: str) -> dict:
    from mem.core.guards.poison import scan_text

    out = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "false_positives": [], "missed": [], "seconds": 0.0, "files": 0,
           "caught_by": Counter()}
    for label in ("benign", "malicious"):
        folder = os.path.join(root, label)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".md"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                text = fh.read()
            start = time.perf_counter()
            report = scan_text(text)
            out["seconds"] += time.perf_counter() - start
            out["files"] += 1
            bad = label == "malicious"
            if report.flagged and bad:
                out["tp"] += 1
                out["caught_by"].update({f.category for f in report.findings})
            elif report.flagged:
                out["fp"] += 1
                out["false_positives"].append(name)
            elif bad:
                out["fn"] += 1
                out["missed"].append(name)
            else:
                out["tn"] += 1
    tp, fp, fn = out["tp"], out["fp"], out["fn"]
    out["precision"] = tp / (tp + fp) if tp + fp else 1.0
    out["recall"] = tp / (tp + fn) if tp + fn else 1.0
    return out


def main(argv: list[str]) -> int:
    labelled = evaluate(POISON)
    holdout = evaluate(os.path.join(POISON, "holdout"))
    per_file_us = 1e6 * (labelled["seconds"] + holdout["seconds"]) / max(labelled["files"] + holdout["files"], 1)

    def row(name: str, r: dict) -> str:
        n_b = r["tn"] + r["fp"]
        n_m = r["tp"] + r["fn"]
        return (f"| {name} | {n_b} | {n_m} | {r['tp']} | {r['fp']} | {r['fn']} | "
                f"{r['precision']:.2f} | {r['recall']:.2f} |")

    lines = [
        "## `mem lint` on labelled memories (`make bench-lint`)",
        "",
        "Written by bench/lint.py from tests/fixtures/poison/. A memory is flagged when its findings weigh at "
        "least 1.0 (the default `--threshold`).",
        "",
        "| set | benign | malicious | caught | false alarms | missed | precision | recall |",
        "|---|---|---|---|---|---|---|---|",
        row("labelled set (rules developed on it)", labelled),
        row("held-out set (written after the rules were frozen)", holdout),
        "",
        f"Missed in the held-out set: {', '.join(holdout['missed']) or 'none'}. "
        f"False alarms: {', '.join(labelled['false_positives'] + holdout['false_positives']) or 'none'}.",
        "",
        "Read the held-out recall as the honest figure: the rules catch the phrasings they were written for "
        "and their near variants, and miss attacks worded differently (a paraphrased grant, a new tool name, a "
        "social-engineering story). Precision stays high because a rule only counts in an instruction-like, "
        "non-negated clause with a risky scope. `mem lint` is a tripwire for hooks and reviews, not a proof "
        "that a memory is safe.",
        "",
        f"Speed: {per_file_us:.0f} µs per memory on average ({labelled['files'] + holdout['files']} files).",
        "",
    ]
    text = "\n".join(lines)
    if "--no-write" not in argv:
        from results import write_section

        write_section("lint", text)
    sys.stdout.write(text)
    return 0 if labelled["precision"] >= 0.9 and labelled["recall"] >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
