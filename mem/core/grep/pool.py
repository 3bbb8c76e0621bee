"""Search many targets in order, in forked worker processes when that pays.

uses: grep.search (Searcher, Target, FileResult)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from mem.core.grep.search import FileResult, Searcher, Target


def search_all(searcher: Searcher, targets: list[Target], *, workers: int | None = None,
               progress: Progress | None = None,
               render: Callable[[FileResult], str] | None = None) -> Iterator[FileResult]:
    """Search ``targets`` in order, in parallel worker processes when that pays.

    Transcript trees of many megabytes are searched by forked workers (each
    handed the next file as it finishes one, results put back in order), so a
    search of a large corpus uses the idle cores; anything small, or stdin,
    runs here. A worker turns each result's lines into text with ``render``,
    when given (sending text back costs a fraction of sending the lines).
    ``workers`` None picks by size and idle CPUs; 0 or 1 means here, where
    nothing is rendered.
    """
    if workers is None:
        workers = _workers_for(targets)
    if workers <= 1:
        for target in targets:
            yield searcher.search(target, progress)
        return
    yield from _forked(searcher, targets, workers, render)


PARALLEL_MIN_BYTES = 64 << 20


def _workers_for(targets: list[Target]) -> int:
    """Worker processes worth forking: none for small or few files, stdin, or a busy machine.

    One per idle CPU, up to 4, when at least two are idle (ours counts as
    idle: while workers search, this process only writes what they send).
    """
    if not hasattr(os, "fork") or len(targets) < 4:
        return 0
    if any(t.path == "-" or t.kind != "transcript" for t in targets):
        return 0
    if sum(t.size for t in targets) < PARALLEL_MIN_BYTES:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    workers = min(cpus - _busy_cpus(), 4, len(targets))
    return workers if workers >= 2 else 0


def _busy_cpus() -> int:
    """Other processes running right now (Linux: /proc/loadavg), else the 1-minute load."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            running = int(fh.read().split()[3].split("/")[0])
        return max(running - 1, 0)  # we are one of them
    except (OSError, ValueError, IndexError):
        try:
            return int(os.getloadavg()[0] + 0.5)
        except OSError:
            return 0


#: Targets handed out ahead of the one to be shown next: bounds the results held in memory
#: while a large file is still being searched, and leaves every worker something to do.
WINDOW_PER_WORKER = 4


