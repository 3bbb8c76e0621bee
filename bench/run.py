"""Start-up and scale benchmarks; writes bench/RESULTS.md.

    make bench          # builds dist/mem-pyX.Y.pyz and a clean install first

Every figure that is compared is measured in the same run, interleaved, so a
busy machine slows all of them alike; the goals are ratios.

* cold ``mem scan`` on 200 memories: the installed console script (a
  non-editable install with compiled bytecode, as a user gets from pip) and
  the zipapp, against ``python3 -c pass`` and ``python3 -c 'import click'``;
* cold ``mem recall --offline`` on the same 200 memories, installed and zipapp;
* the recall hook on every prompt, as Claude Code runs it: without a key
  (installed and zipapp: at most 4× and 6× ``python3 -c pass``, issue #26),
  with a key where the offline ranker is sure (no model asked), and with a
  key where it is unsure, so the model is asked, of a local Messages-API
  server (tests/fakeapi.py) that answers at once; the same with an
  OpenAI-compatible backend (tests/fakeopenai.py); and with servers of both that
  answer in 10 s, where the hook must give the ranker's pick by its deadline;
* the same hook on PreToolUse (a Bash call), where one feedback memory applies and where
  nothing does, against the keyless prompt hook (at most 1.5×: it runs before every tool call);
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

sys.path.insert(0, ROOT)
from mem.core.hooks.recall import HOOK_DEADLINE  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "25"))
#: The keyed hook that asks the model (server answering at once) against the keyless hook.
KEYED_HOOK_GOAL = 1.5
#: The hook with a 10 s server returns within its deadline and this much.
DEADLINE_SLACK = 0.3
DEADLINE_ROUNDS = int(os.environ.get("BENCH_DEADLINE_ROUNDS", "5"))


def zipapp_path(version: tuple[int, int] | None = None) -> str:
    """The zipapp `make zipapp` builds for this interpreter (scripts/build_zipapp.py names it)."""
    major, minor = version or sys.version_info[:2]
    return os.path.join(ROOT, "dist", f"mem-py{major}.{minor}.pyz")


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


def hook_setup(tmp: str, small: str):
    """A memory directory for the hook rows (the labelled memories among 200 synthetic ones), a
    prompt the ranker is sure of, one it is unsure of, and the file the model picks for it."""
    import json
    import shutil

    from mem.core import recall
    from mem.core.memdir import manifest
    from mem.core.memdir.store import MemoryDir

    bench = os.path.join(ROOT, "tests", "fixtures", "recall-bench")
    hook_dir = os.path.join(tmp, "hook-memories")
    shutil.copytree(small, hook_dir)
    for name in os.listdir(os.path.join(bench, "memories")):
        shutil.copy(os.path.join(bench, "memories", name), hook_dir)
    index = recall.offline_index(MemoryDir(hook_dir), manifest.scan(hook_dir))
    with open(os.path.join(bench, "queries.json"), encoding="utf-8") as fh:
        queries = [q for q in json.load(fh) if q["relevant"]]

    def best(q):
        hits = index.scores(q["query"])
        return hits[0].score if hits else 0.0

    sure = next(q for q in queries if best(q) >= recall.SURE_MATCH_FROM)
    unsure = next(q for q in queries if not recall.ranker_is_sure(best(q)))
    return hook_dir, sure["query"], unsure["query"], unsure["relevant"][0]


SESSIONS = itertools.count()  # one numbering for every hook row: no two runs share a session


def hook_payloads(prompt: str):
    """A UserPromptSubmit payload for ``prompt``, a new session each time (so each run surfaces)."""
    import json

    transcript = os.path.join(ROOT, "tests", "fixtures", "hooks", "claude-code", "transcript-05.jsonl")
    return lambda: json.dumps({"session_id": f"bench-{next(SESSIONS)}", "cwd": ROOT, "prompt": prompt,
                               "hook_event_name": "UserPromptSubmit", "transcript_path": transcript}).encode()


def tool_setup(tmp: str, small: str) -> str:
    """A memory directory for the PreToolUse rows: the tool-call bench's 40 memories among 200 synthetic ones."""
    import shutil

    bench = os.path.join(ROOT, "tests", "fixtures", "toolcall-bench", "memories")
    tool_dir = os.path.join(tmp, "tool-memories")
    shutil.copytree(small, tool_dir)
    for name in os.listdir(bench):
        shutil.copy(os.path.join(bench, name), tool_dir)
    return tool_dir


def tool_payloads(command: str):
    """A PreToolUse payload (Bash) for ``command``, a new session each time (so each run surfaces)."""
    import json

    transcript = os.path.join(ROOT, "tests", "fixtures", "hooks", "claude-code", "transcript-05.jsonl")
    return lambda: json.dumps({"session_id": f"bench-{next(SESSIONS)}", "cwd": ROOT, "hook_event_name": "PreToolUse",
                               "transcript_path": transcript, "tool_name": "Bash", "tool_use_id": "toolu_bench",
                               "tool_input": {"command": command, "description": "run"}}).encode()


