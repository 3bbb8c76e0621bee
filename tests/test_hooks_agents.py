"""`mem hooks install|uninstall|status --client codex|gemini`: Codex CLI's hooks.json and Gemini CLI's
settings.json, edited as Claude Code's are, and the entries run with the payloads the real clients sent
(tests/fixtures/codex-0.171.0/hooks, tests/fixtures/gemini-cli-0.61.0/hooks)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, write_memory
from helpers import forked

from mem.cli import cli
from mem import clients
from mem.core import install

RECORDED = {"codex": FIXTURES / "codex-0.171.0" / "hooks" / "hooks",
            "gemini": FIXTURES / "gemini-cli-0.61.0" / "hooks" / "hooks"}
#: What each client calls the events mem installs (the recorded payloads are named by ours).
EVENTS = {"codex": {"SessionStart": "SessionStart", "UserPromptSubmit": "UserPromptSubmit", "Stop": "Stop"},
          "gemini": {"SessionStart": "SessionStart", "UserPromptSubmit": "BeforeAgent", "Stop": "AfterAgent"}}

GEMINI_SETTINGS = """{
  // mine: keep me
  "general": {"vimMode": true},
  /* the user's own hook */
  "hooks": {
    "BeforeAgent": [{"hooks": [{"type": "command", "command": "~/bin/log-prompt", "timeout": 5000}]}]
  },
  "ui": {"theme": "GitHub"}
}
"""


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def homes(isolated_env, monkeypatch):
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return {"codex": isolated_env / ".codex" / "hooks.json", "gemini": isolated_env / ".gemini" / "settings.json"}


def ours(data: dict) -> dict[str, list[str]]:
    return {event: [h["command"] for g in groups if isinstance(g, dict) for h in g["hooks"]
                    if install.launcher(h["command"])]
            for event, groups in data.get("hooks", {}).items() if isinstance(groups, list)}


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_install_writes_the_clients_file_with_its_event_names(homes, mem_exe, client):
    r = invoke("hooks", "install", "--client", client, "--mem", mem_exe)
    assert r.exit_code == 0, r.output
    assert ("only once you trust them" in r.stderr) == (client == "codex")
    names = EVENTS[client]
    assert ours(json.loads(homes[client].read_text())) == {
        names["SessionStart"]: [f"{mem_exe} prompt --hook"],
        names["UserPromptSubmit"]: [f"{mem_exe} recall --hook"],
        names["Stop"]: [f"{mem_exe} extract --hook --background"]}
    before = homes[client].read_bytes()
    r = invoke("hooks", "install", "--client", client, "--mem", mem_exe)
    assert r.exit_code == 0 and "nothing to change" in r.stderr
    assert homes[client].read_bytes() == before


def test_codex_home_is_where_codex_reads_hooks(homes, mem_exe, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert invoke("hooks", "install", "--client", "codex", "--mem", mem_exe).exit_code == 0
    assert ours(json.loads((tmp_path / "codex-home" / "hooks.json").read_text()))["Stop"]
    assert not homes["codex"].exists()


def test_gemini_settings_keep_their_comments_and_the_users_hook(homes, mem_exe):
    homes["gemini"].parent.mkdir(parents=True)
    homes["gemini"].write_text(GEMINI_SETTINGS)
    assert invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe).exit_code == 0
    text = homes["gemini"].read_text()
    assert "// mine: keep me" in text and "/* the user's own hook */" in text
    assert text.endswith('  "ui": {"theme": "GitHub"}\n}\n')
    before_ui = GEMINI_SETTINGS.split('"hooks"')[0]
    assert text.startswith(before_ui)
    data = json.loads(re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S))
    assert [h["command"] for g in data["hooks"]["BeforeAgent"] for h in g["hooks"]] == [
        "~/bin/log-prompt", f"{mem_exe} recall --hook"]
    # --only takes Claude Code's name for the event too, and uninstall leaves the user's hook and comments
    r = invoke("hooks", "uninstall", "--client", "gemini", "--only", "UserPromptSubmit")
    assert r.exit_code == 0 and "removed BeforeAgent hooks" in r.stderr
    assert invoke("hooks", "uninstall", "--client", "gemini").exit_code == 0
    text = homes["gemini"].read_text()
    assert text.startswith(before_ui) and text.endswith('  "ui": {"theme": "GitHub"}\n}\n')
    assert ours(json.loads(re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S))) == {"BeforeAgent": []}


def test_only_and_without_take_gemini_clis_own_event_names(homes, mem_exe):
    from mem.cli.hooks import CLIENT_EVENT_NAMES, CLIENTS
    from mem.clients import named

    theirs = {name for client in CLIENTS for name in getattr(named(client), "HOOK_EVENTS", {})}
    assert set(CLIENT_EVENT_NAMES) == theirs
    r = invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe, "--only", "BeforeAgent")
    assert r.exit_code == 0, r.output
    assert ours(json.loads(homes["gemini"].read_text())) == {"BeforeAgent": [f"{mem_exe} recall --hook"]}
    r = invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe, "--without", "AfterAgent")
    assert r.exit_code == 0, r.output
    assert set(ours(json.loads(homes["gemini"].read_text()))) == {"SessionStart", "BeforeAgent"}
    r = invoke("hooks", "uninstall", "--client", "gemini", "--only", "BeforeAgent")
    assert r.exit_code == 0 and "removed BeforeAgent hooks" in r.stderr
    r = invoke("hooks", "install", "--client", "claude", "--mem", mem_exe, "--only", "BeforeAgent")
    assert r.exit_code == 2 and "mem installs no BeforeAgent hook for claude" in r.stderr


def test_an_older_gemini_clis_hooks_settings_are_left_alone(homes, mem_exe):
    """Gemini CLI before hooksConfig kept its switches in "hooks" ("enabled": true, "disabled":
    [names]; google-gemini/gemini-cli#14225, #17831): settings mem leaves as they are, not events."""
    homes["gemini"].parent.mkdir(parents=True)
    homes["gemini"].write_text('{"hooks": {"enabled": true, "disabled": ["~/bin/old-hook"]}}\n')
    r = invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe)
    assert r.exit_code == 0, r.output
    data = json.loads(homes["gemini"].read_text())
    assert data["hooks"]["enabled"] is True and data["hooks"]["disabled"] == ["~/bin/old-hook"]
    assert ours(data)["BeforeAgent"] == [f"{mem_exe} recall --hook"]
    assert invoke("hooks", "status", "--client", "gemini").exit_code == 0
    assert invoke("hooks", "uninstall", "--client", "gemini").exit_code == 0
    assert json.loads(homes["gemini"].read_text()) == {"hooks": {"enabled": True, "disabled": ["~/bin/old-hook"]}}
    # an event mem writes that is not a list is still refused
    homes["gemini"].write_text('{"hooks": {"BeforeAgent": {"command": "x"}}}\n')
    r = invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe)
    assert r.exit_code == 4 and "hooks.BeforeAgent is not a list" in r.stderr


