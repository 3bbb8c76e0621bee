"""Projects that move: memory folders whose project is gone, and moving one to the project's new path.

Example: [o.recorded_path for o in orphans()]; plan_relocation("/home/u/old", "/home/u/new").steps

Claude Code and qwen-code key a project's folder by its sanitized path (``-home-u-repo``): the
memory by the canonical git root, the transcripts by the session's cwd. Moving or renaming a
checkout starts a new, empty folder and leaves the old one behind. Where a folder's project was
is read from its transcripts' ``cwd`` field, else decoded from its name by walking the file
system for a path that sanitizes to it. A relocation renames what it can (the history's state
directory goes with a moved memory directory) and merges a memory directory into one that
already holds memories through the write path, refusing any file that would be overwritten.

uses: paths, clients (each client's new folders, transcripts), memdir (store, layout, state, files), portable
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field

from mem import clients
from mem.core import paths
from mem.core.errors import MemError, NotFoundError, RefusedError, UsageError
from mem.core.wording import plural

MEMORY_SUBDIR = "memory"
#: How much of a transcript's start is read for its cwd.
CWD_PROBE_BYTES = 64 * 1024


@dataclass
class ProjectFolder:
    """One client's folder for one project, and where its project was."""

    client: str  # "claude" | "qwen"
    folder: str
    memory_dir: str | None
    transcripts: list[str]
    recorded_path: str | None  # the project's path, when it could be told
    recorded_from: str | None  # "transcript" | "name" | None
    exists: bool  # the project is still at recorded_path
    size: int
    last_used: float | None

    def as_dict(self) -> dict:
        from mem.core.memdir.manifest import iso_utc_ms

        return {
            "client": self.client,
            "folder": self.folder,
            "name": os.path.basename(self.folder),
            "memory_dir": self.memory_dir,
            "transcripts": len(self.transcripts),
            "recorded_path": self.recorded_path,
            "recorded_from": self.recorded_from,
            "exists": self.exists,
            "size": self.size,
            "last_used": None if self.last_used is None else iso_utc_ms(int(self.last_used * 1000)),
        }


def _transcripts_of(client: str, folder: str) -> list[str]:
    from mem.clients import named

    sub = named(client).TRANSCRIPTS_SUBDIR
    directory = os.path.join(folder, sub) if sub else folder
    try:
        with os.scandir(directory) as it:
            return sorted(e.path for e in it if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False))
    except OSError:
        return []


