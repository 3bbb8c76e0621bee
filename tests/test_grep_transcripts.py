"""mem grep --transcripts: decoded message text, escapes, odd files, rg JSON with message fields, the prefilter."""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem.core import grep as core
from mem.core.grep import matcher, pool, search

FIXTURES = Path(__file__).parent / "fixtures" / "grep"
SESSION = "0b6f1c2e-8d4a-4e9b-9f3a-2c1d5e7f8a90"


def rec(kind: str, uuid: str, content, *, ts: str = "2026-03-01T10:00:00.000Z", ascii_json: bool = False, **extra) -> str:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if kind == "assistant":
        message["id"] = "msg_" + uuid
    obj = {"type": kind, "uuid": uuid, "sessionId": SESSION, "timestamp": ts, "message": message, **extra}
    return json.dumps(obj, ensure_ascii=ascii_json)


@pytest.fixture
def transcript(tmp_path) -> Path:
    """A Claude Code transcript with JSON escapes, CJK, a 1 MB record and binary garbage."""
    lines = [
        json.dumps({"type": "queue-operation", "operation": "enqueue", "content": 'deploy "blue"', "sessionId": SESSION}),
        rec("user", "u1", 'Please deploy "blue" to staging\nthen tell me; path C:\\tmp\\x, 東京 🙂'),
        rec("assistant", "a1", [{"type": "text", "text": "Deploying now.\nStep two:\tcheck logs"}], ts="2026-03-02T09:00:00.000Z"),
        rec("assistant", "a2", [{"type": "tool_use", "id": "t1", "name": "Bash",
                                 "input": {"command": 'kubectl rollout "blue"', "timeout": 120}}],
            ts="2026-03-02T09:00:01.000Z", ascii_json=True),
        rec("user", "r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "rollout ok: 東京 region"}],
            ts="2026-03-02T09:00:02.000Z", ascii_json=True),
        rec("user", "m1", "<command-caveat>meta text deploy</command-caveat>", isMeta=True),
    ]
    data = ("\n".join(lines) + "\n").encode()
    big = rec("user", "big", "x" * (1 << 20) + " needle-at-the-end").encode() + b"\n"
    garbage = random.Random(7).randbytes(20000) + b"\n\xff\xfe{not json deploy\n"
    tail = rec("assistant", "a3", [{"type": "text", "text": "done: deploy finished"}], ts="2026-03-03T00:00:00.000Z").encode()
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(data + big + garbage + tail)  # no final newline
    return path


def line_of(path: Path, uuid: str) -> int:
    for n, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if f'"uuid": "{uuid}"'.encode() in raw:
            return n
    raise AssertionError(uuid)


def test_quotes_backslashes_and_cjk_match_as_seen(run_mem, transcript):
    name = str(transcript)
    u1 = line_of(transcript, "u1")
    r = run_mem("grep", "--transcripts", "-n", "-F", 'deploy "blue"', name)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f'{u1}:Please deploy "blue" to staging\n'
    assert run_mem("grep", "--transcripts", "-h", "-F", "C:\\tmp\\x", name).stdout == "then tell me; path C:\\tmp\\x, 東京 🙂\n"
    assert run_mem("grep", "--transcripts", "-c", "東京", name).stdout == "2\n"  # one literal, one \u-escaped record
    assert run_mem("grep", "--transcripts", "-c", "🙂", name).stdout == "1\n"
    assert run_mem("grep", "--transcripts", "-h", "-F", "two:\tcheck", name).stdout == "Step two:\tcheck logs\n"
    # JSON escapes are not text: the raw form does not match.
    assert run_mem("grep", "--transcripts", "-F", '\\"blue\\"', name).returncode == 1
    assert run_mem("grep", "--transcripts", "-F", "\\u6771", name).returncode == 1


def test_tool_calls_show_name_and_argument_values(run_mem, transcript):
    a2 = line_of(transcript, "a2")
    r = run_mem("grep", "--transcripts", "-n", "-e", "^Bash$", "-e", "rollout \"blue\"", "-e", "^120$", str(transcript))
    assert r.stdout.splitlines() == [f"{a2}:Bash", f'{a2}:kubectl rollout "blue"', f"{a2}:120"]


def test_newline_in_pattern_matches_across_lines_of_a_message(run_mem, transcript):
    u1 = line_of(transcript, "u1")
    r = run_mem("grep", "--transcripts", "-n", "-F", "staging\nthen tell", str(transcript))
    assert r.stdout.splitlines() == [f'{u1}:Please deploy "blue" to staging', f"{u1}:then tell me; path C:\\tmp\\x, 東京 🙂"]
    # The match stays within one message.
    assert run_mem("grep", "--transcripts", "-F", "🙂\nDeploying", str(transcript)).returncode == 1


