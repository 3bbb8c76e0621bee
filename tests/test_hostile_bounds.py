"""Bounded everything (issue #32, third round: item 2): import caps, and every file mem opens read
with a type check and a cap. Each hostile input is run in a process of its own under a timeout and a
1 GB address-space limit: a clean refusal, never a hang or a swollen process. The process is forked from
the test's (tests/helpers/forked.py: no Python start-up, 0.1-0.3 s of CPU each), so the limit is 1 GB over
what the child has mapped when it starts (the test process's own mappings grow over a run).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import resource
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from helpers import forked

GOOD = b"---\nname: shell\ndescription: the user's shell\ntype: user\n---\n\nThe user uses fish, not bash.\n"
GIB = 1 << 30


def _mapped() -> int:
    """The bytes of address space this process has mapped (0 where /proc does not say)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _limit_memory():
    # 1 GB over what the child holds when it starts: a test process late in a run has mapped far more than
    # a fresh interpreter (hundreds of MB more), and the limit is on what the command may add.
    limit = _mapped() + GIB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def bounded(*args, stdin=subprocess.DEVNULL, timeout=30, env=None):
    """mem in a forked child that may map 1 GB more than it has; (CompletedProcess, seconds)."""
    started = time.monotonic()
    r = forked.run(list(args), stdin=None if stdin is subprocess.DEVNULL else stdin, timeout=timeout,
                   preexec_fn=_limit_memory, env={**os.environ, **(env or {})})
    return r, time.monotonic() - started


def archive_bytes(files: dict[str, bytes], *, extra: list[tuple[tarfile.TarInfo, bytes]] = ()) -> bytes:
    manifest = {"format": "mem-export", "version": 1, "layout": "claude",
                "files": [{"path": k, "sha256": hashlib.sha256(v).hexdigest(), "size": len(v), "mtime": 0}
                          for k, v in files.items()]}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("mem-manifest.json", json.dumps(manifest).encode()),
                           *(("memory/" + k, v) for k, v in files.items())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def header_block(name: bytes, kind: bytes, size: int) -> bytes:
    """One ustar header block claiming ``size`` bytes of ``kind`` (checksum right, content absent)."""
    block = bytearray(512)
    block[0:len(name)] = name
    block[100:108] = b"0000644\0"
    block[124:136] = b"%011o\0" % size
    block[156:157] = kind
    block[257:263] = b"ustar\0"
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


@pytest.fixture
def dst(tmp_path) -> Path:
    d = tmp_path / "dst"
    d.mkdir()
    return d


def refused(r, *words):
    assert r.returncode == 4, (r.returncode, r.stdout, r.stderr[-2000:])
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_a_huge_pax_header_is_refused_from_its_size_field(dst, tmp_path):
    # The 1 GB extended header reached 3.1 GB of memory before refusal: its size alone refuses it now.
    bomb = tmp_path / "pax.tar.gz"
    bomb.write_bytes(gzip.compress(header_block(b"././@PaxHeader", b"x", GIB) + b"x" * 4096))
    r, took = bounded("import", "--dir", str(dst), str(bomb))
    refused(r, "pax extended header", "--max-header-size")
    assert took < 10 and os.listdir(dst) == []


def test_a_pax_header_over_the_cap_is_refused_before_tarfile_reads_it(dst, tmp_path):
    info = tarfile.TarInfo("memory/x.md")
    info.pax_headers = {"comment": "c" * (200 << 10)}
    bomb = tmp_path / "pax.tar.gz"
    bomb.write_bytes(archive_bytes({"a.md": GOOD}, extra=[(info, b"")]))
    r, _ = bounded("import", "--dir", str(dst), str(bomb))
    refused(r, "pax extended header")


def test_too_many_members(dst, tmp_path):
    files = {f"m{i}.md": GOOD for i in range(12)}
    many = tmp_path / "many.tar.gz"
    many.write_bytes(archive_bytes(files))
    r, _ = bounded("import", "--dir", str(dst), str(many), "--max-members", "10")
    refused(r, "more than 10 members", "--max-members")
    r, _ = bounded("import", "--dir", str(dst), str(many), "--max-members", "13")
    assert r.returncode == 0, r.stderr


def test_the_default_member_cap_refuses_100000_members_at_once(dst, tmp_path):
    # 100,000 members were accepted (~35 min); the header walk counts them before tarfile lists them.
    raw = b"".join(header_block(b"memory/m%06d.md" % i, b"0", 0) for i in range(10_001))
    many = tmp_path / "many.tar.gz"
    many.write_bytes(gzip.compress(raw + bytes(1024)))
    r, took = bounded("import", "--dir", str(dst), str(many))
    refused(r, "more than 10,000 members")
    assert took < 10


