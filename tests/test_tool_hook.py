"""`mem recall --hook` on PreToolUse: the feedback that applies to a tool call, before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, write_memory
from mem.core import paths, recall, toolmatch

HOOKS = FIXTURES / "hooks"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project and its Claude Code memory dir with two feedback memories and a user one; MEM_DIR unset."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Path(paths.resolve(project=str(repo)).memory_dir)
    mem.mkdir(parents=True)
    write_memory(mem, "feedback_no_force_push.md", name="no-force-push", description="never force-push main",
                 type="feedback", body="Never run `git push --force` (or `git push -f`) on main.\n")
    write_memory(mem, "feedback_migrations.md", name="migrations-reversible", description="migrations need a downgrade",
                 type="feedback", body="Every file under `migrations/` implements `downgrade()`.\n")
    write_memory(mem, "user_git.md", name="git-user", description="the user knows git well",
                 body="Uses `git push --force` on their own forks.\n")
    return repo, mem


def payload(name: str, repo: Path, tmp_path: Path, **changes) -> str:
    """A recorded PreToolUse payload, cwd and transcript moved into the test's directories."""
    data = json.loads((HOOKS / name).read_text(encoding="utf-8"))
    data["cwd"] = str(repo)
    data["transcript_path"] = str(tmp_path / "no-transcript.jsonl")
    data.update(changes)
    return json.dumps(data)


def context_of(p) -> str:
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    return out["hookSpecificOutput"]["additionalContext"]


def test_a_force_push_is_reminded_of_the_feedback(project, tmp_path, run_mem):
    repo, mem = project
    p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path,
                                                   tool_input={"command": "git push --force origin main"}))
    ctx = context_of(p)
    assert ctx.startswith("Saved feedback that applies to this Bash call:\n")
    assert "Never run `git push --force`" in ctx and str(mem / "feedback_no_force_push.md") in ctx
    assert "user_git.md" not in ctx  # only feedback and project memories apply to tool calls
    assert "<system-reminder>" not in ctx  # no transcript, version unknown: plain text, as prompt recall does
    assert p.stderr == ""


def test_most_tool_calls_surface_nothing(project, tmp_path, run_mem):
    repo, _ = project
    for command in ("/home/dev/cc-run/fakemem save x", "git push origin feature/login", "git status", "echo migrations"):
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path,
                                                       tool_input={"command": command}))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), command


def test_once_per_session_per_tool_pattern(project, tmp_path, run_mem):
    repo, mem = project

    def edit(tool: str, rel: str, **changes) -> str:
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Write.json", repo, tmp_path,
                                                       tool_name=tool, tool_input={"file_path": str(repo / rel),
                                                                                   "content": "x = 1\n"}, **changes))
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert "feedback_migrations.md" in edit("Write", "migrations/0001_a.py")
    assert edit("Write", "migrations/0002_b.py") == ""  # the same pattern (write:migrations) in the session
    assert "feedback_migrations.md" in edit("Edit", "migrations/0001_a.py")  # another pattern
    assert "feedback_migrations.md" in edit("Write", "migrations/0003_c.py", session_id="another-session")
    state = json.loads(Path(recall.session_file(str(mem), json.loads((HOOKS / "claude-code/PreToolUse-Write.json")
                                                                    .read_text())["session_id"])).read_text())
    assert [(s["relpath"], s["tool_pattern"]) for s in state["surfaced"]] == [
        ("feedback_migrations.md", "write:migrations"), ("feedback_migrations.md", "edit:migrations")]


def test_the_session_budget_is_shared_with_prompt_recall(project, tmp_path, run_mem):
    repo, mem = project
    sid = "budget-spent"
    with recall.session(str(mem), sid) as state:
        state.surfaced.append({"path": str(mem / "other.md"), "relpath": "other.md", "chars": recall.MAX_SESSION_BYTES})
        recall._save_state(state, str(mem))
    p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path, session_id=sid,
                                                   tool_input={"command": "git push --force origin main"}))
    assert (p.returncode, p.stdout) == (0, "")


def test_qwen_code_write_file_payload(project, tmp_path, run_mem):
    repo, mem = project
    # the recorded payload is qwen-code's own: its memory dir is the qwen layout's
    qmem = Path(paths.resolve(project=str(repo), layout="qwen").memory_dir)
    qmem.mkdir(parents=True)
    write_memory(qmem, "feedback_migrations.md", name="migrations-reversible", description="migrations need a downgrade",
                 type="feedback", body="Every file under `migrations/` implements `downgrade()`.\n")
    p = run_mem("recall", "--hook", input=payload("qwen-code/PreToolUse-write_file.json", repo, tmp_path,
                                                   tool_input={"file_path": str(repo / "migrations/0001.py"),
                                                               "content": "def upgrade(): ...\n"}))
    ctx = context_of(p)
    assert str(qmem / "feedback_migrations.md") in ctx and "<" not in ctx  # qwen-code escapes tags: none sent


