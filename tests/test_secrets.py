"""The secret gate (reference §8.6): 36 ported gitleaks rules, then ours.

The labelled set of tests/fixtures/secrets-bench holds the cases of our rules
(tests/test_secrets_bench.py); its texts join the properties checked here.

Every secret here is generated at test time from pieces, so this file holds
nothing a secret scanner would flag (``test_own_sources_are_clean``).
"""

from __future__ import annotations

import functools
import random
import re
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem.core.guards import secrets
from mem.core.guards.secrets import SecretFinding, first_secret, redact, rule_label, scan

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES / "secrets-bench"))
from secrets_bench import cases  # noqa: E402 - the labelled set, generated

BENCH_TEXTS = [case.text for case in cases()]

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
LETTERS = UPPER + LOWER
ALNUM = LETTERS + DIGITS
HEX = "0123456789abcdef"
MIXED_HEX = HEX + "ABCDEF"
B64 = ALNUM + "+/"
WORD = ALNUM + "_"

ANT_API = "-".join(["sk", "ant", "api"]) + "03-"
ANT_ADMIN = "-".join(["sk", "ant", "admin01"]) + "-"

RULE_IDS = [
    "aws-access-token",
    "gcp-api-key",
    "azure-ad-client-secret",
    "digitalocean-pat",
    "digitalocean-access-token",
    "anthropic-api-key",
    "anthropic-admin-api-key",
    "openai-api-key",
    "huggingface-access-token",
    "github-pat",
    "github-fine-grained-pat",
    "github-app-token",
    "github-oauth",
    "github-refresh-token",
    "gitlab-pat",
    "gitlab-deploy-token",
    "slack-bot-token",
    "slack-user-token",
    "slack-app-token",
    "twilio-api-key",
    "sendgrid-api-token",
    "npm-access-token",
    "pypi-upload-token",
    "databricks-api-token",
    "hashicorp-tf-api-token",
    "pulumi-api-token",
    "postman-api-token",
    "grafana-api-key",
    "grafana-cloud-api-token",
    "grafana-service-account-token",
    "sentry-user-token",
    "sentry-org-token",
    "stripe-access-token",
    "shopify-access-token",
    "shopify-shared-secret",
    "private-key",
]
#: Ours, after the reference's 36 (issue 21).
OUR_IDS = [
    "aws-secret-access-key",
    "slack-webhook-url",
    "jwt",
    "url-password",
    "azure-storage-account-key",
    "azure-sas-token",
    "docker-pat",
    "discord-webhook-url",
    "datadog-api-key",
    "twilio-auth-token",
    "basic-auth-header",
    "telegram-bot-token",
    "password-statement",
]
ALL_IDS = RULE_IDS + OUR_IDS


def ids(text: str) -> list[str]:
    return [f.rule_id for f in scan(text)]


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def pem(rng: random.Random, kind: str = "RSA PRIVATE KEY", body_len: int = 192) -> str:
    body = pick(rng, B64, body_len)
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----"


def sentry_org(rng: random.Random, marker: str = "LCJyZWdpb25fdXJs") -> str:
    b64 = ALNUM + "+/"
    return (
        "sntrys_" + "eyJpYXQiO" + pick(rng, b64, 24) + marker
        + pick(rng, b64, 30) + "=_" + pick(rng, b64, 43)
    )


