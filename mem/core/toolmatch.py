"""Which saved feedback applies to a tool call: the matcher of the PreToolUse hook.

A prompt names what the user wants; a tool call names what the agent is about to do, in
commands, flags and paths (``git push --force origin main``, an edit of
``migrations/versions/0042_add_vat.py``). A memory says which of those it is about in the
same words, mostly in code spans and paths: "Never run `git push --force`", "Every
migration file under `migrations/`". Those are its **triggers**. A trigger applies to a
call when every one of its atoms is in the call:

* a **flag** (``-f``, ``--no-verify``, ``-auto-approve``) must be among the call's flags
  (``-rf`` is ``-r`` and ``-f`` in any order);
* a **path** (``migrations/``, ``.env``, ``config/production.yaml``) must name the call's
  file or a path in its command, as a whole, a directory on its way, or its file name; a
  ``.`` (``git checkout -- .``) is any path;
* a **word** of a command must be a word of one command of the call (``make proto``: both
  in one segment of ``cd api && make proto``, as written); in a file's text a span of several
  words is a phrase (``SELECT *`` is not ``SELECT count(*)``), and a word alone is compared as
  the recall ranker compares words (mem/core/recall/ranker.py's terms: NFKC, case folded, stemmed;
  CJK in bigrams);
* a piece of **code** (``print()``, ``datetime.now()``, ``@patch``, ``MagicMock``) or a host
  name (db-staging.internal) must be in the text as code: ``print(`` is a call of print, not the
  word "print"; ``datetime.now()`` is the bare call when the memory shows ``datetime.now(tz)`` too,
  and a function passed as a value is used too (``default=datetime.utcnow``);
* a **placeholder** (``pip install <new>``) needs an argument there: a package, not ``-r
  requirements.txt``; a command that adds a package (``pip install <new>``, ``pnpm add``)
  stands for adding a package with any package manager (``yarn add moment``, ``npm install
  lodash``), and upgrading one (``-U``) is not adding it.

A trigger weighs what its atoms do (a path 2, a flag or a word 1; a command named alone 2,
``yarn``, unless it is one as common as ``cat`` or ``git``; a flag alone 2 in a call of a
command the memory names, ``-n`` in ``git commit -n`` but not in ``git log -n 5``) and a memory
scores the weight of its best trigger that applies, plus half of each further one; it is
surfaced from ``MIN_WEIGHT``. Besides the spans as written:

* a command as specific as ``terraform`` with its subcommand is the rule's action without its
  flags too (``terraform apply`` for ``terraform apply -auto-approve``), and so is any command
  in a sentence that says when rather than forbids ("whenever you write a `git commit -m`":
  every ``git commit``);
* a memory that forbids two things one command does ("never `npm install`, `npm run`") is
  about the command: naming it alone is a trigger too;
* a Latin verb in a Chinese or Japanese rule (`release/` ブランチには直接 push しないこと) is
  what a shell call on its path must do;
* a command named alone, in a memory that names what it does (``kubectl apply``), does not
  meet a call that only looks (``kubectl get pods``); a call that only reads (Read, ``cat``,
  ``grep``, ``git log``, with no redirection) surfaces only memories about reading;
* a directory said in passing, outside code spans, scopes the memory's other triggers: "In
  service code (src/)" needs a path under src/ in the call, "except build output (build/)"
  excludes a command whose arguments all lie there (``rm -rf dist``); a flag span is of the
  file its sentence names (`scripts/seed.py` ... `--env production`);
* a memory is about reading when a sentence of it that forbids or requires names reading
  ("Never print them (`cat`, Read)"; not "use the logger, not print").
* a checker (``pytest``, ``mypy``, ``ruff check``) run on a path does not change it: a rule
  that names only that path is not met.
* a clause that says what to do, in a sentence that forbids ("run `pytest -x -q` ...; never ...
  `--cov`", "never edit them: change the .proto file and run `make proto`", "log with `logger`;
  never leave `print()`"), or a sentence that starts so ("Run `terraform plan -out plan.tfplan`"),
  is a **prescription**: its spans are no triggers, and a call that does it complies: a rule that
  names only a path is not met by it (`make proto && git diff src/generated/`, an entry under
  `## Unreleased` in CHANGELOG.md), and a prescribed flag is no kind of a forbidden one
  (``--force-with-lease`` is not ``--force``) unless the call names what the rule is about ("on
  main": ``git push --force-with-lease origin main``);
* "always pass `--context` to `kubectl`" is met by a call of kubectl without the flag, whatever it
  does (``kubectl get pods``), and not by one with it;
* a file named with a flag of it in one sentence (`scripts/seed.py` ... `--env production`) is the
  flag's rule: running the file otherwise (``--env staging``) does not meet it;
* ``pip3`` and ``pip3.11`` are ``pip``;
* a file a shell call runs or feeds to a program (``python batch/nightly_report.py``, ``psql -f
  migrations/x.sql``, ``./x.sh``) is not changed by it: a memory about changing the path (never
  edit, no changes, 変更する場合), and not about running it, is not met (``--out x`` is no run);
* in a script's text (a Makefile, ``*.sh``, a workflow) a command named alone is met at the start
  of a line (``docker-compose up`` in a Makefile's recipe).
* a sentence saying when you write something ("whenever you write a `git commit -m`") is not met
  by a call whose flags say it writes nothing (git's ``--no-edit``, ``--fixup``, ``--squash``).
* what a rule says must be updated or run ("must update `docs/openapi.yaml`", 必须同步更新
  `docs/openapi.yaml`) is what to do, as a prescription;
* code a rule forbids on something ("`@patch` on repository classes") is met only in a text that
  names it (a ``MagicMock()`` for SMTP is not on the repository);
* a call that names what a required flag names (``kubectl config current-context`` for
  ``--context``) manages it and needs no such flag.
* a rule "against" a target ("never `kubectl delete` against the prod-eu context") is met by a
  call that names it (``--context prod-eu``), unless the rule widens it ("or any branch ...").
* what a sentence that neither forbids nor requires says to do things *with* ("move other things to
  trash with `gio trash`", "deploys are run with `scripts/deploy.sh <env>`") is a prescription;
* a call that runs a prescribed script (``scripts/deploy.sh staging``) or, with the prescribed
  command, uses the file it names (``terraform apply plan.tfplan`` after "`terraform plan -out
  plan.tfplan` ... apply that file") complies: a path named alone, or an action without its flags
  (``terraform apply``), is not met by it;
* what a rule says a file must implement ("must implement `downgrade()` as well as `upgrade()`") is
  no trigger, and a whole file written (Write) that defines each of them with more than a stub
  (``pass``, ``...``) complies;
* a command that only names a path (``ls``, ``stat``, ``test``, ``chmod``, ``git check-ignore``,
  ``git ls-files``) neither reads nor changes it: a rule that names only the path is not met; after
  ``cd`` a path is acted on by what follows (``cd services/payments && pytest`` only checks);
* a database client running a query that only reads (``psql -c "SELECT ..."``, no ``-f``) only
  reads, as ``cat`` does; a ``>`` inside quotes is no redirection;
* a path in a sentence about adding a package ("a new package in package.json, `pnpm add`") is a
  manifest: an edit or write of it is met only when its text declares a package;
* a text already in the style a rule asks for (です・ます調: every sentence ending in です/ます),
  or carrying the marker it asks for (标注待翻译, "mark them as TODO"), complies with a rule that
  names only its path; a commit message with a body (a second ``-m``, a
  blank line) complies with a "whenever you write a `git commit -m`" rule that asks for "a blank
  line, then a body";
* ``git push origin +main`` is a forced push (``--force``, ``-f``), and ``git restore .`` is ``git
  checkout -- .`` (not with ``--staged``);
* staging a file (``git add``), printing it with a stream editor (``sed -n``, ``jq``; not ``sed -i``)
  or feeding it to a program (``source .env``, ``--env-file .env``, ``python -m json.tool x >
  /dev/null``) does not change it: ``> /dev/null`` and ``2>&1`` write no file, and "never write
  secrets into them" is about changing the file;
* a manifest's metadata (``"version": "2.6.0"``) declares no package;
* a host name (db-staging.internal) is met by a shell call that connects to it to act: not by a
  file that names it (a config, a workflow) nor by a probe or a dump (``ping``, ``pg_dump``);
* a ``--dry-run``, ``--help`` or ``--version`` does nothing, code in a comment line (``# print(x)``)
  is not run, and prose (``README.md``, ``*.txt``) mentions a command or code
  without running it: only a rule that names the file is met there.

Each of these is named in ``RULES``, so that bench/toolcall.py --cv can choose the rules on
some splits of the labelled set and measure them on another.

A span in a sentence (or a CJK clause) that says what to do instead ("use `docker compose`",
"new work goes in `api/v2/`", "patch via `patches/`", the "How to apply:" line, 先改
`config/staging.yaml`), and that
neither forbids nor says when, is no trigger: a call that does what the memory asks needs no
reminder. Word overlap alone, which is what prompt recall lives on, never surfaces anything
here: most tool calls must surface nothing, and a tool call's words (a file's content) are
mostly not about the rule. Only ``feedback`` and ``project`` memories are candidates.

The triggers of each memory are kept in the state directory between calls, keyed by the
file's modification time and size, so a hook called before every tool reads only what changed.

uses: ranker (terms), recall (read_body), messages (tool_file), memdir.store (atomic_write)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

#: A memory is surfaced when its triggers that apply weigh this much (chosen on all of
#: tests/fixtures/toolcall-bench, cross-validated by split; see bench/RESULTS.md).
MIN_WEIGHT = 2.0
#: At most this many memories for one tool call.
MAX_PER_CALL = 2
#: Of a file's content or an edit's new text, this much is read for words.
TEXT_CHARS = 4096
#: The memory types a tool call can surface.
TYPES = ("feedback", "project")
#: Bump when the triggers a memory gives change: cached triggers of older versions are rebuilt.
TRIGGERS_VERSION = 6
TRIGGERS_CACHE = "tool-triggers.marshal"

#: The matcher's rules past the first version's (code spans, paths and flags as triggers), each named so
#: that bench/toolcall.py --cv can choose them on some splits and measure them on another.
RULES = frozenset((
    "as-written",        # a command's words as written, in one segment of the call
    "code",              # code as code: `print()` is `print(`, `@patch` a decorator
    "hosts",             # host names outside code spans (db-staging.internal), met by a call that connects to act
    "argument",          # a placeholder needs an argument: `pip install <new>`
    "adds-package",      # adding a package is one rule across package managers, and a manifest edit adds one or not
    "two-things",        # forbidding two things one command does is about the command
    "looks",             # a command named with what it does does not meet a call that only looks (or --dry-run)
    "shell-reads",       # `cat`, `grep`, `git log`, `psql -c "SELECT ..."` only read, as Read does
    "scope",             # an unquoted directory scopes (in src/) or excludes (except build/)
    "clauses",           # CJK clauses, and more ways to say what to do instead (goes in, 先改)
    "refspec",           # HEAD:release/2.5 names both sides; +main is a forced push
    "action-alone",      # `terraform apply -auto-approve` is about `terraform apply` too
    "subcommand-flags",  # a flag alone is of the subcommand the memory names (`git commit -n`)
    "when-action",       # "whenever you write a `git commit -m`": the action is the trigger, the flag its usual form
    "cjk-verbs",         # a Latin verb in a CJK rule (`release/` に直接 push しない) is what shell calls must do
    "phrases",           # in a file's text, a span of several words is a phrase (`SELECT *`), not a bag of words
    "flag-of",           # a flag span is of the file its sentence names (`scripts/seed.py` ... `--env production`)
    "reading-rules",     # a memory is about reading when a rule of it names reading (`cat`, Read), not "print"
    "checks",            # a checker (pytest, mypy) or a lister (ls, git check-ignore) on a path does not change it
    "references",        # `utcnow()` is met by `default=datetime.utcnow` too (a function passed, called later)
    "via",               # "Patch via `patches/`", "trash them with `gio trash`" say what to do instead
    "prescriptions",     # "run `make proto`", "log with `logger`": what to do; a call that does it (or runs the
                         # prescribed script, or uses its file: `apply plan.tfplan`) complies
    "requirements",      # "always pass `--context` to `kubectl`": a call of kubectl without it
    "conditions",        # `scripts/seed.py` with `--env production` in one sentence: the flag is the rule, not the path
    "versioned-names",   # `pip3`, `pip3.11` are `pip`; `git restore` is `git checkout --` (one command, two names)
    "runs",              # a file run or fed to a program (`python x.py`, `psql -f x.sql`) is not changed by it
    "scripts",           # in a script's text (Makefile, *.sh) a command named alone is met at the start of a line;
                         # in prose (*.md, *.txt) a command or code is mentioned, not run
    "writes-nothing",    # "whenever you write a `git commit -m`" is not met by a commit that writes no message (--no-edit)
    "must-do",           # "must update `docs/openapi.yaml`", 必须同步更新 `docs/openapi.yaml`: what to do, not a trigger
    "objects",           # "`@patch` on repository classes": code in a text that does not name them is not on them
    "managed",           # a call that names what a required flag names (`current-context`) manages it, needs none
    "targets",           # "never `kubectl delete` against the prod-eu context": a call that does not name prod-eu
    "asked-text",        # a text that already has what a rule asks of it complies: the functions it must implement
                         # (not as stubs), the style (です・ます), the commit message's body
))

#: Tool names of both clients, by what the tool does.
TOOL_KINDS = {
    "Bash": "shell", "run_shell_command": "shell",
    "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "edit": "edit", "replace": "edit",
    "Write": "write", "write_file": "write",
    "Read": "read", "read_file": "read", "read_many_files": "read",
}

_CODE_SPAN = re.compile(r"`([^`\n]{1,120})`")
#: A path-like word outside code spans: ``src/shop/api/``, ``docs/runbook.md`` (not "Tue/Thu").
_BARE_PATH = re.compile(r"(?<![\w/.`])(?:(?:\.?[\w.-]+/)+(?:[\w.-]*\.\w+)?"
                        r"|[\w-]+\.(?:toml|json|ya?ml|lock|cfg|ini|md|py|sh|sql|ts|tsx|js))(?![\w`/])")
#: A host name outside code spans: db-staging.internal.
_HOST = re.compile(r"(?<![\w.@/-])(?:[a-z0-9-]+\.)+(?:internal|local|lan|corp|intra|com|net|org|io|dev|cloud)"
                   r"(?![\w-]|\.\w)")
_SHELL_SPLIT = re.compile(r"[\s;|&()<>`'\"=]+")
#: A shell command's segments: ``cd web && git push -f`` is two (quotes are kept whole: ``grep 'print(' src/``).
_SEGMENTS = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|(&&|\|\||[;|&\n(]|\$\()")
#: What runs a command rather than being it: ``sudo``, ``env``, ``A=b``, ``time``.
_WRAPPER = re.compile(r"\s*(?:(?:sudo|env|time|nohup|exec|command)(?:\s+-u\s+\S+|\s+-\S+)*\s+|[A-Za-z_]\w*=\S*\s+)")
#: Redirections that write no file: ``> /dev/null``, ``2>&1``.
_NO_WRITE = re.compile(r"\d*>>?\s*/dev/null\b|\d*>&\d")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.")
#: Sentences of a memory: a code span's sentence says whether it is the rule or what to do instead;
#: in Chinese and Japanese a clause (after ，) says it.
_SENTENCE = re.compile(r"(?<=[.;!?。！？；])\s+|\n+|(?<=[。！？；，])")
#: (Without the "clauses" rule, as the matcher of 0952dd5 read them.)
_SENTENCE_WHOLE = re.compile(r"(?<=[.;!?。！？；])\s+|\n+|(?<=[。！？；])")
#: What to do instead ("use `docker compose`", "new work goes in `api/v2/`", the "How to apply:" line)...
_ALTERNATIVE = re.compile(r"\binstead\b|\buse\b|\b(?:go|goes|belongs?) (?:in|into|under)\b|\bhow to apply\b"
                          r"|改用|先改|先在|改为|请用|请使用|应使用|代わりに|を使う|を使って", re.I)
_VIA = re.compile(r"\bvia\b", re.I)
#: "Move other things to trash with `gio trash`", "deploys are run with `scripts/deploy.sh <env>`": the instrument.
_INSTRUMENT = re.compile(r"\bwith\s+`")
_ALTERNATIVE_FIRST = re.compile(r"\binstead\b|\buse\b|\bgoes? in\b|\bhow to apply\b|改用|代わりに", re.I)
#: ... unless the sentence also forbids, requires or says when: then its spans are the rule.
_RULE = re.compile(r"\b(?:never|not|no|avoid|must|only|always|ask|when|whenever)\b|n't|不要|禁止|必须|不得|不能|しない",
                   re.I)
#: A sentence that says when the rule applies ("whenever you write a `git commit -m`") ...
_WHEN = re.compile(r"\b(?:when|whenever|each time|every time)\b|的时候|时，|する際|するとき|する時", re.I)
#: ... rather than forbidding something.
_FORBID = re.compile(r"\b(?:never|not|no|avoid|don't|do not)\b|不要|禁止|不得|しない", re.I)
#: Clauses of a sentence that both says what to do and forbids: "run `pytest -x -q`; never ... `--cov`",
#: "never edit them: change the .proto file and run `make proto`", "`datetime.now(timezone.utc)`, never ...".
_CLAUSE = re.compile(r";\s+|:\s+|,\s+(?=(?:and\s+|but\s+)?(?:never|not|no|don't|do not)\b)", re.I)
#: A clause (or a sentence that starts so) that prescribes: what a call that does it already complies with.
_PRESCRIBE = re.compile(r"\b(?:run|use|pass|log with|store|change|add|regenerate|apply)\b", re.I)
_PRESCRIBE_FIRST = re.compile(r"^\W*(?:run|use|pass|log with|store)\b", re.I)
#: "Must update `docs/openapi.yaml`" (必须同步更新 ...): what follows is what to do.
_MUST_DO = re.compile(r"\bmust\s+(?:also\s+)?(?:update|run|use)\b|必须(?:同步)?(?:更新|使用|运行|执行)|必ず(?:更新|使用|実行)",
                      re.I)
#: "Must implement `downgrade()`": what follows are definitions a file must have.
_MUST_DEFINE = re.compile(r"\bmust\s+(?:also\s+)?(?:implement|define|provide|have)\b|必须(?:实现|定义)|必ず(?:実装|定義)", re.I)
#: A definition in Python or JavaScript: ``def downgrade():``, ``function downgrade(`` (group 1: its indentation).
_DEFINITION = r"(?m)^([ \t]*)(?:async\s+)?(?:def|function)\s+{}\s*\("
#: A body that only stands in for one: ``pass``, ``...``, ``raise NotImplementedError``.
_STUB = re.compile(r"pass|\.\.\.|raise\s+NotImplementedError(?:\(.*\))?|return|\{\s*\}|\}|[\"']{3}.*[\"']{3}|#.*|//.*")
#: "です・ます調で書く" (敬体): the polite style, whose sentences end so.
_POLITE_RULE = re.compile(r"です・?ます|敬体")
_POLITE_END = re.compile(r"(?:ます|ました|ません|ませんでした|です|でした|ましょう|でしょう|ください)[。！？!?）)」]*$")
#: "只添加新的键并标注待翻译", "mark them as TODO": the marker a text that does what the rule asks carries.
_MARKER = re.compile(r"(?:标注|标记|マークを付け|mark(?:ed)?\s+(?:them\s+|it\s+)?(?:as|with))"
                     r"\s*[「“\"'`]?([^\s，。、,.;:「」“”\"'`]{2,20})", re.I)
#: "a blank line, then a body that says why": a message with a body.
_BODY_RULE = re.compile(r"\bblank line\b[^.]*\bbody\b", re.I)
#: An edit of a manifest that declares a package: `"dayjs": "^1.11.0"`, `"httpx>=0.27"`, `dependencies = [`.
_METADATA = r"(?:version|name|description|license|readme|main|type|private|author|homepage|python|node|requires-python)"
_DEPENDENCY = re.compile(r"(?im)\bdependencies\b"
                         r"|^\s*\"(?!" + _METADATA + r"\")[@\w./-]+\"\s*:\s*\"(?:[\^~<>=*\d]|workspace:|npm:)"
                         r"|^\s*\"[a-z0-9][\w.\[\],-]*\s*(?:[<>=!~]=|[<>@])|^\s*(?!" + _METADATA + r"\b)[\w-]+\s*=\s*"
                         r"(?:\"[\^~<>=*\d]|\{\s*version)")
#: Commands that name a path without reading or changing what is in it.
_NAMES_ONLY = frozenset("ls stat test file du realpath readlink basename dirname cd pushd chmod chown".split())
_GIT_NAMES_ONLY = frozenset("check-ignore check-attr ls-files status add".split())  # `git add` stages what is there
#: Database clients, and what a query that only reads starts with.
_DB_CLIENTS = frozenset("psql mysql mariadb sqlite3".split())
_SQL_READS = frozenset("select show explain describe \\d \\dt \\l".split())
_SQL_WRITES = frozenset("insert update delete alter create drop truncate grant revoke copy merge vacuum "
                        "reindex".split())
#: "Always pass `--context` to `kubectl`": every call of the command must have the flag.
_ALWAYS = re.compile(r"^\W*always\s+(?:pass|use|give|set|add|name|run\s+with)\b", re.I)
#: What a rule names as its target ("on main", "against the prod-eu context"): a call of it is not excused
#: by doing the prescribed thing (`--force-with-lease` on main is still a forced push of main).
_TARGET = re.compile(r"\b(?:on|against)\s+(?:the\s+)?([a-z][\w./-]*)", re.I)
#: An action's target: "against the prod-eu context" ...
_AGAINST = re.compile(r"\bagainst\s+(?:the\s+)?([a-z][\w./-]*)", re.I)
#: ... and "or any branch someone else pulls" widens it to more than what it names.
_WIDER = re.compile(r"\b(?:or|and)\s+(?:any|every|all|other)\b", re.I)
_NOT_TARGETS = frozenset("a an any anything it them this that these those your our their every all each".split())
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
#: A directory said after these is one the rule does not cover ("except build output (build/)").
_EXCEPT = re.compile(r"\b(?:except|outside|other than|apart from|but not)\b|除了|以外", re.I)
#: Commands so common that naming one alone says nothing about a call (`cat`, `git`): they count
#: as a word, not as a command named alone.
_COMMON_COMMANDS = frozenset("cat ls cd echo grep head tail git python python3 make sh bash find less sudo rm cp mv".split())
#: Commands that only show files: a call made of them only reads.
_READERS = frozenset("cat head tail less more ls grep egrep rg wc stat tree du file diff bat cd pwd".split())
#: Subcommands that only look (``kubectl get``, ``git log``, ``npm ls``) ...
_LOOKS = frozenset("get describe logs log status show list ls top version help view inspect explain diff info outdated "
                   "why search ps blame whoami".split())
#: ... unless the command also does one of these.
_ACTS = frozenset("apply delete create edit patch replace scale rollout run exec install add remove rm push commit reset "
                  "clean set update upgrade deploy destroy drop ci uninstall publish build start stop restart up down init "
                  "cp mv checkout merge rebase".split())
#: Commands that check files without changing them (unless told to fix): a path a rule guards is not touched.
_CHECKERS = frozenset("pytest mypy pyright flake8 pylint tsc jest vitest ruff eslint yamllint shellcheck actionlint "
                      "hadolint json.tool".split())
#: Programs that run or read the file they are given (its script, or its -f): they do not change it.
_RUNNERS = frozenset("python python3 node bash sh zsh ruby perl php deno psql mysql sqlite3 source .".split())
#: Programs that print what they read unless told to write in place (``sed -i``, ``yq -i``).
_STREAM_READERS = frozenset("sed awk jq yq".split())
_SCRIPT_FILE = re.compile(r"\.(?:py|sh|bash|rb|pl|js|mjs|ts)$")
#: A memory about changing a file (never edit it, no changes there, 変更する場合) ...
_CHANGE = re.compile(r"\b(?:edit|edited|edits|editing|modify|modified|change|changes|changed|implement"
                     r"|write \w+ (?:in)?to)\b|変更|修改|编辑|覆盖|書き換|写入|書き込", re.I)
#: ... and not about running it ("never run", 実行しないこと).
_RUN = re.compile(r"\b(?:run|runs|execute|executed|deploys?)\b|実行|运行|执行", re.I)
#: A sentence saying when that names writing ("whenever you write a `git commit -m`") ...
_WRITE = re.compile(r"\b(?:write|writes|writing|wrote)\b|書く|書き|写", re.I)
#: ... is not met by a call whose flags say it writes nothing: git's ways to commit keeping or deriving the message.
_WRITES_NOTHING = frozenset(("--no-edit", "--fixup", "--squash", "--reuse-message"))
#: Files whose lines are commands: a command named alone is met there at the start of a line.
#: Flags with which a command shows what it would do, or how it is used, and does nothing.
_DOES_NOTHING = frozenset(("--dry-run", "--help", "--version"))
#: A line that is only a comment (``# print(x)``, ``// TODO``): code there is not run.
_COMMENT_LINE = re.compile(r"(?m)^[ \t]*(?:#(?!!)|//).*$")
#: Commands that reach a host without changing anything on it: probes, lookups, dumps.
_PROBES = frozenset("ping nc ncat telnet dig nslookup host traceroute mtr pg_isready pg_dump mysqldump "
                    "ssh-keyscan".split())
#: Prose, where a command or code is mentioned rather than run.
_PROSE = re.compile(r"\.(?:md|markdown|rst|txt|adoc)$")
_SCRIPT_PATH = re.compile(r"(?:^|/)(?:makefile|gnumakefile|dockerfile|[^/]*\.(?:sh|bash|mk))$|(?:^|/)\.github/workflows/")
#: How each package manager adds a package: ``pip install <new>`` and ``pnpm add`` are one rule.
_ADDS_PACKAGE = {"pip": ("install",), "pip3": ("install",), "uv": ("add", "install"), "poetry": ("add",),
                 "pipenv": ("install",), "conda": ("install",), "npm": ("install", "i", "add"),
                 "pnpm": ("add", "install", "i"), "yarn": ("add",), "bun": ("add",), "cargo": ("add",),
                 "go": ("get",), "gem": ("install",), "bundle": ("add",), "composer": ("require",)}
#: The verbs of these that only ever add (``npm install`` alone installs what the lockfile says).
_ADD_VERBS = frozenset(("add", "require", "get"))

# A trigger is a tuple; its fields, by position:
(WORDS, FLAGS, PATHS, WEIGHT, COMMAND, COMMANDS, LITERALS, CODE, SHAPE, SCOPE, OUTSIDE, PHRASE, PRESCRIBED, TARGETS,
 MISSING) = range(15)
# WORDS: terms, for a file's text; FLAGS, PATHS; WEIGHT; COMMAND: a command named alone, else "";
# COMMANDS: for a flag alone, the commands the memory names ("git commit", "pytest"); LITERALS: the
# words of a command, as written; CODE: a regular expression for code or a host name, else "";
# SHAPE: "arg" (a placeholder), "any-path" (`.`), "adds-package", space-separated; SCOPE and OUTSIDE:
# the directories the memory's rule covers / does not cover; PHRASE: a regular expression for the span
# in a file's text, else ""; PRESCRIBED: what the memory says to do, each (literals, flags, phrase): a call that
# does it complies; TARGETS: what its rules name as their target ("on main"); MISSING: the flags every call of
# COMMAND must have ("always pass `--context` to `kubectl`").


def _is_flag(piece: str) -> bool:
    return len(piece) > 1 and piece[0] == "-" and (piece[1].isalpha() or (piece[1] == "-" and piece[2:3].isalpha()))


def _is_path(piece: str) -> bool:
    return "/" in piece or (piece.startswith(".") and len(piece) > 1 and piece[1] != ".") or bool(
        re.fullmatch(r"[\w-]+\.(?:py|md|json|ya?ml|toml|lock|txt|sh|ts|tsx|js|c|h|go|rs|sql|cfg|ini|proto|env)", piece))


def _norm_path(piece: str) -> str:
    piece = piece.strip("'\"(),:;").rstrip(".").lower()
    while piece.startswith("./"):
        piece = piece[2:]
    return piece


def _flags(piece: str) -> list[str]:
    """``-fd`` is ``-f`` and ``-d`` too; ``--force=yes`` is ``--force``."""
    piece = piece.split("=", 1)[0].lower()
    out = [piece]
    if not piece.startswith("--") and len(piece) > 2 and piece[1:].isalpha():
        out.extend(f"-{c}" for c in piece[1:])
    return out


def _is_code(piece: str) -> bool:
    """A piece of code rather than a command's word: ``print()``, ``@patch``, ``MagicMock``, ``unittest.mock``."""
    return not _is_path(piece) and bool(re.search(r"[()@]|[a-z][A-Z]|[A-Za-z_]\.[A-Za-z_]", piece))


