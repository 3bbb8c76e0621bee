"""The secret gate: gitleaks-style rules that keep credentials out of memory.

A port of Claude Code's team-memory secret scanner (reference §8.6, 36 rules),
plus 8 rules of ours for what those miss (AWS secret keys, Slack webhooks, JWTs,
passwords in URLs, Azure account keys and SAS tokens, Telegram bot tokens, a
password stated in words or on a command line, in eleven languages). A rule may
have several forms, rows of the table under one id, and may carry an
allowlist, as in gitleaks: a match whose secret it finds (AWS's documented
example keys, ``<password>``, ``${DB_PASS}``) is not a secret. Findings name the rule that matched and the line it matched on, never
the matched text.

    >>> from mem.core import secrets
    >>> secrets.first_secret("nothing to see here") is None
    True

Porting notes (JS → Python ``re``):

- ``re.ASCII`` everywhere, because JS ``\\w``, ``\\d`` and ``\\b`` are ASCII-only
  and JS ``i`` without ``u`` never folds a non-ASCII letter onto an ASCII one.
- JS ``\\s`` is Unicode-aware (NBSP, U+2028, ...) but is not Python's Unicode
  ``\\s`` either: JS has U+FEFF, Python has U+001C-U+001F and U+0085. So every
  ``\\s`` becomes the explicit class ``_JS_SPACE``.
- JS ``$`` without ``m`` matches only at the very end, so it becomes ``\\Z``.
- For speed only, a leading ``\\b`` before a literal is moved behind it as a
  lookbehind (``_hoist_boundary``); the matches are the same.

Speed: the write path calls ``first_secret`` on every write. Import compiles
nothing (``_compiled`` runs on first use). Each rule carries literal keywords,
one of which every match contains, and runs only if one is present; a handful
of anchor-character gates (``_Gate``) find the keywords present, a group per
pass, so a clean 4 KB memory costs tens of microseconds.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mem.core.jscompat import JS_WHITESPACE as _JS_SPACE  # JS ``\s``, as a character-class body

__all__ = [
    "RULES",
    "SecretFinding",
    "SecretRule",
    "first_secret",
    "redact",
    "rule_label",
    "scan",
    "scan_all",
]

REDACTED = "[REDACTED]"


# Assembled at run time so this file holds nothing that looks like a key prefix.
_ANT_API = "-".join(["sk", "ant", "api"])
_ANT_ADMIN = "-".join(["sk", "ant", "admin01"])

# An AWS secret access key: 40 characters of base64 with both cases and a digit or / or +, as
# 30 random bytes have (all but 1 in 5000); and what may stand between its name and it.
_AWS_SECRET = (r"""(?<![A-Za-z0-9/+])((?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"""
               r"""(?=[A-Za-z0-9/+]{0,39}[0-9/+])[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""")
# The same key split across two lines: a string literal closed and continued ("..." + / "..."
# "... "\ / '...') or a backslash-newline, each part at most 39 characters.
_AWS_SPLIT = (r"""(?:\(\s{0,8}["']?)?(?<![A-Za-z0-9/+])((?=[A-Za-z0-9/+]{0,38}[A-Z])(?=[A-Za-z0-9/+]{0,38}[a-z])"""
              r"""[A-Za-z0-9/+]{10,39}(?:["'][ \t]*(?:\\|\+)?[ \t]*\r?\n[ \t]*(?:\+[ \t]*)?["']|\\\r?\n[ \t]*)"""
              r"""[A-Za-z0-9/+]{1,30})(?![A-Za-z0-9/+=])""")
_AWS_AFTER_NAME = (r"""(?:\s{0,3}\[[^\]\n]{0,40}\])?["']?"""
                   r"""(?:\s{0,3}(?:=>|:=|[:=])\s{0,3}|[ \t]{1,3}(?:(?:is|was)[ \t]{1,3})?)["']?""")

# One parameter of a query string before a SAS signature, with its &: at most 256 characters and
# not starting with ? or =, so that a start at each ? or sig= of a long run costs a bounded walk,
# not one to the end of the run (quadratic). No possessive quantifiers: Python 3.10 has none.
_SAS_PARAM = r"""(?:[^\s"'\x60<>#&?=][^\s"'\x60<>#&]{0,255})?&"""

# -- password-statement: a password given in words, by key name or on a command line. Every form
# ends in one of two values: a word (or a quoted string) with a letter and a digit or symbol that is
# not code (a call, an index, a dotted name) nor a path.
# Nor a reference to where the secret is kept: a YAML tag that loads it (Home Assistant's
# "!secret db_password", Ansible's "!vault", CloudFormation's "!Ref"), or the address of a secret
# store (vault:, ref+vault://, op://, an AWS Secrets Manager or SSM ARN, SOPS's ENC[...]).
_NOT_CODE = (
    r"""(?![A-Za-z_]\w*(?:\.\w+)+(?:[\s"'\x60,;]|$))(?![/\\]|~/|\.\.?/|[A-Za-z]:\\)"""
    r"""(?!!(?:secret|vault|env_var|include|input|Ref|Sub|GetAtt|ImportValue)\b)"""
    r"""(?!(?:vault|sops|op|ref\+\w+):|arn:aws:(?:secretsmanager|ssm):|ENC\[)"""
)
# Both values first check that the run of value characters is 6-129 long (the value, then a
# backslash or a dot): at least 6, and not 130 (fixed counts, which never back off), so a longer
# run ("pw=pw=pw=...") fails at once instead of backing off 127 times at each keyword (2.3 s/MB,
# now 0.36). Python 3.10 has no possessive quantifiers.
_PW_VALUE = (
    _NOT_CODE
    + r"""(?=[^\s"'\x60()\[\]{}<>,;]{6})(?![^\s"'\x60()\[\]{}<>,;]{130})"""
    r"""(?=[^\s"'\x60()\[\]{}<>,;]{0,127}[A-Za-z])(?=[^\s"'\x60()\[\]{}<>,;]{0,127}[0-9!#\x24%^&*+=?~@])"""
    r"""([^\s"'\x60()\[\]{}<>,;]{5,127}[^\s"'\x60()\[\]{}<>,;.:\\])(?=[\s"'\x60,;]|\\["'\x60]|\.(?:\s|$)|$)"""
)
# After a word of another language the value is ASCII and ends where the text's own script (or
# its full-width punctuation) resumes: "密码是...，" "비밀번호는 ...입니다".
_PW_VALUE_ASCII = (
    _NOT_CODE
    + r"""(?=[^\s"'\x60()\[\]{}<>,;\x7f-\U0010ffff]{6})(?![^\s"'\x60()\[\]{}<>,;\x7f-\U0010ffff]{130})"""
    r"""(?=[^\s"'\x60()\[\]{}<>,;\x7f-\U0010ffff]{0,127}[A-Za-z])"""
    r"""(?=[^\s"'\x60()\[\]{}<>,;\x7f-\U0010ffff]{0,127}[0-9!#\x24%^&*+=?~@])"""
    r"""([^\s"'\x60()\[\]{}<>,;\x7f-\U0010ffff]{5,127}[^\s"'\x60()\[\]{}<>,;.:\\\x7f-\U0010ffff])"""
    r"""(?=[\s"'\x60,;\x7f-\U0010ffff]|\\["'\x60]|\.(?:\s|$)|$)"""
)
# "for the vpn", "of root", "on staging" (and Italian "del server", "per il db").
_PW_FOR = r"""(?:[ \t]+(?:for|of|on|to|at|del|della|di|per)(?:[ \t]+[\w.@/-]{1,40}){1,3}?)?"""
# An opening quote, JSON-escaped or not (a JSON string inside a JSON string: {\"passwd\": \"...\"}).
_PW_OPEN = r"""[ \t]*(?:\\?["'\x60])?"""
# is, was, is now, has been set to, :, =, := (and Italian è).
_PW_IS = (r"""(?:[ \t]+(?:is|was|è|e')(?:[ \t]+now)?(?:[ \t]*:)?|[ \t]*(?::=|[:=])"""
          r"""|(?:[ \t]+(?:is|was|has been|had been|got|will be))?(?:[ \t]+now)?[ \t]+(?:set|changed|reset|updated)[ \t]+to)""")
_PW_NAME_KEYWORDS = ("assw", "ASSW", "assphrase", "ASSPHRASE")


def _foreign(words: str, lookbehind: str, rest: str) -> str:
    """A word of another language (matched from its last letters, for speed), then the rest."""
    return f"(?:{words})(?<={lookbehind}){rest}"


#: The forms of ``password-statement``: (source, keywords). Each is a row of the table with the
#: rule's id, so a form runs only when one of its own words occurs. Most start with one literal
#: (the letters before it checked by a lookbehind): ``re`` scans for that in C, 0.3-0.6 ns a
#: character here against 10 for ``[Pp]assword...``.
_PASSWORD_FORMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the password is ..., password for the vpn: ..., DB_PASSWORD=..., password set to ...,
    # la password è ... (a row per case, each starting with one literal)
    *((name + r"""(?:\\?["'])?""" + _PW_FOR + _PW_IS + _PW_OPEN + _PW_VALUE, keywords) for name, keywords in (
        (r"""ass(?<=[Pp]ass)(?:word|wd|phrase)s?\b""", ("assw", "assphrase")),
        (r"""ASS(?<=PASS)(?:WORD|WD|PHRASE)S?\b""", ("ASSW", "ASSPHRASE")),
    )),
    # pw: ..., pwd = ..., MYSQL_PWD=... (not PWD=/home/..., a path; two letters that could be
    # anything, so the value is ASCII)
    (r"""(?:pw|PW|Pw)(?<![A-Za-z0-9]..)(?:d|D)?\b["']?(?:[ \t]+(?:is|was)(?:[ \t]*:)?|[ \t]*(?::=|[:=]))"""
     + _PW_OPEN + _PW_VALUE_ASCII,
     ("pw", "Pw", "PW")),
    # set the password to ..., changed my vpn password to ...
    (r"""(?:set(?<=\bset)|Set(?<=\bSet)|SET(?<=\bSET)|chang(?<=\bchang)|Chang(?<=\bChang)|reset(?<=\breset)"""
     r"""|Reset(?<=\bReset)|updat(?<=\bupdat)|Updat(?<=\bUpdat))(?:e|ed|ing|ting)?\b"""
     r"""(?:[ \t]+[\w'-]{1,30}){0,3}?[ \t]+(?:[Pp]ass(?:word|wd|phrase)|PASS(?:WORD|WD|PHRASE)|pwd?|PWD?)\b"""
     + _PW_FOR + r"""[ \t]+(?:back[ \t]+)?to""" + _PW_OPEN + _PW_VALUE,
     _PW_NAME_KEYWORDS + ("pw", "PW")),
    # the login is admin / ..., credentials: deploy/...
    (r"""(?:ogin(?<=\b[Ll]ogin)|OGIN(?<=\bLOGIN)|red(?<=\b[Cc]red)(?:entials|s)|RED(?<=\bCRED)(?:ENTIALS|S))"""
     r"""(?:[ \t]+(?:is|are|was|were)(?:[ \t]*:)?|[ \t]*:)[ \t]*[\w.@+-]{1,64}[ \t]*/[ \t]*["']?"""
     r"""(?![^\s"'\x60,;]*/)""" + _PW_VALUE,  # a pair, not "login: via /oauth2/callback"
     ("ogin", "OGIN", "redentials", "REDENTIALS", "reds", "REDS")),
    # mysql -u root -p... (only glued: in "-p x" x is the database), sshpass -p ...,
    # --password ..., openssl -passin pass:...
    (r"""(?:mysql|mariadb)(?<![\w-]mysql)(?<![\w-]mariadb)(?:dump|admin|sh|import|check|-dump|-admin)?\b"""
     r"""[^\n|;&]{0,200}?[ \t]-p["']?""" + _PW_VALUE,
     ("mysql", "mariadb")),
    (r"""sshpass(?<![\w-]sshpass)[ \t]+-p[ \t]*["']?""" + _PW_VALUE, ("sshpass",)),
    (r"""--pass(?<![\w-]--pass)(?:word|wd)?(?:[ \t]+|=)["']?""" + _PW_VALUE, ("--pass",)),
    # wget --http-password=..., --ftp-password, --proxy-password
    (r"""(?<![\w-])--(?:http|ftp|proxy)-password(?:[ \t]+|=)["']?""" + _PW_VALUE, ("-password",)),
    # curl -u user:..., --user=user:..., httpie --auth user:... (without the colon curl asks for
    # it; docker's -u 1000:1000 and chown-like user:group pairs fail the value's own test)
    (r"""(?<![\w-])(?:-u|--user|--auth)(?:[ \t]+|=)["']?[^\s:"'@/]{1,64}:""" + _PW_VALUE, ("-u", "--user", "--auth")),
    # httpie -a user:... (only after the command and its options: -a means much else elsewhere)
    (r"""(?:http|https)(?<![\w./-]http)(?<![\w./-]https)(?:[ \t]+-[\w-]{1,30}){0,5}?[ \t]+-a[ \t]+["']?"""
     r"""[^\s:"'@/]{1,64}:""" + _PW_VALUE, ("http ", "https ", "http\t", "https\t")),
    (r"""-pass(?<![\w-]-pass)(?:in|out)?[ \t]+pass:""" + _PW_VALUE, ("-pass",)),
    # Das Passwort ist ..., Kennwort: ...
    (_foreign("wort|WORT", "[Pp]asswort|[Kk]ennwort|PASSWORT|KENNWORT",
              r"""(?:es)?(?:[ \t]+(?:für|fürs|vom|von|zum|zur|des|der)(?:[ \t]+[\w.@/-]{1,40}){1,3}?)?"""
              r"""(?:[ \t]+(?:ist|lautet|war)|[ \t]*[:=])""")
     + r"""(?:[ \t]*:)?""" + _PW_OPEN + _PW_VALUE_ASCII,
     ("wort", "WORT")),
    # het wachtwoord is ...
    (_foreign("woord|WOORD", "[Ww]achtwoord|WACHTWOORD",
              r"""(?:[ \t]+(?:voor|van)(?:[ \t]+[\w.@/-]{1,40}){1,3}?)?(?:[ \t]+(?:is|was)|[ \t]*[:=])""")
     + r"""(?:[ \t]*:)?""" + _PW_OPEN + _PW_VALUE_ASCII,
     ("woord", "WOORD")),
    # le mot de passe est ..., mdp : ...
    # (le mot de passe de la base de données est toujours ...: any words between, one by one)
    *((word + r"""\b(?:[ \t]+[^\s:=]{1,40}){0,5}?(?:[ \t]+(?:est|était)(?:[ \t]+(?:maintenant|toujours|désormais|encore))?"""
       r"""|[ \t]*[:=])"""
       r"""(?:[ \t]*:)?""" + _PW_OPEN + _PW_VALUE_ASCII, keywords) for word, keywords in (
        (r"""de passe(?<=\b[Mm]ot de passe)""", ("de passe",)),
        (r"""DE PASSE(?<=\bMOT DE PASSE)""", ("DE PASSE",)),
        (r"""(?:mdp|MDP)(?<![A-Za-z0-9_]...)""", ("mdp", "MDP")),
    )),
    # la contraseña es ...
    (_foreign("ontrase|ONTRASE", "[Cc]ontrase|CONTRASE",
              r"""(?:ña|na|ÑA|NA)(?:[ \t]+(?:de|del|para)(?:[ \t]+[\w.@/-]{1,40}){1,3}?)?(?:[ \t]+(?:es|era)|[ \t]*[:=])""")
     + r"""(?:[ \t]*:)?""" + _PW_OPEN + _PW_VALUE_ASCII,
     ("ontrase", "ONTRASE")),
    # a senha é ...
    (r"""(?:senha|Senha|SENHA)(?<![A-Za-z0-9_].....)\b(?:[ \t]+(?:do|da|de|para)(?:[ \t]+[\w.@/-]{1,40}){1,3}?)?"""
     r"""(?:[ \t]+(?:é|era)|[ \t]*[:=])(?:[ \t]*:)?""" + _PW_OPEN + _PW_VALUE_ASCII,
     ("senha", "Senha", "SENHA")),
    # пароль: ..., пароль от почты — ...
    (_foreign("ароль|АРОЛЬ", "[Пп]ароль|ПАРОЛЬ",
              r"""(?:[ \t]+(?:от|для|к|на)(?:[ \t]+[^\s:=]{1,40}){1,3}?)?[ \t]*(?:[:=]|[ \t][—–-][ \t])""")
     + _PW_OPEN + _PW_VALUE_ASCII,
     ("ароль", "АРОЛЬ")),
    # 密码是..., パスワードは..., 비밀번호는 ...
    *((word + r"""[ \t]*(?:""" + then + r"""|[:：=])""" + _PW_OPEN + _PW_VALUE_ASCII, (keyword,)) for word, keyword, then in (
        ("密码", "密码", "是|为"), ("密碼", "密碼", "是|為"), ("口令", "口令", "是|为|為"), ("パスワード", "パスワード", "は"),
        ("비밀번호", "비밀번호", "는"), ("패스워드", "패스워드", "는"),
    )),
)

# (id, case-insensitive?, JS regex source, keywords). Sources are the reference
# table verbatim; keywords are literals one of which every match must contain
# (matched ignoring ASCII case for the case-insensitive rules).
_TABLE: tuple[tuple[str, bool, str, tuple[str, ...]], ...] = (
    ("aws-access-token", False,
     r"""\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b""",
     ("A3T", "AKIA", "ASIA", "ABIA", "ACCA")),
    ("gcp-api-key", False,
     r"""\b(AIza[\w-]{35})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("AIza",)),
    ("azure-ad-client-secret", False,
     r"""(?:^|[\\'"\x60\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"\x60\s<),])""",
     ("Q~",)),
    ("digitalocean-pat", False,
     r"""\b(dop_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("dop_v1_",)),
    ("digitalocean-access-token", False,
     r"""\b(doo_v1_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("doo_v1_",)),
    ("anthropic-api-key", False,
     r"""\b(""" + _ANT_API + r"""03-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)""",
     (_ANT_API + "03-",)),
    ("anthropic-admin-api-key", False,
     r"""\b(""" + _ANT_ADMIN + r"""-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)""",
     (_ANT_ADMIN + "-",)),
    ("openai-api-key", False,
     r"""\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("T3BlbkFJ",)),
    ("huggingface-access-token", False,
     r"""\b(hf_[a-zA-Z]{34})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("hf_",)),
    ("github-pat", False,
     r"""ghp_[0-9a-zA-Z]{36}""",
     ("ghp_",)),
    ("github-fine-grained-pat", False,
     r"""github_pat_\w{82}""",
     ("github_pat_",)),
    ("github-app-token", False,
     r"""(?:ghu|ghs)_[0-9a-zA-Z]{36}""",
     ("ghu_", "ghs_")),
    ("github-oauth", False,
     r"""gho_[0-9a-zA-Z]{36}""",
     ("gho_",)),
    ("github-refresh-token", False,
     r"""ghr_[0-9a-zA-Z]{36}""",
     ("ghr_",)),
    ("gitlab-pat", False,
     r"""glpat-[\w-]{20}""",
     ("glpat-",)),
    ("gitlab-deploy-token", False,
     r"""gldt-[0-9a-zA-Z_\-]{20}""",
     ("gldt-",)),
    ("slack-bot-token", False,
     r"""xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*""",
     ("xoxb-",)),
    ("slack-user-token", False,
     r"""xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}""",
     ("xoxp-", "xoxe-")),
    ("slack-app-token", True,
     r"""xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+""",
     ("xapp-",)),
    ("twilio-api-key", False,
     r"""SK[0-9a-fA-F]{32}""",
     ("SK",)),
    ("sendgrid-api-token", False,
     r"""\b(SG\.[a-zA-Z0-9=_\-.]{66})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("SG.",)),
    ("npm-access-token", False,
     r"""\b(npm_[a-zA-Z0-9]{36})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("npm_",)),
    ("pypi-upload-token", False,
     r"""pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}""",
     ("pypi-AgEIcHlwaS5vcmc",)),
    ("databricks-api-token", False,
     r"""\b(dapi[a-f0-9]{32}(?:-\d)?)(?:[\x60'"\s;]|\\[nr]|$)""",
     ("dapi",)),
    ("hashicorp-tf-api-token", False,
     r"""[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9\-_=]{60,70}""",
     (".atlasv1.",)),
    ("pulumi-api-token", False,
     r"""\b(pul-[a-f0-9]{40})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("pul-",)),
    ("postman-api-token", False,
     r"""\b(PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("PMAK-",)),
    ("grafana-api-key", False,
     r"""\b(eyJrIjoi[A-Za-z0-9+/]{70,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("eyJrIjoi",)),
    ("grafana-cloud-api-token", False,
     r"""\b(glc_[A-Za-z0-9+/]{32,400}={0,3})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("glc_",)),
    ("grafana-service-account-token", False,
     r"""\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("glsa_",)),
    ("sentry-user-token", False,
     r"""\b(sntryu_[a-f0-9]{64})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("sntryu_",)),
    ("sentry-org-token", False,
     r"""\bsntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}""",
     ("sntrys_eyJpYXQiO",)),
    ("stripe-access-token", False,
     r"""\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})(?:[\x60'"\s;]|\\[nr]|$)""",
     ("k_test_", "k_live_", "k_prod_")),
    ("shopify-access-token", False,
     r"""shpat_[a-fA-F0-9]{32}""",
     ("shpat_",)),
    ("shopify-shared-secret", False,
     r"""shpss_[a-fA-F0-9]{32}""",
     ("shpss_",)),
    ("private-key", True,
     r"""-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-(?!----BEGIN)){64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----""",
     ("-----begin",)),
    # Beyond the reference: kinds its 36 rules let through (issue 21). Ours, in
    # the same dialect; a few need context (a key name, an AKIA id, a verb).
    # A 40-character key after a name that means it (secret_key, aws_secret_access_key,
    # --secret-access-key, SecretAccessKey, "Secret access key"), given with =, :, a space or as
    # a CLI flag's argument (a row per case, each starting with one literal); or on the line of
    # an access key id.
    *(("aws-secret-access-key", False, name + _AWS_AFTER_NAME + _AWS_SECRET, keywords) for name, keywords in (
        (r"""ecret(?<=[Ss]ecret)(?:[ _-]?[Aa]ccess)?[ _-]?[Kk]ey""", ("ecret",)),
        (r"""ECRET(?<=SECRET)(?:[ _-]?ACCESS)?[ _-]?KEY""", ("ECRET",)),
    )),
    *(("aws-secret-access-key", False, name + _AWS_AFTER_NAME + _AWS_SPLIT, keywords) for name, keywords in (
        (r"""ecret(?<=[Ss]ecret)(?:[ _-]?[Aa]ccess)?[ _-]?[Kk]ey""", ("ecret",)),
        (r"""ECRET(?<=SECRET)(?:[ _-]?ACCESS)?[ _-]?KEY""", ("ECRET",)),
    )),
    ("aws-secret-access-key", False,
     r"""\b(?:AKIA|ASIA)[A-Z2-7]{16}\b[^\n]{0,80}?[\s,:;|"'=]""" + _AWS_SECRET,
     ("AKIA", "ASIA")),
    ("slack-webhook-url", False,
     r"""hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/]{43,120})""",
     ("hooks.slack.com",)),
    ("jwt", False,
     r"""\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,})(?![A-Za-z0-9_-])""",
     ("eyJ",)),
    ("url-password", False,
     # scheme://user:password@host (a password under 4 characters is a documentation example)
     r"""://[^\s:/?#@"'\x60<>]{0,100}:([^\s/?#@"'\x60<>]{4,200})@(?=[A-Za-z0-9\[])""",
     ("@",)),
    ("azure-storage-account-key", False,
     r"""(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,100}={0,2})(?![A-Za-z0-9+/=])""",
     ("AccountKey=", "SharedAccessKey=")),
    ("azure-sas-token", False,
     # The signature of a shared access signature: sig= in a query that also holds the SAS
     # version (sv=, a date) and its permissions or expiry (sp=, se=); base64, %-encoded or not.
     # Each lookahead and the walk to sig= take at most 20 parameters (_SAS_PARAM).
     r"""(?:\?|(?<![^\s"'\x60=;,(<>])(?=s[a-z]{1,3}=))"""
     r"""(?=(?:""" + _SAS_PARAM + r"""){0,20}?sv=\d{4}-\d\d-\d\d)(?=(?:""" + _SAS_PARAM + r"""){0,20}?s[pe]=)"""
     r"""(?:""" + _SAS_PARAM + r"""){0,20}?sig=((?=[A-Za-z0-9%+/]{0,120}[A-Z])(?=[A-Za-z0-9%+/]{0,120}[a-z])"""
     r"""[A-Za-z0-9%+/]{40,120}={0,2})(?![A-Za-z0-9%+/=])""",
     ("sig=",)),
    ("docker-pat", False,
     r"""\b(dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,80})(?![A-Za-z0-9_-])""",
     ("dckr_",)),
    ("discord-webhook-url", False,
     r"""discord(?:app)?\.com/api/(?:v\d+/)?webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,80})(?![A-Za-z0-9_-])""",
     ("/webhooks/",)),
    # Datadog's API key (32 hex) and application key (40 hex) are bare hex: only after their name.
    ("datadog-api-key", False,
     r"""(?:\b(?:[Dd]atadog|DATADOG)[ _-]?|\b(?:DD|dd)[_-])(?:[A-Za-z0-9.]{1,20}[ _-])?"""
     r"""(?:api|app|application|API|APP|APPLICATION|Api|App|Application)[ _-]?(?:key|KEY|Key)\b["']?"""
     r"""(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]*["']?([a-f0-9]{40}|[a-f0-9]{32})(?![A-Za-z0-9])""",
     ("atadog", "ATADOG", "DD_", "DD-", "dd_", "dd-")),
    # Twilio's auth token (32 hex): after its name.
    ("twilio-auth-token", False,
     r"""\b(?:[Tt]wilio|TWILIO)[ _-]?(?:[A-Za-z0-9.]{1,20}[ _-])?(?:[Aa]uth|AUTH)[ _-]?(?:[Tt]oken|TOKEN)\b["']?"""
     r"""(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]*["']?([a-f0-9]{32})(?![A-Za-z0-9])""",
     ("wilio", "WILIO")),
    # An HTTP Basic credential: base64 of user:password.
    ("basic-auth-header", False,
     r"""(?:uthorization|UTHORIZATION)(?<=[Aa]uthorization|AUTHORIZATION)["']?[ \t]*[:=][ \t]*["']?"""
     r"""(?:Basic|BASIC|basic)[ \t]+([A-Za-z0-9+/]{12,400}={0,2})(?![A-Za-z0-9+/=])""",
     ("uthorization", "UTHORIZATION")),
    ("telegram-bot-token", False,
     r"""(?<![0-9])([0-9]{8,12}:A[A-Za-z0-9_-]{34})(?![A-Za-z0-9_-])""",
     (":A",)),
    *(("password-statement", False, source, keywords) for source, keywords in _PASSWORD_FORMS),
)

#: A value that stands for a password rather than being one: a word, a mask, a
#: template variable (``<password>``, ``${DB_PASS}``, ``$DB_PASS``, ``{password}``,
#: ``%(password)s``), a well-known default, a redaction (``[REDACTED]``).
_PLACEHOLDER = (
    r"(?i)^(?:(?:your|my|the|db|some|new|old)?[_-]?(?:pass(?:word|wd)?|pwd|secret)\d{0,4}|changeme|changeit|example"
    r"|test|root|admin|postgres|guest|user|username|foo|bar|foobar|1password|x+|\*+|\.{3,}|<[^>]*>"
    r"|\[[^\]]*\]|\$\{[^}]*\}|\$[A-Za-z_]\w*|\{\{?[^}]*\}\}?|%s|%\(\w+\)s)$"
)

#: Any rule's match that is a vendor's prefix and then one character repeated is a placeholder
#: from documentation: AKIAXXXXXXXXXXXXXXXX, ghp_xxxx..., dckr_pat_0000...
_FILLER = r"^(?:[A-Za-z0-9]{1,12}[_.-]){0,3}[A-Za-z0-9]{0,12}?(?:[xX]{8,}|0{8,}|\*{8,})$"

#: rule id -> what a match of it may be and still not be a secret: public
#: examples and placeholders (gitleaks' per-rule allowlist, searched in the
#: secret the rule captures).
_ALLOW: dict[str, str] = {
    # AWS's documented example keys end in EXAMPLE / EXAMPLEKEY.
    "aws-access-token": r"EXAMPLE$",
    "aws-secret-access-key": r"EXAMPLE",
    # Slack's documentation: T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX.
    "slack-webhook-url": r"(?i)x{5}|0{8}",
    # The signature of jwt.io's example token.
    "jwt": r"\.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c$",
    "url-password": _PLACEHOLDER,
    # The storage emulator's published development key.
    "azure-storage-account-key": r"^Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==$",
    "password-statement": _PLACEHOLDER,
}

_LABEL_WORDS = {
    "aws": "AWS",
    "gcp": "GCP",
    "api": "API",
    "pat": "PAT",
    "ad": "AD",
    "tf": "TF",
    "oauth": "OAuth",
    "npm": "NPM",
    "pypi": "PyPI",
    "jwt": "JWT",
    "github": "GitHub",
    "gitlab": "GitLab",
    "openai": "OpenAI",
    "digitalocean": "DigitalOcean",
    "huggingface": "HuggingFace",
    "hashicorp": "HashiCorp",
    "sendgrid": "SendGrid",
    "url": "URL",
}


@dataclass(frozen=True)
class SecretRule:
    id: str
    label: str
    pattern: re.Pattern
    #: Searched in the secret a match captures; a hit means "not a secret" (an example, a placeholder).
    allow: re.Pattern | None = None

    def matches(self, text: str):
        """The matches of this rule in ``text`` that are secrets (the allowlist's left out)."""
        for match in self.pattern.finditer(text):
            if self.allow is None or not self.allow.search(_secret(match)):
                yield match

    def search(self, text: str) -> re.Match | None:
        """The first match that is a secret, or None."""
        if self.allow is None:
            return self.pattern.search(text)
        return next(self.matches(text), None)


@dataclass(frozen=True)
class SecretFinding:
    rule_id: str
    label: str
    #: 1-based line of the secret itself (its group when the rule has one, so a
    #: delimiter consumed before it does not pull the line number back).
    line: int


#: The 36 rules in reference order, then ours: one row per form, the forms of one id
#: next to each other. Compiled on first access (PEP 562), so prefer ``secrets.RULES``
#: over ``from ... import RULES`` in module scope.
RULES: tuple[SecretRule, ...]


def rule_label(rule_id: str) -> str:
    """Human label for a rule id: ``github-pat`` → ``GitHub PAT``."""
    return " ".join(
        _LABEL_WORDS.get(part, part[:1].upper() + part[1:])
        for part in rule_id.split("-")
    )


def _port(js_source: str) -> str:
    """Rewrite a JS regex source for Python ``re`` with ``re.ASCII``.

    ``\\s`` becomes the JS whitespace set (spliced in when already inside a
    character class) and an unescaped ``$`` outside a class becomes ``\\Z``.
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(js_source):
        c = js_source[i]
        if c == "\\":
            escape = js_source[i : i + 2]
            if escape == r"\s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            else:
                out.append(escape)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return "".join(out)


#: ``\b`` then an optional group then a literal that starts with a word character
#: and is not followed by a quantifier.
_LEADING_BOUNDARY = re.compile(r"\\b(\(?)([A-Za-z0-9_](?:[A-Za-z0-9_-]|\\\.)*)(?![?*+{])")


def _hoist_boundary(source: str) -> str:
    """``\\b(dapi...`` → ``(dapi(?<!\\wdapi)...``: the same matches, faster.

    ``re`` finds a literal prefix in C but tries a pattern that starts with
    ``\\b`` at every position. Before a word character ``\\b`` means "no word
    character before", which a lookbehind after the literal checks as well.
    Not applied when the ``\\b`` governs a top-level alternation (openai).
    """
    m = _LEADING_BOUNDARY.match(source)
    if not m or _has_top_level_bar(source, m.start(2)):
        return source
    group, literal = m.groups()
    return f"{group}{literal}(?<!\\w{literal}){source[m.end():]}"


def _has_top_level_bar(source: str, start: int) -> bool:
    """Whether the group (or pattern) that ``start`` is in has a top-level ``|``."""
    depth = 0
    in_class = False
    i = start
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return False
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


#: Characters a keyword may be anchored on, in order of preference: rare in
#: prose and shared by many keywords, so a few gates cover all of them.
_ANCHORS = "~_-." + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "0123456789"


class _Gate:
    """Finds which of a group of keywords occur in a text.

    ``keyword in text`` is a full pass over the text per keyword (~45 of
    them). A regex that starts with a literal is scanned for it in C and
    tries its lookarounds only where that literal occurs, so all keywords
    that share an anchor cost one pass. ``any`` answers "none here?" as fast
    as it can; only when something is there does ``which``, with one group
    per keyword, name the keywords and so the rules to run.
    """

    def __init__(self, anchor: str, members: list[tuple[int, bool, str]]) -> None:
        # members: (rule index, case-insensitive?, keyword) with anchor in keyword;
        # each keyword splits after its last anchor into head and tail.
        spans = []
        for index, ic, kw in members:
            end = kw.rindex(anchor) + len(anchor)
            spans.append((index, ic, kw[:end], kw[end:]))
        prefix = re.escape(anchor)
        if all(len(head) > len(anchor) for _, _, head, _ in spans):
            # Test the character before the anchor first: most occurrences of
            # a common anchor (snake_case, bullets) fail here cheaply.
            before = set()
            for _, ic, head, _ in spans:
                c = head[-len(anchor) - 1]
                before.update({c.lower(), c.upper()} if ic else c)
            prefix += f"(?<=[{re.escape(''.join(sorted(before)))}]{re.escape(anchor)})"

        def around(heads: list[str], tail: str, ic: bool) -> str:
            alt = "(?<=" + "|".join(map(re.escape, heads)) + ")" if len(heads[0]) > len(anchor) else ""
            alt += f"(?={re.escape(tail)})" if tail else ""
            return f"(?i:{alt})" if ic and alt else alt

        # Heads of one length (with the same tail and case rule) can share a
        # lookbehind, which re tries as one branch of literals.
        shared: dict[tuple[int, str, bool], list[str]] = {}
        for _, ic, head, tail in spans:
            shared.setdefault((len(head), tail, ic), []).append(head)
        self.any = re.compile(
            prefix + "(?:" + "|".join(around(heads, tail, ic) for (_, tail, ic), heads in shared.items()) + ")",
            re.ASCII,
        )
        self.which = re.compile(
            prefix + "(?:" + "|".join(f"({around([head], tail, ic)})" for _, ic, head, tail in spans) + ")",
            re.ASCII,
        )
        # Only the first alternative that matches at a position is reported, so
        # each one also stands for the keywords that can match where it does.
        self.rules: tuple[frozenset[int], ...] = tuple(
            frozenset(j for j, jc, other, other_tail in spans if _overlap(head, tail, other, other_tail, ic or jc))
            for _, ic, head, tail in spans
        )

    def hits(self, text: str) -> set[int]:
        found: set[int] = set()
        first = self.any.search(text)
        if first is not None:
            for m in self.which.finditer(text, first.start()):
                found |= self.rules[m.lastindex - 1]
        return found


def _overlap(head_a: str, tail_a: str, head_b: str, tail_b: str, fold: bool) -> bool:
    """Whether two keywords, split at one anchor, can both occur around it."""
    if fold:
        head_a, tail_a, head_b, tail_b = (x.lower() for x in (head_a, tail_a, head_b, tail_b))
    heads = head_a.endswith(head_b) or head_b.endswith(head_a)
    return heads and (tail_a.startswith(tail_b) or tail_b.startswith(tail_a))


class _Scanner:
    """The compiled rules plus the gates of the prefilter (see ``_candidates``)."""

    def __init__(self, table) -> None:
        rules = []
        for rule_id, ignore_case, source, _ in table:
            flags = re.ASCII | (re.IGNORECASE if ignore_case else 0)
            pattern = re.compile(_hoist_boundary(_port(source)), flags)
            allow = re.compile(_ALLOW[rule_id] + "|" + _FILLER if rule_id in _ALLOW else _FILLER, re.ASCII)
            rules.append(SecretRule(rule_id, rule_label(rule_id), pattern, allow))
        self.rules: tuple[SecretRule, ...] = tuple(rules)
        #: Keywords with no anchor character, tested with ``in``, each once for all its rules.
        self.plain: dict[str, list[int]] = {}
        groups: dict[str, list[tuple[int, bool, str]]] = {}
        for index, (_, ignore_case, _, keywords) in enumerate(table):
            for keyword in keywords:
                anchor = _anchor(keyword)
                if anchor is None:
                    assert not ignore_case, keyword
                    self.plain.setdefault(keyword, []).append(index)
                else:
                    # The gate matches the anchor itself case-sensitively.
                    assert not (ignore_case and anchor.isalpha()), keyword
                    groups.setdefault(anchor, []).append((index, ignore_case, keyword))
        self.gates = [_Gate(anchor, members) for anchor, members in groups.items()]


def _anchor(keyword: str) -> str | None:
    """The run of the preferred anchor character that ends last in ``keyword``.

    A run ("-----" in "-----begin") makes a longer literal for ``re`` to scan
    for, and keeps the single-character gate free of keywords that start
    with the anchor.
    """
    c = next((c for c in _ANCHORS if c in keyword), None)
    if c is None:
        return None
    end = keyword.rindex(c) + 1
    start = end - 1
    while start and keyword[start - 1] == c:
        start -= 1
    return keyword[start:end]


@functools.cache
def _compiled() -> _Scanner:
    """Compile the rules and gates once, on first use (import stays cheap)."""
    return _Scanner(_TABLE)


def __getattr__(name: str):
    if name == "RULES":
        return _compiled().rules
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _candidates(text: str, prefilter: bool = True):
    """Yield the rules worth running on ``text``, in rule order.

    A rule runs only if one of its keywords occurs in ``text``.
    """
    scanner = _compiled()
    if not prefilter:
        yield from scanner.rules
        return
    indexes: set[int] = set()
    for gate in scanner.gates:
        indexes |= gate.hits(text)
    for keyword, rules in scanner.plain.items():
        if keyword in text:
            indexes.update(rules)
    for index in sorted(indexes):
        yield scanner.rules[index]


def _finding(rule: SecretRule, match: re.Match, text: str) -> SecretFinding:
    start = match.start(match.lastindex or 0)
    return SecretFinding(rule.id, rule.label, text.count("\n", 0, start) + 1)


def _findings(text: str, prefilter: bool = True):
    """Yield one finding per rule id that matches ``text``, in rule order.

    The rows of one id (the forms of ``password-statement``) stand next to each other in the
    table; the finding is that of the earliest line any of them matches.
    """
    rule_id, best = None, None
    for rule in _candidates(text, prefilter):
        if rule.id != rule_id:
            if best is not None:
                yield best
            rule_id, best = rule.id, None
        match = rule.search(text)
        if match:
            finding = _finding(rule, match, text)
            if best is None or finding.line < best.line:
                best = finding
    if best is not None:
        yield best


def _scan(text: str, prefilter: bool = True) -> list[SecretFinding]:
    return list(_findings(text, prefilter))


def scan(text: str) -> list[SecretFinding]:
    """One finding per rule that matches ``text``, in rule order.

    Example: ``[f.label for f in scan(memory_text)]``
    """
    return _scan(text)


def first_secret(text: str) -> SecretFinding | None:
    """The first rule (in rule order) that matches ``text``, or None.

    Example: ``if (hit := first_secret(content)): raise RefusedError(hit.label)``
    """
    return next(_findings(text), None)


def _secret(match: re.Match) -> str:
    """What a match holds secret: its group (the last that took part, so a rule with one
    alternative per form gives each its own), else the whole match."""
    return match.group(match.lastindex or 0)


def _span(match: re.Match) -> tuple[int, int]:
    return match.span(match.lastindex or 0)


def _redact(text: str, prefilter: bool = True) -> str:
    spans = sorted(_span(m) for rule in _candidates(text, prefilter) for m in rule.matches(text))
    out: list[str] = []
    done = 0  # text[:done] is in out
    for start, end in spans:
        if start < done:  # overlaps a secret already cut out (two rules, one secret)
            if end > done:
                done = end
            continue
        out += [text[done:start], REDACTED]
        done = end
    out.append(text[done:])
    return "".join(out)


def redact(text: str) -> str:
    """Replace every secret (its group, else the whole match) with ``[REDACTED]``.

    The secrets are found in the original text by every rule, then cut out
    (overlapping ones as one), so one rule's redaction never hides the context
    another needs (an AKIA id next to its secret key). Example: ``redact(line)``
    """
    return _redact(text)


def scan_all(text: str) -> list[SecretFinding]:
    """Every line on which a rule matches, for an audit: sorted by line, then rule order.

    ``scan`` stops at a rule's first match; an audit wants each place. A
    match spanning lines (a private key) is reported at its first line.
    Example: ``[(f.line, f.rule_id) for f in scan_all(text)]``
    """
    found: dict[tuple[int, str], SecretFinding] = {}
    order = {}
    for index, rule in enumerate(_candidates(text)):
        order.setdefault(rule.id, index)
        for match in rule.matches(text):
            finding = _finding(rule, match, text)
            found.setdefault((finding.line, rule.id), finding)
    return sorted(found.values(), key=lambda f: (f.line, order[f.rule_id]))
