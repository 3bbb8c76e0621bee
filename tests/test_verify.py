"""mem verify: claims checked against a real git repository whose history renames, deletes, drops and rewrites."""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, git, write_memory

from mem.cli import cli
from mem.core.memdir.store import MemoryDir
from mem.core.verify import VerifyCache, claims_of, verify

sys.path.insert(0, str(FIXTURES / "verify"))
from build import TODAY, build_memories, build_repo, labels, score


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The labelled set's repository (built once: the tests only read it) and its commit ids."""
    return build_repo(tmp_path_factory.mktemp("verify") / "repo")


def check(memdir: Path, repo: Path, body: str, *, type: str = "project", today=TODAY, name: str = "m.md"):
    write_memory(memdir, name, name="m", description="a memory under test", type=type, body=body)
    return {(f.kind, f.claim): f for f in verify(MemoryDir(str(memdir)), str(repo), [name], today=today).findings}


def mem(*args: str, cwd: str | None = None):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# -- each kind of claim, stale and still true ----------------------------------------------------


def test_a_renamed_file_is_moved_to_its_new_place_and_a_kept_one_is_ok(memdir, built):
    repo, _ = built
    found = check(memdir, repo, "Slugs: `src/util/strings.py`. Retry: src/net/retry.py:12. Docs: `docs/old/`.\n")
    moved = found[("path", "src/util/strings.py")]
    assert (moved.verdict, moved.new_place) == ("moved", "src/common/strings.py")
    assert "renamed in" in moved.evidence
    assert found[("path", "src/net/retry.py")].verdict == "ok"
    assert found[("path", "docs/old/")].new_place == "docs/guide"  # a renamed directory


def test_a_deleted_function_is_missing_and_a_kept_one_is_ok(memdir, built):
    repo, _ = built
    found = check(memdir, repo, "Headers go through `parse_legacy_header()`; ports through `start_server()`.\n")
    assert found[("symbol", "parse_legacy_header()")].verdict == "missing"
    assert found[("symbol", "start_server()")].verdict == "ok"


def test_a_deleted_file_is_missing(memdir, built):
    repo, _ = built
    assert check(memdir, repo, "The handler is in `src/app/legacy.py`.\n")[("path", "src/app/legacy.py")].verdict == "missing"


def test_a_dropped_make_target_and_npm_script_are_missing_kept_ones_ok(memdir, built):
    repo, _ = built
    found = check(memdir, repo, "Run `make integration` then `make lint`, `npm run dev` or `npm run build`.\n")
    assert found[("command", "make integration")].verdict == "missing"
    assert found[("command", "make lint")].verdict == "ok"
    assert found[("command", "npm run dev")].verdict == "missing"
    assert found[("command", "npm run build")].verdict == "ok"


def test_a_commit_amended_away_is_missing_and_the_amended_one_is_ok(memdir, built):
    repo, ids = built
    found = check(memdir, repo, f"Port changed in {ids['amended_away']}, final in commit {ids['amended']}.\n")
    gone = found[("commit", ids["amended_away"])]
    assert gone.verdict == "missing" and "rewritten" in gone.evidence  # the object is still there, unreachable
    assert found[("commit", ids["amended"])].verdict == "ok"
    assert check(memdir, repo, "Fixed in `0123abc`.\n")[("commit", "0123abc")].evidence == "no such commit"


def test_a_project_deadline_expires_once_all_have_passed(memdir, built):
    repo, _ = built
    body = "Merge freeze until 2026-03-12; the review is due March 20, 2026.\n"
    found = check(memdir, repo, body)
    assert {found[("date", "2026-03-12")].verdict, found[("date", "March 20, 2026")].verdict} == {"expired"}
    found = check(memdir, repo, body, today=datetime.date(2026, 3, 15))  # one deadline still ahead
    assert {f.verdict for f in found.values()} == {"ok"}
    assert check(memdir, repo, body, type="user") == {}  # a deadline is a project's claim
    window = check(memdir, repo, "No merges to main from 2026-03-05 to 2026-03-12: the branch is cut.\n")
    assert window[("date", "2026-03-12")].verdict == "expired" and ("date", "2026-03-05") not in window


def test_a_relative_date_is_expired_in_any_memory(memdir, built):
    repo, _ = built
    found = check(memdir, repo, "The user said yesterday that CI is flaky.\n", type="feedback")
    assert found[("date", "yesterday")].verdict == "expired"


def test_a_link_to_a_memory_that_is_gone_is_missing(memdir, built):
    repo, _ = built
    write_memory(memdir, "deploy.md", name="deploy", description="deploys", type="project")
    found = check(memdir, repo, "See [deploy](deploy.md) and [the runbook](runbook.md#steps).\n")
    assert found[("link", "deploy.md")].verdict == "ok"
    assert found[("link", "runbook.md#steps")].verdict == "missing"


