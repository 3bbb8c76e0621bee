"""The memory directory's history through the real mem: every change recorded, any one undone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import write_memory


def tree(root) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def history(run_mem, *args) -> list[dict]:
    r = run_mem("history", "--json", *args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def run_mem_anew():
    """``mem`` in a child forked from the test process that looks for git on its own PATH, as a new process does
    (mem looks it up once per process): a test of a PATH without git, without a Python start-up per command."""
    from helpers import forked
    from mem.core import gitcmd

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd: str | None = None):
        return forked.run(list(args), input=input, env={**os.environ, **(env or {})}, cwd=cwd,
                          preexec_fn=gitcmd.binary.cache_clear)

    return run


def remember(run_mem, name: str, text: str):
    r = run_mem("remember", "--type", "feedback", "--name", name, "--description", f"about {name}", text)
    assert r.returncode == 0, r.stderr
    return r


def test_forget_outside_remember_then_undo_takes_back_only_the_remember(run_mem, memdir):
    """The issue's scenario: forget, the agent writes on its own, remember, undo."""
    remember(run_mem, "Tabs", "Use tabs, not spaces.")
    remember(run_mem, "Deploy", "Deploys go out on Tuesdays.")
    r = run_mem("forget", "--yes", "--offline", "tabs")
    assert r.returncode == 0, r.stderr
    assert not (memdir / "tabs.md").exists()
    # The agent's own Write tool: mem did not make this change.
    write_memory(memdir, "agent-note.md", name="agent", description="written by the agent", body="Agent fact.\n")
    remember(run_mem, "Reviews", "Two approvals before merge.")
    assert (memdir / "reviews.md").exists()

    ops = history(run_mem)
    commands = [op["command"] for op in ops]
    assert commands[:3] == ["remember", "outside", "forget"], commands
    outside = ops[1]
    assert [c["path"] for c in outside["changes"]] == ["agent-note.md"]

    before_undo = tree(memdir)
    r = run_mem("undo")
    assert r.returncode == 0, r.stderr
    after = tree(memdir)
    assert "reviews.md" not in after
    assert after["agent-note.md"] == before_undo["agent-note.md"]  # the outside write is untouched
    assert "tabs.md" not in after  # the forget is not undone
    assert b"reviews.md" not in after["MEMORY.md"] and b"deploy.md" in after["MEMORY.md"]

    forget_id = next(op["id"] for op in history(run_mem) if op["command"] == "forget")
    r = run_mem("undo", forget_id[:12])
    assert r.returncode == 0, r.stderr
    final = tree(memdir)
    assert b"Use tabs, not spaces." in final["tabs.md"]
    assert b"tabs.md" in final["MEMORY.md"]
    assert final["agent-note.md"] == before_undo["agent-note.md"]
    assert "reviews.md" not in final  # the first undo stands
    assert set(final) == {"tabs.md", "deploy.md", "agent-note.md", "MEMORY.md"}


