"""mem.core.paths and the directory rules of mem.clients (resolve, Claude Code's and qwen-code's modules): memory-dir resolution, checked against the clients' rules and recorded fixtures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem.clients import Resolution, claude, memory_on, qwen, resolve
from mem.core import paths
from mem.core.errors import UsageError
from mem.core.paths import (
    base36,
    find_canonical_git_root,
    find_git_root,
    find_project_dir,
    len16,
    project_root,
    resolve_canonical_root,
    sanitize_path,
    state_key,
    string_hash,
    validate_memory_path,
)

FIXTURES = Path(__file__).parent / "fixtures" / "slugs"
SEP = os.sep


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


CLAUDE_ROWS = rows("10-memory-dir-slugs.jsonl")
QWEN_ROWS = rows("06-memory-dir-slugs.jsonl")
# The recorded runs made /home/dev/{cc,qc}-run/wt with `git worktree add` from .../repo
# (reference/real-clients.md): its canonical git root is the main repo, not its own toplevel.
RECORDED_WORKTREES = {"/home/dev/cc-run/wt": "/home/dev/cc-run/repo", "/home/dev/qc-run/wt": "/home/dev/qc-run/repo"}


# ---------------------------------------------------------------------------------------------
# helpers: real git repos, isolated from the machine's git config


@pytest.fixture(scope="session")
def git_env(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("githome")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
        "[advice]\n\tdetachedHead = false\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1")
    return env


@pytest.fixture
def git(git_env):
    def run(*args: str, cwd: Path | str) -> str:
        out = subprocess.run(["git", *args], cwd=cwd, env=git_env, check=True, capture_output=True, text=True)
        return out.stdout.strip()

    return run


@pytest.fixture
def make_repo(git):
    def make(path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        git("init", "-q", cwd=path)
        git("commit", "-q", "--allow-empty", "-m", "init", cwd=path)
        return path

    return make


@pytest.fixture
def tmp(tmp_path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.fixture
def home(tmp) -> Path:
    h = tmp / "home"
    h.mkdir()
    return h


@pytest.fixture
def env(home, tmp) -> dict:
    return {"HOME": str(home), "MEM_MANAGED_SETTINGS": str(tmp / "managed-settings.json")}


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def claude_slug_dir(home: Path, key: str | Path) -> str:
    return f"{home}/.claude/projects/{sanitize_path(str(key))}"


# ---------------------------------------------------------------------------------------------
# sanitizePath


@pytest.mark.parametrize(
    "name, expected",
    [
        ("/home/user/myrepo", "-home-user-myrepo"),
        ("/Users/foo/my-project", "-Users-foo-my-project"),
        ("/home/user/my_repo.v2", "-home-user-my-repo-v2"),
        ("C:\\Users\\foo\\proj", "C--Users-foo-proj"),
        ("/tmp/café", "-tmp-caf-"),
        ("/tmp/😀x", "-tmp---x"),
        ("plugin:name:server", "plugin-name-server"),
        ("/home/dev/cc-run/nogit/Ünïcode-dir", "-home-dev-cc-run-nogit--n-code-dir"),
        ("", ""),
    ],
)
def test_sanitize_worked_examples(name, expected):
    assert sanitize_path(name) == expected


def test_sanitize_long_path_uses_the_32_bit_string_hash():
    name = "/home/u/" + "a" * 250
    assert len16(name) == 258
    assert string_hash(name) == 700217947
    assert sanitize_path(name) == ("-home-u-" + "a" * 192) + "-bkw3mj"


def test_sanitize_exactly_200_is_not_hashed():
    name = "/" + "b" * 199
    assert sanitize_path(name) == "-" + "b" * 199
    assert sanitize_path(name + "c") == "-" + "b" * 199 + "-" + base36(abs(string_hash(name + "c")))


def test_sanitize_counts_astral_characters_as_two_units_for_the_cap():
    # 100 emoji = 200 code units = 200 dashes: not hashed; one more unit is.
    assert sanitize_path("😀" * 100) == "-" * 200
    assert sanitize_path("😀" * 100 + "x").startswith("-" * 200 + "-")


def test_len16_and_base36():
    assert len16("") == 0
    assert len16("abc") == 3
    assert len16("😀x") == 3
    assert len16("\udc80") == 1  # a lone surrogate (surrogateescape) is one unit
    assert base36(0) == "0"
    assert base36(35) == "z"
    assert base36(36) == "10"
    assert base36(-36) == "-10"
    assert base36(2**31) == "zik0zk"


def test_string_hash_wraps_signed_32_bit():
    assert string_hash("") == 0
    assert string_hash("a") == 97
    assert string_hash("ab") == 97 * 31 + 98
    # Java's "polygenelubricants".hashCode() is Integer.MIN_VALUE
    assert string_hash("polygenelubricants") == -(2**31)
    # "f5a5a608" hashes to 0, so prefixing copies of it keeps the hash: abs(MIN_VALUE) = 2**31
    long_min = "f5a5a608" * 25 + "polygenelubricants"
    assert string_hash(long_min) == -(2**31)
    assert sanitize_path(long_min) == ("f5a5a608" * 25) + "-zik0zk"


# ---------------------------------------------------------------------------------------------
# The recorded fixtures


@pytest.mark.parametrize("row", CLAUDE_ROWS, ids=lambda r: r["cwd"][-30:])
def test_claude_fixture_rows(row):
    home = "/home/dev/cc-run/home"
    key = RECORDED_WORKTREES.get(row["git_toplevel"], row["git_toplevel"]) or row["cwd"]
    assert claude.keyed_memory_dir(key, {"HOME": home}) == row["memory_dir"]
    assert claude.transcripts_dir(row["cwd"], {"HOME": home}) == row["transcript_project_dir"]
    assert claude.keyed_memory_dir(key, {}, home) == row["memory_dir"]


def test_claude_fixture_long_row_reproduces_the_recorded_hash():
    (long_row,) = [r for r in CLAUDE_ROWS if len(r["cwd"]) > 200]
    slug = sanitize_path(long_row["cwd"])
    assert slug.endswith("-bic8ti")
    assert len(slug) == 200 + len("-bic8ti")
    assert long_row["memory_dir"].endswith(f"/{slug}/memory/")


@pytest.mark.parametrize("row", QWEN_ROWS, ids=lambda r: r["cwd"][-30:])
def test_qwen_fixture_rows(row):
    key = RECORDED_WORKTREES.get(row["git_toplevel"], row["git_toplevel"]) or row["cwd"]
    assert qwen.keyed_memory_dir(key, "/home/dev/qc-run/home") == row["memory_dir"]


def test_qwen_recorded_chats_dirs_are_keyed_by_the_cwd():
    # fixtures/qwen-code/home-layout.txt: sub/dir and wt have their own chats/ folders
    home = "/home/dev/qc-run/home"
    assert qwen.transcripts_dir("/home/dev/qc-run/My Repo_v2.0+x@y/sub/dir", home=home) == (
        f"{home}/.qwen/projects/-home-dev-qc-run-My-Repo-v2-0-x-y-sub-dir/chats"
    )
    assert qwen.transcripts_dir("/home/dev/qc-run/wt", home=home) == f"{home}/.qwen/projects/-home-dev-qc-run-wt/chats"


@pytest.fixture
def recorded_layout(tmp, make_repo, git):
    """The recorded runs' directory layout, rebuilt under tmp with real git."""

    def build(run: str) -> tuple[Path, Path]:
        base = tmp / run
        repo = make_repo(base / "repo")
        spaced = make_repo(base / "My Repo_v2.0+x@y")
        (spaced / "sub" / "dir").mkdir(parents=True)
        (base / "nogit" / "Ünïcode-dir").mkdir(parents=True)
        git("worktree", "add", "-q", "--detach", str(base / "wt"), cwd=repo)
        (base / "home").mkdir()
        return base, base / "home"

    return build