def test_a_decompression_bomb_stops_at_the_expanded_cap(dst, tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    info = tarfile.TarInfo("memory/zeros.md")
    info.size = 64 << 20
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    bomb.write_bytes(gzip.compress(raw.getvalue(), 1))
    assert bomb.stat().st_size < 1 << 20
    r, took = bounded("import", "--dir", str(dst), str(bomb), "--max-expanded-size", "4M")
    refused(r, "--max-expanded-size")
    assert took < 10


def test_an_archive_over_the_size_cap(dst, tmp_path):
    a = tmp_path / "a.tar.gz"
    a.write_bytes(archive_bytes({"a.md": GOOD}))
    r, _ = bounded("import", "--dir", str(dst), str(a), "--max-archive-size", "100")
    refused(r, "larger than 100 bytes", "--max-archive-size")


def test_an_import_past_its_time_is_refused_before_any_write(dst, tmp_path):
    a = tmp_path / "a.tar.gz"
    a.write_bytes(archive_bytes({f"m{i}.md": GOOD + b"x" * 20000 for i in range(50)}))
    r, _ = bounded("import", "--dir", str(dst), str(a), "--timeout", "0.001")
    refused(r, "longer than 0.001 s", "--timeout")
    assert os.listdir(dst) == []


def test_import_from_dev_zero_on_stdin_stops_at_the_cap(dst):
    with open("/dev/zero", "rb") as zero:
        r, took = bounded("import", "--dir", str(dst), "-", "--max-archive-size", "8M", stdin=zero)
    refused(r, "larger than")
    assert took < 20


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_an_archive_that_is_a_fifo_or_a_device_is_refused(dst, tmp_path, kind):
    path = tmp_path / "a.tar.gz"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    r, _ = bounded("import", "--dir", str(dst), str(path), timeout=20)
    refused(r, "not a regular file")


# --- every file mem opens: typed and capped ----------------------------------------------------------

TOPIC = "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\n\nDeploy with make deploy.\n"
PROMPT = json.dumps({"prompt": "how do we deploy this", "session_id": "s1", "cwd": "/tmp",
                     "hook_event_name": "UserPromptSubmit"})


def planted(tmp_path: Path, kind: str | None, index: str = "MEMORY.md") -> dict:
    """A memory directory whose ``index`` is a FIFO or a link to /dev/zero; the environment to run in."""
    root = tmp_path / "memory"
    (root / "team").mkdir(parents=True)
    (root / "project_deploy.md").write_text(TOPIC)
    (root / "team" / "team_deploy.md").write_text(TOPIC)
    (root / "MEMORY.md").write_text("- [Deploy](project_deploy.md) — how we deploy\n")
    target = root / index
    if kind is not None:
        target.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    home = tmp_path / "home"
    home.mkdir()
    return {"MEM_DIR": str(root), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}


COMMANDS = {
    "recall-hook": (["recall", "--hook"], PROMPT, {0}),
    "recall": (["recall", "--force", "how", "do", "we", "deploy"], None, {0, 1}),
    "dream": (["dream", "--force", "--offline"], None, {0, 4}),
    "index": (["index", "--rebuild", "--dry-run"], None, {1, 4}),
}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("index", ["MEMORY.md", "team/MEMORY.md"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_index_that_is_a_fifo_or_dev_zero_never_hangs_or_swells(tmp_path, kind, index, command):
    # recall --hook blocked on a FIFO team/MEMORY.md and grew to 5.2 GB on /dev/zero; dream to 4.7 GB.
    args, payload, codes = COMMANDS[command]
    env = planted(tmp_path, kind, index)
    stdin = tmp_path / "stdin"
    stdin.write_text(payload or "")
    with open(stdin) as fh:
        r, took = bounded(*args, stdin=fh, env=env, timeout=30)
    assert r.returncode in codes, (r.returncode, r.stdout, r.stderr[-1500:])
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr and "Error:" not in r.stderr
    assert took < 20


@pytest.mark.parametrize("source", ["fifo", "/dev/zero", "stdin-zero"])
def test_eval_cases_are_typed_and_capped(tmp_path, source):
    # `mem eval /dev/zero` took 22 GB; a FIFO hung it.
    env = planted(tmp_path, None)
    stdin = open("/dev/zero", "rb") if source == "stdin-zero" else subprocess.DEVNULL
    if source == "fifo":
        os.mkfifo(tmp_path / "cases.fifo")
        arg = str(tmp_path / "cases.fifo")
    else:
        arg = "-" if source == "stdin-zero" else source
    try:
        r, took = bounded("eval", "--offline", arg, stdin=stdin, env=env)
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    refused(r, "not a regular file" if source != "stdin-zero" else "larger than")
    assert took < 20


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_settings_that_are_a_fifo_or_dev_zero_are_refused(tmp_path, kind):
    env = planted(tmp_path, None)
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(settings)
    else:
        settings.symlink_to("/dev/zero")
    r, _ = bounded("hooks", "install", env=env)
    refused(r, "not a regular file")
    r, _ = bounded("status", "--settings", str(settings), env=env)
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr


@pytest.mark.parametrize("args", [["recall", "--offline", "-"], ["remember", "-"], ["log", "-"], ["lint", "-"],
                                  ["index", "--check", "-"], ["forget", "--dry-run", "--offline", "-"]])
def test_stdin_from_dev_zero_stops_at_the_cap(tmp_path, args):
    env = planted(tmp_path, None)
    with open("/dev/zero", "rb") as zero:
        r, took = bounded(*args, stdin=zero, env=env)
    assert r.returncode != 70 and "larger than 16,777,216 bytes" in r.stderr, (r.returncode, r.stderr[-800:])
    assert "MemoryError" not in r.stderr and took < 20


@pytest.mark.parametrize("args", [["extract", "--transcript", "-"], ["grep", "x", "-"]])
def test_a_transcript_or_file_piped_from_dev_zero_stops_at_the_cap(tmp_path, args):
    # extract - and grep - read stdin whole: /dev/zero grew them until the kernel said no
    env = {**planted(tmp_path, None), "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    with open("/dev/zero", "rb") as zero:
        r, took = bounded(*args, stdin=zero, env=env)
    assert r.returncode != 70 and "larger than 268,435,456 bytes" in r.stderr, (r.returncode, r.stderr[-800:])
    assert "MemoryError" not in r.stderr and took < 20
