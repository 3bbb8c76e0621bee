"""mem dream: gates, the lock, snapshots, dry-run, mechanical mode, validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from conftest import STALE_MEMORIES, TRUE_MEMORIES, moved_repo, tree_bytes, write_memories, write_memory

from mem.core.jobs import consolidation, dream
from mem.core.memdir.store import MemoryDir
from mem.core.memdir.store import MemoryDir
from mem.core.errors import LockedError


def sessions(dir_, n, mtime=None):
    dir_.mkdir(parents=True, exist_ok=True)
    ids = []
    for _ in range(n):
        sid = str(uuid.uuid4())
        p = dir_ / f"{sid}.jsonl"
        p.write_text("{}\n")
        if mtime:
            os.utime(p, (mtime, mtime))
        ids.append(sid)
    (dir_ / "agent-123.jsonl").write_text("{}\n")  # not a session
    return ids


# --- gates and lock ---------------------------------------------------------


def test_gates(tmp_path, memdir):
    tdir = tmp_path / "transcripts"
    ids = sessions(tdir, 4)
    g = consolidation.check_gate(MemoryDir(memdir), str(tdir))
    assert not g.open and "4 sessions" in g.reason and g.hours_since is None
    sessions(tdir, 1)
    assert consolidation.check_gate(MemoryDir(memdir), str(tdir)).open
    assert not consolidation.check_gate(MemoryDir(memdir), str(tdir), exclude_session=ids[0]).open
    lock = memdir / ".consolidate-lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 3600, time.time() - 3600))  # an hour ago
    g = consolidation.check_gate(MemoryDir(memdir), str(tdir))
    assert not g.open and "1.0 h ago" in g.reason
    assert consolidation.check_gate(MemoryDir(memdir), str(tdir), force=True).open
    # sessions older than the last consolidation do not count
    os.utime(lock, (time.time() - 48 * 3600,) * 2)
    for p in tdir.glob("*.jsonl"):
        os.utime(p, (time.time() - 72 * 3600,) * 2)
    g = consolidation.check_gate(MemoryDir(memdir), str(tdir))
    assert not g.open and g.sessions == []


def test_lock_acquire_rollback_and_stale(memdir):
    prior = consolidation.try_acquire(MemoryDir(memdir))
    assert prior == 0
    assert (memdir / ".consolidate-lock").read_text() == str(os.getpid())
    assert consolidation.is_held(MemoryDir(memdir))
    assert consolidation.try_acquire(MemoryDir(memdir)) is None  # we hold it and we run
    consolidation.rollback(MemoryDir(memdir), 0)
    assert not (memdir / ".consolidate-lock").exists()
    # A dead PID does not hold it; an old mtime does not either (PID reuse).
    lock = memdir / ".consolidate-lock"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    lock.write_text(dead)
    assert not consolidation.is_held(MemoryDir(memdir))
    lock.write_text(str(os.getpid()))
    os.utime(lock, (time.time() - 2 * 3600,) * 2)
    assert not consolidation.is_held(MemoryDir(memdir))
    prior = consolidation.try_acquire(MemoryDir(memdir))
    assert prior and abs(prior / 1000 - (time.time() - 2 * 3600)) < 5
    consolidation.rollback(MemoryDir(memdir), prior)
    assert lock.read_text() == "" and abs(lock.stat().st_mtime - prior / 1000) < 0.01


# --- mechanical mode ----------------------------------------------------------


@pytest.fixture
def dupes(memdir):
    write_memory(memdir, "a.md", name="a", description="tabs", body="Use tabs.\n", mtime=1_000_000)
    write_memory(memdir, "a_copy.md", name="a", description="tabs", body="Use   tabs.\n", mtime=2_000_000)
    # the same body said of two different things: never merged
    write_memory(memdir, "staging.md", name="staging rate limit", description="rate limit on staging",
                 body="100 requests per minute per key.\n")
    write_memory(memdir, "prod.md", name="prod rate limit", description="rate limit on prod",
                 body="100 requests per minute per key.\n")
    write_memory(memdir, "b.md", name="b", description="B", body="The deploy runs from the release branch every friday after the freeze ends.\n")
    write_memory(memdir, "b2.md", name="b2", description="B", body="The deploy runs from the release branch every friday after the freeze ends, usually.\n")
    write_memory(memdir, "logs/2026/01/2026-01-01.md", name="l", description="l", body="Use tabs.\n")
    (memdir / "MEMORY.md").write_text("- [Tabs](a_copy.md) — tabs\n- [B](b.md) — b\n")
    return memdir


def test_mechanical_merges_exact_reports_near_rebuilds_index(dupes):
    r = dream.run(MemoryDir(dupes), None, mode="mechanical", force=True)
    assert r.ran and r.duplicates == [["a.md", "a_copy.md"]]  # the older one is kept: a merge keeps its date
    assert r.changes.deleted == ["a_copy.md"] and "MEMORY.md" in r.changes.updated
    assert (dupes / "a.md").stat().st_mtime == 1_000_000
    assert (dupes / "staging.md").exists() and (dupes / "prod.md").exists()
    assert not any(set(f.files) == {"staging.md", "prod.md"} for f in r.findings)
    assert [(d["a"], d["b"]) for d in r.near_duplicates] in ([("b.md", "b2.md")], [("b2.md", "b.md")])
    index = (dupes / "MEMORY.md").read_text()
    assert "- [Tabs](a.md) — tabs\n" in index and "](b2.md)" in index and "](a_copy.md)" not in index
    assert (dupes / "logs/2026/01/2026-01-01.md").exists()  # logs are never merged
    assert MemoryDir(str(dupes)).history.operations()[0].id == r.snapshot_id


def test_dry_run_leaves_the_directory_byte_identical(dupes):
    before = tree_bytes(dupes)
    r = dream.run(MemoryDir(dupes), None, mode="mechanical", force=True, dry_run=True)
    assert r.ran and r.changes.deleted == ["a_copy.md"]
    assert "--- a/a_copy.md" in r.diff and "+++ /dev/null" in r.diff
    assert tree_bytes(dupes) == before
    assert not os.path.isdir(MemoryDir(str(dupes)).history.git_dir)  # nothing recorded, no history started
    state = os.path.join(os.environ["MEM_STATE_DIR"], "dirs")
    assert not os.path.isdir(state) or all("mem-dream-" not in d for d in os.listdir(state))


def test_an_empty_memory_directory_dreams_without_an_index(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = dream.run(MemoryDir(empty), None, mode="mechanical", force=True)
    assert r.ran and r.lint == [] and r.duplicates == []
    assert not (empty / "MEMORY.md").exists()  # no index made for nothing


def test_undo_restores_byte_identical(run_mem, dupes):
    before = tree_bytes(dupes)
    before.pop(".consolidate-lock", None)
    r = run_mem("dream", "--offline", "--force")
    assert r.returncode == 0, r.stderr
    assert "deleted a_copy.md" in r.stdout
    r = run_mem("dream", "--undo")
    assert r.returncode == 0, r.stderr
    after = tree_bytes(dupes)
    after.pop(".consolidate-lock", None)
    assert after == before


def test_two_dreams_at_once_one_exits_5(run_mem, dupes):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (dupes / ".consolidate-lock").write_text(str(holder.pid))
        r = run_mem("dream", "--offline", "--force")
        assert r.returncode == 5 and "--wait" in r.stderr
        with pytest.raises(LockedError):
            dream.run(MemoryDir(dupes), None, mode="mechanical", force=True)
    finally:
        holder.kill()
        holder.wait()
    r = run_mem("dream", "--offline", "--force")  # the holder died: stale, recovered
    assert r.returncode == 0, r.stderr


def test_closed_gate_exits_0_with_reason_and_json(run_mem, dupes):
    r = run_mem("dream", "--offline")
    assert r.returncode == 0 and r.stdout == "" and "not dreaming: 0 sessions" in r.stderr
    r = run_mem("dream", "--offline", "-q")
    assert r.returncode == 0 and r.stderr == ""
    doc = json.loads(run_mem("dream", "--offline", "--json").stdout)
    assert doc["ran"] is False and doc["gate"]["open"] is False and doc["gate"]["sessions_since"] == 0


def test_session_gate_opens_with_real_transcript_dir(run_mem, tmp_path, isolated_env):
    project = tmp_path / "proj"
    project.mkdir()
    from mem.clients import resolve

    res = resolve(project=str(project))
    os.makedirs(res.memory_dir)
    write_memory(__import__("pathlib").Path(res.memory_dir), "x.md", name="x", description="x")
    sessions(__import__("pathlib").Path(res.transcripts_dir), 5)
    r = run_mem("dream", "--offline", "--json", "--project", str(project))
    doc = json.loads(r.stdout)
    assert doc["ran"] is True and doc["gate"]["sessions_since"] == 5, r.stderr
    assert (__import__("pathlib").Path(res.memory_dir) / ".consolidate-lock").read_text().isdigit()


def test_all_projects_walks_the_config_home(run_mem, isolated_env):
    base = isolated_env / ".claude" / "projects"
    for name in ("-a", "-b"):
        (base / name / "memory").mkdir(parents=True)
        write_memory(base / name / "memory", "m.md", name="m", description="m")
        write_memory(base / name / "memory", "m2.md", name="m", description="m")
    r = run_mem("dream", "--all-projects", "--offline", "--force", "-q", "--json")
    assert r.returncode == 0, r.stderr
    docs = json.loads(r.stdout)
    assert len(docs) == 2 and all(d["deleted"] for d in docs)
    r = run_mem("dream", "--all-projects", "--offline")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""  # silent no-op without -v


# --- validation -------------------------------------------------------------


def test_validate_rules(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for d in (before, after):
        write_memory(d, "ok.md", name="ok", description="ok")
        (d / "logs/2026/01").mkdir(parents=True)
        (d / "logs/2026/01/2026-01-01.md").write_text("- 10:00 one\n")
        (d / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n")
    (after / "bad.md").write_text("---\nname: bad\ndescription: d\ntype: opinion\n---\n")
    (after / "logs/2026/01/2026-01-01.md").write_text("- 10:00 rewritten\n")
    (after / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n- [Gone](gone.md) — x\n")
    problems = dream.validate(MemoryDir(after), str(before))
    assert any("bad.md: type" in p for p in problems)
    assert any("daily log was rewritten" in p for p in problems)
    assert any("gone.md" in p for p in problems)
    assert dream.validate(MemoryDir(before), str(before)) == []


def test_model_without_key_is_config_error(run_mem, dupes):
    r = run_mem("dream", "--force", "--model", "claude-sonnet-5-5")
    assert r.returncode == 3 and "ANTHROPIC_API_KEY" in r.stderr


# --- healing ----------------------------------------------------------------


def test_an_over_limit_index_of_prose_is_fitted_and_every_topic_file_reachable(run_mem, memdir):
    from mem.core.memdir import index as idx
    from mem.core.memdir.layout import INDEX_NAME, INDEX_NOTES

    lines = ["# Project memory", ""]
    for i in range(60):
        write_memory(memdir, f"topic_{i:02d}.md", name=f"topic {i}", description=f"what topic {i} is about")
        lines.append(f"- [Topic {i}](topic_{i:02d}.md) — topic {i}")
        lines += [f"  Note {i}: written by hand, with the why and the how of topic {i}.", ""] if i % 2 else []
    lines += ["## Long notes", *[f"Paragraph line {n} of notes kept by hand in the index." for n in range(93)]]
    prose = [line for line in lines if line.strip() and not line.startswith(("- [", "#"))]
    write_memory(memdir, "unlisted.md", name="unlisted", description="a topic file without a pointer")
    (memdir / INDEX_NAME).write_text("\n".join(lines) + "\n")
    assert len(lines) == 216 and idx.render_as_injected((memdir / INDEX_NAME).read_text()).truncated
    r = run_mem("dream", "--offline", "--force", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    index = (memdir / INDEX_NAME).read_text()
    seen = idx.render_as_injected(index)
    assert not seen.truncated
    shown = {p.relpath for p in idx.parse_pointers(seen.content)}
    assert {p.name for p in memdir.glob("*.md")} - {INDEX_NAME} <= shown  # every topic file, the new ones too
    assert seen.content.split("\n")[1] == f"- [Index notes]({INDEX_NOTES}) — notes moved out of the index"
    notes = (memdir / INDEX_NOTES).read_text()
    assert notes.startswith("---\nname: index notes\n") and "type: reference" in notes
    assert notes.endswith("\n".join(prose) + "\n")  # verbatim, in order
    assert INDEX_NOTES in doc["created"] and {"kind": "prose-moved", "files": [INDEX_NAME, INDEX_NOTES],
                                             "fixed": True} == {k: v for k, v in doc["findings"][0].items() if k != "evidence"}


def test_more_topic_files_than_fit_are_reported_not_failed(memdir):
    from mem.core.memdir.layout import INDEX_NAME

    for i in range(205):
        write_memory(memdir, f"t{i:03d}.md", name=f"t{i}", description=f"topic {i}")
    (memdir / INDEX_NAME).write_text("Hand notes.\n")
    r = dream.run(MemoryDir(memdir), None, mode="mechanical", force=True)
    unreachable = [f for f in r.findings if f.kind == "unreachable"]
    assert r.ran and len(unreachable) == 1 and len(unreachable[0].files) == 6  # 205 files + notes, 200 lines


def test_validation_judges_the_index_against_what_it_was(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for d in (before, after):
        write_memory(d, "ok.md", name="ok", description="ok")
    (before / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n" + "prose\n" * 250)
    (after / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n" + "prose\n" * 240)  # still over, but better
    assert dream.validate(MemoryDir(after), str(before)) == []
    (after / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n" + "prose\n" * 260)  # worse
    assert any("worse than before" in p for p in dream.validate(MemoryDir(after), str(before)))
    (before / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n")  # a new problem
    (after / "MEMORY.md").write_text("- [Ok](ok.md) — ok\n" + "prose\n" * 240)
    assert any("over its limits" in p for p in dream.validate(MemoryDir(after), str(before)))


def test_a_messy_directory_gets_its_findings_and_no_false_merge(memdir):
    from datetime import date

    from helpers.messy import messy_dir

    from mem.core.jobs.dream_checks import NEAR_DUPLICATE

    rels = messy_dir(memdir, "MEMORY.md")
    assert len(rels) == 30
    r = dream.run(MemoryDir(memdir), None, mode="mechanical", force=True, today=date(2026, 11, 25))
    assert r.ran and r.duplicates == [] and r.changes.deleted == []  # paraphrases are reported, never merged
    found = {(f.kind, tuple(f.files)) for f in r.findings}
    assert {("near-duplicate", ("deploy_friday.md", "deploy_schedule.md")), ("near-duplicate", ("indent_style.md", "user_tabs.md")),
            ("near-duplicate", ("ci_flaky.md", "payments_flaky.md")), ("near-duplicate", ("dashboards.md", "grafana.md")),
            ("stale-date", ("merge_freeze.md",)), ("stale-date", ("launch.md",)),
            ("relative-date", ("oncall.md",)), ("relative-date", ("release_notes.md",)),
            ("contradiction", ("npm.md", "pnpm.md")), ("contradiction", ("pg_port.md", "pg_port_new.md"))} <= found
    assert ("near-duplicate", ("prod_rate_limit.md", "staging_rate_limit.md")) not in found
    assert not any(k == "stale-date" and "roadmap.md" in f for k, f in found)  # 2099 has not passed
    contradictions = [f for f in r.findings if f.kind == "contradiction"]
    assert len(contradictions) == 2 and all(not f.fixed for f in r.findings)
    port = next(f for f in contradictions if "pg_port.md" in f.files)
    assert any("5432" in e for e in port.evidence) and any("5433" in e for e in port.evidence)
    assert {(d["a"], d["b"]) for d in r.near_duplicates} == {f for k, f in found if k == "near-duplicate"}
    assert all(d["similarity"] >= NEAR_DUPLICATE for d in r.near_duplicates)


def test_findings_in_json_from_the_cli(run_mem_forked, memdir):
    run_mem = run_mem_forked  # a finished dream's lock names its process: one process cannot dream twice in a row
    from helpers.messy import messy_dir

    messy_dir(memdir, "MEMORY.md")
    r = run_mem("dream", "--offline", "--force", "--json")
    assert r.returncode == 0, r.stderr
    findings = json.loads(r.stdout)["findings"]
    assert {"near-duplicate", "stale-date", "relative-date", "contradiction"} <= {f["kind"] for f in findings}
    assert all(set(f) == {"kind", "files", "evidence", "fixed"} for f in findings)
    r = run_mem("dream", "--offline", "--force")
    assert "contradiction: npm.md, pnpm.md" in r.stderr


# --- stale claims, checked against the project's repository ---------------------------------------


def stale_claims(result) -> dict:
    return {f.files[0]: f for f in result.findings if f.kind == "stale-claim"}


def test_mechanical_dream_reports_a_moved_path_and_an_expired_deadline_as_stale_claims(tmp_path, memdir):
    repo = moved_repo(tmp_path / "repo")
    write_memories(memdir, STALE_MEMORIES)
    before = {rel: (memdir / rel).read_bytes() for rel in STALE_MEMORIES}
    result = dream.run(MemoryDir(memdir), None, mode="mechanical", force=True, repo=str(repo))
    found = stale_claims(result)
    assert set(found) == {"project_slugs.md", "project_freeze.md"}
    slugs = found["project_slugs.md"]
    assert slugs.evidence[0].startswith("line 7: src/util/strings.py: moved (renamed in ")
    assert slugs.evidence[0].endswith("-> src/common/strings.py)") and slugs.fixed is False
    assert found["project_freeze.md"].evidence[0].startswith("line 7: 2020-03-12: expired (")
    assert "stale-claim" in [d["kind"] for d in result.as_dict()["findings"]]
    assert {rel: (memdir / rel).read_bytes() for rel in STALE_MEMORIES} == before  # reported, not changed


def test_mechanical_dream_reports_no_stale_claim_when_every_claim_holds(tmp_path, memdir):
    repo = moved_repo(tmp_path / "repo")
    write_memories(memdir, TRUE_MEMORIES)
    assert stale_claims(dream.run(MemoryDir(memdir), None, mode="mechanical", force=True, repo=str(repo))) == {}


def test_without_a_repository_there_are_no_stale_claims_and_no_error(tmp_path, memdir):
    write_memories(memdir, STALE_MEMORIES)
    result = dream.run(MemoryDir(memdir), None, mode="mechanical", force=True, repo=None)
    assert result.ran and stale_claims(result) == {}
    not_git = tmp_path / "plain"
    not_git.mkdir()
    result = dream.run(MemoryDir(memdir), None, mode="mechanical", force=True, dry_run=True, repo=str(not_git))
    assert result.ran and stale_claims(result) == {}


def test_mem_dream_json_lists_the_stale_claims_of_the_project_it_runs_in(run_mem_forked, tmp_path, memdir):
    run_mem = run_mem_forked  # a finished dream's lock names its process: one process cannot dream twice in a row
    repo = moved_repo(tmp_path / "repo")
    write_memories(memdir, STALE_MEMORIES)
    r = run_mem("dream", "--offline", "--force", "--json", cwd=str(repo))
    assert r.returncode == 0, r.stderr
    found = {f["files"][0]: f for f in json.loads(r.stdout)["findings"] if f["kind"] == "stale-claim"}
    assert set(found) == {"project_slugs.md", "project_freeze.md"}
    assert found["project_slugs.md"]["evidence"][0].endswith("-> src/common/strings.py)")
    assert found["project_slugs.md"]["fixed"] is False
    # --repo names the repository from anywhere; outside one, without it, no stale claims and no error
    r = run_mem("dream", "--offline", "--force", "--json", "--repo", str(repo), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(f["files"][0] for f in json.loads(r.stdout)["findings"] if f["kind"] == "stale-claim") == \
        ["project_freeze.md", "project_slugs.md"]
    r = run_mem("dream", "--offline", "--force", "--json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert [f for f in json.loads(r.stdout)["findings"] if f["kind"] == "stale-claim"] == []
    # the text report says them on stderr
    r = run_mem("dream", "--offline", "--force", cwd=str(repo))
    assert "stale-claim: project_slugs.md: line 7: src/util/strings.py: moved" in r.stderr


def test_all_projects_finds_each_projects_repository_from_its_transcripts(run_mem, tmp_path):
    from mem.core.paths import sanitize_path

    repo = moved_repo(tmp_path / "repo")
    projects = tmp_path / "env-home" / "projects"
    here, elsewhere = projects / sanitize_path(str(repo.resolve())), projects / "-some-other-project"
    for project in (here, elsewhere):  # the other project's transcript ran in this repo too: not its repository
        write_memories(project / "memory", STALE_MEMORIES)
        (project / f"{uuid.uuid4()}.jsonl").write_text(json.dumps({"type": "user", "cwd": str(repo / "src")}) + "\n")
    r = run_mem("dream", "--all-projects", "--offline", "--force", "--json",
                env={"CLAUDE_CONFIG_DIR": str(tmp_path / "env-home")}, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    stale = {os.path.basename(d["memory_dir"].rstrip("/").rsplit("/memory", 1)[0]):
             sorted(f["files"][0] for f in d["findings"] if f["kind"] == "stale-claim") for d in json.loads(r.stdout)}
    assert stale == {here.name: ["project_freeze.md", "project_slugs.md"], elsewhere.name: []}
    r = run_mem("dream", "--all-projects", "--offline", "--force", "--repo", str(repo),
                env={"CLAUDE_CONFIG_DIR": str(tmp_path / "env-home")})
    assert r.returncode == 2 and "--repo" in r.stderr