def relocate(recorded: str, tmp: Path) -> str:
    return recorded.replace("-home-dev-", sanitize_path(str(tmp)) + "-").replace("/home/dev/", f"{tmp}/")


@pytest.mark.parametrize("layout, run, recorded", [("claude", "cc-run", CLAUDE_ROWS), ("qwen", "qc-run", QWEN_ROWS)])
def test_fixture_rows_live(recorded_layout, tmp, layout, run, recorded):
    base, home = recorded_layout(run)
    for row in recorded:
        if len(row["cwd"]) > 200:
            continue  # moving it changes its length and hash; covered by the pure test above
        cwd = relocate(row["cwd"], tmp)
        # the rows were recorded from qwen-code 0.15.10, which keyed a worktree's memory by the main repository
        r = resolve(project=cwd, layout=layout, env={"HOME": str(home), "MEM_MANAGED_SETTINGS": "",
                                                     "MEM_QWEN_VERSION": "0.15.10"})
        assert r.memory_dir == relocate(row["memory_dir"], tmp), row["cwd"]
        assert r.git_root == (relocate(row["git_toplevel"], tmp) if row["git_toplevel"] else None)
        if layout == "claude":
            assert r.transcripts_dir == relocate(row["transcript_project_dir"], tmp)
        else:
            assert r.transcripts_dir == f"{home}/.qwen/projects/{sanitize_path(cwd)}/chats"


# ---------------------------------------------------------------------------------------------
# Canonical git root, with real repositories


def test_plain_repo_and_subdirectory(tmp, make_repo, env, home):
    repo = make_repo(tmp / "repo")
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert find_git_root(str(sub)) == str(repo)
    assert find_canonical_git_root(str(sub)) == str(repo)
    r = resolve(project=str(sub), env=env)
    assert r.memory_dir == claude_slug_dir(home, repo) + "/memory/"
    assert r.transcripts_dir == claude_slug_dir(home, sub)
    assert (r.project_root, r.git_root, r.canonical_git_root) == (str(sub), str(repo), str(repo))
    assert r.rule == "default" and r.layout == "claude"


def test_no_git(tmp, env, home):
    d = tmp / "plain"
    d.mkdir()
    assert find_git_root(str(d)) is None
    assert find_canonical_git_root(str(d)) is None
    r = resolve(project=str(d), env=env)
    assert r.memory_dir == claude_slug_dir(home, d) + "/memory/"
    assert r.git_root is None and r.canonical_git_root is None