# Each generator returns secrets that match exactly their rule. The secret is
# the text the rule captures (group 1, or the whole match).
GENERATORS = {
    "aws-access-token": [
        lambda r: "AKIA" + pick(r, UPPER + "234567", 16),
        lambda r: "ASIA" + pick(r, UPPER, 16),
        lambda r: "A3T" + "X" + pick(r, UPPER + "234567", 16),
        lambda r: "ABIA" + pick(r, "234567", 16),
        lambda r: "ACCA" + pick(r, UPPER, 16),
    ],
    "gcp-api-key": [lambda r: "AIza" + pick(r, ALNUM + "_-", 34) + "x"],
    "azure-ad-client-secret": [
        lambda r: pick(r, ALNUM, 3) + "8Q~" + pick(r, ALNUM + "_~.-", 31),
        lambda r: pick(r, ALNUM, 3) + "1Q~" + pick(r, ALNUM, 34),
    ],
    "digitalocean-pat": [lambda r: "dop_v1_" + pick(r, HEX, 64)],
    "digitalocean-access-token": [lambda r: "doo_v1_" + pick(r, HEX, 64)],
    "anthropic-api-key": [lambda r: ANT_API + pick(r, ALNUM + "_-", 93) + "AA"],
    "anthropic-admin-api-key": [lambda r: ANT_ADMIN + pick(r, ALNUM + "_-", 93) + "AA"],
    "openai-api-key": [
        lambda r: "sk-proj-" + pick(r, ALNUM + "_-", 74) + "T3BlbkFJ" + pick(r, ALNUM + "_-", 73) + "z",
        lambda r: "sk-svcacct-" + pick(r, ALNUM, 58) + "T3BlbkFJ" + pick(r, ALNUM, 58),
        lambda r: "sk-" + pick(r, ALNUM, 20) + "T3BlbkFJ" + pick(r, ALNUM, 20),
    ],
    "huggingface-access-token": [lambda r: "hf_" + pick(r, LETTERS, 34)],
    "github-pat": [lambda r: "ghp_" + pick(r, ALNUM, 36)],
    "github-fine-grained-pat": [lambda r: "github_pat_" + pick(r, WORD, 82)],
    "github-app-token": [
        lambda r: "ghu_" + pick(r, ALNUM, 36),
        lambda r: "ghs_" + pick(r, ALNUM, 36),
    ],
    "github-oauth": [lambda r: "gho_" + pick(r, ALNUM, 36)],
    "github-refresh-token": [lambda r: "ghr_" + pick(r, ALNUM, 36)],
    "gitlab-pat": [lambda r: "glpat-" + pick(r, WORD + "-", 20)],
    "gitlab-deploy-token": [lambda r: "gldt-" + pick(r, WORD + "-", 20)],
    "slack-bot-token": [
        lambda r: "xoxb-" + pick(r, DIGITS, 10) + "-" + pick(r, DIGITS, 13) + "-" + pick(r, ALNUM, 24),
        lambda r: "xoxb-" + pick(r, DIGITS, 12) + "-" + pick(r, DIGITS, 11),
    ],
    "slack-user-token": [
        lambda r: "xoxp-" + "-".join(pick(r, DIGITS, 11) for _ in range(3)) + "-" + pick(r, ALNUM, 32),
        lambda r: "xoxe-" + "-".join(pick(r, DIGITS, 10) for _ in range(3)) + "-" + pick(r, ALNUM + "-", 27) + "z",
    ],
    "slack-app-token": [
        lambda r: "xapp-1-" + pick(r, UPPER + DIGITS, 11) + "-" + pick(r, DIGITS, 13) + "-" + pick(r, LOWER + DIGITS, 64),
        # The rule is case-insensitive.
        lambda r: "XAPP-2-" + pick(r, ALNUM, 9) + "-" + pick(r, DIGITS, 4) + "-" + pick(r, ALNUM, 40),
    ],
    "twilio-api-key": [lambda r: "SK" + pick(r, MIXED_HEX, 32)],
    "sendgrid-api-token": [lambda r: "SG." + pick(r, ALNUM + "=_-.", 65) + "x"],
    "npm-access-token": [lambda r: "npm_" + pick(r, ALNUM, 36)],
    "pypi-upload-token": [lambda r: "pypi-" + "AgEIcHlwaS5vcmc" + pick(r, WORD + "-", 70)],
    "databricks-api-token": [
        lambda r: "dapi" + pick(r, HEX, 32),
        lambda r: "dapi" + pick(r, HEX, 32) + "-2",
    ],
    "hashicorp-tf-api-token": [
        lambda r: pick(r, ALNUM, 14) + ".atlasv1." + pick(r, ALNUM + "-_=", 64),
    ],
    "pulumi-api-token": [lambda r: "pul-" + pick(r, HEX, 40)],
    "postman-api-token": [
        lambda r: "PMAK-" + pick(r, MIXED_HEX, 24) + "-" + pick(r, MIXED_HEX, 34),
    ],
    "grafana-api-key": [lambda r: "eyJrIjoi" + pick(r, B64, 90) + "=="],
    "grafana-cloud-api-token": [lambda r: "glc_" + pick(r, B64, 48) + "="],
    "grafana-service-account-token": [
        lambda r: "glsa_" + pick(r, ALNUM, 32) + "_" + pick(r, MIXED_HEX, 8),
    ],
    "sentry-user-token": [lambda r: "sntryu_" + pick(r, HEX, 64)],
    "sentry-org-token": [
        sentry_org,
        lambda r: sentry_org(r, "InJlZ2lvbl91cmwi"),
        lambda r: sentry_org(r, "cmVnaW9uX3VybCI6"),
    ],
    "stripe-access-token": [
        lambda r: "sk_" + "live_" + pick(r, ALNUM, 24),
        lambda r: "rk_" + "test_" + pick(r, ALNUM, 10),
        lambda r: "sk_" + "prod_" + pick(r, ALNUM, 99),
    ],
    "shopify-access-token": [lambda r: "shpat_" + pick(r, MIXED_HEX, 32)],
    "shopify-shared-secret": [lambda r: "shpss_" + pick(r, MIXED_HEX, 32)],
    "private-key": [
        pem,
        lambda r: pem(r, "OPENSSH PRIVATE KEY", 300),
        lambda r: pem(r, "PGP PRIVATE KEY BLOCK", 64),
        # The rule is case-insensitive.
        lambda r: pem(r, "ec private key", 100),
    ],
}

# How a secret sits in a memory: each template ends the secret with a
# delimiter the terminated rules accept.
CONTEXTS = [
    "{s}",
    "{s}\n",
    "token: {s}\nnext line\n",
    'export KEY="{s}"\n',
    "key = '{s}';",
    '{{"env": {{"KEY": "{s}\\n"}}}}',
    "see `{s}` in the logs",
    "- {s}\r\n",
]


def positives() -> list[tuple[str, str]]:
    rng = random.Random(8606)
    return [
        (rule_id, gen(rng))
        for rule_id, gens in GENERATORS.items()
        for gen in gens
        for _ in range(3)
    ]


POSITIVES = positives()