def _code_pattern(piece: str, exact_calls: bool) -> str:
    """The regular expression that finds ``piece`` in code: ``f()`` is any call of f unless ``exact_calls``,
    or f passed as a value (``default=datetime.utcnow``)."""
    decorator = piece.startswith("@")
    body = piece[1:] if decorator else piece
    if body.endswith("()"):
        name = re.escape(body[:-2])
        call = name + (r"\(\)" if exact_calls else r"\s*\(")
        # a reference: `datetime.now` as a whole, `utcnow` as an attribute (not the word in a comment)
        reference = (r"(?<![\w])" if "." in body[:-2] else r"(?<=\.)") + name + r"(?![\w(])"
        if "code" in RULES and "references" in RULES:
            return rf"(?:(?<![\w]){call}|{reference})"
        return rf"(?<![\w]){call}"
    pattern = re.escape(body)
    if decorator:
        pattern = r"@(?:[\w.]+\.)?" + pattern  # `@patch` is `@mock.patch` too
    else:
        pattern = r"(?<![\w])" + pattern
    if body[-1:].isalnum() or body[-1:] == "_":
        pattern += r"(?![\w])"
    return pattern


# --- a memory's triggers ----------------------------------------------------------

def triggers(text: str) -> list[tuple]:
    """Each trigger a memory's text holds (a tuple, its fields named by WORDS ... OUTSIDE): the code
    spans, bare paths and host names of its sentences that state the rule (not those saying what
    to do instead)."""
    from mem.core.recall import ranker

    found: list[tuple] = []
    spans: list[tuple[str, bool, int]] = []  # (span, quoted, sentence number)
    when: set[int] = set()  # sentences that say when the rule applies rather than forbid
    verbs: dict[int, tuple[str, ...]] = {}  # what a CJK sentence says is done (push), in Latin letters
    scope: list[str] = []
    outside: list[str] = []
    prescribed: list[str] = []  # spans saying what to do
    targets: list[str] = []
    only_at: dict[int, list[str]] = {}  # the one target a sentence's rule is about
    objects: dict[int, list[str]] = {}  # what a sentence's forbidden code is on ("`@patch` on repository classes")
    required: list[tuple[list[str], list[str]]] = []  # (flags, commands) of "always pass `--context` to `kubectl`"
    defines: list[str] = []  # what a file the memory is about must define ("must implement `downgrade()`")
    rules = RULES
    sentences, alternative = (_SENTENCE, _ALTERNATIVE) if "clauses" in rules else (_SENTENCE_WHOLE, _ALTERNATIVE_FIRST)
    split = sentences.split(text)
    for n, sentence in enumerate(split):
        if (alternative.search(sentence) or ("via" in rules and _VIA.search(sentence))) and not _RULE.search(sentence):
            prescribed += _CODE_SPAN.findall(sentence)
            continue  # what to do instead: a call that does it needs no reminder
        following = split[n + 1] if n + 1 < len(split) else ""
        if "via" in rules and _INSTRUMENT.search(sentence) and not _RULE.search(sentence):
            prescribed += _CODE_SPAN.findall(sentence)  # "move them to trash with `gio trash`" (its scope still counts)
        else:
            spans += [(span, True, n)
                      for span in _rule_spans(sentence, following, prescribed, required, rules, defines)]
        if _FORBID.search(sentence):
            plain_here = _CODE_SPAN.sub(" ", sentence)
            named_here = [t.lower() for t in _TARGET.findall(plain_here) if t.lower() not in _NOT_TARGETS]
            targets += named_here
            against = [t.lower().rstrip("./-") for t in _AGAINST.findall(plain_here) if t.lower() not in _NOT_TARGETS]
            if against and "targets" in rules and not _WIDER.search(plain_here):
                only_at[n] = against  # "against the prod-eu context" (not "not installed on the CI runners")
            if named_here and "objects" in rules:
                objects[n] = named_here
        plain = _CODE_SPAN.sub(" ", sentence)
        if _WHEN.search(sentence) and not _FORBID.search(sentence):
            when.add(n)
        if _CJK.search(plain):
            verbs[n] = tuple(w for w in re.findall(r"[a-z]+", plain.lower()) if w in _ACTS)
        for m in _BARE_PATH.finditer(plain):
            path = _norm_path(m.group())
            if path.endswith("/"):
                if "scope" in rules:
                    (outside if _EXCEPT.search(plain[:m.start()]) else scope).append(path)
            else:
                spans.append((m.group(), False, n))
        if "hosts" in rules:
            spans += [(m.group(), False, n) for m in _HOST.finditer(plain)]
    scope_t, outside_t = tuple(dict.fromkeys(scope)), tuple(dict.fromkeys(outside))
    changing = "runs" in rules and any(_CHANGE.search(x) for x in split) and not any(
        _RUN.search(_CODE_SPAN.sub(" ", x)) and _RULE.search(x) for x in split)
    # What a rule about the memory's files asks of their text (a path trigger is not met by a text that does it):
    # the functions it must define, the polite style; and the sentences that are about adding a package, whose
    # paths are the manifests (`package.json`) an edit of which must add one.
    asks = [f"def={d}" for d in dict.fromkeys(defines)] + (
        ["polite"] if "asked-text" in rules and _POLITE_RULE.search(text) else []) + (
        [f"mark={m}" for m in _MARKER.findall(_CODE_SPAN.sub(" ", text))] if "asked-text" in rules else [])
    body = "asked-text" in rules and bool(_BODY_RULE.search(text))
    adding = {n for span, quoted, n in spans if quoted and len(span.split()) >= 2
              and span.split()[1] in _ADDS_PACKAGE.get(span.split()[0], ())} if "adds-package" in rules else set()
    files_of: dict[int, list[str]] = {}  # the paths each sentence names in a span of their own
    for span, quoted, n in spans:
        if quoted and len(span.split()) == 1 and _is_path(span) and "*" not in span:
            files_of.setdefault(n, []).append(_norm_path(span))
    # The commands the memory names (`pytest -x -q` names pytest, `git commit --no-verify` git commit):
    # a flag alone is about them.
    named: list[str] = []
    by_sentence: dict[tuple[int, str], set[str]] = {}
    acting: set[str] = set()  # commands the memory names with what they do: `kubectl apply`
    for span, quoted, n in [*spans, *((p, True, -1) for p in prescribed)]:  # "run `pytest -x -q`" names pytest
        lead = span.split()[0] if span.split() else ""
        if quoted and re.fullmatch(r"[a-z][\w-]*", lead):
            second = span.split()[1:2]
            sub = second[0] if second and re.fullmatch(r"[a-z][\w-]*", second[0]) else ""
            named.append(f"{lead} {sub}".strip() if "subcommand-flags" in rules else lead)
            if n < 0:
                continue
            if sub and lead not in _COMMON_COMMANDS:
                by_sentence.setdefault((n, lead), set()).add(sub)
            if sub in _ACTS:
                acting.add(lead)
    # Calls of code shown with arguments (`datetime.now(timezone.utc)`) make the bare call exact.
    with_args = {s.split("(", 1)[0] for s, quoted, _ in [*spans, *((p, True, -1) for p in prescribed)]
                 if quoted and re.search(r"\(\S+\)", s)}
    conditioned = set()  # sentences whose file is named with a flag of it: `scripts/seed.py` ... `--env production`
    if "conditions" in rules and "flag-of" in rules:
        conditioned = {n for span, quoted, n in spans if quoted and files_of.get(n) and _is_flag(span.split()[0])}
    for span, quoted, n in spans:
        if n in conditioned and quoted and span.split() and _norm_path(span) in files_of[n]:
            continue  # the rule is the flag of the file (`--env production`), not every run of it
        words: list[str] = []
        flags: list[str] = []
        paths: list[str] = []
        literals: list[str] = []
        shape: list[str] = []
        code = ""
        pieces = _PLACEHOLDER.sub(" <> ", span).split()
        if pieces and pieces[-1] == "<>" and len(pieces) > 1 and "argument" in rules:
            shape.append("arg")
        pieces = [p for p in pieces if p != "<>"]
        if not quoted and not _is_path(span):
            code = _code_pattern(span.lower(), False)  # a host name
            pieces = []
            shape.append(f"host={span.lower()}")
        elif len(pieces) == 1 and _is_code(pieces[0]) and "code" in rules:
            piece = pieces[0]
            code = _code_pattern(piece, piece.endswith("()") and piece[:-2] in with_args)
            words.extend(ranker.terms(piece))
            pieces = []
        for piece in pieces:
            if piece == "*":
                flags.append("*")  # `SELECT *`, `rm -rf *`
            elif "*" in piece:
                continue  # a glob (`proto/*.proto`) is no one path
            elif piece == ".":
                shape.append("any-path")
            elif _is_flag(piece):
                flags.append(piece.split("=", 1)[0].lower())
            elif _is_path(piece):
                path = _norm_path(piece)
                if path and path not in ("/", "."):
                    paths.append(path)
            else:
                words.extend(ranker.terms(piece))
                literals.append(piece.lower())
        if not (words or flags or paths or code or literals):
            continue
        weight = float(len(literals) + len(flags) + 2 * len(paths) + ("any-path" in shape))
        command = ""
        commands: tuple[str, ...] = ()
        if code:
            weight = 2.0
        elif not paths and not flags and len(literals) == 1 and len(pieces) == 1:
            # a command named alone (`yarn`, `kubectl`) is one specific word; a common command is not
            command = literals[0] if re.fullmatch(r"[a-z][\w-]*", pieces[0]) else ""  # `yarn`, not `Postgres`
            if command and command not in _COMMON_COMMANDS:
                weight = 2.0
        if flags and not literals and not paths and flags != ["*"]:
            commands = tuple(dict.fromkeys(named))  # `--cov` alone: weighs 2 in a call of a command the memory names
        if "adds-package" in rules and len(literals) >= 2 and literals[1] in _ADDS_PACKAGE.get(literals[0], ()) and (
                "arg" in shape or literals[1] in _ADD_VERBS):
            shape.append("adds-package")
        if command in acting and "looks" in rules:
            shape.append("acts")
        if quoted and flags and len(literals) >= 2 and not paths and (
                ("action-alone" in rules and literals[0] not in _COMMON_COMMANDS) or ("when-action" in rules and n in when)):
            # `terraform apply -auto-approve`: the action alone (`terraform apply`), by a command as
            # specific as terraform, is already what the rule is about; "whenever you write a
            # `git commit -m`" is about every `git commit`
            action = literals[:2]  # the command and its subcommand, not their arguments
            # "whenever you write a `git commit -m`" is about writing: a commit that writes nothing is not it
            writes = "writes" if n in when and "writes-nothing" in rules and _WRITE.search(split[n]) else ""
            marks = [writes, "body" if body and n in when else "", "partial" if "prescriptions" in rules else ""]
            partial = (tuple(dict.fromkeys(ranker.terms(" ".join(action)))), (), (), float(len(action)), "", (),
                       tuple(action), "", " ".join(m for m in marks if m), scope_t, outside_t, "")
            if partial not in found:
                found.append(partial)
        if paths and not literals and verbs.get(n) and "cjk-verbs" in rules:
            literals = list(verbs[n])  # `release/` ブランチには直接 push しないこと: a shell call pushes
        phrase = ""
        if "phrases" in rules and quoted and not paths and not code and len(pieces) > 1 and literals:
            phrase = r"\s+".join(re.escape(p) for p in pieces)  # `SELECT *`, `## Unreleased`
            phrase = (r"(?<![\w-])" if pieces[0][:1].isalnum() else "") + phrase + (
                r"(?![\w-])" if pieces[-1][-1:].isalnum() else "")
        where = () if paths else scope_t
        if "flag-of" in rules and pieces and _is_flag(pieces[0]) and not paths and files_of.get(n):
            where = tuple(files_of[n])  # `--env production` of `scripts/seed.py`: a call of that file
        if quoted and not code and not paths and literals and only_at.get(n):
            shape += [f"at={o}" for o in only_at[n]]  # `kubectl delete` against prod-eu
        if code and quoted and objects.get(n):
            shape += [f"on={o}" for o in objects[n]]  # `@patch` on repository classes
        if changing and paths and not literals and not flags:
            shape.append("changes")  # a memory about changing the path: running it is no change
        if paths and not literals and not flags:
            shape += asks + (["manifest"] if n in adding else [])
        if body and n in when:
            shape.append("body")  # "whenever you write a `git commit -m`" of a memory that asks for a body
        key = (tuple(dict.fromkeys(words)), tuple(dict.fromkeys(flags)), tuple(dict.fromkeys(paths)), weight, command,
               commands, tuple(literals), code, " ".join(shape), where, () if paths else outside_t, phrase)
        if key not in found:
            found.append(key)
    # "Always pass `--context` to `kubectl`": a call of kubectl without it.
    demanded = set()
    for flags_r, commands_r in required:
        for c in commands_r:
            demanded.add(c)
            found.append(((c,), (), (), 2.0, c, (), (c,), "", "requires", scope_t, outside_t, "", (), (),
                          tuple(flags_r)))
    # A memory that forbids two things one command does is about the command: `npm install`, `npm run`
    # (unless it says what every call of the command must do: that is what it asks of the command).
    for (n, lead), subs in by_sentence.items():
        if len(subs) >= 2 and "two-things" in rules and lead not in demanded:
            shape = ["acts"] if lead in acting else []
            shape += [f"at={o}" for o in only_at.get(n, ())]  # "`kubectl apply` or `kubectl delete` against prod-eu"
            key = ((lead,), (), (), 2.0, lead, (), (lead,), "", " ".join(shape), scope_t, outside_t, "")
            if not any(t[COMMAND] == lead for t in found):
                found.append(key)
    does = tuple(dict.fromkeys(_prescription(p) for p in prescribed))
    targets_t = tuple(dict.fromkeys(targets))
    return [t if len(t) > PRESCRIBED else (*t, does, targets_t, ()) for t in found]


