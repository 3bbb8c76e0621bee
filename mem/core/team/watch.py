"""``mem team watch``: keep team/ and the server in step until told to stop.

Like Claude Code's watcher (reference §8.5): pull first, then push whenever
team/ has been quiet for ``debounce`` seconds after a change. Differences, on
purpose: team/ is polled (every ``poll`` s; a stat of each file, no extra
dependency, works on every filesystem), the server is pulled again every
``pull_every`` s (with the ETag, so mostly a 304) when nothing local is
waiting, and failures are retried with exponential backoff (1 s doubling to
``max_backoff``, with jitter) instead of being dropped: an outage only delays
the push. A permanent failure (401, 403, another 4xx) stops pushing until the
next local change. ``stop`` (an Event, set by SIGINT/SIGTERM) ends the loop:
a push in flight finishes, pending changes get one last push, and run()
returns.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from mem.core.errors import MemError
from mem.core.team import client

Fingerprint = dict[str, tuple[int, int, int]]


def fingerprint(team_dir: str) -> Fingerprint:
    """key → (mtime_ns, size, inode) of every file a push would look at."""
    out: Fingerprint = {}
    for key, path in client.walk_team(team_dir):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[key] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return out


def _transient(exc: BaseException) -> bool:
    return bool(getattr(exc, "transient", False))


class Watcher:
    def __init__(self, cfg: client.Config, *, stop: threading.Event | None = None, debounce: float = 2.0,
                 poll: float = 0.5, pull_every: float = 300.0, max_backoff: float = 60.0,
                 emit: Callable[[dict], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.cfg = cfg
        self.stop = stop or threading.Event()
        self.debounce = debounce
        self.poll = poll
        self.pull_every = pull_every
        self.max_backoff = max_backoff
        self.emit = emit or (lambda event: None)
        self.clock = clock
        self.pushes = 0
        self.pulls = 0
        self.errors = 0
        self._reported_skips: set = set()

    def _event(self, event: str, **fields) -> None:
        from mem.core.memdir.manifest import now_iso

        self.emit({"time": now_iso(), "event": event, **fields})

    def _backoff(self, failures: int) -> float:
        return client.retry_delay(failures, first=1.0, cap=self.max_backoff)

    def run(self) -> int:
        """Watch until ``stop`` is set; returns the number of failed operations."""
        cfg = self.cfg
        http = client.Http(cfg)
        os.makedirs(cfg.team_dir, exist_ok=True)
        self._event("start", repo=cfg.repo, url=cfg.url, team_dir=cfg.team_dir, debounce_s=self.debounce,
                    poll_s=self.poll, pull_every_s=self.pull_every)
        seen = fingerprint(cfg.team_dir)
        pending = False
        last_change = float("-inf")
        need_pull = True
        next_pull = 0.0
        retry_at = 0.0
        failures = 0
        suppressed = False
        try:
            while not self.stop.is_set():
                now = self.clock()
                current = fingerprint(cfg.team_dir)
                if current != seen:
                    seen = current
                    pending, last_change, suppressed = True, now, False
                if now < retry_at:
                    pass
                elif pending and not suppressed and now - last_change >= self.debounce:
                    ok, permanent = self._push(http)
                    if ok:
                        pending, failures = False, 0
                    elif permanent:
                        pending, suppressed = False, True
                    else:
                        failures += 1
                        retry_at = self.clock() + self._backoff(failures)
                        self._event("retry", after_s=round(retry_at - self.clock(), 2), failures=failures)
                elif not pending and (need_pull or (self.pull_every > 0 and now >= next_pull)):
                    first = need_pull
                    ok, permanent = self._pull(http, first=first)
                    if ok or permanent:
                        need_pull, failures = False, 0
                        next_pull = self.clock() + self.pull_every
                        if ok and first:
                            # Then push what the server lacks: files made, and edits kept by the
                            # pull, while nobody watched. (Files the pull wrote show up as
                            # changes too; their push finds nothing to send and sends nothing.)
                            pending, last_change = True, float("-inf")
                    else:
                        failures += 1
                        retry_at = self.clock() + self._backoff(failures)
                        self._event("retry", after_s=round(retry_at - self.clock(), 2), failures=failures)
                self.stop.wait(self.poll)
            if fingerprint(cfg.team_dir) != seen:
                pending, suppressed = True, False
            if pending and not suppressed:
                self._push(http, final=True)  # best effort, once
        finally:
            http.close()
            self._event("stop", pushes=self.pushes, pulls=self.pulls, errors=self.errors)
        return self.errors

    def _pull(self, http: client.Http, *, first: bool) -> tuple[bool, bool]:
        try:
            result = client.pull(self.cfg, http=http, keep_local_edits=True, use_etag=not first, retries=0)
        except MemError as exc:
            self.errors += 1
            self._event("error", operation="pull", message=str(exc), transient=_transient(exc),
                        status=getattr(exc, "status", None))
            return False, not _transient(exc)
        self.pulls += 1
        if result.created or result.updated or result.skipped or first:
            self._event("pull", **result.as_dict())
        return True, False

    def _push(self, http: client.Http, *, final: bool = False) -> tuple[bool, bool]:
        try:
            result = client.push(self.cfg, http=http)
        except MemError as exc:
            self.errors += 1
            self._event("error", operation="push", message=str(exc), transient=_transient(exc),
                        status=getattr(exc, "status", None), final=final)
            return False, not _transient(exc)
        self.pushes += 1
        skips = {(x.key, x.reason) for x in result.skipped}
        if result.uploaded or result.conflicts or final or skips != self._reported_skips:
            self._event("push", final=final, **result.as_dict())
        self._reported_skips = skips
        return True, False
