"""Record a Codex CLI or Gemini CLI session into tests/fixtures/<client>-<version>/.

    unshare -rn sh -c 'ip link set lo up && PYTHONPATH=. .venv/bin/python scripts/record_agents.py codex 0.171.0'
    unshare -rn sh -c 'ip link set lo up && PYTHONPATH=. .venv/bin/python scripts/record_agents.py gemini 0.61.0'
    unshare -rn sh -c 'ip link set lo up && PYTHONPATH=. .venv/bin/python scripts/record_agents.py codex 0.171.0 hooks'
    unshare -rn sh -c 'ip link set lo up && PYTHONPATH=. .venv/bin/python scripts/record_agents.py gemini 0.61.0 hooks'

The client is installed from npm into the e2e cache (``$MEM_E2E_CACHE``,
default ``~/.cache/mem-e2e``) the first time, then runs headless once in a
throwaway HOME and git repository against tests/e2e/fakeagents.py (Codex: a
model provider whose base_url is the server, Responses API; Gemini CLI:
``GOOGLE_GEMINI_BASE_URL``). The scripted session plants three facts: one in
the prompt, one in a file the model reads with the client's own tool (so it
comes back as a tool result), one in the model's last answer. Kept: the files
the client wrote under HOME (session files, not its databases or bundled
skills), the requests it sent (``requests.json``), stdout and stderr. Paths
are moved to /home/dev/<client>-run.

The ``hooks`` scenario runs mem's own hooks (``mem prompt --hook --mode full``,
``mem recall --hook``, ``mem extract --hook``) in Codex's ``hooks.json`` (with
``--dangerously-bypass-hook-trust``: Codex skips hooks nobody has trusted) or
Gemini CLI's settings.json (SessionStart, BeforeAgent, AfterAgent)
against a seeded memory and tests/fakeapi.py for extraction, and keeps each
hook's stdin, stdout and stderr under ``hooks/``.

The ``installed`` scenario does the same with the hooks ``mem hooks install
--client <client>`` writes (no recorder): what fired is read back from mem's
hook stamps (``fired.json``: ``mem hooks status --json`` of the run).

The ``memories`` scenario has the client save a memory with its own means
(the user asks it to remember the prompt's fact): Codex with its memories
feature on calls ``memories.add_ad_hoc_note`` (a note under
``$CODEX_HOME/memories_v2/extensions/ad_hoc/notes/``) and its consolidation
agent, run at start, writes ``memories_v2/memory_summary.md`` (CODEX_SUMMARY) with its
``exec`` tool; Gemini CLI 0.30 calls
``save_memory`` (a line under ``## Gemini Added Memories`` in
``~/.gemini/GEMINI.md``), 0.61, which has no such tool, writes its private
project memory (``~/.gemini/tmp/<project>/memory/MEMORY.md``) with
``write_file`` as its system prompt tells it to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.e2e.fakeagents import FakeAgents, Reply

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("MEM_E2E_CACHE") or "~/.cache/mem-e2e").expanduser()
PACKAGES = {"codex": "@openai/codex", "gemini": "@google/gemini-cli"}
#: The versions recorded in tests/fixtures and run by tests/e2e/test_agents.py.
PINNED = {"codex": "0.171.0", "gemini": "0.61.0"}
FIXTURE_NAMES = {"codex": "codex", "gemini": "gemini-cli"}
FACTS = {
    "prompt": "We deploy with the blue-heron script; never run it on Fridays.",
    "file": "The CI runner image is quartz-7 and it needs 8 GB of RAM.",
    "answer": "Noted: the staging database is named tern-42.",
}
#: What is kept of the client's home: its session files, never its SQLite state or bundled skills.
KEEP = {"codex": ("sessions/",), "gemini": ("tmp/", "projects.json")}
#: What the memories scenario keeps besides: Codex's memory folder (not its git baseline), Gemini's GEMINI.md.
KEEP_MEMORIES = {"codex": ("memories_v2/extensions/", "memories_v2/rollout_summaries/", "memories_v2/memory_summary.md",
                           "memories/"),
                 "gemini": ("GEMINI.md",)}
MEMORY_NOTE = "2026-11-27T03-50-00-deploy-fridays.md"
#: What Codex's consolidation agent is scripted to write, in the form its prompt asks for
#: (``v1``, then the four sections); it writes with its ``exec`` tool running ``exec_command``.
CODEX_SUMMARY = """v1
## User Profile
Maintains a service whose deploys go through the blue-heron script.

## User preferences
- Prefers rebasing feature branches over merge commits.