def _rule_spans(sentence: str, following: str, prescribed: list[str], required: list, rules: frozenset,
               defines: list[str] | None = None) -> list[str]:
    """The code spans of a rule's sentence that state the rule; those of its clauses that say what to do go to
    ``prescribed``, those of an "always pass `--context` to `kubectl`" clause to ``required``, the functions a
    "must implement `downgrade()`" clause names to ``defines``. ``following``: the next sentence ("log with
    `logger`;" then "never leave `print()`" is one rule in two)."""
    prescribes = "prescriptions" in rules
    if not rules & {"prescriptions", "requirements", "must-do"}:
        return _CODE_SPAN.findall(sentence)
    if not _FORBID.search(sentence):
        if prescribes and not _RULE.search(sentence) and (_PRESCRIBE_FIRST.search(sentence) or (
                sentence.rstrip().endswith(";") and _PRESCRIBE.search(_CODE_SPAN.sub(" ", sentence))
                and _FORBID.match(following.lstrip()))):
            prescribed += _CODE_SPAN.findall(sentence)  # "Run `terraform plan -out plan.tfplan`, show the plan"
            return []
        clauses = [sentence]
    else:
        clauses = _CLAUSE.split(sentence)
    out: list[str] = []
    after_prescription = False
    for clause in clauses:
        spans = _CODE_SPAN.findall(clause)
        if "requirements" in rules and _ALWAYS.search(clause) and not _FORBID.search(clause):
            flags = [s for s in spans if _is_flag(s)]
            commands = [s for s in spans if re.fullmatch(r"[a-z][\w-]*", s) and s not in _COMMON_COMMANDS]
            if flags and commands:
                required.append((flags, commands))
                continue
        define = _MUST_DEFINE.search(clause) if "asked-text" in rules and defines is not None else None
        if define:
            rest = clause[define.end():]
            stop = _FORBID.search(rest)
            region = rest[:stop.start()] if stop else rest
            named = [x for x in _CODE_SPAN.findall(region) if re.fullmatch(r"[A-Za-z_][\w.]*\(\)", x)]
            if named:  # "must implement `downgrade()` as well as `upgrade()`": what a file must define, no trigger
                defines += [x[:-2].rsplit(".", 1)[-1] for x in named]
                out += _CODE_SPAN.findall(clause[:define.start()])
                out += [x for x in _CODE_SPAN.findall(rest) if x not in named]
                continue
        must = _MUST_DO.search(clause) if "must-do" in rules else None
        if must and not _FORBID.search(clause):
            prescribed += _CODE_SPAN.findall(clause[must.end():])  # 必须同步更新 `docs/openapi.yaml`
            out += _CODE_SPAN.findall(clause[:must.start()])
            continue
        bare = not _CODE_SPAN.sub("", clause).strip(" .,;:()")
        if prescribes and len(clauses) > 1 and not _RULE.search(clause) and (
                _PRESCRIBE.search(clause) or (bare and after_prescription)):
            prescribed += spans  # "change the .proto file and run `make proto`"
            after_prescription = True
            continue
        after_prescription = False
        out += spans
    return out


