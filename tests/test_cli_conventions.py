"""The conventions of mem's command line, checked with the real ``mem`` executable.

Global options before or after the command, a missing --dir as an error for readers,
one-line usage errors with suggestions, ``mem help``, and --help summaries that fit.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import write_memory

READERS = [
    ["scan"], ["scan", "--check"], ["scan", "--secrets"], ["index", "--check"], ["index"], ["lint"],
    ["recall", "--offline", "tabs"], ["grep", "tabs"], ["status"], ["verify"], ["history"], ["export"],
]


@pytest.fixture
def two_dirs(tmp_path, monkeypatch):
    """Two memory directories, each with one memory; MEM_DIR names neither."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    dirs = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        write_memory(d, f"{name}.md", name=f"in-{name}", description=f"memory {name}")
        dirs.append(d)
    return dirs


def one_error_line(r) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.startswith("mem: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Usage:" not in r.stderr
    return r.stderr


# --- (a) global options before or after the command ------------------------------------------------

def test_dir_before_or_after_the_command(run_mem, two_dirs):
    a, b = two_dirs
    before, after = run_mem("--dir", str(a), "scan"), run_mem("scan", "--dir", str(a))
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert before.stdout == after.stdout and "a.md" in before.stdout
    # --dir=X form, and the command's own option wins over the one given before it.
    assert "b.md" in run_mem(f"--dir={a}", "scan", "--dir", str(b)).stdout
    assert "a.md" not in run_mem(f"--dir={a}", "scan", "--dir", str(b)).stdout
    # Before the command it still wins over MEM_DIR, as after it.
    assert "a.md" in run_mem("--dir", str(a), "scan", env={"MEM_DIR": str(b)}).stdout


def test_json_before_or_after_the_command(run_mem, two_dirs):
    a, _ = two_dirs
    before, after = run_mem("--json", "--dir", str(a), "scan"), run_mem("scan", "--json", "--dir", str(a))
    assert before.stdout == after.stdout and json.loads(before.stdout)[0]["relpath"] == "a.md"
    # The command's own format wins: JSON Lines, not "mutually exclusive".
    r = run_mem("--json", "scan", "--jsonl", "--dir", str(a))
    assert r.returncode == 0 and json.loads(r.stdout.splitlines()[0])["relpath"] == "a.md"


def test_global_options_reach_a_subcommand_of_a_group(run_mem, tmp_path):
    db = str(tmp_path / "team.db")
    assert run_mem("team", "token", "add", "--repo", "acme/widgets", "--db", db).returncode == 0
    before, after = run_mem("--json", "team", "token", "list", "--db", db), run_mem("team", "token", "list", "--db", db, "--json")
    assert before.returncode == 0 and before.stdout == after.stdout
    assert json.loads(before.stdout)[0]["repos"] == ["acme/widgets"]


def test_a_global_option_the_command_lacks_is_a_usage_error(run_mem, tmp_path):
    err = one_error_line(run_mem("--dir", str(tmp_path), "hooks", "status"))
    assert "--dir does not apply to 'mem hooks status'" in err


def test_debug_after_the_command(run_mem, two_dirs):
    a, _ = two_dirs
    (a / "MEMORY.md").mkdir()  # an unexpected failure: exit 70, a traceback only with --debug
    assert "Traceback" not in run_mem("index", "--check", "--dir", str(a)).stderr
    for args in (["--debug", "index", "--check"], ["index", "--check", "--debug"], ["index", "--debug", "--check"]):
        r = run_mem(*args, "--dir", str(a))
        assert r.returncode == 70 and "Traceback" in r.stderr, args
    assert "--debug" in run_mem("team", "token", "list", "--help").stdout


# --- (b) a missing or unusable --dir is an error for a command that reads it --------------------------

@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a))
def test_a_missing_dir_is_an_error_for_readers(run_mem, tmp_path, args):
    missing = str(tmp_path / "typo")
    err = one_error_line(run_mem(*args, "--dir", missing))
    assert f"memory directory {missing}/ (from --dir) does not exist" in err
    err = one_error_line(run_mem(*args, env={"MEM_DIR": missing}))
    assert "(from MEM_DIR) does not exist" in err
    assert not os.path.exists(missing)


