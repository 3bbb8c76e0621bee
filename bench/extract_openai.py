"""Extraction coverage through the OpenAI-compatible backend with a small window; prints a table.

    .venv/bin/python bench/extract_openai.py            # BENCH_EXTRACT_MB=5,20 BENCH_WINDOW=32768

As bench/extract_coverage.py, but the real ``mem extract`` talks to tests/fakeopenai.py's
chat-completions server, which reports its window on /v1/models (as vLLM does) and rejects any
request whose prompt plus max_tokens is over it. Measured: the share of planted facts found in at
least one request, the requests, the largest prompt + max_tokens against the window, seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]

from fakeopenai import FakeOpenAI  # noqa: E402
from sessions import write_session  # noqa: E402

SIZES_MB = [int(s) for s in os.environ.get("BENCH_EXTRACT_MB", "5,20").split(",")]
WINDOW = int(os.environ.get("BENCH_WINDOW", "32768"))


def run(mb: int) -> dict:
    api = FakeOpenAI(context_window=WINDOW).start()
    api.respond_with(lambda body: {"choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": "Nothing new."}}]})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "session.jsonl")
            facts = write_session(path, target_bytes=mb * 1_000_000)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "MEM_"))}
            env.update(HOME=os.path.join(tmp, "home"), MEM_DIR=os.path.join(tmp, "memory"),
                       MEM_STATE_DIR=os.path.join(tmp, "state"), OPENAI_BASE_URL=api.url,
                       OPENAI_API_KEY="bench-key", OPENAI_MODEL=api.model)
            exe = os.path.join(os.path.dirname(sys.executable), "mem")
            started = time.monotonic()
            done = subprocess.run([exe, "extract", "--transcript", path, "--json"], env=env, capture_output=True,
                                  text=True)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            posts = [r for r in api.requests if r["method"] == "POST"]
            sent = [r["body"]["messages"][1]["content"] for r in posts if r["body"]]
            found = sum(1 for f in facts if any(f in s for s in sent))
            return {"mb": mb, "facts": f"{found}/{len(facts)}", "requests": len(posts),
                    "rejected": sum(1 for r in posts if r["status"] != 200),
                    "largest": max(r["prompt_tokens"] + r["body"]["max_tokens"] for r in posts), "seconds": seconds}
    finally:
        api.stop()


def main() -> int:
    print(f"window {WINDOW:,} tokens (reported by /v1/models)")
    print("MB\tfacts reached\trequests\trejected\tlargest prompt+max_tokens\tseconds")
    for mb in SIZES_MB:
        r = run(mb)
        print(f"{r['mb']}\t{r['facts']}\t{r['requests']}\t{r['rejected']}\t{r['largest']:,}\t{r['seconds']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
