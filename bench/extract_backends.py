"""Extraction and the agent dream through every backend, each against its local server; writes bench/RESULTS.md.

    make bench-extract                                   # with bench/extract_coverage.py
    .venv/bin/python bench/extract_backends.py           # BENCH_EXTRACT_MB=4 BENCH_BACKENDS=anthropic,openai

BENCH_EXTRACT_MB chooses the session's size (default 4), BENCH_BACKENDS the backends (default all;
only a run of all of them rewrites the section of bench/RESULTS.md, unless BENCH_WRITE=1),
BENCH_OPENAI_WINDOW the OpenAI-compatible server's window (32768), BENCH_WINDOW a smaller window for
the Anthropic-protocol servers (with MEM_CONTEXT_WINDOW), BENCH_CLAUDE_VERSION the pinned Claude Code.

For each backend the real ``mem`` (the venv's console script, this checkout's code) runs
``mem extract`` on a session of BENCH_EXTRACT_MB megabytes (tests/sessions.py: Claude Code JSONL
with a fact stated by the user every fifth turn) and an agent ``mem dream --force`` on the messy
30-memory directory of tests/helpers/messy.py, whose server script has the model read every
memory. Each backend is configured the way its users configure it, with nothing else set:

* anthropic: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, tests/fakeapi.py;
* claude-settings env: the same two in the ``env`` block of ~/.claude/settings.json;
* apiKeyHelper: a helper script in ~/.claude/settings.json prints the key;
* bedrock: CLAUDE_CODE_USE_BEDROCK with AWS keys, tests/fakecloud.py (SigV4 checked);
* vertex: CLAUDE_CODE_USE_VERTEX with a service-account file, tests/fakecloud.py (OAuth minted);
* claude-code: the real ``claude`` (newest pinned, tests/e2e/driver.py; installed from npm as
  ``make e2e`` does) on PATH and no key in mem's environment; the server address and a fake key
  reach only the Claude Code process (MEM_CLAUDE_CODE_ENV_FILE), tests/e2e/fakemodel.py;
* openai: OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL, tests/fakeopenai.py with a window of
  BENCH_OPENAI_WINDOW (32,768) tokens, reported on /v1/models as vLLM does.

Measured per backend and job: planted facts (extract) or memories (dream) found in at least one
request, model requests, those refused, the largest request (input + max_tokens, as the server
counted it) against the window, seconds. The servers of the Anthropic and OpenAI protocols reject
a request over the window; the claude-code row is counted here with tests/fakeapi.py's counter.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "tests"), ROOT]

from fakeapi import FakeAnthropic, context_window_for, count_tokens, message  # noqa: E402
from fakecloud import FakeBedrock, FakeVertex  # noqa: E402
from fakeopenai import FakeOpenAI, completion, tool_call  # noqa: E402
from helpers.messy import messy_dir  # noqa: E402
from results import write_section  # noqa: E402
from sessions import write_session  # noqa: E402

BACKENDS = ("anthropic", "claude-settings env", "apiKeyHelper", "bedrock", "vertex", "claude-code", "openai")
CHOSEN = [b.strip() for b in os.environ.get("BENCH_BACKENDS", ",".join(BACKENDS)).split(",") if b.strip()]
SIZE_MB = float(os.environ.get("BENCH_EXTRACT_MB", "4"))
OPENAI_WINDOW = int(os.environ.get("BENCH_OPENAI_WINDOW", "32768"))
#: a smaller window for the Anthropic-protocol servers (and MEM_CONTEXT_WINDOW), as bench/extract_cloud.py had
WINDOW = int(os.environ.get("BENCH_WINDOW", "0")) or None
MODEL = "claude-sonnet-5-5"
KEY = "bench-key-not-a-secret"
#: reads the scripted dream asks for in one turn
READS_PER_TURN = 10
#: the variables of every backend: none reaches mem from the bench's own environment
LEAKY = ("ANTHROPIC_", "OPENAI_", "MEM_", "CLAUDE_", "AWS_", "GOOGLE_", "CLOUD_ML_", "QWEN_")


class Server:
    """One backend's local server, how mem is pointed at it, and what reached it."""

    def __init__(self, backend: str, tmp: str):
        self.backend = backend
        self.env: dict = {}
        self.path_dirs: list[str] = []
        home = Path(tmp, "home")
        if backend == "openai":
            self.api = FakeOpenAI(context_window=OPENAI_WINDOW).start()
            self.api.respond_with(lambda body: completion({"role": "assistant", "content": "Nothing new."}))
            self.env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": self.api.url, "OPENAI_MODEL": self.api.model}
            self.window = OPENAI_WINDOW
        elif backend == "claude-code":
            from tests.e2e import driver
            from tests.e2e.fakemodel import FakeModel

            version = os.environ.get("BENCH_CLAUDE_VERSION") or driver.PINNED["claude"][-1]
            exe = driver.install("claude", version)
            self.version = version
            self.api = FakeModel().start()
            self.api.default_text = "Nothing new."
            env_file = Path(tmp, "claude.env")
            env_file.write_text(f"ANTHROPIC_BASE_URL={self.api.url}\nANTHROPIC_API_KEY={KEY}\n"
                                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\nDISABLE_TELEMETRY=1\n")
            self.env = {"MEM_CLAUDE_CODE_ENV_FILE": str(env_file)}
            self.path_dirs = [str(exe.parent)]
            self.window = None  # per request, from the model it names
        else:
            kind = {"bedrock": FakeBedrock, "vertex": FakeVertex}.get(backend, FakeAnthropic)
            self.window = WINDOW or context_window_for(MODEL)
            self.api = kind(context_window=self.window).start()
            self.api.respond_with(lambda body: message([{"type": "text", "text": "Nothing new."}], model=MODEL))
            self.env = {"MEM_MODEL": MODEL, **({"MEM_CONTEXT_WINDOW": str(WINDOW)} if WINDOW else {})}
            settings = home / ".claude" / "settings.json"
            if backend == "anthropic":
                self.env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=self.api.url)
            elif backend == "claude-settings env":
                write_json(settings, {"env": {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": self.api.url}})
            elif backend == "apiKeyHelper":
                write_json(settings, {"apiKeyHelper": f"echo {KEY}", "env": {"ANTHROPIC_BASE_URL": self.api.url}})
            elif backend == "bedrock":
                ((key, secret),) = self.api.keys.items()
                self.env.update(CLAUDE_CODE_USE_BEDROCK="1", AWS_REGION=self.api.region, AWS_ACCESS_KEY_ID=key,
                                AWS_SECRET_ACCESS_KEY=secret, ANTHROPIC_BEDROCK_BASE_URL=self.api.url)
            elif backend == "vertex":
                self.env.update(CLAUDE_CODE_USE_VERTEX="1", CLOUD_ML_REGION=self.api.region,
                                ANTHROPIC_VERTEX_PROJECT_ID=self.api.project,
                                ANTHROPIC_VERTEX_BASE_URL=self.api.url + "/v1",
                                GOOGLE_APPLICATION_CREDENTIALS=self.api.service_account_file(tmp))
            else:
                raise SystemExit(f"bench: no backend {backend!r}; backends: {', '.join(BACKENDS)}")

    def requests(self) -> list[dict]:
        """Every model request so far: (body, input tokens as the server counted them, status)."""
        out = []
        for r in list(self.api.requests):
            body = r.get("body")
            if not isinstance(body, dict) or "messages" not in body:
                continue  # /v1/models, a token mint
            if self.backend == "openai":
                tokens = r.get("prompt_tokens")
            elif self.backend == "claude-code":
                tokens = count_tokens(body)
            else:
                tokens = r.get("input_tokens")
            window = self.window or context_window_for(body.get("model"))
            out.append({"body": body, "tokens": tokens or 0, "status": r.get("status") or 200, "window": window})
        return out

    def script_reads(self, rels: list[str]) -> None:
        """The dream's model reads every memory, a few per turn, then says it is done."""
        chunks = [rels[i:i + READS_PER_TURN] for i in range(0, len(rels), READS_PER_TURN)]
        if self.backend == "claude-code":
            from tests.e2e.fakemodel import Reply

            self.api.main += [Reply(tool=("mcp__mem__read", {"file_path": rel})) for rel in rels]
            self.api.main.append(Reply(text="Read every memory; nothing to merge tonight."))
            return
        for chunk in chunks:
            if self.backend == "openai":
                self.api.reply(completion({"role": "assistant", "content": None,
                                           "tool_calls": [tool_call("read", {"file_path": rel}) for rel in chunk]},
                                          "tool_calls"))
            else:
                self.api.reply_tool_uses(*[("read", {"file_path": rel}) for rel in chunk])
        self.api.reply_text("Read every memory; nothing to merge tonight.")

    def stop(self) -> None:
        self.api.stop()


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def reached(needles: list[str], bodies: list[dict]) -> int:
    """How many of ``needles`` appear in at least one request (as sent: JSON-escaped)."""
    sent = [json.dumps(b, ensure_ascii=False) for b in bodies]
    return sum(1 for n in needles if any(json.dumps(n, ensure_ascii=False)[1:-1] in s for s in sent))


def measure(rows: list[dict], server: Server, job: str, needles: list[str], before: int, seconds: float,
            result: dict) -> None:
    new = server.requests()[before:]
    answered = [r for r in new if r["status"] == 200]
    largest = max(answered, key=lambda r: r["tokens"] + (r["body"].get("max_tokens") or 0), default=None)
    rows.append({
        "backend": server.backend, "job": job, "planted": len(needles), "reached": reached(needles, [r["body"] for r in new]),
        "requests": len(new), "rejected": len(new) - len(answered),
        "largest": largest and largest["tokens"] + (largest["body"].get("max_tokens") or 0),
        "input": largest and largest["tokens"], "max_tokens": largest and (largest["body"].get("max_tokens") or 0),
        "window": largest and largest["window"], "seconds": seconds,
        "over": sum(1 for r in new if r["tokens"] + (r["body"].get("max_tokens") or 0) > r["window"]),
        "result": result,
    })


def run(backend: str, mem: str, rows: list[dict]) -> str:
    """Both jobs through ``backend``; what mem model named as its source."""
    with tempfile.TemporaryDirectory(prefix="mem-bench-backend-") as tmp:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        server = Server(backend, tmp)
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY)}
            env.update(HOME=home, MEM_STATE_DIR=os.path.join(tmp, "state"), **server.env,
                       PATH=os.pathsep.join([*server.path_dirs, *(d for d in env.get("PATH", "").split(os.pathsep)
                                                                   if not os.access(os.path.join(d or ".", "claude"), os.X_OK))]))
            if backend == "claude-code":
                assert not any(k.startswith(("ANTHROPIC_", "OPENAI_")) for k in env)  # no key in mem's environment
            model = subprocess.run([mem, "model", "--json"], env=env, capture_output=True, text=True)
            if model.returncode != 0:
                raise SystemExit(f"bench: mem model through {backend}: {model.stderr.strip()}")
            source = next(r for r in json.loads(model.stdout) if r["job"] == "extract")
            # extract
            session = os.path.join(tmp, "session.jsonl")
            facts = write_session(session, target_bytes=int(SIZE_MB * 1_000_000))
            memory = os.path.join(tmp, "memory-extract")
            os.makedirs(memory)
            print(f"bench: {backend}: mem extract of {os.path.getsize(session) / 1e6:.1f} MB ...", file=sys.stderr)
            before = len(server.requests())
            started = time.monotonic()
            done = subprocess.run([mem, "extract", "--transcript", session, "--json"], capture_output=True, text=True,
                                  env={**env, "MEM_DIR": memory}, timeout=3600, stdin=subprocess.DEVNULL)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(f"bench: mem extract through {backend} exited {done.returncode}: {done.stderr[-600:]}")
            measure(rows, server, "extract", facts, before, seconds, json.loads(done.stdout))
            # the agent dream
            memory = Path(tmp, "memory-dream")
            rels = messy_dir(memory, "MEMORY.md")
            firsts = [(memory / rel).read_text().split("---\n", 2)[2].strip().splitlines()[0] for rel in sorted(rels)]
            server.script_reads(sorted(rels))
            print(f"bench: {backend}: mem dream (agent) on {len(rels)} memories ...", file=sys.stderr)
            before = len(server.requests())
            started = time.monotonic()
            done = subprocess.run([mem, "dream", "--force", "--json"], capture_output=True, text=True,
                                  env={**env, "MEM_DIR": str(memory)}, timeout=3600, stdin=subprocess.DEVNULL)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(f"bench: mem dream through {backend} exited {done.returncode}: {done.stderr[-600:]}")
            result = json.loads(done.stdout)
            if result.get("mode") != "agent":
                raise SystemExit(f"bench: mem dream through {backend} ran {result.get('mode')!r}, not the agent")
            measure(rows, server, "dream", firsts, before, seconds, result)
            label = source["credentials"].replace(tmp, "$TMP").replace(os.path.expanduser("~"), "~")
            return f"claude {server.version}: {label}" if backend == "claude-code" else label
        finally:
            server.stop()


def main() -> int:
    mem = os.path.join(os.path.dirname(sys.executable), "mem")
    rows: list[dict] = []
    sources = {}
    for backend in CHOSEN:
        sources[backend] = run(backend, mem, rows)
    ok = all(r["reached"] == r["planted"] and r["rejected"] == 0 and r["over"] == 0 for r in rows)
    lines = [
        "## Extraction and the agent dream through each backend (`make bench-extract`, bench/extract_backends.py)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"`mem extract --json` on a {SIZE_MB:g} MB session (tests/sessions.py) and `mem dream --force --json` "
        "(the agent) on the messy 30-memory directory of tests/helpers/messy.py, whose scripted model reads "
        "every memory; each backend configured as its users configure it, against its local server (see the "
        "script's docstring), answered at once. *Reached*: planted facts (extract) or memories (dream: "
        "each one's first body line) found in at least one request. *Largest*: the largest request's "
        "input tokens as the server counted them plus its max_tokens, against the model's window.",
        "",
        f"    make bench-extract    # or: BENCH_EXTRACT_MB={SIZE_MB:g} BENCH_BACKENDS={shlex.quote(','.join(CHOSEN))} "
        ".venv/bin/python bench/extract_backends.py",
        "",
        "| backend | credentials (`mem model`) | job | reached | requests | rejected | largest: input + max_tokens / window | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        windows = f" ({r['result'].get('windows')} windows)" if r["job"] == "extract" else ""
        largest = f"{r['input']:,} + {r['max_tokens']:,} / {r['window']:,}" if r["largest"] else "—"
        lines.append(f"| {r['backend']} | {sources[r['backend']]} | {r['job']}{windows} | {r['reached']}/{r['planted']} "
                     f"| {r['requests']} | {r['rejected']} | {largest} | {r['seconds']:.1f} |")
    lines += ["", "Goal: every planted fact and memory reaches a request, none refused, none over its model's window: "
              f"{'✔' if ok else '✘'}."]
    print("\n".join(lines))
    if (set(CHOSEN) == set(BACKENDS) and not WINDOW) or os.environ.get("BENCH_WRITE"):
        write_section("extract-backends", "\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
