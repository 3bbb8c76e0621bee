"""The nightly ``mem dream --all-projects``: a systemd user timer where one works, else a crontab line.

Example: plan_crontab("", ["/opt/mem/bin/mem"], "04:30") == "30 4 * * * /opt/mem/bin/mem cron run # mem-cron ...\\n"

Both run ``<absolute mem> cron run``, which loads the environment file (mode 0600,
``~/.config/mem/cron.env``: the API key and anything else the job needs, never in the
crontab or the unit), runs ``mem dream --all-projects -q`` and appends its output,
a timestamp and its exit status to ``<state>/cron.log``.

Every value written into a crontab line, a unit or the env file is checked for newlines and
other control characters (one would start a line of its own) and quoted for its reader (sh
for cron, systemd's own rules for a unit). The env file is never written or chmodded through
a symbolic link. Status counts a crontab line as running only while a cron daemon runs.

uses: install (which mem), memdir.state (log path), memdir.files (atomic_write, read_text).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Mapping
from typing import NamedTuple

from mem.core.errors import ConfigError, MemError, RefusedError, UsageError

#: Every crontab line mem writes ends with this comment; uninstall removes exactly those lines.
MARKER = "# mem-cron"
UNIT = "mem-dream"
#: Variables copied into a new environment file when set where `mem cron install` runs (no secrets).
CARRIED = ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_REMOTE_MEMORY_DIR", "MEM_STATE_DIR", "ANTHROPIC_BASE_URL",
           "MEM_MODEL", "MEM_MODEL_DREAM", "MEM_CONTEXT_WINDOW", "MEM_MAX_OUTPUT_TOKENS")
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
LOG_MAX_BYTES = 1024 * 1024


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def config_dir(env: Mapping[str, str] | None = None) -> str:
    env = _env(env)
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "mem")


def env_file(env: Mapping[str, str] | None = None) -> str:
    """The environment of the nightly job: KEY=VALUE lines, mode 0600."""
    return os.path.join(config_dir(env), "cron.env")


def unit_dir(env: Mapping[str, str] | None = None) -> str:
    env = _env(env)
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "systemd", "user")


def parse_time(at: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", at.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise UsageError(f"--at {at}: expected HH:MM, 00:00 to 23:59")
    return int(m.group(1)), int(m.group(2))


#: Characters no value written into a crontab line, a unit or the env file may hold: each could
#: end the line (cron, systemd and our reader are line-based) and start one of its own.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def check_value(what: str, value: str) -> str:
    """``value`` unchanged, or UsageError when it holds a newline or another control character.

    Example: check_value("XDG_CONFIG_HOME", "/h/.config\\n* * * * * evil") raises UsageError
    """
    if _CONTROL.search(value):
        raise UsageError(f"{what} holds a newline or another control character ({value!r}); in a crontab line, "
                         f"a unit file or cron.env it would start a line of its own: fix it and run the command again")
    return value


def job_words(mem: list[str], wait: bool = False, env: Mapping[str, str] | None = None) -> list[str]:
    """The words of the job: ``<mem> cron run --env-file <absolute path> [--wait]``, each checked."""
    for word in mem:
        check_value("the path of mem", word)
    path = check_value("the environment file's path (from XDG_CONFIG_HOME or HOME)", env_file(env))
    return [*mem, "cron", "run", "--env-file", path, *(["--wait"] if wait else [])]


def job_command(mem: list[str], wait: bool = False, env: Mapping[str, str] | None = None) -> str:
    """``<mem> cron run --env-file <absolute path>`` for sh: nothing in it depends on cron's PATH or HOME."""
    return " ".join(shlex.quote(w) for w in job_words(mem, wait, env))


def systemd_quote(word: str) -> str:
    """One word of an ExecStart= line, as systemd splits it: double-quoted with C escapes when needed,
    $ doubled (systemd expands $NAME), % doubled (a specifier).

    Example: systemd_quote("/opt/my mem/bin/mem") == '"/opt/my mem/bin/mem"'
    """
    word = word.replace("%", "%%").replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------------------------------------
# The environment file


