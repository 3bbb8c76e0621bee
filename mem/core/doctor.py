"""``mem doctor``: each thing a user would otherwise debug by hand, checked, with its fix.

Example: [c.name for c in run(resolution)][:2] == ["memory directory", "state directory"]

A check is ok, failed (doctor exits 1) or a note (optional, e.g. no cron job, no key: the
mechanical mode). The hooks and cron checks are ``mem hooks status`` and ``mem cron status``
(install.status, cron.status); a credential's value is never read into a message, only whether
it is set.

uses: install (hooks status), clients (homes), cron (cron status), memdir.state (state root, history), jobs.llm
(whether a key is set).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import NamedTuple

OK, FAIL, NOTE = "ok", "fail", "note"


class Check(NamedTuple):
    name: str
    state: str  # ok, fail or note
    detail: str  # what was found
    fix: str | None  # what to do, when not ok

    def as_dict(self) -> dict:
        return self._asdict()


def _writable_parent(path: str) -> tuple[str, bool]:
    """The nearest existing directory at or above ``path``, and whether mem can create in it."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return probe, os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK)


def check_memory_dir(memory_dir: str) -> Check:
    name = "memory directory"
    if os.path.isdir(memory_dir):
        if os.access(memory_dir, os.R_OK | os.W_OK | os.X_OK):
            return Check(name, OK, f"{memory_dir}", None)
        return Check(name, FAIL, f"{memory_dir} is not readable and writable by you",
                     f"chmod u+rwx {memory_dir}")
    if os.path.lexists(memory_dir):
        return Check(name, FAIL, f"{memory_dir} is not a directory", f"move {memory_dir} away")
    parent, ok = _writable_parent(memory_dir)
    if ok:
        return Check(name, OK, f"{memory_dir} (not made yet; the first write makes it)", None)
    return Check(name, FAIL, f"{memory_dir} cannot be made: {parent} is not writable by you",
                 f"chmod u+rwx {parent} (or give --dir / MEM_DIR another directory)")


def check_state(memory_dir: str, env: Mapping[str, str] | None = None) -> Check:
    from mem.core.memdir.state import state_dir, state_root

    name = "state directory"
    root = state_root(env)
    if os.path.lexists(root) and not os.path.isdir(root):
        return Check(name, FAIL, f"{root} is not a directory", f"move {root} away (or set MEM_STATE_DIR)")
    if os.path.isdir(root):
        if not os.access(root, os.W_OK | os.X_OK):
            return Check(name, FAIL, f"{root} is not writable by you: no history, no undo",
                         f"chmod u+rwx {root} (or set MEM_STATE_DIR)")
        history = state_dir(memory_dir, env, create=False)  # the history store of this memory directory
        if os.path.lexists(history) and not os.path.isdir(history):
            return Check(name, FAIL, f"the history {history} is not a directory", f"move {history} away")
        if os.path.isdir(history) and not os.access(history, os.W_OK | os.X_OK):
            return Check(name, FAIL, f"the history {history} is not writable by you", f"chmod -R u+rwX {history}")
        return Check(name, OK, root, None)
    parent, ok = _writable_parent(root)
    if ok:
        return Check(name, OK, f"{root} (not made yet; the first write makes it)", None)
    return Check(name, FAIL, f"{root} cannot be made: {parent} is not writable by you",
                 f"chmod u+rwx {parent} (or set MEM_STATE_DIR)")


def check_hooks(client: str, project: str | None, env: Mapping[str, str] | None = None) -> Check:
    from mem.core import install
    from mem.core.errors import MemError

    name = f"hooks ({client})"
    try:
        report = install.status(client, None, project, env)
    except MemError as exc:
        return Check(name, FAIL, str(exc), "fix the settings file by hand")
    broken = [e for e in report["entries"] if not e.runs]
    if broken:
        return Check(name, FAIL, f"{broken[0].event}: {broken[0].command}: {broken[0].problem}",
                     f"mem hooks install --client {client}")
    if report["disabled_by"]:
        return Check(name, FAIL, f"Claude Code runs no hooks here: {report['disabled_by']}",
                     "remove that setting, or ask whoever manages it")
    if report["missing"]:
        used = bool(report["entries"]) or os.path.isdir(client_home(client, env))
        return Check(name, FAIL if used else NOTE,
                     f"not installed: {', '.join(report['missing'])}", f"mem hooks install --client {client}")
    fired = [e.last_fired for e in report["entries"] if e.last_fired]
    return Check(name, OK, f"installed, runs; last fired {max(fired)}" if fired else "installed, runs; never fired yet",
                 None)


def client_home(client: str, env: Mapping[str, str] | None = None) -> str:
    """~/.claude (or CLAUDE_CONFIG_DIR) or ~/.qwen: there when the client has run here."""
    from mem.clients import named

    return named(client).home(env)