def _prescription(span: str) -> tuple:
    """What doing a prescribed span takes: (literals, flags, phrase, files) (`pytest -x -q`, `--force-with-lease`,
    `## Unreleased`; files: the script it runs or a file it names, `scripts/deploy.sh`, `plan.tfplan`)."""
    pieces = _PLACEHOLDER.sub(" ", span).split()
    literals = tuple(p.lower() for p in pieces if not _is_flag(p) and not _is_path(p))
    flags = tuple(p.split("=", 1)[0].lower() for p in pieces if _is_flag(p))
    phrase = r"\s+".join(re.escape(p) for p in span.split()) if span.strip() else ""
    files = tuple(_norm_path(p) for i, p in enumerate(pieces) if not _is_flag(p) and (
        _is_path(p) or (i > 1 and re.fullmatch(r"[\w-]+\.[a-z]\w*", p.lower()))))
    return (literals, flags, phrase, files)


# --- a tool call ------------------------------------------------------------------

class Segment:
    """One command of a shell call: its command's name, its pieces as written, flags and paths."""

    __slots__ = ("command", "pieces", "tokens", "flags", "paths", "looks")

    def __init__(self, command: str, pieces: list[str], flags: set[str], paths: list[str], wrappers: Sequence[str] = ()):
        self.command = command
        self.pieces = pieces  # lower case, in order, the command's name first
        self.tokens = set(pieces).union(wrappers)  # `sudo pip install`: sudo is a word of it
        self.flags = flags
        self.paths = paths
        self.looks = bool(self.tokens & _LOOKS or flags & {"--help", "--version", "-h"}) and not self.tokens & _ACTS


