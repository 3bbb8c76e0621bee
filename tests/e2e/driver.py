"""Drive the real Claude Code and qwen-code headless against FakeModel, with mem's hooks installed.

Used by tests/e2e (``make e2e``) and scripts/record_fixtures.py. A client is
installed from npm once per version into ``$MEM_E2E_CACHE`` (default
``~/.cache/mem-e2e``); every run gets a throwaway HOME and git repository, the
hooks of the README in the client's settings.json (by hand: there is no
``mem hooks install`` yet) plus a recorder that keeps each hook's stdin, and
the client talks only to the local server.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from tests.e2e.fakemodel import FakeModel

PACKAGES = {"claude": "@anthropic-ai/claude-code", "qwen": "@qwen-code/qwen-code"}
#: The oldest version verified and the newest, per client.
PINNED = {"claude": ("2.1.197", "2.1.330"), "qwen": ("0.15.10", "0.24.4")}
CACHE = Path(os.environ.get("MEM_E2E_CACHE") or "~/.cache/mem-e2e").expanduser()
HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
#: What a client run may take before it counts as hung (a held Stop hook, say).
RUN_TIMEOUT = 120

RECORDED_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreCompact", "PostCompact",
                   "Notification", "PreToolUse", "PostToolUse")


def install(client: str, version: str) -> Path:
    """The client's executable, installed from npm into the cache the first time."""
    prefix = CACHE / f"{client}-{version}"
    exe = prefix / "node_modules" / ".bin" / client
    if not exe.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix),
                        f"{PACKAGES[client]}@{version}"], check=True, stdout=subprocess.DEVNULL)
    return exe


def installed(client: str, version: str) -> bool:
    return (CACHE / f"{client}-{version}" / "node_modules" / ".bin" / client).exists()


class Run(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    requests: list  # FakeModel.requests of this run
    hooks: list  # [(event, stdin payload)] in the order they fired


class Session:
    """One client version in a throwaway HOME and repository, its memory dir seeded by the test."""

    def __init__(self, client: str, version: str, root: Path, server: FakeModel):
        from mem.core.paths import sanitize_path

        self.client, self.version, self.root, self.server = client, version, root, server
        self.exe = install(client, version)
        self.home, self.repo, self.bin = root / "home", root / "repo", root / "bin"
        self.hook_log = root / "hook-payloads"
        for d in (self.home, self.repo, self.bin, self.hook_log):
            d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        config = ".claude" if client == "claude" else ".qwen"
        self.memory_dir = self.home / config / "projects" / sanitize_path(os.path.realpath(self.repo)) / "memory"
        self.memory_dir.mkdir(parents=True)
        # `mem` on the hooks' PATH is this tree's code, run by this interpreter.
        mem = self.bin / "mem"
        mem.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m mem \"$@\"\n")
        mem.chmod(0o755)
        config = ".claude" if client == "claude" else ".qwen"
        subprocess.run([str(mem), "hooks", "install", "--client", client, "--mem", str(mem)], check=True,
                       env={**self.env(), "MEM_STATE_DIR": str(root / "install-state")}, capture_output=True)
        settings_path = self.home / config / "settings.json"
        settings = json.loads(settings_path.read_text())
        hooks = settings["hooks"]
        for groups in hooks.values():
            for group in groups:
                for hook in group["hooks"]:
                    if hook["command"].endswith(" recall --hook") and group.get("matcher") != "compact":
                        hook["command"] += " --offline"
        recorder = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'dumphook.py'))} {shlex.quote(str(self.hook_log))}"
        for event in RECORDED_EVENTS:
            hooks.setdefault(event, []).append({"hooks": [{"type": "command", "command": recorder}]})
        if client == "qwen":
            settings["security"] = {"auth": {"selectedType": "openai"}}
        settings_path.write_text(json.dumps(settings, indent=1))

    def env(self) -> dict:
        env = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TERM", "MEM_STATE_DIR", "MEM_MANAGED_SETTINGS")
               if k in os.environ}
        env.update(
            HOME=str(self.home), PATH=f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p),
            DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        if self.client == "claude":
            env.update(ANTHROPIC_BASE_URL=self.server.url, ANTHROPIC_API_KEY="sk-fake-e2e-not-a-key")
        else:
            env.update(OPENAI_BASE_URL=self.server.url + "/v1", OPENAI_API_KEY="sk-fake-e2e-not-a-key",
                       OPENAI_MODEL="qwen3-coder-plus")
        return env

    def argv(self, prompt: str, *extra: str) -> list[str]:
        if self.client == "claude":
            return [str(self.exe), "-p", prompt, *extra]
        return [str(self.exe), "--auth-type", "openai", "--approval-mode", "auto-edit", *extra, "-p", prompt]

    def run(self, prompt: str, *extra: str, cwd: Path | None = None) -> Run:
        first_request, first_hook = len(self.server.requests), len(list(self.hook_log.iterdir()))
        started = time.monotonic()
        p = subprocess.run(self.argv(prompt, *extra), cwd=cwd or self.repo, env=self.env(), capture_output=True,
                           text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        hooks = []
        for f in sorted(self.hook_log.iterdir())[first_hook:]:
            data = json.loads(f.read_text())
            hooks.append((data["event"], data["stdin"]))
        return Run(p.returncode, p.stdout, p.stderr, seconds, self.server.requests[first_request:], hooks)

    def transcripts(self) -> list[Path]:
        config = self.home / (".claude" if self.client == "claude" else ".qwen") / "projects"
        return sorted(p for p in config.rglob("*.jsonl") if "memory" not in p.parts)


def main_requests(run: Run) -> list[dict]:
    return [r["body"] for r in run.requests if r.get("main")]


#: How each client introduces hook context in a request (Claude Code 2.1.x; qwen-code 0.15 / 0.24).
CONTEXT_MARKERS = ("hook additional context:", "SessionStart additional context:", "<qwen:user-prompt-submit-context>",
                   "<qwen:session-start-context")


def hook_contexts(body: dict) -> list[str]:
    """The texts of a request that carry hook context, as the model reads them."""
    from tests.e2e.fakemodel import request_texts

    return [t for t in request_texts(body) if any(m in t for m in CONTEXT_MARKERS)]


def mem_cmd(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mem", *args], capture_output=True, text=True, env=env)


def which_unshare() -> bool:
    """Whether this kernel lets us run in a network namespace of our own (loopback only)."""
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rn", "true"], capture_output=True).returncode == 0
