"""mem context: the instruction files and memory index an agent loads, as Claude Code loads them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, git
from mem.core import context as cx
from mem.core.memdir.store import MemoryDir

TREE = FIXTURES / "context" / "tree"
GOLDEN = FIXTURES / "context"
BIG_LINES = 800  # 800 lines of 53 characters: over the 40,000 limit


def _big_rule() -> str:
    return "".join(f"Generated rule {i:05d}: keep the generated file small.\n" for i in range(BIG_LINES))


@pytest.fixture(autouse=True)
def no_managed_file(monkeypatch):
    """The machine's own /etc/claude-code/CLAUDE.md must not leak into the tests."""
    monkeypatch.setenv("MEM_MANAGED_CLAUDE_MD", "")


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """The fixture tree in a tmp dir, with HOME, the config home, managed file and memory dir pointing into it."""
    root = (tmp_path / "t").resolve()
    shutil.copytree(TREE, root)
    (root / "work/repo/.claude/rules/zz-generated.md").write_text(_big_rule(), encoding="utf-8")
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "home/.claude"))
    monkeypatch.setenv("MEM_MANAGED_CLAUDE_MD", str(root / "managed/CLAUDE.md"))
    monkeypatch.setenv("MEM_DIR", str(root / "memory"))
    return root


def _golden(name: str, text: str, root: Path) -> None:
    got = text.replace(str(root), "$ROOT")
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):  # regenerate with UPDATE_GOLDEN=1
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


# --- the golden tree, through the real executable ---------------------------------------------------


def test_golden_text(tree, run_mem):
    r = run_mem("context", cwd=str(tree / "work/repo"))
    assert r.returncode == 0, r.stderr
    _golden("expected.txt", r.stdout, tree)
    warnings = r.stderr.replace(str(tree), "$ROOT").splitlines()
    assert warnings == [
        "mem: warning: $ROOT/work/shared.md: not followed: outside the project directory and not approved "
        "in Claude Code (--external-includes follows it) (included from $ROOT/work/CLAUDE.md)",
        "mem: warning: $ROOT/work/repo/docs/missing.md: not loaded: no such file (included from $ROOT/work/repo/CLAUDE.md)",
        "mem: warning: $ROOT/work/repo/docs/logo.png: not loaded: .png is not a text file extension "
        "(included from $ROOT/work/repo/CLAUDE.md)",
        "mem: warning: $ROOT/work/repo/.claude/rules/zz-generated.md: 42,400 characters, over the 40,000 limit: truncated",
    ]


def test_golden_agents_md(tree, run_mem):
    r = run_mem("context", "--format", "agents-md", cwd=str(tree / "work/repo"))
    assert r.returncode == 0, r.stderr
    _golden("expected-agents.md", r.stdout, tree)
    assert r.stdout.startswith(cx.AGENTS_MD_BEGIN + "\n") and r.stdout.endswith(cx.AGENTS_MD_END + "\n")


def test_load_order_and_kinds(tree):
    ctx = cx.load_context(str(tree / "work/repo"), memory=MemoryDir(str(tree / "memory") + "/"))
    rel = [(f.kind, os.path.relpath(f.path, tree), f.included_from and os.path.relpath(f.included_from, tree))
           for f in ctx.files]
    assert rel == [
        ("managed", "managed/CLAUDE.md", None),
        ("managed", "managed/.claude/rules/security.md", None),
        ("user", "home/.claude/CLAUDE.md", None),
        ("user", "home/notes/style.md", "home/.claude/CLAUDE.md"),  # a user file may include from anywhere
        ("user", "home/.claude/rules/prefs.md", None),
        ("project", "work/CLAUDE.md", None),  # above the repo: the walk goes up to the root
        ("project", "work/repo/CLAUDE.md", None),
        ("project", "work/repo/docs/architecture.md", "work/repo/CLAUDE.md"),  # right after its includer
        ("project", "work/repo/docs/glossary.md", "work/repo/docs/architecture.md"),  # the cycle stops here
        ("project", "work/repo/.claude/CLAUDE.md", None),
        ("project", "work/repo/.claude/rules/frontend/css.md", None),
        ("project", "work/repo/.claude/rules/testing.md", None),
        ("project", "work/repo/.claude/rules/zz-generated.md", None),
        ("local", "work/repo/CLAUDE.local.md", None),
        ("automem", "memory/MEMORY.md", None),
        ("teammem", "memory/team/MEMORY.md", None),
    ]
    assert [f.depth for f in ctx.files][6:9] == [0, 1, 2]
    skipped = {(s.reason, os.path.relpath(s.path, tree)) for s in ctx.skipped}
    assert skipped == {
        ("external", "work/shared.md"),
        ("missing", "work/repo/docs/missing.md"),
        ("not-text", "work/repo/docs/logo.png"),
        ("conditional", "work/repo/.claude/rules/frontend/typescript.md"),
    }


