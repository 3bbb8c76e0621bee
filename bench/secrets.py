"""Secret detection on the labelled set in tests/fixtures/secrets-bench/: caught, missed, false positives.

    make bench-secrets        # or: .venv/bin/python bench/secrets.py [--no-write]

Each case is labelled with the kind of secret it holds, or the kind a lookalike resembles (an
example key, a placeholder, a UUID). A secret counts as caught when the scanner flags the text and
``redact`` leaves none of it; a lookalike counts as a false positive when any rule flags it. The
"36 rules" columns run the reference's rules alone (no allowlist), as the first version did.
Writes the ``secrets`` section of bench/RESULTS.md; exits 1 unless everything is caught and nothing
else flagged.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "secrets-bench"))

REFERENCE_RULES = 36


def evaluate() -> dict:
    from secrets_bench import cases

    from mem.core.guards import secrets

    reference = secrets.RULES[:REFERENCE_RULES]
    kinds: dict[str, dict] = defaultdict(lambda: {"secrets": 0, "caught": 0, "missed": 0, "ref_caught": 0,
                                                   "lookalikes": 0, "fp": 0, "ref_fp": 0})
    missed, false_positives = [], []
    all_cases = cases()
    for case in all_cases:
        row = kinds[case.kind]
        flagged = secrets.scan(case.text)
        redacted = secrets.redact(case.text)
        by_reference = any(rule.pattern.search(case.text) for rule in reference)
        if case.is_secret:
            row["secrets"] += 1
            row["ref_caught"] += by_reference
            if flagged and case.secret not in redacted:
                row["caught"] += 1
            else:
                row["missed"] += 1
                missed.append(case)
        else:
            row["lookalikes"] += 1
            row["ref_fp"] += by_reference
            if flagged:
                row["fp"] += 1
                false_positives.append((case, [f.rule_id for f in flagged]))
    return {"kinds": dict(kinds), "missed": missed, "false_positives": false_positives}


def main(argv: list[str]) -> int:
    result = evaluate()
    kinds = result["kinds"]
    total = {key: sum(row[key] for row in kinds.values()) for key in next(iter(kinds.values()))}
    n_kinds = sum(1 for row in kinds.values() if row["secrets"])

    def row(name: str, r: dict) -> str:
        secrets_cell = f"{r['secrets']}" if r["secrets"] else "–"
        caught = f"{r['caught']}" if r["secrets"] else "–"
        missed = f"{r['missed']}" if r["secrets"] else "–"
        ref = f"{r['ref_caught']}" if r["secrets"] else "–"
        looks = f"{r['lookalikes']}" if r["lookalikes"] else "–"
        fp = f"{r['fp']}" if r["lookalikes"] else "–"
        ref_fp = f"{r['ref_fp']}" if r["lookalikes"] else "–"
        return f"| {name} | {secrets_cell} | {caught} | {missed} | {ref} | {looks} | {fp} | {ref_fp} |"

    lines = [
        "## Secret detection (`make bench-secrets`, bench/secrets.py)",
        "",
        f"Written by bench/secrets.py from the labelled set in tests/fixtures/secrets-bench/ (fake secrets "
        f"generated from a fixed seed): {total['secrets']} secrets of {n_kinds} kinds and "
        f"{total['lookalikes']} lookalikes (documented example keys, placeholders, UUIDs, git SHAs, base64 of "
        "prose). Caught: flagged, and `redact` leaves none of the secret. \"36 rules\": the reference's rules "
        "alone, as the first version ran them.",
        "",
        "| kind | secrets | caught | missed | flagged by the 36 rules | lookalikes | false positives | "
        "false positives of the 36 rules |",
        "|---|---|---|---|---|---|---|---|",
        *(row(f"`{name}`", kinds[name]) for name in sorted(kinds)),
        row("**all**", total),
        "",
        f"Missed: {', '.join(f'{c.kind} ({c.text[:30]!r}…)' for c in result['missed']) or 'none'}. "
        f"False positives: {', '.join(f'{c.kind} by {ids}' for c, ids in result['false_positives']) or 'none'}.",
        "",
        "The set was written with the rules, so it shows what they are meant to catch and leave alone, not "
        "how they do on secrets nobody thought of: a password given without a verb or a key name, a "
        "passphrase of plain words, a secret split across lines all go through.",
        "",
    ]
    text = "\n".join(lines)
    if "--no-write" not in argv:
        from results import write_section

        write_section("secrets", text)
    sys.stdout.write(text)
    return 0 if total["missed"] == 0 and total["fp"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
