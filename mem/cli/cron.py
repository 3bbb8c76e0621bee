"""mem cron: schedule the nightly mem dream --all-projects (a systemd user timer, or a crontab line)."""

from __future__ import annotations

import click

from mem import render
from mem.cli.common import format_options

VIA = ("auto", "systemd", "cron")


@click.group("cron")
def cron_cmd() -> None:
    """Schedule, remove or check the nightly dream of all projects.

    The job runs `<absolute path of mem> cron run`: it loads
    ~/.config/mem/cron.env, runs `mem dream --all-projects -q` and appends the
    output to cron.log in the state directory.

    \b
    Example:
      mem cron install
      mem cron status
    """


@cron_cmd.command("install")
@click.option("--at", "at", default="04:30", show_default=True, metavar="HH:MM", help="Local time of the nightly run.")
@click.option("--via", type=click.Choice(VIA), default="auto", show_default=True,
              help="A systemd user timer, a crontab line, or auto: systemd when `systemctl --user` works.")
@click.option("--wait", is_flag=True, help="Have the job wait for a dream already running instead of skipping the night (exit 5).")
@click.option("--with-key", is_flag=True,
              help="Copy ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) from here into the 0600 environment file.")
@click.option("--mem", "mem_path", metavar="PATH", help="The mem the job runs (default: the one running this command).")
@click.option("--dry-run", is_flag=True,
              help="Print the crontab line or unit and the environment file it would write; write nothing; "
                   "exit 1 if it would change anything.")
@format_options
def install_cmd(at: str, via: str, wait: bool, with_key: bool, mem_path: str | None, dry_run: bool, fmt: str) -> int:
    """Schedule `mem cron run` every night; a second install changes nothing.

    The API key never goes into the crontab or a unit file: the job reads
    it from ~/.config/mem/cron.env (created mode 0600; --with-key writes the
    current one into it; without it, no key is stored). The job's dream
    finds its model as `mem model` does, in the job's own environment (the
    file, HOME's Claude Code and qwen-code settings, the scheduler's PATH):
    install and `mem cron status` name the backend it will use, and with none
    the dream runs its mechanical mode.

    \b
    Example:
      mem cron install --at 03:15
      ANTHROPIC_API_KEY=sk-... mem cron install --with-key
    """
    from mem.core import cron
    from mem.core.install import mem_words

    cron.parse_time(at)
    words = mem_words(mem_path)
    env_path, text = cron.env_file_text(with_key=with_key)  # refuses a bad value before anything is written
    if dry_run:
        result = cron.plan(words, at=at, via=via, wait=wait)
        if fmt != "text":
            render.out_record({**result.as_dict(), "env_file_written": text is not None}, fmt)
        else:
            verb = "would schedule" if result.changed else "already scheduled"
            render.out(f"{verb} nightly at {at} via {result.via} ({result.where}): {result.entry}")
            if text is not None:
                render.out(f"would write {env_path} (mode 0600), its variables: "
                           + (", ".join(cron.variables(text)) or "none"))
        return 1 if result.changed or text is not None else 0
    result = cron.install(words, at=at, via=via, wait=wait)  # a failure here leaves no env file behind
    env_path, written = cron.ensure_env_file(with_key=with_key)
    backend = cron.nightly_backend(via=result.via)
    if fmt != "text":
        render.out_record({**result.as_dict(), "env_file_written": written, "backend": backend}, fmt)
        return 0
    if result.changed:
        render.info(f"scheduled nightly at {at} via {result.via} ({result.where}): {result.entry}")
    else:
        render.info(f"already scheduled via {result.via} ({result.where})")
    render.info(f"environment: {env_path} (mode 0600){' written' if written else ''}; log: {result.log}")
    render.info(f"backend: {_backend_line(backend)}")
    return 0


@cron_cmd.command("uninstall")
@click.option("--via", type=click.Choice(VIA), default="auto", show_default=True,
              help="Remove only the crontab line or only the systemd units (auto: both).")
@click.option("--dry-run", is_flag=True, help="Print what would be removed; remove nothing; exit 1 if anything would be.")
def uninstall_cmd(via: str, dry_run: bool) -> int:
    """Remove mem's crontab line and systemd units, and nothing else; the environment file stays.

    \b
    Example:
      mem cron uninstall
    """
    from mem.core import cron

    removed = cron.uninstall(via=via, dry_run=dry_run)
    if dry_run:
        for what in removed:
            render.out(f"would remove {what}")
        return 1 if removed else 0
    render.info("removed " + ", ".join(removed) if removed else "no nightly job of mem's was scheduled")
    return 0


def _backend_line(b: dict) -> str:
    """The nightly dream's backend, model and credentials' source, or why it runs mechanically."""
    if not b["backend"]:
        return f"none: {b['reason']}"
    return f"{b['backend']}  {b['model']}  {b['credentials']}"


@cron_cmd.command("status")
@format_options
def status_cmd(fmt: str) -> int:
    """Where the nightly job is scheduled, whether the mem it names runs, the environment file, the last run.

    Exit 1 when no job is scheduled, the mem it names does not run, no cron
    daemon runs for a crontab line (containers, WSL) or systemctl --user
    does not answer for a timer, the crontab cannot be read (crontab -l
    fails: the line may be there, unseen; --json: crontab_problem), the
    environment file is readable by others or a symbolic link, or the last
    run failed.

    \b
    Example:
      mem cron status
      mem cron status --json | jq .last_run
    """
    from mem.core import cron

    report = cron.status()
    env = report["env_file"]
    last = report["last_run"]
    ok = report["ok"]
    if fmt != "text":
        render.out_record(report, fmt)
        return 0 if ok else 1
    for job in report["jobs"]:
        state = "runs" if job["runs"] else f"DOES NOT RUN: {job['problem']}"
        render.out(f"{job['via']}  {job['entry']}  {state}")
    if report["crontab_problem"]:
        render.out(f"crontab  could not be read: {report['crontab_problem']}")
    elif not report["jobs"]:
        render.out("not scheduled (mem cron install)")
    if env["exists"]:
        keys = ", ".join(env.get("keys") or []) or "no variables"
        render.out(f"environment  {env['path']}  mode {env['mode'][2:]}  {env.get('problem') or keys}")
    elif env.get("problem"):  # a link to nothing
        render.out(f"environment  {env['path']}  {env['problem']}")
    else:
        render.out(f"environment  {env['path']}  missing")
    render.out(f"backend  {_backend_line(report['backend'])}")
    if last:
        end = f"exit {last['exit']} at {last['ended']}" if last["exit"] is not None else "still running"
        render.out(f"last run  {last['started']}  {end}  ({report['log']})")
    else:
        render.out(f"last run  never  ({report['log']})")
    return 0 if ok else 1


@cron_cmd.command("run")
@click.option("--wait", is_flag=True, help="Wait for a dream already running instead of exiting 5.")
@click.option("--env-file", metavar="FILE", type=click.Path(dir_okay=False),
              help="KEY=VALUE lines to add to the environment (default: ~/.config/mem/cron.env).")
def run_cmd(wait: bool, env_file: str | None) -> int:
    """What the schedule runs: load the environment file, dream every project, log it.

    Appends a start line, the dream's output and an exit line to cron.log in
    the state directory; exits with the dream's status (5: another dream
    held the lock, so this night was skipped).

    \b
    Example:
      mem cron run && tail -3 ~/.local/state/mem/cron.log
    """
    from mem.core import cron
    from mem.core.install import running_mem

    return cron.run(running_mem(), wait=wait, path=env_file)
