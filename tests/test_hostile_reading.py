"""Hostile files in a memory directory: FIFOs, devices, sockets, huge files, YAML bombs, links out.

Each runs ``mem`` in a process of its own (forked from the test's: tests/helpers/forked.py) with a time
limit: a command that blocks on a FIFO or reads /dev/zero without end fails by running out of time, as a
hook that never returns would break a session.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import write_memory
from helpers import forked

#: Far more than any of these commands needs on these machines, far less than a hung one takes.
LIMIT_S = 30

PROMPT = "how do staging deploys handle migration timeouts"


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return forked.run(list(args), input=input, env=dict(os.environ), timeout=LIMIT_S)


def hook_payload(cwd: Path, event: str = "UserPromptSubmit", **more) -> str:
    return json.dumps({"session_id": "0b0e7a8e-1111-2222-3333-444455556666", "cwd": str(cwd),
                       "hook_event_name": event, "transcript_path": str(cwd / "none.jsonl"), **more})


@pytest.fixture
def seeded(memdir: Path) -> Path:
    write_memory(memdir, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    (memdir / "MEMORY.md").write_text("- [staging](staging.md) — staging deploys and migration timeouts\n")
    return memdir


def make_hostile(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # what /dev/zero is
    elif kind == "link-to-device":
        os.symlink("/dev/zero", path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()


def can_mknod(tmp_path: Path) -> bool:
    try:
        os.mknod(tmp_path / "probe", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        return False
    os.unlink(tmp_path / "probe")
    return True


KINDS = ["fifo", "device", "link-to-device", "socket"]

COMMANDS = [
    ("scan",),
    ("scan", "--check"),
    ("grep", "MIGRATION"),
    ("recall", "--offline", PROMPT),
    ("index", "--check"),
    ("lint",),
    ("status",),
]


@pytest.mark.parametrize("kind", KINDS)
def test_a_special_file_named_md_is_skipped_with_a_warning_by_every_reader(seeded, tmp_path, kind):
    if kind == "device" and not can_mknod(tmp_path):
        pytest.skip("mknod needs root")
    # named to sort and scan like a memory that would be read first
    make_hostile(seeded / "a-trap.md", kind)
    for args in COMMANDS:
        r = run(*args)
        assert r.returncode in (0, 1), (args, r.stderr)
        assert "a-trap.md" in r.stderr or "a-trap.md" in r.stdout, args
        assert "Traceback" not in r.stderr
    r = run("scan", "--check")
    assert r.returncode == 1
    code = "link-out" if kind == "link-to-device" else "not-regular"  # /dev/zero is outside the directory too
    assert r.stdout.startswith(f"a-trap.md: {code}:")
    r = run("grep", "MIGRATION")
    assert r.stdout == "staging.md:Rerun with MIGRATION_TIMEOUT=900.\n"


def test_a_fifo_is_warned_about_once_per_run_in_each_run(run_mem, seeded):
    # the core says it as a Notice and the command prints it: a second run in the same process says it again
    os.mkfifo(seeded / "a-trap.md")
    for _ in range(2):
        r = run_mem("scan")
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("a-trap.md: skipped: a FIFO") == 1, r.stderr
        assert r.stderr.startswith("mem: warning: ")


def test_the_recall_hook_surfaces_the_others_past_a_fifo(seeded, tmp_path):
    os.mkfifo(seeded / "a-trap.md")
    r = run("recall", "--hook", "--offline", input=hook_payload(tmp_path, prompt=PROMPT))
    assert r.returncode == 0
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "MIGRATION_TIMEOUT=900" in context
    assert "a-trap.md" in r.stderr


def test_a_fifo_transcript_path_does_not_block_the_recall_hook(seeded, tmp_path):
    os.mkfifo(tmp_path / "t.jsonl")
    r = run("recall", "--hook", "--offline",
            input=hook_payload(tmp_path, prompt=PROMPT, transcript_path=str(tmp_path / "t.jsonl")))
    assert r.returncode == 0
    assert "MIGRATION_TIMEOUT=900" in r.stdout


def test_a_fifo_index_does_not_block_prompt_or_index(seeded, tmp_path):
    (seeded / "MEMORY.md").unlink()
    os.mkfifo(seeded / "MEMORY.md")
    r = run("prompt", "--hook", input=hook_payload(tmp_path, "SessionStart", source="startup"))
    assert r.returncode == 0
    assert "MEMORY.md" in r.stderr and "FIFO" in r.stderr
    assert json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]  # the instructions still come
    for args in (("index",), ("index", "--check"), ("status",), ("scan", "--check")):
        r = run(*args)
        assert r.returncode in (0, 1, 4), (args, r.stderr)  # 4: refused, the index being no file
        assert "Traceback" not in r.stderr


def test_a_fifo_planted_as_a_projects_settings_does_not_hang_the_hooks(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)  # the memory dir comes from the project (and its settings)
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    os.mkfifo(project / ".claude" / "settings.json")  # a cloned repository can carry these
    os.mkfifo(project / ".claude" / "settings.local.json")
    r = run("recall", "--hook", "--offline", input=hook_payload(project, prompt=PROMPT))
    assert r.returncode == 0
    r = run("prompt", "--hook", input=hook_payload(project, "SessionStart", source="startup"))
    assert r.returncode == 0 and r.stdout
    r = forked.run(["path"], env=dict(os.environ), timeout=LIMIT_S, cwd=str(project))
    assert r.returncode == 0 and r.stdout.strip().endswith("/memory/")


def test_writers_refuse_a_fifo_where_they_would_read_first(seeded, tmp_path):
    from mem.core.memdir.layout import daily_log

    log = seeded / daily_log()
    log.parent.mkdir(parents=True)
    os.mkfifo(log)
    r = run("log", "deployed the staging fix")
    assert r.returncode == 4 and "not a regular file (a FIFO)" in r.stderr
    (seeded / "MEMORY.md").unlink()
    os.mkfifo(seeded / "MEMORY.md")
    r = run("index", "--rebuild")
    assert r.returncode == 4 and "not a regular file (a FIFO)" in r.stderr
    assert stat.S_ISFIFO(os.lstat(seeded / "MEMORY.md").st_mode)


def test_a_huge_sparse_memory_is_refused_not_read(seeded):
    with open(seeded / "a-huge.md", "wb") as fh:
        fh.write(b"---\nname: huge\ndescription: huge\ntype: user\n---\n\nMIGRATION\n")
        fh.truncate(3 << 30)  # 3 GB of holes: reading it all would take seconds and gigabytes
    r = run("grep", "MIGRATION")
    assert "a-huge.md" in r.stderr and "larger than" in r.stderr
    assert "staging.md:Rerun with MIGRATION_TIMEOUT=900." in r.stdout
    for args in (("scan", "--check"), ("lint",), ("recall", "--offline", PROMPT)):
        r = run(*args)
        assert r.returncode in (0, 1), (args, r.stderr)
    r = run("scan", "--check")
    assert "a-huge.md: unreadable: larger than" in r.stdout


# --- transcripts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["/dev/zero", "fifo"])
def test_session_update_hook_ends_promptly_on_a_transcript_that_is_no_file(tmp_path, where):
    if where == "fifo":
        where = str(tmp_path / "t.jsonl")
        os.mkfifo(where)
    r = run("session", "update", "--hook",
            input=hook_payload(tmp_path, "Stop", transcript_path=where))
    assert r.returncode == 0 and r.stdout == ""
    assert "not a regular file" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run("session", "status", "--transcript", where)
    assert r.returncode == 2 and "is not a transcript: not a regular file" in r.stderr


def test_grep_over_transcripts_skips_a_fifo_and_refuses_dev_zero(tmp_path):
    d = tmp_path / "transcripts"
    d.mkdir()
    (d / "a.jsonl").write_text(json.dumps({"role": "user", "content": "deploy the staging fix"}) + "\n")
    os.mkfifo(d / "b.jsonl")
    r = run("grep", "--transcripts", "staging", str(d))
    assert r.returncode == 0 and "deploy the staging fix" in r.stdout
    assert "b.jsonl" in r.stderr and "FIFO" in r.stderr
    r = run("grep", "--transcripts", "staging", "/dev/zero")
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_an_overlong_transcript_line_is_skipped_like_a_malformed_one(tmp_path, monkeypatch):
    from mem.core import transcripts

    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "t.jsonl"
    line = json.dumps({"role": "user", "content": "first"})
    long = json.dumps({"role": "user", "content": "x" * 5000})
    path.write_text(f"{line}\n{long}\n{json.dumps({'role': 'assistant', 'content': 'third'})}\n")
    t = transcripts.read_transcript(str(path))
    assert [m.text for m in t.messages] == ["first", "third"]
    assert [m.line for m in t.messages] == [1, 3]
    assert t.skipped_lines == 1


# --- YAML ----------------------------------------------------------------------------------------

ALIAS_BOMB = """---
name: bomb
description: staging deploys laugh
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
type:
  [*g,*g,*g,*g,*g,*g,*g,*g,*g]
