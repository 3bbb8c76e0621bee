"""mem/env.py: one run's surroundings, built by the CLI and handed down (no module globals)."""

from __future__ import annotations

import io

from mem.env import Env, debug_enabled


def test_debug_is_one_rule():
    assert not debug_enabled({}) and not debug_enabled({"MEM_DEBUG": "0"}) and not debug_enabled({"MEM_DEBUG": ""})
    assert debug_enabled({"MEM_DEBUG": "1"}) and debug_enabled({"MEM_DEBUG": "yes"})
    assert Env({"MEM_DEBUG": "1"}, cwd="/").debug
    assert not Env({}, cwd="/").debug and Env({}, cwd="/", debug_flag=True).debug
    from mem.core.jobs import llm

    assert not hasattr(llm, "debug_enabled")  # core reads no debug rule: it takes a log from the CLI


def test_colour_only_at_a_terminal_without_no_color():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Env({}, stdout=Tty(), cwd="/").color
    assert not Env({"NO_COLOR": "1"}, stdout=Tty(), cwd="/").color
    assert not Env({}, stdout=io.StringIO(), cwd="/").color


def test_a_fake_clock_goes_in():
    env = Env({}, cwd="/", clock=lambda: 1_700_000_000.0, monotonic=lambda: 5.0)
    assert env.clock() == 1_700_000_000.0 and env.monotonic() == 5.0


def test_debug_of_one_run_does_not_reach_the_next(run_mem, memdir):
    (memdir / "postgres.md").write_text("---\nname: postgres\ndescription: the database is postgres 16\n"
                                        "type: project\n---\n\nPostgres 16.\n")
    first = run_mem("recall", "--offline", "--debug", "which database do we use, postgres?")
    assert "route=offline" in first.stderr
    second = run_mem("recall", "--offline", "which database do we use, postgres?")
    assert second.returncode == first.returncode and "route=" not in second.stderr
    third = run_mem("--debug", "recall", "--offline", "which database do we use, postgres?")
    assert "route=offline" in third.stderr