def test_stripping_and_rendering(tree):
    ctx = cx.load_context(str(tree / "work/repo"), memory=MemoryDir(str(tree / "memory")))
    by_path = {os.path.relpath(f.path, tree): f for f in ctx.files}
    user = by_path["home/.claude/CLAUDE.md"]
    assert user.content == "# My defaults\n\nAnswer briefly. House style: @~/notes/style.md"  # frontmatter, comment gone
    assert "maintainers" not in by_path["work/repo/CLAUDE.md"].content
    assert "index kept by mem" not in by_path["memory/MEMORY.md"].content
    team = by_path["memory/team/MEMORY.md"].block()
    assert team == (f"Contents of {tree}/memory/team/MEMORY.md (shared team memory, synced across the organization):"
                    "\n\n<team-memory-content source=\"shared\">\n- [On-call rotation](oncall.md) — who is on call "
                    "and how to page them\n</team-memory-content>")
    text = ctx.render()
    assert text.startswith(cx.MEMORY_INSTRUCTION_PROMPT + "\n\nContents of ")
    assert text.count("\n\nContents of ") == len(ctx.files)


def test_the_40000_character_limit(tree):
    ctx = cx.load_context(str(tree / "work/repo"))
    big = next(f for f in ctx.files if f.path.endswith("zz-generated.md"))
    assert big.truncated and big.chars == len(_big_rule()) == 42_400 and big.size == 42_400
    body, warning = big.content.rsplit("\n\n", 1)
    assert len(body) <= cx.MAX_MEMORY_CHARACTER_COUNT and body.endswith("keep the generated file small.")
    assert warning == "> WARNING: zz-generated.md is 42,400 characters (limit: 40,000). Only the first part was loaded."
    assert all(not f.truncated for f in ctx.files if f is not big)


def test_memory_index_is_as_mem_index_prints_it(tree, run_mem):
    index = run_mem("index", cwd=str(tree)).stdout.rstrip("\n")
    ctx = cx.load_context(str(tree / "work/repo"), memory=MemoryDir(str(tree / "memory")))
    assert next(f for f in ctx.files if f.kind == "automem").content == index