def test_one_megabyte_record_binary_garbage_and_no_final_newline(run_mem, transcript):
    big = line_of(transcript, "big")
    r = run_mem("grep", "--transcripts", "-n", "-o", "needle-at-the-end", str(transcript))
    assert (r.returncode, r.stdout) == (0, f"{big}:needle-at-the-end\n")
    last = transcript.read_bytes().count(b"\n") + 1
    r = run_mem("grep", "--transcripts", "-n", "deploy finished", str(transcript))
    assert r.stdout == f"{last}:done: deploy finished\n"
    # Garbage lines and the meta line never match, even though their bytes hold the word.
    assert run_mem("grep", "--transcripts", "-c", "-w", "deploy", str(transcript)).stdout == "2\n"


def test_only_binary_garbage(run_mem, tmp_path):
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(random.Random(3).randbytes(200_000))
    r = run_mem("grep", "--transcripts", "a", str(junk))
    assert r.returncode == 1 and r.stderr == ""


def test_role_and_since_filter_messages(run_mem, transcript):
    name = str(transcript)
    assert run_mem("grep", "--transcripts", "-h", "--role", "user", "deploy", name).stdout == \
        'Please deploy "blue" to staging\n'
    assert run_mem("grep", "--transcripts", "-h", "--role", "tool", "rollout", name).stdout == "rollout ok: 東京 region\n"
    assert run_mem("grep", "--transcripts", "-h", "--role", "assistant", "-c", "rollout", name).stdout == "1\n"
    r = run_mem("grep", "--transcripts", "-h", "--since", "2026-03-02T12:00:00Z", "deploy", name)
    assert r.stdout == "done: deploy finished\n"


def test_context_stays_within_a_message(run_mem, transcript):
    a1 = line_of(transcript, "a1")
    r = run_mem("grep", "--transcripts", "-n", "-C", "5", "Deploying", str(transcript))
    assert r.stdout.splitlines() == [f"{a1}:Deploying now.", f"{a1}-Step two:\tcheck logs"]


def test_json_adds_message_fields(run_mem, transcript):
    r = run_mem("grep", "--transcripts", "--json", "-A1", "Deploying", str(transcript))
    msgs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [m["type"] for m in msgs] == ["begin", "match", "context", "end", "summary"]
    match, context = msgs[1]["data"], msgs[2]["data"]
    a1 = line_of(transcript, "a1")
    raw = transcript.read_bytes()
    offset = len(b"\n".join(raw.split(b"\n")[: a1 - 1])) + 1
    assert match == {
        "path": {"text": str(transcript)},
        "lines": {"text": "Deploying now.\n"},
        "line_number": a1,
        "absolute_offset": offset,
        "submatches": [{"match": {"text": "Deploying"}, "start": 0, "end": 9}],
        "session_id": SESSION,
        "uuid": "a1",
        "timestamp": "2026-03-02T09:00:00.000Z",
        "role": "assistant",
        "kind": "message",
        "message_line": 1,
    }
    assert context["lines"] == {"text": "Step two:\tcheck logs"} and context["message_line"] == 2
    assert r.stdout.splitlines()[0] == '{"type":"begin","data":{"path":{"text":"%s"}}}' % transcript


