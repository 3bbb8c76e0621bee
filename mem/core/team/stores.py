"""Which team store a ``--db`` names, opened: a ``postgresql://`` URL, else a SQLite file.

The factory lives apart from ``storage`` because both backends build on it:
importing either from there made the three modules a cycle.
"""

from __future__ import annotations

from mem.core.errors import UsageError
from mem.core.team.storage import SQLStore, is_pg_url


def open_store(db: str, *, keep_history: int = 10, pool_size: int = 8, create: bool = True) -> SQLStore:
    """The store at ``db``: a ``postgresql://`` URL, or else a SQLite file path (created on demand)."""
    if not db:
        raise UsageError("no team database given (--db PATH_OR_URL or MEM_TEAM_DB)")
    if is_pg_url(db):
        from mem.core.team.store_pg import PostgresStore

        store: SQLStore = PostgresStore(db, keep_history=keep_history, pool_size=pool_size)
    else:
        from mem.core.team.store_sqlite import SQLiteStore

        store = SQLiteStore(db, keep_history=keep_history, pool_size=pool_size, create=create)
    try:
        store.init_schema()
    except BaseException:
        store.close()
        raise
    return store
