"""Bytes onto disk safely (the temp-file + fsync + rename every writer of mem uses), and whether a lock holder lives.

Example: atomic_write("/m/a.md", b"...") leaves either the old file or the new one, never half.
"""

from __future__ import annotations

import contextlib
import os


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str, data: bytes) -> None:
    """temp file in the same directory, fsync, rename; the old mode is kept."""
    parent, name = os.path.split(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    fd, tmp = _create_temp(parent, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(parent)


def _create_temp(parent: str, name: str) -> tuple[int, str]:
    """A new file ``.<name>.<8 random hex>.tmp`` in ``parent``, opened 0600, as mkstemp makes.

    Not tempfile.mkstemp: importing tempfile (and shutil, random) costs milliseconds that
    the recall hook would pay on every prompt that surfaces a memory. The .tmp suffix keeps
    a half-written file out of every *.md scan; ``TEMP_FILE`` matches these names.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(parent, f".{name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name} in {parent}")


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def pid_running(pid: int | None) -> bool:
    """Whether a process with this PID exists (PIDs 0 and 1 never count as a lock holder)."""
    if pid is None or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True
