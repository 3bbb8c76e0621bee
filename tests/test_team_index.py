"""`mem index` and team/MEMORY.md: rebuilt with pointers sorted by path, the same on every machine."""

from __future__ import annotations

import json

from conftest import write_memory

from mem.core.memdir import index as idx
from mem.core.memdir.manifest import scan


def _team_files(root, order):
    for name in order:
        write_memory(root, f"team/{name}.md", name=name, description=f"about {name}", type="project")


def test_rebuild_team_sorts_pointers_by_path(tmp_path):
    _team_files(tmp_path, ["zeta", "alpha", "mid"])
    team = tmp_path / "team"
    raw = "# Team memory\n- [Zeta](zeta.md) — about zeta\n"
    out = idx.rebuild_team(raw, str(team), scan(str(team), limit=None))
    assert out == ("# Team memory\n- [Alpha](alpha.md) — about alpha\n- [Mid](mid.md) — about mid\n"
                   "- [Zeta](zeta.md) — about zeta\n")
    assert idx.rebuild_team(out, str(team), scan(str(team), limit=None)) == out


def test_sections_keep_their_own_lists(tmp_path):
    _team_files(tmp_path, ["b", "a", "d", "c"])
    team = tmp_path / "team"
    raw = "## Build\n- [D](d.md)\n- [B](b.md)\n\n## Deploy\n- [C](c.md)\n- [A](a.md)\n"
    out = idx.rebuild_team(raw, str(team), scan(str(team), limit=None))
    assert out == "## Build\n- [B](b.md)\n- [D](d.md)\n\n## Deploy\n- [A](a.md)\n- [C](c.md)\n"


def test_two_machines_write_the_same_team_index(tmp_path, run_mem):
    for machine, order in (("one", ["c", "a", "b"]), ("two", ["b", "c", "a"])):
        root = tmp_path / machine
        _team_files(root, order)
        (root / "team" / "MEMORY.md").write_text("# Team\n", encoding="utf-8")
        r = run_mem("index", "--rebuild", "--team", "--dir", str(root))
        assert r.returncode == 0, r.stderr
        assert "team/MEMORY.md: added 3, removed 0 pointers" in r.stderr
    one = (tmp_path / "one/team/MEMORY.md").read_text()
    assert one == (tmp_path / "two/team/MEMORY.md").read_text()
    assert [p.relpath for p in idx.parse_pointers(one)] == ["a.md", "b.md", "c.md"]


def test_plain_rebuild_also_rebuilds_the_team_index(tmp_path, run_mem):
    write_memory(tmp_path, "mine.md", name="mine", description="private")
    _team_files(tmp_path, ["shared"])
    r = run_mem("index", "--rebuild", "--json", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["added"] == ["mine.md"] and doc["written"] is True
    assert doc["team"]["added"] == ["shared.md"] and doc["team"]["path"].endswith("team/MEMORY.md")
    assert (tmp_path / "MEMORY.md").read_text() == "- [Mine](mine.md) — private\n"
    assert (tmp_path / "team/MEMORY.md").read_text() == "- [Shared](shared.md) — about shared\n"
    r = run_mem("index", "--rebuild", "--dir", str(tmp_path))
    assert "MEMORY.md is up to date" in r.stderr and "team/MEMORY.md is up to date" in r.stderr


def test_without_team_dir_the_output_is_unchanged(tmp_path, run_mem):
    write_memory(tmp_path, "mine.md", name="mine", description="private")
    doc = json.loads(run_mem("index", "--rebuild", "--json", "--dir", str(tmp_path)).stdout)
    assert "team" not in doc


def test_dry_run_diffs_both(tmp_path, run_mem):
    write_memory(tmp_path, "mine.md", name="mine", description="private")
    _team_files(tmp_path, ["shared"])
    r = run_mem("index", "--rebuild", "--dry-run", "--dir", str(tmp_path))
    assert r.returncode == 1  # both would change
    assert "+++ b/MEMORY.md" in r.stdout and "+++ b/team/MEMORY.md" in r.stdout
    assert not (tmp_path / "team/MEMORY.md").exists() and not (tmp_path / "MEMORY.md").exists()


def test_check_and_print_the_team_index(tmp_path, run_mem):
    _team_files(tmp_path, ["a", "b"])
    (tmp_path / "team/MEMORY.md").write_text("- [A](a.md)\n- [Gone](gone.md)\n", encoding="utf-8")
    r = run_mem("index", "--check", "--team", "--dir", str(tmp_path))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "team/MEMORY.md:2: dangling-pointer: pointer to gone.md, which does not exist",
        "team/MEMORY.md: not-indexed: b.md has no pointer in MEMORY.md",
    ]
    r = run_mem("index", "--team", "--dir", str(tmp_path))
    assert r.returncode == 0 and r.stdout == "- [A](a.md)\n- [Gone](gone.md)\n"
    # The private index does not list team files, and its lint does not ask for them.
    assert run_mem("index", "--check", "--dir", str(tmp_path)).stdout == ""


def test_a_secret_in_a_team_topic_does_not_reach_the_team_index(tmp_path, run_mem):
    write_memory(tmp_path, "team/creds.md", name="creds", description="ghp_" + "x1" * 18, type="reference")
    r = run_mem("index", "--rebuild", "--team", "--dir", str(tmp_path))
    assert r.returncode == 4 and "secret" in r.stderr
    assert not (tmp_path / "team/MEMORY.md").exists()
