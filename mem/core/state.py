"""Our own bookkeeping, kept outside the memory directory.

Cursors, per-session recall state, snapshots and locks live in the platform
state directory (``$XDG_STATE_HOME/mem`` on Linux), or ``MEM_STATE_DIR``, in
one subdirectory per memory directory. The memory directory itself holds only
what Claude Code would hold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def state_root(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    override = env.get("MEM_STATE_DIR")
    if override:
        return os.path.abspath(os.path.expanduser(override))
    from platformdirs import user_state_dir

    return user_state_dir("mem", appauthor=False)


def state_dir(memory_dir: str, env: Mapping[str, str] | None = None, *, create: bool = True) -> str:
    """The state directory of one memory directory (created 0700 on demand)."""
    from mem.core.paths import state_key

    path = os.path.join(state_root(env), "dirs", state_key(memory_dir))
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path