## General Tips
- The CI runner image is quartz-7; it needs 8 GB of RAM.

## What's in Memory
### repo
#### 2026-11-27
- Deploy schedule and the blue-heron script (ad-hoc note) [ad-hoc note]
"""


def install(client: str, version: str) -> Path:
    prefix = CACHE / f"{client}-{version}"
    exe = prefix / "node_modules" / ".bin" / client
    if not exe.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix),
                        f"{PACKAGES[client]}@{version}"], check=True, stdout=subprocess.DEVNULL)
    return exe


def mem_hooks(root: Path, home: Path, repo: Path) -> tuple[dict, Path, dict]:
    """Codex hooks.json entries running this tree's mem, each through a recorder; a seeded memory."""
    from mem.core.paths import sanitize_path
    sys.path.insert(0, str(ROOT / "tests"))
    from fakeapi import FakeAnthropic

    memdir = home / ".claude" / "projects" / sanitize_path(os.path.realpath(repo)) / "memory"
    memdir.mkdir(parents=True)
    (memdir / "staging-deploys.md").write_text("---\nname: staging-deploys\ndescription: staging deploys fail on "
                                               "migration timeouts\ntype: project\n---\n\nRerun the staging deploy "
                                               "with MIGRATION_TIMEOUT=900.\n")
    (memdir / "MEMORY.md").write_text("- [Staging deploys](staging-deploys.md) — fail on migration timeouts\n")
    logs = root / "hooks"
    logs.mkdir()
    mem = f"{sys.executable} -m mem"
    commands = {"SessionStart": f"{mem} prompt --hook --mode full", "UserPromptSubmit": f"{mem} recall --hook",
                "Stop": f"{mem} extract --hook"}
    entries = {}
    for event, command in commands.items():
        script = root / f"{event}.sh"
        script.write_text(f"#!/bin/sh\ntee {logs}/{event}.json | PYTHONPATH={ROOT} {command} 2>{logs}/{event}.stderr"
                          f" | tee {logs}/{event}.out\n")
        script.chmod(0o755)
        entries[event] = [{"hooks": [{"type": "command", "command": str(script)}]}]
    api = FakeAnthropic().start()
    api.reply_text("Nothing.")
    env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key-not-a-secret",
           "MEM_STATE_DIR": str(root / "state")}
    return {"hooks": entries}, logs, env