def near_misses() -> list[tuple[str, str]]:
    """Texts that almost hold a secret; ``scan`` must find nothing in them."""
    r = random.Random(1011)
    return [
        ("aws-access-token", "AKIA" + pick(r, UPPER, 15)),
        ("aws-access-token", "AKIA" + pick(r, LOWER, 16)),
        ("aws-access-token", "AKIA" + "ABCDEFGH" + "01890189"),  # 0, 1, 8, 9 are not base32
        ("aws-access-token", "x" + "AKIA" + pick(r, UPPER, 16)),  # no \b before
        ("aws-access-token", "AKIA" + pick(r, UPPER, 16) + "_"),  # no \b after
        ("gcp-api-key", "AIza" + pick(r, ALNUM, 34) + " "),
        ("gcp-api-key", "AIza" + pick(r, ALNUM, 36) + " "),
        ("gcp-api-key", "AIza" + pick(r, ALNUM, 35) + "."),  # "." does not terminate
        ("azure-ad-client-secret", " " + pick(r, LOWER, 3) + "xQ~" + pick(r, ALNUM, 32) + " "),
        ("azure-ad-client-secret", " " + pick(r, LOWER, 3) + "8Q~" + pick(r, ALNUM, 30) + " "),
        ("azure-ad-client-secret", " " + pick(r, LOWER, 3) + "8Q~" + pick(r, ALNUM, 35) + " "),
        ("azure-ad-client-secret", "x" + pick(r, LOWER, 3) + "8Q~" + pick(r, ALNUM, 32) + " "),
        ("digitalocean-pat", "dop_v1_" + pick(r, HEX, 63)),
        ("digitalocean-pat", "dop_v1_" + pick(r, "ABCDEF", 64)),
        ("digitalocean-access-token", "doo_v1_" + pick(r, HEX, 65)),
        ("anthropic-api-key", ANT_API + pick(r, ALNUM, 92) + "AA"),
        ("anthropic-api-key", ANT_API + pick(r, ALNUM, 93) + "AB"),
        ("anthropic-admin-api-key", ANT_ADMIN.replace("01", "02") + pick(r, ALNUM, 93) + "AA"),
        ("openai-api-key", "sk-" + pick(r, ALNUM, 20) + "T3BlbkFX" + pick(r, ALNUM, 20)),
        ("openai-api-key", "sk-" + pick(r, ALNUM, 19) + "T3BlbkFJ" + pick(r, ALNUM, 20)),
        ("openai-api-key", "sk-proj-" + pick(r, ALNUM, 73) + "T3BlbkFJ" + pick(r, ALNUM, 74)),
        ("huggingface-access-token", "hf_" + pick(r, LETTERS, 33)),
        ("huggingface-access-token", "hf_" + pick(r, LETTERS, 33) + "7"),
        ("github-pat", "ghp_" + pick(r, ALNUM, 35)),
        ("github-pat", "ghp_" + pick(r, ALNUM, 35) + "-" + pick(r, ALNUM, 10)),
        ("github-fine-grained-pat", "github_pat_" + pick(r, WORD, 81) + " "),
        ("github-app-token", "ghx_" + pick(r, ALNUM, 36)),
        ("github-oauth", "gho_" + pick(r, ALNUM, 35)),
        ("github-refresh-token", "ghr " + pick(r, ALNUM, 36)),
        ("gitlab-pat", "glpat-" + pick(r, ALNUM, 19)),
        ("gitlab-deploy-token", "gldt-" + pick(r, ALNUM, 19) + "."),
        ("slack-bot-token", "xoxb-" + pick(r, DIGITS, 9) + "-" + pick(r, DIGITS, 10)),
        ("slack-bot-token", "xoxb-your-token-here"),
        ("slack-user-token", "xoxp-" + pick(r, DIGITS, 10) + "-" + pick(r, DIGITS, 10) + "-" + pick(r, ALNUM, 30)),
        ("slack-user-token", "xoxp-" + "-".join(pick(r, DIGITS, 10) for _ in range(3)) + "-" + pick(r, ALNUM, 27)),
        ("slack-app-token", "xapp-x-" + pick(r, UPPER, 9) + "-12-abc"),
        ("slack-app-token", "xapp-1-" + pick(r, UPPER, 9) + "-abc-abc"),
        ("twilio-api-key", "SK" + pick(r, HEX, 31)),
        ("twilio-api-key", "SK" + pick(r, HEX, 16) + "g" + pick(r, HEX, 15)),
        ("sendgrid-api-token", "SG." + pick(r, ALNUM, 65) + " "),
        ("npm-access-token", "npm_" + pick(r, ALNUM, 35)),
        ("npm-access-token", "npm_" + pick(r, ALNUM, 37)),
        ("pypi-upload-token", "pypi-" + "AgEIcHlwaS5vcmc" + pick(r, ALNUM, 49)),
        ("databricks-api-token", "dapi" + pick(r, HEX, 31)),
        ("databricks-api-token", "dapi" + pick(r, "ABCDEF", 32)),
        ("databricks-api-token", "dapi" + pick(r, HEX, 32) + "-x"),
        ("hashicorp-tf-api-token", " " + pick(r, ALNUM, 13) + ".atlasv1." + pick(r, ALNUM, 64)),
        ("hashicorp-tf-api-token", pick(r, ALNUM, 14) + ".atlasv1." + pick(r, ALNUM, 59)),
        ("pulumi-api-token", "pul-" + pick(r, HEX, 39)),
        ("postman-api-token", "PMAK-" + pick(r, HEX, 24) + "-" + pick(r, HEX, 33)),
        ("grafana-api-key", "eyJrIjoi" + pick(r, B64, 69)),
        ("grafana-cloud-api-token", "glc_" + pick(r, B64, 31)),
        ("grafana-service-account-token", "glsa_" + pick(r, ALNUM, 32) + "_" + pick(r, HEX, 7)),
        ("sentry-user-token", "sntryu_" + pick(r, HEX, 63)),
        ("sentry-org-token", sentry_org(r, "bm9fcmVnaW9uX3Vy")),
        ("stripe-access-token", "sk_" + "live_" + pick(r, ALNUM, 9)),
        ("stripe-access-token", "pk_" + "live_" + pick(r, ALNUM, 24)),
        ("stripe-access-token", "sk_" + "live_" + pick(r, ALNUM, 100)),
        ("shopify-access-token", "shpat_" + pick(r, HEX, 31)),
        ("shopify-shared-secret", "shpss_" + pick(r, HEX, 31) + "g"),
        ("private-key", pem(r, "RSA PRIVATE KEY", 63).replace("\n", "")),
        ("private-key", pem(r, "PUBLIC KEY", 256)),
        ("private-key", pem(r).split("-----END")[0]),
    ]


NEAR_MISSES = near_misses()

BENIGN = [
    """---
name: testing-preferences
description: How the user wants tests run and why
type: feedback
---
Run `python3 -m pytest -q`; never mock the database. Last quarter a mocked
migration passed CI and broke prod (see https://github.com/acme/api/issues/42).
SKIP the flaky TASK_QUEUE tests only when the DESK-1234 ticket is open.
""",
    """# Project notes
- The API key lives in 1Password under "Stripe (live)"; never paste it here.
- Use `gh auth token` to fetch a GitHub token; the ghp_ prefix marks classic PATs.
- AWS keys start with AKIA; rotate with `aws iam create-access-key`.
- Slack bot tokens look like xoxb-<team>-<bot>-<secret>; ours is in Vault.
- Commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the sk-learn pin.
""",
    """```python
def read_manifest(mem_dir: Path, max_files: int = 200) -> list[Entry]:
    entries = [e for e in os.scandir(mem_dir) if e.is_file() and e.name.endswith(".md")]
    return sorted(entries, key=lambda e: e.stat().st_mtime)[:max_files]
```
The header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is a JWT, not a Grafana key.
-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
-----END PUBLIC KEY-----
""",
    '{"type":"user","message":{"content":"remember that dapi is the Databricks prefix"},'
    '"uuid":"0b6f1c2e-8d4a-4e9b-9f3a-2c1d5e7f8a90","cwd":"/home/u/repo"}\n',
    "Résumé: café opening hours 07:00–19:00 · naïve façade · 東京 · emoji 🙂\n",
]


