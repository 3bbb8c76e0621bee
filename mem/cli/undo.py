"""mem undo: put the memory directory back as it was before a destructive job."""

from __future__ import annotations

import os

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir


@click.command("undo")
@click.argument("snapshot_id", required=False, metavar="[SNAPSHOT]")
@click.option("--list", "list_", is_flag=True, help="List the snapshots available, newest first.")
@click.option("--dry-run", is_flag=True, help="Print the unified diff of what undo would change; change nothing.")
@memory_dir_options
@format_options
def undo_cmd(snapshot_id: str | None, list_: bool, dry_run: bool, where: dict, fmt: str) -> None:
    """Restore the last snapshot (taken by dream, forget and undo itself).

    The memory directory becomes byte-identical to the snapshot; the state
    before the undo is snapshotted first, so an undo can be undone.

    \b
    Example:
      mem undo --list
      mem undo --dry-run | less
      mem undo
    """
    root = resolve_dir(where).memory_dir
    if list_:
        from mem.core.memdir import snapshot

        snaps = snapshot.list_snapshots(root)
        render.out_rows((s.as_dict() for s in snaps), fmt, lambda d: f"{d['id']}  {d['created']}  {d['command']}  {d['files']} files")
        if not snaps and fmt == "text":
            render.info(f"no snapshots of {root}")
        return
    restore_snapshot(root, snapshot_id, dry_run, fmt)


def restore_snapshot(root: str, snapshot_id: str | None, dry_run: bool, fmt: str) -> None:
    """Restore (or with dry_run, diff) a snapshot of ``root`` and report it."""
    import time

    from mem.core.memdir import events, snapshot

    snap = snapshot.find(root, snapshot_id)
    tree = os.path.join(snap.path, "tree")
    if dry_run:
        if fmt == "text":
            render.out(snapshot.unified_diff(root, tree), nl=False)
        else:
            data = {"snapshot": snap.as_dict(), **snapshot.compare(root, tree).as_dict(), "written": False}
            render.out_record(data, fmt)
        return
    started = time.monotonic()
    before = snapshot.take(root, "undo")
    changes = snapshot.restore(root, snap)
    events.record(root, "undo", created=changes.created, updated=changes.updated, deleted=changes.deleted,
                  duration=time.monotonic() - started, detail={"snapshot": snap.id, "undo_snapshot": before.id})
    data = {"snapshot": snap.as_dict(), **changes.as_dict(), "written": bool(changes), "undo_snapshot": before.id}
    if fmt != "text":
        render.out_record(data, fmt)
    n = len(changes.created) + len(changes.updated) + len(changes.deleted)
    render.info(f"restored {snap.id} ({snap.command}): {n} file{'s' * (n != 1)} changed; `mem undo` again reverts this")