def test_a_codex_hooks_file_of_the_users_is_kept(homes, mem_exe):
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                      "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard"}]}]}}
    homes["codex"].parent.mkdir(parents=True)
    homes["codex"].write_text(json.dumps(mine, indent=4) + "\n")
    assert invoke("hooks", "install", "--client", "codex", "--mem", mem_exe).exit_code == 0
    data = json.loads(homes["codex"].read_text())
    assert data["hooks"]["PreToolUse"] == mine["hooks"]["PreToolUse"]
    assert [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]] == [
        "notify-send done", f"{mem_exe} extract --hook --background"]
    assert '\n    "hooks": {' in homes["codex"].read_text()  # the file's indent
    assert invoke("hooks", "uninstall", "--client", "codex").exit_code == 0
    assert json.loads(homes["codex"].read_text()) == mine


@pytest.mark.parametrize("client, message", [("codex", "codex has no local hooks file"),
                                             ("gemini", "gemini has no local hooks file")])
def test_no_local_scope(homes, mem_exe, client, message):
    r = invoke("hooks", "install", "--client", client, "--scope", "local", "--mem", mem_exe)
    assert r.exit_code == 2 and message in r.stderr


def test_project_scope_is_the_projects_dot_directory(homes, mem_exe, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for client, rel in (("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")):
        r = invoke("hooks", "install", "--client", client, "--scope", "project", "--project", str(repo),
                   "--mem", mem_exe)
        assert r.exit_code == 0, r.output
        assert ours(json.loads((repo / rel).read_text()))
        # no --scope local for these clients: the advice is the user's own file
        assert "is usually checked in" in r.stderr and "--scope local" not in r.stderr
        assert "--scope user keeps them out of the project" in r.stderr


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    memory = Path(clients.resolve(project=str(repo), layout="claude").memory_dir)
    memory.mkdir(parents=True)
    write_memory(memory, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                 type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
    return repo


def recorded(client: str, event: str, repo: Path, home: Path) -> str:
    """The payload the client sent, moved to this test's HOME and project (its transcript not there)."""
    data = json.loads((RECORDED[client] / f"{event}.json").read_text(encoding="utf-8"))
    data["cwd"] = str(repo)
    data["transcript_path"] = data["transcript_path"].replace("/home/dev/codex-run/home", str(home)).replace(
        "/home/dev/gemini-run/home", str(home))
    data.pop("prompt", None) if event == "Stop" else data.update(prompt="why does the staging deploy time out?")
    return json.dumps(data)


def as_the_client_runs(command: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess:
    keep = ("HOME", "CLAUDE_CONFIG_DIR", "MEM_STATE_DIR", "PYTHONPATH", "NO_COLOR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = install.MINIMAL_PATH
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=60)


def as_installed(mem_exe: str, *args: str) -> subprocess.CompletedProcess:
    """``mem ARGS`` as the user runs it (named by its path, which it writes into the hooks), in a child forked
    from the test process: no Python start-up. The hooks themselves run as the client runs them."""
    return forked.run(list(args), argv0=mem_exe)


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_installed_hooks_run_the_recorded_payloads_and_status_shows_them_fired(homes, project, mem_exe, client):
    if shutil.which("mem", path=install.MINIMAL_PATH):
        pytest.skip("a mem is installed in /usr/bin or /bin")
    p = as_installed(mem_exe, "hooks", "install", "--client", client)
    assert p.returncode == 0, p.stderr
    status = json.loads(as_installed(mem_exe, "hooks", "status", "--client", client, "--json").stdout)
    assert status["ok"] and all(e["last_fired"] is None for e in status["entries"])
    never = as_installed(mem_exe, "hooks", "status", "--client", client)
    assert ("only once you trust them: /hooks in codex" in never.stderr) == (client == "codex")
    data = json.loads(homes[client].read_text())
    home = Path(os.environ["HOME"])
    for event in ("SessionStart", "UserPromptSubmit"):
        (command,) = ours(data)[EVENTS[client][event]]
        p = as_the_client_runs(command, recorded(client, event, project, home), project)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        context = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
        assert ("MIGRATION_TIMEOUT=900" if event == "UserPromptSubmit" else "You have a long-term memory") in context
    status = as_installed(mem_exe, "hooks", "status", "--client", client, "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    fired = {e["event"]: e["last_fired"] is not None for e in json.loads(status.stdout)["entries"]}
    assert fired == {EVENTS[client]["SessionStart"]: True, EVENTS[client]["UserPromptSubmit"]: True,
                     EVENTS[client]["Stop"]: False}
    text = as_installed(mem_exe, "hooks", "status", "--client", client)
    assert "trust them" not in text.stderr
    text = text.stdout
    assert re.search(rf"{EVENTS[client]['UserPromptSubmit']}  \S+ recall --hook  runs  last fired 20\d\d-", text), text


def doctor_checks(run_mem) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(run_mem("doctor", "--json").stdout)["checks"]}


def test_doctor_checks_codex_and_gemini_hooks(homes, mem_exe, run_mem):
    checks = doctor_checks(run_mem)
    assert checks["hooks (codex)"]["state"] == "note" and checks["hooks (gemini)"]["state"] == "note"
    assert invoke("hooks", "install", "--client", "codex", "--mem", mem_exe, "--only", "Stop").exit_code == 0
    codex = doctor_checks(run_mem)["hooks (codex)"]
    assert codex["state"] == "fail" and "not installed: SessionStart, UserPromptSubmit" in codex["detail"]
    assert invoke("hooks", "install", "--client", "codex", "--mem", mem_exe).exit_code == 0
    assert doctor_checks(run_mem)["hooks (codex)"]["state"] == "ok"


def test_the_readme_shows_what_install_writes(homes, mem_exe):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use with Codex CLI and Gemini CLI\n", 1)[1].split("\n## ", 1)[0]
    blocks = dict(zip(("codex", "gemini"), re.findall(r"```json\n(.*?)```", section, re.S)))
    for client, block in blocks.items():
        assert invoke("hooks", "install", "--client", client, "--mem", mem_exe).exit_code == 0
        assert json.loads(homes[client].read_text()) == json.loads(block.replace("/path/to/mem", mem_exe))


def test_status_reads_gemini_clis_own_switches(homes, mem_exe, tmp_path, monkeypatch):
    assert invoke("hooks", "install", "--client", "gemini", "--mem", mem_exe).exit_code == 0
    settings = json.loads(homes["gemini"].read_text())
    recall = f"{mem_exe} recall --hook"
    homes["gemini"].write_text(json.dumps({**settings, "hooksConfig": {"enabled": False}}))
    r = invoke("hooks", "status", "--client", "gemini")
    assert r.exit_code == 1
    assert f"Gemini CLI runs no user or project hook here: hooksConfig.enabled is false in {homes['gemini']}" in r.stderr
    # a project that turns them on again wins, as Gemini CLI merges its settings
    repo = tmp_path / "repo"
    (repo / ".gemini").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / ".gemini" / "settings.json").write_text('{"hooksConfig": {"enabled": true}}\n')
    monkeypatch.chdir(repo)
    assert invoke("hooks", "status", "--client", "gemini").exit_code == 0
    # one of ours named in hooksConfig.disabled does not run
    homes["gemini"].write_text(json.dumps({**settings, "hooksConfig": {"disabled": [recall]}}))
    r = invoke("hooks", "status", "--client", "gemini", "--json")
    assert r.exit_code == 1
    entries = {e["command"]: e for e in json.loads(r.stdout)["entries"]}
    assert not entries[recall]["runs"] and "hooksConfig.disabled" in entries[recall]["problem"]
    assert entries[f"{mem_exe} prompt --hook"]["runs"]


def test_mems_hooks_in_codex_config_toml_are_pointed_out(homes, mem_exe):
    """Codex 0.171.0 runs [hooks] of config.toml as well as hooks.json's (checked with the real binary)."""
    homes["codex"].parent.mkdir(parents=True)
    (homes["codex"].parent / "config.toml").write_text(
        'model = "gpt-5-codex"\n\n[[hooks.UserPromptSubmit]]\n[[hooks.UserPromptSubmit.hooks]]\ntype = "command"\n'
        'command = "/opt/mem/bin/mem recall --hook"  # by hand\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\n'
        "command = 'notify-send done'\n\n[model_providers.x]\ncommand = \"/opt/mem/bin/mem recall --hook\"\n")
    r = invoke("hooks", "install", "--client", "codex", "--mem", mem_exe)
    assert r.exit_code == 0
    assert (f"{homes['codex'].parent / 'config.toml'} runs mem for UserPromptSubmit too "
            "(/opt/mem/bin/mem recall --hook): Codex CLI runs both; remove one") in r.stderr
    assert r.stderr.count("runs mem for") == 1  # not the Stop hook of the user's, not a non-hook table
    assert "runs mem for UserPromptSubmit too" in invoke("hooks", "status", "--client", "codex").stderr
