"""mem team: sync <memory dir>/team/ with a team-memory server, or be that server."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import click

from mem import render
from mem.cli.common import format_options, memory_dir_options, resolve_dir, undo_note
from mem.core.errors import ExitCode
from mem.core.guards.control import printable  # names and messages from a server reach a terminal


def client_options(f: Callable) -> Callable:
    """--url, --repo, --timeout, plus the memory directory and output options → a ``cfg`` factory."""

    @click.option("--url", metavar="URL", help="The team server (default: MEM_TEAM_URL, then TEAM_MEMORY_SYNC_URL).")
    @click.option("--repo", metavar="OWNER/REPO",
                  help="The repository whose team memory this is (default: MEM_TEAM_REPO, then the git remote).")
    @click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, metavar="S",
                  help="Seconds the whole exchange with the server may take (one deadline, retries included).")
    @memory_dir_options
    @format_options
    @functools.wraps(f)
    def wrapper(*args, url, repo, timeout, where, **kwargs):
        def make():
            from mem.core.memdir.store import MemoryDir
            from mem.core.team.client import make_config

            res = resolve_dir(where)
            return make_config(MemoryDir(res.memory_dir), res.project_root, url=url, repo=repo, timeout=timeout)

        return f(*args, make_config=make, **kwargs)

    return wrapper


def db_option(f: Callable) -> Callable:
    return click.option(
        "--db", metavar="PATH_OR_URL", envvar="MEM_TEAM_DB", show_envvar=True,
        help="The server's database: a SQLite file, or a postgresql:// URL "
             "(default: team.sqlite3 in mem's data directory, ~/.local/share/mem on Linux).",
    )(f)


def _db(db: str | None) -> str:
    if db:
        return db
    from platformdirs import user_data_dir

    return os.path.join(user_data_dir("mem", appauthor=False), "team.sqlite3")


class _InOrder(click.Group):
    """Subcommands in the order they are defined (pull, push, sync... rather than alphabetical)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group("team", short_help="Share team/ with teammates through a team-memory server.", cls=_InOrder)
def team_cmd() -> None:
    """Share team/ with teammates through a team-memory server, or run one.

    The memory directory's team/ subdirectory is synced per repository (the
    git remote's OWNER/REPO) with a server speaking Claude Code's team-memory
    protocol: pull takes the server's copy, push sends what changed, sync does
    both, watch pushes as you write. Files with secrets never leave the
    machine. `mem team serve` is that server, for a team to host itself.
    `mem team sync --git` shares qwen-code's .qwen/team-memory/ through the
    repository's own git remote instead.

    \b
    Example:
      mem team token add --repo acme/widgets --db /srv/team.db   # prints a token
      mem team serve --db /srv/team.db &
      export MEM_TEAM_URL=http://127.0.0.1:8737 MEM_TEAM_TOKEN=memt_...
      mem team sync
    """


# --- client ----------------------------------------------------------------------------------


def _warn_skipped(skipped) -> None:
    for s in skipped:
        render.warn(s.describe())


def _refused_exit(ctx: click.Context, refused) -> None:
    if refused:
        n = len(refused)
        render.error(f"{n} file{'s' * (n != 1)} refused for safety (see above); the rest went through")
        ctx.exit(ExitCode.REFUSED)


def _report_pull(result) -> None:
    for key in result.created:
        render.out(f"created team/{printable(key)}")
    for key in result.updated:
        render.out(f"updated team/{printable(key)}")


def _say_pull(result, memory) -> None:
    _warn_skipped(result.skipped)
    if result.overwritten_local:
        op = memory.history.find(result.snapshot) if result.snapshot else None
        note = undo_note(memory, op, f"`mem undo {(result.snapshot or '')[:12]}` brings it back")
    for key in result.overwritten_local:
        render.warn(f"team/{printable(key)}: your unpushed edit was replaced by the server's copy; {note}")
    for key in result.kept_local:
        render.info(f"team/{printable(key)}: kept your unpushed edit (the server's copy had not changed)")
    if result.status == "not_modified":
        render.info(f"team memory of {result.repo}: not modified since the last pull")
    elif result.status == "empty":
        render.info(f"no team memory on the server for {result.repo} yet")
    elif result.status == "unchanged":
        render.info(f"team memory of {result.repo}: nothing new (version {result.version})")
    else:
        n = len(result.created) + len(result.updated)
        render.info(f"pulled {n} file{'s' * (n != 1)} from {result.repo} (version {result.version}); "
                    f"{result.unchanged} unchanged")


