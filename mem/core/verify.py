"""Check what memories claim about the project against its git repository.

Example: verify(MemoryDir(m), "/src/app").findings[0].line_text() ==
    "project_retry.md:7: moved: path src/net/retry.py (renamed in 3f2a9c1 -> lib/net/retry.py)"

A memory says "the retry logic lives in `src/net/retry.py:backoff()`", "run `make integration`",
"merge freeze until 2026-03-12", "fixed in a1b2c3d". Each of those is a claim that can go stale.
``claims_of`` finds them with the explainable rules below; ``verify`` checks them against the
repository's HEAD with a handful of git processes for all memories at once (one ls-tree, one grep,
one cat-file --batch for the build files, one cat-file --batch-check and one name-rev for commits,
one check-ignore and one log for paths that are gone; each only when some claim needs it), and
keeps the results in the state directory keyed by the memory's content, HEAD, the day and these
rules, so a second run starts no git but ``rev-parse``. Each run also leaves the one-line notes
recall shows (mem.core.verifynotes).

What is a claim (and what is not, because a false alarm costs as much as a miss):
- path: a backticked or bare token with a ``/`` and a file extension (or a trailing ``/``), or a
  bare file name with a source or config extension; ``:line`` and ``:name()`` suffixes are read.
  Not: URLs, ``~/`` and absolute paths outside the repository, ``and/or``, ``Node.js`` in prose.
- symbol: ``name()`` anywhere; in backticks ``Class.method``, ``snake_case``, ``camelCase``,
  ``PascalCase`` with two capitals, ``CONSTANT_NAME``. Not: a backticked plain word (`retry`).
- command: ``make X``, ``npm|pnpm|yarn run X``, ``just X``, ``tox -e X``, ``pytest -m X`` in
  backticks or a fenced code block (never prose: "make sure" is English).
- commit: 7 to 40 lower-case hex digits with a digit and a letter, in backticks or after
  "commit", "sha", "fixed in", "reverted" and the like. Not: colours, version numbers.
- date: in a project memory, a date after "until", "by", "before", "due", "deadline", "freeze",
  "expires", "ends", "scheduled", "planned", or ending a window ("to 2026-03-12"); stale once
  every such date in the memory has passed.
  A relative date ("yesterday", "next week") is stale in any memory: it meant a day nobody knows.
  Dates inside code blocks, paths and versions are not claims.
- link: ``[text](other.md)`` to another memory that no longer exists.
Fenced code blocks yield commands only: an example is not a statement about the project.

uses: mem.core.gitcmd (git), json; mem.core.memdir (layout, frontmatter, store, state); mem.core.verifynotes
(Finding, and the notes recall reads).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from mem import __version__
from mem.core import gitcmd
from mem.core.errors import ConfigError
from mem.core.memdir.files import read_bytes, read_text
from mem.core.memdir.frontmatter import memory_type_of, parse_frontmatter
from mem.core.memdir.layout import is_memory, walk_topic_files
from mem.core.verifynotes import Finding, StaleNotes, content_sha

if TYPE_CHECKING:
    from mem.core.memdir.store import MemoryDir

#: the cache file's layout; a change of the rules needs no bump (``cache_key`` has this file's stat)
CACHE_FORMAT = 1


class Claim(NamedTuple):
    """One checkable statement in a memory: where it is, what kind, the text as written."""

    line: int  # 1-based, in the file (frontmatter lines counted)
    kind: str  # path, symbol, command, commit, date, link
    text: str  # as written: "src/net/retry.py", "make integration", "a1b2c3d", "2026-03-12"
    target: str  # what is checked: the path, the symbol's last name, "make:integration", the hex, the ISO date
    cue: bool = False  # a date after a deadline word ("until", "by"...); a relative date is "relative"


class Report(NamedTuple):
    """What ``verify`` found: every finding, how many memories, the HEAD they were checked at."""

    findings: list[Finding]
    memories: int
    head: str
    cached: int  # memories whose repository findings came from the cache

    @property
    def stale(self) -> list[Finding]:
        return [f for f in self.findings if f.stale]


# -- claim extraction --------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_LINE_SUFFIX = re.compile(r":(\d+)(?:[-:]\d+)?$")
_SYMBOL_SUFFIX = re.compile(r":([A-Za-z_][\w.]*)\(\)$")
_SEGMENT = re.compile(r"^[\w.@+-]+$")
#: extensions that make a bare file name (no "/") a path claim
_EXTENSIONS = frozenset(
    ["py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rs", "rb", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "m", "php", "sh", "bash", "zsh", "fish", "toml", "yaml", "yml", "json", "jsonc", "ini", "cfg", "conf", "sql", "proto", "graphql", "css", "scss", "html", "vue", "svelte", "lua", "pl", "r", "ex", "exs", "erl", "hs", "ml", "clj", "md", "rst", "txt", "lock", "gradle", "xml", "tf"]
)
_HOSTLIKE = re.compile(r"^[\w-]+(\.[\w-]+)*\.(com|org|net|io|dev|ai|app|co|edu|gov|sh|me|info|cloud)$", re.IGNORECASE)
_PATHNAMES = frozenset({"Makefile", "GNUmakefile", "Dockerfile", "Justfile", "justfile", "Procfile", "Gemfile"})

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SYMBOL = re.compile(rf"^({_IDENT}(?:(?:\.|::|#){_IDENT})*)(\(\))?$")
_CALL = re.compile(rf"(?<![\w.$/-])({_IDENT}(?:\.{_IDENT})*)\(\)")
#: names whose presence says nothing about this project (languages' builtins, well-known namespaces)
_FOREIGN = frozenset(
    ["print", "len", "open", "range", "str", "int", "float", "dict", "list", "set", "tuple", "map", "filter", "isinstance", "super", "type", "repr", "sorted", "require", "console", "setTimeout", "fetch", "main", "os", "sys", "re", "json", "np", "pd", "math", "Math", "JSON", "Object", "Array", "Promise", "window", "document", "process", "path", "subprocess"]
)

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_COMMIT_CONTEXT = re.compile(
    r"(?:\bcommits?|\bsha(?:-?1)?|\brev(?:ision)?|\b(?:fixed|landed|merged|introduced|broken|broke|reverted|"
    r"added|removed|changed|done|shipped)\s+(?:in|by|at)|\brevert(?:ed|s)?|\bcherry-pick(?:ed)?)\W{0,3}$",
    re.IGNORECASE,
)

_MONTHS = {m: i for i, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")], start=1) for m in names}
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DATES = re.compile(
    r"(?<![\w./:-])(?P<y>20\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)(?![\w/-]|:\S|\.\d)"
    rf"|(?<![\w.])(?P<mn>{_MONTH})\.?\s+(?P<md>[0-3]?\d)(?:st|nd|rd|th)?,?\s+(?P<my>20\d\d)\b"
    rf"|(?<![\w.])(?P<dd>[0-3]?\d)(?:st|nd|rd|th)?\s+(?P<dm>{_MONTH})\.?,?\s+(?P<dy>20\d\d)\b",
    re.IGNORECASE,
)
#: words that make a date a deadline (stale once passed) rather than a record of when something happened
_DEADLINE = re.compile(
    r"\b(?:until|till|til|through|thru|by|before|due|deadline|expires?|expiring|ends?|ending|scheduled|planned|"
    r"freeze|frozen|no later than|eta|target(?:ed|ing)?|cut-?off|embargo|not before)\b",
    re.IGNORECASE,
)
#: the end of a window, "from 2026-03-05 to 2026-03-12": right before the date, not anywhere in the clause
_RANGE_END = re.compile(r"(?:\bto|\u2013|--)\s*$", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|"
    r"(?:next|last|this)\s+(?:week|weekend|month|quarter|sprint|year|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|(?:in|within)\s+(?:a|one|two|three|four|a\s+few|\d+)\s+(?:days?|weeks?|months?))\b",
    re.IGNORECASE,
)

_COMMANDS = (
    ("make", re.compile(r"(?:^|&&|;|\|\|)\s*make((?:\s+[^\s;&|]+)+)")),
    ("npm", re.compile(r"(?:^|&&|;|\|\|)\s*(?:npm|pnpm|yarn)\s+run\s+([\w:.-]+)")),
    ("just", re.compile(r"(?:^|&&|;|\|\|)\s*just\s+([\w-]+)")),
    ("tox", re.compile(r"(?:^|&&|;|\|\|)\s*tox\b[^;&|]*?\s-e\s*([\w,.-]+)")),
    ("pytest", re.compile(r"(?:^|&&|;|\|\|)\s*(?:python3?\s+-m\s+)?pytest\b[^;&|]*?\s-m\s+(?:\"([^\"]+)\"|'([^']+)'|(\w+))")),
)
_MAKE_VAR = re.compile(r"^\w+=")


def claims_of(text: str) -> list[Claim]:
    """Every claim in a topic file's text (frontmatter skipped), in line order.

    Example: [c.kind for c in claims_of("---\\ntype: project\\n---\\nsee `src/a.py:3` and `make lint`\\n")]
        == ["path", "command"]
    """
    out: list[Claim] = []
    for n, line, fenced in _body_lines(text):
        out.extend(_commands(n, line.strip().removeprefix("$ ")) if fenced else _line_claims(n, line))
    return out


def link_claims(text: str) -> list[Claim]:
    """Only the links to other memories: checked on every run, so read without the other rules."""
    if "](" not in text:
        return []
    return [c for n, line, fenced in _body_lines(text) if not fenced and "](" in line for c in _link_claims(n, line)]


def _body_lines(text: str) -> Iterable[tuple[int, str, bool]]:
    """(line number in the file, line, inside a fenced code block) after the frontmatter; fences left out."""
    parsed = parse_frontmatter(text)
    skip = text[: len(text) - len(parsed.content)].count("\n") if parsed.present else 0
    in_fence = False
    for n, line in enumerate(parsed.content.split("\n"), start=skip + 1):
        if _FENCE.match(line):
            in_fence = not in_fence
        else:
            yield n, line, in_fence


def _link_claims(n: int, line: str) -> list[Claim]:
    out = []
    for m in _MD_LINK.finditer(line):
        target = m.group(2)
        if not (":" in target or target.startswith("#")) and target.split("#")[0].endswith(".md"):
            out.append(Claim(n, "link", target, target.split("#")[0]))
    return out


def _line_claims(n: int, line: str) -> list[Claim]:
    found = _link_claims(n, line)
    line = _blank(_MD_LINK, line, keep=1)
    line = _blank(_URL, line)
    for m in _BACKTICK.finditer(line):
        found.extend(_span_claims(n, m.group(1).strip()))
    prose = _blank(_BACKTICK, line)
    for token, start in _tokens(prose):
        before = prose[:start]
        path = _path_claim(n, token, quoted=False)
        if path:
            found.extend(path)
        elif _HEX.match(token) and _is_commitish(token) and _COMMIT_CONTEXT.search(before):
            found.append(Claim(n, "commit", token, token))
    for m in _CALL.finditer(prose):  # a call is a symbol wherever it sits, in a token or not
        found.extend(_symbol_claim(n, m.group(0)))
    found.extend(_date_claims(n, prose))
    return list(dict.fromkeys(found))  # `a.py:f()` is read as a path with a symbol and as a call


def _blank(pattern: re.Pattern, line: str, keep: int | None = None) -> str:
    """The line with each match replaced by spaces (or by its group ``keep``), columns kept."""
    def sub(m: re.Match) -> str:
        kept = m.group(keep) if keep else ""
        return kept + " " * (len(m.group(0)) - len(kept))
    return pattern.sub(sub, line)


def _tokens(text: str) -> Iterable[tuple[str, int]]:
    for m in re.finditer(r"\S+", text):
        token = m.group(0)
        stripped = token.lstrip("([{<\"'*_")
        start = m.start() + len(token) - len(stripped)
        token = stripped.rstrip(")]}>\"'*,;!?.:")
        if token.endswith("(") and stripped[len(token):].startswith(")"):
            token += ")"  # keep a call's parentheses: `path:name()` is read as a path and a symbol
        if token:
            yield token, start


def _span_claims(n: int, span: str) -> list[Claim]:
    """A backticked span: a command, a path, a commit id or a symbol, in that order of preference."""
    commands = _commands(n, span.removeprefix("$ "))
    if commands:
        return commands
    path = _path_claim(n, span, quoted=True)
    if path:
        return path
    if _HEX.match(span) and _is_commitish(span):
        return [Claim(n, "commit", span, span)]
    return _symbol_claim(n, span, quoted=True)


def _path_claim(n: int, token: str, *, quoted: bool) -> list[Claim]:
    """A path (and the symbol of a ``path:name()`` form), or nothing."""
    symbol: list[Claim] = []
    m = _SYMBOL_SUFFIX.search(token)
    if m:
        symbol = _symbol_claim(n, m.group(1) + "()")
        token = token[: m.start()]
    else:
        token = _LINE_SUFFIX.sub("", token)
    if not token or token.startswith(("~", "-", "$")) or "//" in token or " " in token:
        return []
    path = token.removeprefix("./")
    parts = path.strip("/").split("/")
    if not all(_SEGMENT.match(p) for p in parts) or not re.search(r"[A-Za-z]", path):
        return []
    if ".." in parts:
        return []  # relative to something other than the repository
    last = parts[-1]
    ext = last.rsplit(".", 1)[1].lower() if "." in last.strip(".") else ""
    if "/" in path.strip("/"):
        if _HOSTLIKE.match(parts[0]) and not path.startswith("/"):
            return []
        if not (ext.isalpha() or last in _PATHNAMES or (quoted and (path.endswith("/") or ext == ""))):
            return []
    elif not path.startswith("/"):
        if not (ext in _EXTENSIONS or last in _PATHNAMES or (quoted and path.endswith("/") and len(path) > 1)):
            return []
        if not quoted and ext == "js" and re.fullmatch(r"[A-Za-z]+\.js", path):
            return []  # Node.js, Vue.js: a product, not a file
        if re.fullmatch(r"\d[\d.]*\.\w+", path):
            return []
    return [Claim(n, "path", token, path.rstrip("/") + ("/" if path.endswith("/") else "")), *symbol]


def _symbol_claim(n: int, text: str, *, quoted: bool = False) -> list[Claim]:
    m = _SYMBOL.match(text)
    if not m:
        return []
    name, call = m.group(1), m.group(2)
    parts = re.split(r"\.|::|#", name)
    if parts[0] in _FOREIGN or parts[-1] in _FOREIGN:
        return []
    last = parts[-1]
    if not call:
        if not quoted:
            return []
        identifier_like = (
            len(parts) > 1  # Class.method
            or "_" in last.strip("_")  # snake_case, CONSTANT_NAME
            or re.search(r"[a-z][A-Z]", last)  # camelCase
            or re.fullmatch(r"(?:[A-Z][a-z0-9]+){2,}", last)  # PascalCase, two capitals at least
        )
        if not identifier_like:
            return []
    if len(last) < 3:
        return []
    return [Claim(n, "symbol", text, last)]


def _is_commitish(hexs: str) -> bool:
    return bool(re.search(r"\d", hexs) and re.search(r"[a-f]", hexs))


def _commands(n: int, text: str) -> list[Claim]:
    out = []
    for tool, pattern in _COMMANDS:
        for m in pattern.finditer(text):
            for target in _targets(tool, m):
                out.append(Claim(n, "command", _command_text(tool, target, m.group(0)), f"{tool}:{target}"))
    return out


def _targets(tool: str, m: re.Match) -> list[str]:
    if tool == "make":
        words = m.group(1).split()
        if any(w in ("-C", "-f", "--directory", "--file") or w.startswith(("-C", "-f", "--directory=", "--file="))
               for w in words):
            return []  # another Makefile than the repository's
        return [w for w in words if not w.startswith("-") and not _MAKE_VAR.match(w) and re.fullmatch(r"[\w./-]+", w)]
    if tool == "tox":
        return [e for e in m.group(1).split(",") if e]
    if tool == "pytest":
        expr = next(g for g in m.groups() if g)
        # "not flaky" selects tests without the marker: it claims nothing about the marker existing
        return [w for w in re.findall(r"(?<!not )\b\w+", expr) if w not in ("and", "or", "not")]
    return [m.group(1)]


def _command_text(tool: str, target: str, matched: str) -> str:
    spelled = matched.strip().lstrip("&;|").strip().split()[0]
    if tool == "npm":
        return f"{spelled} run {target}"
    if tool == "tox":
        return f"tox -e {target}"
    if tool == "pytest":
        return f"pytest -m {target}"
    return f"{tool} {target}"


def _date_claims(n: int, prose: str) -> list[Claim]:
    out = []
    for m in _DATES.finditer(prose):
        day = _date_of(m)
        if day is None:
            continue
        clause = re.split(r"[.;!?]\s|\s[-–—]\s", prose[: m.start()])[-1]
        cue = bool(_DEADLINE.search(clause) or _RANGE_END.search(clause))
        out.append(Claim(n, "date", m.group(0), day.isoformat(), cue=cue))
    for m in _RELATIVE.finditer(prose):
        out.append(Claim(n, "date", m.group(0), "relative", cue=False))
    return out


def _date_of(m: re.Match) -> _dt.date | None:
    try:
        if m.group("y"):
            return _dt.date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
        if m.group("mn"):
            return _dt.date(int(m.group("my")), _MONTHS[m.group("mn").lower()], int(m.group("md")))
        return _dt.date(int(m.group("dy")), _MONTHS[m.group("dm").lower()], int(m.group("dd")))
    except (ValueError, KeyError):
        return None


# -- the repository -----------------------------------------------------------------------------


class Repo:
    """The repository's HEAD as verify needs it, asked with as few git processes as possible.

    Example: Repo("/src/app").head == "3f2a9c1e..."; Repo("/tmp") raises ConfigError.
    """

    CONFIG_FILES = ("Makefile", "makefile", "GNUmakefile", "package.json", "justfile", "Justfile", ".justfile",
                    "tox.ini", "pytest.ini", "pyproject.toml", "setup.cfg")

    def __init__(self, repo: str):
        """``repo``: the repository's folder (not a memory directory)."""
        self.root = os.path.realpath(repo)
        try:
            self.head = self._git("rev-parse", "--verify", "-q", "HEAD^{commit}").strip()
        except FileNotFoundError as exc:
            raise ConfigError("git is not installed; mem verify needs it to read the repository") from exc
        if not self.head:
            raise ConfigError(f"{repo} is not a git repository with a commit (give --repo DIR)")
        self._files: set[str] | None = None
        self._blobs: dict[str, list[str]] = {}
        self._by_name: dict[str, list[str]] | None = None
        self._dirs: set[str] | None = None

    def _git(self, *args: str, input: str | None = None) -> str:
        proc = gitcmd.run(args, repo=self.root, input=None if input is None else input.encode())
        return proc.stdout.decode("utf-8", "replace") if proc.returncode in (0, 1) else ""

    @property
    def files(self) -> set[str]:
        if self._files is None:
            self._read_tree()
        return self._files

    @property
    def paths_of_blob(self) -> dict[str, list[str]]:
        """blob id -> the paths at HEAD with that content (to find a file deleted and re-added elsewhere)."""
        if self._files is None:
            self._read_tree()
        return self._blobs

    def _read_tree(self) -> None:
        self._files, self._blobs = set(), {}
        for entry in self._git("ls-tree", "-r", "-z", "HEAD").split("\0"):
            meta, _, path = entry.partition("\t")  # "<mode> blob <id>\t<path>"
            if path:
                self._files.add(path)
                self._blobs.setdefault(meta.rsplit(" ", 1)[-1], []).append(path)

    @property
    def dirs(self) -> set[str]:
        if self._dirs is None:
            self._dirs = {f[:i] for f in self.files for i in _slashes(f)}
        return self._dirs

    @property
    def by_name(self) -> dict[str, list[str]]:
        if self._by_name is None:
            self._by_name = {}
            for f in self.files:
                self._by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
        return self._by_name

    def present_words(self, words: Iterable[str]) -> set[str]:
        """Which of ``words`` occur as a whole word in any text file at HEAD (one ``git grep``)."""
        words = sorted(set(words))
        if not words:
            return set()
        # Patterns on stdin: thousands of them would not fit on a command line.
        found = self._git("grep", "-I", "-h", "-o", "-w", "-F", "--no-color", "--no-textconv", "-f", "-", "HEAD", "--",
                          input="".join(w + "\n" for w in words))
        return set(found.split("\n")) & set(words)

    def blobs(self, names: Sequence[str]) -> dict[str, str]:
        """The text at HEAD of each existing file of ``names`` (one ``git cat-file --batch``)."""
        names = [n for n in names if n in self.files]
        if not names:
            return {}
        proc = gitcmd.run(["cat-file", "--batch"], repo=self.root, input="".join(f"HEAD:{n}\n" for n in names).encode())
        out, data, pos = {}, proc.stdout, 0
        for name in names:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if len(header) == 3:
                size = int(header[2])
                out[name] = data[pos: pos + size].decode("utf-8", "replace")
                pos += size + 1
        return out

    def commits(self, ids: Iterable[str]) -> dict[str, str]:
        """Each id → "ok", "unreachable" (history rewritten) or "missing" (two git processes in all)."""
        ids = sorted(set(ids))
        if not ids:
            return {}
        lines = self._git("cat-file", "--batch-check", input="".join(f"{i}^{{commit}}\n" for i in ids)).splitlines()
        full = {i: line.split()[0] for i, line in zip(ids, lines) if line.endswith(tuple("0123456789")) and " commit " in line}
        out = {i: "missing" for i in ids if i not in full}
        if full:
            names = self._git("name-rev", "--name-only", "--no-undefined", "--always", *full.values()).split()
            # --always prints the abbreviated id where no ref reaches the commit: that is the rewritten one
            for (i, oid), name in zip(full.items(), names):
                out[i] = "unreachable" if oid.startswith(name) and re.fullmatch(r"[0-9a-f]+", name) else "ok"
        return out

    def ignored(self, paths: Iterable[str]) -> set[str]:
        """Which of ``paths`` the repository's ignore rules cover: generated, never committed (one process)."""
        paths = sorted(set(paths))
        if not paths:
            return set()
        return set(self._git("check-ignore", "--stdin", input="".join(p + "\n" for p in paths)).splitlines())

    def departures(self) -> list[tuple[str, str, str, str]]:
        """(commit, "R" or "D", old path, new path or the deleted content's blob id) of every rename and
        deletion in HEAD's history, newest first (one ``git log``)."""
        out, commit = [], ""
        log = self._git("log", "-M", "--diff-filter=DR", "--raw", "--no-abbrev", "--format=%h", "--no-show-signature",
                        "--no-ext-diff", "--no-textconv", "HEAD")
        for line in log.splitlines():
            meta, _, paths = line.partition("\t")
            fields = meta.split()
            if line.startswith(":") and len(fields) == 5:
                status, old_blob, names = fields[4][:1], fields[2], paths.split("\t")
                if status == "R" and len(names) == 2:
                    out.append((commit, "R", names[0], names[1]))
                elif status == "D" and names:
                    out.append((commit, "D", names[0], old_blob))
            elif line.strip():
                commit = line.strip()
        return out


