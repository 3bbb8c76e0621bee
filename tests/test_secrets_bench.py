"""The goal on the labelled set (tests/fixtures/secrets-bench): every secret caught, no lookalike flagged.

bench/secret_detection.py prints the same figures per kind into bench/RESULTS.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mem.core.guards.secrets import REDACTED, first_secret, redact, scan

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets-bench"))
from secrets_bench import cases  # noqa: E402 - the labelled set, generated

CASES = cases()
SECRETS = [c for c in CASES if c.is_secret]
LOOKALIKES = [c for c in CASES if not c.is_secret]


def test_the_set_is_as_large_as_the_goal_says():
    assert len(SECRETS) >= 40
    assert len({c.kind for c in SECRETS}) >= 12
    assert len(LOOKALIKES) >= 40
    assert cases() == CASES  # deterministic


@pytest.mark.parametrize("case", SECRETS, ids=[f"{c.kind}-{i}" for i, c in enumerate(SECRETS)])
def test_every_secret_is_caught_by_its_rule_and_redacted(case):
    assert case.kind in [f.rule_id for f in scan(case.text)]
    assert first_secret(case.text) is not None
    redacted = redact(case.text)
    assert case.secret not in redacted
    assert REDACTED in redacted
    assert scan(redacted) == []


@pytest.mark.parametrize("case", LOOKALIKES, ids=[f"{c.kind}-{i}" for i, c in enumerate(LOOKALIKES)])
def test_no_lookalike_is_flagged(case):
    assert scan(case.text) == []
    assert redact(case.text) == case.text


def test_redaction_keeps_the_context_another_rule_needs():
    # The access key id and its secret key on one line: both go, although the
    # secret key is recognised by the id next to it.
    [case] = [c for c in SECRETS if c.text.startswith("Access key ID,")]
    assert redact(case.text) == "Access key ID,Secret access key\n[REDACTED],[REDACTED]\n"


def test_the_fixture_holds_no_secret():
    source = (Path(__file__).parent / "fixtures" / "secrets-bench" / "secrets_bench.py").read_text(encoding="utf-8")
    assert scan(source) == []
