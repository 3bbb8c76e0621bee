"""Start-up and scale benchmarks; writes bench/RESULTS.md.

    make bench          # builds dist/mem.pyz and a clean install first

Every figure that is compared is measured in the same run, interleaved, so a
busy machine slows all of them alike; the goals are ratios.

* cold ``mem scan`` on 200 memories: the installed console script (a
  non-editable install with compiled bytecode, as a user gets from pip) and
  the zipapp, against ``python3 -c pass`` and ``python3 -c 'import click'``;
* ``mem scan --all`` on 10,000 memories.
"""

from __future__ import annotations

import itertools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from corpus import make_memory_dir  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "25"))


def python_base() -> str:
    """The real interpreter (not a venv or pyenv shim wrapper)."""
    return getattr(sys, "_base_executable", sys.executable)


def clean_install(where: str) -> str:
    """A fresh venv with ``pip install .`` (compiled .pyc): what users run."""
    subprocess.run([python_base(), "-m", "venv", where], check=True)
    subprocess.run(
        [os.path.join(where, "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ROOT],
        check=True, stderr=subprocess.DEVNULL,
    )
    return os.path.join(where, "bin", "mem")


def timed(argv: list[str], env: dict, stdin: bytes | None = None) -> float:
    """One cold run; exit 1 ("nothing found") counts as a normal outcome, anything else stops the bench."""
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return elapsed


def measure(cases: dict, env: dict, rounds: int = ROUNDS) -> dict[str, list[float]]:
    """Interleaved rounds after one warm-up run each (page cache, shiv's extraction, mem's caches).

    A case is argv, or (argv, a function giving env changes for each run[, a function giving
    stdin for each run]).
    """

    def run(case) -> float:
        argv, extra, *stdin = case if isinstance(case, tuple) else (case, None)
        return timed(argv, {**env, **(extra() if extra else {})}, stdin[0]() if stdin else None)

    for case in cases.values():
        run(case)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            samples[name].append(run(case))
    return samples


def fmt_ms(s: float) -> str:
    return f"{s * 1000:.1f} ms"


def main() -> int:
    zipapp = os.path.join(ROOT, "dist", "mem.pyz")
    if not os.path.exists(zipapp):
        print("bench: dist/mem.pyz is missing; run `make zipapp` (make bench does)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mem-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", "CLAUDE_"))}
        env.update(HOME=os.path.join(tmp, "home"), MEM_STATE_DIR=os.path.join(tmp, "state"), SHIV_ROOT=os.path.join(tmp, "shiv"))
        os.makedirs(env["HOME"])
        print("bench: installing mem into a clean venv ...", file=sys.stderr)
        mem = clean_install(os.path.join(tmp, "venv"))
        # Baselines run the same interpreter, with the same site setup, as the installed script.
        vpy = os.path.join(tmp, "venv", "bin", "python")
        small = make_memory_dir(os.path.join(tmp, "m200"), 200)
        print("bench: writing 10,000 memories ...", file=sys.stderr)
        large = make_memory_dir(os.path.join(tmp, "m10k"), 10_000)
        time.sleep(2.5)  # as in use, the memories are older than the header cache's 2 s "just written" window
        cold = (os.path.join(tmp, f"cold-state-{i}") for i in itertools.count())

        startup = measure(
            {
                "python3 -c pass": [vpy, "-c", "pass"],
                "python3 -c 'import click'": [vpy, "-c", "import click"],
                "mem scan (installed)": [mem, "scan", "--dir", small],
                "mem scan (zipapp)": [vpy, "-sE", zipapp, "scan", "--dir", small],
                # every file read and parsed: the first scan, or one after all 200 files changed
                "mem scan (installed, empty header cache)": ([mem, "scan", "--dir", small], lambda: {"MEM_STATE_DIR": next(cold)}),
            },
            env,
        )
        scale = measure(
            {
                "mem scan --all, 10,000 files (installed)": [mem, "scan", "--all", "--dir", large],
                "mem scan --all --json, 10,000 files (installed)": [mem, "scan", "--all", "--json", "--dir", large],
                "mem scan --all, 10,000 files (installed, empty header cache)":
                    ([mem, "scan", "--all", "--dir", large], lambda: {"MEM_STATE_DIR": next(cold)}),
            },
            env,
            rounds=5,
        )
        # Resident memory of the big scan, from that child's own rusage.
        child = subprocess.Popen([mem, "scan", "--all", "--dir", large], stdout=subprocess.DEVNULL, env=env)
        _, _, usage = os.wait4(child.pid, 0)
        rss = usage.ru_maxrss  # KB on Linux

    base = statistics.median(startup["python3 -c pass"])
    rows = []
    for name, s in startup.items():
        med = statistics.median(s)
        rows.append((name, med, min(s), med / base))
    goals = {"mem scan (installed)": 6.0, "mem scan (zipapp)": 9.0}

    lines = [
        "## Start-up and scale (`make bench`)",
        "",
        f"Written by `make bench` (bench/run.py). Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}.",
        f"Start-up: {ROUNDS} interleaved rounds of cold processes (a new process each time, page cache warm); "
        "ratios are to the median of `python3 -c pass` in the same run, "
        "run by the python of the venv `mem` is installed in.",
        "",
        "### Start-up: `mem scan` on 200 memories",
        "",
        "| command | median | min | × `python3 -c pass` | goal |",
        "|---|---|---|---|---|",
    ]
    verdicts = []
    for name, med, mn, ratio in rows:
        goal = goals.get(name)
        verdict = ""
        if goal:
            ok = ratio <= goal
            verdicts.append(ok)
            verdict = f"≤ {goal:g}× {'✔' if ok else '✘'}"
        lines.append(f"| {name} | {fmt_ms(med)} | {fmt_ms(mn)} | {ratio:.2f}× | {verdict} |")
    lines += [
        "",
        "### Scale: 10,000 memories",
        "",
        "| command | median | min | goal |",
        "|---|---|---|---|",
    ]
    for name, s in scale.items():
        goal = "< 1 s " + ("✔" if statistics.median(s) < 1.0 else "✘") if "--json" not in name else ""
        lines.append(f"| {name} | {fmt_ms(statistics.median(s))} | {fmt_ms(min(s))} | {goal} |")
    verdicts.extend(statistics.median(s) < 1.0 for name, s in scale.items() if "--json" not in name)
    lines += [
        "",
        f"Peak resident memory of `mem scan --all` on 10,000 files: {rss / 1024:.0f} MB.",
        "",
        "The installed script is a non-editable `pip install .` into a fresh venv (bytecode compiled at",
        "install, as users get it). The zipapp is run as `python -sE dist/mem.pyz` by that same venv's",
        "python (what its `#!/usr/bin/env -S python3 -sE` shebang does, minus a pyenv shim and the .pth",
        "files this machine's base interpreter loads at start-up, which no command of ours controls).",
        "The warm-up run before the timed rounds is the zipapp's first, which unpacks it into shiv's",
        "cache; the timed runs start from there through the archive's launcher (scripts/zipapp_main.py).",
        "It also fills the header cache in the state directory (see mem-scan(1)), which the timed runs use,",
        "as every scan after the first does; the *empty header cache* rows start each run with an empty",
        "state directory, so every file is read and parsed and the cache written.",
        "",
    ]
    from results import write_section

    write_section("startup", "\n".join(lines))
    sys.stdout.write("\n".join(lines))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
