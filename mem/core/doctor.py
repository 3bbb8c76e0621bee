"""``mem doctor``: each thing a user would otherwise debug by hand, checked, with its fix.

Example: [c.name for c in run(MemoryDir(resolution.memory_dir))][:2] == ["memory directory", "state directory"]

A check is ok, failed (doctor exits 1) or a note (optional, e.g. no cron job, no key: the
mechanical mode). The hooks and cron checks are ``mem hooks status`` and ``mem cron status``
(install.status, cron.status); a credential's value is never read into a message, only whether
it is set.

uses: install (hooks status), clients (homes, whether a client needs mem's hooks), cron (cron status),
memdir.store (MemoryDir), memdir.state (state root), memdir.history, jobs.llm (whether a key is set), completions (where mem
complete --install puts them); bash-completion and zsh themselves, run, for whether they find mem's completion.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from typing import NamedTuple

from mem.core.memdir.store import MemoryDir

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


def check_memory_dir(memory: MemoryDir) -> Check:
    name = "memory directory"
    memory_dir = memory.spelled  # shown as it was given
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


def check_state(memory: MemoryDir, env: Mapping[str, str] | None = None) -> Check:
    from mem.core.memdir.state import state_dir, state_root

    name = "state directory"
    root = state_root(env)
    if os.path.lexists(root) and not os.path.isdir(root):
        return Check(name, FAIL, f"{root} is not a directory", f"move {root} away (or set MEM_STATE_DIR)")
    if os.path.isdir(root):
        if not os.access(root, os.W_OK | os.X_OK):
            return Check(name, FAIL, f"{root} is not writable by you: no history, no undo",
                         f"chmod u+rwx {root} (or set MEM_STATE_DIR)")
        history = state_dir(memory, env, create=False)  # the history store of this memory directory
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


def check_history(memory: MemoryDir, env: Mapping[str, str] | None = None) -> Check:
    """Whether changes are recorded (git), the store reads, and no damaged store waits to be looked at."""
    from mem.core.memdir.history import History
    from mem.core.memdir.state import state_dir

    name = "history"
    if shutil.which("git", path=(env or os.environ).get("PATH")) is None:
        return Check(name, FAIL, "git is not on PATH: history is off (changes are not recorded, mem undo cannot "
                                 "take them back, mem dream refuses)", "install git")
    history = History(state_dir(memory, env, create=False), memory.root)
    why = history.damaged()
    if why:
        return Check(name, FAIL, f"the store {history.git_dir} is damaged: {why}",
                     "run any command that writes memory: it sets the store aside and starts the history again "
                     "from the files as they are")
    aside = history.set_aside()
    if aside:
        more = f" (and {len(aside) - 1} earlier)" if len(aside) > 1 else ""
        return Check(name, NOTE, f"a damaged store was set aside at {aside[-1]}{more}; history started again",
                     f"git --git-dir {aside[-1]} fsck (to look into it), then rm -rf {aside[-1]}")
    ops = history.operations()
    from mem.core.wording import plural

    return Check(name, OK, f"{plural(len(ops), 'operation')} recorded, the newest {ops[0].time}" if ops
                 else "no change recorded yet", None)


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
        return Check(name, FAIL, f"{install.label(client)} runs no hooks here: {report['disabled_by']}",
                     "remove that setting, or ask whoever manages it")
    if report["missing"]:
        # Codex CLI and Gemini CLI work without mem's hooks (a wrapper, the instructions file): a note
        # until some are installed; Claude Code and qwen-code, once used here, need them.
        from mem.clients import named

        used = bool(report["entries"]) or (named(client).NEEDS_HOOKS and os.path.isdir(client_home(client, env)))
        return Check(name, FAIL if used else NOTE,
                     f"not installed: {', '.join(report['missing'])}", f"mem hooks install --client {client}")
    fired = [e.last_fired for e in report["entries"] if e.last_fired]
    return Check(name, OK, f"installed, runs; last fired {max(fired)}" if fired else "installed, runs; never fired yet",
                 None)


def client_home(client: str, env: Mapping[str, str] | None = None) -> str:
    """~/.claude (or CLAUDE_CONFIG_DIR), ~/.qwen, ~/.codex (or CODEX_HOME), ~/.gemini: there when the client has run here."""
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
    if "link" in info:
        path = shlex.quote(info["path"])
        return Check(name, FAIL, info["problem"],
                     f'cp --remove-destination "$(readlink -f {path})" {path} && chmod 600 {path}')
    if info.get("problem"):  # a line mem cannot read as KEY=VALUE: the message names it
        return Check(name, FAIL, info["problem"], f"fix that line of {info['path']} (KEY=VALUE, one per line)")
    if info.get("mode", "0o600") != "0o600":
        return Check(name, FAIL, f"{info['path']} is mode {info['mode'][2:]}", f"chmod 600 {info['path']}")
    last = report["last_run"]
    from mem.core.cron import run_failed

    if run_failed(last):
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
    pages = installed_man_pages()
    from mem.core import completions

    local_bin = "" if completions.man_found_from_path(env) else ", and put ~/.local/bin on PATH"
    fix = (f"mem complete --install --man (it links {pages}/*.1 into ~/.local/share/man/man1){local_bin}" if pages else
           "this mem came without its man pages: make install PREFIX=~/.local from a clone puts them in place "
           "(mem help COMMAND prints the same help meanwhile)")
    return Check(name, FAIL, "man does not find mem-recall(1) (man mem opens the kernel's mem(4))", fix)


def installed_man_pages() -> str | None:
    """The man1 directory installed with this mem: the environment's (pip, pipx), or the one beside the
    command's bin/ (make install's zipapp); None when neither holds mem-recall.1."""
    import sys

    places = [_installed_share("man/man1")]
    if sys.argv and sys.argv[0]:
        for exe in (os.path.abspath(sys.argv[0]), os.path.realpath(sys.argv[0])):
            places.append(os.path.join(os.path.dirname(os.path.dirname(exe)), "share", "man", "man1"))
    return next((p for p in places if os.path.isfile(os.path.join(p, "mem-recall.1"))), None)


def _installed_share(rel: str) -> str:
    import sys

    return os.path.join(sys.prefix, "share", rel)


#: Where distributions put bash-completion's loader (Debian, Fedora, Arch; Homebrew; FreeBSD).
BASH_COMPLETION_SCRIPTS = ("/usr/share/bash-completion/bash_completion",
                           "/opt/homebrew/share/bash-completion/bash_completion",
                           "/usr/local/share/bash-completion/bash_completion")

#: bash-completion's own loader, asked for mem as TAB would ask it (_comp_load since 2.12,
#: __load_completion before), then what bash would complete mem with.
_BASH_PROBE = ('. "$1" >/dev/null 2>&1; if declare -F _comp_load >/dev/null; then _comp_load mem; '
               'else __load_completion mem; fi >/dev/null 2>&1; complete -p mem 2>/dev/null; '
               'shopt -s extdebug; declare -F _mem_completion')


def _which(name: str, env: Mapping[str, str] | None) -> str | None:
    return shutil.which(name, path=(os.environ if env is None else env).get("PATH"))


def _user_shell(env: Mapping[str, str] | None) -> str:
    return os.path.basename((os.environ if env is None else env).get("SHELL") or "")


def check_bash_completion(env: Mapping[str, str] | None = None) -> Check:
    """Whether bash-completion, as installed here, loads mem's completion: asked by running it."""
    from mem.core import completions

    name = "completion (bash)"
    mine = _user_shell(env) in ("bash", "")
    bash = _which("bash", env)
    loader = next((s for s in BASH_COMPLETION_SCRIPTS if os.path.isfile(s)), None)
    if bash is None:
        return Check(name, NOTE, "no bash here", None)
    fix = "mem complete --install"
    if loader is None:
        return Check(name, FAIL if mine else NOTE, "bash-completion is not installed: TAB after mem completes file names only",
                     f"apt install bash-completion (or: {fix}, and source {completions.target('bash', env)} "
                     "in ~/.bashrc)")
    try:
        proc = subprocess.run([bash, "--norc", "--noprofile", "-c", _BASH_PROBE, "probe", loader],
                              capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
                              env=None if env is None else dict(env))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name, FAIL, f"bash: {exc}", None)
    said = proc.stdout.strip().splitlines()
    defined = [line.split(" ", 2)[2] for line in said if line.startswith("_mem_completion ") and line.count(" ") >= 2]
    if defined and "-F _mem_completion mem" in proc.stdout:
        return Check(name, OK, f"bash-completion loads {defined[0]}", None)
    return Check(name, FAIL if mine else NOTE,
                 "bash-completion finds no completion for mem" + (f" ({said[0]})" if said else "")
                 + ": TAB completes file names only", fix)