def test_worktree_shares_the_main_repos_memory(tmp, make_repo, git, env, home):
    repo = make_repo(tmp / "repo")
    wt = tmp / "wt"
    git("worktree", "add", "-q", "--detach", str(wt), cwd=repo)
    assert find_git_root(str(wt)) == str(wt)
    assert resolve_canonical_root(str(wt)) == str(repo)
    r = resolve(project=str(wt / "."), env=env)
    assert r.memory_dir == claude_slug_dir(home, repo) + "/memory/"
    assert r.transcripts_dir == claude_slug_dir(home, wt)
    assert (r.git_root, r.canonical_git_root) == (str(wt), str(repo))


def test_submodule_is_its_own_root(tmp, make_repo, git):
    outer = make_repo(tmp / "outer")
    inner = make_repo(tmp / "inner")
    git("submodule", "add", "-q", str(inner), "sub", cwd=outer)
    sub = outer / "sub"
    assert (sub / ".git").is_file()
    assert find_git_root(str(sub)) == str(sub)
    assert find_canonical_git_root(str(sub)) == str(sub)


def test_worktree_of_a_bare_repo_maps_to_the_bare_dir(tmp, make_repo, git):
    src = make_repo(tmp / "src")
    bare = tmp / "proj.git"
    git("clone", "-q", "--bare", str(src), str(bare), cwd=tmp)
    wt = tmp / "bare-wt"
    git("worktree", "add", "-q", "--detach", str(wt), cwd=bare)
    assert find_canonical_git_root(str(wt)) == str(bare)


def test_forged_git_file_pointing_at_another_worktree_entry(tmp, make_repo, git):
    victim = make_repo(tmp / "victim")
    git("worktree", "add", "-q", "--detach", str(tmp / "real-wt"), cwd=victim)
    entry = victim / ".git" / "worktrees" / "real-wt"
    assert (entry / "commondir").exists()
    forged = tmp / "forged"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {entry}\n")
    # the layout check passes but the backlink names real-wt, not forged
    assert find_canonical_git_root(str(forged)) == str(forged)


def test_forged_commondir_outside_a_worktrees_dir(tmp, make_repo):
    victim = make_repo(tmp / "victim")
    evil = tmp / "evil" / "gitdir"
    evil.mkdir(parents=True)
    (evil / "commondir").write_text(str(victim / ".git"))
    forged = tmp / "forged"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {evil}")
    (evil / "gitdir").write_text(str(forged / ".git"))
    assert find_canonical_git_root(str(forged)) == str(forged)


def test_git_file_oddities_fall_back_to_the_git_root(tmp):
    a = tmp / "a"
    a.mkdir()
    (a / ".git").write_text("not a gitdir line")
    assert find_canonical_git_root(str(a)) == str(a)
    b = tmp / "b"
    b.mkdir()
    (b / ".git").write_text("gitdir: ../nowhere")
    assert find_canonical_git_root(str(b)) == str(b)


def test_relative_gitdir_and_crlf_are_accepted(tmp, make_repo, git):
    repo = make_repo(tmp / "repo")
    wt = tmp / "wt"
    git("worktree", "add", "-q", "--detach", str(wt), cwd=repo)
    (wt / ".git").write_text("gitdir: ../repo/.git/worktrees/wt\r\n")
    assert find_canonical_git_root(str(wt)) == str(repo)


def test_path_with_spaces_and_non_ascii(tmp, make_repo, env, home):
    repo = make_repo(tmp / "My Repo_v2.0+x@y" / "café ☕ 😀")
    r = resolve(project=str(repo), env=env)
    # é, space, ☕, space: one dash each; 😀 is a surrogate pair: two
    slug = sanitize_path(str(tmp)) + "-My-Repo-v2-0-x-y-caf------"
    assert sanitize_path(str(repo)) == slug
    assert r.memory_dir == f"{home}/.claude/projects/{slug}/memory/"


def test_project_root_realpath_nfc_and_fallback(tmp):
    real = tmp / "real"
    real.mkdir()
    link = tmp / "link"
    link.symlink_to(real)
    assert project_root(str(link) + "/") == str(real)
    assert project_root("/no/such/cafe\u0301") == "/no/such/café"
    assert project_root("/no/such//dir/") == "/no/such/dir"


def test_symlinked_project_uses_the_real_path(tmp, make_repo, env, home):
    repo = make_repo(tmp / "repo")
    (tmp / "alias").symlink_to(repo)
    r = resolve(project=str(tmp / "alias"), env=env)
    assert r.project_root == str(repo)
    assert r.memory_dir == claude_slug_dir(home, repo) + "/memory/"


# ---------------------------------------------------------------------------------------------
# Long project paths: the prefix fallback


@pytest.fixture
def long_project(tmp) -> Path:
    p = tmp
    for i in range(12):
        p = p / f"segment_with_long_name_{i:02d}"
    p.mkdir(parents=True)
    assert len(sanitize_path(str(p))) > 200
    return p


def test_long_path_default_is_the_exact_hash(long_project, env, home):
    r = resolve(project=str(long_project), env=env)
    assert r.memory_dir == claude_slug_dir(home, long_project) + "/memory/"
    assert r.transcripts_dir == claude_slug_dir(home, long_project)


