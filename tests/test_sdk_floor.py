"""CI runs the model tests against the SDK floor that pyproject.toml declares."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "ci-sdk-floor.sh"


def test_the_floor_is_one_exact_version_the_script_can_read():
    pyproject = (ROOT / "pyproject.toml").read_text()
    floor = re.search(r'"anthropic>=(\d+\.\d+\.\d+),<\d+"', pyproject)
    assert floor, "the anthropic dependency must name its floor as X.Y.Z"
    # the first SDK whose messages.create takes output_config (recall and forget need it)
    assert tuple(map(int, floor[1].split("."))) >= (0, 77, 0)
    sed = r's/^ *"anthropic>=\([0-9.]*\),.*/\1/p'  # the script's own reading of the floor
    assert f"sed -n '{sed}' pyproject.toml" in SCRIPT.read_text()
    read = subprocess.run(["sed", "-n", sed, str(ROOT / "pyproject.toml")], capture_output=True, text=True, check=True)
    assert read.stdout.strip() == floor[1]

def test_ci_runs_the_floor_script_after_the_suite():
    assert os.access(SCRIPT, os.X_OK)
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines() if not ln.startswith("#")]
    assert "make test" in lines and "bash scripts/ci-sdk-floor.sh" in lines
    assert lines.index("bash scripts/ci-sdk-floor.sh") > lines.index("make test")
    script = SCRIPT.read_text()
    for test in ("test_llm.py", "test_recall_model.py", "test_forget.py", "test_extract.py", "test_remember.py",
                 "test_session_update.py", "test_dream_agent.py", "test_agent_loop.py"):
        assert f"tests/{test}" in script
