"""Loopback load test of `mem team serve`; writes the "team" section of bench/RESULTS.md.

    make bench-team                       # 20 clients × 10 s, SQLite, and PostgreSQL if it can start one
    .venv/bin/python bench/team.py --clients 20 --seconds 10 --backend sqlite

The server is the real command (`mem team serve --port 0`) in its own process;
the clients are threads of this one, each with its own keep-alive connection
and token, speaking the sync contract: GET with If-None-Match (200/304), the
hashes view, and conditional PUTs of the client's own key (If-Match; on 412
the hashes view and one retry). Traffic goes to 127.0.0.1 only, the run is
bounded in time and stops by itself. Afterwards every client's last
acknowledged write must be on the server (nothing lost).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
API = "/api/claude_code/team_memory"
LOOPBACK = "127.0.0.1"


@dataclass
class ClientStats:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    last_written: str | None = None  # content of our key the server acknowledged last


def _percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def _client(port: int, token: str, repo: str, index: int, deadline: float, stats: ClientStats,
            write_share: float, seed: int) -> None:
    rnd = random.Random(seed)
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
    target = f"{API}?repo={repo.replace('/', '%2F')}"
    auth = {"Authorization": f"Bearer {token}"}
    etag = None
    key = f"load/client-{index:03d}.md"
    n = 0

    def request(method, url, body=None, headers=None):
        nonlocal conn
        h = {**auth, **(headers or {})}
        if body is not None:
            h["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            conn.request(method, url, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            conn = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
            stats.errors.append(f"{method}: {type(exc).__name__}: {exc}")
            return None, None, None
        stats.latencies.append(time.perf_counter() - started)
        stats.statuses[resp.status] = stats.statuses.get(resp.status, 0) + 1
        return resp.status, resp.getheader("ETag"), data

    while time.monotonic() < deadline:
        roll = rnd.random()
        if roll < write_share:
            n += 1
            content = f"# client {index}\n\nrevision {n}\n" + "lorem ipsum " * rnd.randint(10, 200)
            body = json.dumps({"entries": {key: content}}).encode()
            for _ in range(3):
                status, tag, _ = request("PUT", target, body, {"If-Match": etag} if etag else {"If-None-Match": "*"})
                if status == 200:
                    etag, stats.last_written = tag, content
                    break
                if status != 412:
                    if status is not None:
                        stats.errors.append(f"PUT {status}")
                    break
                status, tag, _ = request("GET", target + "&view=hashes")
                if status == 200:
                    etag = tag
                elif status == 404:
                    etag = None
        elif roll < write_share + 0.2:
            status, tag, _ = request("GET", target + "&view=hashes")
            if status == 200:
                etag = tag
        else:
            status, tag, _ = request("GET", target, headers={"If-None-Match": etag} if etag else None)
            if status == 200:
                etag = tag
            elif status not in (304, 404, None):
                stats.errors.append(f"GET {status}")
    conn.close()


def run_load(port: int, tokens: list[str], repo: str, *, seconds: float, write_share: float = 0.2) -> dict:
    """Run len(tokens) clients against 127.0.0.1:port for ``seconds``; return the figures."""
    deadline = time.monotonic() + seconds
    stats = [ClientStats() for _ in tokens]
    threads = [threading.Thread(target=_client, args=(port, tok, repo, i, deadline, stats[i], write_share, i), daemon=True)
               for i, tok in enumerate(tokens)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    elapsed = time.monotonic() - started
    lat = sorted(x for s in stats for x in s.latencies)
    statuses: dict[int, int] = {}
    for s in stats:
        for code, count in s.statuses.items():
            statuses[code] = statuses.get(code, 0) + count
    return {
        "clients": len(tokens), "seconds": round(elapsed, 2), "requests": len(lat),
        "rps": len(lat) / elapsed if elapsed else 0.0,
        "p50_ms": _percentile(lat, 50) * 1000, "p99_ms": _percentile(lat, 99) * 1000,
        "max_ms": (lat[-1] * 1000) if lat else float("nan"),
        "mean_ms": statistics.fmean(lat) * 1000 if lat else float("nan"),
        "statuses": dict(sorted(statuses.items())),
        "errors": [e for s in stats for e in s.errors],
        "last_written": {i: s.last_written for i, s in enumerate(stats)},
    }


def check_nothing_lost(port: int, token: str, repo: str, last_written: dict) -> list[str]:
    """Keys whose last acknowledged content is not what the server holds."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
    conn.request("GET", f"{API}?repo={repo.replace('/', '%2F')}", headers={"Authorization": f"Bearer {token}"})
    resp = conn.getresponse()
    data = json.loads(resp.read()) if resp.status == 200 else {"content": {"entries": {}}}
    conn.close()
    entries = data["content"]["entries"]
    return [f"load/client-{i:03d}.md" for i, content in last_written.items()
            if content is not None and entries.get(f"load/client-{i:03d}.md") != content]


