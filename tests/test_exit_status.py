"""Exit codes are defined once (mem.core.errors.ExitCode) and mean the same everywhere."""

from __future__ import annotations

from click.testing import CliRunner

from mem.cli import cli
from mem.core import errors
from mem.core.errors import ExitCode


def test_codes_are_the_documented_ones():
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0, "NOT_FOUND": 1, "USAGE": 2, "CONFIG": 3, "REFUSED": 4, "LOCKED": 5, "BUDGET": 6,
        "STORAGE": 74, "FAILURE": 70, "INTERRUPTED": 130, "BROKEN_PIPE": 141,
    }
    assert ExitCode.CHECK_FAILED is ExitCode.NOT_FOUND


def test_each_error_class_carries_its_code():
    assert errors.UsageError("x").exit_code == 2
    assert errors.NotFoundError("x").exit_code == 1
    assert errors.ConfigError("x").exit_code == 3
    assert errors.RefusedError("x").exit_code == 4
    assert errors.PathEscapeError("x").exit_code == 4
    assert errors.SecretError("a.md", "github-pat", "GitHub PAT").exit_code == 4
    assert errors.LockedError("x").exit_code == 5
    assert errors.MemError("x").exit_code == 70


def test_secret_error_message_names_rule_and_file_only():
    msg = str(errors.SecretError("notes/a.md", "github-pat", "GitHub PAT"))
    assert msg == "refused to write notes/a.md: it contains a secret (GitHub PAT, rule github-pat)"


def test_core_errors_become_one_line_and_code(memdir):
    runner = CliRunner()
    r = runner.invoke(cli, ["index"], catch_exceptions=False)
    assert r.exit_code == 1
    assert r.stdout == ""
    assert r.stderr.startswith("mem: error: no index at ") and r.stderr.count("\n") == 1


def test_usage_error_is_2(memdir):
    r = CliRunner().invoke(cli, ["index", "--dry-run"], catch_exceptions=False)
    assert r.exit_code == 2 and "--dry-run goes with --rebuild" in r.stderr


def test_hook_flag_turns_every_failure_into_exit_0(memdir):
    # A usage error in hook mode must still exit 0 quietly.
    r = CliRunner().invoke(cli, ["recall", "--hook", "--no-such-option"], input="{}", catch_exceptions=False)
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr.startswith("mem: hook: ") and r.stderr.count("\n") == 1


def test_hook_mode_comes_only_from_the_commands_own_option(memdir):
    # scan takes no --hook: the word is an unknown option, not hook mode; grep's -e takes it as a pattern.
    assert CliRunner().invoke(cli, ["scan", "--hook"], catch_exceptions=False).exit_code == 2
    assert CliRunner().invoke(cli, ["grep", "-e", "--hook"], catch_exceptions=False).exit_code == 1