def read_env_file(path: str) -> dict[str, str]:
    """KEY=VALUE lines (``export`` and quotes allowed, ``#`` comments), as sh and systemd read them."""
    from mem.core.memdir.files import read_text

    out: dict[str, str] = {}
    try:
        lines = read_text(path, 1 << 20).splitlines()
    except FileNotFoundError:
        return out
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ConfigError(f"{path}:{n}: expected KEY=VALUE")
        try:
            words = shlex.split(value, comments=True)
        except ValueError as exc:
            raise ConfigError(f"{path}:{n}: {exc}") from None
        out[key] = " ".join(words)
    return out


#: The PATH a cron daemon gives its jobs (Debian's cron, cronie), and a systemd user manager's default.
CRON_PATH = "/usr/bin:/bin"
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def job_environment(env: Mapping[str, str] | None = None, via: str | None = None,
                    from_file: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the nightly dream runs in, as far as it can be told from here: HOME, USER and
    LOGNAME, the scheduler's PATH (cron's, or a systemd user manager's for ``via="systemd"``), and the
    environment file's variables over them, as ``run`` loads it. Nothing of this shell's own
    environment beyond those: a key exported here does not reach the job."""
    env = _env(env)
    out = {k: env[k] for k in ("HOME", "USER", "LOGNAME") if env.get(k)}
    out["PATH"] = SYSTEMD_PATH if via == "systemd" else CRON_PATH
    out.update(_env_file_values(env) if from_file is None else from_file)
    return out


def _env_file_values(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment file's variables; none when it is missing or cannot be read (status reports
    the file's problem on its own line)."""
    try:
        return read_env_file(env_file(env))
    except ConfigError:
        return {}


def scheduled(env: Mapping[str, str] | None = None) -> tuple[list[dict], str | None]:
    """The nightly jobs mem installed (``{"via": "cron"|"systemd", "entry"}``: the crontab line, or the
    unit's ExecStart) and why the crontab could not be read (None when it could, or when there is no
    crontab command here: a systemd user has none)."""
    jobs, problem = [], None
    try:
        jobs += [{"via": "cron", "entry": line} for line in read_crontab(env).splitlines() if is_ours(line)]
    except ConfigError:  # no crontab command on this machine
        pass
    except MemError as exc:  # crontab -l failed: the line may be there, unseen
        problem = str(exc)
    for unit in unit_files([], "00:00", env=env):
        if unit.endswith(".service") and os.path.exists(unit):
            try:
                m = re.search(r"^ExecStart=(.*)$", _read_small(unit, errors="replace"), re.M)
            except (MemError, OSError):  # not a regular file, over the cap: no command seen in it
                m = None
            jobs.append({"via": "systemd", "entry": m.group(1) if m else unit})
    return jobs, problem


def scheduled_via(env: Mapping[str, str] | None = None) -> str | None:
    """How the nightly job is scheduled ("cron" or "systemd"); None when it is not (or cannot be seen)."""
    jobs, _ = scheduled(env)
    return jobs[0]["via"] if jobs else None


def nightly_backend(env: Mapping[str, str] | None = None, via: str | None = None) -> dict:
    """Which backend and model the nightly dream will use, and where its credentials come from
    (``mem model``'s detection over ``job_environment``, from HOME, never running apiKeyHelper):
    ``{"backend", "model", "credentials", "reason"}``; backend None when no model is configured
    there, and the dream then runs its mechanical mode."""
    from mem.core.jobs import llm

    from_file = _env_file_values(env)
    job_env = job_environment(env, via, from_file)
    try:
        rows = llm.describe(env=job_env, cwd=job_env.get("HOME"))
    except ConfigError:
        return {"backend": None, "model": None, "credentials": None,
                "reason": "no model in the job's environment, so the dream runs its mechanical mode (a key: "
                          f"mem cron install --with-key, or a line in {env_file(env)}; or Claude Code's or "
                          "qwen-code's user settings)"}
    row = next(r for r in rows if r["job"] == "dream")
    credentials = row["credentials"]
    path = env_file(env)
    for key in from_file:
        credentials = credentials.replace(f"env {key}", f"{key} in {path}")
    return {"backend": row["backend"], "model": row["model"], "credentials": credentials, "reason": row["reason"]}


def env_file_text(env: Mapping[str, str] | None = None, *, with_key: bool = False) -> tuple[str, str | None]:
    """The environment file's path and the text install would write (None: it stays as it is).

    A new file carries CARRIED's variables set here; with ``with_key`` the key set here replaces
    any in the file, the other lines staying. Raises before anything is written: ConfigError when
    --with-key finds no key, UsageError when a value holds a newline (it would break the file).
    """
    from mem.core.memdir.files import read_text

    env = _env(env)
    path = check_value("the environment file's path (from XDG_CONFIG_HOME or HOME)", env_file(env))
    present = [k for k in KEYS if env.get(k)]
    if with_key and not present:
        raise ConfigError("--with-key: neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set here")
    try:
        lines = read_text(_no_link(path), 1 << 20).splitlines()
    except FileNotFoundError:
        lines = [
            "# The environment of the nightly `mem cron run` (mem dream --all-projects), read as KEY=VALUE",
            "# lines. Keep this file mode 0600: a model key here is how the job reaches a model.",
            "# Without a key the dream runs in its mechanical (offline) mode.",
            *(f"{k}={shlex.quote(check_value(k, env[k]))}" for k in CARRIED if env.get(k)),
            "# ANTHROPIC_API_KEY=...",
        ]
    else:
        if not with_key:
            return path, None
    if with_key:
        for k in present:
            if _CONTROL.search(env[k]):  # never the value: it is a key
                raise UsageError(f"{k} holds a newline or another control character; cron.env holds one line "
                                 f"per variable: set it again without one")
        lines = [ln for ln in lines if not re.match(rf"\s*(export\s+)?({'|'.join(KEYS)})=", ln)]
        lines += [f"{k}={shlex.quote(env[k])}" for k in present]
    return path, "\n".join(lines) + "\n"


def variables(text: str) -> list[str]:
    """The names an environment file's text sets (never their values)."""
    return [m.group(2) for m in re.finditer(r"^\s*(export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", text, re.M)]


def _no_link(path: str) -> str:
    """``path``, or RefusedError when it is a symbolic link (mem writes and chmods the file itself, never
    what a link points at)."""
    if os.path.islink(path):
        raise RefusedError(f"{path} is a symbolic link; mem writes the environment file only as a file of its "
                           f"own (mode 0600): replace the link with the file")
    return path


def ensure_env_file(env: Mapping[str, str] | None = None, *, with_key: bool = False) -> tuple[str, bool]:
    """The environment file, created 0600 if missing (with ``with_key``, the key set from ``env``).

    Returns (path, written). An existing file is only tightened to 0600 and, with ``with_key``,
    given the current key; its other lines stay. A symbolic link is refused, never followed.
    """
    from mem.core.memdir.files import atomic_write

    path, text = env_file_text(env, with_key=with_key)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if text is None:
        fd = os.open(_no_link(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            os.fchmod(fd, 0o600)  # on the file opened, not on whatever the path names a moment later
        finally:
            os.close(fd)
        return path, False
    old_mask = os.umask(0o077)
    try:
        if os.path.lexists(path):
            _no_link(path)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            try:
                os.fchmod(fd, 0o600)  # atomic_write keeps the old mode: make it 0600 first
            finally:
                os.close(fd)
        atomic_write(path, text.encode("utf-8"))  # a new file under umask 077: 0600
    finally:
        os.umask(old_mask)
    return path, True


# ---------------------------------------------------------------------------------------------
# Where the job is scheduled


def _tool(name: str, env: Mapping[str, str] | None) -> list[str]:
    """The crontab or systemctl command; MEM_CRONTAB / MEM_SYSTEMCTL name another (tests, odd systems)."""
    value = _env(env).get(f"MEM_{name.upper()}")
    return shlex.split(value) if value else [name]


def _run(argv: list[str], *, stdin: str | None = None, env: Mapping[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60,
                              env=None if env is None else dict(env))
    except FileNotFoundError:
        hint = " (Debian/Ubuntu: apt install cron)" if "crontab" in os.path.basename(argv[0]) else ""
        raise ConfigError(f"{argv[0]} is not installed{hint}") from None
    except subprocess.TimeoutExpired:
        raise MemError(f"{' '.join(argv)} did not answer in 60 s") from None
    if check and proc.returncode != 0:
        said = " ".join((proc.stderr or proc.stdout).split())
        raise MemError(f"{' '.join(argv)} failed (exit {proc.returncode}){': ' + said if said else ''}")
    return proc


def systemd_works(env: Mapping[str, str] | None = None) -> bool:
    try:
        return _run([*_tool("systemctl", env), "--user", "show-environment"], env=env, check=False).returncode == 0
    except MemError:
        return False


def choose(via: str, env: Mapping[str, str] | None = None) -> str:
    if via in ("systemd", "cron"):
        return via
    return "systemd" if systemd_works(env) else "cron"


def read_crontab(env: Mapping[str, str] | None = None) -> str:
    proc = _run([*_tool("crontab", env), "-l"], env=env, check=False)
    if proc.returncode == 0:
        return proc.stdout
    if "no crontab" in (proc.stderr + proc.stdout).lower():
        return ""
    said = " ".join((proc.stderr or proc.stdout).split())
    raise MemError(f"crontab -l failed (exit {proc.returncode}){': ' + said if said else ''}")


def is_ours(line: str) -> bool:
    """A crontab line mem wrote: its comment starts with the marker."""
    return line.rstrip().endswith(MARKER) or MARKER + " " in line


def plan_crontab(current: str, line: str | None) -> str:
    """The crontab with our line (or, with None, without it); every other line as it was."""
    kept = [ln for ln in current.splitlines() if not is_ours(ln)]
    if line is not None:
        kept.append(line)
    return "".join(ln + "\n" for ln in kept)


def crontab_line(mem: list[str], at: str, wait: bool = False, env: Mapping[str, str] | None = None) -> str:
    hour, minute = parse_time(at)
    # cron turns an unescaped % into a newline
    command = job_command(mem, wait, env).replace("%", "\\%")
    return f"{minute} {hour} * * * {command} {MARKER} nightly dream; mem cron uninstall removes it"


def unit_files(mem: list[str], at: str, wait: bool = False, env: Mapping[str, str] | None = None) -> dict[str, str]:
    hour, minute = parse_time(at)
    service = (
        "# Written by mem cron install; mem cron uninstall removes it.\n"
        "[Unit]\n"
        "Description=mem: nightly memory consolidation (mem dream --all-projects)\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={' '.join(systemd_quote(w) for w in job_words(mem, wait, env))}\n"
    )
    timer = (
        "# Written by mem cron install; mem cron uninstall removes it.\n"
        "[Unit]\n"
        "Description=mem: nightly memory consolidation\n\n"
        "[Timer]\n"
        f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\n"
        "Persistent=true\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    folder = unit_dir(env)
    return {os.path.join(folder, f"{UNIT}.service"): service, os.path.join(folder, f"{UNIT}.timer"): timer}


class Result(NamedTuple):
    via: str
    changed: bool
    where: str  # "crontab" or the timer unit's path
    entry: str  # the crontab line or the ExecStart command
    env_file: str
    log: str

    def as_dict(self) -> dict:
        return self._asdict()


def install(mem: list[str], *, at: str = "04:30", via: str = "auto", wait: bool = False,
            env: Mapping[str, str] | None = None) -> Result:
    """Schedule the nightly job (replacing one of ours, by any path); nothing changes if it is already so."""
    result, writes = _planned(mem, at, via, wait, env)
    if result.via == "cron":
        if result.changed:
            _run([*_tool("crontab", env), "-"], stdin=writes["crontab"], env=env)
        return result
    from mem.core.memdir.files import atomic_write

    for unit, text in writes.items():
        os.makedirs(os.path.dirname(unit), exist_ok=True)
        atomic_write(unit, text.encode("utf-8"))
    systemctl = [*_tool("systemctl", env), "--user"]
    if result.changed:
        _run([*systemctl, "daemon-reload"], env=env)
    _run([*systemctl, "enable", "--now", f"{UNIT}.timer"], env=env)
    return result


def plan(mem: list[str], *, at: str = "04:30", via: str = "auto", wait: bool = False,
         env: Mapping[str, str] | None = None) -> Result:
    """What install would do (--dry-run): the same Result, ``changed`` when it would write; nothing written."""
    return _planned(mem, at, via, wait, env)[0]


def _planned(mem: list[str], at: str, via: str, wait: bool, env: Mapping[str, str] | None) -> tuple[Result, dict]:
    """(what install does, what it writes: the new crontab under "crontab", or each unit file that differs)."""
    from mem.core.memdir.state import cron_log

    via = choose(via, env)
    path = env_file(env)
    if via == "cron":
        line = crontab_line(mem, at, wait, env)
        current = read_crontab(env)
        new = plan_crontab(current, line)
        return Result("cron", new != current, "crontab", line, path, cron_log(env)), {"crontab": new}
    files = unit_files(mem, at, wait, env)
    writes = {}
    for unit, text in files.items():
        try:
            same = _read_small(unit) == text
        except FileNotFoundError:
            same = False
        if not same:
            writes[unit] = text
    timer = next(p for p in files if p.endswith(".timer"))
    return Result("systemd", bool(writes), timer, job_command(mem, wait, env), path, cron_log(env)), writes


def _read_small(path: str, errors: str = "strict") -> str:
    from mem.core.memdir.files import read_text

    return read_text(path, 1 << 20, errors=errors)


def uninstall(*, via: str = "auto", env: Mapping[str, str] | None = None, dry_run: bool = False) -> list[str]:
    """Remove our crontab line and our units, wherever they are; what was (or, ``dry_run``, would be)
    removed. The env file stays."""
    removed = []
    try:
        current = read_crontab(env)
    except ConfigError:
        current = None
    if current is not None and via in ("auto", "cron"):
        new = plan_crontab(current, None)
        if new != current:
            if not dry_run:
                _run([*_tool("crontab", env), "-"], stdin=new, env=env)
            removed.append("crontab line")
    if via in ("auto", "systemd"):
        units = [p for p in unit_files([], "00:00", env=env) if os.path.exists(p)]
        if units and dry_run:
            removed += units
        elif units:
            if systemd_works(env):
                _run([*_tool("systemctl", env), "--user", "disable", "--now", f"{UNIT}.timer"], env=env, check=False)
            for p in units:
                os.unlink(p)
                removed.append(p)
            if systemd_works(env):
                _run([*_tool("systemctl", env), "--user", "daemon-reload"], env=env, check=False)
    return removed


def status(env: Mapping[str, str] | None = None) -> dict:
    """Where the job is scheduled, what it runs and whether that runs, the env file, the last run."""
    from mem.core.install import check_runs
    from mem.core.memdir.state import cron_log

    jobs, crontab_problem = scheduled(env)
    daemon = None
    for job in jobs:
        command = job["entry"].split(MARKER)[0]
        # the escapes each scheduler needs: \% in a crontab; %%, $$ in a unit
        words = _job_launcher(command.replace("\\%", "%") if job["via"] == "cron"
                              else command.replace("%%", "%").replace("$$", "$"))
        job["problem"] = check_runs(words, env) if words else "no `mem cron run` command in it"
        if job["problem"] is None and job["via"] == "cron":
            daemon = cron_daemon_running() if daemon is None else daemon
            if daemon is False:
                job["problem"] = ("no cron daemon is running here (a container or WSL?), so the line never fires: "
                                  "start one (sudo service cron start) or run mem cron run from elsewhere")
        elif job["problem"] is None and not systemd_works(env):
            job["problem"] = "systemctl --user does not answer here, so the timer never fires"
        job["runs"] = job["problem"] is None
    path = env_file(env)
    info: dict = {"path": path, "exists": os.path.exists(path)}
    if os.path.islink(path):  # run reads through it, but install refuses it: one of its own, 0600, is the rule
        info["link"] = os.readlink(path)
        info["problem"] = (f"{path} is a symbolic link (to {info['link']}); mem cron install refuses it: "
                           "replace the link with the file")
    if info["exists"]:
        info["mode"] = oct(os.stat(path).st_mode & 0o777)
        try:
            info["keys"] = sorted(read_env_file(path))
        except ConfigError as exc:
            info.setdefault("problem", str(exc))
    log = cron_log(env)
    last = last_run(log)
    backend = nightly_backend(env, via=jobs[0]["via"] if jobs else None)
    ok = (bool(jobs) and all(j["runs"] for j in jobs) and info.get("mode", "0o600") == "0o600"
          and "problem" not in info and not run_failed(last) and crontab_problem is None)
    return {"jobs": jobs, "crontab_problem": crontab_problem, "env_file": info, "backend": backend, "log": log,
            "last_run": last, "ok": ok}


#: The process names of cron daemons: Debian's cron, cronie's and busybox's crond, fcron.
CRON_DAEMONS = ("cron", "crond", "fcron")


def cron_daemon_running(proc: str = "/proc") -> bool | None:
    """Whether a cron daemon runs on this machine; None where it cannot be told (no /proc)."""
    try:
        pids = [d for d in os.listdir(proc) if d.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(os.path.join(proc, pid, "comm"), encoding="utf-8", errors="replace") as fh:
                if fh.read(64).strip() in CRON_DAEMONS:
                    return True
        except OSError:
            continue
    return False


def _job_launcher(command: str) -> list[str] | None:
    """The words before ``cron run`` in a crontab line or ExecStart, the schedule fields left out."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i in range(len(words) - 1):
        if words[i:i + 2] == ["cron", "run"]:
            return [w for w in words[:i] if not re.fullmatch(r"[\d*/,-]+", w)] if i else None
    return None


# ---------------------------------------------------------------------------------------------
# The job itself


#: Exit statuses of a nightly run that are not failures: done (0), findings reported (1), the night
#: skipped because another dream held the lock (5: the next night tries again).
FINE_EXITS = (0, 1, 5)


def run_failed(last: dict | None) -> bool:
    """Whether the last run (``last_run``) failed: ended with an exit status not in FINE_EXITS."""
    return last is not None and last["exit"] is not None and last["exit"] not in FINE_EXITS


def last_run(log: str) -> dict | None:
    """The newest run in the log: its start time and exit status (None while it runs)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
            text = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    starts = list(re.finditer(r"^== (\S+) start: (.*)$", text, re.M))
    if not starts:
        return None
    start = starts[-1]
    end = re.search(r"^== (\S+) exit (\d+)", text[start.end():], re.M)
    return {"started": start.group(1), "ended": end.group(1) if end else None,
            "exit": int(end.group(2)) if end else None}


def run(mem: list[str], *, wait: bool = False, path: str | None = None,
        env: Mapping[str, str] | None = None) -> int:
    """What the schedule runs: the env file loaded, the dream run, its output logged; the dream's exit status."""
    from mem.core.memdir.manifest import now_iso
    from mem.core.memdir.state import cron_log

    base = dict(_env(env))
    path = path or env_file(base)
    child = dict(base)
    if os.path.exists(path):
        if os.stat(path).st_mode & 0o077:
            raise ConfigError(f"{path} is readable by others; chmod 600 it (it may hold a key)")
        child.update(read_env_file(path))
    log = cron_log(child)
    os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)
    try:
        if os.path.getsize(log) > LOG_MAX_BYTES:
            os.replace(log, log + ".1")
    except FileNotFoundError:
        pass
    argv = [*mem, "dream", "--all-projects", "-q", *(["--wait"] if wait else [])]
    started = time.monotonic()
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"== {now_iso()} start: {' '.join(shlex.quote(a) for a in argv)}\n")
        out.flush()
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child)
        note = " (another dream held the lock: skipped; install with --wait to wait instead)" if proc.returncode == 5 else ""
        out.write(f"== {now_iso()} exit {proc.returncode} after {time.monotonic() - started:.1f} s{note}\n")
    return proc.returncode