# -- the rule table ---------------------------------------------------------


def test_rules_are_the_36_in_reference_order_then_ours():
    rows = [rule.id for rule in secrets.RULES]
    assert rows[:36] == RULE_IDS
    assert list(dict.fromkeys(rows)) == ALL_IDS
    # Several rows may share an id (its forms, each with its own keywords); they stand together.
    assert [rule_id for i, rule_id in enumerate(rows) if i == 0 or rows[i - 1] != rule_id] == ALL_IDS
    assert len(set(RULE_IDS)) == 36
    assert len(set(ALL_IDS)) == len(ALL_IDS)


def test_only_our_rules_and_aws_carry_an_allowlist():
    # Every rule knows a vendor prefix and one character repeated for the placeholder it is.
    assert all(rule.allow is not None and rule.allow.pattern.endswith(secrets._FILLER) for rule in secrets.RULES)
    allowed = {rule.id for rule in secrets.RULES if rule.allow.pattern != secrets._FILLER}
    assert allowed == {"aws-access-token"} | set(OUR_IDS) - {
        "telegram-bot-token", "azure-sas-token", "docker-pat", "discord-webhook-url", "datadog-api-key",
        "twilio-auth-token", "basic-auth-header"}


def test_rules_compile_ascii_and_ignore_case_only_where_the_table_says():
    for rule in secrets.RULES:
        assert rule.pattern.flags & re.ASCII
        expected = rule.id in {"slack-app-token", "private-key"}
        assert bool(rule.pattern.flags & re.IGNORECASE) == expected, rule.id
        assert rule.label == rule_label(rule.id)


def test_ported_sources_hold_no_js_whitespace_or_dollar():
    for rule in secrets.RULES:
        source = rule.pattern.pattern
        assert "$" not in source, rule.id
        assert not re.search(r"(?<!\\)(?:\\\\)*\\s", source), rule.id


def test_rules_import_is_lazy():
    code = (
        "import mem.core.guards.secrets as s; "
        "print(s._compiled.cache_info().currsize); "
        "s.RULES; print(s._compiled.cache_info().currsize)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["0", "1"]


def test_unknown_module_attribute_raises():
    with pytest.raises(AttributeError):
        secrets.NOT_A_THING  # noqa: B018


# -- porting ----------------------------------------------------------------


def test_port_rewrites_whitespace_and_dollar():
    ws = secrets._JS_SPACE
    assert secrets._port(r"a\sb") == f"a[{ws}]b"
    assert secrets._port(r"[\x60'\s;]") == f"[\\x60'{ws};]"
    assert secrets._port(r"[\s\S-]") == f"[{ws}\\S-]"
    assert secrets._port(r"x(?:;|$)") == r"x(?:;|\Z)"
    assert secrets._port(r"\\s") == r"\\s"  # an escaped backslash, then "s"
    assert secrets._port(r"\\[nr]") == r"\\[nr]"
    assert secrets._port(r"[$]\$") == r"[$]\$"


def test_js_space_class_is_exactly_js_whitespace():
    js = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
          0x205F, 0x3000, 0xFEFF, *range(0x2000, 0x200B)}
    cls = re.compile(f"[{secrets._JS_SPACE}]", re.ASCII)
    found = {cp for cp in range(0x10000) if cls.match(chr(cp))}
    assert found == js
    # Python's Unicode \s differs: it has U+001C..U+001F and U+0085, JS does
    # not; JS has U+FEFF, Python does not.
    assert {cp for cp in range(0x10000) if re.match(r"\s", chr(cp))} ^ js == {
        0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xFEFF
    }


def test_hoist_boundary():
    hoist = secrets._hoist_boundary
    assert hoist(r"\b(dapi[a-f0-9]{32})") == r"(dapi(?<!\wdapi)[a-f0-9]{32})"
    assert hoist(r"\b(SG\.[a-z]{66})") == r"(SG\.(?<!\wSG\.)[a-z]{66})"
    assert hoist(r"\bsntrys_eyJ[a-z]+") == r"sntrys_eyJ(?<!\wsntrys_eyJ)[a-z]+"
    # A quantified last character stays behind.
    assert hoist(r"\b(abc{2})") == r"(ab(?<!\wab)c{2})"
    # Left alone: an alternation the \b governs, a non-literal start, no \b.
    assert hoist(r"\b(sk-a[0-9]|sk-b)") == r"\b(sk-a[0-9]|sk-b)"
    assert hoist(r"\b((?:sk|rk)_x)") == r"\b((?:sk|rk)_x)"
    assert hoist(r"\b(-x)") == r"\b(-x)"
    assert hoist(r"ghp_[0-9]{36}") == r"ghp_[0-9]{36}"


@functools.cache  # the port of a row is the same on every call: worked out once, not per hypothesis example
def plain_port(index: int) -> re.Pattern:
    _, ignore_case, source, _ = secrets._TABLE[index]
    return re.compile(secrets._port(source), re.ASCII | (re.IGNORECASE if ignore_case else 0))


def matches(pattern: re.Pattern, text: str) -> list:
    return [(m.span(), m.regs) for m in pattern.finditer(text)]


def test_hoisted_boundary_matches_like_the_plain_port():
    hoisted = [i for i, rule in enumerate(secrets.RULES) if rule.pattern.pattern != plain_port(i).pattern]
    assert len(hoisted) == 18
    for text in all_test_texts():
        for index in hoisted:
            assert matches(secrets.RULES[index].pattern, text) == matches(plain_port(index), text)


# -- labels -----------------------------------------------------------------


@pytest.mark.parametrize(
    "rule_id,label",
    [
        ("github-pat", "GitHub PAT"),
        ("aws-access-token", "AWS Access Token"),
        ("hashicorp-tf-api-token", "HashiCorp TF API Token"),
        ("azure-ad-client-secret", "Azure AD Client Secret"),
        ("gcp-api-key", "GCP API Key"),
        ("openai-api-key", "OpenAI API Key"),
        ("huggingface-access-token", "HuggingFace Access Token"),
        ("github-fine-grained-pat", "GitHub Fine Grained PAT"),
        ("github-oauth", "GitHub OAuth"),
        ("gitlab-deploy-token", "GitLab Deploy Token"),
        ("digitalocean-pat", "DigitalOcean PAT"),
        ("sendgrid-api-token", "SendGrid API Token"),
        ("npm-access-token", "NPM Access Token"),
        ("pypi-upload-token", "PyPI Upload Token"),
        ("grafana-service-account-token", "Grafana Service Account Token"),
        ("private-key", "Private Key"),
        ("some-jwt", "Some JWT"),
    ],
)
def test_rule_label(rule_id, label):
    assert rule_label(rule_id) == label