class ToolCall:
    """What a tool call shows the matcher: its words, flags and paths, and its pattern."""

    __slots__ = ("kind", "words", "flags", "paths", "commands", "pattern", "segments", "text", "reads")

    def __init__(self, kind: str, words: set[str], flags: set[str], paths: list[str], commands: set[str],
                 pattern: str, segments: Sequence[Segment] = (), text: str = "", reads: bool = False):
        self.kind = kind
        self.words = words
        self.flags = flags
        self.paths = paths  # normalised, relative to the session's directory where inside it
        self.commands = commands  # the command words of a shell command (git, sudo pip...)
        self.pattern = pattern  # "shell:git push", "edit:migrations/versions": once per session each
        self.segments = segments  # of a shell command
        self.text = text  # the command, or the text an edit or write puts in the file
        self.reads = reads  # only reads (Read, `cat`, `git log`): only memories about reading apply


def _relative(path: str, cwd: str) -> str:
    path = path.strip()
    if cwd and os.path.isabs(path):
        rel = os.path.relpath(os.path.normpath(path), cwd) if path.startswith(cwd.rstrip("/") + "/") else path
        path = rel
    return _norm_path(path)


def _split_segments(command: str) -> list[str]:
    parts, start = [], 0
    for m in _SEGMENTS.finditer(command):
        if m.group(1):  # a separator outside quotes
            parts.append(command[start:m.start()])
            start = m.end()
    parts.append(command[start:])
    return parts


