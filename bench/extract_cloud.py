"""Extraction coverage through the Bedrock and Vertex backends against local clouds; prints a table.

    .venv/bin/python bench/extract_cloud.py            # BENCH_EXTRACT_MB=5,20 BENCH_WINDOW=40000

As bench/extract_openai.py, but the real ``mem extract`` (installed with the bedrock and vertex
extras) speaks to tests/fakecloud.py: Bedrock's /model/{id}/invoke, every request SigV4-signed and
its signature recomputed by the server; Vertex's :rawPredict with a Google access token minted by
the server's OAuth endpoint for a generated service account. Both reject a request over the
window. Measured: the share of planted facts found in at least one request, the requests, those
refused (window or auth), the largest input + max_tokens against the window, seconds.
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

from fakeapi import message  # noqa: E402
from fakecloud import FakeBedrock, FakeVertex  # noqa: E402
from sessions import write_session  # noqa: E402

SIZES_MB = [int(s) for s in os.environ.get("BENCH_EXTRACT_MB", "5,20").split(",")]
WINDOW = int(os.environ.get("BENCH_WINDOW", "40000"))
OUTPUT = 8_192  # the extraction agent's max_tokens


def cloud_env(api, tmp: str) -> dict:
    if isinstance(api, FakeBedrock):
        ((key, secret),) = api.keys.items()
        return {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": api.region, "AWS_ACCESS_KEY_ID": key,
                "AWS_SECRET_ACCESS_KEY": secret, "ANTHROPIC_BEDROCK_BASE_URL": api.url}
    return {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": api.region, "ANTHROPIC_VERTEX_PROJECT_ID": api.project,
            "ANTHROPIC_VERTEX_BASE_URL": api.url + "/v1", "GOOGLE_APPLICATION_CREDENTIALS": api.service_account_file(tmp)}


def run(kind, mb: int) -> dict:
    api = kind(context_window=WINDOW).start()
    api.respond_with(lambda body: message([{"type": "text", "text": "Nothing new."}]))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "session.jsonl")
            facts = write_session(path, target_bytes=mb * 1_000_000)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("ANTHROPIC_", "OPENAI_", "MEM_", "CLAUDE_", "AWS_", "GOOGLE_", "CLOUD_ML_"))}
            env.update(HOME=os.path.join(tmp, "home"), MEM_DIR=os.path.join(tmp, "memory"),
                       MEM_STATE_DIR=os.path.join(tmp, "state"), MEM_CONTEXT_WINDOW=str(WINDOW), **cloud_env(api, tmp))
            os.makedirs(env["MEM_DIR"])
            exe = os.path.join(os.path.dirname(sys.executable), "mem")
            started = time.monotonic()
            done = subprocess.run([exe, "extract", "--transcript", path, "--json"], env=env, capture_output=True,
                                  text=True)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            sent = ["\n\n".join(b["text"] for b in r["body"]["messages"][0]["content"] if b.get("type") == "text")
                    for r in api.requests if isinstance(r["body"], dict)]
            found = sum(1 for f in facts if any(f in s for s in sent))
            return {"cloud": api.kind, "mb": mb, "facts": f"{found}/{len(facts)}", "requests": len(api.requests),
                    "rejected": sum(1 for r in api.requests if r["status"] != 200),
                    "largest": api.max_input_tokens + OUTPUT, "seconds": seconds}
    finally:
        api.stop()


def main() -> int:
    print(f"window {WINDOW:,} tokens")
    print("cloud\tMB\tfacts reached\trequests\trejected\tlargest input+max_tokens\tseconds")
    for kind in (FakeBedrock, FakeVertex):
        for mb in SIZES_MB:
            r = run(kind, mb)
            print(f"{r['cloud']}\t{r['mb']}\t{r['facts']}\t{r['requests']}\t{r['rejected']}\t{r['largest']:,}\t"
                  f"{r['seconds']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