def test_undo_refuses_a_file_changed_since_and_force_overrides(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    (memdir / "tabs.md").write_text((memdir / "tabs.md").read_text() + "Edited by hand.\n")
    r = run_mem("undo")
    assert r.returncode == 4
    assert "tabs.md" in r.stderr and "changed since" in r.stderr
    assert (memdir / "tabs.md").exists()
    r = run_mem("undo", "--dry-run")
    assert r.returncode == 4  # a dry run refuses the same way
    r = run_mem("undo", "--force")
    assert r.returncode == 0, r.stderr
    assert not (memdir / "tabs.md").exists()
    # Nothing was lost: the hand edit is an outside operation, and can be restored by name.
    outside = next(op for op in history(run_mem) if op["command"] == "outside")
    r = run_mem("restore", "tabs.md", "--at", outside["id"][:12])
    assert r.returncode == 0, r.stderr
    assert "Edited by hand." in (memdir / "tabs.md").read_text()


def test_outside_operations_are_never_undone(run_mem, memdir):
    write_memory(memdir, "a.md", name="a", description="A")
    ops = history(run_mem)
    assert ops and ops[0]["command"] == "outside"
    r = run_mem("undo", ops[0]["id"][:12])
    assert r.returncode == 4 and "outside mem" in r.stderr
    assert (memdir / "a.md").exists()
    r = run_mem("undo")
    assert r.returncode == 1 and "nothing to undo" in r.stderr


def test_undo_of_undo_by_its_id_redoes(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    saved = tree(memdir)
    assert run_mem("undo").returncode == 0
    assert "tabs.md" not in tree(memdir)
    undo_id = history(run_mem)[0]["id"]
    assert run_mem("undo", undo_id[:12]).returncode == 0
    assert tree(memdir) == saved
    undo_ops = [op for op in history(run_mem) if op["command"] == "undo"]
    assert len(undo_ops) == 2 and undo_ops[1]["undoes"] != undo_ops[0]["undoes"]


def test_a_plain_undo_never_takes_back_an_undo_so_running_it_again_converges(run_mem, memdir):
    """Issue #31 item 5: `mem undo` run again (a retry after a kill) took back the undo itself."""
    remember(run_mem, "Tabs", "Use tabs.")
    remember_op = history(run_mem)[0]
    assert run_mem("undo").returncode == 0
    undone = tree(memdir)
    undo_op = history(run_mem)[0]
    for _ in range(2):
        r = run_mem("undo")
        assert r.returncode == 0, r.stderr
        assert tree(memdir) == undone and len(history(run_mem)) == 2
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "already an undo" in lines[0], r.stderr
        for named in (undo_op["id"][:12], undo_op["time"], remember_op["id"][:12], "remember",
                      f"`mem undo {undo_op['id'][:12]}` redoes"):
            assert named in lines[0], (named, lines[0])
    r = run_mem("undo", "--dry-run")  # says the same, and nothing would change (exit 0, not 1)
    assert r.returncode == 0 and r.stdout == "" and "already an undo" in r.stderr, r.stderr
    r = run_mem("undo", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["written"] is False and out["undoes"] is None and out["files"] == []
    assert out["newest_undo"] == {"id": undo_op["id"], "time": undo_op["time"], "undoes": remember_op["id"]}
    assert tree(memdir) == undone


def test_undo_id_run_again_changes_nothing_even_after_the_agent_wrote(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    remember(run_mem, "Reviews", "Small reviews.")
    tabs = history(run_mem)[1]["id"][:12]
    assert run_mem("undo", tabs).returncode == 0
    write_memory(memdir, "agent.md", name="agent", description="the agent's own")
    with open(memdir / "MEMORY.md", "a") as f:
        f.write("- [Agent](agent.md) — the agent's own\n")
    undone, count = tree(memdir), len(history(run_mem))
    for _ in range(2):
        r = run_mem("undo", tabs)
        assert r.returncode == 0 and f"nothing to change for {tabs}" in r.stderr, r.stderr
        assert tree(memdir) == undone and len(history(run_mem)) == count


def test_a_plain_undo_after_a_redo_or_a_restore_goes_no_further_than_one_undo(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    remember(run_mem, "Reviews", "Small reviews.")
    saved = tree(memdir)
    assert run_mem("undo").returncode == 0
    assert run_mem("undo", history(run_mem)[0]["id"][:12]).returncode == 0  # a redo, made with its id
    assert tree(memdir) == saved
    r = run_mem("undo")  # the redo is an undo: not taken back, and nothing older either
    assert r.returncode == 0 and "already an undo" in r.stderr, r.stderr
    assert tree(memdir) == saved
    remember_tabs = next(op for op in history(run_mem) if op["args"] and "Tabs" in op["args"])
    r = run_mem("restore", "MEMORY.md", "--at", remember_tabs["id"][:12])
    assert r.returncode == 0, r.stderr
    restored = tree(memdir)
    assert run_mem("undo").returncode == 0  # a restore is taken back like any operation ...
    assert tree(memdir) == saved
    r = run_mem("undo")  # ... and then that undo is newest
    assert r.returncode == 0 and "already an undo" in r.stderr, r.stderr
    assert tree(memdir) == saved and restored != saved


def test_rebuilding_the_index_twice_records_at_most_one_operation(run_mem, memdir):
    write_memory(memdir, "a.md", name="a", description="A")
    write_memory(memdir, "b.md", name="b", description="B")
    before = len(history(run_mem))
    assert run_mem("index", "--rebuild").returncode == 0
    assert run_mem("index", "--rebuild").returncode == 0
    ops = history(run_mem)
    assert len(ops) - before == 1 and ops[0]["command"] == "index"


def test_a_dream_with_nothing_to_do_records_nothing(run_mem, memdir):
    write_memory(memdir, "a.md", name="a", description="A")
    assert run_mem("index", "--rebuild").returncode == 0
    before = history(run_mem)
    r = run_mem("dream", "--offline", "--force")
    assert r.returncode == 0, r.stderr
    assert history(run_mem) == before


def test_history_of_one_file_diff_and_restore_at_a_time(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    r = run_mem("remember", "--update", "--type", "feedback", "--name", "Tabs", "--description", "about Tabs",
                "Use tabs, width 4.")
    assert r.returncode == 0, r.stderr
    versions = history(run_mem, "tabs.md")
    assert [op["command"] for op in versions] == ["remember", "remember"]
    r = run_mem("history", "--diff", versions[0]["id"][:12])
    assert r.returncode == 0 and "+Use tabs, width 4." in r.stdout and "-Use tabs." in r.stdout
    assert "--- a/tabs.md" in r.stdout
    text = run_mem("history").stdout.splitlines()
    assert text[0].split()[2] == "remember" and "~tabs.md" in text[0]
    r = run_mem("restore", "tabs.md", "--at", versions[1]["id"][:12])
    assert r.returncode == 0, r.stderr
    assert "Use tabs.\n" in (memdir / "tabs.md").read_text()
    r = run_mem("restore", "tabs.md", "--at", "2001-01-01")
    assert r.returncode == 1 and "no recorded version" in r.stderr


def test_a_state_directory_inside_the_memory_directory_is_refused(run_mem, memdir):
    r = run_mem("remember", "--type", "user", "--name", "x", "--description", "x", "text",
                env={"MEM_STATE_DIR": str(memdir / "state")})
    assert r.returncode == 4 and "inside the memory directory" in r.stderr
    assert not (memdir / "x.md").exists()


def test_secrets_written_outside_never_enter_the_history(run_mem, memdir):
    key = "AKIA" + "QWERTYUIOPASDFGH"
    (memdir / "leak.md").write_text(f"aws {key}\n")
    write_memory(memdir, "ok.md", name="ok", description="ok")
    ops = history(run_mem)
    paths = [c["path"] for op in ops for c in op["changes"]]
    assert "ok.md" in paths and "leak.md" not in paths
    state = os.environ["MEM_STATE_DIR"]
    found = subprocess.run(["grep", "-rl", key, state], capture_output=True, text=True)
    assert found.stdout == ""  # loose objects are compressed, so check the object store through git too
    git_dir = next(os.path.join(d, "history.git") for d, dirs, _ in os.walk(state) if "history.git" in dirs)
    from mem.core.memdir.history import blob_oid

    missing = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "-e", blob_oid(f"aws {key}\n".encode())])
    assert missing.returncode != 0


def test_status_shows_the_last_operations(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    r = run_mem("status", "--json")
    data = json.loads(r.stdout)
    assert data["operations"][0]["command"] == "remember"
    assert data["snapshots"][0]["id"] == data["operations"][0]["id"]
    assert "remember" in run_mem("status").stdout


def test_events_and_history_agree(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    op = history(run_mem)[0]
    r = run_mem("status", "--events", "--json")
    event = [e for e in json.loads(r.stdout) if e["command"] == "remember"][-1]
    assert event["detail"]["operation"] == op["id"]


def test_history_without_git_says_so(run_mem_anew, memdir, tmp_path):
    run_mem = run_mem_anew
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    r = run_mem("history", env={"PATH": str(bin_dir)})
    assert r.returncode != 0 and "git" in r.stderr
    # Writes still work without git, unrecorded.
    r = run_mem("log", "a note", env={"PATH": str(bin_dir)})
    assert r.returncode == 0, r.stderr


def test_an_undo_that_fails_half_way_takes_itself_back_so_a_retry_goes_the_same_way(run_mem, memdir):
    remember(run_mem, "Tabs alpha", "Use tabs in Go code.")
    remember(run_mem, "Tabs beta", "Use tabs in Makefiles.")
    r = run_mem("forget", "--yes", "--offline", "tabs")
    assert r.returncode == 0, r.stderr
    forget_op = history(run_mem)[0]
    assert sorted(c["path"] for c in forget_op["changes"]) == ["MEMORY.md", "tabs-alpha.md", "tabs-beta.md"]
    index_before = (memdir / "MEMORY.md").read_bytes()
    # tabs-beta.md is now a directory: putting it back fails after MEMORY.md and tabs-alpha.md were done.
    (memdir / "tabs-beta.md").mkdir()
    r = run_mem("undo", "--force", forget_op["id"][:12])
    assert r.returncode != 0 and "tabs-beta.md" in r.stderr
    assert (memdir / "MEMORY.md").read_bytes() == index_before  # the half-done undo was taken back
    assert not (memdir / "tabs-alpha.md").exists()
    newest = [op for op in history(run_mem) if op["command"] != "outside"][0]
    assert newest["command"] == "undo" and newest["undoes"] != forget_op["id"]  # the take-back, not a redo
    (memdir / "tabs-beta.md").rmdir()
    r = run_mem("undo", "--force", forget_op["id"][:12])
    assert r.returncode == 0, r.stderr
    assert (memdir / "tabs-alpha.md").exists() and (memdir / "tabs-beta.md").is_file()


def test_a_plain_undo_after_a_failed_undo_finishes_it(run_mem, memdir):
    """Issue #31: after an undo failed half way (a full disk) and took itself back, `mem undo` redid its half."""
    remember(run_mem, "Tabs alpha", "Use tabs in Go code.")
    remember(run_mem, "Tabs beta", "Use tabs in Makefiles.")
    r = run_mem("forget", "--yes", "--offline", "tabs")
    assert r.returncode == 0, r.stderr
    (memdir / "tabs-beta.md").mkdir()  # putting it back fails after MEMORY.md and tabs-alpha.md
    r = run_mem("undo")
    assert r.returncode != 0 and "tabs-beta.md" in r.stderr
    (memdir / "tabs-beta.md").rmdir()
    r = run_mem("undo")  # the retry: the same undo, whole
    assert r.returncode == 0, r.stderr
    assert (memdir / "tabs-alpha.md").exists() and (memdir / "tabs-beta.md").is_file()
    index = (memdir / "MEMORY.md").read_text()
    assert "(tabs-alpha.md)" in index and "(tabs-beta.md)" in index


def test_the_history_is_private_to_its_user(run_mem, memdir):
    remember(run_mem, "Tabs", "Use tabs.")
    state = os.environ["MEM_STATE_DIR"]
    holder = next(d for d, dirs, _ in os.walk(state) if "history.git" in dirs)
    assert os.stat(holder).st_mode & 0o077 == 0  # copies of every memory live below it


def _agent_writes(memdir, rel: str, text: str) -> None:
    """The agent's own Write tool: a topic file and its pointer line in MEMORY.md, as Claude Code does."""
    write_memory(memdir, rel, name=rel[:-3], description=text, body=text + "\n")
    index = memdir / "MEMORY.md"
    index.write_text(index.read_text() + f"- [{rel[:-3]}]({rel}) — {text}\n")


def test_undo_after_the_agent_wrote_its_own_pointer_merges_the_index(run_mem, memdir):
    """Issue #31: remember A, B, forget A, remember C, the agent writes D (file + pointer), then undo."""
    remember(run_mem, "Alpha", "Alpha fact.")
    remember(run_mem, "Beta", "Beta fact.")
    r = run_mem("forget", "--yes", "--offline", "alpha.md")
    assert r.returncode == 0, r.stderr
    _agent_writes(memdir, "delta.md", "Agent fact")
    remember(run_mem, "Gamma", "Gamma fact.")
    agent_line = "- [delta](delta.md) — Agent fact"

    r = run_mem("undo", "--dry-run")
    assert r.returncode == 1, r.stderr  # would change something, and shows the merged index
    assert "-- [Gamma](gamma.md)" in r.stdout or "gamma.md" in r.stdout
    assert agent_line not in [l[1:] for l in r.stdout.splitlines() if l.startswith(("-", "+"))]

    r = run_mem("undo")  # no --force
    assert r.returncode == 0, r.stderr
    index = (memdir / "MEMORY.md").read_text()
    assert "gamma.md" not in index and not (memdir / "gamma.md").exists()
    assert agent_line in index and "beta.md" in index and "alpha.md" not in index
    assert (memdir / "delta.md").exists()

    forget_id = next(op["id"] for op in history(run_mem) if op["command"] == "forget")
    r = run_mem("undo", forget_id[:12])
    assert r.returncode == 0, r.stderr
    index = (memdir / "MEMORY.md").read_text()
    assert "alpha.md" in index and b"Alpha fact." in (memdir / "alpha.md").read_bytes()
    assert agent_line in index and "beta.md" in index and "gamma.md" not in index
    assert (memdir / "delta.md").exists()


def test_undo_refuses_when_the_operations_own_line_changed_since(run_mem, memdir):
    remember(run_mem, "Alpha", "Alpha fact.")
    index = memdir / "MEMORY.md"
    index.write_text(index.read_text().replace("alpha.md)", "alpha.md) edited by hand"))
    (memdir / "alpha.md").unlink()
    write_memory(memdir, "alpha.md", name="x", description="y")
    r = run_mem("undo")
    assert r.returncode == 4
    assert "changed since" in r.stderr


def test_restore_at_an_age_that_looks_like_hex_is_an_age(run_mem, memdir):
    """Issue #31: --at 100d was read as an operation id."""
    remember(run_mem, "Tabs", "Use tabs.")
    r = run_mem("restore", "tabs.md", "--at", "100d")
    assert r.returncode == 1, r.stderr
    assert "no recorded version of tabs.md at 100d" in r.stderr  # 100 days ago it did not exist yet


def test_forget_promises_undo_only_when_undo_would_bring_it_back(run_mem_anew, memdir, tmp_path):
    """Issue #31: with no git, and for a memory holding a secret, forget said `mem undo` brings it back."""
    run_mem = run_mem_anew
    remember(run_mem, "Tabs", "Use tabs.")
    r = run_mem("forget", "--yes", "--offline", "tabs.md")
    assert r.returncode == 0 and "`mem undo` brings it back (operation " in r.stderr

    key = "AKIA" + "QWERTYUIOPASDFGH"
    remember(run_mem, "Deploy", "Deploys on Tuesdays.")
    with open(memdir / "deploy.md", "a") as f:
        f.write(f"aws {key}\n")  # an outside editor: the version is withheld from the history
    r = run_mem("forget", "--yes", "--offline", "deploy.md")
    assert r.returncode == 0, r.stderr
    assert "brings it back" not in r.stderr and "cannot bring it back" in r.stderr and "withheld" in r.stderr

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    remember(run_mem, "Reviews", "Two approvals.")
    r = run_mem("forget", "--yes", "--offline", "reviews.md", env={"PATH": str(bin_dir)})
    assert r.returncode == 0, r.stderr
    assert "brings it back" not in r.stderr and "history is off" in r.stderr


@pytest.mark.parametrize("by_id", [False, True])
def test_an_undo_killed_half_way_is_finished_by_the_retry(run_mem, memdir, by_id):
    """Issue #31: after kill -9 mid-undo, plain `mem undo` reversed the partial undo and `undo ID` refused."""
    from helpers import forked

    remember(run_mem, "Seed", "Seed fact.")
    for attempt in range(40):
        remember(run_mem, f"Topic {attempt}", f"Fact {attempt}.")
        index = (memdir / "MEMORY.md").read_bytes()
        topic = memdir / f"topic-{attempt}.md"
        if not topic.exists():
            topic = next(p for p in memdir.glob("*.md") if p.name != "MEMORY.md" and f"Fact {attempt}." in p.read_text())
        proc = forked.Forked(["undo"])  # a process of its own to kill, forked: no Python start-up to pay
        while proc.poll() is None and (memdir / "MEMORY.md").read_bytes() == index:
            pass
        proc.kill()
        proc.wait()
        if topic.exists() and (memdir / "MEMORY.md").read_bytes() != index:
            break  # cut between the index and the topic file
        if topic.exists():
            run_mem("undo")
    else:
        pytest.skip("never caught the undo half way")
    undone = next(op["id"] for op in history(run_mem) if op["command"] == "remember")
    r = run_mem("undo", *([undone[:12]] if by_id else []))
    assert r.returncode == 0, r.stderr
    assert not topic.exists() and topic.name not in (memdir / "MEMORY.md").read_text()
    r = run_mem("undo", "--dry-run")  # the undo is done: a further undo would redo it, not half of it
    assert r.returncode in (0, 1)


def test_mem_log_never_stores_a_secret_an_editor_put_in_todays_log(run_mem, memdir):
    """Issue #31: the next `mem log` recorded the whole log, the editor's secret included."""
    key = "AKIA" + "QWERTYUIOPASDFGH"
    r = run_mem("log", "first entry")
    assert r.returncode == 0, r.stderr
    log = next((memdir / "logs").rglob("*.md"))
    with open(log, "a") as f:
        f.write(f"aws {key}\n")
    r = run_mem("log", "second entry")
    assert r.returncode == 0, r.stderr
    assert "second entry" in log.read_text()
    state = os.environ["MEM_STATE_DIR"]
    git_dir = next(os.path.join(d, "history.git") for d, dirs, _ in os.walk(state) if "history.git" in dirs)
    objects = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True)
    assert key.encode() not in objects.stdout


def test_a_damaged_history_store_is_set_aside_and_writes_go_on(run_mem, memdir):
    """Issue #31: a damaged store blocked every write (exit 70, no hint)."""
    remember(run_mem, "Tabs", "Use tabs.")
    state = os.environ["MEM_STATE_DIR"]
    git_dir = next(os.path.join(d, "history.git") for d, dirs, _ in os.walk(state) if "history.git" in dirs)
    with open(os.path.join(git_dir, "index"), "wb") as f:
        f.write(b"not an index at all")
    check = _doctor_history(run_mem)  # mem doctor names it, with the fix
    assert check["state"] == "fail" and "is damaged" in check["detail"] and "sets the store aside" in check["fix"]
    r = run_mem("remember", "--type", "feedback", "--name", "Deploy", "--description", "d", "Deploys on Tuesdays.")
    assert r.returncode == 0, r.stderr
    assert "history store was damaged" in r.stderr and "fsck" in r.stderr and "mem doctor" in r.stderr
    check = _doctor_history(run_mem)
    assert check["state"] == "note" and "set aside at " in check["detail"] and check["fix"].startswith("git --git-dir ")
    assert (memdir / "deploy.md").exists() and "(deploy.md)" in (memdir / "MEMORY.md").read_text()
    assert any(p.startswith("history.git.damaged-") for p in os.listdir(os.path.dirname(git_dir)))
    r = run_mem("undo")  # the new history recorded the remember: it can be taken back
    assert r.returncode == 0, r.stderr
    assert not (memdir / "deploy.md").exists() and (memdir / "tabs.md").exists()


def test_the_core_tells_a_damaged_store_to_the_command_not_to_stderr(run_mem, memdir, capfd):
    """The core returns the notice (a Notice warning) for the CLI to print; it wrote to stderr itself."""
    from mem.core.errors import Notice
    from mem.core.memdir.store import MemoryDir

    remember(run_mem, "Tabs", "Use tabs.")
    git_dir = next(os.path.join(d, "history.git") for d, dirs, _ in os.walk(os.environ["MEM_STATE_DIR"])
                   if "history.git" in dirs)
    with open(os.path.join(git_dir, "index"), "wb") as f:
        f.write(b"not an index at all")
    capfd.readouterr()
    memory = MemoryDir(str(memdir))
    with pytest.warns(Notice, match="history store was damaged.*mem doctor"):
        with memory.operation("log"):
            memory.write("notes.md", "---\nname: notes\ndescription: n\ntype: user\n---\nN.\n")
    assert capfd.readouterr().err == ""
    assert memory.last_operation is not None  # recorded in the new history


def _doctor_history(run_mem, env: dict | None = None) -> dict:
    r = run_mem("doctor", "--json", env=env)
    return next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "history")


def test_doctor_says_when_history_is_off_or_fine(run_mem, memdir, tmp_path):
    check = _doctor_history(run_mem)
    assert check["state"] == "ok" and check["detail"] == "no change recorded yet"
    remember(run_mem, "Tabs", "Use tabs.")
    assert _doctor_history(run_mem)["detail"].startswith("1 operation recorded, the newest ")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    check = _doctor_history(run_mem, env={"PATH": str(bin_dir)})
    assert check["state"] == "fail" and "history is off" in check["detail"] and check["fix"] == "install git"


def _store_objects() -> bytes:
    state = os.environ["MEM_STATE_DIR"]
    found = b""
    for d, dirs, _ in os.walk(state):
        if "history.git" in dirs:
            found += subprocess.run(["git", "--git-dir", os.path.join(d, "history.git"), "cat-file",
                                     "--batch-all-objects", "--batch"], capture_output=True).stdout
    return found


#: Writing commands run after an outside editor put a secret in a memory (or the index) they touch.
_WRITERS = {
    "remember --update": ("remember", "--file", "tabs.md", "--update", "--description", "tabs", "Use tabs."),
    "forget": ("forget", "--yes", "--offline", "tabs.md"),
    "index --rebuild": ("index", "--rebuild"),
    "dream": ("dream", "--offline", "--force"),
    "log": ("log", "a note"),
    "promote": ("promote", "tabs.md"),
    "undo": ("undo",),
}


@pytest.mark.parametrize("name", list(_WRITERS))
def test_no_writing_command_stores_a_secret_an_editor_put_in(name, run_mem, memdir, tmp_path, monkeypatch):
    """Issue #31: no secret enters the history store by any path (the version is withheld, never stored)."""
    monkeypatch.setenv("MEM_USER_DIR", str(tmp_path / "user-memory"))
    key = "AKIA" + "ZXCVBNMASDFGHJKL"
    remember(run_mem, "Tabs", "Use tabs.")
    remember(run_mem, "Deploy", "Deploys on Tuesdays.")
    for rel in ("tabs.md", "MEMORY.md"):
        with open(memdir / rel, "a") as f:
            f.write(f"\naws {key}\n")
    before = _store_objects()
    assert key.encode() not in before
    r = run_mem(*_WRITERS[name])
    assert r.returncode in (0, 1, 4), (name, r.returncode, r.stderr)  # refused is fine; stored is not
    assert "Traceback" not in r.stderr
    assert key.encode() not in _store_objects(), name


def _git_subcommands(line: str) -> str:
    """A logged git command line without its leading ``-c key=value`` settings."""
    words = line.split()
    while words and words[0] in ("-c", "--no-pager"):
        words = words[2:] if words[0] == "-c" else words[1:]
    return words[0] if words else ""


def test_a_remember_shaped_operation_starts_at_most_four_git_processes(memdir, tmp_path, monkeypatch):
    """Every git process a write starts is paid by every user on every write: counted with git itself on PATH
    (was 11: per written file an ls-files, a fast-import and an update-index; then mktree and commit-tree)."""
    from mem.core import gitcmd
    from mem.core.memdir.store import MemoryDir

    log = tmp_path / "git.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real_git} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    gitcmd.binary.cache_clear()
    try:
        memory = MemoryDir(str(memdir))

        def remember(name: str) -> list[str]:
            log.unlink(missing_ok=True)
            with memory.operation("remember", [name]):
                memory.write(f"{name}.md", f"---\nname: {name}\ndescription: d\ntype: user\n---\n\nbody\n")
                memory.update_index(lambda old: (old or "") + f"- [{name}]({name}.md) — about {name}\n")
            return [_git_subcommands(line) for line in log.read_text().splitlines()]

        remember("first")  # makes the store
        spawned = remember("second")
        # the sync's listing (ls-files), an update-index per file written, update-ref
        assert len(spawned) <= 4, spawned
        log.unlink()
        with memory.operation("forget", ["second"]):
            memory.delete("second.md")
            memory.update_index(lambda old: old.replace("- [second](second.md) — about second\n", ""))
        spawned = [_git_subcommands(line) for line in log.read_text().splitlines()]
        assert len(spawned) <= 4, spawned
    finally:
        monkeypatch.undo()
        gitcmd.binary.cache_clear()