def test_every_rule_has_a_label_from_its_id():
    for rule in secrets.RULES:
        assert rule.label.lower().replace(" ", "-") == rule.id


# -- positives and near misses ---------------------------------------------


def test_every_rule_has_generated_positives():
    assert set(GENERATORS) == set(RULE_IDS)
    assert {rule_id for rule_id, _ in NEAR_MISSES} == set(RULE_IDS)


@pytest.mark.parametrize("rule_id,secret", POSITIVES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(POSITIVES)])
def test_positive_matches_exactly_its_rule(rule_id, secret):
    for context in CONTEXTS:
        text = context.format(s=secret)
        assert ids(text) == [rule_id], context
        hit = first_secret(text)
        assert hit is not None and hit.rule_id == rule_id


@pytest.mark.parametrize("rule_id,text", NEAR_MISSES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(NEAR_MISSES)])
def test_near_miss_matches_nothing(rule_id, text):
    assert scan(text) == [], rule_id
    assert first_secret(text) is None
    assert redact(text) == text


def test_named_near_misses():
    assert ids("ghp_" + "A" * 36) == ["github-pat"]
    assert ids("ghp_" + "A" * 35) == []
    assert ids("AKIA" + "ABCDEFGHIJKLMNOP") == ["aws-access-token"]
    assert ids("AKIA" + "abcdefghijklmnop") == []
    assert ids("sk_" + "live_" + "a" * 10) == ["stripe-access-token"]
    assert ids("sk_" + "live_" + "a" * 9) == []


def test_terminated_rules_need_their_delimiter():
    token = "hf_" + "a" * 34
    for ok in ("", " ", "\n", "\t", '"', "'", "`", ";", "\\n", "\\r"):
        assert ids(token + ok) == ["huggingface-access-token"], repr(ok)
    for bad in (".", ",", ":", ")", "-", "/", "\\t", "1"):
        assert ids(token + bad) == [], repr(bad)


# -- boundary quirks of the port -------------------------------------------


def test_dollar_is_end_of_text_only():
    token = "dapi" + "0123456789abcdef" * 2
    assert ids(token) == ["databricks-api-token"]  # \Z
    assert ids(token + "\n") == ["databricks-api-token"]  # the \n is a delimiter
    assert ids(token + "\nmore") == ["databricks-api-token"]
    assert ids(token + "x\n") == []
    # An azure secret at the very start and the very end of the text: ^ and \Z.
    azure = "abc8Q~" + "a" * 32
    assert ids(azure) == ["azure-ad-client-secret"]
    assert ids(azure + "\n") == ["azure-ad-client-secret"]
    assert ids("x" + azure) == []


@pytest.mark.parametrize("space", ["\u00a0", "\u2028", "\u2029", "\ufeff", "\u3000", "\u2009", "\v", "\f"])
def test_js_whitespace_terminates_and_opens(space):
    assert ids("hf_" + "a" * 34 + space + "more") == ["huggingface-access-token"]
    assert ids("secret:" + space + "abc8Q~" + "a" * 32 + space) == ["azure-ad-client-secret"]


@pytest.mark.parametrize("not_space", ["\x1c", "\x1f", "\x85", "\u200b"])
def test_python_only_whitespace_does_not_terminate(not_space):
    assert ids("hf_" + "a" * 34 + not_space + "more") == []


def test_word_boundary_is_ascii():
    aws = "AKIA" + "ABCDEFGHIJKLMNOP"
    assert ids("é" + aws) == ["aws-access-token"]
    assert ids(aws + "é") == ["aws-access-token"]
    assert ids("x" + aws) == []
    assert ids("日" + "hf_" + "a" * 34) == ["huggingface-access-token"]


def test_digits_are_ascii():
    arabic = "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660"
    assert ids("xoxb-" + arabic + "-" + arabic) == []
    assert ids("xoxb-" + "1234567890" + "-" + "1234567890") == ["slack-bot-token"]


def test_ignore_case_folds_ascii_only():
    assert ids("xapp-1-" + "ABC-1-abc") == ["slack-app-token"]
    assert ids("XaPp-1-" + "abc-1-ABC") == ["slack-app-token"]
    # KELVIN SIGN folds to "k" under Unicode IGNORECASE; not in JS without /u.
    assert ids("xapp-1-\u212a-1-abc") == []
    key = pem(random.Random(1))
    assert ids(key) == ["private-key"]
    assert ids(key.replace("KEY", "\u212aEY")) == []


def test_private_key_body_spans_lines_and_is_lazy():
    r = random.Random(2)
    two = pem(r) + "\n\nand later\n\n" + pem(r, "EC PRIVATE KEY")
    assert ids(two) == ["private-key"]
    assert redact(two).count("[REDACTED]") == 2
    assert "PRIVATE" not in redact(two)


# -- findings ---------------------------------------------------------------


def test_findings_carry_rule_label_and_line_never_the_secret():
    for rule_id, secret in POSITIVES:
        text = f"intro\n\nkey: {secret}\n"
        [finding] = scan(text)
        assert finding == SecretFinding(rule_id, rule_label(rule_id), 3)
        assert secret not in repr(finding)
        assert {type(v) for v in vars(finding).values()} <= {str, int}


def test_line_is_that_of_the_first_match_of_each_rule():
    r = random.Random(3)
    ghp = GENERATORS["github-pat"][0]
    aws = GENERATORS["aws-access-token"][0]
    text = f"a\n{ghp(r)}\nb\n{aws(r)}\n{ghp(r)}\n"
    assert [(f.rule_id, f.line) for f in scan(text)] == [
        ("aws-access-token", 4),
        ("github-pat", 2),
    ]
    # first_secret stops at the first rule in rule order, not the first line.
    assert first_secret(text) == SecretFinding("aws-access-token", "AWS Access Token", 4)