def _slashes(path: str) -> Iterable[int]:
    i = path.find("/")
    while i != -1:
        yield i
        i = path.find("/", i + 1)


# -- checking -----------------------------------------------------------------------------------


class _Memory(NamedTuple):
    relpath: str
    text: str
    sha: str  # of the bytes on disk: the cache's key, and the recall note's
    type: str | None
    mtime: float


def verify(memory: MemoryDir, repo: str, files: Sequence[str] | None = None, *,
           today: _dt.date | None = None, use_cache: bool = True) -> Report:
    """Check every claim of the memories (or of ``files``, relpaths) against ``repo``'s HEAD.

    Example: verify(MemoryDir(m), "/src/app", today=date(2026, 3, 13)).stale[0].verdict == "expired"
    """
    today = today or _dt.date.today()
    git = Repo(repo)
    memories = list(_read_memories(memory, files))
    cache = VerifyCache(memory.state.verify_cache) if use_cache else None
    key = cache_key(git.head, today)
    findings: dict[str, list[Finding]] = {}
    todo: list[tuple[_Memory, list[Claim]]] = []
    for m in memories:
        hit = cache.get(m.relpath, m.sha, key) if cache else None
        if hit is not None:
            findings[m.relpath] = hit
        else:
            todo.append((m, claims_of(m.text)))
    for m, found in _check(git, memory, todo, today).items():
        findings[m.relpath] = found
        if cache:
            cache.put(m.relpath, m.sha, key, found)
    if cache:
        cache.save(keep={m.relpath for m in memories} if files is None else None)
    out: list[Finding] = []
    for m in memories:
        findings[m.relpath] = sorted(findings[m.relpath] + _links(memory, m), key=lambda f: f.line)
        out.extend(findings[m.relpath])
    StaleNotes(memory.state.verify_notes).update({m.relpath: (m.sha, findings[m.relpath]) for m in memories},
                                                 keep={m.relpath for m in memories} if files is None else None)
    return Report(out, len(memories), git.head, len(memories) - len(todo))