def test_long_path_finds_a_dir_written_with_another_hash(long_project, env, home):
    exact = sanitize_path(str(long_project))
    other = exact[:200] + "-otherhash"
    (home / ".claude" / "projects" / other / "memory").mkdir(parents=True)
    r = resolve(project=str(long_project), env=env)
    assert r.memory_dir == f"{home}/.claude/projects/{other}/memory/"
    assert r.transcripts_dir == f"{home}/.claude/projects/{other}"
    # the exact name wins once it exists
    (home / ".claude" / "projects" / exact).mkdir()
    assert resolve(project=str(long_project), env=env).memory_dir == f"{home}/.claude/projects/{exact}/memory/"


def test_find_project_dir(tmp):
    projects = tmp / "projects"
    assert find_project_dir(str(projects), "/x/y") == f"{projects}/-x-y"  # missing: exact anyway
    long_name = "/" + "q" * 300
    sanitized = sanitize_path(long_name)
    assert find_project_dir(str(projects), long_name) == f"{projects}/{sanitized}"
    projects.mkdir()
    (projects / (sanitized[:200] + "-b")).mkdir()
    (projects / (sanitized[:200] + "-a")).mkdir()
    (projects / (sanitized[:200] + "-0file")).write_text("")  # files never match
    assert find_project_dir(str(projects), long_name) == f"{projects}/{sanitized[:200]}-a"
    # short names never use the prefix fallback
    (projects / "-x-y-zzz").mkdir()
    assert find_project_dir(str(projects), "/x/y") == f"{projects}/-x-y"


# ---------------------------------------------------------------------------------------------
# validateMemoryPath


@pytest.mark.parametrize(
    "raw, expand, expected",
    [
        (None, True, None),
        ("", True, None),
        (42, True, None),
        ("~/x", True, "{home}/x/"),
        ("~/x/y/", True, "{home}/x/y/"),
        ("~\\x", True, "{home}/x/"),
        ("~/x", False, None),
        ("~/", True, None),
        ("~/.", True, None),
        ("~/..", True, None),
        ("~/foo/..", True, None),
        ("~", True, None),
        ("~x", True, None),
        ("relative", True, None),
        ("./rel", True, None),
        ("C:", True, None),
        ("C:\\", True, None),
        ("/", True, None),
        ("/a", True, None),
        ("/ab", True, "/ab/"),
        ("/a/b//", True, "/a/b/"),
        ("/a/./b/../c", True, "/a/c/"),
        ("//server/share", True, "/server/share/"),  # Node's normalize collapses the leading '//'
        ("\\\\server\\share", True, None),
        ("/a\0b", True, None),
        ("/tmp/cafe\u0301", True, "/tmp/café/"),
        ("/m\n", True, "/m\n/"),  # a trailing newline is not a separator
    ],
)
def test_validate_memory_path(raw, expand, expected):
    home = "/home/u"
    want = None if expected is None else expected.format(home=home)
    assert validate_memory_path(raw, expand, home) == want


# ---------------------------------------------------------------------------------------------
# Overrides and settings


