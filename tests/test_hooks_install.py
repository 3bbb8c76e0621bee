"""`mem hooks install|uninstall|status`: the settings file edited in place, and the entries run as a client runs them."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, write_memory

from mem.cli import cli
from mem import clients
from mem.core import install

HOOKS = FIXTURES / "hooks"

USER_SETTINGS = """{
\t"model": "opus",
\t"hooks": {
\t\t"UserPromptSubmit": [
\t\t\t{
\t\t\t\t"hooks": [
\t\t\t\t\t{
\t\t\t\t\t\t"type": "command",
\t\t\t\t\t\t"command": "~/bin/my-own-hook",
\t\t\t\t\t\t"timeout": 5
\t\t\t\t\t}
\t\t\t\t]
\t\t\t}
\t\t],
\t\t"Stop": [
\t\t\t{
\t\t\t\t"hooks": [
\t\t\t\t\t{
\t\t\t\t\t\t"type": "command",
\t\t\t\t\t\t"command": "notify-send done"
\t\t\t\t\t},
\t\t\t\t\t{
\t\t\t\t\t\t"type": "command",
\t\t\t\t\t\t"command": "mem extract --hook --background"
\t\t\t\t\t}
\t\t\t\t]
\t\t\t}
\t\t]
\t},
\t"permissions": {
\t\t"allow": [
\t\t\t"Bash(ls:*)"
\t\t]
\t},
\t"émoji": "✓"
}
"""


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def settings_file(home: Path) -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"


def our_commands(data: dict) -> list[tuple[str, str | None, str]]:
    return [(event, group.get("matcher"), h["command"])
            for event, groups in data.get("hooks", {}).items() for group in groups for h in group["hooks"]
            if install.launcher(h["command"])]


def test_install_writes_every_documented_hook_with_an_absolute_path(isolated_env, mem_exe):
    r = invoke("hooks", "install", "--mem", mem_exe)
    assert r.exit_code == 0, r.output
    data = json.loads(settings_file(isolated_env).read_text())
    q = shlex.quote(mem_exe)
    assert our_commands(data) == [
        ("SessionStart", None, f"{q} prompt --hook"),
        ("SessionStart", "compact", f"{q} recall --hook"),
        ("SessionStart", "compact", f"{q} session compact --hook"),
        ("UserPromptSubmit", None, f"{q} recall --hook"),
        ("PreToolUse", "Bash|Edit|Write|MultiEdit", f"{q} recall --hook"),
        ("Stop", None, f"{q} extract --hook --background"),
        ("PreCompact", None, f"{q} session compact --hook"),
    ]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0] == {"type": "command", "command": f"{q} recall --hook",
                                                                "timeout": 15}
    assert settings_file(isolated_env).read_text().startswith('{\n  "hooks": {\n')


def test_install_keeps_every_other_key_its_order_and_the_files_indent(isolated_env, mem_exe):
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text(USER_SETTINGS, encoding="utf-8")
    r = invoke("hooks", "install", "--mem", mem_exe)
    assert r.exit_code == 0, r.output
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert list(data) == ["model", "hooks", "permissions", "émoji"]
    assert data["permissions"] == {"allow": ["Bash(ls:*)"]} and data["émoji"] == "✓" and "✓" in text
    assert list(data["hooks"]) == ["UserPromptSubmit", "Stop", "SessionStart", "PreToolUse", "PreCompact"]
    assert "\n\t\t\"Stop\": [\n" in text and "  " not in text  # tabs, as the file had them
    # the user's hooks stay where they were; the bare `mem` of the README is replaced in place
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == "~/bin/my-own-hook"
    stop = data["hooks"]["Stop"]
    assert [h["command"] for g in stop for h in g["hooks"]] == [
        f"{shlex.quote(mem_exe)} extract --hook --background", "notify-send done"]
    # the file as it was is kept in the state directory
    backups = list((Path(os.environ["MEM_STATE_DIR"]) / "settings-backups").iterdir())
    assert [b.read_text(encoding="utf-8") for b in backups] == [USER_SETTINGS]
    assert "old file: " in r.stderr


def test_a_second_install_changes_no_byte(isolated_env, mem_exe):
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text(USER_SETTINGS, encoding="utf-8")
    assert invoke("hooks", "install", "--mem", mem_exe).exit_code == 0
    before = path.read_bytes(), os.stat(path).st_ino, os.stat(path).st_mtime_ns
    r = invoke("hooks", "install", "--mem", mem_exe)
    assert r.exit_code == 0 and "nothing to change" in r.stderr
    assert (path.read_bytes(), os.stat(path).st_ino, os.stat(path).st_mtime_ns) == before
    assert len(list((Path(os.environ["MEM_STATE_DIR"]) / "settings-backups").iterdir())) == 1
    assert invoke("hooks", "install", "--mem", mem_exe, "--dry-run").exit_code == 0


def test_dry_run_prints_the_diff_and_writes_nothing(isolated_env, mem_exe):
    r = invoke("hooks", "install", "--mem", mem_exe, "--dry-run", "--only", "UserPromptSubmit")
    assert r.exit_code == 1
    assert f'+            "command": "{mem_exe} recall --hook",' in r.stdout
    assert not settings_file(isolated_env).exists()


def test_uninstall_removes_only_ours(isolated_env, mem_exe):
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text(USER_SETTINGS, encoding="utf-8")
    assert invoke("hooks", "install", "--mem", mem_exe).exit_code == 0
    r = invoke("hooks", "uninstall")
    assert r.exit_code == 0, r.output
    data = json.loads(path.read_text(encoding="utf-8"))
    assert our_commands(data) == []
    assert data["hooks"] == {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/my-own-hook", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    }
    assert list(data) == ["model", "hooks", "permissions", "émoji"]


def test_only_and_without_pick_events(isolated_env, mem_exe):
    assert invoke("hooks", "install", "--mem", mem_exe, "--without", "Stop", "--without", "PreCompact",
                  "--without", "PreToolUse").exit_code == 0
    data = json.loads(settings_file(isolated_env).read_text())
    assert list(data["hooks"]) == ["SessionStart", "UserPromptSubmit"]
    assert invoke("hooks", "uninstall", "--only", "SessionStart").exit_code == 0
    assert list(json.loads(settings_file(isolated_env).read_text())["hooks"]) == ["UserPromptSubmit"]
    r = invoke("hooks", "install", "--client", "qwen", "--only", "Stop", "--mem", mem_exe)
    assert r.exit_code == 2 and "mem installs no Stop hook for qwen" in r.stderr


def test_scopes_name_the_clients_files(isolated_env, tmp_path, mem_exe):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert invoke("hooks", "install", "--scope", "local", "--project", str(repo), "--mem", mem_exe).exit_code == 0
    assert our_commands(json.loads((repo / ".claude" / "settings.local.json").read_text()))
    r = invoke("hooks", "install", "--scope", "project", "--project", str(repo), "--mem", mem_exe)
    assert r.exit_code == 0 and "--scope local keeps them to you" in r.stderr
    r = invoke("hooks", "install", "--client", "qwen", "--scope", "project", "--project", str(repo), "--mem", mem_exe)
    assert r.exit_code == 0 and "--scope local" not in r.stderr  # qwen-code has no local scope
    assert "--scope user keeps them out of the project" in r.stderr
    assert invoke("hooks", "install", "--client", "qwen", "--mem", mem_exe).exit_code == 0
    qwen = json.loads((isolated_env / ".qwen" / "settings.json").read_text())
    assert our_commands(qwen) == [("SessionStart", None, f"{shlex.quote(mem_exe)} prompt --hook"),
                                  ("UserPromptSubmit", None, f"{shlex.quote(mem_exe)} recall --hook")]
    # qwen-code 0.15 reads a hook's timeout as milliseconds: none is given
    assert all("timeout" not in h for groups in qwen["hooks"].values() for g in groups for h in g["hooks"])
    r = invoke("hooks", "install", "--client", "qwen", "--scope", "local", "--mem", mem_exe)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "qwen-code has no local settings file" in r.stderr


@pytest.mark.parametrize("text", ['{"hooks": {"Stop": [}', '[1, 2]', '{"hooks": []}', '{"hooks": {"Stop": {}}}',
                                  '// comment\n{}'])
def test_a_file_that_cannot_be_read_as_settings_is_left_alone(isolated_env, mem_exe, text):
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    for args in (("hooks", "install", "--mem", mem_exe), ("hooks", "uninstall")):
        r = invoke(*args)
        assert r.exit_code == 4
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("mem: error: ") and str(path) in r.stderr
        assert path.read_text() == text
    assert not (Path(os.environ["MEM_STATE_DIR"]) / "settings-backups").exists()


def test_a_symlinked_settings_file_is_edited_through_the_link(isolated_env, tmp_path, mem_exe):
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}\n')
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.symlink_to(dotfiles)
    assert invoke("hooks", "install", "--mem", mem_exe).exit_code == 0
    assert path.is_symlink() and our_commands(json.loads(dotfiles.read_text()))
    assert dotfiles.read_text().startswith('{"model": "opus", "hooks": {')  # one line, as it was


def test_status_reports_missing_broken_and_fired_hooks(isolated_env, tmp_path, mem_exe):
    r = invoke("hooks", "status")
    assert r.exit_code == 1 and "UserPromptSubmit  not installed" in r.stdout
    # a copy of mem that is then deleted: the entries it named no longer run
    gone = tmp_path / "old" / "mem"
    gone.parent.mkdir()
    shutil.copy(mem_exe, gone)
    assert invoke("hooks", "install", "--mem", str(gone), "--only", "Stop").exit_code == 0
    gone.unlink()
    assert invoke("hooks", "install", "--mem", mem_exe, "--without", "Stop").exit_code == 0
    r = invoke("hooks", "status", "--json")
    assert r.exit_code == 1
    report = json.loads(r.stdout)
    by_event = {(e["event"], e["command"]): e for e in report["entries"]}
    stop = by_event[("Stop", f"{gone} extract --hook --background")]
    assert not stop["runs"] and "exit 127" in stop["problem"]
    assert by_event[("UserPromptSubmit", f"{mem_exe} recall --hook")]["runs"]
    assert report["missing"] == [] and all(e["last_fired"] is None for e in report["entries"])
    assert invoke("hooks", "install", "--mem", mem_exe).exit_code == 0  # replaces the broken one
    assert invoke("hooks", "status").exit_code == 0


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with a Claude Code and a qwen-code memory directory, one memory in each; MEM_DIR unset."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    dirs = {}
    for layout in ("claude", "qwen"):
        memory = Path(clients.resolve(project=str(repo), layout=layout).memory_dir)
        memory.mkdir(parents=True)
        write_memory(memory, "staging.md", name="staging", description="staging deploys fail on migration timeouts",
                     type="project", body="Rerun with MIGRATION_TIMEOUT=900.\n")
        dirs[layout] = memory
    return repo, dirs


def recorded(client: str, name: str, repo: Path, tmp_path: Path, **changes) -> str:
    data = json.loads((HOOKS / client / name).read_text(encoding="utf-8"))
    data["cwd"] = str(repo)
    data["transcript_path"] = str(tmp_path / "no-transcript.jsonl")
    data.update(changes)
    return json.dumps(data)


def as_the_client_runs(command: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess:
    """`sh -c COMMAND` in the session's directory with nothing on PATH but /usr/bin:/bin."""
    keep = ("HOME", "CLAUDE_CONFIG_DIR", "MEM_STATE_DIR", "MEM_MANAGED_SETTINGS", "PYTHONPATH", "NO_COLOR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = install.MINIMAL_PATH
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=60)