def test_line_ignores_a_consumed_leading_delimiter():
    # The azure rule consumes the newline before the secret; the secret is on line 2.
    text = "first line\n" + "abc8Q~" + "a" * 32 + "\n"
    assert scan(text)[0].line == 2
    assert scan("\r\n\r\n" + "ghp_" + "A" * 36)[0].line == 3


def test_clean_text():
    assert scan("") == []
    assert first_secret("") is None
    assert redact("") == ""


# -- redact -----------------------------------------------------------------


def test_redact_replaces_the_secret_and_keeps_delimiters():
    for rule_id, secret in POSITIVES:
        for context in CONTEXTS:
            text = context.format(s=secret)
            redacted = redact(text)
            assert redacted == text.replace(secret, "[REDACTED]"), (rule_id, context)
            assert scan(redacted) == []


def test_redact_every_occurrence_of_every_rule():
    r = random.Random(4)
    a, b = GENERATORS["github-pat"][0](r), GENERATORS["github-pat"][0](r)
    c = GENERATORS["npm-access-token"][0](r)
    text = f"{a} and {b}\n'{c}'\n{a}"
    assert redact(text) == "[REDACTED] and [REDACTED]\n'[REDACTED]'\n[REDACTED]"


def test_no_keyword_can_appear_through_redaction():
    # redact() filters on the original text; sound only if this holds.
    for _, _, _, keywords in secrets._TABLE:
        for keyword in keywords:
            assert "[" not in keyword and "]" not in keyword
            assert keyword.lower() not in secrets.REDACTED.lower()


# -- the widened rules: key names, SAS tokens, passwords in other words --------

# Fake values, assembled so this file holds none: a password (a letter and a digit or symbol),
# an AWS secret key (40 base64 characters, both cases, a digit) and a SAS signature (%-encoded).
PW = "Lantern" + "482" + "!" + "qz"
AWS_SECRET = "wK3pZ" + "q8Rt/" + "Lm2Nx" + "Vb7Yc" + "Hd4Jf" + "Gs9Tu" + "Ea1Wo" + "Pi6Rk"
SAS_SIG = "Zm9vYmFy" + "c2VjcmV0" + "%2BaGVsbG8" + "%2Fd29ybGQx" + "MjM0NTY3OA" + "%3D"


def redacted_of(text: str, secret: str) -> bool:
    return secret not in redact(text) and secrets.REDACTED in redact(text)


@pytest.mark.parametrize("template", [
    "secret_key = '{s}'",
    "SECRET_KEY: {s}",
    "aws configure set aws_secret_access_key {s}",
    "aws configure set aws_secret_access_key '{s}' --profile ci",
    "--secret-access-key {s}",
    "--aws-secret-access-key={s}",
    '"SecretAccessKey" : "{s}"',
    "secretKey: {s}",
    "the secret access key is {s}",
])
def test_aws_secret_key_after_any_name_for_it(template):
    text = template.format(s=AWS_SECRET)
    assert ids(text) == ["aws-secret-access-key"], text
    assert redacted_of(text, AWS_SECRET)


@pytest.mark.parametrize("text", [
    "secret_key = " + "A" * 20 + "b" * 20,  # no digit nor / or +: an identifier, not 30 random bytes
    "secret_key = " + AWS_SECRET + "x",  # 41 characters
    "secret_key = " + AWS_SECRET[:39],
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "aws configure set aws_secret_access_key $AWS_SECRET_ACCESS_KEY",
    "secret_key = " + AWS_SECRET[:20] + "EXAMPLE" + AWS_SECRET[27:],
])
def test_aws_secret_key_near_misses(text):
    assert ids(text) == []


@pytest.mark.parametrize("template", [
    "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-01T00:00:00Z&sig={s}",
    "https://acct.blob.core.windows.net/c?sp=r&st=2026-11-25T10:00:00Z&se=2026-11-26&spr=https&sv=2022-11-02&sr=b&sig={s}",
    "https://acct.queue.core.windows.net/q?sig={s}&sv=2021-06-08&sp=a&se=2026-12-01",
    "SAS=sv=2021-06-08&ss=q&sp=a&se=2026-12-01&sig={s}",
    "SharedAccessSignature=sv=2020-08-04&sp=rl&se=2027-01-01&sig={s}&foo=bar",
    "https://acct.blob.core.windows.net/c?comp=list&q=a=b?&flag&sv=2022-11-02&sp=rl&sig={s}",
])
def test_azure_sas_token(template):
    text = template.format(s=SAS_SIG)
    assert ids(text) == ["azure-sas-token"], text
    assert redact(text) == template.format(s=secrets.REDACTED)


@pytest.mark.parametrize("text", [
    "https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=<signature>",
    "https://acct.blob.core.windows.net/c?sp=r&se=2026-12-01&sig=" + SAS_SIG,  # no sv=
    "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=" + SAS_SIG,  # neither sp= nor se=
    "https://example.com/t?sv=2022-11-02&sp=r&sig=" + "ab12" * 12,  # one case only: hex, not base64
    "https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=" + SAS_SIG[:30],
    "sv=2022-11-02 and sp=r go in the query, then sig=" + SAS_SIG,  # not one query
])
def test_azure_sas_token_near_misses(text):
    assert ids(text) == []


@pytest.mark.parametrize("text", [
    "?" * 50_000 + "sig=",  # a query start at every character
    "sig=" * 12_500,  # a parameter start after every =
    "sp=" * 16_000 + "sig=",
])
def test_azure_sas_token_is_linear_on_long_runs(text):
    # Each start walked the run to its end: 50 KB took 4-15 s, so 1 MB would take an hour.
    start = time.perf_counter()
    redact(text)
    first_secret(text)
    assert time.perf_counter() - start < 1.0


def test_private_key_headers_without_an_end_are_linear():
    # Each header without an END walked to the end of the text: 100 KB of them took 1.7 s, 1 MB
    # about three minutes. The body now stops at the next header (no key holds one).
    text = "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000
    start = time.perf_counter()
    redact(text)
    first_secret(text)
    assert time.perf_counter() - start < 1.0


