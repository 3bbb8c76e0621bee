"""qwen-code: its memory directories, hook output, settings files (JSON with comments).

qwen-code 0.15 and 0.24 keep Claude Code's layout under ``~/.qwen/projects/<slug>/``
(memory/, and the session chats in chats/), named by sanitizePath as Claude Code
names its folders (reference/real-clients.md, qwen-code). The memory folder's key
changed: 0.15 keyed a linked worktree by its main repository, 0.24 by the worktree
(``memory_key``, by the installed release: ``installed_version``). 0.24's switch is the
``memory.enableManagedAutoMemory`` setting (``memory_on``), and a top-level
``pinned/`` holds hand-curated memories no job may change (mem/core/memdir/layout.py).

Transcripts (``chats/<session>.jsonl``): lines of Claude Code's shape whose
``message`` is Gemini-shaped, ``{role, parts}``.

uses: core.messages, core.paths; lazily core.jscompat and core.memdir.files (settings), core.memdir.layout, core.errors
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from mem.clients import Group
from mem.core import paths
from mem.core.messages import Block, Message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the recall hook's path)
if TYPE_CHECKING:
    from typing import Any

NAME = "qwen"
#: The client's name for people.
LABEL = "qwen-code"
#: Once used in a project, it needs mem's hooks for recall and extraction (doctor fails without them).
NEEDS_HOOKS = True
#: The transcript format name (mem/core/transcripts.py).
FORMAT = "qwen"
LAYOUT = "qwen"
#: A qwen-code hook payload means qwen-code's memory directory.
PAYLOAD_LAYOUT = "qwen"
#: It escapes both ``<`` and ``>`` in hook context, 0.15 and 0.24 alike.
ESCAPES_ALWAYS = True
#: Topic-file frontmatter is flat: it reads a top-level ``type`` only.
READS_METADATA_TYPE = False
#: A project folder keeps its chats in ``chats/<session>.jsonl``.
TRANSCRIPTS_SUBDIR = "chats"
#: It puts MEMORY.md and its own memory instructions into the system prompt, and extracts itself.
LOADS_OWN_MEMORY = True
#: qwen-code has user and project settings, no local file.
SETTINGS_SCOPES = ("user", "project")
#: It reads its settings with // and /* */ comments (as JSONC).
SETTINGS_COMMENTS = True

#: What it lacks is recall (reference/real-clients.md, qwen-code). 0.24 fires SessionStart too
#: (0.15 does not), where prompt --hook adds the note on surfaced memories. No timeout: qwen-code
#: 0.15 reads it as milliseconds (15 would kill the hook after 15 ms), 0.24 as seconds. No
#: PreToolUse: 0.24.4 runs one but leaves its additionalContext out of the next request
#: (tests/e2e), so the hook would cost a process per call for text the model never reads.
HOOK_GROUPS = (
    Group("SessionStart", None, (("prompt --hook", None),)),
    Group("UserPromptSubmit", None, (("recall --hook", None),)),
)


# ---------------------------------------------------------------------------------------------
# Its directories


def global_dir(home: str, env: Mapping[str, str] | None = None) -> str:
    """qwen-code's global dir (settings.json): QWEN_HOME, else ~/.qwen (Storage.getGlobalQwenDir).

    Example: global_dir("/home/u") == "/home/u/.qwen"
    """
    given = paths.environ_of(env).get("QWEN_HOME")
    return _qwen_path(given, home) if given else paths.posix_join(home, ".qwen")


def _qwen_path(raw: str, home: str) -> str:
    if raw == "~" or raw.startswith("~/"):
        raw = home + raw[1:]
    return paths.posix_resolve(raw)


def runtime_dir(home: str, env: Mapping[str, str] | None = None) -> str:
    """Where qwen-code keeps sessions (projects/<slug>/chats): QWEN_RUNTIME_DIR, else its global dir.

    Example: runtime_dir("/h", {"QWEN_RUNTIME_DIR": "/rt"}) == "/rt"
    """
    given = paths.environ_of(env).get("QWEN_RUNTIME_DIR")
    return _qwen_path(given, home) if given else global_dir(home, env)


def memory_base(home: str, env: Mapping[str, str] | None = None) -> str:
    """Where qwen-code 0.24 keeps managed memory (projects/<slug>/memory, memories/):
    QWEN_CODE_MEMORY_BASE_DIR, else the runtime dir (getMemoryBaseDir).

    Example: memory_base("/h", {"QWEN_CODE_MEMORY_BASE_DIR": "/m"}) == "/m"
    """
    given = paths.environ_of(env).get("QWEN_CODE_MEMORY_BASE_DIR")
    return _qwen_path(given, home) if given else runtime_dir(home, env)


def keyed_memory_dir(key_root: str, home: str, env: Mapping[str, str] | None = None) -> str:
    """qwen-code's memory dir for its key (``memory_key``), without a trailing separator.

    Example: keyed_memory_dir("/home/u/repo", "/home/u") == "/home/u/.qwen/projects/-home-u-repo/memory"
    """
    return paths.posix_join(paths.find_project_dir(paths.posix_join(memory_base(home, env), "projects"), key_root), "memory")


#: The qwen-code release whose memory folder is keyed by the checkout (a linked worktree's own),
#: not by the main repository as 0.15 keyed it (reference/real-clients.md, 2026-11-26).
PER_WORKTREE = (0, 24)


def installed_version(env: Mapping[str, str] | None = None) -> tuple[int, ...] | None:
    """The installed qwen-code's version: ``MEM_QWEN_VERSION`` when set, else the ``version`` of the
    package.json of the ``qwen`` found on PATH (npm links it to the package's cli.js); None when unknown.

    Example: installed_version({"MEM_QWEN_VERSION": "0.24.4"}) == (0, 24, 4)
    """
    import json

    env = paths.environ_of(env)
    if env.get("MEM_QWEN_VERSION"):
        return _parse_version(env["MEM_QWEN_VERSION"])
    exe = paths.which("qwen", env)  # not shutil.which: the recall hook asks this on every prompt
    if exe is None:
        return None
    directory = os.path.dirname(os.path.realpath(exe))
    for _ in range(4):  # cli.js sits at the package's top (dist/ or bin/ below it in other layouts)
        try:
            data = json.loads(paths.read_utf8(paths.posix_join(directory, "package.json")))
        except (OSError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("name") == "@qwen-code/qwen-code":
            return _parse_version(data.get("version"))
        directory = os.path.dirname(directory)
    return None


def _parse_version(text: object) -> tuple[int, ...] | None:
    m = re.match(r"\s*v?(\d+(?:\.\d+)+)", text) if isinstance(text, str) else None
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def memory_key(root: str, git_root: str | None, canonical: str | None,
               env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The path qwen-code keys a project's memory folder by, and why.

    0.24 and later (or unknown: the current release): the nearest git root, a linked worktree's
    own (getAutoMemoryRoot's findGitRoot), or the project root itself with
    ``QWEN_CODE_MEMORY_PROJECT_SCOPE=workspace``. 0.15: the main repository's root, every
    worktree sharing it.

    Example: memory_key("/h/wt", "/h/wt", "/h/repo", {"MEM_QWEN_VERSION": "0.15.10"})[0] == "/h/repo"
    """
    env = paths.environ_of(env)
    release = installed_version(env)
    if release is not None and release < PER_WORKTREE:
        return canonical or root, f"qwen-code {'.'.join(map(str, release))}: keyed by the main repository"
    if (env.get("QWEN_CODE_MEMORY_PROJECT_SCOPE") or "").strip().lower() == "workspace":
        return root, "QWEN_CODE_MEMORY_PROJECT_SCOPE=workspace"
    return git_root or root, "qwen-code 0.24+: keyed by the checkout"


def user_tier_dir(home: str, env: Mapping[str, str] | None = None) -> str:
    """qwen-code 0.24's user tier, loaded into every project's session: <memory base>/memories.

    Example: user_tier_dir("/h") == "/h/.qwen/memories"
    """
    return paths.posix_join(memory_base(home, env), "memories")


def transcripts_dir(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """qwen-code's chats dir for a project root (keyed by the cwd, like Claude's transcripts).

    Example: transcripts_dir("/h/repo/sub", home="/h") == "/h/.qwen/projects/-h-repo-sub/chats"
    """
    projects = paths.posix_join(runtime_dir(paths.home_dir(env, home), env), "projects")
    return paths.posix_join(paths.find_project_dir(projects, root), "chats")


def memory_dir(root: str, git_root: str | None, canonical: str | None, settings=None,
               env: Mapping[str, str] | None = None, home: str | None = None) -> tuple[str, str]:
    """Its memory directory for a project, keyed by ``memory_key``, and the rule (``qwen``); no
    setting of Claude Code's moves it (``settings`` is not read).

    Example: memory_dir("/h/repo", "/h/repo", "/h/repo", home="/h")[0] == "/h/.qwen/projects/-h-repo/memory"
    """
    key = memory_key(root, git_root, canonical, env)[0]
    return keyed_memory_dir(key, paths.home_dir(env, home), env), "qwen"


def project_bases(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(folder of its project folders with memory/, folder of their transcripts, each in ``chats/``).

    Example: project_bases({"HOME": "/h"}) == ("/h/.qwen/projects", "/h/.qwen/projects")
    """
    home = paths.home_dir(env)
    return paths.posix_join(memory_base(home, env), "projects"), paths.posix_join(runtime_dir(home, env), "projects")


def home(env: Mapping[str, str] | None = None) -> str:
    """~/.qwen (or QWEN_HOME): there when the client has run here."""
    return global_dir(paths.home_dir(env), env)


def default_memory_dir(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The memory directory of a project root, without a trailing separator: keyed by its checkout
    (0.24 and later) or its main repository (0.15) (``memory_key``).

    Example: default_memory_dir("/h/repo", home="/h") == "/h/.qwen/projects/-h-repo/memory"
    """
    git_root = paths.find_git_root(root)
    canonical = paths.resolve_canonical_root(git_root) if git_root else None
    key = memory_key(root, git_root, canonical, env)[0]
    return keyed_memory_dir(key, paths.home_dir(env, home), env)


def user_memory_dir(env: Mapping[str, str] | None = None) -> str | None:
    """The user tier (``~/.qwen/memories``, whose MEMORY.md 0.24 puts into every session's system
    prompt, seen with 0.24.4); None for 0.15, which has none."""
    env = paths.environ_of(env)
    release = installed_version(env)
    if release is not None and release < PER_WORKTREE:
        return None
    return user_tier_dir(paths.home_dir(env), env)


def earlier_memory_dir(resolution, env: Mapping[str, str] | None = None) -> str | None:
    """Where qwen-code 0.15 kept a linked worktree's memories (with the main repository's), when this
    release keys the worktree's folder by the worktree and that one holds no memories yet; else None."""
    from mem.core.memdir.layout import walk_topic_files

    worktree, main = resolution.git_root, resolution.canonical_git_root
    if not (worktree and main) or worktree == main:
        return None
    old = keyed_memory_dir(main, paths.home_dir(env), env)
    if os.path.normpath(old) == os.path.normpath(resolution.memory_dir) or not os.path.isdir(old):
        return None
    here = os.path.isdir(resolution.memory_dir) and next(iter(walk_topic_files(resolution.memory_dir)), None)
    return None if here or next(iter(walk_topic_files(old)), None) is None else old


def project_folder(root: str, env: Mapping[str, str] | None = None, home: str | None = None) -> str:
    """The project folder of a working directory (its chats are in ``chats/``).

    Example: project_folder("/h/repo/sub", home="/h") == "/h/.qwen/projects/-h-repo-sub"
    """
    return os.path.dirname(transcripts_dir(root, env, home))


def settings_file(scope: str, project: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The settings file of a scope (user or project).

    Example: settings_file("project", "/home/u/repo") == "/home/u/repo/.qwen/settings.json"
    """
    from mem.core.errors import UsageError

    if scope == "user":
        return os.path.join(global_dir(paths.home_dir(env), env), "settings.json")
    if scope == "local":
        raise UsageError("qwen-code has no local settings file; use --scope user or project")
    return os.path.join(paths.project_root(project or os.getcwd()), ".qwen", "settings.json")


def memory_on(resolution, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """``memory.enableManagedAutoMemory`` (default true), the project's settings over the user's, as
    qwen-code 0.24.4 reads it: off, it neither recalls nor extracts (getManagedAutoMemoryEnabled)."""
    for scope in ("project", "user"):
        path = settings_file(scope, resolution.project_root, env)
        memory = _read_settings(path).get("memory")
        value = memory.get("enableManagedAutoMemory") if isinstance(memory, dict) else None
        if isinstance(value, bool):
            return value, f"memory.enableManagedAutoMemory={'true' if value else 'false'} ({path})"
    return True, "default"


def _read_settings(path: str) -> dict:
    """A settings file's JSON object, comments allowed; {} when it is absent, unreadable or no object."""
    from mem.core.jscompat import blank_comments
    from mem.core.memdir.files import read_bytes

    try:
        data = json.loads(blank_comments(read_bytes(path, paths.SETTINGS_MAX_BYTES).decode("utf-8", "replace")))
    except (OSError, ValueError, RecursionError):  # a refused read is an OSError
        return {}
    return data if isinstance(data, dict) else {}


def hooks_disabled_by(project: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    return None


def escapes_hook_context(version: tuple[int, ...] | None) -> bool:
    return ESCAPES_ALWAYS


def parse(obj: dict) -> list[Message]:
    kind = obj.get("type")
    if kind not in ("user", "assistant", "tool_result"):
        return []
    msg = obj.get("message") or {}
    blocks = to_blocks(msg.get("parts"))
    role = "assistant" if kind == "assistant" or msg.get("role") == "model" else "user"
    sub = "tool_result" if kind == "tool_result" or (blocks and all(b.type == "tool_result" for b in blocks)) else "message"
    return [Message(obj.get("uuid"), role, blocks, kind=sub, timestamp=obj.get("timestamp"), session_id=obj.get("sessionId"),
                    usage=obj.get("usageMetadata"))]


def to_blocks(parts: Any) -> list[Block]:
    blocks = []
    for p in parts or []:
        if not isinstance(p, dict):
            continue
        if "text" in p:
            blocks.append(Block("thinking" if p.get("thought") else "text", _str(p.get("text"))))
        elif "functionCall" in p:
            call = p["functionCall"] or {}
            args = call.get("args")
            blocks.append(Block("tool_use", name=call.get("name") or "", input=args if isinstance(args, dict) else {}, id=call.get("id") or ""))
        elif "functionResponse" in p:
            resp = p["functionResponse"] or {}
            body = resp.get("response")
            text = body.get("output", body.get("error", "")) if isinstance(body, dict) else body
            is_error = isinstance(body, dict) and "error" in body
            blocks.append(Block("tool_result", text if isinstance(text, str) else json.dumps(text, ensure_ascii=False),
                                name=resp.get("name") or "", id=resp.get("id") or "", is_error=is_error))
    return blocks


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


#: The team tier, inside the repository (qwen-code 0.24's TEAM_AUTO_MEMORY_DIRNAME under .qwen/).
TEAM_MEMORY_RELPATH = ".qwen/team-memory"


def team_memory_dir(project: str) -> str:
    """qwen-code 0.24's team tier of a project: ``.qwen/team-memory`` at its checkout's root (the
    git root, a linked worktree's own; the project itself outside git), committed with the code.

    Example: team_memory_dir("/src/app/lib") == "/src/app/.qwen/team-memory"
    """
    root = paths.find_git_root(project) or os.path.abspath(project)
    return os.path.join(root, *TEAM_MEMORY_RELPATH.split("/"))


def team_memory_on(project: str, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether qwen-code 0.24 reads and writes the team tier of a project, and why: opt-in,
    ``QWEN_CODE_MEMORY_TEAM`` ('1' / '0') over ``memory.enableTeamMemory`` (the project's
    settings over the user's; default off), as getTeamMemoryEnabled in 0.24.4."""
    override = paths.environ_of(env).get("QWEN_CODE_MEMORY_TEAM")
    if override in ("0", "1"):
        return override == "1", f"QWEN_CODE_MEMORY_TEAM={override}"
    for scope in ("project", "user"):
        path = settings_file(scope, project, env)
        memory = _read_settings(path).get("memory")
        value = memory.get("enableTeamMemory") if isinstance(memory, dict) else None
        if isinstance(value, bool):
            return value, f"memory.enableTeamMemory={'true' if value else 'false'} ({path})"
    return False, "off by default (memory.enableTeamMemory)"