def test_a_file_named_as_the_dir_is_an_error(run_mem, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    assert "is not a directory" in one_error_line(run_mem("scan", "--check", "--dir", str(f)))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_an_unreadable_dir_is_an_error(run_mem, tmp_path):
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0)
    try:
        assert "is not readable" in one_error_line(run_mem("lint", "--dir", str(d)))
    finally:
        d.chmod(0o700)


def test_writers_still_create_the_dir(run_mem, tmp_path):
    new = tmp_path / "fresh"
    r = run_mem("log", "--dir", str(new), "first note")
    assert r.returncode == 0, r.stderr
    assert list((new / "logs").rglob("*.md"))
    assert run_mem("scan", "--dir", str(new)).returncode == 0


def test_a_hook_with_a_missing_dir_stays_silent(run_mem, tmp_path):
    payload = json.dumps({"prompt": "tabs?", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "session_id": "s1"})
    for args, env in ((["recall", "--hook", "--dir", str(tmp_path / "typo")], {}),
                      (["recall", "--hook"], {"MEM_DIR": str(tmp_path / "typo")}),
                      (["--dir", str(tmp_path / "typo"), "recall", "--hook"], {})):
        r = run_mem(*args, input=payload, env={"ANTHROPIC_API_KEY": "", **env})
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), args


# --- (c) one-line usage errors, with suggestions, never echoing a secret -----------------------------

def test_a_misspelled_command_gets_a_suggestion(run_mem):
    err = one_error_line(run_mem("scna"))
    assert "No such command 'scna'. Did you mean 'scan'?" in err and "Try 'mem --help'." in err
    assert "Did you mean 'sync'?" in one_error_line(run_mem("team", "snyc"))
    assert err.count("Did you mean") == 1


def test_a_misspelled_option_gets_a_suggestion(run_mem):
    err = one_error_line(run_mem("scan", "--jsn"))
    assert "No such option '--jsn'" in err and "'--json'" in err and "Try 'mem scan --help'." in err


def test_bad_values_are_one_line(run_mem):
    assert "Invalid value for '--layout'" in one_error_line(run_mem("scan", "--layout", "nope"))
    assert "Missing command" in one_error_line(run_mem("--debug"))


def test_a_secret_is_never_echoed(run_mem):
    key = "ghp_" + "x1Y2" * 9  # a GitHub token the secret scanner knows
    for args in ([key], ["scan", "--layout", key], ["--layout", key, "scan"]):
        err = one_error_line(run_mem(*args))
        assert key not in err and key[:20] not in err, args


def test_bare_mem_still_prints_the_help(run_mem):
    r = run_mem()
    assert r.returncode == 2 and "Usage: mem [OPTIONS] COMMAND" in r.stdout + r.stderr


# --- (d) mem help ------------------------------------------------------------------------------------

@pytest.mark.parametrize("words", [[], ["scan"], ["team"], ["team", "sync"], ["team", "token", "add"], ["help"]])
def test_help_is_the_same_as_dash_dash_help(run_mem, words):
    a, b = run_mem("help", *words, env={"COLUMNS": "80"}), run_mem(*words, "--help", env={"COLUMNS": "80"})
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("Usage: mem")


def test_help_of_an_unknown_command(run_mem):
    assert "Did you mean 'scan'?" in one_error_line(run_mem("help", "scna"))
    assert "No such command 'x'" in one_error_line(run_mem("help", "scan", "x"))


# --- (e) summaries that fit -------------------------------------------------------------------------

def test_every_summary_is_whole_on_one_line_at_80_columns(run_mem):
    out = run_mem("--help", env={"COLUMNS": "80"}).stdout
    rows = out.split("Commands:\n", 1)[1].splitlines()
    names = [row.split()[0] for row in rows]
    listed = run_mem("help", env={"COLUMNS": "80"}).stdout.split("Commands:\n", 1)[1].splitlines()
    assert len(rows) == len(listed) >= 25
    for row in rows:
        assert row.startswith("  ") and not row.startswith("   "), f"a wrapped summary: {row!r}"
        assert len(row) <= 80 and not row.endswith("...") and row.endswith("."), row
    assert "scan" in names and "help" in names