def test_a_private_key_after_an_unended_header_is_still_found():
    body = "\n".join(["MIIEowIBAAKCAQEA" + "x" * 48] * 6)
    text = "-----BEGIN RSA PRIVATE KEY-----\nsee below\n" + ("prose " * 10_000) + \
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"
    assert "private-key" in [f.rule_id for f in scan(text)]
    assert "MIIEowIBAAKC" not in redact(text)


@pytest.mark.parametrize("text", [
    "password: !secret db_password",
    "password: !vault prod/db#password",
    "password: vault:secret/data/db#password",
    "password: ref+vault://secret/db#/password",
    "password: arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbC123",
    "password: op://Infra/prod-db/password",
    "password: ENC[AES256_GCM,data:Zm9vYmFy,iv:abc=,tag:def=,type:str]",
])
def test_a_reference_to_where_the_password_is_kept_is_not_one(text):
    assert scan(text) == []


@pytest.mark.parametrize("value", ["!Xk9#mQ2pLz", "vaultK3y!9z", "Sops-2026!x"])
def test_a_password_that_merely_starts_like_a_reference_is_caught(value):
    assert [f.rule_id for f in scan(f"password: {value}")] == ["password-statement"]
    assert value not in redact(f"password: {value}")


def test_password_statement_is_fast_on_a_megabyte_of_keywords():
    # A keyword every three characters, each followed by a run of value characters that never
    # ends: 2.3 s when each backed off through its 127 characters, 0.36 s now.
    text = "pw=" * 333_333
    start = time.perf_counter()
    first_secret(text)
    assert time.perf_counter() - start < 1.0


#: The prefix of each rule added in issue 32's third round, and runs that start a match at every
#: character and never finish one.
THIRD_ROUND_PREFIXES = [
    "curl ", "curl -u a:", "http -a ", "https ", "--http-password=", "wget --password=",
    "Authorization: Basic ", "AUTHORIZATION:", "DD_API_KEY=", "dd-", "Datadog app key ", "datadog_",
    "TWILIO_AUTH_TOKEN=", "Twilio ", "AC" + "a" * 32 + ", ", "dckr_pat_", "dckr_",
    "discord.com/api/webhooks/123456789012345678/", "/webhooks/",
    "mot de passe ", "le mot de passe de la ", "secret_key = (\"", "secret_key = \"Ab1Ab1Ab1Ab1\"\n",
    "SECRET_KEY=Ab1Ab1Ab1Ab1\\\n", "ghp_", "x",
]