def test_cowork_override_wins_and_is_not_tilde_expanded(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    write_json(home / ".claude" / "settings.json", {"autoMemoryDirectory": "~/from-settings"})
    r = resolve(project=str(project), env={**env, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/mnt/space/mem//"})
    assert (r.memory_dir, r.rule) == ("/mnt/space/mem/", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE")
    r = resolve(project=str(project), env={**env, "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "~/mem"})
    assert r.memory_dir == f"{home}/from-settings/"
    assert r.rule == f"autoMemoryDirectory (user settings: {home}/.claude/settings.json)"


def test_settings_precedence_policy_flag_local_user(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    policy = tmp / "managed-settings.json"
    flag = write_json(tmp / "flag.json", {"autoMemoryDirectory": "/from/flag"})
    write_json(home / ".claude" / "settings.json", {"autoMemoryDirectory": "~/x"})
    r = resolve(project=str(project), env=env)
    assert (r.memory_dir, r.rule) == (f"{home}/x/", f"autoMemoryDirectory (user settings: {home}/.claude/settings.json)")
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "/from/local"})
    assert resolve(project=str(project), env=env).memory_dir == "/from/local/"
    r = resolve(project=str(project), env=env, settings_file=str(flag))
    assert (r.memory_dir, r.rule) == ("/from/flag/", f"autoMemoryDirectory (flag settings: {flag})")
    write_json(policy, {"autoMemoryDirectory": "/from/policy"})
    r = resolve(project=str(project), env=env, settings_file=str(flag))
    assert (r.memory_dir, r.rule) == ("/from/policy/", f"autoMemoryDirectory (policy settings: {policy})")


def test_project_settings_cannot_redirect_memory(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    write_json(project / ".claude" / "settings.json", {"autoMemoryDirectory": "/home/victim/.ssh"})
    r = resolve(project=str(project), env=env)
    assert r.rule == "default"
    assert r.memory_dir == claude_slug_dir(home, project) + "/memory/"


@pytest.mark.parametrize("bad", ["~/", "relative", "C:", "~", "/", "", "~/..", "//"])
def test_invalid_setting_falls_through_to_the_default(tmp, env, home, bad):
    project = tmp / "p"
    project.mkdir()
    # the first source defining the key decides (`a ?? b`), so a valid user value is not used
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": bad})
    write_json(home / ".claude" / "settings.json", {"autoMemoryDirectory": "/valid/user"})
    r = resolve(project=str(project), env=env)
    assert r.rule == "default"
    assert r.memory_dir == claude_slug_dir(home, project) + "/memory/"


def test_null_or_non_string_setting_is_skipped(tmp, env):
    project = tmp / "p"
    project.mkdir()
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": None})
    write_json(tmp / "home" / ".claude" / "settings.json", {"autoMemoryDirectory": "/valid/user"})
    assert resolve(project=str(project), env=env).memory_dir == "/valid/user/"
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": 7})
    assert resolve(project=str(project), env=env).memory_dir == "/valid/user/"


def test_unreadable_or_invalid_settings_are_absent(tmp, env, home):
    project = tmp / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.local.json").write_text("{not json")
    (tmp / "managed-settings.json").write_text("[1, 2]")
    write_json(home / ".claude" / "settings.json", {"autoMemoryDirectory": "/u/mem"})
    assert resolve(project=str(project), env=env).memory_dir == "/u/mem/"
    s = claude.load_settings(str(project), env=env)
    assert [(x.name, x.data) for x in s.sources][:3] == [("policy", None), ("local", None), ("project", None)]


def test_flag_settings_inline_json_and_errors(tmp, env):
    project = tmp / "p"
    project.mkdir()
    r = resolve(project=str(project), env=env, settings_file='{"autoMemoryDirectory": "/inline"}')
    assert (r.memory_dir, r.rule) == ("/inline/", "autoMemoryDirectory (flag settings: inline JSON)")
    with pytest.raises(UsageError):
        resolve(project=str(project), env=env, settings_file=str(tmp / "missing.json"))
    (tmp / "bad.json").write_text("{")
    with pytest.raises(UsageError):
        resolve(project=str(project), env=env, settings_file=str(tmp / "bad.json"))
    with pytest.raises(UsageError):
        resolve(project=str(project), env=env, settings_file="{oops")


def test_managed_settings_path(monkeypatch):
    assert claude.managed_settings_path({"MEM_MANAGED_SETTINGS": "/x.json"}) == "/x.json"
    assert claude.managed_settings_path({"MEM_MANAGED_SETTINGS": ""}) is None
    monkeypatch.setattr(sys, "platform", "linux")
    assert claude.managed_settings_path({}) == "/etc/claude-code/managed-settings.json"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert claude.managed_settings_path({}) == "/Library/Application Support/ClaudeCode/managed-settings.json"


# ---------------------------------------------------------------------------------------------
# Whether auto memory is on


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({}, (True, "default")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}, (False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=1")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": " TRUE "}, (False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY= TRUE ")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "yes"}, (False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=yes")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "On"}, (False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY=On")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "maybe"}, (True, "default")),
        ({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": ""}, (True, "default")),
        ({"CLAUDE_CODE_SIMPLE": "1"}, (False, "CLAUDE_CODE_SIMPLE=1 (--bare)")),
        ({"CLAUDE_CODE_SIMPLE": "0"}, (True, "default")),
        (
            {"CLAUDE_CODE_REMOTE": "true"},
            (False, "CLAUDE_CODE_REMOTE=true without CLAUDE_CODE_REMOTE_MEMORY_DIR"),
        ),
        (
            {"CLAUDE_CODE_REMOTE": "true", "CLAUDE_CODE_REMOTE_MEMORY_DIR": ""},
            (False, "CLAUDE_CODE_REMOTE=true without CLAUDE_CODE_REMOTE_MEMORY_DIR"),
        ),
        ({"CLAUDE_CODE_REMOTE": "true", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/m"}, (True, "default")),
    ],
)
def test_auto_memory_env_switches(extra, expected):
    assert claude.auto_memory_enabled(extra, None) == expected


@pytest.mark.parametrize("value", ["0", "false", "no", "off", " OFF "])
def test_defined_falsy_disable_forces_on_over_everything(value):
    env = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": value, "CLAUDE_CODE_SIMPLE": "1", "CLAUDE_CODE_REMOTE": "1"}
    assert claude.auto_memory_enabled(env, {"autoMemoryEnabled": False}) == (True, f"CLAUDE_CODE_DISABLE_AUTO_MEMORY={value}")


def test_auto_memory_settings_precedence(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    user = write_json(home / ".claude" / "settings.json", {"autoMemoryEnabled": True})
    assert memory_on(resolve(project=str(project), env=env), env)[1] == f"autoMemoryEnabled=true (user settings: {user})"
    proj = write_json(project / ".claude" / "settings.json", {"autoMemoryEnabled": False})
    r = resolve(project=str(project), env=env)  # a repo may opt out
    assert memory_on(r, env) == (False, f"autoMemoryEnabled=false (project settings: {proj})")
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryEnabled": True})
    assert memory_on(resolve(project=str(project), env=env), env)[0] is True
    flag = write_json(tmp / "flag.json", {"autoMemoryEnabled": False})
    assert memory_on(resolve(project=str(project), env=env, settings_file=str(flag)), env)[0] is False
    write_json(tmp / "managed-settings.json", {"autoMemoryEnabled": True})
    on, why = memory_on(resolve(project=str(project), env=env, settings_file=str(flag)), env)
    assert on is True and why.endswith("(policy settings: " + str(tmp / "managed-settings.json") + ")")
    # env beats settings
    off = {**env, "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
    assert memory_on(resolve(project=str(project), env=off), off)[0] is False


def test_non_boolean_auto_memory_enabled_is_ignored(tmp, env):
    project = tmp / "p"
    write_json(project / ".claude" / "settings.json", {"autoMemoryEnabled": "false"})
    assert claude.auto_memory_enabled(env, claude.load_settings(str(project), env=env)) == (True, "default")


def test_disabled_auto_memory_still_resolves_a_dir(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    simple = {**env, "CLAUDE_CODE_SIMPLE": "1"}
    r = resolve(project=str(project), env=simple)
    assert memory_on(r, simple)[0] is False
    assert r.memory_dir == claude_slug_dir(home, project) + "/memory/"


# ---------------------------------------------------------------------------------------------
# Config home and the remote memory base


def test_config_home_and_bases():
    assert claude.config_home({"HOME": "/h"}) == "/h/.claude"
    assert claude.config_home({}, "/h") == "/h/.claude"
    assert claude.config_home({"CLAUDE_CONFIG_DIR": "/c/cfg/"}) == "/c/cfg/"  # raw, only NFC
    assert claude.config_home({"CLAUDE_CONFIG_DIR": "/c/cafe\u0301"}) == "/c/café"
    assert claude.config_home({"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}) == ""  # `??`: empty is used as is
    assert claude.projects_dir({"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}) == "projects"
    assert claude.projects_dir({"CLAUDE_CONFIG_DIR": "/c/cfg/"}) == "/c/cfg/projects"
    assert claude.memory_base({"HOME": "/h", "CLAUDE_CODE_REMOTE_MEMORY_DIR": ""}) == "/h/.claude"
    assert claude.memory_base({"HOME": "/h", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt//m/"}) == "/mnt//m/"  # raw
    assert claude.projects_dir({"HOME": "/h", "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/m"}) == "/h/.claude/projects"


def test_claude_home_is_its_config_home():
    """The one place (getClaudeConfigHomeDir, 2.1.330: `(CLAUDE_CONFIG_DIR ?? join(homedir(),
    '.claude')).normalize('NFC')`), whoever asks: an empty value is kept, the value is NFC."""
    for env in ({"HOME": "/h"}, {"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}, {"CLAUDE_CONFIG_DIR": "/c/cafe\u0301"}):
        assert claude.home(env) == claude.config_home(env)
    assert claude.home({"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}) == ""
    assert claude.home({"CLAUDE_CONFIG_DIR": "/c/cafe\u0301"}) == "/c/café"


def test_doctor_finds_claude_code_used_under_a_decomposed_config_dir(tmp, env):
    """CLAUDE_CONFIG_DIR spelt decomposed (NFD): Claude Code writes under the NFC spelling, so that is
    where doctor looks for "Claude Code has run here" (it needs mem's hooks then)."""
    from mem.core.doctor import FAIL, check_hooks

    project = tmp / "p"
    project.mkdir()
    (tmp / "café" / "projects").mkdir(parents=True)  # what Claude Code made
    check = check_hooks("claude", str(project), {**env, "CLAUDE_CONFIG_DIR": str(tmp / "cafe\u0301")})
    assert check.state == FAIL and "not installed" in check.detail


def test_claude_config_dir_moves_memory_transcripts_and_user_settings(tmp, env):
    project = tmp / "p"
    project.mkdir()
    cfg = tmp / "cfg"
    write_json(cfg / "settings.json", {"autoMemoryEnabled": False})
    moved = {**env, "CLAUDE_CONFIG_DIR": str(cfg)}
    r = resolve(project=str(project), env=moved)
    assert r.memory_dir == f"{cfg}/projects/{sanitize_path(str(project))}/memory/"
    assert r.transcripts_dir == f"{cfg}/projects/{sanitize_path(str(project))}"
    assert memory_on(r, moved)[0] is False


def test_remote_memory_dir_moves_memory_but_not_transcripts(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    r = resolve(project=str(project), env={**env, "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/remote/"})
    assert r.memory_dir == f"/mnt/remote/projects/{sanitize_path(str(project))}/memory/"
    assert r.transcripts_dir == claude_slug_dir(home, project)


# ---------------------------------------------------------------------------------------------
# Agent memory


def test_agent_memory_scopes(tmp, make_repo, env, home):
    repo = make_repo(tmp / "repo")
    sub = repo / "sub"
    sub.mkdir()
    assert claude.agent_memory_dir("my-plugin:reviewer", "user", str(sub), env) == f"{home}/.claude/agent-memory/my-plugin-reviewer/"
    assert claude.agent_memory_dir("rev", "project", str(sub), env) == f"{sub}/.claude/agent-memory/rev/"
    assert claude.agent_memory_dir("rev", "local", str(sub), env) == f"{sub}/.claude/agent-memory-local/rev/"
    remote = {**env, "CLAUDE_CODE_REMOTE_MEMORY_DIR": "/mnt/r"}
    assert claude.agent_memory_dir("rev", "user", str(sub), remote) == "/mnt/r/agent-memory/rev/"
    assert claude.agent_memory_dir("rev", "project", str(sub), remote) == f"{sub}/.claude/agent-memory/rev/"
    assert claude.agent_memory_dir("a:b:c", "local", str(sub), remote) == (
        f"/mnt/r/projects/{sanitize_path(str(repo))}/agent-memory-local/a-b-c/"
    )


def test_the_scope_option_offers_claude_codes_agent_scopes():
    """--scope's choices repeat claude.AGENT_SCOPES (mem --help does not import the claude module:
    about 6.5 ms more): they must not drift apart."""
    from mem.cli.common import SCOPES

    assert SCOPES == claude.AGENT_SCOPES


def test_agent_memory_through_resolve(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    r = resolve(project=str(project), agent="rev", scope="project", env=env)
    assert (r.memory_dir, r.rule, r.layout) == (f"{project}/.claude/agent-memory/rev/", "agent (project)", "agent")
    assert r.transcripts_dir == claude_slug_dir(home, project)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"agent": "rev"},  # no scope
        {"scope": "user"},  # no agent
        {"agent": "rev", "scope": "team"},
        {"agent": "../evil", "scope": "user"},
        {"agent": "a/b", "scope": "project"},
        {"agent": "..", "scope": "local"},
        {"agent": "", "scope": "user"},
        {"layout": "gemini"},
    ],
)
def test_usage_errors(tmp, env, kwargs):
    with pytest.raises(UsageError):
        resolve(project=str(tmp), env=env, **kwargs)


# ---------------------------------------------------------------------------------------------
# qwen layout and auto detection


@pytest.mark.parametrize("version, keyed_by", [("0.15.10", "repo"), ("0.24.4", "wt"), ("1.0.0", "wt")])
def test_qwen_layout(tmp, make_repo, git, env, home, version, keyed_by):
    """qwen-code 0.15 keyed a linked worktree's memory by the main repository; 0.24 by the worktree."""
    repo = make_repo(tmp / "repo")
    wt = tmp / "wt"
    git("worktree", "add", "-q", "--detach", str(wt), cwd=repo)
    r = resolve(project=str(wt), layout="qwen", env={**env, "MEM_QWEN_VERSION": version})
    assert r.memory_dir == f"{home}/.qwen/projects/{sanitize_path(str(tmp / keyed_by))}/memory"
    assert not r.memory_dir.endswith(SEP)
    assert r.transcripts_dir == f"{home}/.qwen/projects/{sanitize_path(str(wt))}/chats"
    assert (r.rule, r.layout) == ("qwen", "qwen")


def test_auto_detects_qwen_only_when_claudes_default_is_missing(tmp, env, home):
    project = tmp / "p"
    project.mkdir()
    slug = sanitize_path(str(project))
    assert resolve(project=str(project), env=env).layout == "claude"  # neither exists
    (home / ".qwen" / "projects" / slug / "memory").mkdir(parents=True)
    r = resolve(project=str(project), env=env)
    assert (r.memory_dir, r.rule, r.layout) == (f"{home}/.qwen/projects/{slug}/memory", "qwen (detected)", "qwen")
    assert r.transcripts_dir == f"{home}/.qwen/projects/{slug}/chats"
    assert resolve(project=str(project), layout="claude", env=env).layout == "claude"
    # an explicit Claude override is never second-guessed
    write_json(home / ".claude" / "settings.json", {"autoMemoryDirectory": "/elsewhere"})
    assert resolve(project=str(project), env=env).memory_dir == "/elsewhere/"
    (home / ".claude" / "settings.json").unlink()
    (home / ".claude" / "projects" / slug / "memory").mkdir(parents=True)
    r = resolve(project=str(project), env=env)
    assert (r.memory_dir, r.layout) == (f"{home}/.claude/projects/{slug}/memory/", "claude")


# ---------------------------------------------------------------------------------------------
# --dir and MEM_DIR


def test_dir_and_mem_dir_precedence(tmp, env, home, monkeypatch):
    project = tmp / "p"
    project.mkdir()
    monkeypatch.chdir(tmp)
    e = {**env, "MEM_DIR": "~/from-env", "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "/cowork"}
    r = resolve(dir="rel/../mem", project=str(project), env=e, agent="x", scope="user", layout="qwen")
    assert (r.memory_dir, r.rule, r.layout) == (f"{tmp}/mem/", "--dir", "dir")
    assert r.transcripts_dir == claude_slug_dir(home, project)
    r = resolve(project=str(project), env=e, agent="x", scope="user")
    assert (r.memory_dir, r.rule, r.layout) == (f"{home}/from-env/", "MEM_DIR", "dir")
    r = resolve(project=str(project), env={**e, "MEM_DIR": ""})  # empty is unset
    assert r.rule == "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
    assert resolve(dir="/abs/dir/", project=str(project), env=env).memory_dir == "/abs/dir/"
    assert resolve(dir="~", project=str(project), env=env).memory_dir == f"{home}/"
    with pytest.raises(UsageError):
        resolve(dir="", project=str(project), env=env)
    with pytest.raises(UsageError):
        resolve(dir="/a\0b", project=str(project), env=env)


def test_project_defaults_to_cwd(tmp, env, monkeypatch):
    monkeypatch.chdir(tmp)
    assert resolve(env=env).project_root == str(tmp)


def test_home_defaults_to_env_home(tmp, home):
    project = tmp / "p"
    project.mkdir()
    r = resolve(project=str(project), env={"HOME": str(home), "MEM_MANAGED_SETTINGS": ""})
    assert r.memory_dir.startswith(f"{home}/.claude/projects/")


def test_as_dict_is_snake_case_and_complete(tmp, env):
    r = resolve(project=str(tmp), env=env)
    d = r.as_dict()
    assert list(d) == [
        "memory_dir",
        "rule",
        "layout",
        "project_root",
        "git_root",
        "canonical_git_root",
        "transcripts_dir",
    ]
    assert json.loads(json.dumps(d)) == d
    assert Resolution(**d, settings=r.settings) == r


# ---------------------------------------------------------------------------------------------
# State key


def test_state_key(tmp):
    a = tmp / "home" / ".claude" / "projects" / "-home-u-repo" / "memory"
    a.mkdir(parents=True)
    key = state_key(str(a) + "/")
    assert key == paths.state_key(str(a))
    assert re.fullmatch(r"[A-Za-z0-9-]+", key) and len(key) <= 60
    assert key.startswith("home-u-repo-memory-")
    (tmp / "link").symlink_to(a)
    assert state_key(str(tmp / "link")) == key
    assert state_key(str(tmp / "other" / "memory")) != key
    assert re.fullmatch(r"[0-9a-f]{12}", state_key("/"))
    assert re.fullmatch(r"[0-9a-f]{12}", state_key("/x/" + "é" * 300))  # nothing readable to keep


# ---------------------------------------------------------------------------------------------
# Import budget: cheap, and never a subprocess


def test_import_is_light():
    code = "import sys, mem.core.paths; print(','.join(m for m in ('subprocess', 'click', 'yaml', 'hashlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------------------------
# Properties of sanitizePath


def reference_hash(s: str) -> int:
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = h * 31 + int.from_bytes(data[i : i + 2], "little")
        h = (h + 2**31) % 2**32 - 2**31  # `| 0`
    return h


def per_unit_replacement(s: str) -> str:
    units = s.encode("utf-16-le", "surrogatepass")
    out = []
    for i in range(0, len(units), 2):
        u = int.from_bytes(units[i : i + 2], "little")
        out.append(chr(u) if chr(u).isascii() and chr(u).isalnum() else "-")
    return "".join(out)


any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=400)
long_text = st.text(st.characters(exclude_categories=()), min_size=201, max_size=600)


@given(any_text)
def test_prop_output_alphabet(s):
    assert re.fullmatch(r"[A-Za-z0-9-]*", sanitize_path(s))


@given(any_text)
def test_prop_short_is_per_unit_replacement(s):
    replaced = per_unit_replacement(s)
    if len16(s) <= 200:
        assert sanitize_path(s) == replaced
    assert len(replaced) == len16(s)


@given(long_text)
def test_prop_long_is_capped_and_hashed(s):
    out = sanitize_path(s)
    assert out == per_unit_replacement(s)[:200] + "-" + base36(abs(reference_hash(s)))
    assert out[200] == "-" and re.fullmatch(r"[0-9a-z]+", out[201:])
    assert sanitize_path(s) == out


@settings(max_examples=300)
@given(any_text)
def test_prop_hash_matches_reference(s):
    assert string_hash(s) == reference_hash(s)
    assert -(2**31) <= string_hash(s) < 2**31


@pytest.mark.parametrize("s", [
    "", "/home/u/repo", "/home/u/cafe\u0301", "/home/u/caf\u00e9", "/tmp/\u1100\u1161\u11a8", "/tmp/\ud55c",
    "/x/A\u030a\u212b", "/x/\U0001f600/e\u0301\u0323", "/x/\ufb01le", "/x/\u0344",
])
def test_nfc_is_unicodedata_nfc_and_leaves_ascii_as_it_is(s):
    import unicodedata

    assert paths.nfc(s) == unicodedata.normalize("NFC", s)
    if s.isascii():
        assert paths.nfc(s) is s


@given(st.text())
@settings(max_examples=300)
def test_nfc_agrees_with_unicodedata_on_any_text(s):
    import unicodedata

    assert paths.nfc(s) == unicodedata.normalize("NFC", s)


def test_which_walks_path_as_shutil_which_finds_an_executable(tmp_path):
    import shutil

    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    (a / "tool").write_text("#!/bin/sh\n")  # not executable: skipped
    (b / "tool").mkdir()  # a directory: skipped
    (c / "tool").write_text("#!/bin/sh\n")
    (c / "tool").chmod(0o755)
    path = os.pathsep.join(map(str, (a, b, c)))
    assert paths.which("tool", {"PATH": path}) == str(c / "tool") == shutil.which("tool", path=path)
    assert paths.which("tool", {"PATH": str(a)}) is None
    assert paths.which("sh", {}) == shutil.which("sh", path=os.defpath)  # PATH unset: os.defpath
