"""What the history costs: writes with and without it, on 200 and 10,000 memories; writes bench/RESULTS.md.

    make bench-history

Every write command records one operation (git, in the state directory). This measures, in one
interleaved run: ``mem log`` (the smallest write: one file appended) with the history and with
git off PATH (the same command, unrecorded), ``mem history -n 1`` (a sync that finds nothing),
``mem undo`` + redo, and the one-time baseline of a 10,000-file directory; and the recall hook,
which must pay nothing (it never opens the history), against ``python3 -c pass``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import make_memory_dir  # noqa: E402
from results import write_section  # noqa: E402
from run import fmt_ms, measure, timed  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "15"))


def _no_git_path(tmp: str) -> str:
    """A PATH holding python3 and nothing else, so the history is off."""
    bin_dir = os.path.join(tmp, "nogit")
    os.makedirs(bin_dir, exist_ok=True)
    os.symlink(sys.executable, os.path.join(bin_dir, "python3"))
    return bin_dir


def _git_processes(argv: list[str], env: dict, tmp: str) -> int:
    """How many git processes a run of ``argv`` starts after another one (nothing changed outside mem between
    them, as the unrecorded rows' writes are), counted by a logging ``git`` first on PATH."""
    subprocess.run(argv, env=env, capture_output=True, check=True)
    bin_dir, log = os.path.join(tmp, "gitlog"), os.path.join(tmp, "git.log")
    os.makedirs(bin_dir, exist_ok=True)
    with open(os.path.join(bin_dir, "git"), "w") as f:
        f.write(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    os.chmod(os.path.join(bin_dir, "git"), 0o755)
    subprocess.run(argv, env={**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}, capture_output=True,
                   check=True)
    with open(log) as f:
        return len(f.read().splitlines())


def _du(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def main() -> int:
    mem = os.path.join(os.path.dirname(sys.executable), "mem")
    load_before = os.getloadavg()[0]  # the absolute figures drift with it; the ratios less so
    with tempfile.TemporaryDirectory(prefix="mem-bench-history-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", "CLAUDE_"))}
        env.update(HOME=os.path.join(tmp, "home"), MEM_STATE_DIR=os.path.join(tmp, "state"))
        os.makedirs(env["HOME"])
        small = make_memory_dir(os.path.join(tmp, "m200"), 200)
        print("bench: writing 10,000 memories ...", file=sys.stderr)
        large = make_memory_dir(os.path.join(tmp, "m10k"), 10_000)
        nogit = {"PATH": _no_git_path(tmp)}
        # The first write on a directory records every file it holds (the baseline), once.
        first = {name: timed([mem, "log", "--dir", root, "first"], env) for name, root in (("200", small), ("10k", large))}
        state_size = _du(env["MEM_STATE_DIR"])
        payload = json.dumps({"session_id": "s1", "transcript_path": None, "cwd": small,
                              "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy to staging?"}).encode()
        samples = measure(
            {
                "python3 -c pass": [sys.executable, "-c", "pass"],
                "mem log, 200 memories (history)": [mem, "log", "--dir", small, "a note"],
                "mem log, 200 memories (no git: unrecorded)": ([mem, "log", "--dir", small, "a note"], lambda: nogit),
                "mem log, 10,000 memories (history)": [mem, "log", "--dir", large, "a note"],
                "mem log, 10,000 memories (no git: unrecorded)": ([mem, "log", "--dir", large, "a note"], lambda: nogit),
                "mem history -n 1, 10,000 memories (sync, nothing changed)": [mem, "history", "-n", "1", "--dir", large],
                # --force: the unrecorded rows write the same daily log, so the newest op is always "changed since"
                "mem undo --force, 10,000 memories (one file)": [mem, "undo", "--force", "--dir", large],
                "mem recall --hook, 200 memories": ([mem, "recall", "--hook", "--dir", small], None, lambda: payload),
            },
            env, rounds=ROUNDS,
        )
        spawns = _git_processes([mem, "log", "--dir", small, "a note"], env, tmp)
        ops = int(subprocess.run([mem, "history", "--dir", large, "--json"], capture_output=True, env=env).stdout.count(b'"id"'))
        git_store = _du(env["MEM_STATE_DIR"])
        shutil.rmtree(large, ignore_errors=True)

    load_after = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in samples.items()}
    base = med["python3 -c pass"]
    rows = "\n".join(f"| {name} | {fmt_ms(m)} | {m / base:.2f}× |" for name, m in med.items())
    over = {n: med[f"mem log, {n} memories (history)"] - med[f"mem log, {n} memories (no git: unrecorded)"]
            for n in ("200", "10,000")}
    body = f"""## History cost (`make bench-history`, bench/history.py)

{ROUNDS} interleaved rounds, medians, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, load average
{load_before:.1f} at the start and {load_after:.1f} at the end; ratios against `python3 -c pass` in the
same run. "no git" runs the same command with git off PATH, where writes happen unrecorded.

| command | median | × python3 -c pass |
|---|---|---|
{rows}

- What the history adds to one write: {fmt_ms(over['200'])} on 200 memories, {fmt_ms(over['10,000'])} on
  10,000 (a sync of the whole directory, the journal, the commit: {spawns} git processes, counted; the sync
  compares stat data, and the content of the files mem wrote since the index was last refreshed, which
  it is once they are more than 32).
- The first write on a directory records every file it holds, once: {fmt_ms(first['200'])} for 200 files,
  {fmt_ms(first['10k'])} for 10,000. State directory after that baseline: {state_size / 2**20:.1f} MiB;
  after {ops} operations on the 10,000-file directory: {git_store / 2**20:.1f} MiB.
- `mem recall --hook` never opens the history (tests/test_imports.py checks that neither the module
  nor `subprocess` is imported on its path); its row is here to show it in the same run.
"""
    write_section("history", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