def _report_push(result) -> None:
    for key in result.uploaded:
        render.out(f"pushed team/{printable(key)}")


def _say_push(result) -> None:
    _warn_skipped(result.skipped)
    for key in result.overwrote:
        render.warn(f"team/{printable(key)}: a teammate had changed it too; yours replaced theirs "
                    "(the server keeps their version in its history)")
    n = len(result.uploaded)
    if n:
        extra = f" in {result.batches} requests" if result.batches > 1 else ""
        render.info(f"pushed {n} file{'s' * (n != 1)} to {result.repo}{extra} (version {result.version})")
    else:
        render.info(f"nothing to push: the server has what team/ holds for {result.repo}")


@team_cmd.command("pull")
@click.option("--no-cache", is_flag=True, help="Fetch everything even when the server's ETag says nothing changed.")
@client_options
@click.pass_context
def pull_cmd(ctx: click.Context, no_cache: bool, make_config, fmt: str) -> None:
    """Write the server's team memory into team/ (the server's copy wins).

    Files that already match are not touched. A file you had edited and not
    pushed is replaced too, as one operation of the history (`mem undo ID` brings it back). Files
    deleted here come back: deletions do not propagate. A file the poisoning
    guard flags (a permission grant, a forged reminder: see mem lint) is not
    written: it is kept in the state directory's team-quarantine/, named on
    stderr and in --json ("reason": "poison", "quarantined": its path), and
    the exit status is 4.

    \b
    Example:
      mem team pull
      mem team pull --json | jq -r '.created[], .updated[]'
    """
    from mem.core.team import client

    cfg = make_config()
    result = client.pull(cfg, use_etag=not no_cache)
    render.out_record(result.as_dict(), fmt) if fmt != "text" else _report_pull(result)
    _say_pull(result, cfg.memory)
    _refused_exit(ctx, result.refused)


@team_cmd.command("push")
@client_options
@click.pass_context
def push_cmd(ctx: click.Context, make_config, fmt: str) -> None:
    """Send the files of team/ that differ from the server's copy.

    Only changed files travel (compared by sha256), in requests of at most
    200,000 bytes, each conditional on the version last seen; when a teammate
    pushed in between, the client re-reads the server's checksums and tries
    again (twice at most). Files with a secret, over 250,000 bytes, or not
    UTF-8 are named on stderr and not sent; a secret makes the exit status 4.

    \b
    Example:
      mem team push
    """
    from mem.core.team import client

    cfg = make_config()
    try:
        result = client.push(cfg)
    except client.PushFailed as exc:
        if fmt != "text":
            render.out_record(exc.result.as_dict(), fmt)
        else:
            _report_push(exc.result)
        _warn_skipped(exc.result.skipped)
        raise
    render.out_record(result.as_dict(), fmt) if fmt != "text" else _report_push(result)
    _say_push(result)
    _refused_exit(ctx, result.refused)


@team_cmd.command("sync")
@click.option("--git", "via_git", is_flag=True,
              help="Sync qwen-code's .qwen/team-memory/ through the repository's git remote instead of a server.")
@client_options
@click.pass_context
def sync_cmd(ctx: click.Context, via_git: bool, make_config, fmt: str) -> None:
    """Pull, then push: team/ and the server end up holding the same files.

    The pull keeps your unpushed edits of files the server did not change
    since the last sync, and the push sends them; where both sides changed a
    file, the server's copy wins (undoable, as with pull).

    With --git, qwen-code's team tier (.qwen/team-memory/ in the repository)
    goes through git as qwen-code's own sync does it: fetch, fast-forward
    (only when the incoming commits touch nothing but that directory), rebuild
    its MEMORY.md (recorded, undoable), commit that directory alone, push that
    one commit to the upstream branch.

    \b
    Example:
      mem team sync && mem index --rebuild --team
      mem team sync --git
    """
    if via_git:
        _sync_git(ctx, fmt)
        return
    from mem.core.team import client

    cfg = make_config()
    http = client.Http(cfg)
    try:
        with http.deadline():  # one deadline for the pull and the push
            pulled, pushed = _sync(cfg, http, fmt)
    finally:
        http.close()
    if fmt != "text":
        render.out_record(client.SyncResult(pulled, pushed).as_dict(), fmt)
    else:
        _report_push(pushed)
    _say_push(pushed)
    _refused_exit(ctx, pulled.refused + pushed.refused)