def test_default_is_the_project_transcripts_dir(run_mem, tmp_path, monkeypatch, transcript):
    monkeypatch.delenv("MEM_DIR", raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    where = json.loads(run_mem("path", "--json", cwd=str(project)).stdout)["transcripts_dir"]
    os.makedirs(where)
    shutil.copy(transcript, where)
    os.makedirs(os.path.join(where, SESSION, "subagents"))
    shutil.copy(FIXTURES / "claude-code-05.jsonl", os.path.join(where, SESSION, "subagents", "agent-1.jsonl"))
    r = run_mem("grep", "--transcripts", "-l", "prefer", cwd=str(project))
    assert r.stdout.splitlines() == [f"{SESSION}/subagents/agent-1.jsonl"]
    r = run_mem("grep", "--transcripts", "-c", "-w", "deploy", cwd=str(project))
    assert r.stdout.splitlines() == [f"{SESSION}.jsonl:2", f"{SESSION}/subagents/agent-1.jsonl:0"]


def test_no_transcripts_dir_exits_1(run_mem, tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    r = run_mem("grep", "--transcripts", "x", cwd=str(tmp_path))
    assert r.returncode == 1 and "no transcripts" in r.stderr


def test_recorded_claude_and_qwen_transcripts(run_mem):
    claude = FIXTURES / "claude-code-05.jsonl"
    qwen = FIXTURES / "qwen-code-05.jsonl"
    r = run_mem("grep", "--transcripts", "--role", "user", "-h", "prefer tabs", str(claude), str(qwen))
    assert r.stdout.splitlines() == ["remember that I prefer tabs", "remember that I prefer tabs"]
    # The memory file the client wrote appears as the Write / write_file call's content.
    r = run_mem("grep", "--transcripts", "--role", "assistant", "-h", "-x", "The user prefers tabs over spaces.", str(qwen))
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "The user prefers tabs over spaces."


@pytest.mark.process  # grep reads standard input as file descriptor 0
def test_stdin_transcript(run_mem, transcript):
    r = run_mem("grep", "--transcripts", "-n", "Deploying", "-", input=transcript.read_text(encoding="utf-8", errors="replace"))
    assert r.stdout == f"{line_of(transcript, 'a1')}:Deploying now.\n"


# --- the prefilter is only an optimisation ------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from(list("ab \"\\/\n\t<>&'") + ["é", "東", "🙂", "K", "ſ", "İ", "ı", "k", "s", "\u2028", "\x01"]),
               max_size=30)


def _write(path: Path, texts: list[str], ascii_json: list[bool]) -> None:
    lines = [rec("user", f"u{i}", t, ascii_json=a) for i, (t, a) in enumerate(zip(texts, ascii_json))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _results(matcher: core.Matcher, path: Path, prefilter: bool):
    searcher = core.Searcher(matcher, core.Options())
    if not prefilter:
        searcher._prefilter = None
    result = searcher.search(core.Target(str(path), path.name, "transcript"))
    return [(line.number, line.message_line, line.text, line.spans) for group in result.groups for line in group]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT, min_size=1, max_size=5), data=st.data())
def test_prefilter_never_changes_results(tmp_path, texts, data):
    ascii_json = data.draw(st.lists(st.booleans(), min_size=len(texts), max_size=len(texts)))
    path = tmp_path / "t.jsonl"
    _write(path, texts, ascii_json)
    source = data.draw(st.sampled_from(texts))
    start = data.draw(st.integers(0, len(source)))
    pattern = source[start:start + data.draw(st.integers(1, 6))] or "a"
    fixed = data.draw(st.booleans())
    ignore_case = data.draw(st.booleans())
    if not fixed:
        pattern = data.draw(st.sampled_from([pattern.replace("\\", "\\\\").replace("(", "").replace("[", ""), "a+b", "(?:ab|ba)"]))
    try:
        matcher = core.Matcher([pattern], fixed=fixed, ignore_case=ignore_case)
    except Exception:
        return
    assert _results(matcher, path, True) == _results(matcher, path, False), (pattern, fixed, ignore_case)


def test_needles_cover_every_writer():
    for literal in ['say "hi"', "東京", "a\\b", "tab\there", "🙂 ok", "K s"]:
        needles = matcher._needles(literal, False)
        for ascii_json in (False, True):
            raw = json.dumps({"t": literal}, ensure_ascii=ascii_json).encode()
            assert any(n in raw for n in needles), (literal, ascii_json, needles)
        # A writer that spells \u escapes with upper-case hex.
        upper = re.sub(rb"\\u([0-9a-f]{4})", lambda m: b"\\u" + m.group(1).upper(), json.dumps({"t": literal}).encode())
        assert any(n in upper for n in needles), (literal, needles)


def test_required_literal_from_regex():
    assert matcher._required_literals("foo[0-9]+barbaz", False) == [("barbaz", False)]
    assert matcher._required_literals("(?i)Deploy.*now", False) == [("Deploy", True)]
    assert matcher._required_literals("alpha|beta", False) == [("alpha", False), ("beta", False)]
    assert matcher._required_literals("a|[bc]", False) is None
    assert matcher._required_literals("x?", False) is None