---

Body.
"""


#: The same bomb in the description, which recall ranks by and the manifest prints.
DESCRIPTION_BOMB = ALIAS_BOMB.replace("description: staging deploys laugh\n", "").replace(
    "type:\n  [*g", "type: user\ndescription:\n  [*g")


def deep(n: int) -> str:
    return f"---\nname: deep\ndescription: staging deploys nest\ntype:\n  {'[' * n}{']' * n}\n---\n\nBody.\n"


@pytest.mark.parametrize("text", [ALIAS_BOMB, DESCRIPTION_BOMB, deep(900), deep(5000)],
                         ids=["alias-bomb", "alias-bomb-description", "deep-900", "deep-5000"])
def test_one_hostile_frontmatter_is_a_warning_for_that_file_only(seeded, tmp_path, text):
    (seeded / "hostile.md").write_text(text)
    r = run("scan")
    assert r.returncode == 0, r.stderr
    assert "staging.md" in r.stdout and "hostile.md" in r.stdout
    r = run("scan", "--check")
    assert r.returncode == 1
    assert "hostile.md: broken-frontmatter:" in r.stdout
    r = run("recall", "--offline", PROMPT)
    assert r.returncode == 0 and "MIGRATION_TIMEOUT=900" in r.stdout
    r = run("recall", "--hook", "--offline", input=hook_payload(tmp_path, prompt=PROMPT))
    assert r.returncode == 0 and "MIGRATION_TIMEOUT=900" in r.stdout
    r = run("index", "--rebuild", "--dry-run")
    assert r.returncode in (0, 1), r.stderr
    r = run("dream", "--offline", "--dry-run", "--force")
    assert r.returncode in (0, 1), r.stderr


def test_frontmatter_limits_in_process():
    from mem.core.memdir.frontmatter import parse_frontmatter

    from mem.core.memdir.frontmatter import YamlError, load_yaml

    with pytest.raises(YamlError, match="aliases are expanded"):
        load_yaml(ALIAS_BOMB.split("---\n")[1])
    with pytest.raises(YamlError, match="levels deep"):
        load_yaml(deep(100).split("---\n")[1])
    with pytest.raises(YamlError):
        load_yaml("loop: &l [*l]\n")  # it refers to itself: endless once expanded
    # Claude Code's retry (re-quoting values with YAML indicators) leaves the bomb a broken frontmatter
    assert parse_frontmatter(ALIAS_BOMB).error
    assert parse_frontmatter(deep(100)).error
    fine = parse_frontmatter("---\nname: x\nmetadata:\n  type: user\n  tags: [a, b, {c: [d]}]\n---\nbody\n")
    assert fine.error is None and fine.data["metadata"]["tags"] == ["a", "b", {"c": ["d"]}]


# --- links out -----------------------------------------------------------------------------------

SECRET_OUTSIDE = "---\nname: theirs\ndescription: staging deploys migration timeouts\ntype: project\n---\n\nOUTSIDE-ONLY-TEXT\n"


def test_a_topic_file_linked_out_is_never_surfaced_and_is_reported(seeded, tmp_path):
    outside = tmp_path / "elsewhere" / "theirs.md"
    outside.parent.mkdir()
    outside.write_text(SECRET_OUTSIDE)
    (seeded / "linked.md").symlink_to(outside)
    (seeded / "inside-alias.md").symlink_to(seeded / "staging.md")  # a link inside keeps working
    r = run("recall", "--hook", "--offline", input=hook_payload(tmp_path, prompt=PROMPT))
    assert r.returncode == 0
    assert "OUTSIDE-ONLY-TEXT" not in r.stdout
    assert "MIGRATION_TIMEOUT=900" in r.stdout
    for args in (("recall", "--offline", PROMPT), ("grep", "OUTSIDE"), ("scan",)):
        r = run(*args)
        assert "OUTSIDE-ONLY-TEXT" not in r.stdout and "linked.md" not in r.stdout, args
    assert "inside-alias.md" in run("scan").stdout
    r = run("scan", "--check", "--json")
    assert r.returncode == 1
    rows = {row["relpath"]: [w["code"] for w in row["warnings"]] for row in json.loads(r.stdout)}
    assert rows["linked.md"] == ["link-out"]
    assert "link-out" not in rows["inside-alias.md"]
    r = run("forget", "--yes", "linked.md")
    assert r.returncode == 0, r.stderr
    assert not os.path.lexists(seeded / "linked.md") and outside.read_text() == SECRET_OUTSIDE
    assert (seeded / "inside-alias.md").is_symlink()


def test_an_index_linked_out_is_not_injected_and_is_reported(seeded, tmp_path):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- [forged](staging.md) — OUTSIDE-ONLY-TEXT\n")
    (seeded / "MEMORY.md").unlink()
    (seeded / "MEMORY.md").symlink_to(outside)
    r = run("prompt", "--hook", input=hook_payload(tmp_path, "SessionStart", source="startup"))
    assert r.returncode == 0
    assert "OUTSIDE-ONLY-TEXT" not in r.stdout
    assert "outside" in r.stderr
    r = run("recall", "--hook", "--offline", input=hook_payload(tmp_path, prompt=PROMPT))
    assert r.returncode == 0 and "OUTSIDE-ONLY-TEXT" not in r.stdout and "MIGRATION_TIMEOUT=900" in r.stdout
    r = run("scan", "--check")
    assert r.returncode == 1 and "MEMORY.md: link-out:" in r.stdout
    r = run("forget", "--yes", "MEMORY.md")
    assert r.returncode == 0, r.stderr
    assert not os.path.lexists(seeded / "MEMORY.md") and outside.read_text().endswith("OUTSIDE-ONLY-TEXT\n")
    assert (seeded / "staging.md").exists()