def _sync_git(ctx: click.Context, fmt: str) -> None:
    from mem.core.team.gitsync import sync

    for name in ("url", "repo", "dir_", "agent"):
        if ctx.params.get(name):
            raise click.UsageError(f"--{name.rstrip('_')} does not go with --git (the repository's remote is the team's)")
    result = sync(ctx.params.get("project") or os.getcwd())
    if fmt != "text":
        render.out_record(result.as_dict(), fmt)
    else:
        for rel in result.pulled:
            render.out(f"pulled {printable(rel)}")
        for rel in result.files:
            render.out(f"committed {printable(rel)}")
    for rel in result.indexed:
        render.info(f"indexed {printable(rel)} in the team's MEMORY.md")
    for rel in result.unindexed:
        render.info(f"dropped the pointer to {printable(rel)} from the team's MEMORY.md (the file is gone)")
    for f in result.flagged:
        render.warn(f"{printable(f['path'])}: {printable(f['reason'])} (mem lint flags it; the client reads it as memory)")
    if result.committed and result.pushed:
        render.info(f"pushed {result.committed[:12]} to the upstream of {printable(result.branch or '')}")
    elif result.committed:
        render.info(f"committed {result.committed[:12]}; not pushed: {result.skipped_push}")
    elif not result.pulled:
        render.info(f"team memory is in sync ({printable(result.team_dir)})")


def _sync(cfg, http, fmt: str):
    from mem.core.team import client

    pulled = client.pull(cfg, http=http, use_etag=False, keep_local_edits=True)
    if fmt == "text":
        _report_pull(pulled)
    _say_pull(pulled, cfg.memory)
    try:
        return pulled, client.push(cfg, http=http)
    except client.PushFailed as exc:
        if fmt != "text":
            render.out_record({"pull": pulled.as_dict(), "push": exc.result.as_dict()}, fmt)
        else:
            _report_push(exc.result)
        _warn_skipped(exc.result.skipped)
        raise


@team_cmd.command("status")
@click.option("--offline", is_flag=True, help="Compare with the server's checksums as last seen; send no request.")
@click.option("--check", is_flag=True, help="Exit 1 when team/ and the server differ.")
@client_options
@click.pass_context
def status_cmd(ctx: click.Context, offline: bool, check: bool, make_config, fmt: str) -> None:
    """Show what a sync would do, file by file.

    States: local-only, remote-only, local-changed (push sends it),
    remote-changed (pull takes it), conflict (both changed: pull's copy would
    win), not-synced (a secret, too large, not UTF-8, or a bad name).

    \b
    Example:
      mem team status
      mem team status --check || mem team sync
    """
    from mem.core.team import client

    result = client.status(make_config(), offline=offline)
    if fmt == "text":
        for c in result.changes:
            render.out(f"{c['state']:<15} team/{printable(c['key'])}")
        where = "as last seen" if offline else (f"version {result.remote['version']}" if result.remote else "no data yet")
        if result.in_sync:
            render.info(f"team/ is in sync with {result.repo} ({where}; {result.files} files)")
        else:
            n = len(result.changes)
            render.info(f"{n} difference{'s' * (n != 1)} with {result.repo} ({where})")
    else:
        render.out_record(result.as_dict(), fmt)
    if check and not result.in_sync:
        ctx.exit(ExitCode.CHECK_FAILED)


@team_cmd.command("watch")
@click.option("--debounce", type=click.FloatRange(min=0), default=2.0, show_default=True, metavar="S",
              help="Push after team/ has been quiet this long.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=0.5, show_default=True, metavar="S",
              help="Look at team/ this often.")
@click.option("--pull-every", type=click.FloatRange(min=0), default=300.0, show_default=True, metavar="S",
              help="Pull again this often when nothing local is waiting (0: only at start).")