def zsh_report(env: Mapping[str, str] | None = None) -> dict | None:
    """What an interactive zsh (the user's ~/.zshrc read) has: whether compinit ran, what completes
    mem, and its fpath; None without zsh. Its own output (a prompt theme's) is told apart by a mark."""
    zsh = _which("zsh", env)
    if zsh is None:
        return None
    probe = ('print -r -- "@mem-doctor@ ${+_comps} ${_comps[mem]-}"; '
             'for d in $fpath; print -r -- "@mem-doctor-fpath@ $d"')
    try:
        proc = subprocess.run([zsh, "-i", "-c", probe], capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL, env=None if env is None else dict(env))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"zsh -i: {exc}", "fpath": None}
    report: dict = {"fpath": [], "compinit": False, "completes_with": None}
    for line in proc.stdout.splitlines():
        if line.startswith("@mem-doctor@ "):
            words = line.split()
            report["compinit"] = words[1:2] == ["1"]
            report["completes_with"] = words[2] if len(words) > 2 else None
        elif line.startswith("@mem-doctor-fpath@ "):
            report["fpath"].append(line.split(" ", 1)[1])
    if not report["fpath"]:
        return {"error": f"zsh -i exited {proc.returncode}: {proc.stderr.strip()[-200:]}", "fpath": None}
    return report