def _read_memories(memory: MemoryDir, files: Sequence[str] | None) -> Iterable[_Memory]:
    if files is None:
        entries = [(rel, entry.path) for rel, entry in walk_topic_files(memory.root)]
    else:
        entries = [(rel, os.path.join(memory.root, rel)) for rel in files]
    for rel, path in sorted(entries):
        if not is_memory(rel):
            continue
        try:
            data = read_bytes(path)
            mtime = os.stat(path).st_mtime
        except OSError:
            continue  # a directory named *.md, or gone since the walk
        text = data.decode("utf-8", "replace")
        yield _Memory(rel, text, content_sha(data), memory_type_of(parse_frontmatter(text).data)[0], mtime)


def _check(git: Repo, memory: MemoryDir, todo: list[tuple[_Memory, list[Claim]]], today: _dt.date
           ) -> dict[_Memory, list[Finding]]:
    """The verdicts of the repository and date claims of the memories to do, batched across all of them."""
    claims = [c for _, cs in todo for c in cs]
    symbols = {c.target for c in claims if c.kind == "symbol"}
    markers = {c.target.split(":", 1)[1] for c in claims if c.target.startswith("pytest:")}
    present = git.present_words(symbols | markers) if symbols or markers else set()
    declared = _Declared(git) if any(c.kind == "command" for c in claims) else None
    commits = git.commits(c.target for c in claims if c.kind == "commit")
    paths = _PathChecker(git, memory, [c for c in claims if c.kind == "path"])
    out = {}
    for m, cs in todo:
        found = []
        deadlines = [c for c in cs if c.kind == "date" and c.cue and c.target != "relative"]
        all_passed = m.type == "project" and bool(deadlines) and all(_dt.date.fromisoformat(c.target) < today for c in deadlines)
        for c in cs:
            if c.kind == "path":
                found.append(paths.check(m.relpath, c))
            elif c.kind == "symbol":
                ok = c.target in present
                found.append(_finding(m, c, "ok" if ok else "missing",
                                      "found in the tree" if ok else f"no {c.target!r} anywhere at HEAD"))
            elif c.kind == "command":
                found.append(_finding(m, c, *declared.check(c.target, present)))
            elif c.kind == "commit":
                state = commits[c.target]
                evidence = {"ok": "reachable from a branch or tag", "missing": "no such commit",
                            "unreachable": "not on any branch or tag: history was rewritten"}[state]
                found.append(_finding(m, c, "ok" if state == "ok" else "missing", evidence))
            elif c.kind == "date" and c.target == "relative":
                written = _dt.date.fromtimestamp(m.mtime).isoformat()
                found.append(_finding(m, c, "expired", f"relative date; the file was last written {written}"))
            elif c.kind == "date" and c.cue and m.type == "project":
                passed = _dt.date.fromisoformat(c.target) < today
                verdict = "expired" if all_passed else "ok"
                found.append(_finding(m, c, verdict, "passed, as have all the memory's deadlines" if all_passed
                                      else "has passed; a later deadline has not" if passed else "still ahead"))
        out[m] = found
    return out


