"""Usage errors never repeat a secret given as an argument (the real ``mem``, stderr checked)."""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets-bench"))
from secrets_bench import pem  # noqa: E402 - fake keys, generated

RNG = random.Random(2104)
KEY = pem(RNG).replace("\n", "")  # one argument, as a shell paste of a key often arrives
KEY_BODY = KEY.split("-----")[2][:40]
TOKEN = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
OFFLINE = ("--offline", "--type", "user", "--description", "how the user works")


def test_text_that_starts_with_a_dash_is_not_echoed_by_the_option_parser(run_mem, memdir):
    r = run_mem("remember", KEY)
    assert r.returncode == 2
    assert KEY_BODY not in r.stderr and "BEGIN" not in r.stderr
    assert "put -- before text that starts with a dash" in r.stderr
    assert list(memdir.iterdir()) == []


def test_a_mistyped_option_is_still_named(run_mem, memdir):
    r = run_mem("remember", "--nmae", "x", "text")
    assert r.returncode == 2
    assert "--nmae" in r.stderr and "--name" in r.stderr


def test_a_secret_as_an_option_value_or_an_extra_argument_is_redacted(run_mem, memdir):
    for args in (("remember", "--type", TOKEN, "text"), ("scan", "extra", TOKEN), ("remember", "--type", KEY, "text")):
        r = run_mem(*args)
        assert r.returncode == 2, args
        assert TOKEN not in r.stderr and KEY_BODY not in r.stderr, args
        assert "[REDACTED]" in r.stderr, args


def test_a_hook_usage_error_does_not_echo_it_either(run_mem, memdir):
    r = run_mem("recall", "--hook", KEY, input="{}")
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr.startswith("mem: hook:") and KEY_BODY not in r.stderr


def test_a_secret_name_is_refused_before_any_file_message_or_history_holds_it(run_mem, memdir):
    r = run_mem("remember", *OFFLINE, "--name", f"deploy token {TOKEN}", "the deploy token is in the vault")
    assert r.returncode == 4
    assert "--name contains a secret (GitHub PAT, rule github-pat)" in r.stderr
    assert TOKEN.lower()[4:] not in r.stderr.lower()  # nor its slug
    assert list(memdir.iterdir()) == []
    history = run_mem("history", "--json")
    assert TOKEN.lower()[4:] not in history.stdout.lower()
    r = run_mem("remember", *OFFLINE, "--name", "deploy", "--description", f"uses {TOKEN}", "text")
    assert r.returncode == 4 and "--description contains a secret" in r.stderr and TOKEN not in r.stderr


def test_text_that_starts_with_a_dash_is_saved_after_double_dash_or_from_stdin(run_mem, memdir):
    r = run_mem("remember", *OFFLINE, "--name", "verbose tests", "--json", "--", "-v prints each query")
    assert r.returncode == 0, r.stderr
    [path] = json.loads(r.stdout)["paths"]
    assert Path(path).read_text().endswith("\n-v prints each query\n")
    r = run_mem("remember", *OFFLINE, "--name", "quiet tests", "--json", "-", input="-q hides the progress bar\n")
    assert r.returncode == 0, r.stderr
    [path] = json.loads(r.stdout)["paths"]
    assert Path(path).read_text().endswith("\n-q hides the progress bar\n")