def _segment(text: str, cwd: str) -> Segment | None:
    wrappers = []
    m = _WRAPPER.match(text)
    while m and m.end() > 0:
        wrappers.append(m.group().split()[0].split("=", 1)[0].lower())
        text = text[m.end():]
        m = _WRAPPER.match(text)
    pieces: list[str] = []
    flags: set[str] = set()
    paths: list[str] = []
    for raw in _SHELL_SPLIT.split(text):
        if not raw:
            continue
        # a refspec or scp-like path names both sides: HEAD:release/2.5
        for piece in (raw.split(":") if ":" in raw and "://" not in raw and not raw.startswith("-") and "refspec" in RULES
                      else (raw,)):
            if not piece:
                continue
            if piece == "*":
                flags.add("*")
            elif _is_flag(piece):
                flags.update(_flags(piece))
            elif (_is_path(piece) or piece.startswith("~")) and not piece.startswith("@"):
                paths.append(_relative(piece, cwd))  # matched as a path only: `docker-compose` is no file
            pieces.append(piece.lower())
    if not pieces:
        return None
    name = pieces[0].rstrip("/").rsplit("/", 1)[-1]
    if "refspec" in RULES and name == "git" and "push" in pieces[1:3] and any(
            p.startswith("+") and len(p) > 1 for p in pieces[2:]):
        flags.update(("--force", "-f"))  # `git push origin +main` forces main
    if "versioned-names" in RULES and re.fullmatch(r"pip\d[\d.]*", name):
        name = "pip"  # pip3, pip3.11
    if "versioned-names" in RULES and name == "git" and pieces[1:2] == ["restore"] and not flags & {"--staged", "-s"}:
        pieces[1:2] = ["checkout", "--"]  # `git restore .` discards the working tree's changes, as `git checkout -- .`
    if name.startswith("python") and len(pieces) > 2 and pieces[1] == "-m":
        name = pieces[2]  # python -m pytest runs pytest
    pieces[0] = name
    return Segment(name, pieces, flags, paths, wrappers)


def _reads_only(segments: Sequence[Segment], command: str) -> bool:
    if not segments or ">" in (_NO_WRITE.sub("", _QUOTED.sub("", command)) if "shell-reads" in RULES else command):
        return False  # a redirection (not `created_at > now()` in a query, nor `> /dev/null`)
    for s in segments:
        if s.command == "git" and s.looks:
            continue
        if s.command == "find" and not s.tokens & {"-delete", "-exec", "-execdir"}:
            continue
        if "shell-reads" in RULES and _reads_query(s):
            continue
        if "shell-reads" in RULES and s.command in _STREAM_READERS and not any(
                f.startswith(("-i", "--in-place")) for f in s.flags):
            continue  # `sed -n 1,40p x`, `jq . x`: printed, not written
        if s.command not in _READERS:
            return False
    return True


def read_call(tool_name: str, tool_input: object, cwd: str = "") -> ToolCall | None:
    """The call as the matcher sees it; None for a tool it does not read (or an input it cannot)."""
    from mem.core.recall import ranker

    kind = TOOL_KINDS.get(tool_name)
    if kind is None or not isinstance(tool_input, dict):
        return None
    words: set[str] = set()
    flags: set[str] = set()
    paths: list[str] = []
    commands: set[str] = set()

    def text_of(*keys: str) -> str:
        return "\n".join(v for k in keys if isinstance(v := tool_input.get(k), str))

    if kind == "shell":
        command = text_of("command")[:TEXT_CHARS]
        segments = [s for part in _split_segments(command) if (s := _segment(part, cwd))]
        for s in segments:
            flags |= s.flags
            paths += s.paths
            commands.add(s.command)
            for piece in s.pieces:
                if not _is_flag(piece) and not _is_path(piece):
                    words.update(ranker.terms(piece))
        if re.match(r"\s*sudo\b", command):
            commands.add("sudo")
        first = [w for w in command.split() if not _is_flag(w) and "=" not in w][:2]
        pattern = "shell:" + " ".join(w.rsplit("/", 1)[-1] for w in first)
        return ToolCall(kind, words, flags, paths, commands, pattern, segments, command,
                        "shell-reads" in RULES and _reads_only(segments, command))
    from mem.core.messages import tool_file

    file_path = tool_file(tool_input) or ""
    path = _relative(file_path, cwd) if file_path else ""
    if path:
        paths.append(path)
    many = tool_input.get("paths")  # qwen-code's read_many_files
    if isinstance(many, list):
        paths += [_relative(p, cwd) for p in many[:50] if isinstance(p, str) and "*" not in p]
    text = ""
    if kind == "edit":
        text = text_of("new_string", "new_source")
        edits = tool_input.get("edits")
        if isinstance(edits, list):
            text += "\n".join(e.get("new_string", "") for e in edits if isinstance(e, dict)
                              and isinstance(e.get("new_string"), str))
    elif kind == "write":
        text = text_of("content")
    text = text[:TEXT_CHARS]
    words.update(ranker.terms(text))
    for piece in _SHELL_SPLIT.split(text):
        if piece == "*":
            flags.add("*")
        elif _is_flag(piece):
            flags.update(_flags(piece))
    return ToolCall(kind, words, flags, paths, commands, f"{kind}:{os.path.dirname(path)}", (), text, kind == "read")


