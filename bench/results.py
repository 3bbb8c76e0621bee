"""bench/RESULTS.md is shared by several benchmarks; each owns one marked section."""

from __future__ import annotations

import os
import re

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
HEADER = "# Benchmark results\n\nEach section is written by the benchmark named in it; re-run that one to refresh it.\n"


def write_section(name: str, body: str, path: str = PATH) -> None:
    """Replace (or append) the section between <!-- name:start --> and <!-- name:end -->."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        text = HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
    os.replace(tmp, path)