def check_zsh_completion(env: Mapping[str, str] | None = None) -> Check:
    """Whether an interactive zsh completes mem: compinit run, _mem on its fpath."""
    from mem.core import completions

    name = "completion (zsh)"
    report = zsh_report(env)
    if report is None:
        return Check(name, NOTE, "no zsh here", None)
    severity = FAIL if _user_shell(env) == "zsh" else NOTE
    if report.get("error"):
        return Check(name, severity, report["error"], None)
    if report["completes_with"]:
        return Check(name, OK, f"compinit completes mem with {report['completes_with']}", None)
    on_fpath = next((d for d in report["fpath"] if os.path.isfile(os.path.join(d, "_mem"))), None)
    if on_fpath and not report["compinit"]:
        return Check(name, severity, f"_mem is in {on_fpath}, but ~/.zshrc runs no compinit",
                     "add 'autoload -Uz compinit && compinit' to ~/.zshrc")
    if on_fpath:
        return Check(name, severity, f"_mem is in {on_fpath}, but compinit's dump predates it",
                     "rm ~/.zcompdump*, then start a new zsh")
    line = completions.user_fpath_line(env)
    if os.path.isfile(completions.target("zsh", env)):
        return Check(name, severity, f"{completions.target('zsh', env)} is not on zsh's fpath",
                     f"add '{line}' before compinit in ~/.zshrc")
    return Check(name, severity, "no _mem on zsh's fpath",
                 f"mem complete --install zsh, and add '{line}' before compinit in ~/.zshrc")


def _safe(name: str, check, *args) -> Check:
    """The check, or a failed one naming what it ran into: one broken thing must not hide the others."""
    try:
        return check(*args)
    except Exception as exc:  # noqa: BLE001 - what doctor is for: report it as a line
        what = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Check(name, FAIL, what or type(exc).__name__, None)


def run(memory: MemoryDir, project: str | None = None, env: Mapping[str, str] | None = None) -> list[Check]:
    return [
        _safe("memory directory", check_memory_dir, memory),
        _safe("state directory", check_state, memory, env),
        _safe("history", check_history, memory, env),
        _safe("hooks (claude)", check_hooks, "claude", project, env),
        _safe("hooks (qwen)", check_hooks, "qwen", project, env),
        _safe("hooks (codex)", check_hooks, "codex", project, env),
        _safe("hooks (gemini)", check_hooks, "gemini", project, env),
        _safe("nightly dream (cron)", check_cron, env),
        _safe("model credentials", check_credentials, env),
        _safe("man pages", check_man, env),
        _safe("completion (bash)", check_bash_completion, env),
        _safe("completion (zsh)", check_zsh_completion, env),
    ]