def record(client: str, version: str, scenario: str = "", fixtures: Path = ROOT / "tests" / "fixtures") -> Path:
    exe = install(client, version)
    tmp = Path(tempfile.mkdtemp(prefix=f"{client}-run-"))
    home, repo = tmp / "home", tmp / "repo"
    home.mkdir()
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "NOTES.txt").write_text(FACTS["file"] + "\n")
    srv = FakeAgents().start()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    prompt = f"{FACTS['prompt']} Read NOTES.txt and remember what it says."
    logs = None
    if scenario == "hooks":
        hooks, logs, hook_env = mem_hooks(tmp, home, repo)
        env.update(hook_env)
        prompt = "Why do staging deploys time out?"
    if scenario == "installed":
        _, _, hook_env = mem_hooks(tmp, home, repo)  # the seeded memory and extraction's model
        env.update(hook_env)
        prompt = "Why do staging deploys time out?"
    keep = KEEP[client]
    if scenario == "memories":
        prompt = f"Remember this for later: {FACTS['prompt']}"
        keep = keep + KEEP_MEMORIES[client]
    if client == "codex":
        srv.replies += [Reply(tool=("exec_command", {"cmd": "cat NOTES.txt"})), Reply(text=FACTS["answer"])]
        config = home / ".codex"
        config.mkdir()
        (config / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{srv.url}/v1"\nenv_key = "FAKE_API_KEY"\nwire_api = "responses"\n')
        env.update(CODEX_HOME=str(config), FAKE_API_KEY="sk-fake")
        argv = [str(exe), "exec", "--skip-git-repo-check", "-s", "danger-full-access", prompt]
        if scenario == "installed":
            argv[2:2] = ["--dangerously-bypass-hook-trust"]  # what /hooks in the interactive CLI records
            srv.replies[:] = [Reply(text=FACTS["answer"])]
        if logs:
            (config / "hooks.json").write_text(json.dumps(hooks, indent=1))
            argv[2:2] = ["--dangerously-bypass-hook-trust"]
            srv.replies[:] = [Reply(text=FACTS["answer"])]
        if scenario == "memories":
            with (config / "config.toml").open("a") as f:
                f.write("[features]\nmemories = true\n[memories]\nuse_memories = true\ngenerate_memories = true\n"
                        "dedicated_tools = true\n")
            srv.replies[:] = [Reply(tool=("memories.add_ad_hoc_note", {"filename": MEMORY_NOTE,
                                                                        "note": f"- {FACTS['prompt']}\n"})),
                              Reply(text=FACTS["answer"], delay=5)]  # the consolidation agent's exec finishes
            # Codex's consolidation agent (a side request: its tools come in the input) writes the summary
            write = f"cat > memory_summary.md <<'EOF'\n{CODEX_SUMMARY}EOF"
            srv.side_replies[:] = [Reply(custom=("exec", f"const r = await tools.exec_command({{cmd: {json.dumps(write)}}});"
                                                         " text(r.output);")), Reply(text="Done.")]
    else:
        srv.replies += [Reply(tool=("read_file", {"file_path": "NOTES.txt"})), Reply(text=FACTS["answer"])]
        config = home / ".gemini"
        config.mkdir()
        (config / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}, "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}))
        env.update(GEMINI_API_KEY="fake-key", GOOGLE_GEMINI_BASE_URL=srv.url, GEMINI_CLI_TRUST_WORKSPACE="true")
        argv = [str(exe), "-m", "gemini-2.5-pro", "-y", "-p", prompt]
        if logs:
            settings = json.loads((config / "settings.json").read_text())
            aliases = {"UserPromptSubmit": "BeforeAgent", "Stop": "AfterAgent"}
            settings["hooks"] = {aliases.get(e, e): entries for e, entries in hooks["hooks"].items()}
            (config / "settings.json").write_text(json.dumps(settings, indent=1))
            srv.replies[:] = [Reply(text=FACTS["answer"])]
        if scenario == "memories" and version.startswith("0.30."):
            srv.replies[:] = [Reply(tool=("save_memory", {"fact": FACTS["prompt"]})), Reply(text=FACTS["answer"])]
        elif scenario == "memories":
            private = config / "tmp" / repo.name / "memory" / "MEMORY.md"
            srv.replies[:] = [Reply(tool=("write_file", {"file_path": str(private),
                                                          "content": f"- {FACTS['prompt']}\n"})),
                              Reply(text=FACTS["answer"])]
    if scenario == "installed":
        if client == "gemini":
            srv.replies[:] = [Reply(text=FACTS["answer"])]
        subprocess.run([sys.executable, "-m", "mem", "hooks", "install", "--client", client], env=env, check=True,
                       capture_output=True)
    run = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=180,
                         stdin=subprocess.DEVNULL)
    fired = None
    if scenario == "installed":
        import time

        time.sleep(3)  # the Stop hook's extraction runs detached
        fired = subprocess.run([sys.executable, "-m", "mem", "hooks", "status", "--client", client, "--json"],
                               env=env, capture_output=True, text=True).stdout
    srv.stop()
    out = fixtures / f"{FIXTURE_NAMES[client]}-{version}" / (scenario or "")
    shutil.rmtree(out / "home", ignore_errors=True)
    fixed = f"/home/dev/{client}-run"

    from mem.core.paths import sanitize_path

    def relocate(text: str) -> str:
        return text.replace(str(tmp), fixed).replace(sanitize_path(str(tmp)), sanitize_path(fixed))

    dot = config.name
    for path in sorted(config.rglob("*")):
        rel = path.relative_to(config).as_posix()
        if path.is_file() and rel.startswith(keep) and "/.git/" not in rel:
            dest = out / "home" / dot / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(relocate(path.read_text()))
    if logs:
        shutil.rmtree(out / "hooks", ignore_errors=True)
        (out / "hooks").mkdir(parents=True)
        for f in sorted(logs.iterdir()):
            (out / "hooks" / f.name).write_text(relocate(f.read_text()))
    if fired is not None:
        (out / "fired.json").write_text(relocate(fired))
    (out / "stdout.txt").write_text(relocate(run.stdout))
    (out / "stderr.txt").write_text(relocate(run.stderr))
    (out / "requests.json").write_text(relocate(json.dumps(srv.requests, indent=1)) + "\n")
    (out / "meta.json").write_text(json.dumps({"client": PACKAGES[client], "version": version, "argv": argv[1:],
                                               "returncode": run.returncode, "facts": FACTS,
                                               "home": f"{fixed}/home", "repo": f"{fixed}/repo"}, indent=1) + "\n")
    shutil.rmtree(tmp)
    return out


if __name__ == "__main__":
    print(record(*sys.argv[1:4]))
