"""Exit codes and the typed errors that carry them.

The core raises these; the CLI turns them into one-line messages and exit codes
at the edge. Exit codes are defined here and nowhere else.
"""

from __future__ import annotations

import errno
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: nothing found, a check failed, or a gate said no
    NOT_FOUND = 1
    CHECK_FAILED = 1
    #: --dry-run found something it would change (as diff(1) exits 1 when files differ)
    WOULD_CHANGE = 1
    #: usage error (click's own code)
    USAGE = 2
    #: configuration missing: no API key or model when one is required
    CONFIG = 3
    #: refused for safety: secret, path escape, structure violation
    REFUSED = 4
    #: a lock is held and --wait was not given
    LOCKED = 5
    #: a model job stopped at its spending cap (--budget, MEM_BUDGET_<JOB>): what it did is kept and
    #: valid, and the next run goes on; not a failure (the nightly dream of all projects exits 0 for it)
    BUDGET = 6
    #: the disk refused a write: no space, over quota, read-only, or permission denied (EX_IOERR)
    STORAGE = 74
    #: unexpected failure (EX_SOFTWARE)
    FAILURE = 70
    #: interrupted by Ctrl-C
    INTERRUPTED = 130
    #: stdout was closed early (e.g. piped to head), as SIGPIPE would end a C tool
    BROKEN_PIPE = 141


#: OSError numbers that mean the storage refused, not that mem went wrong: exit STORAGE, not FAILURE.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def is_storage_error(exc: BaseException) -> bool:
    """True for a full disk, a quota, a read-only file system or a permission refused."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


class Notice(UserWarning):
    """What a user must be told though nothing failed: the core warns with it, the CLI prints it on stderr.

    Example: warnings.warn(Notice("the history store was damaged; ..."))
    """


class MemError(Exception):
    """Base of every error the core raises on purpose."""

    exit_code: ExitCode = ExitCode.FAILURE
    #: what went wrong, one word for programs: the "kind" of --json's error object (stable, documented in mem(1))
    kind: str = "failure"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(MemError):
    exit_code = ExitCode.USAGE
    kind = "usage"


class NotFoundError(MemError):
    """A file or memory directory that should exist does not."""

    exit_code = ExitCode.NOT_FOUND
    kind = "not_found"


class ConfigError(MemError):
    exit_code = ExitCode.CONFIG
    kind = "config"


class RefusedError(MemError):
    exit_code = ExitCode.REFUSED
    kind = "refused"


class PathEscapeError(RefusedError):
    """A write target resolves outside the memory directory (or is unsafe)."""


class ForeignFileError(RefusedError):
    """A file that is not a memory file (memdir.layout.foreign_reason) on its way into a memory directory."""


class PinnedError(RefusedError):
    """A write or delete of a file in the memory directory's top-level pinned/ (memdir.layout.is_pinned)."""


class SecretError(RefusedError):
    """Content carries something the secret scanner recognises."""

    def __init__(self, path: str, rule_id: str, label: str):
        super().__init__(f"refused to write {path}: it contains a secret ({label}, rule {rule_id})")
        self.path = path
        self.rule_id = rule_id
        self.label = label


class StorageError(MemError):
    """The storage refused a write a helper program made for mem (git on a full disk): not a bug of mem's."""

    exit_code = ExitCode.STORAGE
    kind = "storage"


class LockedError(MemError):
    exit_code = ExitCode.LOCKED
    kind = "locked"