def test_json_lists_every_file(tree, run_mem):
    r = run_mem("context", "--json", cwd=str(tree / "work/repo"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["cwd"] == str(tree / "work/repo")
    assert data["memory_dir"] == str(tree / "memory") + "/"
    first = data["files"][0]
    assert set(first) == {"path", "kind", "description", "size", "chars", "truncated", "included_from", "depth", "content"}
    assert [f["kind"] for f in data["files"]].count("project") == 8
    included = [f for f in data["files"] if f["included_from"]]
    assert [os.path.basename(f["path"]) for f in included] == ["style.md", "architecture.md", "glossary.md"]
    assert {s["reason"] for s in data["skipped"]} == {"external", "missing", "not-text", "conditional"}
    assert data["chars"] == sum(len(f["content"]) for f in data["files"])
    lines = run_mem("context", "--jsonl", cwd=str(tree / "work/repo")).stdout.splitlines()
    assert [json.loads(x)["path"] for x in lines] == [f["path"] for f in data["files"]]


def test_external_includes_flag_and_approval(tree, run_mem):
    r = run_mem("context", "--external-includes", "--json", cwd=str(tree / "work/repo"))
    assert str(tree / "work/shared.md") in [f["path"] for f in json.loads(r.stdout)["files"]]
    assert "shared.md" not in r.stderr
    # Approved in Claude Code's global config for this project: followed without the flag.
    config = {"projects": {str(tree / "work/repo"): {"hasClaudeMdExternalIncludesApproved": True}}}
    (tree / "home/.claude/.claude.json").write_text(json.dumps(config))
    ctx = cx.load_context(str(tree / "work/repo"))
    assert str(tree / "work/shared.md") in [f.path for f in ctx.files]


def test_project_and_local_files_from_a_subdirectory(tree):
    """From work/repo/src, the repo's own files are above the cwd, so their includes are external."""
    ctx = cx.load_context(str(tree / "work/repo/src"))
    paths = [os.path.relpath(f.path, tree) for f in ctx.files if f.kind in ("project", "local")]
    assert paths[-2:] == ["work/repo/CLAUDE.local.md", "work/repo/src/CLAUDE.md"]
    assert "work/repo/docs/architecture.md" not in paths
    assert ("external", str(tree / "work/repo/docs/architecture.md")) in {(s.reason, s.path) for s in ctx.skipped}


def test_no_memory_and_auto_memory_off(tree, run_mem):
    r = run_mem("context", "--no-memory", "--json", cwd=str(tree / "work/repo"))
    assert {f["kind"] for f in json.loads(r.stdout)["files"]} == {"managed", "user", "project", "local"}
    # Claude Code's own directory (MEM_DIR names one of the user's own, which Claude's switch does not govern)
    r = run_mem("context", "--json", cwd=str(tree / "work/repo"), env={"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "MEM_DIR": ""})
    assert "automem" not in {f["kind"] for f in json.loads(r.stdout)["files"]}
    assert "auto memory is off (CLAUDE_CODE_DISABLE_AUTO_MEMORY=1)" in r.stderr


def test_nothing_to_load_exits_1(tmp_path, run_mem, monkeypatch):
    monkeypatch.setenv("MEM_MANAGED_CLAUDE_MD", "")
    d = tmp_path / "empty"
    d.mkdir()
    r = run_mem("context", "--dir", str(tmp_path / "no-memory"), cwd=str(d))
    assert (r.returncode, r.stdout) == (1, "")
    assert "no instruction files or memory index" in r.stderr


def test_agents_md_does_not_go_with_json(tree, run_mem):
    r = run_mem("context", "--format", "agents-md", "--json", cwd=str(tree / "work/repo"))
    assert r.returncode == 2 and "agents-md" in r.stderr


def test_project_option_selects_the_directory(tree, run_mem):
    r = run_mem("context", "--project", str(tree / "work/repo"), "--json", cwd=str(tree))
    assert json.loads(r.stdout)["cwd"] == str(tree / "work/repo")


# --- includes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("See @a.md", ["/b/a.md"]),
    ("@./a.md @~/x.md @/abs/y.md @../up.md", ["/b/a.md", "/h/x.md", "/abs/y.md", "/up.md"]),
    ("mail me: me@example.com, (@paren.md)", []),
    ("@a.md#section and @a.md again", ["/b/a.md"]),
    ("@my\\ notes.md", ["/b/my notes.md"]),
    ("`@span.md` ``@two `x` spans.md``", []),
    ("```\n@fenced.md\n```\n~~~~\n@tilde.md\n~~~~\n@after.md", ["/b/after.md"]),
    ("para\n\n    @indented.md\n\ntext", []),
    ("para\n    @continuation.md", ["/b/continuation.md"]),
    ("- item\n\n  @in-list.md\n\n      @list-code.md", ["/b/in-list.md"]),
    ("<!-- @comment.md --> @residue.md", ["/b/residue.md"]),
    ("<!--\n@multi.md\n-->\n@next.md", ["/b/next.md"]),
    ("<!-- never closed\n@swallowed.md", []),
    ("<div>\n@html.md\n</div>\n\n@p.md", ["/b/p.md"]),
    ("> quoted @q.md\n> ```\n> @q-code.md\n> ```", ["/b/q.md"]),
    ("# Heading @h.md\n**@bold.md** [see @link.md](http://x/@not.md)", ["/b/h.md", "/b/bold.md", "/b/link.md"]),
    ("\\@escaped.md @@double @#hash @ space @/", []),
])
def test_include_targets(text, expected):
    assert cx.include_targets(text, "/b", "/h") == expected


def _chain(root: Path, n: int) -> None:
    (root / "CLAUDE.md").write_text("start @f1.md\n")
    for i in range(1, n + 1):
        (root / f"f{i}.md").write_text(f"level {i} @f{i + 1}.md\n")


def test_include_depth_stops_where_claude_stops(tmp_path):
    _chain(tmp_path, 7)
    ctx = cx.load_context(str(tmp_path))
    assert [os.path.basename(f.path) for f in ctx.files] == ["CLAUDE.md", "f1.md", "f2.md", "f3.md", "f4.md"]
    assert [(s.reason, os.path.basename(s.path)) for s in ctx.skipped] == [("depth", "f5.md")]


def test_each_file_once_and_symlinks(tmp_path):
    # Like Claude Code, a path is checked as written: a link seen first also marks its target.
    (tmp_path / "CLAUDE.md").write_text("@link.md @a.md @link.md\n")
    (tmp_path / "a.md").write_text("A\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/CLAUDE.md").write_text("@../a.md\n")
    ctx = cx.load_context(str(tmp_path))
    assert [os.path.basename(f.path) for f in ctx.files] == ["CLAUDE.md", "link.md", "CLAUDE.md"]


def test_empty_files_and_their_includes_are_dropped(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("---\npaths: x\n---\n<!-- only a note @a.md -->\n  \n")
    (tmp_path / "a.md").write_text("A\n")
    assert cx.load_context(str(tmp_path)).files == []


def test_unreadable_include_is_reported(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    (tmp_path / "CLAUDE.md").write_text("@secret.md\n")
    (tmp_path / "secret.md").write_text("x\n")
    (tmp_path / "secret.md").chmod(0)
    ctx = cx.load_context(str(tmp_path))
    assert [s.reason for s in ctx.skipped] == ["unreadable"]


def test_rules_conditional_and_nested(tmp_path):
    rules = tmp_path / ".claude/rules"
    (rules / "sub").mkdir(parents=True)
    (rules / "b.md").write_text("B\n")
    (rules / "a.md").write_text("---\npaths:\n  - \"**\"\n---\nall files: unconditional\n")
    (rules / "c.md").write_text("---\npaths: src/**\n---\nconditional, but what it includes loads: @inc.md\n")
    (rules / "inc.md.txt").write_text("not a rule: only *.md files are\n")
    (rules / "inc.md").write_text("included\n")
    (rules / "sub/d.md").write_text("D\n")
    ctx = cx.load_context(str(tmp_path))
    assert [os.path.relpath(f.path, rules) for f in ctx.files] == ["a.md", "b.md", "inc.md", "sub/d.md"]
    assert ctx.files[2].included_from == str(rules / "c.md")


def test_claude_md_excludes(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("project\n")
    (repo / "CLAUDE.local.md").write_text("local\n")
    (repo / ".claude/settings.local.json").write_text(json.dumps({"claudeMdExcludes": ["**/CLAUDE.local.md"]}))
    ctx = cx.load_context(str(repo))
    assert [os.path.basename(f.path) for f in ctx.files] == ["CLAUDE.md"]
    assert [s.reason for s in ctx.skipped] == ["excluded"]


def test_nested_worktree_skips_the_main_checkouts_files(tmp_path):
    main = tmp_path / "main"
    main.mkdir()
    git("init", "-q", cwd=main)
    (main / "CLAUDE.md").write_text("main checkout\n")
    (main / "CLAUDE.local.md").write_text("main local\n")
    git("add", "CLAUDE.md", cwd=main)
    git("commit", "-qm", "x", cwd=main)
    git("worktree", "add", "-q", ".claude/worktrees/w", cwd=main)
    wt = (main / ".claude/worktrees/w").resolve()
    ctx = cx.load_context(str(wt))
    got = [os.path.relpath(f.path, tmp_path.resolve()) for f in ctx.files]
    assert got == ["main/CLAUDE.local.md", "main/.claude/worktrees/w/CLAUDE.md"]


def test_crlf_and_bom_survive(tmp_path):
    (tmp_path / "CLAUDE.md").write_bytes("\ufeffLine one\r\nLine two @a.md\r\n".encode())
    (tmp_path / "a.md").write_text("A\n")
    ctx = cx.load_context(str(tmp_path))
    assert ctx.files[0].content == "Line one\r\nLine two @a.md"
    assert len(ctx.files) == 2


# --- for other commands: the bounded rendering ----------------------------------------------------


def test_render_for_prompt_is_bounded_and_keeps_the_nearest_files(tree):
    ctx = cx.load_context(str(tree / "work/repo"), memory=MemoryDir(str(tree / "memory")))
    full = cx.render_for_prompt(ctx, 10**6)
    assert "MEMORY.md" not in full and cx.MEMORY_INSTRUCTION_PROMPT not in full
    assert full.startswith(f"Contents of {tree}/managed/CLAUDE.md (")
    small = cx.render_for_prompt(ctx, 2_000)
    assert len(small) <= 2_000
    assert "My sandbox runs on http://localhost:3000." in small  # the local file: loaded last, kept first
    assert "[… cut: " in small and "left out for space" in small
    assert cx.render_for_prompt(ctx, 0) == ""
    assert cx.render_for_prompt(cx.Context("/x", None), 1000) == ""
    with_memory = cx.render_for_prompt(ctx, 10**6, kinds=cx.KINDS)
    assert with_memory.endswith("</team-memory-content>")


def test_context_does_not_load_the_sdk(tree):
    import subprocess
    import sys

    code = ("import sys; from mem.core import context as cx; cx.load_context(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx', 'click')))")
    r = subprocess.run([sys.executable, "-c", code, str(tree / "work/repo")], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_odd_include_targets_never_raise(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("@dir @a\x00b.md @" + "x" * 300 + ".md\n")
    (tmp_path / "dir").mkdir()
    ctx = cx.load_context(str(tmp_path))
    assert [f.path for f in ctx.files] == [str(tmp_path / "CLAUDE.md")]
    assert [(s.reason, s.message) for s in ctx.skipped] == [
        ("unreadable", "not loaded: a directory"), ("missing", "not loaded: no such file"),
        ("unreadable", "not loaded: File name too long")]


def test_agent_memory_is_not_part_of_the_context(tree, run_mem):
    r = run_mem("context", "--agent", "reviewer", "--scope", "user", "--json", cwd=str(tree / "work/repo"),
                env={"MEM_DIR": ""})
    assert "automem" not in {f["kind"] for f in json.loads(r.stdout)["files"]}
    assert "agent's own prompt" in r.stderr


@pytest.mark.parametrize("text, expected", [
    ("<SCRIPT>\n@in-script.md\n</Script>\n@after.md", ["/b/after.md"]),
    ("text\n10. @not-a-list-but-text.md", ["/b/not-a-list-but-text.md"]),
    ("text\n<!-- note --> @beside.md", ["/b/beside.md"]),
    ("<?php\n@x.md\n?>\n@y.md", ["/b/y.md"]),
])
def test_include_targets_html_and_lists(text, expected):
    assert cx.include_targets(text, "/b", "/h") == expected


def test_render_for_prompt_never_exceeds_its_budget(tree):
    ctx = cx.load_context(str(tree / "work/repo"), memory=MemoryDir(str(tree / "memory")))
    full = cx.render_for_prompt(ctx, 10**6)
    for budget in [*range(1, 400, 7), *range(400, len(full) + 300, 97)]:
        text = cx.render_for_prompt(ctx, budget)
        assert len(text) <= budget, budget
        if budget >= len(full):
            assert text == full