def _path_applies(trigger_path: str, call_paths: Sequence[str]) -> bool:
    directory = trigger_path.endswith("/")
    t = trigger_path.rstrip("/")
    for p in call_paths:
        if p == t or p.startswith(t + "/") or ("/" + t + "/") in ("/" + p + "/"):
            return True
        if not directory and "/" not in t and p.rsplit("/", 1)[-1] == t:
            return True
    return False


def _flag_in(flag: str, flags: set[str]) -> bool:
    if flag in flags or any(c.startswith(flag + "-") for c in flags):
        return True  # --force is in --force-with-lease
    return len(flag) > 2 and not flag.startswith("--") and flag[1:].isalpha() and all(f"-{c}" in flags for c in flag[1:])


def _has_argument(s: Segment, after: str) -> bool:
    """Whether a command's word is followed by an argument (a package, a name), not only flags or files."""
    try:
        i = s.pieces.index(after)
    except ValueError:
        return False
    return any(not _is_flag(p) and not _LOCAL_FILE.search(p) for p in s.pieces[i + 1:])


#: What names a file or directory here rather than a package (`-r requirements.txt`, `-e .`); a
#: package may have slashes (github.com/pkg/errors, @types/node).
_LOCAL_FILE = re.compile(r"^(?:\.|/|~)|\.(?:txt|in|toml|cfg|lock|json|ya?ml|whl|zip|tar\.gz|tgz)$")


def _adds_package(s: Segment) -> bool:
    verbs = _ADDS_PACKAGE.get(s.command, ())
    verb = next((p for p in s.pieces[1:] if p in verbs), None)
    return verb is not None and not s.flags & {"-u", "--upgrade", "--update"} and _has_argument(s, verb)


def _code_in(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.I) is not None  # re keeps the compiled patterns


def _applies(call: ToolCall, t: Sequence) -> float:
    """The weight of one trigger on the call, 0 when it does not apply."""
    words, flags, paths, weight, command, commands, literals, code, shape, scope, outside, phrase = t[:PRESCRIBED]
    does, targets, missing = (t[PRESCRIBED], t[TARGETS], t[MISSING]) if len(t) > PRESCRIBED else ((), (), ())
    if paths and not (literals or flags or code or phrase) and does and _complies(call, does):
        return 0.0  # `make proto && git diff src/generated/`: it does what the memory says to do
    if "partial" in shape.split() and does and _complies(call, does):
        return 0.0  # `terraform apply plan.tfplan`: the action alone, done as the memory says
    if scope and not any(_path_applies(d, call.paths) for d in scope):
        return 0.0  # "in service code (src/)": a call elsewhere
    if outside and call.kind != "shell" and call.paths and all(
            any(_path_applies(d, [p]) for d in outside) for p in call.paths):
        return 0.0  # "except build output (build/)"
    if paths and not all(_path_applies(p, call.paths) for p in paths):
        return 0.0
    if paths and not (literals or flags) and call.kind in ("edit", "write"):
        marks = shape.split()
        if "manifest" in marks and not _DEPENDENCY.search(call.text):
            return 0.0  # a script of package.json changed: no package added
        if "polite" in marks and _polite(call.text):
            return 0.0  # release notes already in です・ます
        if any(x.startswith("mark=") and x[5:].lower() in call.text.lower() for x in marks):
            return 0.0  # a key added and marked 待翻译, as the memory asks
        defs = [x[4:] for x in marks if x.startswith("def=")]
        if defs and call.kind == "write" and all(_defines(call.text, d) for d in defs):
            return 0.0  # a new migration with both upgrade() and downgrade()
    if paths and not (literals or flags) and call.kind == "shell":
        touching = []
        for i, s in enumerate(call.segments):
            if any(_path_applies(p, s.paths) for p in paths):
                # `cd services/payments && pytest -x -q`: what acts there is what follows the cd
                inside = call.segments[i + 1:] if "checks" in RULES and s.command in ("cd", "pushd") else ()
                touching += inside or [s]
        if "checks" in RULES and all(_checks(s) or _names_only(s) for s in touching):
            return 0.0  # `pytest services/payments/`, `git check-ignore .env`: named, not changed
        if "changes" in shape.split() and ">" not in call.text and all(_checks(s) or _runs(s, paths) for s in touching):
            return 0.0  # `python batch/nightly_report.py --dry-run`, `psql -f migrations/x.sql`: run, not changed
    if not paths and call.kind != "shell" and "scripts" in RULES and any(_PROSE.search(p) for p in call.paths):
        return 0.0  # README.md saying "never `git push --force`" mentions the command, runs nothing
    host = next((x[5:] for x in shape.split() if x.startswith("host=")), "")
    if host and "hosts" in RULES:
        # a host is where a call acts: a client connecting to it, not a file naming it or a probe of it
        if call.kind != "shell":
            return 0.0
        naming = [s for s in call.segments if any(host in p for p in s.pieces)]
        if naming and all(s.command in _PROBES for s in naming):
            return 0.0
    if code:
        on = [x[3:] for x in shape.split() if x.startswith("on=")]
        if on and call.kind != "shell" and not any(o in call.text.lower() for o in on):
            return 0.0  # `MagicMock()` for SMTP is not on the repository classes
        text = _COMMENT_LINE.sub("", call.text) if call.kind != "shell" and "code" in RULES else call.text
        return weight if _code_in(code, text) else 0.0
    if call.kind != "shell":
        if command and "scripts" in RULES and "requires" not in shape and call.kind != "read" and any(
                _SCRIPT_PATH.search(p) for p in call.paths):
            # a Makefile's `docker-compose up` runs docker-compose
            return weight if _code_in(rf"(?m)^[\t ]*(?:-\s*run:\s*|RUN\s+|@)?(?:sudo\s+)?{re.escape(command)}(?![\w-])",
                                      call.text) else 0.0
        if command or "adds-package" in shape or not (words or flags or paths):
            return 0.0  # `yarn` is about running yarn, not about a file that says "yarn"
        if phrase:
            return weight if _code_in(phrase, call.text) else 0.0
        if not all(w in call.words for w in words):
            return 0.0
        if not all(_flag_in(f, call.flags) for f in flags):
            return 0.0
        return weight
    if "adds-package" in shape:
        return weight if any(_adds_package(s) for s in call.segments) else 0.0
    if "as-written" not in RULES:
        return _applies_to_words(call, t)
    excused = {f for d in does for f in d[1]}  # `--force-with-lease` is said to do, not a kind of `--force` ...
    best = 0.0
    for s in call.segments:
        if missing:
            if s.command == command and not any(_flag_in(f, s.flags) for f in missing) and not (
                    "managed" in RULES and any(f.lstrip("-") in p for f in missing for p in s.pieces[1:])):
                best = max(best, weight)  # `kubectl get pods` without `--context`
            continue
        # ... unless the call names what the rule is about (`--force-with-lease origin main`)
        call_flags = s.flags - excused if excused and not s.tokens.intersection(targets) else s.flags
        if outside and _all_outside(s, outside):
            continue  # `rm -rf build dist`: "except build output (build/, dist/)"
        if "looks" in RULES and s.flags & _DOES_NOTHING and not s.flags & _DOES_NOTHING.intersection(flags):
            continue  # `kubectl apply --dry-run=server`, `rm -rf --help`: shows, does nothing
        if command and (s.command != command or (s.looks and "acts" in shape)):
            continue  # `kubectl` alone: where it is the command (and does something, if the memory says what)
        if not all(lit in s.tokens for lit in literals):
            continue
        at = [x[3:] for x in shape.split() if x.startswith("at=")]
        if at and not s.tokens.intersection(at):
            continue  # `kubectl --context staging-eu delete pod x`: not against prod-eu
        if "writes" in shape.split() and s.flags & _WRITES_NOTHING:
            continue  # `git commit --amend --no-edit` writes no message
        if "body" in shape.split() and _has_body(call.text):
            continue  # a commit message with a body, as the memory asks
        if not all(_flag_in(f, call_flags) for f in flags):
            continue
        if "any-path" in shape and not (s.paths or "." in s.tokens):
            continue
        if "arg" in shape and literals and not _has_argument(s, literals[-1]):
            continue
        w = weight
        if commands:
            if not any(s.command == c.split()[0] and all(x in s.tokens for x in c.split()[1:]) for c in commands):
                continue  # `-n` alone: of `git commit`, not of `git log`
            w = max(w, 2.0)
        elif len(literals) == 1 and not paths and not flags and literals[0] != s.command:
            continue  # a word alone counts where it is the command: `yarn`, not "yarn" in a message
        best = max(best, w)
    return best


