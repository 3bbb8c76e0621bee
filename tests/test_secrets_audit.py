"""mem scan --secrets: every rule found at its file:line, the secret never printed; no false alarms.

Secrets are generated at test time (by test_secrets' generators), never stored.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from mem.core.guards import secrets
from test_secrets import GENERATORS, NEAR_MISSES, RULE_IDS, rule_label

ROOT = Path(__file__).resolve().parent.parent

# Where a secret may sit in a memory directory, and how it is written there.
PLACES = ["MEMORY.md", "topic.md", "team/shared.md", "logs/2026/03/2026-03-01.md", "notes.txt", ".env.example"]
CONTEXTS = ["token: {s}\n", 'export KEY="{s}"\n', "see `{s}` here\n", "{s}\n"]


@pytest.fixture
def planted(memdir: Path):
    """One file per rule and generator, the secret on a known line, with clean lines around it."""
    rng = random.Random(36)
    expected = []
    secrets_used = []
    for rule_id, gens in GENERATORS.items():
        for g, gen in enumerate(gens):
            secret = gen(rng)
            secrets_used.append(secret)
            rel = PLACES[(len(expected)) % len(PLACES)]
            rel = rel.replace("topic", f"topic_{rule_id}_{g}") if rel == "topic.md" else f"{rule_id}-{g}/{rel}"
            path = memdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            before = rng.randint(0, 5)
            body = "clean line\n" * before + rng.choice(CONTEXTS).format(s=secret) + "trailing clean line\n"
            path.write_text(body, encoding="utf-8")
            expected.append((rel, before + 1, rule_id))
    return expected, secrets_used


def test_every_rule_is_planted():
    assert set(GENERATORS) == set(RULE_IDS) and len(RULE_IDS) == 36


def test_audit_finds_every_secret_at_its_line_and_never_prints_it(run_mem, planted):
    expected, used = planted
    r = run_mem("scan", "--secrets")
    assert r.returncode == 1
    got = r.stdout.splitlines()
    want = sorted(f"{rel}:{line}: {rule_id} ({rule_label(rule_id)})" for rel, line, rule_id in expected)
    assert sorted(got) == want
    for secret in used:
        assert secret not in r.stdout and secret not in r.stderr
    assert f"{len(expected)} secrets in {len(expected)} of {len(expected)} files" in r.stderr


def test_audit_json_fields(run_mem, planted, memdir):
    expected, used = planted
    r = run_mem("scan", "--secrets", "--json")
    rows = json.loads(r.stdout)
    assert len(rows) == len(expected)
    assert set(rows[0]) == {"path", "relpath", "line", "rule_id", "label"}
    for row in rows:
        assert row["path"] == str(memdir / row["relpath"])
        assert row["label"] == rule_label(row["rule_id"])
    assert not any(secret in r.stdout for secret in used)
    jsonl = run_mem("scan", "--secrets", "--jsonl").stdout.splitlines()
    assert [json.loads(line) for line in jsonl] == rows


def test_audit_reports_every_line_not_only_the_first(run_mem, memdir):
    rng = random.Random(1)
    a, b = GENERATORS["github-pat"][0](rng), GENERATORS["github-pat"][0](rng)
    key = GENERATORS["aws-access-token"][0](rng)
    (memdir / "m.md").write_text(f"x\n{a}\ny\n{b} and {key}\n", encoding="utf-8")
    r = run_mem("scan", "--secrets")
    assert r.stdout.splitlines() == [
        "m.md:2: github-pat (GitHub PAT)",
        "m.md:4: aws-access-token (AWS Access Token)",
        "m.md:4: github-pat (GitHub PAT)",
    ]


def test_near_misses_are_not_findings(run_mem, memdir):
    for i, (rule_id, text) in enumerate(NEAR_MISSES):
        (memdir / f"near_{i}.md").write_text(f"about {rule_id}:\n{text}\n", encoding="utf-8")
    r = run_mem("scan", "--secrets")
    assert (r.returncode, r.stdout) == (0, "")
    assert f"{len(NEAR_MISSES)} files, no secrets" in r.stderr


def test_no_false_positives_on_fixtures_and_examples(run_mem):
    for where in (ROOT / "tests" / "fixtures", ROOT / "examples" / "memory"):
        r = run_mem("scan", "--secrets", "--dir", str(where))
        assert (r.returncode, r.stdout) == (0, ""), (where, r.stdout)


def test_binary_files_and_link_loops_are_skipped(run_mem, memdir):
    rng = random.Random(2)
    secret = GENERATORS["npm-access-token"][0](rng)
    (memdir / "blob.bin").write_bytes(b"\x00\x01" + secret.encode() + b"\n")
    os.symlink(".", memdir / "loop")
    os.symlink("self.md", memdir / "self.md")
    (memdir / "ok.md").write_text("nothing here\n", encoding="utf-8")
    r = run_mem("scan", "--secrets")
    assert r.returncode == 0 and r.stdout == ""
    assert "self.md" in r.stderr


def test_secrets_option_clashes(run_mem, memdir):
    assert run_mem("scan", "--secrets", "--check").returncode == 2
    assert run_mem("scan", "--secrets", "--all").returncode == 2


def test_no_memory_dir(run_mem, tmp_path):
    r = run_mem("scan", "--secrets", "--dir", str(tmp_path / "absent"))  # a typo must not pass an audit
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_scan_all_matches_scan_on_the_first_line_of_each_rule():
    rng = random.Random(3)
    text = "\n".join(gen(rng) for gens in GENERATORS.values() for gen in gens) + "\n"
    everything = secrets.scan_all(text)
    first = {f.rule_id: f.line for f in secrets.scan(text)}
    for rule_id, line in first.items():
        assert min(f.line for f in everything if f.rule_id == rule_id) == line
    assert [(f.line, RULE_IDS.index(f.rule_id)) for f in everything] == \
        sorted((f.line, RULE_IDS.index(f.rule_id)) for f in everything)
