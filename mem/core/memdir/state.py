"""Our own bookkeeping, kept outside the memory directory.

Cursors, per-session recall state, the history and locks live in the platform
state directory (``$XDG_STATE_HOME/mem`` on Linux), or ``MEM_STATE_DIR``, in
one subdirectory per memory directory. The memory directory itself holds only
what Claude Code would hold.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def state_root(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    override = env.get("MEM_STATE_DIR")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    fast = _linux_state_root(os.environ)  # platformdirs reads os.environ too, whatever env says
    if fast is not None:
        return fast
    from platformdirs import user_state_dir

    return user_state_dir("mem", appauthor=False)


def _linux_state_root(env: Mapping[str, str]) -> str | None:
    """platformdirs' ``user_state_dir("mem")`` in the plain Linux cases, without importing it.

    Importing platformdirs costs ~8 ms (it loads pathlib, tempfile, shutil, random),
    which the recall hook would pay on every prompt. Anything unusual (another
    platform, Android, a relative or missing HOME) is left to platformdirs.
    """
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or env.get("ANDROID_DATA"):
        return None
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "mem")
    home = env.get("HOME", "")
    if not home.startswith("/"):
        return None
    return os.path.join(home.rstrip("/") or "/", ".local", "state", "mem")


def state_dir(memory, env: Mapping[str, str] | None = None, *, create: bool = True) -> str:
    """The state directory of ``memory`` (a MemoryDir), created 0700 on demand."""
    from mem.core.paths import state_key

    path = os.path.join(state_root(env), "dirs", state_key(memory.root))
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def cache_dir(memory) -> str | None:
    """``state_dir`` of ``memory`` (a MemoryDir), or None where it cannot be made: every cache kept there is optional."""
    try:
        return state_dir(memory)
    except OSError:
        return None


class StateDir:
    """Every path ``mem`` keeps for one memory directory, outside it; nothing is created until asked.

    Example: MemoryDir("/m").state.index_lock == state_root() + "/dirs/<key of /m>/index.lock"
    """

    def __init__(self, memory, env: Mapping[str, str] | None = None):
        self.memory_dir = memory.root
        self.path = state_dir(memory, env, create=False)

    def __repr__(self) -> str:
        return f"StateDir({self.path!r})"

    def ensure(self) -> str:
        """The directory itself, created 0700 when missing."""
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        return self.path

    def _at(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    # locks
    @property
    def index_lock(self) -> str:
        return self._at("index.lock")

    @property
    def log_lock(self) -> str:
        return self._at("log.lock")

    @property
    def extract_lock(self) -> str:
        return self._at("extract.lock")

    @property
    def team_lock(self) -> str:
        return self._at("team-sync.lock")

    # extraction: cursors, the queue, background logs
    @property
    def extract_dir(self) -> str:
        return self._at("extract")

    @property
    def extract_spool(self) -> str:
        return self._at("extract", "spool")

    @property
    def extract_pending(self) -> str:
        return self._at("extract", "pending")

    @property
    def extract_queue_lock(self) -> str:
        return self._at("extract", "queue.lock")

    @property
    def job_logs(self) -> str:
        return self._at("logs")

    # recall and scan caches
    def recall_session(self, name: str) -> str:
        return self._at("recall-sessions", f"{name}.json")

    @property
    def verify_cache(self) -> str:
        """mem verify's findings per memory, keyed by content, repository HEAD and day."""
        return self._at("verify-cache.json")

    @property
    def verify_notes(self) -> str:
        """The one-line notes recall adds to a memory mem verify found stale, keyed by content."""
        return self._at("verify-notes.json")

    # team sync state
    @property
    def team_state(self) -> str:
        return self._at("team-sync.json")

    @property
    def team_quarantine(self) -> str:
        """Team files a pull refused as poisoning, kept under their keys for inspection."""
        return self._at("team-quarantine")

    # history
    @property
    def history(self) -> str:
        return self.path


def events_log(env: Mapping[str, str] | None = None) -> str:
    """The audit trail of every memory directory (one file under the state root)."""
    return os.path.join(state_root(env), "events.jsonl")


def settings_backups(env: Mapping[str, str] | None = None) -> str:
    """Copies of client settings files taken before ``mem hooks`` edits them."""
    return os.path.join(state_root(env), "settings-backups")


def hook_stamp(client: str, event: str, command: str, env: Mapping[str, str] | None = None) -> str:
    """When a hook of ours last read its payload: the mtime of one empty file per client, event and subcommand."""
    return os.path.join(state_root(env), "hooks-fired", f"{client}.{event}.{command}")


def cron_log(env: Mapping[str, str] | None = None) -> str:
    """The output of the nightly ``mem dream --all-projects`` that ``mem cron`` installs."""
    return os.path.join(state_root(env), "cron.log")


def session_state(session_id: str, env: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_root(env), "sessions", session_id + ".json")