def _forked(searcher: Searcher, targets: list[Target], workers: int,
            render: Callable[[FileResult], str] | None) -> Iterator[FileResult]:
    """Results of ``targets`` in order, searched by ``workers`` forked processes.

    Each worker is handed the next target as soon as it sends a result back,
    so a few large files do not leave one worker busy while the others wait
    (files range from kilobytes to tens of megabytes). Targets are handed out
    at most WINDOW_PER_WORKER per worker past the next one to be shown; results
    that arrive early wait here. A worker that dies fails the target it was
    searching; those queued behind it go to another worker.
    """
    import pickle
    import selectors
    import signal
    import struct

    frame = struct.Struct("<IQ")  # target index, length of the pickled result
    n = len(targets)
    tasks: list[int] = []  # each worker's pipe for target numbers, parent side
    results: list[int] = []  # each worker's pipe for results, parent side
    pids: list[int] = []
    selector = None
    try:
        for _ in range(workers):
            try:
                task_r, task_w = os.pipe()
            except OSError:  # out of file descriptors: go on with the workers there are
                break
            try:
                result_r, result_w = os.pipe()
            except OSError:
                os.close(task_r)
                os.close(task_w)
                break
            # Ctrl-C between the fork and the worker's own handler would unwind the worker
            # through the parent's code: held back until each side has its handler.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                pid = os.fork()
            except OSError:  # no more processes: go on with the workers there are
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                for fd in (task_r, task_w, result_r, result_w):
                    os.close(fd)
                break
            if pid == 0:  # a worker: search each target it is sent until its pipe closes
                code = 0
                try:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                    for fd in (task_w, result_r, *tasks, *results):
                        os.close(fd)
                    with os.fdopen(task_r, "rb") as inbox, os.fdopen(result_w, "wb") as out:
                        while len(raw := inbox.read(4)) == 4:
                            i = int.from_bytes(raw, "little")
                            try:
                                result = searcher.search(targets[i])
                                if render is not None and result.groups:
                                    result.rendered = render(result)
                                    result.groups = []
                            except Exception as exc:  # noqa: BLE001 - reported by the parent
                                result = FileResult(targets[i], error=f"{type(exc).__name__}: {exc}")
                            payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
                            out.write(frame.pack(i, len(payload)))
                            out.write(payload)
                            out.flush()
                except BaseException:  # noqa: BLE001 - the parent notices the missing results
                    code = 1
                finally:
                    os._exit(code)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(task_r)
            os.close(result_w)
            tasks.append(task_w)
            results.append(result_r)
            pids.append(pid)
        if not pids:  # not one worker could be started: search here
            for target in targets:
                yield searcher.search(target)
            return
        workers = len(pids)
        window = max(workers * WINDOW_PER_WORKER, 2)

        owner: dict[int, int] = {}  # target handed out -> worker searching it
        queued: list[list[int]] = [[] for _ in range(workers)]  # each worker's targets, in the order sent
        alive = set(range(workers))
        retry: list[int] = []  # sent to a worker that died before starting them: to be sent again
        done: dict[int, FileResult] = {}
        pending = [bytearray() for _ in range(workers)]
        handed = 0  # targets[:handed] have been handed out (some perhaps again, from retry)
        shown = 0  # targets[:shown] have been yielded

        def hand_out() -> None:
            nonlocal handed
            while alive:
                if retry:
                    i = retry[0]
                elif handed < n and handed < shown + window:
                    i = handed
                else:
                    return
                w = min(alive, key=lambda k: (len(queued[k]), k))
                if len(queued[w]) >= 2 and i != shown:  # every worker has one in hand and one queued
                    return
                try:
                    os.write(tasks[w], i.to_bytes(4, "little"))
                except OSError:  # it died; the end of its result pipe reports what it held
                    alive.discard(w)
                    continue
                if retry and retry[0] == i:
                    retry.pop(0)
                else:
                    handed += 1
                owner[i] = w
                queued[w].append(i)

        def lost(w: int) -> None:
            """Worker ``w`` is gone: the target it was searching failed; those queued behind it go to another."""
            alive.discard(w)
            held, queued[w] = queued[w], []
            for k, i in enumerate(held):
                del owner[i]
                if k == 0:
                    done[i] = FileResult(targets[i], error="search worker failed")
                else:
                    retry.append(i)
            retry.sort()

        selector = selectors.DefaultSelector()  # made after the forks: no worker inherits it
        for w, fd in enumerate(results):
            selector.register(fd, selectors.EVENT_READ, w)
        while shown < n:
            hand_out()
            if shown in done:
                result = done.pop(shown)
                shown += 1
                yield result
                continue
            if shown not in owner:  # no worker left to search it
                done[shown] = FileResult(targets[shown], error="search worker failed")
                continue
            for key, _ in selector.select():
                w = key.data
                data = os.read(key.fd, 1 << 20)
                if not data:
                    selector.unregister(key.fd)
                    lost(w)
                    continue
                buf = pending[w]
                buf += data
                while len(buf) >= frame.size:
                    i, size = frame.unpack_from(buf)
                    if len(buf) < frame.size + size:
                        break
                    with memoryview(buf) as view, view[frame.size:frame.size + size] as body:
                        done[i] = pickle.loads(body)
                    del buf[:frame.size + size]
                    if owner.pop(i, None) is not None:
                        queued[w].remove(i)
    finally:
        if selector is not None:
            selector.close()
        for fd in (*tasks, *results):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
