"""Every test gets its own HOME, config home, state dir and memory dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.isolation import LEAKY_PREFIXES as _LEAKY_PREFIXES

FIXTURES = Path(__file__).parent / "fixtures"

# The test modules pytest rewrites, and the modules of mem they import, are kept as .pyc files even where
# PYTHONDONTWRITEBYTECODE is set (these helpers' machine sets it): otherwise the controller and every xdist
# worker rewrote and compiled them all again on every run (collection 9.2 s → 3.1 s of CPU a process here),
# and every `mem` the tests start compiled mem's modules again. The files go to __pycache__ (ignored by git).
sys.dont_write_bytecode = False


#: Where tmp_path lives when the run names no other place (--basetemp, PYTEST_DEBUG_TEMPROOT):
#: MEM_TEST_TMPDIR, else a RAM file system with room to spare. Every write of mem fsyncs its file
#: and directory; on this machine's shared disk that was most of the history tests' time
#: (tests/test_history_kill.py 31 s on /tmp, 13 s on /dev/shm). MEM_TEST_TMPDIR= (empty) keeps
#: the system's temporary directory.
_FAST_TMP = "/dev/shm"
_FAST_TMP_ROOM = 4 << 30


def _fast_temp_root() -> str | None:
    named = os.environ.get("MEM_TEST_TMPDIR")
    if named is not None:
        return named or None
    try:
        st = os.statvfs(_FAST_TMP)
    except OSError:
        return None
    if st.f_bavail * st.f_frsize < _FAST_TMP_ROOM or not os.access(_FAST_TMP, os.W_OK | os.X_OK):
        return None
    return _FAST_TMP


def pytest_configure(config):
    # xdist's --dist loadfile hands out the files with the most tests first, so the few slow ones (builds,
    # installs) started last and ran alone at the end; kept in collection order (pytest_collection_modifyitems
    # puts them first) they start at once. The same as --no-loadscope-reorder (pytest-xdist 3.6).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    root = _fast_temp_root()
    if root:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = root  # read by tmp_path_factory; xdist's workers get their basetemp under it


def pytest_collection_modifyitems(config, items):
    """The files with slow tests (artefact builds, installs) first, most slow tests first, each file's tests
    together and in order: with `make test`'s --dist loadfile the workers take files in this order
    (pytest_configure), so the slow ones start at once and the end is many small files on both workers."""
    from collections import Counter

    slow = Counter(str(item.path) for item in items if item.get_closest_marker("slow"))
    order = {path: i for i, path in enumerate(dict.fromkeys(str(item.path) for item in items))}
    items.sort(key=lambda item: (-slow[str(item.path)], order[str(item.path)]))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    base = tmp_path_factory.mktemp("env")
    home = base / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith(_LEAKY_PREFIXES):
            monkeypatch.delenv(key, raising=False)
    # A developer's own Claude Code on PATH would be detected as the claude-code backend.
    monkeypatch.setenv("PATH", os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep)
        if not os.access(os.path.join(d or ".", "claude"), os.X_OK)))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("MEM_STATE_DIR", str(base / "state"))
    monkeypatch.setenv("MEM_MANAGED_SETTINGS", str(base / "no-managed-settings.json"))
    monkeypatch.setenv("NO_COLOR", "1")
    # boto3's and google-auth's credential chains end by asking the cloud's metadata server (169.254.169.254):
    # never from a test (loopback only): boto3 skips it; google-auth asks it whatever NO_GCE_CHECK says, so
    # it asks a closed local port instead
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    # and once, not three times with a backoff between (3 s a refused chain); read when google.auth is imported
    monkeypatch.setenv("GCE_METADATA_DETECT_RETRIES", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.invalid")
    return home


@pytest.fixture
def memdir(tmp_path, monkeypatch) -> Path:
    """An empty memory directory, selected through MEM_DIR."""
    d = tmp_path / "memory"
    d.mkdir()
    monkeypatch.setenv("MEM_DIR", str(d))
    return d


def tree_bytes(root) -> dict:
    """relpath -> (bytes or link target, mtime_ns, mode) of every file under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (os.readlink(p) if os.path.islink(p) else open(p, "rb").read(), st.st_mtime_ns, st.st_mode)
    return out


def write_memory(root: Path, rel: str, *, name: str, description: str, type: str = "user",
                 body: str = "Body.\n", mtime: float | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type}\n---\n\n{body}", encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture(scope="session")
def mem_exe() -> str:
    """The installed ``mem`` console script (the contract is what hooks and cron run)."""
    exe = shutil.which("mem", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.fail("the mem console script is not installed next to this python; run the tests with `make test`")
    return exe


@pytest.fixture
def run_mem_process(mem_exe):
    """Run the real ``mem`` in a subprocess; returns CompletedProcess with text output."""

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd: str | None = None):
        return subprocess.run(
            [mem_exe, *args], input=input, capture_output=True, text=True,
            env={**os.environ, **(env or {})}, cwd=cwd, timeout=60,
        )

    return run


#: Arguments whose effect only a process shows: the job detaches (forks) from the caller.
_PROCESS_ARGS = ("--background",)