def check_cron(env: Mapping[str, str] | None = None) -> Check:
    from mem.core import cron
    from mem.core.errors import MemError

    name = "nightly dream (cron)"
    try:
        report = cron.status(env)
    except MemError as exc:
        return Check(name, FAIL, str(exc), "mem cron status")
    if not report["jobs"]:
        return Check(name, NOTE, "not scheduled (optional)", "mem cron install")
    broken = [j for j in report["jobs"] if not j["runs"]]
    if broken:
        return Check(name, FAIL, f"{broken[0]['via']}: {broken[0]['problem']}", "mem cron install (or start cron)")
    info = report["env_file"]
    if info.get("problem") or info.get("mode", "0o600") != "0o600":
        return Check(name, FAIL, info.get("problem") or f"{info['path']} is mode {info['mode'][2:]}",
                     f"chmod 600 {info['path']}")
    last = report["last_run"]
    if last and last["exit"] not in (0, 1, None):
        return Check(name, FAIL, f"the last run exited {last['exit']} ({report['log']})", f"tail {report['log']}")
    when = f"last run {last['started']}" if last else "never run yet"
    return Check(name, OK, f"scheduled via {report['jobs'][0]['via']}; {when}", None)


def check_credentials(env: Mapping[str, str] | None = None) -> Check:
    """Whether a key is set, and which variable: never its value."""
    env = os.environ if env is None else env
    name = "model credentials"
    present = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if env.get(k)]
    if present:
        base = env.get("ANTHROPIC_BASE_URL")
        return Check(name, OK, f"{present[0]} is set" + (f" (server {base})" if base else ""), None)
    return Check(name, NOTE, "no ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN: recall, extract and dream run "
                             "without a model (mechanical modes)", "export ANTHROPIC_API_KEY=... for the model jobs")


def check_man(env: Mapping[str, str] | None = None) -> Check:
    name = "man pages"
    man = shutil.which("man", path=(env or os.environ).get("PATH"))
    if man is None:
        return Check(name, NOTE, "no man command here", "mem help COMMAND prints the same help")
    try:
        proc = subprocess.run([man, "-w", "mem-recall"], capture_output=True, text=True, timeout=20,
                              env=None if env is None else dict(env), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name, FAIL, f"man -w mem-recall: {exc}", None)
    if proc.returncode == 0 and proc.stdout.strip():
        return Check(name, OK, os.path.dirname(proc.stdout.strip().splitlines()[0]), None)
    return Check(name, FAIL, "man does not find mem-recall(1) (man mem opens the kernel's mem(4))",
                 f"ln -s {_installed_share('man/man1')}/*.1 ~/.local/share/man/man1/ (or add its man directory "
                 f"to MANPATH)")


def _installed_share(rel: str) -> str:
    import sys

    return os.path.join(sys.prefix, "share", rel)


def bash_completion_dirs(env: Mapping[str, str] | None = None) -> list[str]:
    """Where bash-completion looks for a command's completion file named after it."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    dirs = []
    if env.get("BASH_COMPLETION_USER_DIR"):
        dirs += [os.path.join(d, "completions") for d in env["BASH_COMPLETION_USER_DIR"].split(":") if d]
    dirs.append(os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"),
                             "bash-completion", "completions"))
    mem = shutil.which("mem", path=env.get("PATH"))
    if mem:  # bash-completion 2.9+: <prefix>/share/... next to the command's bin/
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(mem)), "share", "bash-completion", "completions"))
    for d in (env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":"):
        if d:
            dirs.append(os.path.join(d, "bash-completion", "completions"))
    dirs.append("/etc/bash_completion.d")
    return dirs


def check_completions(env: Mapping[str, str] | None = None) -> Check:
    name = "shell completions"
    shell = os.path.basename((env or os.environ).get("SHELL") or "")
    found = [d for d in bash_completion_dirs(env) if os.path.isfile(os.path.join(d, "mem"))]
    if found:
        return Check(name, OK, f"bash: {os.path.join(found[0], 'mem')}", None)
    source = os.path.join(_installed_share("bash-completion/completions"), "mem.bash")
    fix = (f"mkdir -p ~/.local/share/bash-completion/completions && ln -s {source} "
           f"~/.local/share/bash-completion/completions/mem")
    return Check(name, FAIL if shell in ("bash", "") else NOTE,
                 "bash finds no completion file named mem (it falls back to _minimal)", fix)


def _safe(name: str, check, *args) -> Check:
    """The check, or a failed one naming what it ran into: one broken thing must not hide the others."""
    try:
        return check(*args)
    except Exception as exc:  # noqa: BLE001 - what doctor is for: report it as a line
        what = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Check(name, FAIL, what or type(exc).__name__, None)


def run(memory_dir: str, project: str | None = None, env: Mapping[str, str] | None = None) -> list[Check]:
    return [
        _safe("memory directory", check_memory_dir, memory_dir),
        _safe("state directory", check_state, memory_dir, env),
        _safe("hooks (claude)", check_hooks, "claude", project, env),
        _safe("hooks (qwen)", check_hooks, "qwen", project, env),
        _safe("nightly dream (cron)", check_cron, env),
        _safe("model credentials", check_credentials, env),
        _safe("man pages", check_man, env),
        _safe("shell completions", check_completions, env),
    ]