def test_parallel_workers_give_the_same_results(tmp_path):
    rng = random.Random(5)
    targets = []
    for i in range(6):
        path = tmp_path / f"s{i}.jsonl"
        texts = [" ".join(rng.choice(["alpha", "beta", "東京", 'q"x"']) for _ in range(8)) for _ in range(50)]
        _write(path, texts, [i % 2 == 0] * len(texts))
        targets.append(core.Target(str(path), path.name, "transcript"))
    searcher = core.Searcher(core.Matcher(["東京 alpha"], fixed=True), core.Options(before=1))

    def flat(results):
        return [(r.target.display, r.selected, [(line.number, line.text, line.selected) for g in r.groups for line in g])
                for r in results]

    assert flat(core.search_all(searcher, targets, workers=2)) == flat(core.search_all(searcher, targets, workers=0))


def test_workers_keep_order_over_many_files_of_skewed_sizes(tmp_path):
    # More files than the hand-out window, one far larger than the rest: results still come in order.
    rng = random.Random(11)
    targets = []
    for i in range(40):
        path = tmp_path / f"s{i:02d}.jsonl"
        n = 2000 if i == 3 else rng.randint(1, 30)
        texts = [f"{rng.choice(['alpha', 'beta'])} {i} {k}" for k in range(n)]
        _write(path, texts, [True] * n)
        targets.append(core.Target(str(path), path.name, "transcript", size=path.stat().st_size))
    searcher = core.Searcher(core.Matcher(["alpha"], fixed=True), core.Options())

    def flat(results):
        return [(r.target.display, r.selected, r.error, [line.text for g in r.groups for line in g]) for r in results]

    here = flat(core.search_all(searcher, targets, workers=0))
    assert sum(selected for _, selected, _, _ in here) > 1000
    assert flat(core.search_all(searcher, targets, workers=3)) == here


def _one_line_files(tmp_path, n: int) -> list:
    """n transcripts s00.jsonl, s01.jsonl, ... of one user line each, "alpha N"."""
    targets = []
    for i in range(n):
        path = tmp_path / f"s{i:02d}.jsonl"
        _write(path, [f"alpha {i}"], [True])
        targets.append(core.Target(str(path), path.name, "transcript"))
    return targets


class _DyingSearcher(core.Searcher):
    """Kills the process searching one file: a worker lost to SIGKILL (the OOM killer, say)."""

    def __init__(self, fatal: str, *args) -> None:
        super().__init__(*args)
        self.fatal = fatal

    def search(self, target, progress=None):
        if target.path == self.fatal:
            time.sleep(0.3)  # long enough for the parent to queue this worker its next file
            os.kill(os.getpid(), signal.SIGKILL)
        return super().search(target, progress)


def test_a_dead_worker_fails_only_its_own_files(tmp_path):
    targets = _one_line_files(tmp_path, 12)
    searcher = _DyingSearcher(targets[4].path, core.Matcher(["alpha"], fixed=True), core.Options())
    results = list(core.search_all(searcher, targets, workers=2))
    assert [r.target.display for r in results] == [t.display for t in targets]
    # Only the file it died on: the one queued behind it is searched by the other worker.
    assert [(r.target.display, r.error) for r in results if r.error] == [("s04.jsonl", "search worker failed")]
    assert all(r.selected == 1 for r in results if not r.error)


