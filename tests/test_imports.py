"""Start-up budget: path, scan and index never load the model SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("anthropic", "httpx", "pydantic")

PROBE = """
import json, sys, runpy
sys.argv = ["mem"] + sys.argv[1:]
try:
    from mem.cli import cli
    cli.main(standalone_mode=False)
finally:
    sys.stdout.flush()
    mods = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
    sys.stderr.write("MODULES=" + json.dumps(mods) + "\\n")
"""


def loaded_heavy(*args: str) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *args],
        capture_output=True, text=True, env=dict(os.environ),
    )
    line = next(line for line in r.stderr.splitlines() if line.startswith("MODULES="))
    return json.loads(line[len("MODULES="):])


def test_import_mem_cli_is_light():
    code = "import sys, mem.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (HEAVY,)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_help_and_commands_do_not_import_the_sdk(memdir):
    (memdir / "MEMORY.md").write_text("- [a](a.md)\n")
    for args in (["--help"], ["path", "--json"], ["scan", "--all", "--json"], ["scan", "--check"], ["index"], ["index", "--check"], ["index", "--rebuild", "--dry-run"]):
        assert loaded_heavy(*args) == [], args


def test_sdk_is_installed_so_the_budget_test_means_something():
    import importlib.util

    assert importlib.util.find_spec("anthropic") is not None