@click.option("--max-backoff", type=click.FloatRange(min=0.1), default=60.0, show_default=True, metavar="S",
              help="Longest wait between retries while the server is unreachable.")
@client_options
def watch_cmd(debounce: float, poll: float, pull_every: float, max_backoff: float, make_config, fmt: str) -> None:
    """Pull, then push every change to team/ once it has been quiet for 2 s.

    Runs until SIGINT or SIGTERM: a push in flight finishes, pending changes
    get one last push, and it exits 0. While the server is unreachable it
    retries with backoff; a 401, 403 or other refusal stops pushing until the
    next change. Events go to stderr, or to stdout as JSON lines with --jsonl.

    \b
    Example:
      mem team watch &
      mem team watch --jsonl | jq -c 'select(.event == "push") | .uploaded'
    """
    import signal
    import threading

    from mem.core.team.watch import Watcher

    cfg = make_config()
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    warned: set = set()

    def warn_new(skipped: list[dict]) -> None:
        for s in skipped:
            if (s["key"], s["reason"]) not in warned:
                warned.add((s["key"], s["reason"]))
                what = f"it contains a secret ({s['label']})" if s["reason"] == "secret" else s["detail"] or s["reason"]
                render.warn(f"team/{printable(s['key'])}: not synced: {printable(what)}")

    def emit(event: dict) -> None:
        if fmt != "text":
            render.out_jsonl([event])
            import sys

            sys.stdout.flush()
            return
        kind = event["event"]
        if kind == "start":
            render.info(f"watching {event['team_dir']} for {event['repo']} at {event['url']} (Ctrl-C stops)")
        elif kind == "pull":
            n = len(event["created"]) + len(event["updated"])
            if n or event["status"] == "updated":
                render.info(f"pulled {n} file{'s' * (n != 1)}: " + ", ".join(f"team/{printable(k)}" for k in event["created"] + event["updated"]))
            warn_new(event["skipped"])
        elif kind == "push":
            if event["uploaded"]:
                render.info(f"pushed {len(event['uploaded'])}: " + ", ".join(f"team/{printable(k)}" for k in event["uploaded"]))
            warn_new(event["skipped"])
        elif kind == "error":
            render.warn(f"{event['operation']} failed: {printable(event['message'])}"
                        + ("" if event["transient"] else " (not retrying until the next change)"))
        elif kind == "retry":
            render.info(f"retrying in {event['after_s']:g}s")
        elif kind == "stop":
            render.info(f"stopped: {event['pushes']} pushes, {event['pulls']} pulls, {event['errors']} errors")

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        Watcher(cfg, stop=stop, debounce=debounce, poll=poll, pull_every=pull_every, max_backoff=max_backoff,
                emit=emit).run()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


# --- server ----------------------------------------------------------------------------------


@team_cmd.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, metavar="H",
              help="Address to listen on; anything but loopback exposes tokens unless a TLS proxy is in front.")
@click.option("--port", type=click.IntRange(0, 65535), default=8737, show_default=True, metavar="P",
              help="Port to listen on; 0 picks a free one (see the listening log line).")
@db_option
@click.option("--max-entries", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N",
              help="Entries one repository may hold (a structured 413 tells clients).")
@click.option("--max-body", type=click.IntRange(min=1024), default=1_048_576, show_default=True, metavar="BYTES",
              help="Largest PUT body accepted (413 above it).")
