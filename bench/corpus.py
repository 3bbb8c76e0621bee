"""Synthetic memory directories for the benchmarks (deterministic)."""

from __future__ import annotations

import os
import random

TYPES = ("user", "feedback", "project", "reference")
WORDS = (
    "deploy staging postgres migration review tests flaky cache latency dashboard oncall "
    "release freeze branch style tabs spaces typescript golang react auth session token "
    "compliance ingest pipeline linear grafana incident rollback feature flag budget"
).split()


def make_memory_dir(root: str, n: int, *, seed: int = 0) -> str:
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    index = []
    for i in range(n):
        t = TYPES[i % 4]
        words = rng.sample(WORDS, 6)
        name = f"{t}-{words[0]}-{words[1]}-{i}"
        rel = f"{t}_{words[0]}_{i}.md" if i % 10 else f"topics/{t}_{words[0]}_{i}.md"
        desc = " ".join(rng.sample(WORDS, 10))
        body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(14)) for _ in range(rng.randint(3, 25)))
        if t in ("feedback", "project"):
            body += "\n\n**Why:** " + " ".join(rng.sample(WORDS, 8)) + "\n\n**How to apply:** " + " ".join(rng.sample(WORDS, 8))
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"---\nname: {name}\ndescription: {desc}\ntype: {t}\n---\n\n{body}\n")
        mtime = 1_700_000_000 + i * 60
        os.utime(path, (mtime, mtime))
        if len(index) < 180:
            index.append(f"- [{name}]({rel}) — {desc[:60]}")
    with open(os.path.join(root, "MEMORY.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(index) + "\n")
    return root
