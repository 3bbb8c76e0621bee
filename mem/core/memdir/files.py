"""Bytes onto disk safely (the temp-file + fsync + rename every writer of mem uses), bytes off it
within bounds (regular files only, a size cap on every read), and whether a lock holder lives.

Example: atomic_write("/m/a.md", b"...") leaves either the old file or the new one, never half;
read_bytes("/m/a.md") refuses a FIFO or a device named a.md instead of blocking on it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator

from mem.core.errors import ExitCode


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str, data: bytes, *, plain: bool = False, durable: bool = True) -> None:
    """temp file in the same directory, fsync, rename; the old mode is kept (``plain``: without its
    run, set-id and sticky bits, as a memory file never needs them).

    ``durable=False`` skips both fsyncs, for bookkeeping the next run can do without (the recall
    hook's session state, written on every prompt): a crashed process still leaves the old file or
    the new one, and only a crash of the machine may lose the write. An fsync pair costs 0.7 ms
    on an idle disk here and ~10 ms (median) on a busy one.
    """
    parent, name = os.path.split(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    if plain:
        mode &= 0o666
    fd, tmp = _create_temp(parent, name)
    # Held until the file is renamed or removed (the descriptor stays open until then): a temp
    # file nobody holds was left by a killed writer, and remove_dead_temps may take it away.
    fill_and_rename(fd, tmp, path, data, durable=durable, before=lambda: fcntl.flock(fd, fcntl.LOCK_EX),
                    mode=mode)
    if durable:
        fsync_dir(parent)


def fill_and_rename(fd: int, tmp: str, path: str, data: bytes, *, durable: bool, mode: int | None = None,
                    before=None) -> None:
    """Write all of ``data`` to ``fd`` (a new file at ``tmp``), fsync it when ``durable``, rename it to ``path``.

    ``before`` runs first, ``mode`` is set last; on any failure ``tmp`` is removed. ``fd`` is closed either way.
    """
    try:
        if before is not None:
            before()
        write_all(fd, data)
        if durable:
            os.fsync(fd)
        if mode is not None:
            os.fchmod(fd, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (os.write may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def remove_dead_temps(path: str) -> list[str]:
    """Remove the temp files killed ``atomic_write`` calls of ``path`` left; the names removed.

    One is dead when no process holds its lock: a live writer locks its temp file as it creates it.
    """
    parent, name = os.path.split(path)
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    removed = []
    for candidate in names:
        tag = candidate[len(name) + 2:-4]  # _create_temp's names: "." + name + "." + 8 lower-case hex + ".tmp"
        if not (candidate.startswith(f".{name}.") and candidate.endswith(".tmp") and len(tag) == 8
                and all(c in "0123456789abcdef" for c in tag)):
            continue  # not one of mem's: a user's own .notes.md.20261127.tmp stays
        full = os.path.join(parent, candidate)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
                removed.append(candidate)
        finally:
            os.close(fd)
    return removed


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


# --- bounded reading ---------------------------------------------------------------------------------

#: The most one read of a memory file (a topic file, an index, a daily log, session notes) takes.
#: Topic files are a few kilobytes and an index is injected up to 25,000 units: a file past this is
#: not a memory but an accident (or a trap: a sparse file, /dev/zero behind a link), and is refused.
MAX_MEMORY_BYTES = 8 << 20
#: How much of a file a scan looks at for its frontmatter (30 lines are asked for; this bounds long ones).
MAX_HEAD_BYTES = 1 << 20


class RefusedRead(OSError):
    """A read refused for what the file is: an OSError to readers, exit 4 (refused) to the CLI."""

    exit_code = ExitCode.REFUSED


class NotRegularFile(RefusedRead):
    """A FIFO, device or socket where a file was expected: never opened for reading."""


class FileTooLarge(RefusedRead):
    """A regular file larger than the read's cap."""


class LinkOut(RefusedRead):
    """A symbolic link leading out of the directory a read is confined to."""


class HardLinked(RefusedRead):
    """A file with more than one hard link, read for an agent's context (``single_link``).

    Its other name may lie outside the memory directory, and finding it would mean walking the
    file system: a hard link to ~/.ssh/id_rsa planted as a topic file would be surfaced. Nothing
    mem writes has a second link (every write replaces the file by rename), so such a file is
    refused where its bytes would reach the context (recall, the session-start index).
    """


class NotText(RefusedRead):
    """A file holding a NUL byte, read for an agent's context: a memory is text, this is not."""


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or under it (both as given: pass real paths for real answers).

    Any folder: a memory directory, its team/, a state directory, the folders an agent's tools may read.
    """
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """``a FIFO``, ``a character device``... for a stat mode that is not a regular file's."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str, mode: int) -> OSError:
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)  # as open() says it
    return NotRegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", path)