def test_what_is_not_a_claim_is_not_reported(memdir, built):
    repo, _ = built
    body = (
        "Make sure to run tests; see https://example.com/src/gone.py and github.com/o/r/blob/x.py.\n"
        "Works on Node.js 20 and Python 3.12 (version 2.4.1, colour #a1b2c3, build 2024.05.01).\n"
        "Keep `retry` and `Postgres` in mind; read/write access; shipped on 2024-05-01.\n"
        "```\n$ ./deploy --until 2025-01-01 src/made/up.py\n```\n"
    )
    assert check(memdir, repo, body) == {}


def test_claims_keep_their_line_in_the_file():
    text = "---\nname: a\ntype: project\n---\n\nrun `make lint`\n"
    assert [(c.line, c.kind, c.text) for c in claims_of(text)] == [(6, "command", "make lint")]


def test_labelled_set_precision_and_recall(tmp_path, built):
    repo, ids = built
    memory = build_memories(tmp_path / "memory", ids)
    labelled = labels(ids)
    assert len(labelled) >= 40 and sum(not stale for stale in labelled.values()) >= len(labelled) / 2
    result = score(verify(MemoryDir(str(memory)), str(repo), today=TODAY).findings, labelled)
    assert result["precision"] >= 0.95, result["fp"]
    assert result["recall"] >= 0.90, result["fn"]


# -- the cache ----------------------------------------------------------------------------------


def test_results_are_cached_by_content_and_head(memdir, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "a.py").write_text("def alpha():\n    pass\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "a", cwd=repo)
    write_memory(memdir, "m.md", name="m", description="d", type="project", body="`alpha()` in `a.py`\n")
    memory = MemoryDir(str(memdir))
    assert verify(memory, str(repo), today=TODAY).cached == 0
    again = verify(memory, str(repo), today=TODAY)
    assert again.cached == 1 and {f.verdict for f in again.findings} == {"ok"}
    assert VerifyCache(memory.state.verify_cache).entries["m.md"]["findings"]  # what recall will read
    (repo / "a.py").write_text("def beta():\n    pass\n")
    git("commit", "-q", "-am", "rename alpha", cwd=repo)
    after = verify(memory, str(repo), today=TODAY)  # a new HEAD: checked again
    assert after.cached == 0 and {f.verdict for f in after.findings} == {"ok", "missing"}
    write_memory(memdir, "m.md", name="m", description="d", type="project", body="`beta()` in `a.py`\n")
    edited = verify(memory, str(repo), today=TODAY)  # new content: checked again
    assert edited.cached == 0 and {f.verdict for f in edited.findings} == {"ok"}


# -- the command ---------------------------------------------------------------------------------


def test_cli_prints_stale_findings_grep_style_and_exits_1(memdir, built):
    repo, _ = built
    write_memory(memdir, "m.md", name="m", description="d", type="project",
                 body="Run `make integration` and `make lint`.\n")
    r = mem("verify", "--repo", str(repo))
    assert r.exit_code == 1
    assert r.stdout == "m.md:7: missing: command make integration (not a target in Makefile)\n"
    assert "1 stale of 2 claims in 1 memories" in r.stderr
    r = mem("verify", "--repo", str(repo), "--all", "--jsonl")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(row["claim"], row["verdict"], row["stale"]) for row in rows] == [
        ("make integration", "missing", True), ("make lint", "ok", False)]
    assert json.loads(mem("verify", "--repo", str(repo), "--json").stdout)[0]["kind"] == "command"


def test_cli_exits_0_when_everything_holds_and_checks_only_the_files_named(memdir, built):
    repo, _ = built
    write_memory(memdir, "good.md", name="g", description="d", type="project", body="Run `make lint`.\n")
    write_memory(memdir, "bad.md", name="b", description="d", type="project", body="Run `make integration`.\n")
    r = mem("verify", "--repo", str(repo), "good.md")
    assert (r.exit_code, r.stdout) == (0, "")
    assert mem("verify", "--repo", str(repo), str(memdir / "bad.md")).exit_code == 1
    r = mem("verify", "--repo", str(repo), "gone.md")
    assert r.exit_code == 2 and "no memory gone.md" in r.stderr


def test_cli_without_a_repository_says_what_to_set_and_exits_3(memdir, tmp_path, monkeypatch, run_mem):
    monkeypatch.chdir(tmp_path)
    r = run_mem("verify", cwd=str(tmp_path))
    assert r.returncode == 3 and "--repo" in r.stderr and r.stdout == ""
    assert run_mem("verify", "--repo", str(tmp_path)).returncode == 3  # not a repository either