HOOK_KEYLESS = "mem recall --hook (installed), no API key"
HOOK_ZIPAPP = "mem recall --hook (zipapp), no API key"
HOOK_TOOL = "mem recall --hook (installed), PreToolUse Bash `git push --force origin main`: one feedback surfaced"
HOOK_TOOL_NONE = "mem recall --hook (installed), PreToolUse Bash `git status`: nothing applies"
#: The PreToolUse hook against the keyless prompt hook (issue #30: it runs before every tool call).
TOOL_HOOK_GOAL = 1.5
HOOK_SURE = "mem recall --hook (installed), API key, ranker sure: no model asked"
HOOK_MODEL = "mem recall --hook (installed), API key, ranker unsure: model asked, server answers at once"
HOOK_OPENAI = ("mem recall --hook (installed), OpenAI-compatible backend, ranker unsure: model asked, "
               "server answers at once")
#: the hook rows that ask a model, each against the keyless hook (KEYED_HOOK_GOAL)
HOOK_ASKS = (HOOK_MODEL, HOOK_OPENAI)


def deadline_run(hook: list[str], env: dict, prompt: str, slow_env: dict) -> tuple[list[float], bool, list[str]]:
    """The keyed hook against a server that answers in 10 s (``slow_env`` points at it): (seconds per
    run, whether every run surfaced exactly what the keyless hook surfaces and said it fell back at
    the deadline, the memories the last run surfaced)."""
    payloads = hook_payloads(prompt)
    offline = subprocess.run(hook, input=payloads(), env=env, capture_output=True, check=True).stdout
    keyed = {**env, **slow_env, "MEM_DEBUG": "1"}
    times, same, printed = [], bool(offline), []
    for _ in range(DEADLINE_ROUNDS):
        start = time.perf_counter()
        p = subprocess.run(hook, input=payloads(), env=keyed, capture_output=True)
        times.append(time.perf_counter() - start)
        ok = p.returncode == 0 and p.stdout == offline and b"route=deadline-fallback" in p.stderr
        if not ok:
            print(f"bench: the hook at its deadline gave {p.stdout[:200]!r} {p.stderr[-300:]!r}, "
                  f"the keyless hook {offline[:200]!r}", file=sys.stderr)
        same = same and ok
        printed = surfaced(p.stdout)
    return times, same, printed


def surfaced(stdout: bytes) -> list[str]:
    """The memory files a hook's output surfaced, by name."""
    import json
    import re

    try:
        context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return []
    return re.findall(r"/([\w.-]+\.md):\n", context)


