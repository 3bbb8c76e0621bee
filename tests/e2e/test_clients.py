"""The real clients, end to end: mem's hooks in Claude Code and qwen-code, oldest and newest pinned versions.

Skipped unless MEM_E2E=1 (they install the clients from npm): run ``make e2e``.
Every check reads what the local model server received, as the model would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

# The helpers are imported as tests.e2e.*, however pytest was started (a conftest.py here would
# shadow the suite's own `conftest` module).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e import driver  # noqa: E402
from tests.e2e.fakemodel import FakeModel, Reply, request_texts, system_text  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("MEM_E2E") != "1", reason="end-to-end: set MEM_E2E=1 (make e2e)")

CLIENTS = [(c, v) for c, versions in driver.PINNED.items() for v in versions]
RELEVANT_BODY = "Rerun the staging deploy with MIGRATION_TIMEOUT=900."
UNRELATED_BODY = "Indent Go code with tabs, never spaces."


def write_memory(d, name, description, body, type="project"):
    (d / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type}\n---\n\n{body}\n")


@pytest.fixture
def server():
    srv = FakeModel().start()
    yield srv
    srv.stop()


@pytest.fixture(params=CLIENTS, ids=[f"{c}-{v}" for c, v in CLIENTS])
def session(request, tmp_path, server):
    client, version = request.param
    s = driver.Session(client, version, tmp_path, server)
    write_memory(s.memory_dir, "staging-deploys", "staging deploys fail on migration timeouts", RELEVANT_BODY)
    write_memory(s.memory_dir, "go-indent", "user wants tabs in Go code", UNRELATED_BODY, type="user")
    (s.memory_dir / "MEMORY.md").write_text(
        "- [Staging deploys](staging-deploys.md) — migration timeouts\n- [Go indent](go-indent.md) — tabs\n")
    return s


def fired(run, event):
    return [p for e, p in run.hooks if e == event]


def test_hooks_reach_the_model_cleanly(session):
    run = session.run("the staging deploy failed with a migration timeout again, what should I do")
    assert run.returncode == 0, run.stderr
    mains = driver.main_requests(run)
    assert mains, [r["path"] for r in run.requests]
    texts = request_texts(mains[0])
    whole = "\n".join(texts)
    # UserPromptSubmit: mem surfaces the relevant memory, not the unrelated one (qwen-code's own
    # recall may add memories of its own, in its own format: those are not checked here)
    relevant = f"{session.memory_dir / 'staging-deploys.md'}:"
    assert relevant in whole and RELEVANT_BODY in whole
    assert f"{session.memory_dir / 'go-indent.md'}:" not in whole
    # ... as readable text: no escaped wrapper tags around it
    assert "&lt;system-reminder" not in whole
    carrier = next(t for t in texts if relevant in t)
    assert "&lt;" not in carrier[max(0, carrier.index(relevant) - 200):carrier.index(RELEVANT_BODY)]
    # SessionStart: mem's addition reaches the model where the client fires the event
    if fired(run, "SessionStart"):
        assert "mem recall" in whole
        assert whole.count("[Staging deploys](staging-deploys.md)") == 1  # the index is not repeated
    assert run.seconds < 60


def test_the_stop_hook_does_not_hold_the_client(session, server):
    if session.client != "claude":
        pytest.skip("qwen-code extracts memories itself: no Stop hook is configured for it")
    # mem extract's model (the Python SDK) answers after 20 s; the client must not wait for it
    server.delay = lambda headers, body: 20.0 if "python" in headers.get("user-agent", "").lower() else 0.0
    run = session.run("the staging deploy failed with a migration timeout again, what should I do")
    assert run.returncode == 0, run.stderr
    assert fired(run, "Stop")
    assert run.seconds < 15, run.seconds
    deadline = time.monotonic() + 30  # ... while mem extract, detached, did ask its model
    while not any("python" in r["user_agent"].lower() for r in server.requests) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any("python" in r["user_agent"].lower() for r in server.requests)


def test_a_memory_the_client_writes_is_read_back_by_mem(session, server):
    path = session.memory_dir / "release-freeze.md"
    content = ("---\nname: release-freeze\ndescription: no deploys on Fridays during the release freeze\n"
               "type: project\n---\n\nNo deploys on Fridays until the 3.0 release ships.\n")
    tool = ("Write", {"file_path": str(path), "content": content}) if session.client == "claude" else \
        ("write_file", {"file_path": str(path), "content": content})
    server.main[:] = [Reply(tool=tool), Reply(text="Saved.")]
    run = session.run("remember that there are no deploys on Fridays during the release freeze")
    assert run.returncode == 0, run.stderr
    assert path.exists(), run.stdout + run.stderr
    scan = driver.mem_cmd("scan", "--json", "--dir", str(session.memory_dir))
    assert scan.returncode == 0, scan.stderr
    rows = {r["relpath"]: r for r in json.loads(scan.stdout)}
    assert rows["release-freeze.md"]["description"] == "no deploys on Fridays during the release freeze"


def test_compact_runs_the_session_hooks(session):
    if session.client != "claude":
        pytest.skip("qwen-code has no /compact in headless mode")
    for prompt, extra in (("the staging deploy failed with a migration timeout again", ()),
                          ("and what about the rollback plan for it", ("--continue",))):
        before = session.run(prompt, *extra)  # a session too short is "Not enough messages to compact"
        assert before.returncode == 0, before.stderr
    run = session.run("/compact keep the deploy notes", "--continue")
    assert run.returncode == 0, run.stderr
    assert fired(run, "PreCompact")
    assert any(p.get("source") == "compact" for p in fired(run, "SessionStart"))


def test_later_prompts_get_the_wrapping_only_where_it_arrives_as_tags(session):
    if session.client != "claude":
        pytest.skip("qwen-code escapes hook context in every version")
    first = session.run("say hello to the team for me please")  # writes the transcript that tells the version
    assert first.returncode == 0, first.stderr
    run = session.run("the staging deploy failed with a migration timeout again, what should I do", "--continue")
    assert run.returncode == 0, run.stderr
    whole = "\n".join(request_texts(driver.main_requests(run)[-1]))
    header = f"Memory (saved today): {session.memory_dir / 'staging-deploys.md'}:"
    if session.version == "2.1.197":  # passes hook context as it is: Claude Code's exact wrapping
        assert f"<system-reminder>\n{header}" in whole
    else:
        assert header in whole and "system-reminder>\n" + header not in whole
    assert "&lt;system-reminder" not in whole


def test_a_feedback_reminder_reaches_the_model_before_the_tool_runs(session, server):
    # issue #30: the correction applies to a tool call whose words the prompt never had
    if session.client != "claude":
        pytest.skip("no PreToolUse hook for qwen-code: 0.24.4 runs it before write_file but leaves its "
                    "additionalContext out of the next request (and declines run_shell_command before any hook)")
    rule = "Never run `git push --force` on main: revert instead (E2E-TOOL-RULE)."
    write_memory(session.memory_dir, "feedback_no_force_push", "never force-push main", rule, type="feedback")
    server.main[:] = [Reply(tool=("Bash", {"command": "git push --force origin main", "description": "publish"})),
                      Reply(text="Done.")]
    run = session.run("publish my work please")
    assert run.returncode == 0, run.stderr
    assert any(p.get("tool_name") == "Bash" for p in fired(run, "PreToolUse")), run.hooks
    mains = driver.main_requests(run)
    assert len(mains) >= 2, [r["path"] for r in run.requests]
    lead = "Saved feedback that applies to this Bash call:"
    first, later = (json.dumps(m, ensure_ascii=False) for m in mains[:2])
    assert lead not in first and "E2E-TOOL-RULE" not in first  # the prompt's words did not bring it
    assert lead in later and "E2E-TOOL-RULE" in later[later.index(lead):]
    assert "&lt;system-reminder" not in later


def test_qwen_code_in_a_linked_worktree_uses_the_folder_mem_path_names(session, server):
    """qwen-code 0.24 keys a linked worktree's memory by the worktree (0.15: by the main repository):
    the folder mem path names for the worktree is the one the client loads MEMORY.md from."""
    if session.client != "qwen":
        pytest.skip("Claude Code keys every worktree's memory by the main repository (tests/test_paths.py)")
    import subprocess

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(session.repo)]
    (session.repo / "README").write_text("x\n")
    subprocess.run([*git, "add", "README"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True, capture_output=True)
    wt = session.root / "wt"
    subprocess.run([*git, "worktree", "add", "-q", "--detach", str(wt)], check=True, capture_output=True)
    env = {**session.env(), "PATH": f"{session.exe.parent}:{session.env()['PATH']}"}  # the installed qwen
    where = driver.mem_cmd("path", "--project", str(wt), "--layout", "qwen", "--json", env=env)
    assert where.returncode == 0, where.stderr
    memory = Path(json.loads(where.stdout)["memory_dir"])
    memory.mkdir(parents=True, exist_ok=True)
    write_memory(memory, "worktree-only", "the worktree builds with the feature flag on", "Flag on.")
    (memory / "MEMORY.md").write_text("- [Worktree only](worktree-only.md) — feature flag on in this worktree\n")
    server.main[:] = [Reply(text="ok")]
    run = session.run("say ok", cwd=wt)
    assert run.returncode == 0, run.stderr
    systems = [system_text(b) for b in driver.main_requests(run)]
    assert systems and all("feature flag on in this worktree" in s for s in systems)
    own = tuple(int(p) for p in session.version.split(".")) >= (0, 24)  # else shared with the main checkout
    if own:  # not the main checkout's index
        assert all("migration timeouts" not in s for s in systems)
    scan = driver.mem_cmd("scan", "--json", "--project", str(wt), "--layout", "qwen", env=env)
    listed = sorted(r["relpath"] for r in json.loads(scan.stdout))
    assert listed == (["worktree-only.md"] if own else ["go-indent.md", "staging-deploys.md", "worktree-only.md"])


def test_a_dream_leaves_qwen_codes_pinned_files_as_they_are(session, server):
    """qwen-code 0.24 keeps files under a top-level pinned/ out of its extraction and dream: a `mem dream`
    on the folder the client loads leaves them byte for byte (though one repeats a topic file, which
    the dream would merge), fixes the index around them, and the client loads the index it left."""
    if session.client != "qwen" or tuple(int(p) for p in session.version.split(".")) < (0, 24):
        pytest.skip("pinned/ is qwen-code 0.24's")
    env = {**session.env(), "PATH": f"{session.exe.parent}:{session.env()['PATH']}"}
    where = driver.mem_cmd("path", "--project", str(session.repo), "--layout", "qwen", "--json", env=env)
    assert where.returncode == 0, where.stderr
    memory = Path(json.loads(where.stdout)["memory_dir"])
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "pinned").mkdir()
    write_memory(memory / "pinned", "release-freeze", "no deploys during the release freeze", "Freeze: no deploys.")
    write_memory(memory, "release-freeze", "no deploys during the release freeze", "Freeze: no deploys.")
    pinned = memory / "pinned" / "release-freeze.md"
    before = (pinned.read_bytes(), pinned.stat().st_mtime_ns)
    (memory / "MEMORY.md").write_text("- [Gone](gone.md) — a pointer to nothing\n")
    dream = driver.mem_cmd("dream", "--force", "--project", str(session.repo), "--layout", "qwen", "--json", env=env)
    assert dream.returncode == 0, dream.stderr
    assert (pinned.read_bytes(), pinned.stat().st_mtime_ns) == before
    index = (memory / "MEMORY.md").read_text()
    # pinned files are indexed like others when MEMORY.md is rebuilt (qwen-code 0.24's memory.md says so)
    assert "gone.md" not in index and "(release-freeze.md)" in index and "(pinned/release-freeze.md)" in index
    scan = driver.mem_cmd("scan", "--json", "--project", str(session.repo), "--layout", "qwen", env=env)
    assert "pinned/release-freeze.md" in [r["relpath"] for r in json.loads(scan.stdout)]
    server.main[:] = [Reply(text="ok")]
    run = session.run("say ok")
    assert run.returncode == 0, run.stderr
    systems = [system_text(b) for b in driver.main_requests(run)]
    assert systems and all("no deploys during the release freeze" in s for s in systems)


def test_qwen_code_reads_the_team_tier_where_mem_path_team_names_it(session, server):
    """qwen-code 0.24 with memory.enableTeamMemory puts the team tier's MEMORY.md into the system prompt:
    the directory mem path --team names, whose memories mem scan lists."""
    if session.client != "qwen" or tuple(int(p) for p in session.version.split(".")) < (0, 24):
        pytest.skip("the team tier is qwen-code 0.24's")
    (session.repo / ".qwen").mkdir(exist_ok=True)
    (session.repo / ".qwen" / "settings.json").write_text('{\n  // team tier on\n  "memory": {"enableTeamMemory": true}\n}\n')
    env = {**session.env(), "PATH": f"{session.exe.parent}:{session.env()['PATH']}"}
    where = driver.mem_cmd("path", "--team", "--project", str(session.repo), "--layout", "qwen", "--json", env=env)
    assert where.returncode == 0, where.stderr
    out = json.loads(where.stdout)
    assert out["team_memory_on"] is True
    team = Path(out["memory_dir"])
    team.mkdir(parents=True)
    write_memory(team, "team-tracker", "bugs are tracked in the TRK-E2E project", "File bugs in TRK-E2E.", type="reference")
    (team / "MEMORY.md").write_text("- [Team tracker](team-tracker.md) — bugs are tracked in the TRK-E2E project\n")
    server.main[:] = [Reply(text="ok")]
    run = session.run("say ok")
    assert run.returncode == 0, run.stderr
    systems = [system_text(b) for b in driver.main_requests(run)]
    assert systems and all("TRK-E2E project" in s for s in systems)
    scan = driver.mem_cmd("scan", "--json", "--project", str(session.repo), "--layout", "qwen", env=env)
    assert ".qwen/team-memory/team-tracker.md" in [r["relpath"] for r in json.loads(scan.stdout)]
    # switched off, the client leaves it out, and so does mem
    (session.repo / ".qwen" / "settings.json").write_text('{"memory": {"enableTeamMemory": false}}\n')
    server.main[:] = [Reply(text="ok")]
    run = session.run("say ok")
    systems = [system_text(b) for b in driver.main_requests(run)]
    assert systems and all("TRK-E2E" not in s for s in systems)
    scan = driver.mem_cmd("scan", "--json", "--project", str(session.repo), "--layout", "qwen", env=env)
    assert all("team-memory" not in r["relpath"] for r in json.loads(scan.stdout))