def _finding(m: _Memory, c: Claim, verdict: str, evidence: str) -> Finding:
    return Finding(m.relpath, c.line, c.kind, c.text, verdict, evidence)


def _links(memory: MemoryDir, m: _Memory) -> list[Finding]:
    out = []
    base = os.path.dirname(m.relpath)
    for c in link_claims(m.text):
        rel = os.path.normpath(os.path.join(base, c.target.lstrip("/")))
        exists = not rel.startswith("..") and os.path.isfile(os.path.join(memory.root, rel))
        out.append(_finding(m, c, "ok" if exists else "missing",
                            "the memory exists" if exists else f"no memory {rel.replace(os.sep, '/')}"))
    return out


class _PathChecker:
    """Does a path exist at HEAD; if not, where did it go (renames, then the same content, then the same name)."""

    def __init__(self, git: Repo, memory: MemoryDir, claims: Iterable[Claim]):
        self.git = git
        self.root = memory.root  # the memory directory: a claim's path may be relative to it
        self._departures: list[tuple[str, str, str, str]] | None = None
        relative = (self._relative(c.target) for c in claims)
        self.ignored = git.ignored(p for p in relative if p and not self._locate(p.rstrip("/"), p.endswith("/")))

    def _relative(self, path: str) -> str | None:
        """The claimed path relative to the repository, None for an absolute path outside it."""
        if not path.startswith("/"):
            return path
        if not (path + "/").startswith(self.git.root + "/"):
            return None
        return path[len(self.git.root):].lstrip("/") or "."

    def check(self, memory: str, c: Claim) -> Finding:
        path = self._relative(c.target)
        if path is None:
            return Finding(memory, c.line, c.kind, c.text, "ok", "outside the repository: not checked")
        is_dir = path.endswith("/")
        ignored = path in self.ignored
        path = path.rstrip("/")
        found = self._locate(path, is_dir)
        if found:
            return Finding(memory, c.line, c.kind, c.text, "ok", "exists" if found == path else f"exists as {found}")
        if ignored:
            return Finding(memory, c.line, c.kind, c.text, "ok", "ignored by git (generated): not checked")
        if os.path.isfile(os.path.join(self.root, path)):
            return Finding(memory, c.line, c.kind, c.text, "ok", "a memory of that name exists")
        moved = self._moved(path)
        if moved:
            where, why = moved
            return Finding(memory, c.line, c.kind, c.text, "moved", f"{why} -> {where}", where)
        return Finding(memory, c.line, c.kind, c.text, "missing", "not in the tree at HEAD, no rename found")

    def _locate(self, path: str, is_dir: bool) -> str | None:
        """The path itself, or the one tracked path it is the tail of (``net/retry.py`` of ``src/net/retry.py``)."""
        git = self.git
        if path in git.dirs or (not is_dir and path in git.files):
            return path
        name = path.rsplit("/", 1)[-1]
        if is_dir or "." not in name:
            tails = [d for d in git.dirs if d.endswith("/" + path)]
        else:
            tails = [f for f in git.by_name.get(name, ()) if f.endswith("/" + path)]
        return tails[0] if len(tails) == 1 else (path if tails else None)

    def _moved(self, path: str) -> tuple[str, str] | None:
        """Where a path that is gone went: renames followed, then the same content, then the same name."""
        if self._departures is None:
            self._departures = self.git.departures()
        current, commit = path, None
        for sha, how, old, new in reversed(self._departures):  # oldest first: a path renamed twice is followed
            tail = _tail_of(old, current)
            if how != "R" or tail is None:
                continue
            if tail == "":
                current, commit = new, sha  # the file itself
            elif new.endswith(tail):
                current, commit = new[: len(new) - len(tail)], sha  # a directory above it moved with it
        if commit and self._locate(current, False):
            return current, f"renamed in {commit}"
        for sha, how, old, blob in self._departures:  # newest deletion first
            if how == "D" and _tail_of(old, current) == "":
                same = self.git.paths_of_blob.get(blob, [])
                if len(same) == 1:
                    return same[0], f"deleted in {sha}; the same content is now at"
                break
        name = path.rsplit("/", 1)[-1]
        same_name = self.git.by_name.get(name, [])
        if "/" in path and len(same_name) == 1:
            return same_name[0], "the one file of that name is now at"
        return None


