"""From an empty HOME, in a project no client has opened: the first write and every history command work."""

from __future__ import annotations

import subprocess


def test_first_write_and_history_on_a_fresh_machine(run_mem, isolated_env, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert not (isolated_env / ".claude").exists()
    run = lambda *a: run_mem(*a, cwd=str(project))  # noqa: E731

    for args in (("history",), ("status",), ("undo", "--dry-run")):
        r = run(*args)
        assert "Invalid path" not in r.stderr and r.returncode in (0, 1), (args, r.stderr)
    r = run("remember", "--type", "project", "--name", "freeze", "--description", "release freeze",
            "The release freeze starts on Friday.")
    assert r.returncode == 0, r.stderr
    memdir = isolated_env / ".claude" / "projects"
    saved = list(memdir.rglob("freeze.md"))
    assert len(saved) == 1 and "Friday" in saved[0].read_text()
    r = run("history")
    assert r.returncode == 0 and "remember freeze" in r.stdout, r.stdout + r.stderr
    assert run("log", "first day").returncode == 0
    r = run("undo")
    assert r.returncode == 0, r.stderr
    assert run("status").returncode == 0
