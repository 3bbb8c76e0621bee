"""mem promote / mem demote: a memory moved between this project and the user-level memory."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import memory_dir_options, resolve_dir, warn_if_history_off


@click.command("promote", short_help="Move a memory (FILE) to user-level memory, seen in every project.")
@click.argument("file", metavar="FILE")
@click.option("--to", "to", type=click.Choice(("user",)), default="user", show_default=True,
              help="Where the memory goes: the user-level memory directory (mem path --user).")
@click.option("--copy", is_flag=True, help="Keep the project's copy too.")
@memory_dir_options
def promote_cmd(file: str, to: str, copy: bool, where: dict) -> None:
    """Move a memory (FILE, relative to the memory directory) to user-level memory, known in every project.

    The file and its MEMORY.md pointer land in the user-level directory
    through its write path; mem prompt --hook adds that index at session
    start and recall searches it after the project's own, labelled as
    user-level. Each directory records its side in its own history.

    \b
    Example:
      mem promote user_shell.md --to user
      mem promote --copy feedback_terse.md
    """
    _carry(file, where, to_user=True, keep=copy)


@click.command("demote", short_help="Move a user-level memory (FILE) into this project's memory.")
@click.argument("file", metavar="FILE")
@click.option("--copy", is_flag=True, help="Keep the user-level copy too.")
@memory_dir_options
def demote_cmd(file: str, copy: bool, where: dict) -> None:
    """Move a user-level memory (FILE) into this project's memory directory.

    \b
    Example:
      mem demote user_shell.md
    """
    _carry(file, where, to_user=False, keep=copy)


def _carry(file: str, where: dict, *, to_user: bool, keep: bool) -> None:
    import os

    from mem.clients import of_layout, user_memory_dir
    from mem.core.errors import UsageError
    from mem.core.memdir.store import MemoryDir
    from mem.core.portable import copy_memory

    res = resolve_dir(where)
    project = MemoryDir(res.memory_dir)
    user_dir, user_layout = user_memory_dir(res)
    user = MemoryDir(user_dir)
    src, dst = (project, user) if to_user else (user, project)
    project_layout = of_layout(res.layout).LAYOUT
    layouts = (project_layout, user_layout) if to_user else (user_layout, project_layout)
    if src.real_root == dst.real_root:  # also through a symbolic link: moving a file onto itself deletes it
        raise UsageError(f"this project's memory directory is the user-level one ({user.root})")
    command = "promote" if to_user else "demote"
    rel = copy_memory(src, dst, file, command=command, args=[file], delete=not keep, layouts=layouts)
    render.out(os.path.join(dst.root, rel))
    render.info(f"{'copied' if keep else 'moved'} {rel} to {dst.root}")
    warn_if_history_off(dst)