def _complies(call: ToolCall, does: Sequence) -> bool:
    """Whether the call does one of the things a memory says to do: a command with its flags in one of its
    segments (`make proto`), or the span in a file's text (`## Unreleased`)."""
    for literals, flags, phrase, *rest in does:
        files = rest[0] if rest and "prescriptions" in RULES else ()
        if call.kind == "shell":
            if literals and any(all(lit in s.tokens for lit in literals) and all(f in s.flags for f in flags)
                                for s in call.segments):
                return True
            # `scripts/deploy.sh staging` runs the script it says to; `terraform apply plan.tfplan` applies its plan
            for s in call.segments:
                if literals and s.command == literals[0] and any(f in s.tokens for f in files):
                    return True
                if not literals and files and _path_applies(files[0], s.paths) and _runs(s, files[:1]):
                    return True
        elif phrase and _code_in(phrase, call.text):
            return True
    return False


def _names_only(s: Segment) -> bool:
    """Whether the segment only names its paths (`ls -l .env`, `git check-ignore .env`), reading and changing none."""
    if s.command == "git":
        return len(s.pieces) > 1 and s.pieces[1] in _GIT_NAMES_ONLY
    return s.command in _NAMES_ONLY


def _reads_query(s: Segment) -> bool:
    """Whether a database client runs only a query that reads (`psql -c "SELECT count(*) ..."`), no file of SQL."""
    if s.command not in _DB_CLIENTS or s.flags & {"-f", "--file"} or "<" in s.pieces:
        return False
    return bool(s.tokens & _SQL_READS) and not s.tokens & _SQL_WRITES


def _has_body(text: str) -> bool:
    """Whether a commit's message has a body: a second ``-m`` or a blank line in it."""
    return len(re.findall(r"(?<!\S)(?:-m|--message)(?=[\s=]|$)", text)) >= 2 or bool(re.search(r"\n[ \t]*\n", text))


def _polite(text: str) -> bool:
    """Whether every sentence of a Japanese text (past headings) ends in です・ます (and it has one)."""
    lines = [re.sub(r"^\s*(?:[-*+・]|\d+\.)\s*", "", ln).strip() for ln in text.splitlines()
             if _CJK.search(ln) and not ln.lstrip().startswith("#")]
    ends = [x for ln in lines for x in re.split(r"(?<=[。！？])", ln) if x.strip()]
    return bool(ends) and all(_POLITE_END.search(x.strip()) for x in ends)


def _defines(text: str, name: str) -> bool:
    """Whether the text defines ``name`` with a body that is more than a stub (`pass`, `...`)."""
    for m in re.finditer(_DEFINITION.format(re.escape(name)), text):
        indent = len(m.group(1).expandtabs())
        body = []
        for line in text[m.end():].splitlines()[1:]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line.strip())
        if any(x and not _STUB.fullmatch(x) for x in body):
            return True
    return False


def _runs(s: Segment, paths: Sequence[str]) -> bool:
    """Whether the segment runs the guarded paths it names (`python x.py`, `psql -f x.sql`, `./x.sh`) rather than
    passing them where they may be written (`--out locales/zh-CN.json`)."""
    if s.command not in _RUNNERS and not _SCRIPT_FILE.search(s.command) and not (
            "runs" in RULES and any(p.startswith("--") and p.endswith("-file") for p in s.pieces)):
        return False
    run: list[str] = []
    if s.command not in _RUNNERS and _SCRIPT_FILE.search(s.command):
        run = s.paths[:1]  # the script is the command
    elif s.command in _RUNNERS:
        args = [p for p in s.pieces[1:] if not _is_flag(p)]
        run = args[:1] + [p for prev, p in zip(s.pieces, s.pieces[1:]) if prev in ("-f", "--file")]
    if "runs" in RULES:  # `docker compose --env-file .env up`: a file given to a program to read
        run += [p for prev, p in zip(s.pieces, s.pieces[1:]) if prev.startswith("--") and prev.endswith("-file")]
    run = [_norm_path(p) for p in run]
    return all(_path_applies(p, run) for p in paths if _path_applies(p, s.paths))


def _checks(s: Segment) -> bool:
    return s.command in _CHECKERS and not s.tokens & {"--fix", "format", "-u", "--update-snapshots"}


def _all_outside(s: Segment, outside: Sequence[str]) -> bool:
    args = [_norm_path(p) for p in s.pieces[1:] if not _is_flag(p)]
    return bool(args) and all(any(_path_applies(d, [a]) for d in outside) for a in args)


def _applies_to_words(call: ToolCall, t: Sequence) -> float:
    """Without "as-written": a shell call's words anywhere in it, compared as terms."""
    words, flags, weight, command, commands = t[WORDS], t[FLAGS], t[WEIGHT], t[COMMAND], t[COMMANDS]
    if command and command not in call.commands:
        return 0.0
    if commands and call.commands.intersection(c.split()[0] for c in commands):
        weight = max(weight, 2.0)
    if not all(w in call.words for w in words) or not all(_flag_in(f, call.flags) for f in flags):
        return 0.0
    if words and not t[PATHS] and words[0] not in call.commands and not (flags or len(words) > 1):
        return 0.0
    return weight


def score(call: ToolCall, memory_triggers: Iterable[Sequence]) -> float:
    """How much of a memory applies to the call: its best trigger's weight, plus half of each further one."""
    weights = [w for t in memory_triggers if (w := _applies(call, t))]
    if not weights:
        return 0.0
    weights.sort(reverse=True)
    return weights[0] + 0.5 * sum(weights[1:])


#: A memory a read can surface says something about reading (most rules are about changing a file).
_ABOUT_READING_FIRST = re.compile(r"\b(?:read|cat|print|open|view)\b|读取|打开|查看|読ま|読み|開か|開く", re.I)
#: ... in a sentence that forbids or requires: "Never print them (`cat`, Read)", not "use the logger, not print".
_ABOUT_READING = re.compile(r"\b(?:read|cat|open|view|less|head|tail)\b|读取|打开|查看|読ま|読み|開か|開く", re.I)


def about_reading(text: str) -> bool:
    """Whether a rule of a memory speaks of reading something (only such memories apply to a call that only reads)."""
    if "reading-rules" not in RULES:
        return bool(_ABOUT_READING_FIRST.search(text))
    return any(_ABOUT_READING.search(s) and _RULE.search(s) for s in _SENTENCE.split(text))


def select(call: ToolCall, candidates: Sequence[tuple[str, list, bool]], *, min_weight: float = MIN_WEIGHT,
           limit: int = MAX_PER_CALL) -> list[tuple[str, float]]:
    """(key, score) of the memories that apply to the call, best first; ``candidates`` are
    (key, triggers, about_reading)."""
    hits = [(key, s) for key, trig, reading in candidates
            if (reading or not call.reads) and (s := score(call, trig)) >= min_weight]
    hits.sort(key=lambda h: -h[1])
    return hits[:limit]


# --- triggers of a memory directory, cached ----------------------------------------

def memory_triggers(headers: Sequence, cache_dir: str | None = None) -> list[tuple[str, list, bool]]:
    """(relpath, triggers, about_reading) of each feedback and project memory of ``headers`` (a manifest scan)."""
    import sys

    cache_path = os.path.join(cache_dir, TRIGGERS_CACHE) if cache_dir else None
    version = (TRIGGERS_VERSION, sys.version_info[:2])
    cached = _load_cache(cache_path, version) if cache_path else {}
    out: list[tuple[str, list, bool]] = []
    fresh: dict[str, tuple] = {}
    changed = False
    for h in headers:
        if h.type not in TYPES:
            continue
        stamp = (h.mtime_ms, h.size)
        entry = cached.get(h.relpath)
        if isinstance(entry, tuple) and len(entry) == 3 and entry[0] == stamp:
            trig, reading = entry[1], entry[2]
        else:
            from mem.core.recall import read_body

            try:
                body = read_body(h.path)
            except OSError:
                continue
            text = f"{h.description or ''}\n{body}"
            trig, reading = [list(t) for t in triggers(text)], about_reading(text)
            changed = True
        fresh[h.relpath] = (stamp, trig, reading)
        out.append((h.relpath, trig, reading))
    if cache_path and (changed or len(fresh) != len(cached)):
        _save_cache(cache_path, version, fresh)
    return out


def _load_cache(path: str, version: tuple) -> dict:
    import marshal

    try:
        with open(path, "rb") as fh:
            data = marshal.loads(fh.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("docs"), dict):
        return {}
    return data["docs"]


def _save_cache(path: str, version: tuple, docs: dict) -> None:
    import marshal

    from mem.core.memdir.store import atomic_write

    try:
        atomic_write(path, marshal.dumps({"version": version, "docs": docs}))
    except (OSError, ValueError):
        pass  # a cache: the matcher works without it