def test_no_worker_can_start_so_the_search_runs_here(tmp_path):
    # Out of file descriptors for the workers' pipes: the same results, searched in this process.
    for i in range(6):
        _write(tmp_path / f"s{i}.jsonl", [f"alpha {i}", "beta"], [True, True])
    script = f"""
import os, resource
from mem.core import grep as core
targets = core.path_targets([{str(tmp_path)!r}], True)
searcher = core.Searcher(core.Matcher(["alpha"], fixed=True), core.Options())
used = len(os.listdir("/proc/self/fd"))  # one more than are open: listdir held one
resource.setrlimit(resource.RLIMIT_NOFILE, (used, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print([(r.target.display, r.selected, r.error, r.rendered) for r in core.search_all(searcher, targets, workers=2)])
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = eval(run.stdout)  # noqa: S307 - our own repr
    assert [(name, selected, error) for name, selected, error, _ in got] == [
        (f"{tmp_path}/s{i}.jsonl", 1, None) for i in range(6)]
    assert all(rendered is None for *_, rendered in got)  # searched here: nothing rendered by a worker


class _LoggingSearcher(core.Searcher):
    """Appends "start N" / "end N" to a log shared by the workers; the first file is slow."""

    def __init__(self, log, *args) -> None:
        super().__init__(*args)
        self.log = str(log)

    def _note(self, line: str) -> None:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line.encode() + b"\n")
        finally:
            os.close(fd)

    def search(self, target, progress=None):
        number = int(Path(target.path).stem[1:])
        self._note(f"start {number}")
        if number == 0:
            time.sleep(0.5)
        result = super().search(target, progress)
        self._note(f"end {number}")
        return result


def test_workers_run_at_most_a_window_ahead_of_the_output(tmp_path):
    # While the first file is still being searched, the other worker goes on only up to the
    # window: results that cannot be shown yet are held in memory, so they must stay few.
    targets = _one_line_files(tmp_path, 40)
    log = tmp_path / "log"
    searcher = _LoggingSearcher(log, core.Matcher(["alpha"], fixed=True), core.Options())
    results = list(core.search_all(searcher, targets, workers=2))
    assert [r.selected for r in results] == [1] * 40
    events = log.read_text().split("\n")
    started_before = events[: events.index("end 0")]
    assert sum(e.startswith("start") for e in started_before) <= 2 * pool.WINDOW_PER_WORKER
    assert sum(e.startswith("start") for e in events) == 40


@pytest.mark.parametrize("json_output", [False, True])
def test_workers_render_what_this_process_would(tmp_path, capsys, json_output):
    from mem.core.grep.printers import JsonPrinter, TextPrinter

    rng = random.Random(7)
    targets = []
    for i in range(6):
        path = tmp_path / f"s{i}.jsonl"
        texts = [" ".join(rng.choice(["alpha", "beta", "東京", 'q"x"', "\n"]) for _ in range(8)) for _ in range(40)]
        _write(path, texts, [i % 2 == 0] * len(texts))
        targets.append(core.Target(str(path), path.name, "transcript"))
    searcher = core.Searcher(core.Matcher(["alpha"], fixed=True), core.Options(before=1))

    def output(workers: int) -> str:
        out = JsonPrinter() if json_output else TextPrinter(False, True, True, False, True)
        text = ""
        for result in core.search_all(searcher, targets, workers=workers, render=out.render):
            assert (result.rendered is not None) == (workers > 1 and result.selected > 0)
            text += out.file(result)
        if json_output:
            text += out.summary()
        return re.sub(r'"(elapsed|elapsed_total)":\{[^}]*\}', "", text) if json_output else text

    here = output(0)
    assert "alpha" in here and ("--" in here or json_output)
    assert output(2) == here


def test_progress_line_is_drawn_and_erased(monkeypatch):
    from mem.cli.grep import _Progress

    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    progress = _Progress([core.Target("a", "a", "transcript", size=2_000_000)])
    progress.DELAY = progress.EVERY = 0
    progress.tick(1_000_000, 2_000_000)
    assert "50% 1.0 MB of 2.0 MB, 0 of 1 files" in err.getvalue()
    progress.clear()
    assert err.getvalue().endswith("\r\x1b[K")


@pytest.mark.parametrize("chunk, max_record", [(64, 1 << 20), (1000, 1 << 20), (64, 256)])
def test_records_across_chunks_keep_line_numbers_and_offsets(tmp_path, monkeypatch, chunk, max_record):
    monkeypatch.setattr(search, "CHUNK", chunk)
    monkeypatch.setattr(search, "MAX_RECORD", max_record)
    rng = random.Random(chunk)
    sizes = [0, 5, 70, 300, 2000] if max_record > 2000 + chunk else [0, 5, 70, 2000]  # clear of the limit
    lines = [("hit " if rng.random() < 0.3 else "") + "x" * rng.choice(sizes) for _ in range(200)]
    data = "\n".join(lines).encode()  # no final newline
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    want = [(i + 1, offsets[i], line.encode()) for i, line in enumerate(lines)
            if "hit" in line and len(line) < max_record]
    for prefilter in (matcher._Prefilter([b"hit"], False), None):
        got = list(search._records(str(path), prefilter, core.FileResult(core.Target(str(path), "r", "transcript")), None))
        if prefilter is None:
            got = [g for g in got if b"hit" in g[2]]
        assert got == want


def test_a_boundary_line_whose_content_is_not_text(run_mem, tmp_path):
    """Its content shown as JSON, as a text block's would be (it made grep fail with a TypeError)."""
    path = tmp_path / "t.jsonl"
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b", "sessionId": SESSION}
    path.write_text("\n".join(json.dumps({**boundary, "content": c}) for c in (5, {"n": 7}, None, "kept 9")) + "\n")
    r = run_mem("grep", "--transcripts", "-n", "[0-9]", str(path))
    assert (r.returncode, r.stdout, r.stderr) == (0, '1:5\n2:{"n": 7}\n4:kept 9\n', "")