def test_installed_entries_run_as_the_client_runs_them_without_mem_on_path(isolated_env, project, tmp_path, mem_exe):
    repo, memory_dirs = project
    if shutil.which("mem", path=install.MINIMAL_PATH):
        pytest.skip("a mem is installed in /usr/bin or /bin")
    # the old README way: a bare `mem` is not found under a client's minimal PATH
    assert as_the_client_runs("mem recall --hook", "{}", repo).returncode == 127
    p = subprocess.run([mem_exe, "hooks", "install"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([mem_exe, "hooks", "install", "--client", "qwen"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    claude = json.loads(settings_file(isolated_env).read_text())
    qwen = json.loads((isolated_env / ".qwen" / "settings.json").read_text())

    def command(data, event, matcher=None, index=0):
        groups = [g for g in data["hooks"][event] if g.get("matcher") == matcher]
        return groups[0]["hooks"][index]["command"]

    prompt = "why does the staging deploy time out?"
    for data, client, memory in ((claude, "claude-code", memory_dirs["claude"]), (qwen, "qwen-code", memory_dirs["qwen"])):
        p = as_the_client_runs(command(data, "UserPromptSubmit"), recorded(client, "UserPromptSubmit.json", repo, tmp_path,
                                                                          prompt=prompt), repo)
        assert p.returncode == 0 and "not found" not in p.stderr, p.stderr
        context = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "MIGRATION_TIMEOUT=900" in context and str(memory / "staging.md") in context

    p = as_the_client_runs(command(claude, "PreToolUse", "Bash|Edit|Write|MultiEdit"),
                           recorded("claude-code", "PreToolUse-Bash.json", repo, tmp_path), repo)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), p.stderr  # nothing applies to this call

    p = as_the_client_runs(command(claude, "SessionStart"),
                           recorded("claude-code", "SessionStart-startup.json", repo, tmp_path), repo)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    for event, fixture, matcher, index in (("Stop", "Stop.json", None, 0),
                                           ("SessionStart", "SessionStart-compact.json", "compact", 1)):
        p = as_the_client_runs(command(claude, event, matcher, index),
                               recorded("claude-code", fixture, repo, tmp_path), repo)
        assert p.returncode == 0 and "not found" not in p.stderr, p.stderr

    status = subprocess.run([mem_exe, "hooks", "status", "--json"], capture_output=True, text=True)
    assert status.returncode == 0, status.stdout + status.stderr
    fired = {(e["event"], e["matcher"], e["command"].split(" ", 1)[1]): e["last_fired"]
             for e in json.loads(status.stdout)["entries"]}
    assert fired[("UserPromptSubmit", None, "recall --hook")] is not None
    assert fired[("SessionStart", None, "prompt --hook")] is not None
    assert fired[("Stop", None, "extract --hook --background")] is not None
    assert fired[("PreCompact", None, "session compact --hook")] is None
    assert fired[("PreToolUse", "Bash|Edit|Write|MultiEdit", "recall --hook")] is not None
    qstatus = subprocess.run([mem_exe, "hooks", "status", "--client", "qwen", "--json"], capture_output=True, text=True)
    assert {e["event"]: e["last_fired"] is not None for e in json.loads(qstatus.stdout)["entries"]} == {
        "SessionStart": False, "UserPromptSubmit": True}


@pytest.mark.parametrize("command, ours", [
    ("/opt/mem/bin/mem recall --hook", ["/opt/mem/bin/mem"]),
    ("mem extract --hook --background", ["mem"]),
    ("'/home/u/my tools/mem' session compact --hook", ["/home/u/my tools/mem"]),
    ("/usr/bin/python3 /home/u/mem.pyz prompt --hook", ["/usr/bin/python3", "/home/u/mem.pyz"]),
    ("/venv/bin/python -m mem recall --hook", ["/venv/bin/python", "-m", "mem"]),
    ("mem recall", None),  # not a hook entry
    ("memo recall --hook", None),
    ("~/bin/my-hook --hook recall", None),
    ("echo 'unbalanced", None),
])
def test_which_commands_are_mems(command, ours):
    assert install.launcher(command) == ours


def test_status_warns_when_claude_code_runs_no_hooks(isolated_env, mem_exe):
    path = settings_file(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text('{"disableAllHooks": true}\n')
    assert invoke("hooks", "install", "--mem", mem_exe).exit_code == 0
    r = invoke("hooks", "status")
    assert r.exit_code == 1 and "runs no user or project hook here: disableAllHooks in user settings" in r.stderr


def test_status_in_the_home_directory_lists_each_file_once(isolated_env, mem_exe, monkeypatch):
    monkeypatch.chdir(isolated_env)  # <project>/.claude/settings.json is ~/.claude/settings.json here
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(isolated_env / ".claude"))
    assert invoke("hooks", "install", "--mem", mem_exe, "--only", "UserPromptSubmit").exit_code == 0
    report = json.loads(invoke("hooks", "status", "--json").stdout)
    assert [(e["scope"], e["event"]) for e in report["entries"]] == [("user", "UserPromptSubmit")]


@pytest.mark.parametrize("title, client", [("Use with Claude Code", "claude"), ("Use with qwen-code", "qwen")])
def test_the_readme_shows_what_install_writes(isolated_env, mem_exe, title, client):
    import re

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.S)
    assert invoke("hooks", "install", "--client", client, "--mem", mem_exe).exit_code == 0
    written = settings_file(isolated_env) if client == "claude" else isolated_env / ".qwen" / "settings.json"
    assert json.loads(written.read_text()) == json.loads(block.replace("/path/to/mem", mem_exe))
