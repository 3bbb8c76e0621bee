"""tests/e2e imports its helpers as ``tests.e2e.*``: the repository root must be importable."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
