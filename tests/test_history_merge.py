"""Undo of one operation among random interleavings of mem's writes, the agent's own writes and other undos.

Issue #31: after undoing any one operation, every other operation's files and pointer lines are as they
were. In-process (the write path and the history are the real ones; only the jobs' text is simplified
to what remember and forget write: a topic file and its pointer line).
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem.core.errors import RefusedError
from mem.core.memdir import revert
from mem.core.memdir.store import MemoryDir

NAMES = ("alpha", "beta", "gamma", "delta")


def _line(name: str, who: str) -> str:
    return f"- [{name}]({name}.md) — {who} wrote {name}"


def _disk(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def _lines(data: bytes | None) -> Counter:
    return Counter(line for line in (data or b"").decode().split("\n") if line)


def _blob(history, oid: str | None) -> bytes | None:
    return None if oid is None else history.read_blob(oid)


def _do(memory: MemoryDir, action: tuple, ops: list) -> None:
    kind, name = action
    path = os.path.join(memory.root, f"{name}.md")
    index = os.path.join(memory.root, "MEMORY.md")
    if kind == "remember" and not os.path.exists(path):
        with memory.operation("remember", [name]):
            memory.write(f"{name}.md", f"---\nname: {name}\ndescription: d\ntype: user\n---\n\n{name} by mem\n")
            memory.update_index(lambda old: (old or "") + _line(name, "mem") + "\n")
        ops.append(memory.last_operation)
    elif kind == "forget" and os.path.exists(path):
        with memory.operation("forget", [name]):
            memory.delete(f"{name}.md")
            memory.update_index(lambda old: "".join(
                line for line in (old or "").splitlines(keepends=True) if f"({name}.md)" not in line))
        ops.append(memory.last_operation)
    elif kind == "agent" and not os.path.exists(path):  # the agent's Write tool: file, then pointer
        with open(path, "w") as f:
            f.write(f"---\nname: {name}\ndescription: d\ntype: user\n---\n\n{name} by the agent\n")
        with open(index, "a") as f:
            f.write(_line(name, "agent") + "\n")
    elif kind == "undo" and ops:
        try:
            revert.undo(memory, ops[name % len(ops)].id)
            if memory.last_operation is not None:  # an undo already done changes nothing
                ops.append(memory.last_operation)
        except RefusedError:
            pass


actions = st.lists(st.one_of(
    st.tuples(st.sampled_from(["remember", "forget", "agent"]), st.sampled_from(NAMES)),
    st.tuples(st.just("undo"), st.integers(0, 20)),
), min_size=2, max_size=6)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("MEM_MERGE_EXAMPLES", "500")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(script=actions, pick=st.integers(0, 20))
def test_undoing_one_operation_leaves_every_other_operations_files_and_lines(script, pick, memdir):
    with tempfile.TemporaryDirectory(dir=memdir) as tmp:  # memdir gives MEM_STATE_DIR its isolation
        root = os.path.join(tmp, "m")
        os.mkdir(root)
        memory = MemoryDir(root)
        ops: list = []
        for action in script:
            _do(memory, action, ops)
        ops = [op for op in ops if op is not None]
        if ops:
            _check_undo(memory, ops[pick % len(ops)])


def _check_undo(memory: MemoryDir, op) -> None:
    before = _disk(memory.root)
    history = memory.history
    try:
        revert.undo(memory, op.id)
    except RefusedError:
        assert _disk(memory.root) == before  # a refusal changes nothing
        # ... and happens only when something the operation changed has changed since
        changed_since = False
        for c in op.changes:
            now = before.get(c.path)
            if c.path == "MEMORY.md":
                mine = _lines(_blob(history, c.after)) - _lines(_blob(history, c.before))
                changed_since |= bool(mine - _lines(now))
            else:
                changed_since |= now != _blob(history, c.after)
        assert changed_since, f"undo of {op.command} refused with nothing changed since"
        return
    after = _disk(memory.root)
    touched = {c.path for c in op.changes}
    for path in set(before) | set(after):
        if path not in touched:
            assert after.get(path) == before.get(path), path  # nobody else's file moves
    for c in op.changes:
        old = _blob(history, c.before)
        if c.path == "MEMORY.md":
            new = _blob(history, c.after)
            want = _lines(before.get(c.path)) - (_lines(new) - _lines(old))
            for line in _lines(old) - _lines(new):  # back once (a line someone else put back is not doubled)
                want[line] = max(want[line], 1)
            assert _lines(after.get(c.path)) == want  # its own lines out and back, everyone else's kept
        else:
            assert after.get(c.path) == old, c.path