@pytest.fixture
def run_mem(request, run_mem_process):
    """Run ``mem`` in this process (tests/helpers/inproc.py), with ``run_mem_process``'s return shape.

    A test marked ``process`` (or a run with MEM_TEST_PROCESS=1) gets the real executable instead.
    """
    if request.node.get_closest_marker("process") or os.environ.get("MEM_TEST_PROCESS"):
        return run_mem_process
    from helpers.inproc import run_in_process

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd: str | None = None):
        if any(a in _PROCESS_ARGS for a in args):
            return run_mem_process(*args, input=input, env=env, cwd=cwd)
        return run_in_process(list(args), input=input, env={**os.environ, **(env or {})}, cwd=cwd)

    return run


@pytest.fixture
def run_mem_forked(run_mem_process):
    """Run ``mem`` in a child forked from the test process (tests/helpers/forked.py), with ``run_mem``'s shape:
    a process of its own (its own pid, its own once-per-process state) without a Python start-up.
    With MEM_TEST_PROCESS=1 it is the real executable, as ``run_mem`` is."""
    if os.environ.get("MEM_TEST_PROCESS"):
        return run_mem_process
    from helpers import forked

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd: str | None = None):
        return forked.run(list(args), input=input, env={**os.environ, **(env or {})}, cwd=cwd)

    return run


def git(*args: str, cwd: Path | str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def fake_api(monkeypatch):
    """A local Messages-API server; ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY point at it."""
    from fakeapi import FakeAnthropic

    api = FakeAnthropic().start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-a-secret")
    yield api
    api.stop()


@pytest.fixture
def fake_openai(monkeypatch):
    """A local chat-completions server (32k window); OPENAI_BASE_URL/_API_KEY/_MODEL point at it."""
    from fakeopenai import FakeOpenAI

    api = FakeOpenAI().start()
    monkeypatch.setenv("OPENAI_BASE_URL", api.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key-not-a-secret")
    monkeypatch.setenv("OPENAI_MODEL", api.model)
    yield api
    api.stop()


def moved_repo(root: Path) -> Path:
    """A git repository where src/util/strings.py was renamed to src/common/strings.py; src/net/retry.py stays."""
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    for rel, text in (("src/util/strings.py", "def slug(s):\n    return s.lower()\n"),
                      ("src/net/retry.py", "def backoff(n):\n    return 2 ** n\n")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "first", cwd=root)
    (root / "src/common").mkdir()
    git("mv", "src/util/strings.py", "src/common/strings.py", cwd=root)
    git("commit", "-q", "-m", "move strings", cwd=root)
    return root


#: Memories whose claims went stale against ``moved_repo``: a path that moved, a deadline that passed.
STALE_MEMORIES = {
    "project_slugs.md": "Slugs are made in `src/util/strings.py`, nowhere else.\n",
    "project_freeze.md": "Merge freeze until 2020-03-12: only fixes go in.\n",
}
#: The same memories with every claim still true.
TRUE_MEMORIES = {
    "project_slugs.md": "Slugs are made in `src/common/strings.py`, nowhere else.\n",
    "project_freeze.md": "Merge freeze until 2099-03-12: only fixes go in.\n",
}


def write_memories(memdir: Path, bodies: dict) -> None:
    for rel, body in bodies.items():
        write_memory(memdir, rel, name=rel[:-3], description=f"{rel[:-3]} under test", type="project", body=body)
    (memdir / "MEMORY.md").write_text("".join(f"- [{r[:-3]}]({r}) — under test\n" for r in bodies))


@pytest.fixture
def fake_bedrock(monkeypatch):
    """A local Bedrock (tests/fakecloud.py); Claude Code's CLAUDE_CODE_USE_BEDROCK configuration points at it,
    with AWS keys it knows (requests are SigV4-signed for real)."""
    from fakecloud import FakeBedrock

    api = FakeBedrock().start()
    ((key, secret),) = api.keys.items()
    for name, value in (("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_REGION", api.region), ("AWS_ACCESS_KEY_ID", key),
                        ("AWS_SECRET_ACCESS_KEY", secret), ("ANTHROPIC_BEDROCK_BASE_URL", api.url)):
        monkeypatch.setenv(name, value)
    yield api
    api.stop()


@pytest.fixture
def fake_vertex(monkeypatch, tmp_path_factory):
    """A local Vertex AI (tests/fakecloud.py) and its OAuth token endpoint; CLAUDE_CODE_USE_VERTEX points at it,
    with a service-account file whose tokens it mints (google-auth signs and exchanges for real)."""
    from fakecloud import FakeVertex

    api = FakeVertex().start()
    for name, value in (("CLAUDE_CODE_USE_VERTEX", "1"), ("CLOUD_ML_REGION", api.region),
                        ("ANTHROPIC_VERTEX_PROJECT_ID", api.project), ("ANTHROPIC_VERTEX_BASE_URL", api.url + "/v1"),
                        ("GOOGLE_APPLICATION_CREDENTIALS", api.service_account_file(tmp_path_factory.mktemp("gcp")))):
        monkeypatch.setenv(name, value)
    yield api
    api.stop()


@pytest.fixture
def cron_daemon(tmp_path):
    """A process named ``cron`` (a copy of sleep): what `mem cron status` looks for in /proc."""
    exe = tmp_path / "daemon" / "cron"
    exe.parent.mkdir()
    shutil.copy(shutil.which("sleep"), exe)
    proc = subprocess.Popen([str(exe), "600"])
    yield proc
    proc.kill()
    proc.wait()