@pytest.mark.parametrize("prefix", THIRD_ROUND_PREFIXES)
def test_third_round_rules_are_linear_on_a_megabyte_of_their_prefix(prefix):
    text = (prefix * (2**20 // len(prefix) + 1))[:2**20]
    for scan_once in (first_secret, redact):  # each 0.1-0.4 s here (the value's bounded lookaheads)
        start = time.perf_counter()
        scan_once(text)
        assert time.perf_counter() - start < 1.0, scan_once.__name__


@pytest.mark.parametrize("template", [
    "pw: {s}", "PW = '{s}'", "pwd={s}", "MYSQL_PWD={s} mysql -u app", "my pw is {s}",
    "set the password to {s}", "Changed the root password to {s} today", "reset my vpn password to {s}",
    "the password is now {s}", "password has been set to {s}", "passwd was changed to {s}",
    "the login is admin / {s}", "Login: deploy/{s}", "credentials are ops / '{s}'", "creds: svc-etl / {s}",
    "mysql -uroot -p{s} app", "mysql -h db -u root -p'{s}'", "mysqldump --single-transaction -uapp -p{s} shop",
    "mariadb -u root -p{s}", "sshpass -p '{s}' ssh ops@bastion", "sshpass -p{s} scp a b:",
    "psql --password {s}", "--passwd '{s}'", "openssl rsa -in k.pem -passin pass:{s}",
    '{{\"passwd\": \"{s}\"}}',
    "Das Passwort ist {s}", "Passwort: {s}", "Kennwort für den Router lautet {s}", "PASSWORT={s}",
    "le mot de passe est {s}", "Mot de passe : {s}", "mdp: {s}",
    "la contraseña es {s}", "Contrasena: {s}", "a senha é {s}", "Senha: {s}",
    "la password è {s}", "la password del server è {s}", "het wachtwoord is {s}", "Wachtwoord: {s}",
    "пароль: {s}", "Пароль от почты — {s}", "密码是{s}", "密码：{s}，别外传", "口令: {s}", "パスワードは{s}です",
    "パスワード：{s}", "비밀번호는 {s}입니다", "비밀번호: {s}",
])
def test_password_in_other_words(template):
    text = template.format(s=PW)
    assert ids(text) == ["password-statement"], text
    assert redacted_of(text, PW), redact(text)


@pytest.mark.parametrize("text", [
    "set the password to something strong", "pw: see vault", "pw: ${PW}", "pwd: <pwd>", "PWD=/home/ci2/build",
    "pwd = os.getcwd()", "pw = pwd.getpwnam(user2)", "cwd=/srv/app2", "pwned: 12 accounts",
    "mysql -u root -p (prompts for it)", "mysql -u root -p warehouse2", "mysql -p -e 'select 1'",
    "mysql -u root -p$MYSQL_ROOT_PASSWORD", "mysql -u root -proot",
    "the login is admin / admin", "login: see docs/auth2.md", "credentials: user/<password>",
    "log in with GitHub / Google", "login via /oauth2/callback", "login: via /oauth2/callback",
    "Login is web / mobile2-app/v3",
    "docker login --password-stdin", "docker login --password $TOKEN", "openssl req -passout pass:$PASS",
    "sent the password to ops2@acme.dev", "changed the password hashing to argon2id",
    "reset the password to the default", "password: /run/secrets/db_password2", "password: ~/.pgpass2",
    "Das Passwort ist geheim.", "Le mot de passe est dans le coffre.", "la contraseña es segura",
    "a senha e o usuário2 ficam no cofre", "Passwörter: siehe Vault", "пароль: спросите у админа",
    "密码：请在保险库里查看", "パスワードは管理者に聞いてください", "비밀번호는 금고에 있습니다",
    "compassword2 = x", "bypass: Lantern482!qz",
])
def test_password_lookalikes(text):
    assert ids(text) == [], text


def test_a_rule_with_several_forms_reports_its_earliest_line():
    text = f"line one\nmysql -uroot -p{PW}\nthe password is {PW}\n"
    [finding] = scan(text)
    assert (finding.rule_id, finding.line) == ("password-statement", 2)
    assert first_secret(text) == finding
    assert [(f.line, f.rule_id) for f in secrets.scan_all(text)] == [(2, "password-statement"), (3, "password-statement")]


# -- the prefilter ----------------------------------------------------------


def all_test_texts() -> list[str]:
    texts = [context.format(s=secret) for _, secret in POSITIVES for context in CONTEXTS[:3]]
    texts += [text for _, text in NEAR_MISSES]
    texts += BENIGN
    texts.append("\n".join(secret for _, secret in POSITIVES))
    return texts + BENCH_TEXTS


def redact_unfiltered(text: str) -> str:
    return secrets._redact(text, prefilter=False)


def test_prefilter_never_changes_results():
    for text in all_test_texts():
        assert secrets._scan(text, prefilter=True) == secrets._scan(text, prefilter=False)
        assert redact(text) == redact_unfiltered(text)


KEYWORDS = [
    (index, keyword, ignore_case)
    for index, (_, ignore_case, _, keywords) in enumerate(secrets._TABLE)
    for keyword in keywords
]


def candidate_rows(text: str) -> set[int]:
    """The rows of the table the prefilter lets run on ``text`` (a rule id may have several)."""
    rows = {id(rule): index for index, rule in enumerate(secrets.RULES)}
    return {rows[id(rule)] for rule in secrets._candidates(text)}


def test_every_keyword_opens_its_gate():
    for index, keyword, ignore_case in KEYWORDS:
        variants = {keyword, keyword.upper(), keyword.title()} if ignore_case else {keyword}
        for variant in variants:
            for text in (variant, f"x {variant} y", f"__--..{variant}__--.."):
                assert index in candidate_rows(text), (secrets._TABLE[index][0], text)


def test_overlapping_keywords_open_both_gates():
    # Keywords that share characters (AKIA + AIza -> "AKIAIza") are found
    # together, although a gate reports one alternative per position.
    checked = 0
    for i, a, _ in KEYWORDS:
        for j, b, _ in KEYWORDS:
            if b in a:
                assert j in candidate_rows(a), (a, b)
            for cut in range(min(len(a), len(b))):
                if cut and not a.endswith(b[:cut]):
                    continue
                assert {i, j} <= candidate_rows(a + b[cut:]), (a, b, cut)
                checked += 1
    assert checked > len(KEYWORDS) ** 2


def test_every_match_contains_a_keyword():
    for rule_id, secret in POSITIVES:
        _, ignore_case, _, keywords = secrets._TABLE[RULE_IDS.index(rule_id)]
        match = secrets.RULES[RULE_IDS.index(rule_id)].pattern.search(secret).group(0)
        haystack = match.lower() if ignore_case else match
        assert any(k in haystack for k in keywords), rule_id
    for text in BENCH_TEXTS:
        for (_, ignore_case, _, keywords), rule in zip(secrets._TABLE, secrets.RULES):
            for match in rule.pattern.finditer(text):
                haystack = match.group(0).lower() if ignore_case else match.group(0)
                assert any(k in haystack for k in keywords), rule.id


CLEAN_MEMORY = """---
name: release-process
description: How releases are cut and who signs off
type: project
---
Releases go out on Thursdays from the `main` branch. The user wants the
changelog written by hand, grouped by user-visible change, never generated
from commit titles. Deploy with `make release VERSION=1.4.2` on the ci-runner
host; rollback is `make rollback`. Staging lives at https://staging.example.com
and the API docs at https://docs.example.com/api/v2/reference.
- Why: an auto-generated changelog once listed internal refactors as features.
- How to apply: draft notes in docs/releases/1.4.2.md before tagging.
"""
CLEAN_4K = (CLEAN_MEMORY * 8)[:4096]


def test_clean_memory_runs_no_regex():
    # The fast path: no keyword present, so no rule regex runs at all.
    assert scan(CLEAN_4K) == []
    assert list(secrets._candidates(CLEAN_4K)) == []


# -- real memory files and our own sources ---------------------------------


def test_fixture_memories_are_clean():
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix in {".md", ".jsonl"} and path.is_file():
            assert scan(path.read_text(encoding="utf-8", errors="replace")) == [], path


@pytest.mark.parametrize("text", BENIGN)
def test_benign_memories_are_clean(text):
    assert scan(text) == []
    assert first_secret(text) is None


@pytest.mark.parametrize("path", ["mem/core/guards/secrets.py", "tests/test_secrets.py", "tests/test_secrets_bench.py",
                                  "tests/test_secrets_cli.py", "tests/test_secrets_model_paths.py",
                                  "tests/fixtures/secrets-bench/secrets_bench.py", "bench/secret_detection.py",
                                  "bench/RESULTS.md"])
def test_own_sources_are_clean(path):
    assert scan((ROOT / path).read_text(encoding="utf-8")) == []


# -- properties -------------------------------------------------------------

FRAGMENTS = sorted({k for row in secrets._TABLE for k in row[3]}) + [
    "-----BEGIN RSA " + "PRIVATE KEY-----", "-----END RSA " + "PRIVATE KEY-----",
    "Q~", "T3BlbkFJ", ".atlasv1.", "\n", " ", "\u00a0", "\\n", '"', "é",
]

texts = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from([secret for _, secret in POSITIVES] + BENCH_TEXTS),
        st.text(alphabet=ALNUM + "_-=+/.~", max_size=120),
        st.text(max_size=40),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_scan_properties(text):
    findings = scan(text)
    hit = first_secret(text)
    assert (hit is None) == (findings == [])
    if hit is not None:
        assert hit == findings[0]
    assert [f.rule_id for f in findings] == [i for i in ALL_IDS if i in {f.rule_id for f in findings}]
    assert secrets._scan(text, prefilter=False) == findings
    for index, rule in enumerate(secrets.RULES):
        assert matches(rule.pattern, text) == matches(plain_port(index), text), rule.id
    redacted = redact(text)
    assert redacted == redact_unfiltered(text)
    if not findings:
        assert redacted == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_scan_never_raises_on_arbitrary_text(text):
    assert (first_secret(text) is None) == (scan(text) == [])
    redact(text)