def test_a_payload_without_a_tool_input_surfaces_nothing(project, tmp_path, run_mem):
    repo, _ = project
    for changes in ({"tool_input": "git push --force"}, {"tool_name": "WebFetch"}, {"tool_name": None}):
        p = run_mem("recall", "--hook", input=payload("claude-code/PreToolUse-Bash.json", repo, tmp_path, **changes))
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), changes


# --- the matcher -------------------------------------------------------------------

def candidates(text: str, kind: str = "feedback"):
    return [("m.md", [list(t) for t in toolmatch.triggers(text)], toolmatch.about_reading(text))]


@pytest.mark.parametrize("command, hit", [
    ("git push --force origin main", True),
    ("git push --force-with-lease origin main", True),  # a kind of --force
    ("git push -f origin main", True),
    ("git push origin main", False),
    ("echo 'git push --force'", True),  # the words, the flag: said in a command, still about it
])
def test_flags_must_be_in_the_call(command, hit):
    text = "Never run `git push --force` (or `git push -f`) on main."
    call = toolmatch.read_call("Bash", {"command": command}, "/repo")
    assert bool(toolmatch.select(call, candidates(text))) is hit


def test_a_command_named_alone_applies_only_where_it_is_the_command():
    text = "The frontend uses pnpm: never `yarn`."
    assert toolmatch.select(toolmatch.read_call("Bash", {"command": "yarn add moment"}, "/r"), candidates(text))
    assert toolmatch.select(toolmatch.read_call("Bash", {"command": "cd web && yarn"}, "/r"), candidates(text))
    assert not toolmatch.select(toolmatch.read_call("Bash", {"command": "grep yarn README.md"}, "/r"), candidates(text))
    assert not toolmatch.select(toolmatch.read_call("Write", {"file_path": "/r/a.md", "content": "yarn"}, "/r"),
                                candidates(text))


def test_paths_match_whole_segments_and_a_directory_said_in_passing_does_not_count():
    text = "Files under `migrations/` need a downgrade. In service code (src/), log."
    def hit(path):
        return bool(toolmatch.select(toolmatch.read_call("Edit", {"file_path": path, "new_string": "x"}, "/r"),
                                     candidates(text)))
    assert hit("/r/migrations/0001.py") and hit("/r/db/migrations/0001.py")
    assert not hit("/r/old_migrations/0001.py") and not hit("/r/src/shop/cart.py")


def test_a_read_surfaces_only_rules_about_reading():
    editing = "Never edit `poetry.lock` by hand."
    reading = "Never print `.env` (cat, Read): it holds credentials."
    assert not toolmatch.select(toolmatch.read_call("Read", {"file_path": "/r/poetry.lock"}, "/r"), candidates(editing))
    assert toolmatch.select(toolmatch.read_call("read_file", {"absolute_path": "/r/.env"}, "/r"), candidates(reading))


def test_the_triggers_are_cached_by_stamp(tmp_path):
    from mem.core.memdir import manifest

    write_memory(tmp_path, "feedback_a.md", name="a", description="a", type="feedback", body="Never `yarn`.\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    first = toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache))
    assert (cache / toolmatch.TRIGGERS_CACHE).exists()
    assert toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache)) == first
    write_memory(tmp_path, "feedback_a.md", name="a", description="a", type="feedback", body="Never `npm`.\n",
                 mtime=1_700_000_000)
    again = toolmatch.memory_triggers(manifest.scan(str(tmp_path)), str(cache))
    assert again != first and tuple(again[0][1][0][0]) == ("npm",)


def hit(tool: str, tool_input: dict, text: str) -> bool:
    return bool(toolmatch.select(toolmatch.read_call(tool, tool_input, "/r"), candidates(text)))


def test_what_to_do_instead_is_no_trigger():
    text = "Never run `sudo pip install`. **How to apply:** `.venv/bin/pip install ...` instead."
    assert hit("Bash", {"command": "sudo pip install requests"}, text)
    assert not hit("Bash", {"command": ".venv/bin/pip install requests"}, text)
    text = "Use `docker compose` (v2). The old `docker-compose` binary is not installed."
    assert hit("Bash", {"command": "docker-compose up -d"}, text)
    assert not hit("Bash", {"command": "docker compose ps"}, text)


def test_a_common_command_alone_is_not_enough():
    text = "Never print `.env` (`cat`): it holds credentials."
    assert not hit("Bash", {"command": "cat README.md"}, text)
    assert hit("Bash", {"command": "cat .env"}, text)


def test_a_flag_alone_counts_in_a_command_the_memory_names():
    text = "Run `pytest -x -q` on the files you touched; never the whole suite with `--cov`."
    assert hit("Bash", {"command": "pytest --cov=src tests/"}, text)
    assert not hit("Bash", {"command": "coverage run --cov"}, text)


def test_a_star_and_a_bare_file_name_are_triggers():
    assert hit("Edit", {"file_path": "/r/q.py", "new_string": "SELECT * FROM orders"}, "No `SELECT *` in queries.")
    assert not hit("Edit", {"file_path": "/r/q.py", "new_string": "SELECT id FROM orders"}, "No `SELECT *` in queries.")
    assert hit("Edit", {"file_path": "/r/CHANGELOG.md", "new_string": "- x"}, "Add CHANGELOG.md entries under Unreleased.")
