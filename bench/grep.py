"""`mem grep --transcripts` against `grep -rn -F` and `rg -F` on generated transcripts of 280 MB and 1 GB.

    make bench-grep                  # or: .venv/bin/python bench/grep.py
    BENCH_GREP_SIZES=100 .venv/bin/python bench/grep.py   # one small corpus, for a quick look

The corpus is Claude Code JSONL as the client writes it (user prompts,
assistant text and tool calls one block per line, tool results with their
``toolUseResult`` copy, attachments, queue operations), with JSON escapes
(quotes, backslashes, newlines, tabs) and CJK text, spread over a few projects
and a few hundred sessions. It is generated deterministically into a temporary
directory (the largest size; each smaller corpus is the first of its files,
linked), searched, and deleted; nothing is committed.

Three literals: a rare one (one record in 2,000), a common one (one in 25),
and one in the message text of every user and assistant record. Each runs
``grep -rn -F``, ``rg -n -F`` (skipped, with a note, when rg is not installed)
and ``mem grep --transcripts -n -F`` interleaved, once to warm the page cache
and then ROUNDS times, output to a file (GNU grep quits at the first match when
writing to /dev/null); the figure is the best (minimum) of the rounds, as the
machine is shared. For the literal in every record mem also runs with msgspec
hidden, to show what the stdlib decoder alone gives. Goals: at most 1.5× grep
for the rare literal, 3× for the literal in every record. Writes the ``grep``
section of bench/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SIZES_MB = [int(x) for x in os.environ.get("BENCH_GREP_SIZES", "280,1024").split(",")]
ROUNDS = int(os.environ.get("BENCH_GREP_ROUNDS", "3"))
GOALS = {"rare": 1.5, "every": 3.0}
#: Appears in about one record in 2,000, in prompts, replies, tool input and results.
RARE = "reconcile_ledger_entries"
#: Appears in about one record in 25.
COMMON = "pytest -q"
#: Appears in the message text of every user and assistant record (and in their raw JSON).
EVERY = "errors.py"

WORDS = (
    "the a to of and in is for that this with on it be as by we can should will not are from or "
    "function test file module import return value error config build deploy cache request response "
    "database query index schema migration user session token handler client server route model "
    "review commit branch merge rebase diff patch fix bug issue log trace metric latency timeout retry"
).split()
CODE = (
    "def", "class", "return", "import", "from", "if", "else", "for", "while", "try", "except", "with",
    "self", "None", "True", "False", "await", "async", "yield", "lambda",
)
CJK = ("记忆文件", "テストを実行する", "데이터베이스", "東京", "日本語のメモ", "修复错误", "配置")
TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob")


class Corpus:
    """Deterministic generator of Claude Code transcripts."""

    def __init__(self, seed: int = 20261122) -> None:
        self.rng = random.Random(seed)
        self.rare = 0  # records whose visible text holds RARE
        self.common = 0

    def sentence(self, n: int) -> str:
        r = self.rng
        words = [r.choice(WORDS) for _ in range(n)]
        if r.random() < 0.15:
            words.insert(r.randrange(len(words) + 1), r.choice(CJK))
        if r.random() < 0.2:
            words.insert(r.randrange(len(words) + 1), f'"{r.choice(WORDS)}"')
        return " ".join(words)

    def code(self, lines: int) -> str:
        r = self.rng
        out = []
        for i in range(lines):
            indent = "\t" * r.randint(0, 2) if r.random() < 0.3 else "    " * r.randint(0, 3)
            kind = r.random()
            if kind < 0.2:
                out.append(f'{indent}{r.choice(CODE)} {r.choice(WORDS)}_{r.choice(WORDS)}("{r.choice(WORDS)}\\n", {i})')
            elif kind < 0.3:
                out.append(f"{indent}# {self.sentence(r.randint(3, 10))}")
            elif kind < 0.35:
                out.append(f'{indent}path = "C:\\\\Users\\\\dev\\\\{r.choice(WORDS)}.txt"')
            else:
                out.append(f"{indent}{r.choice(WORDS)}_{r.choice(WORDS)} = {r.choice(CODE)}.{r.choice(WORDS)}({r.randint(0, 999)})")
        return "\n".join(out)

    def sprinkle(self, text: str) -> str:
        r = self.rng
        x = r.random()
        if x < 0.0005:
            self.rare += 1
            text += f"\nthen call {RARE}() on the batch"
        elif x < 0.0405:
            self.common += 1
            text += f"\nrun `{COMMON}` again"
        return text + f"\nsee src/{EVERY}"

    def session(self, cwd: str, target_bytes: int) -> list[str]:
        r = self.rng
        sid = str(uuid.UUID(int=r.getrandbits(128)))
        env = {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid,
               "version": "2.1.197", "gitBranch": "main"}
        t = 1_780_000_000.0 + r.randint(0, 10_000_000)
        parent = None
        lines: list[str] = []
        size = 0

        def emit(obj: dict) -> None:
            nonlocal parent, size, t
            t += r.random() * 20
            obj.update(env)
            if "uuid" in obj:
                obj["parentUuid"] = parent
                obj["isSidechain"] = False
                parent = obj["uuid"]
                obj["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
            line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            lines.append(line)
            size += len(line.encode()) + 1

        def new_uuid() -> str:
            return str(uuid.UUID(int=r.getrandbits(128)))

        while size < target_bytes:
            prompt = self.sprinkle(self.sentence(r.randint(4, 60)))
            if r.random() < 0.3:
                prompt += "\n\n" + self.sentence(r.randint(5, 30))
            emit({"type": "queue-operation", "operation": "enqueue", "content": prompt})
            emit({"type": "user", "message": {"role": "user", "content": prompt}, "uuid": new_uuid(),
                  "promptId": new_uuid(), "permissionMode": "default"})
            for _ in range(r.randint(1, 6)):
                msg_id = "msg_" + new_uuid().replace("-", "")[:24]
                usage = {"input_tokens": r.randint(100, 90000), "output_tokens": r.randint(10, 4000),
                         "cache_read_input_tokens": r.randint(0, 80000), "service_tier": "standard"}
                text = self.sprinkle(self.sentence(r.randint(10, 200)))
                emit({"type": "assistant", "uuid": new_uuid(), "requestId": "req_" + msg_id[4:],
                      "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
                                  "content": [{"type": "text", "text": text}], "stop_reason": "tool_use",
                                  "usage": usage}})
                tool = r.choice(TOOLS)
                tool_id = "toolu_" + new_uuid().replace("-", "")[:24]
                path = f"{cwd}/src/{r.choice(WORDS)}/{EVERY}"
                if tool == "Bash":
                    tool_input = {"command": self.sprinkle(f"cd {cwd} && {r.choice(WORDS)} --{r.choice(WORDS)} \"{r.choice(WORDS)}\""),
                                  "description": self.sentence(5)}
                elif tool == "Edit":
                    tool_input = {"file_path": path, "old_string": self.code(r.randint(1, 8)),
                                  "new_string": self.sprinkle(self.code(r.randint(1, 8)))}
                elif tool == "Write":
                    tool_input = {"file_path": path, "content": self.sprinkle(self.code(r.randint(10, 120)))}
                else:
                    tool_input = {"file_path": path} if tool == "Read" else {"pattern": r.choice(WORDS), "path": path}
                emit({"type": "assistant", "uuid": new_uuid(), "requestId": "req_" + msg_id[4:],
                      "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
                                  "content": [{"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input}],
                                  "stop_reason": "tool_use", "usage": usage}})
                body = self.sprinkle(self.code(r.choice((3, 10, 40, 120, 400))))
                emit({"type": "user", "uuid": new_uuid(), "sourceToolAssistantUUID": parent,
                      "message": {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": body}]},
                      "toolUseResult": {"stdout": body[:2000], "stderr": "", "interrupted": False}})
            if r.random() < 0.1:
                emit({"type": "attachment", "uuid": new_uuid(),
                      "attachment": {"type": "hook_success", "hookName": "Stop", "stdout": "", "exitCode": 0}})
        return lines


def generate(root: str, target_mb: int) -> tuple[Corpus, int, int]:
    corpus = Corpus()
    projects = ["-home-dev-src-api", "-home-dev-src-web", "-home-dev-src-infra", "-home-dev-notes"]
    total = 0
    files = 0
    target = target_mb << 20
    while total < target:
        project = projects[files % len(projects)]
        cwd = "/" + project[1:].replace("-", "/")
        d = os.path.join(root, project)
        os.makedirs(d, exist_ok=True)
        lines = corpus.session(cwd, corpus.rng.choice((200_000, 1_000_000, 3_000_000, 8_000_000)))
        data = ("\n".join(lines) + "\n").encode()
        name = json.loads(lines[0])["sessionId"] + ".jsonl"
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(data)
        total += len(data)
        files += 1
    return corpus, total, files


def timed(argv: list[str], env: dict, sink: str) -> tuple[float, float]:
    """Wall-clock and CPU (user + system, with any worker processes) seconds of one run."""
    import resource

    # Output goes to a real file: GNU grep stops at the first match when its
    # output is /dev/null, which would time something else.
    with open(sink, "wb") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, env=env)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {argv[0]} failed ({proc.returncode}): {proc.stderr.decode()[:500]}")
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def count_lines(path: str) -> int:
    n = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def subset(root: str, dest: str, target_mb: int) -> tuple[int, int]:
    """Link the first files of each project, in turn, under ``dest`` until they reach ``target_mb``."""
    projects = sorted(os.listdir(root))
    queues = [sorted(os.listdir(os.path.join(root, p))) for p in projects]
    total = files = 0
    while total < target_mb * 10**6 and any(queues):
        for project, queue in zip(projects, queues):
            if queue and total < target_mb * 10**6:
                name = queue.pop(0)
                os.makedirs(os.path.join(dest, project), exist_ok=True)
                os.link(os.path.join(root, project, name), os.path.join(dest, project, name))
                total += os.path.getsize(os.path.join(dest, project, name))
                files += 1
    return total, files


#: Runs mem with msgspec hidden: the stdlib decoder alone.
NO_MSGSPEC = "import sys; sys.modules['msgspec'] = None; sys.argv[0] = 'mem'; from mem.cli import cli; cli()"


def main() -> int:
    rg = shutil.which("rg")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", "CLAUDE_"))}
    env["LC_ALL"] = "C.UTF-8"  # grep's fast path; the same locale for all
    # Let the warm-up run compile mem's bytecode, as an install does.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tools = ["grep"] + (["rg"] if rg else []) + ["mem"]
    with tempfile.TemporaryDirectory(prefix="mem-bench-grep-") as tmp:
        from run import clean_install

        print("bench: installing mem into a clean venv ...", file=sys.stderr)
        mem = clean_install(os.path.join(tmp, "venv"))
        python = os.path.join(tmp, "venv", "bin", "python")
        env.update(HOME=os.path.join(tmp, "home"), MEM_STATE_DIR=os.path.join(tmp, "state"))
        os.makedirs(env["HOME"])
        full = os.path.join(tmp, "full")
        print(f"bench: generating a {max(SIZES_MB)} MB transcript corpus ...", file=sys.stderr)
        started = time.perf_counter()
        corpus, _, _ = generate(full, max(SIZES_MB))
        gen_s = time.perf_counter() - started
        sink = os.path.join(tmp, "out")
        load_before = os.getloadavg()[0]
        rows = []
        for size in sorted(SIZES_MB):
            root = os.path.join(tmp, f"c{size}")
            total, files = subset(full, root, size)
            print(f"bench: {total / 1e6:.0f} MB in {files} files; timing ...", file=sys.stderr)
            cases = [("rare", RARE), ("common", COMMON), ("every", EVERY)]
            for case, literal in cases:
                argv = {
                    "grep": ["grep", "-rn", "-F", literal, root],
                    "rg": [rg or "rg", "-n", "-F", literal, root],
                    "mem": [mem, "grep", "--transcripts", "-n", "-F", literal, root],
                    "mem, stdlib json": [python, "-c", NO_MSGSPEC, "grep", "--transcripts", "-n", "-F", literal, root],
                }
                run = tools + (["mem, stdlib json"] if case == "every" else [])
                hits = {}
                for tool in run:  # warm the page cache (and compile mem's bytecode)
                    timed(argv[tool], env, sink)
                    hits[tool] = count_lines(sink)
                times: dict[str, list[tuple[float, float]]] = {tool: [] for tool in run}
                for _ in range(ROUNDS):
                    for tool in run:
                        times[tool].append(timed(argv[tool], env, sink))
                best = {tool: min(wall for wall, _ in t) for tool, t in times.items()}
                cpu = {tool: min(c for _, c in t) for tool, t in times.items()}
                rows.append((total, files, case, literal, best, hits, cpu))
                print(f"bench: {size} MB {case}: " + ", ".join(f"{t} {b:.3f} s" for t, b in best.items()), file=sys.stderr)
        load_after = os.getloadavg()[0]

    labels = {"rare": "rare (1 record in 2,000)", "common": "common (1 in 25)", "every": "in every message record"}
    has_rg = "rg" in tools
    lines = [
        "## `mem grep --transcripts` against `grep -rn -F` and `rg -F` (`make bench-grep`)",
        "",
        f"Written by bench/grep.py. Machine: {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}; "
        f"{subprocess.run(['grep', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}"
        + (f", {subprocess.run([rg, '--version'], capture_output=True, text=True).stdout.splitlines()[0]}" if rg else "")
        + ", LC_ALL=C.UTF-8.",
        f"Corpus: generated Claude Code JSONL over 4 projects ({max(SIZES_MB)} MB generated in {gen_s:.0f} s; the "
        "smaller corpus is its first files; deleted after). Each command runs once to warm the page cache, then "
        f"{ROUNDS} interleaved rounds; the figure is the best of the {ROUNDS}, output to a file "
        "(GNU grep quits at the first match when writing to /dev/null). "
        "`mem` is a non-editable `pip install .` into a fresh venv, as users install it (bytecode compiled on "
        "the warm-up run), so its start-up is included. `mem, stdlib json` is the same run with msgspec hidden. "
        f"Load average (1 min) before and after the timings: {load_before:.2f}, {load_after:.2f} "
        "(other work on the machine slows every command, not always alike). The last column is CPU time "
        "(user + system, workers included, best of the rounds), which the machine's load changes less than "
        "the wall clock.",
        "",
        "| corpus | literal | `grep -rn -F` | " + ("`rg -n -F` | " if has_rg else "")
        + "`mem grep --transcripts -n -F` | mem ÷ grep | goal | mem, stdlib json ÷ grep | CPU: mem ÷ grep |",
        "|---|---|---|" + ("---|" if has_rg else "") + "---|---|---|---|---|",
    ]
    ok = True
    for total, files, case, literal, best, hits, cpu in rows:
        ratio = best["mem"] / best["grep"]
        goal = ""
        if case in GOALS:
            met = ratio <= GOALS[case]
            ok = ok and met
            goal = f"≤ {GOALS[case]}× {'✔' if met else '✘'}"
        stdlib = f"{best['mem, stdlib json'] / best['grep']:.2f}×" if "mem, stdlib json" in best else ""
        lines.append(f"| {total / 1e6:.0f} MB, {files} files | {labels[case]} `{literal}` | {best['grep']:.3f} s | "
                     + (f"{best['rg']:.3f} s | " if has_rg else "")
                     + f"{best['mem']:.3f} s | {ratio:.2f}× | {goal} | {stdlib} | "
                     f"{cpu['mem']:.2f} s ÷ {cpu['grep']:.2f} s = {cpu['mem'] / cpu['grep']:.2f}× |")
    lines += [
        "",
        "Lines printed (grep and rg print raw JSONL records, mem the decoded message lines that hold the literal): "
        + "; ".join(f"{total / 1e6:.0f} MB {case}: grep {hits['grep']}, mem {hits['mem']}"
                    for total, _, case, _, _, hits, _ in rows)
        + f". Records generated with the rare literal in their message text, in the largest corpus: {corpus.rare}.",
    ]
    if not has_rg:
        lines += ["", "rg was not installed, so it was not run (`apt-get install ripgrep`)."]
    lines += [
        "",
        "How mem keeps up: each file is read in large chunks and searched for the literal's bytes (in every "
        "spelling a JSON writer may give it); only records holding it are decoded (msgspec when installed, "
        "else the stdlib), only the lines of a message that hold a match are split out, and each file's output "
        "is written in one call. rg searches with several threads, grep with one; mem forks a worker per idle "
        "CPU (up to 4, for trees over 64 MB) only when at least two are idle, so on a loaded machine it runs "
        "alone; each worker is handed the next file as soon as it sends one back, so files of very different "
        "sizes keep every worker busy. The CPU column shows what each costs whatever the load.",
        "",
    ]
    from results import write_section

    write_section("grep", "\n".join(lines))
    sys.stdout.write("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