def openai_server(answer: str, latency: float = 0.0):
    """tests/fakeopenai.py's chat-completions server, answering the selector with ``answer``."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fakeopenai import FakeOpenAI, completion

    api = FakeOpenAI(latency=latency).start()
    text = '{"selected_memories": ["%s"]}' % answer
    api.respond_with(lambda body: completion({"role": "assistant", "content": text},
                                             usage={"prompt_tokens": 7_900, "completion_tokens": 9}))
    return api


def fake_server(answer: str, latency: float = 0.0):
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fakeapi import FakeAnthropic

    api = FakeAnthropic(latency=latency).start()
    text = '{"selected_memories": ["%s"]}' % answer
    api.respond_with(lambda body: {"type": "message", "role": "assistant", "model": body.get("model"),
                                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                   "usage": {"input_tokens": None, "output_tokens": 9}})
    return api


def fmt_ms(s: float) -> str:
    return f"{s * 1000:.1f} ms"


def main() -> int:
    zipapp = zipapp_path()
    if not os.path.exists(zipapp):
        print(f"bench: {os.path.relpath(zipapp, ROOT)} is missing; run `make zipapp` (make bench does)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mem-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", "CLAUDE_", "ANTHROPIC_"))}
        env.update(HOME=os.path.join(tmp, "home"), MEM_STATE_DIR=os.path.join(tmp, "state"), SHIV_ROOT=os.path.join(tmp, "shiv"))
        os.makedirs(env["HOME"])
        print("bench: installing mem into a clean venv ...", file=sys.stderr)
        mem = clean_install(os.path.join(tmp, "venv"))
        # Baselines run the same interpreter, with the same site setup, as the installed script.
        vpy = os.path.join(tmp, "venv", "bin", "python")
        small = make_memory_dir(os.path.join(tmp, "m200"), 200)
        print("bench: writing 10,000 memories ...", file=sys.stderr)
        large = make_memory_dir(os.path.join(tmp, "m10k"), 10_000)
        hook_dir, sure, unsure, picked = hook_setup(tmp, small)
        tool_dir = tool_setup(tmp, small)
        time.sleep(2.5)  # as in use, the memories are older than the header cache's 2 s "just written" window
        cold = (os.path.join(tmp, f"cold-state-{i}") for i in itertools.count())
        fast = fake_server(picked)
        keyed = {"ANTHROPIC_API_KEY": "bench-key-not-a-secret", "ANTHROPIC_BASE_URL": fast.url}
        fast_openai = openai_server(picked)
        openai_keyed = {"OPENAI_API_KEY": "bench-key-not-a-secret", "OPENAI_BASE_URL": fast_openai.url,
                        "OPENAI_MODEL": fast_openai.model}
        hook = [mem, "recall", "--hook", "--dir", hook_dir]
        recall_args = ["recall", "--offline", "--dir", small, "the staging deploy failed again with a migration timeout"]

        startup = measure(
            {
                "python3 -c pass": [vpy, "-c", "pass"],
                "python3 -c 'import click'": [vpy, "-c", "import click"],
                "mem scan (installed)": [mem, "scan", "--dir", small],
                "mem scan (zipapp)": [vpy, "-sE", zipapp, "scan", "--dir", small],
                # every file read and parsed: the first scan, or one after all 200 files changed
                "mem scan (installed, empty header cache)": ([mem, "scan", "--dir", small], lambda: {"MEM_STATE_DIR": next(cold)}),
                "mem recall --offline (installed)": [mem, *recall_args],
                "mem recall --offline (zipapp)": [vpy, "-sE", zipapp, *recall_args],
                HOOK_KEYLESS: (hook, None, hook_payloads(unsure)),
                HOOK_ZIPAPP: ([vpy, "-sE", zipapp, *hook[1:]], None, hook_payloads(unsure)),
                HOOK_SURE: (hook, lambda: keyed, hook_payloads(sure)),
                HOOK_MODEL: (hook, lambda: keyed, hook_payloads(unsure)),
                HOOK_OPENAI: (hook, lambda: openai_keyed, hook_payloads(unsure)),
                HOOK_TOOL: ([mem, "recall", "--hook", "--dir", tool_dir], None, tool_payloads("git push --force origin main")),
                HOOK_TOOL_NONE: ([mem, "recall", "--hook", "--dir", tool_dir], None, tool_payloads("git status")),
            },
            env,
        )
        asked = sum(1 for r in fast.requests if r["status"] == 200)
        asked_openai = sum(1 for r in fast_openai.requests if r["method"] == "POST" and r["status"] == 200)
        tool_hook = [mem, "recall", "--hook", "--dir", tool_dir]
        surfaced = subprocess.run(tool_hook, input=tool_payloads("git push --force origin main")(), env=env,
                                  capture_output=True).stdout
        quiet = subprocess.run(tool_hook, input=tool_payloads("git status")(), env=env, capture_output=True).stdout
        if b"feedback_no_force_push.md" not in surfaced or quiet:
            print(f"bench: the PreToolUse hook gave {surfaced[:200]!r} and {quiet[:200]!r}", file=sys.stderr)
            return 1
        fast.stop()
        fast_openai.stop()
        deadlines = {}
        slow = fake_server(picked, latency=10.0)
        try:
            deadlines["Anthropic API key"] = deadline_run(
                hook, env, unsure, {"ANTHROPIC_API_KEY": "bench-key-not-a-secret", "ANTHROPIC_BASE_URL": slow.url})
        finally:
            slow.stop()
        slow = openai_server(picked, latency=10.0)
        try:
            deadlines["OpenAI-compatible backend"] = deadline_run(
                hook, env, unsure, {"OPENAI_API_KEY": "bench-key-not-a-secret", "OPENAI_BASE_URL": slow.url,
                                    "OPENAI_MODEL": slow.model})
        finally:
            slow.stop()
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

    expected_asks = ROUNDS + 1  # the warm-up run too; the sure prompt asks nothing
    if asked != expected_asks or asked_openai != expected_asks:
        print(f"bench: the keyed hooks asked the model {asked} and {asked_openai} times, expected {expected_asks}",
              file=sys.stderr)
        return 1
    base = statistics.median(startup["python3 -c pass"])
    rows = []
    for name, s in startup.items():
        med = statistics.median(s)
        rows.append((name, med, min(s), med / base))
    # The goals of the `mem recall --offline` rows are bench/recall.py's (make bench-recall), judged
    # there; here they stand beside scan's so the start-up budgets are read in one table.
    # The recall hook's (issue #26): it runs before every prompt.
    goals = {"mem scan (installed)": 6.0, "mem scan (zipapp)": 9.0, HOOK_KEYLESS: 4.0, HOOK_ZIPAPP: 6.0}

    lines = [
        "## Start-up and scale (`make bench`)",
        "",
        f"Written by `make bench` (bench/run.py). Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}.",
        f"Start-up: {ROUNDS} interleaved rounds of cold processes (a new process each time, page cache warm); "
        "ratios are to the median of `python3 -c pass` in the same run, "
        "run by the python of the venv `mem` is installed in.",
        "",
        "### Start-up: `mem scan` and `mem recall` on 200 memories, and the recall hook",
        "",
        "| command | median | min | × `python3 -c pass` | × the keyless hook (medians) | min ÷ min | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    keyless = statistics.median(startup[HOOK_KEYLESS])
    keyless_min = min(startup[HOOK_KEYLESS])
    for name, med, mn, ratio in rows:
        goal = goals.get(name)
        verdict = ""
        if goal:
            ok = ratio <= goal
            verdicts.append(ok)
            verdict = f"≤ {goal:g}× {'✔' if ok else '✘'}"
        to_hook = f"{med / keyless:.2f}× | {mn / keyless_min:.2f}×" if name.startswith("mem recall --hook") else " | "
        if name in HOOK_ASKS:
            ok = med / keyless <= KEYED_HOOK_GOAL
            verdicts.append(ok)
            verdict = f"≤ {KEYED_HOOK_GOAL:g}× the keyless hook {'✔' if ok else '✘'}"
        if name in (HOOK_TOOL, HOOK_TOOL_NONE):
            ok = med / keyless <= TOOL_HOOK_GOAL
            verdicts.append(ok)
            verdict = f"≤ {TOOL_HOOK_GOAL:g}× the keyless hook {'✔' if ok else '✘'}"
        lines.append(f"| {name} | {fmt_ms(med)} | {fmt_ms(mn)} | {ratio:.2f}× | {to_hook} | {verdict} |")
    lines += ["", "The hook goal is judged on medians; on a busy machine they scatter, so the ratio of the "
                  "minimums is shown beside them."]
    limit = HOOK_DEADLINE + DEADLINE_SLACK
    lines += [
        "",
        f"### The hook's deadline: a server that answers in 10 s ({DEADLINE_ROUNDS} runs each)",
        "",
        "| command | median | max | printed (memories surfaced) | goal |",
        "|---|---|---|---|---|",
    ]
    for which, (deadline, offline_out, printed) in deadlines.items():
        ok = max(deadline) <= limit and offline_out
        verdicts.append(ok)
        lines.append(
            f"| mem recall --hook (installed), {which}, ranker unsure, server answers in 10 s | "
            f"{fmt_ms(statistics.median(deadline))} | {fmt_ms(max(deadline))} | {', '.join(printed) or 'nothing'} | "
            f"every run ≤ {HOOK_DEADLINE:g} s deadline + {DEADLINE_SLACK:g} s, with the keyless hook's output "
            f"{'✔' if ok else '✘'} |")
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
        "install, as users get it). The zipapp is run as `python -sE dist/mem-pyX.Y.pyz` by that same venv's",
        "python (what its `#!/usr/bin/env -S python3 -sE` shebang does, minus a pyenv shim and the .pth",
        "files this machine's base interpreter loads at start-up, which no command of ours controls).",
        "The warm-up run before the timed rounds is the zipapp's first, which unpacks it into shiv's",
        "cache; the timed runs start from there through the archive's launcher (scripts/zipapp_main.py).",
        "It also fills the header cache in the state directory (see mem-scan(1)), which the timed runs use,",
        "as every scan after the first does; the *empty header cache* rows start each run with an empty",
        "state directory, so every file is read and parsed and the cache written.",
        "",
        "The hook rows run `mem recall --hook --dir` on the labelled memories of tests/fixtures/recall-bench",
        "among the same 200, with a payload as Claude Code sends it (a new session each run, the recent tools",
        f"read from a recorded transcript). Their prompts are labelled queries: `{sure}` (the offline ranker",
        f"is sure of it: no model is asked) and `{unsure}` (it is unsure: the model decides). The keyless rows",
        "(the installed script and the zipapp) run the second. The keyed rows have ANTHROPIC_API_KEY set and ANTHROPIC_BASE_URL pointing at",
        "tests/fakeapi.py, a local Messages-API server in the bench's own process, which answers at once",
        f"(it was asked {asked} times: once per run of the unsure prompt). The OpenAI-compatible row has",
        "OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL pointing at tests/fakeopenai.py, a local",
        f"chat-completions server in the same process, answering at once (asked {asked_openai} times). The",
        "deadline rows' servers answer each request after 10 s; each run's output is compared with the",
        "keyless hook's, and *printed* is what the hook surfaced: the ranker's pick.",
        "",
    ]
    from results import write_section

    write_section("startup", "\n".join(lines))
    sys.stdout.write("\n".join(lines))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
