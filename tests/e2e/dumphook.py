"""A hook command that records its stdin payload (one file per call) and prints nothing."""

import json
import os
import sys
import time

out = sys.argv[1]
raw = sys.stdin.read()
try:
    data = json.loads(raw)
except ValueError:
    data = None
event = data.get("hook_event_name", "unknown") if isinstance(data, dict) else "unknown"
name = f"{time.time_ns()}-{os.getpid()}-{event}.json"
with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
    json.dump({"event": event, "stdin": data, "stdin_raw": raw}, fh, ensure_ascii=False, indent=1)
