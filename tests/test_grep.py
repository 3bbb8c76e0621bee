"""mem grep over memories: grep's options, output and exit codes, run as the installed `mem`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_memory
from mem.core import grep as core
from mem.core.grep import search
from mem.core.errors import UsageError


@pytest.fixture
def mems(memdir: Path) -> Path:
    write_memory(memdir, "user_role.md", name="user-role", description="backend engineer", type="user",
                 body="Backend engineer, Go and Postgres.\nNew to React.\n")
    write_memory(memdir, "feedback_testing.md", name="testing", description="real Postgres in tests", type="feedback",
                 body="Integration tests hit a real Postgres.\n\n**Why:** mocks hid a broken migration.\n"
                      "**How to apply:** use the pg fixture.\n")
    write_memory(memdir, "topics/project_freeze.md", name="freeze", description="merge freeze", type="project",
                 body="No merges to main until the release cut.\n", mtime=time.time() - 30 * 86400)
    (memdir / "MEMORY.md").write_text(
        "- [Role](user_role.md) — backend engineer\n- [Testing](feedback_testing.md) — real Postgres\n", encoding="utf-8")
    return memdir


# --- the command -------------------------------------------------------------------------------


def test_searches_the_memory_dir_like_grep_r(run_mem, mems):
    r = run_mem("grep", "-n", "Postgres")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "MEMORY.md:2:- [Testing](feedback_testing.md) — real Postgres",
        "feedback_testing.md:3:description: real Postgres in tests",
        "feedback_testing.md:7:Integration tests hit a real Postgres.",
        "user_role.md:7:Backend engineer, Go and Postgres.",
    ]
    assert r.stderr == ""


def test_no_match_exits_1_with_no_output(run_mem, mems):
    r = run_mem("grep", "kubernetes")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "")


def test_bad_regex_is_a_usage_error(run_mem, mems):
    r = run_mem("grep", "(unclosed")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "bad pattern" in r.stderr


def test_missing_pattern_is_a_usage_error(run_mem, mems):
    r = run_mem("grep")
    assert r.returncode == 2 and "PATTERN" in r.stderr


def test_fixed_ignore_case_word_and_line(run_mem, mems):
    assert run_mem("grep", "-F", "-h", "[Role]").stdout == "- [Role](user_role.md) — backend engineer\n"
    assert run_mem("grep", "-i", "-h", "-c", "postgres", "--type", "user").stdout == "1\n"
    # -w: "Go" as a word, not inside "Go and" ... "Going"
    assert run_mem("grep", "-w", "-h", "Go").stdout == "Backend engineer, Go and Postgres.\n"
    assert run_mem("grep", "-w", "-h", "Postgre").returncode == 1
    assert run_mem("grep", "-x", "-h", "New to React.").stdout == "New to React.\n"
    assert run_mem("grep", "-x", "React").returncode == 1


def test_invert_count_and_lists(run_mem, mems):
    r = run_mem("grep", "-c", "Postgres")
    assert r.stdout.splitlines() == ["MEMORY.md:1", "feedback_testing.md:2", "topics/project_freeze.md:0", "user_role.md:1"]
    assert run_mem("grep", "-l", "Postgres").stdout.splitlines() == ["MEMORY.md", "feedback_testing.md", "user_role.md"]
    r = run_mem("grep", "-L", "Postgres")
    assert (r.returncode, r.stdout) == (0, "topics/project_freeze.md\n")  # grep 3.8: 0 when a line was selected
    inverted = run_mem("grep", "-v", "-h", "-c", ".", "user_role.md", "--dir", str(mems), env={"MEM_DIR": ""}, cwd=str(mems))
    assert inverted.stdout == "1\n"  # the blank line after the frontmatter


def test_context_lines_and_group_separators(run_mem, mems):
    r = run_mem("grep", "-n", "-A1", "Why", "feedback_testing.md", cwd=str(mems))
    assert r.stdout == "9:**Why:** mocks hid a broken migration.\n10-**How to apply:** use the pg fixture.\n"
    r = run_mem("grep", "-n", "-C1", "-e", "^name:", "-e", "pg fixture", "feedback_testing.md", cwd=str(mems))
    assert r.stdout.splitlines() == [
        "1----", "2:name: testing", "3-description: real Postgres in tests",
        "--",
        "9-**Why:** mocks hid a broken migration.", "10:**How to apply:** use the pg fixture.",
    ]


def test_max_count_only_matching_and_quiet(run_mem, mems):
    assert run_mem("grep", "-m1", "-h", "Postgres", "feedback_testing.md", cwd=str(mems)).stdout == \
        "description: real Postgres in tests\n"
    assert run_mem("grep", "-o", "-h", "-i", "post[a-z]+", "user_role.md", cwd=str(mems)).stdout == "Postgres\n"
    r = run_mem("grep", "-q", "Postgres")
    assert (r.returncode, r.stdout) == (0, "")


def test_filename_prefix_follows_grep(run_mem, mems):
    one = run_mem("grep", "React", "user_role.md", cwd=str(mems))
    assert one.stdout == "New to React.\n"  # a single file operand: no name
    assert run_mem("grep", "-H", "React", "user_role.md", cwd=str(mems)).stdout == "user_role.md:New to React.\n"
    assert run_mem("grep", "React", ".", cwd=str(mems)).stdout == "./user_role.md:New to React.\n"
    assert run_mem("grep", "-h", "React").stdout == "New to React.\n"


def test_type_and_since_filters(run_mem, mems):
    assert run_mem("grep", "-l", "main", "--type", "project").stdout == "topics/project_freeze.md\n"
    assert run_mem("grep", "-l", "main", "--type", "feedback").returncode == 1
    assert run_mem("grep", "-l", "main", "--since", "7d").returncode == 1
    assert run_mem("grep", "-l", "main", "--since", "2000-01-01").stdout == "topics/project_freeze.md\n"
    bad = run_mem("grep", "x", "--since", "last tuesday")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_color_always_and_no_color_by_default(run_mem, mems):
    plain = run_mem("grep", "-n", "React")
    assert "\x1b[" not in plain.stdout
    colored = run_mem("grep", "-n", "--color=always", "React")
    assert colored.stdout == (
        "\x1b[35m\x1b[Kuser_role.md\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K"
        "\x1b[32m\x1b[K8\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K"
        "New to \x1b[01;31m\x1b[KReact\x1b[m\x1b[K.\n"
    )


def test_missing_operand_exits_2_even_with_matches(run_mem, mems):
    r = run_mem("grep", "React", "user_role.md", "nope.md", cwd=str(mems))
    assert r.returncode == 2
    assert r.stdout == "user_role.md:New to React.\n"
    assert "nope.md" in r.stderr and "No such file" in r.stderr
    assert run_mem("grep", "-s", "React", "nope.md", cwd=str(mems)).stderr == ""


def test_no_memory_dir_exits_1(run_mem, tmp_path):
    # A project without memories yet; a missing --dir is a usage error (exit 2).
    project = tmp_path / "project"
    project.mkdir()
    env = {"MEM_DIR": "", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    r = run_mem("grep", "x", env=env, cwd=str(project))
    assert r.returncode == 1 and "no memory directory" in r.stderr
    r = run_mem("grep", "x", "--dir", str(tmp_path / "absent"))
    assert r.returncode == 2 and r.stderr.startswith("mem: error: memory directory ")


def test_symlink_loops_do_not_hang_or_crash(run_mem, mems):
    os.symlink(".", mems / "loop")  # a directory link to itself
    os.symlink("self.md", mems / "self.md")  # a file link to itself
    os.symlink(str(mems / "user_role.md"), mems / "alias.md")  # a file link: read
    r = run_mem("grep", "-l", "React")
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["alias.md", "user_role.md"]
    assert "self.md" in r.stderr  # reported, not fatal
    assert run_mem("grep", "-s", "-l", "React").stderr == ""


def test_binary_memory_file_is_reported_not_printed(run_mem, memdir):
    (memdir / "blob.md").write_bytes(b"needle\x00\x01\x02\n")
    r = run_mem("grep", "needle")
    assert r.returncode == 0 and r.stdout == ""
    assert "blob.md: binary file matches" in r.stderr
    assert run_mem("grep", "-a", "-c", "needle").stdout == "blob.md:1\n"


def test_non_utf8_memory_is_searched(run_mem, memdir):
    (memdir / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    r = run_mem("grep", "-h", "au lait")
    assert r.returncode == 0 and r.stdout == "caf\ufffd au lait\n"


def test_pattern_with_newline_matches_across_lines(run_mem, mems):
    r = run_mem("grep", "-n", "-h", "-F", "Postgres.\nNew to", "user_role.md", cwd=str(mems))
    assert r.stdout == "7:Backend engineer, Go and Postgres.\n8:New to React.\n"


def test_stdin_operand(run_mem, memdir):
    r = run_mem("grep", "-n", "two", "-", input="one\ntwo\n")
    assert r.stdout == "2:two\n"


def test_json_is_ripgrep_wire_format(run_mem, mems):
    r = run_mem("grep", "--json", "-A1", "Backend", "user_role.md", cwd=str(mems))
    assert r.returncode == 0
    msgs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [m["type"] for m in msgs] == ["begin", "match", "context", "end", "summary"]
    begin, match, context, end, summary = msgs
    assert begin == {"type": "begin", "data": {"path": {"text": "user_role.md"}}}
    text = (mems / "user_role.md").read_text(encoding="utf-8")
    offset = text.index("Backend")
    assert match["data"] == {
        "path": {"text": "user_role.md"},
        "lines": {"text": "Backend engineer, Go and Postgres.\n"},
        "line_number": 7,
        "absolute_offset": offset,
        "submatches": [{"match": {"text": "Backend"}, "start": 0, "end": 7}],
    }
    assert context["data"]["lines"] == {"text": "New to React.\n"} and context["data"]["submatches"] == []
    assert end["data"]["binary_offset"] is None
    stats = end["data"]["stats"]
    assert {k: stats[k] for k in ("searches", "searches_with_match", "matched_lines", "matches")} == \
        {"searches": 1, "searches_with_match": 1, "matched_lines": 1, "matches": 1}
    assert stats["bytes_searched"] == len(text.encode())
    assert stats["bytes_printed"] == sum(len(line.encode()) + 1 for line in r.stdout.splitlines()[:3])
    assert set(stats["elapsed"]) == {"secs", "nanos", "human"}
    assert set(summary["data"]) == {"elapsed_total", "stats"}


def test_json_submatch_offsets_are_utf8_bytes(run_mem, memdir):
    (memdir / "cjk.md").write_text("東京で deploy する\n", encoding="utf-8")
    r = run_mem("grep", "--json", "deploy")
    match = next(json.loads(line) for line in r.stdout.splitlines() if '"match"' in line)
    sub = match["data"]["submatches"][0]
    assert (sub["start"], sub["end"]) == (len("東京で ".encode()), len("東京で deploy".encode()))
    assert match["data"]["path"]["text"] == str(memdir / "cjk.md")


def test_json_with_nothing_found_still_summarises(run_mem, mems):
    r = run_mem("grep", "--json", "zzz")
    assert r.returncode == 1
    assert [json.loads(line)["type"] for line in r.stdout.splitlines()] == ["summary"]


@pytest.mark.parametrize("args", [["--json", "-c"], ["-c", "-l"], ["--type", "user", "--transcripts"], ["--role", "user"],
                                  ["-F", "-E"], ["-m", "x"], ["-A", "-1"]])
def test_option_clashes_are_usage_errors(run_mem, mems, args):
    r = run_mem("grep", *args, "x")
    assert r.returncode == 2, (args, r.stderr)


def test_all_projects_searches_every_memory_dir(run_mem, isolated_env, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    projects = isolated_env / ".claude" / "projects"
    write_memory(projects / "-a" / "memory", "x.md", name="x", description="d", body="shared token alpha\n")
    write_memory(projects / "-b" / "memory", "y.md", name="y", description="d", body="alpha again\n")
    (projects / "-b" / "s.jsonl").write_text('{"type":"user","uuid":"u","message":{"role":"user","content":"alpha"}}\n')
    r = run_mem("grep", "-l", "alpha", "--all-projects", cwd=str(isolated_env))
    assert r.stdout.splitlines() == ["-a/memory/x.md", "-b/memory/y.md"]
    r = run_mem("grep", "-l", "alpha", "--all-projects", "--transcripts", cwd=str(isolated_env))
    assert r.stdout.splitlines() == ["-b/s.jsonl"]


def test_help_is_not_h(run_mem, mems):
    assert "Usage: mem grep" in run_mem("grep", "--help").stdout
    assert run_mem("grep", "-h", "React").returncode == 0


# --- the core ----------------------------------------------------------------------------------


def test_parse_since():
    now = 1_000_000.0
    assert core.parse_since("7d", now) == now - 7 * 86400
    assert core.parse_since("24h", now) == now - 86400
    assert core.parse_since("30m", now) == now - 1800
    assert core.parse_since("2w", now) == now - 14 * 86400
    assert core.parse_since("2026-03-01T00:00:00Z") == 1772323200.0
    assert core.parse_since("2026-03-01") == time.mktime((2026, 3, 1, 0, 0, 0, 0, 0, -1))
    with pytest.raises(UsageError):
        core.parse_since("soon")


def test_context_groups_respect_max_count():
    picked = [None, [(0, 1)], None, [(0, 1)], None, None, None, [(0, 1)]]

    def make(i, spans, selected):
        return core.Line(i + 1, str(i), "\n", 0, spans or [], selected)

    groups, count, _ = search._with_context(picked, make, 1, 1, None)
    assert [[(line.number, line.selected) for line in g] for g in groups] == [
        [(1, False), (2, True), (3, False), (4, True), (5, False)],
        [(7, False), (8, True)],
    ]
    # Adjacent context joins the groups, as grep prints no "--" between touching lines.
    groups, _, _ = search._with_context(picked, make, 2, 1, None)
    assert len(groups) == 1
    groups, count, _ = search._with_context(picked, make, 0, 2, 1)
    assert count == 1
    # After the budget, a selected line in the trailing context shows as context.
    assert [[(line.number, line.selected) for line in g] for g in groups] == [[(2, True), (3, False), (4, False)]]


def test_multiline_spans_cover_each_line():
    m = core.Matcher(["b\nc"], fixed=True)
    spans = m.line_spans(["ab", "cd", "e"])
    assert spans == [[(1, 2)], [(0, 1)], None]
    assert core.Matcher(["b\nc"], fixed=True, invert=True).line_spans(["ab", "cd", "e"]) == [None, None, []]


_CHARS = st.sampled_from(list("ab _-\n\t\"\\") + ["é", "東", "K", "ſ", "\r"])


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=_CHARS, max_size=40), pattern=st.text(alphabet=_CHARS.filter(lambda c: c != "\n"), min_size=1, max_size=4),
       extra=st.lists(st.text(alphabet=_CHARS.filter(lambda c: c != "\n"), min_size=1, max_size=3), max_size=2),
       ignore_case=st.booleans(), word=st.booleans(), whole_line=st.booleans())
def test_whole_text_search_equals_line_by_line(text, pattern, extra, ignore_case, word, whole_line):
    m = core.Matcher([pattern, *extra], fixed=True, ignore_case=ignore_case, word=word, whole_line=whole_line)
    assert m._whole is not None
    lines = text.split("\n")
    per_line = []
    for line in lines:
        found, spans = m._spans(line)
        per_line.append(spans if found else None)
    assert m.line_spans(lines) == per_line