def _tail_of(old: str, claim: str) -> str | None:
    """How ``old`` (a renamed file) relates to the claimed path: "" when it is the path (or ends
    with it), the rest of the path when the claim is a directory above it, else None."""
    if old == claim or old.endswith("/" + claim):
        return ""
    if old.startswith(claim + "/"):
        return old[len(claim):]
    return None


class _Declared:
    """Targets declared in the Makefile, package.json scripts, justfile, tox.ini, pytest markers."""

    def __init__(self, git: Repo):
        self.blobs = git.blobs(Repo.CONFIG_FILES)

    def check(self, target: str, present: set[str]) -> tuple[str, str]:
        tool, name = target.split(":", 1)
        if tool == "make":
            return self._in("make", name, [t for f in ("Makefile", "makefile", "GNUmakefile") for t in _make_targets(self.blobs.get(f))],
                            "Makefile")
        if tool == "npm":
            scripts = _json_scripts(self.blobs.get("package.json"))
            return self._in("npm", name, scripts, "package.json scripts")
        if tool == "just":
            text = next((self.blobs[f] for f in ("justfile", "Justfile", ".justfile") if f in self.blobs), None)
            recipes = re.findall(r"^@?([\w-]+)(?:[ \t][^:=\n]*)?:(?!=)", text or "", re.MULTILINE)
            return self._in("just", name, recipes, "justfile")
        if tool == "tox":
            text = self.blobs.get("tox.ini", "")
            envs = set(re.findall(r"^\[testenv:([^\]]+)\]", text, re.MULTILINE))
            envs |= set(re.findall(r"[\w.-]+", " ".join(re.findall(r"^env_?list\s*=((?:.*\n(?:[ \t]+.*\n)*))", text, re.MULTILINE))))
            if re.fullmatch(r"py\d*", name) or name in envs:
                return "ok", "declared in tox.ini" if name in envs else "a default tox environment"
            return "missing", "not an environment in tox.ini" if text else "no tox.ini"
        # pytest markers: registered in a config file, or used in the tree (@pytest.mark.NAME)
        configs = [t for f, t in self.blobs.items() if f in ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")]
        if any(re.search(rf"^\s*[\"']?{re.escape(name)}\b", t, re.MULTILINE) for t in configs) or name in present:
            return "ok", "a registered or used pytest marker"
        return "missing", "no pytest marker of that name"

    @staticmethod
    def _in(tool: str, name: str, declared: list[str], where: str) -> tuple[str, str]:
        if name in declared or "%" in declared:
            return "ok", f"declared in {where}"
        return "missing", f"not a target in {where}" if declared else f"no {where}"


def _make_targets(text: str | None) -> list[str]:
    if not text:
        return []
    targets = []
    for m in re.finditer(r"^([^\s:#=\t][^:=#\n]*?)\s*::?(?!=)(.*)$", text, re.MULTILINE):
        names = m.group(1).split()
        if names == [".PHONY"]:
            targets.extend(m.group(2).split())
        else:
            targets.extend("%" if "%" == n else n for n in names)
    return targets


def _json_scripts(text: str | None) -> list[str]:
    try:
        scripts = json.loads(text or "{}").get("scripts") or {}
    except (ValueError, AttributeError):
        return []
    return list(scripts) if isinstance(scripts, dict) else []


# -- the cache ----------------------------------------------------------------------------------


def cache_key(head: str, today: _dt.date) -> str:
    """What a memory's findings depend on besides its own text: HEAD, the day, mem's rules."""
    # This file's stat stands for the rules: an upgrade or an edit of them must not reuse old verdicts.
    st = os.stat(__file__)
    return f"{head}:{today.isoformat()}:{__version__}:{CACHE_FORMAT}:{st.st_mtime_ns}:{st.st_size}"


class VerifyCache:
    """Findings per memory, keyed by (sha256 of its content, ``cache_key``), in one JSON file.

    Example: VerifyCache(memory.state.verify_cache).get("a.md", sha, key) -> [Finding, ...] or None

    Links are not kept: whether another memory exists changes without this memory or HEAD changing.
    A damaged or foreign file is ignored and rewritten.
    """

    def __init__(self, path: str):
        self.path = path
        self.dirty = False
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            self.entries = data["memories"] if data.get("format") == CACHE_FORMAT else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.entries = {}

    def get(self, relpath: str, sha: str, key: str) -> list[Finding] | None:
        entry = self.entries.get(relpath)
        if not isinstance(entry, dict) or entry.get("sha") != sha or entry.get("key") != key:
            return None
        return [Finding(*row) for row in entry["findings"]]

    def put(self, relpath: str, sha: str, key: str, findings: list[Finding]) -> None:
        self.entries[relpath] = {"sha": sha, "key": key, "findings": [list(f) for f in findings]}
        self.dirty = True

    def save(self, keep: set[str] | None = None) -> None:
        """Write the file back (only when something changed); with ``keep``, forget other memories."""
        if keep is not None and set(self.entries) - keep:
            self.entries = {k: v for k, v in self.entries.items() if k in keep}
            self.dirty = True
        if not self.dirty:
            return
        from mem.core.memdir.store import atomic_write

        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            atomic_write(self.path, json.dumps({"format": CACHE_FORMAT, "memories": self.entries}).encode())
        except OSError:
            pass  # the cache is optional: the next run checks again


# -- fixing -------------------------------------------------------------------------------------


def fix_moved(memory: MemoryDir, findings: Iterable[Finding]) -> list[Finding]:
    """Rewrite each moved path in place to where it went, through the write path, as one operation.

    Example: fix_moved(memory, report.findings) == [the moved findings rewritten]
    Only the path as written on its line is replaced (each time it is written there: one finding
    stands for them all); nothing is deleted. ``mem undo`` takes it back.
    """
    by_memory: dict[str, list[Finding]] = {}
    for f in findings:
        if f.verdict == "moved" and f.new_place:
            by_memory.setdefault(f.memory, []).append(f)
    done = []
    if not by_memory:
        return done
    with memory.operation("verify", ["--fix"]):
        for rel, moved in sorted(by_memory.items()):
            lines = read_text(os.path.join(memory.root, rel), newline="").split("\n")
            for f in moved:
                old = lines[f.line - 1]
                new = re.sub(rf"(?<![\w/.-]){re.escape(f.claim)}(?![\w/-]|\.\w)", lambda _, new=f.new_place: new, old)
                if new != old:
                    lines[f.line - 1] = new
                    done.append(f)
            memory.write(rel, "\n".join(lines))
    return done