def test_fix_rewrites_a_moved_path_in_place_recorded_and_undoable(memdir, built, run_mem):
    repo, _ = built
    body = "Slugs: `src/util/strings.py` (see src/util/strings.py:3); gone: `src/app/legacy.py`.\n"
    path = write_memory(memdir, "m.md", name="m", description="d", type="project", body=body)
    before = path.read_text()
    r = run_mem("verify", "--repo", str(repo), "--fix")
    assert r.returncode == 1  # the deleted file is still stale; nothing is deleted for it
    assert path.read_text() == before.replace("src/util/strings.py", "src/common/strings.py")
    assert r.stdout == "m.md:7: missing: path src/app/legacy.py (not in the tree at HEAD, no rename found)\n"
    ops = json.loads(run_mem("history", "--json").stdout)
    assert ops[0]["command"] == "verify" and ops[0]["args"] == ["--fix"]
    assert run_mem("undo").returncode == 0
    assert path.read_text() == before


# -- recall ---------------------------------------------------------------------------------------


def test_recall_notes_a_stale_claim_and_ranks_the_stale_memory_second_of_a_tie(memdir, built):
    repo, _ = built
    now = time.time()  # a_ is the newer, so the manifest (newest first) puts it first of the tie
    write_memory(memdir, "a_deploy.md", name="deploy a", description="how to deploy the service",
                 type="project", body="Deploy with `make integration` from the root.\n", mtime=now)
    write_memory(memdir, "b_deploy.md", name="deploy b", description="how to deploy the service",
                 type="project", body="Deploy with `make lint` from the root.\n", mtime=now - 60)
    before = json.loads(mem("recall", "--offline", "--json", "how", "to", "deploy", "the", "service").stdout)
    scores = {s["relpath"]: s["score"] for s in before["selected"]}
    assert scores["a_deploy.md"] == scores["b_deploy.md"]  # a tie, which a_ wins on its own
    assert [s["relpath"] for s in before["selected"]] == ["a_deploy.md", "b_deploy.md"]
    assert all(">" not in s["content"].split("\n")[-1] for s in before["selected"])
    assert mem("verify", "--repo", str(repo)).exit_code == 1
    after = json.loads(mem("recall", "--offline", "--json", "how", "to", "deploy", "the", "service").stdout)
    assert [s["relpath"] for s in after["selected"]] == ["b_deploy.md", "a_deploy.md"]
    stale = after["selected"][1]["content"]
    assert stale.endswith("\n\n> Checked against the repository (mem verify): "
                          "`make integration` is no longer declared (line 7).")
    assert "mem verify" not in after["selected"][0]["content"]
    write_memory(memdir, "a_deploy.md", name="deploy a", description="how to deploy the service",
                 type="project", body="Deploy with `make docs` from the root.\n")  # edited: the note was for the old text
    edited = json.loads(mem("recall", "--offline", "--json", "how", "to", "deploy", "the", "service").stdout)
    assert not any("mem verify" in s["content"] for s in edited["selected"])


def test_absolute_paths_and_a_file_rewritten_elsewhere(memdir, tmp_path):
    repo = tmp_path / "repo"
    (repo / "a").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    (repo / "a" / "config_loader.py").write_text("def load():\n    return 1\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "a", cwd=repo)
    git("rm", "-q", "a/config_loader.py", cwd=repo)  # gone, and back elsewhere too changed for rename detection
    (repo / "b").mkdir()
    (repo / "b" / "config_loader.py").write_text("import json\n\n\ndef load(path):\n    return json.load(open(path))\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "b", cwd=repo)
    found = check(memdir, repo, f"Config: `a/config_loader.py`, also {repo}/b/config_loader.py:4 and /etc/nginx/nginx.conf.\n")
    elsewhere = found[("path", "a/config_loader.py")]
    assert (elsewhere.verdict, elsewhere.new_place) == ("moved", "b/config_loader.py")
    assert "the one file of that name" in elsewhere.evidence
    assert found[("path", f"{repo}/b/config_loader.py")].verdict == "ok"
    assert found[("path", "/etc/nginx/nginx.conf")].evidence == "outside the repository: not checked"


def test_cli_checks_against_the_git_root_of_the_current_directory(memdir, built, run_mem):
    repo, _ = built
    write_memory(memdir, "m.md", name="m", description="d", type="project", body="Run `make integration`.\n")
    r = run_mem("verify", cwd=str(repo / "src"))
    assert r.returncode == 1 and r.stdout.startswith("m.md:7: missing: command make integration")


def test_a_file_deleted_then_added_again_elsewhere_is_found_by_its_content(memdir, tmp_path):
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    body = "def generate():\n    return 'every line the same'\n"
    (repo / "tools" / "gen.py").write_text(body)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "gen", cwd=repo)
    git("rm", "-q", "tools/gen.py", cwd=repo)
    git("commit", "-q", "-m", "drop gen", cwd=repo)  # deleted in one commit, back under another name in the next
    (repo / "scripts").mkdir()
    (repo / "scripts" / "generate.py").write_text(body)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "generate", cwd=repo)
    moved = check(memdir, repo, "Fixtures come from `tools/gen.py`.\n")[("path", "tools/gen.py")]
    assert (moved.verdict, moved.new_place) == ("moved", "scripts/generate.py")
    assert "the same content" in moved.evidence
