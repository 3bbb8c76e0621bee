"""Which saved feedback applies to a tool call: the matcher of the PreToolUse hook.

A prompt names what the user wants; a tool call names what the agent is about to do, in
commands, flags and paths (``git push --force origin main``, an edit of
``migrations/versions/0042_add_vat.py``). A memory says which of those it is about in the
same words, mostly in code spans and paths: "Never run `git push --force`", "Every
migration file under `migrations/`". Those are its **triggers**. A trigger applies to a
call when every one of its atoms is in the call:

* a **flag** (``-f``, ``--no-verify``, ``-auto-approve``) must be among the call's flags;
* a **path** (``migrations/``, ``.env``, ``config/production.yaml``) must name the call's
  file or a path in its command, as a whole, a directory on its way, or its file name;
* a **word** is compared as the recall ranker compares words (mem/core/ranker.py's terms:
  NFKC, case folded, stemmed; CJK in bigrams).

A trigger weighs what its atoms do (a path 2, a flag or a word 1; a command named alone 2,
``yarn``, unless it is one as common as ``cat`` or ``git``; a flag alone 2 in a call of a
command the memory names, ``--cov`` in ``pytest --cov``) and a memory scores the weight of
its best trigger that applies, plus half of each further one; it is surfaced from
``MIN_WEIGHT``. A span in a sentence that says what to do instead ("use `docker compose`",
"new work goes in `api/v2/`", the "How to apply:" line), and that neither forbids nor says
when, is no trigger: a call that does what the memory asks needs no reminder. Word overlap alone, which
is what prompt recall lives on, never surfaces anything here: most tool calls must
surface nothing, and a tool call's words (a file's content) are mostly not about the
rule. Only ``feedback`` and ``project`` memories are candidates.

The triggers of each memory are kept in the state directory between calls, keyed by the
file's modification time and size, so a hook called before every tool reads only what changed.

uses: ranker (terms), recall (read_body), messages (tool_file), memdir.store (atomic_write)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

#: A memory is surfaced when its triggers that apply weigh this much (chosen on the tune half
#: of tests/fixtures/toolcall-bench; see bench/RESULTS.md).
MIN_WEIGHT = 2.0
#: At most this many memories for one tool call.
MAX_PER_CALL = 2
#: Of a file's content or an edit's new text, this much is read for words.
TEXT_CHARS = 4096
#: The memory types a tool call can surface.
TYPES = ("feedback", "project")
#: Bump when the triggers a memory gives change: cached triggers of older versions are rebuilt.
TRIGGERS_VERSION = 2
TRIGGERS_CACHE = "tool-triggers.marshal"

#: Tool names of both clients, by what the tool does.
TOOL_KINDS = {
    "Bash": "shell", "run_shell_command": "shell",
    "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "edit": "edit", "replace": "edit",
    "Write": "write", "write_file": "write",
    "Read": "read", "read_file": "read", "read_many_files": "read",
}

_CODE_SPAN = re.compile(r"`([^`\n]{1,120})`")
#: A path-like word outside code spans: ``src/shop/api/``, ``docs/runbook.md``.
_BARE_PATH = re.compile(r"(?<![\w/.`])(?:(?:\.?[\w.-]+/)+[\w.-]*|[\w-]+\.(?:toml|json|ya?ml|lock|cfg|ini|md|py|sh|sql|ts|tsx|js))(?![\w`])")
_SHELL_SPLIT = re.compile(r"[\s;|&()<>`'\"=]+")
_SEGMENT_START = re.compile(r"(?:^|[;|&(]|&&|\|\|)\s*(?:sudo\s+|env\s+|\S+=\S*\s+)*([\w./-]+)")
_PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.")
#: Sentences of a memory: a code span's sentence says whether it is the rule or what to do instead.
_SENTENCE = re.compile(r"(?<=[.;!?。！？；])\s+|\n+|(?<=[。！？；])")
#: What to do instead ("use `docker compose`", "new work goes in `api/v2/`", the "How to apply:" line)...
_ALTERNATIVE = re.compile(r"\binstead\b|\buse\b|\bgoes? in\b|\bhow to apply\b|改用|代わりに", re.I)
#: ... unless the sentence also forbids, requires or says when: then its spans are the rule.
_RULE = re.compile(r"\b(?:never|not|no|avoid|must|only|always|ask|when|whenever)\b|n't|不要|禁止|必须|しない|しないこと", re.I)
#: Commands so common that naming one alone says nothing about a call (`cat`, `git`): they count
#: as a word, not as a command named alone.
_COMMON_COMMANDS = frozenset("cat ls cd echo grep head tail git python python3 make sh bash find less sudo rm cp mv".split())


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


# --- a memory's triggers ----------------------------------------------------------

def triggers(text: str) -> list[tuple]:
    """(words, flags, paths, weight, command, commands) of each trigger a memory's text holds: the
    code spans and bare paths of its sentences that state the rule (not those saying what to do
    instead); ``command``: the command's name when the trigger is that alone, else ""; ``commands``: for a flag alone,
    the commands the memory names."""
    from mem.core import ranker

    found: list[tuple] = []
    spans = []
    for sentence in _SENTENCE.split(text):
        if _ALTERNATIVE.search(sentence) and not _RULE.search(sentence):
            continue  # what to do instead: a call that does it needs no reminder
        spans += [(span, True) for span in _CODE_SPAN.findall(sentence)]
        spans += [(span, False) for span in _BARE_PATH.findall(_CODE_SPAN.sub(" ", sentence))]
    # The commands the memory names (`pytest -x -q` names pytest): a flag alone is about them.
    named = tuple(dict.fromkeys(p.split()[0] for p, quoted in spans if quoted and re.match(r"[a-z][\w-]*(\s|$)", p)))
    for span, quoted in spans:
        words: list[str] = []
        flags: list[str] = []
        paths: list[str] = []
        pieces = _PLACEHOLDER.sub(" ", span).split()
        for piece in pieces:
            if piece == "*":
                flags.append("*")  # `SELECT *`, `rm -rf *`
            elif "*" in piece:
                continue  # a glob (`proto/*.proto`) is no one path
            elif _is_flag(piece):
                flags.append(piece.split("=", 1)[0].lower())
            elif _is_path(piece):
                path = _norm_path(piece)
                if path and path not in ("/", "."):
                    paths.append(path)
            else:
                words.extend(ranker.terms(piece))
        if not (words or flags or paths):
            continue
        # Each piece of a span counts once however many terms it gives (`pnpm add` is two, "add" no term).
        weight = float(len(pieces) + len(paths))
        command = ""
        commands: tuple[str, ...] = ()
        if not paths and not flags and words and len(pieces) == 1:
            # a command named alone (`yarn`, `kubectl`), or an identifier of code (`print()`,
            # `MagicMock`, `@patch`), is one specific word; a common command is not
            command = pieces[0] if re.fullmatch(r"[a-z][\w-]*", pieces[0]) else ""
            if (command and command not in _COMMON_COMMANDS) or (
                    not command and re.search(r"[()._@]|[a-z][A-Z]", pieces[0])):
                weight = 2.0
        if flags and not words and not paths and flags != ["*"]:
            commands = named  # `--cov` alone: weighs 2 in a call of a command the memory names (pytest)
        if not quoted and paths and paths[0].endswith("/"):
            weight = 1.0  # a directory said in passing ("in service code (src/)") is no rule about it
        key = (tuple(dict.fromkeys(words)), tuple(dict.fromkeys(flags)), tuple(dict.fromkeys(paths)), weight, command,
               commands)
        if key not in found:
            found.append(key)
    return found


# --- a tool call ------------------------------------------------------------------

class ToolCall:
    """What a tool call shows the matcher: its words, flags and paths, and its pattern."""

    __slots__ = ("kind", "words", "flags", "paths", "commands", "pattern")

    def __init__(self, kind: str, words: set[str], flags: set[str], paths: list[str], commands: set[str],
                 pattern: str):
        self.kind = kind
        self.words = words
        self.flags = flags
        self.paths = paths  # normalised, relative to the session's directory where inside it
        self.commands = commands  # the command words of a shell command (git, sudo pip...)
        self.pattern = pattern  # "shell:git push", "edit:migrations/versions": once per session each


def _relative(path: str, cwd: str) -> str:
    path = path.strip()
    if cwd and os.path.isabs(path):
        rel = os.path.relpath(os.path.normpath(path), cwd) if path.startswith(cwd.rstrip("/") + "/") else path
        path = rel
    return _norm_path(path)


def read_call(tool_name: str, tool_input: object, cwd: str = "") -> ToolCall | None:
    """The call as the matcher sees it; None for a tool it does not read (or an input it cannot)."""
    from mem.core import ranker

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
        for piece in _SHELL_SPLIT.split(command):
            if not piece:
                continue
            if piece == "*":
                flags.add("*")
            elif _is_flag(piece):
                flags.update(_flags(piece))
            elif _is_path(piece) or piece.startswith("~"):
                paths.append(_relative(piece, cwd))  # matched as a path only: `docker-compose` is no file
            else:
                words.update(ranker.terms(piece))
        for m in _SEGMENT_START.finditer(command):
            commands.add(m.group(1).rsplit("/", 1)[-1].lower())
        if re.match(r"\s*sudo\b", command):
            commands.add("sudo")
        first = [w for w in command.split() if not _is_flag(w) and "=" not in w][:2]
        pattern = "shell:" + " ".join(w.rsplit("/", 1)[-1] for w in first)
    else:
        from mem.core.messages import tool_file

        file_path = tool_file(tool_input) or ""
        path = _relative(file_path, cwd) if file_path else ""
        if path:
            paths.append(path)
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
        pattern = f"{kind}:{os.path.dirname(path)}"
    return ToolCall(kind, words, flags, paths, commands, pattern)


def _path_applies(trigger_path: str, call_paths: Sequence[str]) -> bool:
    directory = trigger_path.endswith("/")
    t = trigger_path.rstrip("/")
    for p in call_paths:
        if p == t or p.startswith(t + "/") or ("/" + t + "/") in ("/" + p + "/"):
            return True
        if not directory and "/" not in t and p.rsplit("/", 1)[-1] == t:
            return True
    return False


def score(call: ToolCall, memory_triggers: Iterable[tuple]) -> float:
    """How much of a memory applies to the call: its best trigger's weight, plus half of each further one."""
    weights = []
    for words, flags, paths, weight, command, commands in memory_triggers:
        if command and (call.kind != "shell" or command not in call.commands):
            continue  # `yarn` is about running yarn, not about a file that says "yarn"
        if commands and call.commands.intersection(commands):
            weight = max(weight, 2.0)
        if not all(w in call.words for w in words):
            continue
        if not all(f in call.flags or any(c.startswith(f + "-") for c in call.flags) for f in flags):
            continue
        if not all(_path_applies(p, call.paths) for p in paths):
            continue
        if call.kind == "shell" and words and not paths and words[0] not in call.commands and not (
                flags or len(words) > 1):
            continue  # a word alone counts where it is the command: `yarn`, not "yarn" in a message
        weights.append(weight)
    if not weights:
        return 0.0
    weights.sort(reverse=True)
    return weights[0] + 0.5 * sum(weights[1:])


#: A memory a read can surface says something about reading (most rules are about changing a file).
_ABOUT_READING = re.compile(r"\b(?:read|cat|print|open|view)\b|读取|打开|查看|読ま|読み|開か|開く", re.I)


def about_reading(text: str) -> bool:
    """Whether a memory's text speaks of reading or printing something (only such memories apply to a read)."""
    return bool(_ABOUT_READING.search(text))


def select(call: ToolCall, candidates: Sequence[tuple[str, list, bool]], *, min_weight: float = MIN_WEIGHT,
           limit: int = MAX_PER_CALL) -> list[tuple[str, float]]:
    """(key, score) of the memories that apply to the call, best first; ``candidates`` are
    (key, triggers, about_reading)."""
    hits = [(key, s) for key, trig, reading in candidates
            if (reading or call.kind != "read") and (s := score(call, trig)) >= min_weight]
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
