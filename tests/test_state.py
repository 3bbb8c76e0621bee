"""Where our state lives: MEM_STATE_DIR, else exactly where platformdirs puts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from mem.core.memdir.state import state_root
ours = state_root()
needed = "platformdirs" in sys.modules  # before the oracle below imports it
from platformdirs import user_state_dir
print(json.dumps([ours, user_state_dir("mem", appauthor=False), needed]))
"""


def both(env_changes: dict[str, str | None]) -> tuple[str, str, bool]:
    """(our state root, platformdirs' answer, whether ours imported platformdirs) in a clean process."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEM_STATE_DIR", "XDG_STATE_HOME")}
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    return tuple(json.loads(r.stdout))


@pytest.mark.parametrize("changes", [
    {"HOME": "/home/ann"},
    {"HOME": "/home/ann/"},
    {"HOME": "/"},
    {"HOME": "/home/ann", "XDG_STATE_HOME": "/srv/state"},
    {"HOME": "/home/ann", "XDG_STATE_HOME": "/srv/state/"},
    {"HOME": "/home/ann", "XDG_STATE_HOME": "relative/state"},
    {"HOME": "/home/ann", "XDG_STATE_HOME": ""},
    {"HOME": "relative", "XDG_STATE_HOME": None},
    {"HOME": "", "XDG_STATE_HOME": None},
    {"HOME": None},
])
def test_state_root_is_where_platformdirs_puts_it(changes):
    ours, theirs, needed = both(changes)
    assert ours == theirs
    if sys.platform == "linux" and (changes.get("HOME") or "").startswith("/"):
        assert not needed  # the common case costs no platformdirs import


def test_mem_state_dir_wins(tmp_path):
    from mem.core.memdir.state import state_root

    assert state_root({"MEM_STATE_DIR": str(tmp_path / "s"), "HOME": "/home/ann"}) == str(tmp_path / "s")
