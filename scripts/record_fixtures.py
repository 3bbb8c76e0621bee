"""Record fixtures from a real client version into tests/fixtures/<client>-code-<version>/.

    PYTHONPATH=. python scripts/record_fixtures.py claude 2.1.330
    PYTHONPATH=. python scripts/record_fixtures.py qwen 0.24.4

Runs the client headless against the local model server (tests/e2e/driver.py:
npm install into the cache the first time, throwaway HOME, mem's hooks of the
README) and keeps, per scenario: every hook's stdin payload
(``hooks/NNN-<Event>.json``), the client's transcript (``transcript.jsonl``),
the memory files after the run (``memory-dir-after/``) and, for each request
the client sent, which texts carried hook context (``where-hook-context.jsonl``).
Paths are moved to /home/dev/cc-run (qwen: /home/dev/qc-run) as in the older
fixtures, so the same tests read both generations.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from mem.core.paths import sanitize_path
from tests.e2e import driver
from tests.e2e.fakemodel import FakeModel, Reply, request_texts

ROOT = Path(__file__).resolve().parent.parent
MEMORIES = {
    "staging-deploys.md": ("staging deploys fail on migration timeouts", "project",
                           "Rerun the staging deploy with MIGRATION_TIMEOUT=900."),
    "go-indent.md": ("user wants tabs in Go code", "user", "Indent Go code with tabs, never spaces."),
}


def seed(memory_dir: Path) -> None:
    for name, (description, type_, body) in MEMORIES.items():
        (memory_dir / name).write_text(
            f"---\nname: {name[:-3]}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n")
    (memory_dir / "MEMORY.md").write_text(
        "- [Staging deploys](staging-deploys.md) — migration timeouts\n- [Go indent](go-indent.md) — tabs\n")


def excerpts(text: str) -> list[str]:
    """Each hook context in a request text, from the client's own marker on, at most 1,500 characters."""
    import re

    found = []
    for marker in driver.CONTEXT_MARKERS:
        for m in re.finditer(re.escape(marker) + r"[\s>]", text):  # not where the prompt names the marker
            found.append((m.start(), text[m.start():m.start() + 1500]))
    return [t for _, t in sorted(found)]


def scenarios(client: str):
    """(name, prompt, extra args, main replies) in order; one session runs them all."""
    yield "01-hooks", "the staging deploy failed with a migration timeout again, what should I do", (), []
    write = ("Write" if client == "claude" else "write_file", {
        "file_path": "{memory_dir}/release-freeze.md",
        "content": "---\nname: release-freeze\ndescription: no deploys on Fridays during the release freeze\n"
                   "type: project\n---\n\nNo deploys on Fridays until the 3.0 release ships.\n"})
    yield "02-write-memory", "remember: no deploys on Fridays during the release freeze", ("--continue",) \
        if client == "claude" else (), [Reply(tool=write), Reply(text="Saved.")]
    if client == "claude":
        yield "03-compact", "/compact keep the deploy notes", ("--continue",), []


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in driver.PACKAGES:
        print("usage: record_fixtures.py claude|qwen VERSION", file=sys.stderr)
        return 2
    client, version = argv
    out = ROOT / "tests" / "fixtures" / f"{client}-code-{version}"
    fake_root = "/home/dev/cc-run" if client == "claude" else "/home/dev/qc-run"
    server = FakeModel().start()
    tmp = Path(tempfile.mkdtemp(prefix="mem-record-"))
    try:
        session = driver.Session(client, version, tmp, server)
        seed(session.memory_dir)
        real = os.path.realpath(tmp)

        def moved(text: str) -> str:
            text = text.replace(sanitize_path(os.path.join(real, "repo")), sanitize_path(fake_root + "/repo"))
            return text.replace(real, fake_root).replace(str(tmp), fake_root)

        shutil.rmtree(out, ignore_errors=True)
        for name, prompt, extra, replies in scenarios(client):
            server.main[:] = [r._replace(tool=(r.tool[0], {k: v.format(memory_dir=session.memory_dir)
                                                           for k, v in r.tool[1].items()})) if r.tool else r
                              for r in replies]
            run = session.run(prompt, *extra)
            d = out / name
            (d / "hooks").mkdir(parents=True)
            for i, (event, payload) in enumerate(run.hooks):
                (d / "hooks" / f"{i:03d}-{event}.json").write_text(
                    moved(json.dumps(payload, ensure_ascii=False, indent=1)) + "\n")
            transcripts = session.transcripts()
            if transcripts:
                (d / "transcript.jsonl").write_text(moved(max(transcripts, key=os.path.getmtime).read_text()))
            where = []
            for seq, r in enumerate(run.requests):
                for i, t in enumerate(request_texts(r["body"] or {})):
                    where.extend({"seq": seq, "main": r["main"], "model": (r["body"] or {}).get("model"),
                                  "text_index": i, "text": moved(e)} for e in excerpts(t))
            (d / "where-hook-context.jsonl").write_text("".join(json.dumps(w, ensure_ascii=False) + "\n" for w in where))
            shutil.copytree(session.memory_dir, d / "memory-dir-after")
            (d / "meta.json").write_text(json.dumps({
                "client": client, "version": version, "prompt": prompt, "args": list(extra),
                "exit_code": run.returncode, "seconds": round(run.seconds, 1),
                "models": sorted({(r["body"] or {}).get("model") or "" for r in run.requests}),
            }, indent=1) + "\n")
            print(f"{name}: exit {run.returncode}, {len(run.hooks)} hooks, {len(run.requests)} requests, "
                  f"{run.seconds:.1f} s")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