def transcript_cwd(path: str) -> str | None:
    """The ``cwd`` the first lines of a transcript record, or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(CWD_PROBE_BYTES)
    except OSError:
        return None
    for line in head.split(b"\n"):
        if b'"cwd"' not in line:
            continue
        try:
            cwd = json.loads(line).get("cwd")
        except (ValueError, AttributeError):
            continue
        if isinstance(cwd, str) and cwd.startswith("/"):
            return cwd
    return None


def _key_path(cwd: str, name: str) -> str | None:
    """``cwd`` or the ancestor of it whose sanitized form is ``name`` (a memory folder is keyed by the git root)."""
    p = cwd.rstrip("/") or "/"
    while True:
        if paths.sanitize_path(p) == name:
            return p
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def decode_name(name: str, top: str = "/") -> str | None:
    """An existing directory whose sanitized path is ``name``, found by walking down from ``top``; or None.

    Sanitizing is not reversible ('-' stands for '/', '.', '_' and more), so every directory whose
    sanitized path is a prefix of ``name`` is tried. A hashed (over 200 characters) name is not decoded.
    """
    if len(name) > paths.MAX_SANITIZED_LENGTH:
        return None

    def walk(directory: str) -> str | None:
        try:
            with os.scandir(directory) as it:
                children = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except OSError:
            return None
        for child in children:
            candidate = directory.rstrip("/") + "/" + child
            s = paths.sanitize_path(candidate)
            if s == name:
                return candidate
            if name.startswith(s + "-"):
                found = walk(candidate)
                if found:
                    return found
        return None

    return top if paths.sanitize_path(top) == name else walk(top)


def _tree_size(path: str) -> tuple[int, float | None]:
    size, newest = 0, None
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            size += st.st_size
            newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
    return size, newest


def project_folders(env=None) -> list[ProjectFolder]:
    """Every project folder of Claude Code and qwen-code with a memory directory or transcripts."""
    out = []
    seen = set()
    for client, memory_base, transcripts_base in clients.project_bases(env=env):
        names = set()
        for base in {memory_base, transcripts_base}:
            try:
                with os.scandir(base) as it:
                    names |= {e.name for e in it if e.is_dir(follow_symlinks=False)}
            except OSError:
                continue
        for name in sorted(names):
            memory = os.path.join(memory_base, name, MEMORY_SUBDIR)
            memory = memory if os.path.isdir(memory) else None
            folder = os.path.join(transcripts_base, name)
            transcripts = _transcripts_of(client, folder)
            if memory is None and not transcripts:
                continue
            key = (client, os.path.realpath(folder))
            if key in seen:
                continue
            seen.add(key)
            recorded, how = None, None
            for t in reversed(transcripts):  # newest name last is no promise: try each until one tells
                cwd = transcript_cwd(t)
                recorded = cwd and _key_path(cwd, name)
                if recorded:
                    how = "transcript"
                    break
            exists = bool(recorded) and os.path.isdir(recorded)
            if not exists:
                decoded = decode_name(name)
                if decoded:
                    recorded, how, exists = decoded, "name", True
            size, newest = 0, None
            for part in [memory, *transcripts]:
                if part is None:
                    continue
                s, n = _tree_size(part) if os.path.isdir(part) else (os.path.getsize(part), os.path.getmtime(part))
                size += s
                newest = n if newest is None or (n is not None and n > newest) else newest
            out.append(ProjectFolder(client, os.path.join(memory_base if memory else transcripts_base, name),
                                     memory, transcripts, recorded, how, exists, size, newest))
    return out


def orphans(env=None) -> list[ProjectFolder]:
    """The project folders whose project is no longer where it was."""
    return [f for f in project_folders(env) if not f.exists]


# ---------------------------------------------------------------------------------------------
# Relocation


@dataclass
class Move:
    action: str  # move | merge | remove | skip
    source: str
    target: str
    note: str = ""

    def line(self) -> str:
        arrow = f"{self.source} -> {self.target}" if self.target else self.source
        return f"{self.action:<6} {arrow}" + (f" ({self.note})" if self.note else "")

    def as_dict(self) -> dict:
        return {"action": self.action, "source": self.source, "target": self.target, "note": self.note or None}


@dataclass
class Relocation:
    old: str
    new: str
    steps: list[Move] = field(default_factory=list)
    merges: list = field(default_factory=list)  # (source dir, MemoryDir, ImportPlan)

    @property
    def changes(self) -> bool:
        return any(s.action != "skip" for s in self.steps)

    def as_dict(self) -> dict:
        return {"old": self.old, "new": self.new, "changes": self.changes, "steps": [s.as_dict() for s in self.steps]}


def _only_empty_files(directory: str) -> bool:
    """What a client creates at start-up (an empty dir, an empty MEMORY.md): nothing to merge into."""
    for dirpath, _dirs, files in os.walk(directory):
        for f in files:
            if os.path.getsize(os.path.join(dirpath, f)) > 0:
                return False
    return True


def _remove_empty(directory: str) -> None:
    """Remove a tree of empty files and directories (checked by ``_only_empty_files``), deepest first."""
    for dirpath, _dirs, files in sorted(os.walk(directory), key=lambda w: -len(w[0])):
        for f in files:
            os.unlink(os.path.join(dirpath, f))
        os.rmdir(dirpath)


def plan_relocation(old: str, new: str, env=None) -> Relocation:
    """What moving the project at ``old`` (which may be gone) to ``new`` (which must exist) would do."""
    from mem.clients import named
    from mem.core.memdir.store import MemoryDir
    from mem.core.portable import plan_import, read_directory

    old = paths.project_root(old)
    if not os.path.isdir(new):
        raise NotFoundError(f"{new} is not a directory: the project's new path must exist")
    new = paths.project_root(new)
    if old == new:
        raise UsageError("the old and the new path are the same")
    plan = Relocation(old, new)
    home = paths.home_dir(env)
    for client, memory_base, transcripts_base in clients.project_bases(env=env):
        old_memory = os.path.join(paths.find_project_dir(memory_base, old), MEMORY_SUBDIR)
        old_folder = paths.find_project_dir(transcripts_base, old)
        new_memory = named(client).default_memory_dir(new, env, home)
        new_folder = named(client).project_folder(new, env, home)
        if os.path.normpath(old_folder) == os.path.normpath(new_folder):
            continue
        whole = (os.path.dirname(old_memory) == old_folder and os.path.dirname(new_memory) == new_folder)
        if whole and os.path.isdir(old_folder) and not os.path.lexists(new_folder):
            plan.steps.append(Move("move", old_folder, new_folder, f"{client}: memory and transcripts"))
            continue
        if os.path.isdir(old_memory):
            if not os.path.lexists(new_memory) or (os.path.isdir(new_memory) and _only_empty_files(new_memory)):
                note = f"{client} memory" + (", over the empty one there" if os.path.lexists(new_memory) else "")
                plan.steps.append(Move("move", old_memory, new_memory, note))
            else:
                target = MemoryDir(new_memory)
                source = read_directory(MemoryDir(old_memory), client, logs=True, team=True)
                merge = plan_import(target, source, policy="keep",
                                    foreign_hint="move it out of the memory directory, then relocate")
                if merge.conflicts:
                    listed = ", ".join(merge.conflicts[:5]) + (" …" if len(merge.conflicts) > 5 else "")
                    raise RefusedError(
                        f"{new_memory} already has other versions of {listed}: refusing to overwrite them; "
                        f"nothing was moved (mem import --dir {new_memory} {old_memory} --on-conflict both "
                        "merges them by hand)")
                n = sum(1 for s in merge.steps if s.writes)
                plan.steps.append(Move("merge", old_memory, new_memory, f"{client} memory: {plural(n, 'file')} to write"))
                plan.steps.append(Move("remove", old_memory, "", "after the merge, through its own history"
                                       if target.history.available() else "after the merge (history is off: not recorded)"))
                for rel, why in merge.skipped:  # pinned/: never written by mem, so left where it is, said so
                    plan.steps.append(Move("skip", os.path.join(old_memory, rel), os.path.join(new_memory, rel), why))
                plan.merges.append((old_memory, target, merge))
        if not os.path.isdir(old_folder):
            continue
        _plan_entries(plan, client, old_folder, new_folder, skip=old_memory)
    if not plan.steps:
        raise NotFoundError(f"no memory or transcripts recorded for {old}")
    return plan


def _plan_entries(plan: Relocation, client: str, old: str, new: str, *, skip: str, depth: int = 0) -> None:
    """Move each entry of ``old`` into ``new``; a directory both have is gone through one level down."""
    with os.scandir(old) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if os.path.normpath(e.path) == os.path.normpath(skip):
            continue
        target = os.path.join(new, e.name)
        if not os.path.lexists(target):
            plan.steps.append(Move("move", e.path, target, f"{client} transcripts" if e.name.endswith(".jsonl") else client))
        elif e.is_dir(follow_symlinks=False) and os.path.isdir(target) and depth == 0:
            _plan_entries(plan, client, e.path, target, skip=skip, depth=1)
        elif e.name.endswith(".jsonl"):
            raise RefusedError(f"{target} already exists: refusing to overwrite a transcript; nothing was moved")
        else:
            plan.steps.append(Move("skip", e.path, target, "the new folder has its own; left where it is"))


def apply_relocation(plan: Relocation, args=()) -> None:
    """Carry out a plan: merges first (they can still refuse), then renames, then the merged-away dirs."""
    from mem.core.memdir.state import state_dir
    from mem.core.memdir.store import MemoryDir
    from mem.core.portable import apply_import

    for _source, target, merge in plan.merges:
        apply_import(target, merge, args, command="relocate")
    for step in plan.steps:
        if step.action != "move":
            continue
        if os.path.isdir(step.target) and _only_empty_files(step.target):
            _remove_empty(step.target)
        if os.path.lexists(step.target):
            raise RefusedError(f"{step.target} appeared meanwhile: refusing to overwrite it")
        os.makedirs(os.path.dirname(step.target), exist_ok=True)
        old_states = {d: state_dir(MemoryDir(d), create=False) for d in _memory_dirs_in(step.source)}
        os.rename(step.source, step.target)
        for d, old_state in old_states.items():  # the history and cursors follow their memory directory
            new_dir = step.target + d[len(step.source):]
            new_state = state_dir(MemoryDir(new_dir), create=False)
            if os.path.isdir(old_state) and not os.path.lexists(new_state):
                os.rename(old_state, new_state)
    for source, _target, merge in plan.merges:
        old = MemoryDir(source)
        _remove_merged(old, merge.source.files, args, plan.new)
        # A writer of the old session may be saving: with the history lock held it either has
        # written (the directory is not empty, so it stays) or writes after (and makes it again).
        with old.history.exclusive() if old.history.available() else contextlib.nullcontext():
            _remove_emptied(source)


def _remove_emptied(source: str) -> None:
    """Remove the dream lock and the directories left empty in a memory directory merged away."""
    from mem.core.memdir.layout import DREAM_LOCK

    if os.path.isfile(os.path.join(source, DREAM_LOCK)):
        os.unlink(os.path.join(source, DREAM_LOCK))
    for dirpath, _dirs, _files_ in sorted(os.walk(source), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def _remove_merged(old, merged: dict[str, bytes], args, moved_to: str) -> None:
    """Remove from ``old`` only what the merge copied: each file still holding the bytes it read.

    A memory saved into the old directory while the move ran was not merged, so it stays there
    (with its pointer: the index loses only the lines the merge read). Planned and removed under
    the index lock, so no pointer lands between the look and the write.
    """
    from mem.core.memdir.files import read_bytes
    from mem.core.memdir.layout import is_index

    def holds(rel: str) -> bytes | None:
        try:
            return read_bytes(os.path.join(old.root, rel))
        except (OSError, MemError):
            return None

    with old.index_lock(), old.operation("relocate", list(args), meta={"moved_to": moved_to}):
        for rel in sorted(_files(old), key=lambda r: r.count("/"), reverse=True):
            now = holds(rel)
            if rel not in merged or now is None:
                continue
            if now == merged[rel]:
                old.delete(rel, allow_index=True)
            elif is_index(rel):  # pointers added meanwhile stay, for the memories that stay
                copied = set(merged[rel].decode("utf-8", "replace").splitlines())
                left = [line for line in now.decode("utf-8", "replace").splitlines(keepends=True)
                        if line.rstrip("\r\n") not in copied]
                if any(line.strip() for line in left):
                    old.write(rel, "".join(left), scan=False)
                else:
                    old.delete(rel, allow_index=True)


def _memory_dirs_in(path: str) -> list[str]:
    if os.path.basename(path.rstrip("/")) == MEMORY_SUBDIR:
        return [path]
    inner = os.path.join(path, MEMORY_SUBDIR)
    return [inner] if os.path.isdir(inner) else []


def _files(memory) -> list[str]:
    """The relpaths of the files in ``memory`` (a MemoryDir)."""
    from mem.core.memdir.layout import tree_files

    return list(tree_files(memory.root))
