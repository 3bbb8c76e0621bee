"""What the claude-code backend costs per job before the model says anything; prints a table.

    .venv/bin/python bench/claude_code_startup.py        # BENCH_RUNS=5; the pinned versions of tests/e2e

For each pinned Claude Code version (installed by tests/e2e/driver.install into ~/.cache/mem-e2e),
an agent job of one turn through ``claude_agent.run_agent`` (mem's MCP tool server, the relay
process, ``claude -p`` with every flag the backend passes) against tests/e2e/fakemodel.py, which
answers at once: the seconds to Claude Code's init event (start-up), to the first request reaching
the server, and in all. The fake model answers in milliseconds, so the rest is Claude Code's own.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT]

from tests.e2e import driver  # noqa: E402
from tests.e2e.fakemodel import FakeModel  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def one(version: str) -> dict:
    from mem.core.jobs import claude_agent, llm
    from mem.core.jobs.tools import ToolBox
    from mem.core.jobs.backends import claude_code

    exe = driver.install("claude", version)
    srv = FakeModel().start()
    first: list[float] = []
    srv.delay = lambda headers, body: first.append(time.monotonic()) or 0.0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env_file = os.path.join(tmp, "env")
            with open(env_file, "w") as fh:
                fh.write(f"ANTHROPIC_BASE_URL={srv.url}\nANTHROPIC_API_KEY=sk-fake-bench\nHOME={tmp}\n"
                         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n")
            env = {"PATH": f"{exe.parent}:{os.environ['PATH']}", claude_code.ENV_FILE: env_file}
            memory = os.path.join(tmp, "memory")
            os.makedirs(memory)
            config = llm.model_config("extract", env=env, backend="claude-code")
            os.environ.update(env)
            started = time.monotonic()
            sessions: list = []
            orig = claude_code.run_session

            def spy(*a, **k):
                s = orig(*a, **k)
                sessions.append(s)
                return s

            claude_agent.run_session = spy
            try:
                run = claude_agent.run_agent(llm.Model(config), system="Answer Done.", messages="Go.",
                                             toolbox=ToolBox(memory), max_turns=2, deadline_s=120)
            finally:
                claude_agent.run_session = orig
            total = time.monotonic() - started
            assert run.error is None and run.turns == 1, run
            return {"startup": sessions[0].startup_s, "first_request": first[0] - started, "total": total}
    finally:
        srv.stop()


def main() -> int:
    print(f"claude-code backend, one-turn agent job, median of {RUNS} (seconds)")
    print(f"{'version':<10} {'to init':>8} {'to 1st request':>15} {'job':>6}")
    for version in driver.PINNED["claude"]:
        rows = [one(version) for _ in range(RUNS + 1)][1:]  # the first run warms the page cache
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{version:<10} {med['startup']:>8.2f} {med['first_request']:>15.2f} {med['total']:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