@click.option("--keep-history", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Replaced versions kept per key (0: none).")
@click.option("--drain-timeout", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="S",
              help="On SIGTERM or SIGINT, wait this long for requests in flight.")
def serve_cmd(host: str, port: int, db: str | None, max_entries: int, max_body: int, keep_history: int,
              drain_timeout: float) -> None:
    """Serve team memory over HTTP, speaking Claude Code's team-memory protocol.

    Stores each repository's entries with checksums and a version in SQLite
    (one file, WAL) or PostgreSQL (--db postgresql://...). Every request needs
    a bearer token scoped to its repository (`mem team token add`). Logs one
    JSON object per request to stderr; SIGTERM or SIGINT stops accepting,
    finishes requests in flight and exits 0.

    \b
    Example:
      mem team serve --db ~/team.db
      mem team serve --host 0.0.0.0 --port 8737 --db postgresql://mem@db/mem
    """
    import signal
    import threading

    from mem.core.team import server as srv
    from mem.core.team.stores import open_store

    import sys

    log = srv.JsonLog(sys.stderr)
    store = open_store(_db(db), keep_history=keep_history)
    try:
        httpd = srv.make_server(store, host, port, limits=srv.Limits(max_entries=max_entries, max_body=max_body), log=log)
    except OSError as exc:
        store.close()
        from mem.core.errors import MemError

        raise MemError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()
    received: list[str] = []

    def on_signal(signum, frame):
        received.append(signal.Signals(signum).name)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="team-server", daemon=True)
    try:
        thread.start()
        log("listening", url=httpd.url, backend=store.backend, db=store.where, pid=os.getpid(),
            max_entries=max_entries, max_body=max_body, keep_history=keep_history)
        if not srv.is_loopback(host):
            log("exposed", "warning", message=f"listening on {host}: bearer tokens travel in clear text "
                                               "unless a TLS-terminating proxy is in front")
        while not stop.wait(0.5):
            if not thread.is_alive():
                break
        log("stopping", signal=received[0] if received else None)
        httpd.shutdown()
        left = httpd.drain(drain_timeout)
        httpd.server_close()
        log("stopped", unfinished_requests=left)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        store.close()


# --- tokens ----------------------------------------------------------------------------------


@team_cmd.group("token", cls=_InOrder)
def token_cmd() -> None:
    """Manage the bearer tokens of a team server (stored as sha256 hashes only).

    \b
    Example:
      mem team token add --repo acme/widgets --label alice --db /srv/team.db
      mem team token list --db /srv/team.db
      mem team token revoke 1a2b3c4d --db /srv/team.db
    """


@token_cmd.command("add")
@click.option("--repo", "repos", multiple=True, required=True, metavar="OWNER/REPO",
              help="A repository the token may use; OWNER/* for all of an owner's, * for all. Repeatable.")
@click.option("--label", metavar="TEXT", help="Who or what the token is for.")
@db_option
@format_options
def token_add_cmd(repos: tuple[str, ...], label: str | None, db: str | None, fmt: str) -> None:
    """Create a token; print it once, as the last word of the output.

    \b
    Example:
      TOKEN=$(mem team token add --repo acme/widgets --db team.db | awk '{print $NF}')
    """
    from mem.core.team.stores import open_store

    store = open_store(_db(db))
    try:
        token, secret = store.add_token(list(repos), label)
    finally:
        store.close()
    if fmt == "text":
        render.out(f"token {token.id} for {' '.join(token.repos)}: {secret}")
        render.info("keep it now: only its hash is stored, it cannot be shown again")
    else:
        render.out_record({**token.as_dict(), "token": secret}, fmt)


@token_cmd.command("list")
@db_option
@format_options
def token_list_cmd(db: str | None, fmt: str) -> None:
    """List tokens: id, repositories, label, created, last used, revoked (never the token).

    \b
    Example:
      mem team token list --json | jq -r '.[] | select(.revoked == null) | .id'
    """
    from mem.core.team.stores import open_store

    store = open_store(_db(db), create=False)
    try:
        tokens = store.list_tokens()
    finally:
        store.close()
    if fmt != "text":
        render.out_rows((t.as_dict() for t in tokens), fmt, None)
        return
    rows = [("ID", "REPOS", "LABEL", "CREATED", "LAST USED", "REVOKED")]
    rows += [(t.id, ",".join(t.repos), t.label or "-", t.created, t.last_used or "-", t.revoked or "-") for t in tokens]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        render.out("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    if not tokens:
        render.info("no tokens yet: mem team token add --repo OWNER/REPO")


@token_cmd.command("revoke")
@click.argument("token_id", metavar="ID")
@db_option
@format_options
def token_revoke_cmd(token_id: str, db: str | None, fmt: str) -> None:
    """Revoke a token by id; requests with it get 401 from then on.

    \b
    Example:
      mem team token revoke 1a2b3c4d --db team.db
    """
    from mem.core.team.stores import open_store

    store = open_store(_db(db), create=False)
    try:
        token = store.revoke_token(token_id)
    finally:
        store.close()
    if fmt == "text":
        render.info(f"revoked token {token.id} ({' '.join(token.repos)})")
    else:
        render.out_record(token.as_dict(), fmt)