def _mem_exe() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "mem")
    return exe if os.path.exists(exe) else shutil.which("mem") or "mem"


def serve_and_load(db: str, *, clients: int, seconds: float, env: dict) -> dict:
    mem = _mem_exe()
    repo = "bench/load"
    tokens = []
    for i in range(clients):
        out = subprocess.run([mem, "team", "token", "add", "--repo", repo, "--label", f"client {i}", "--db", db],
                             capture_output=True, text=True, env=env, check=True)
        tokens.append(out.stdout.split()[-1])
    proc = subprocess.Popen([mem, "team", "serve", "--host", LOOPBACK, "--port", "0", "--db", db],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        listening = json.loads(proc.stderr.readline())
        url = listening["url"]
        assert url.startswith(f"http://{LOOPBACK}:"), url
        port = int(url.rsplit(":", 1)[1])
        # Drain the per-request log so the server never blocks on a full pipe.
        log_lines = []
        drainer = threading.Thread(target=lambda: log_lines.extend(proc.stderr), daemon=True)
        drainer.start()
        result = run_load(port, tokens, repo, seconds=seconds)
        result["lost"] = check_nothing_lost(port, tokens[0], repo, result.pop("last_written"))
        result["backend"] = listening["backend"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result["server_exit"] = proc.returncode
    return result


def _pg_url() -> str | None:
    url = os.environ.get("MEM_TEST_PG_URL")
    if url:
        return url
    try:
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "ci-postgres.sh")], capture_output=True, text=True,
                             timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _fresh_pg(url: str) -> tuple[str, callable]:
    import secrets
    from urllib.parse import quote

    import psycopg

    schema = "bench_" + secrets.token_hex(4)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")

    def drop():
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}", drop


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    ap.add_argument("--no-write", action="store_true", help="Print the figures; leave RESULTS.md alone.")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mem-bench-team-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", "CLAUDE_"))}
        env.update(HOME=os.path.join(tmp, "home"), MEM_STATE_DIR=os.path.join(tmp, "state"))
        os.makedirs(env["HOME"])
        if args.backend in ("sqlite", "both"):
            print(f"bench-team: SQLite, {args.clients} clients × {args.seconds:g} s ...", file=sys.stderr)
            rows.append(serve_and_load(os.path.join(tmp, "team.db"), clients=args.clients, seconds=args.seconds, env=env))
        if args.backend in ("postgresql", "both"):
            url = _pg_url()
            if url is None:
                print("bench-team: no PostgreSQL (scripts/ci-postgres.sh failed); skipping it", file=sys.stderr)
            else:
                db, drop = _fresh_pg(url)
                try:
                    print(f"bench-team: PostgreSQL, {args.clients} clients × {args.seconds:g} s ...", file=sys.stderr)
                    rows.append(serve_and_load(db, clients=args.clients, seconds=args.seconds, env=env))
                finally:
                    drop()
    lines = [
        "## Team server under load (`make bench-team`)",
        "",
        f"Written by bench/team.py. Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.system()} {platform.release()}.",
        f"`mem team serve` in its own process on {LOOPBACK}; {args.clients} client threads in another, each with "
        f"its own token and keep-alive connection, for {args.seconds:g} s. Mix per client: 60% GET with "
        "If-None-Match, 20% `?view=hashes`, 20% conditional PUT of its own key (~0.1–2.4 KB; on 412 the hashes "
        "view and a retry). Latency is per request, seen by the client.",
        "",
        "| backend | requests | req/s | p50 | p99 | max | statuses | errors | last writes lost |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ok = True
    for r in rows:
        statuses = ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())
        lines.append(f"| {r['backend']} | {r['requests']} | {r['rps']:.0f} | {r['p50_ms']:.1f} ms | "
                     f"{r['p99_ms']:.1f} ms | {r['max_ms']:.1f} ms | {statuses} | {len(r['errors'])} | {len(r['lost'])} |")
        ok = ok and not r["errors"] and not r["lost"] and r["server_exit"] == 0
    lines += ["", "412s are the protocol working (a client's If-Match was stale); errors are transport failures "
              "or unexpected statuses. \"Last writes lost\" compares each client's last acknowledged PUT with "
              "what the server holds at the end.", ""]
    text = "\n".join(lines)
    sys.stdout.write(text)
    if not args.no_write:
        sys.path.insert(0, HERE)
        from results import write_section

        write_section("team", text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