def open_regular(path: str, *, inside: str | None = None, single_link: bool = False) -> int:
    """A read-only descriptor of the regular file at ``path``; NotRegularFile for anything else.

    Anything else is never opened: a FIFO would block the open (and the hook with it) until a
    writer came, a device could be read without end. The file is stat'ed first, then opened
    non-blocking and checked again, so one swapped in between cannot block either. A symbolic
    link is followed; with ``inside``, one leading out of that directory is refused (LinkOut).
    """
    if inside is not None and not within(os.path.realpath(path), os.path.realpath(inside)):
        raise LinkOut(errno.EXDEV, f"a symbolic link to {os.path.realpath(path)}, outside {inside}", path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
        if single_link and st.st_nlink > 1:
            raise HardLinked(errno.EMLINK, f"a file with {st.st_nlink} hard links (one may lie outside)", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str, limit: int = MAX_MEMORY_BYTES, *, head: bool = False, inside: str | None = None,
               for_context: bool = False) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them.

    A longer file raises FileTooLarge, unless ``head`` asks for only its first ``limit`` bytes.
    ``for_context``: the bytes go into an agent's context, so a file with a second hard link
    (HardLinked) or a NUL byte (NotText) is refused.
    Example: ``read_bytes(path, 4096, head=True)`` for a preview, ``read_bytes(path)`` to edit it.
    """
    fd = open_regular(path, inside=inside, single_link=for_context)
    try:
        chunks = []
        left = limit + 1  # one byte more tells a file over the cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        if not head:
            raise FileTooLarge(errno.EFBIG, f"larger than {limit:,} bytes", path)
        data = data[:limit]
    if for_context and b"\0" in data:
        raise NotText(errno.EINVAL, "it holds a NUL byte: not text", path)
    return data


def read_text(path: str, limit: int = MAX_MEMORY_BYTES, *, errors: str = "strict", newline: str | None = None,
              head: bool = False, inside: str | None = None, for_context: bool = False) -> str:
    """``read_bytes`` decoded as ``open(path, encoding="utf-8", errors=..., newline=...).read()`` would."""
    import io

    data = read_bytes(path, limit, head=head, inside=inside, for_context=for_context)
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors, newline=newline).read()


def read_lines(path: str, max_line: int) -> Iterator[bytes]:
    """``capped_lines`` of the regular file at ``path``."""
    with os.fdopen(open_regular(path), "rb") as fh:
        yield from capped_lines(fh, max_line)


#: What ``capped_lines`` gives in place of a line past its cap: no parser takes it for data.
OVERLONG = b"\0"


def capped_lines(fh, max_line: int) -> Iterator[bytes]:
    """The lines of a binary file object (newline kept), none longer than ``max_line``: a longer
    one comes back as ``OVERLONG`` in its place, its bytes skipped, so line numbers stay right."""
    while True:
        line = fh.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = fh.readline(1 << 20)
            yield OVERLONG
            continue
        yield line


#: The most ``read_stream`` takes from standard input by default (a hook payload, a query, a case list).
MAX_STDIN_BYTES = 16 << 20
#: A transcript piped in (``mem extract -``, ``mem grep --transcripts -``): sessions run to tens of
#: megabytes; past this it is no transcript (``</dev/zero``), and a file of it can be named instead.
MAX_TRANSCRIPT_STDIN_BYTES = 256 << 20


def read_stream(stream, limit: int = MAX_STDIN_BYTES, *, what: str = "standard input") -> bytes:
    """At most ``limit`` bytes of a binary stream (standard input: ``sys.stdin.buffer``), or FileTooLarge.

    Stdin may be a pipe or a terminal, so its type is not judged; its length is, as any file's:
    ``mem import - </dev/zero`` stops at the cap instead of filling the memory.
    """
    chunks, left = [], limit + 1
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"larger than {limit:,} bytes", what)
    return data


def read_stream_text(stream, limit: int = MAX_STDIN_BYTES, *, what: str = "standard input") -> str:
    """``read_stream`` of a text stream's buffer, decoded as UTF-8 (undecodable bytes replaced)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text stream with no bytes beneath (a StringIO): its characters, capped alike
        text = stream.read(limit + 1)
        if len(text) > limit:
            raise FileTooLarge(errno.EFBIG, f"larger than {limit:,} characters", what)
        return text
    return read_stream(buffer, limit, what=what).decode("utf-8", "replace")
