"""A dream that fails while others write takes back only what it wrote itself.

The first version restored a snapshot of the whole directory: memories saved
while the dream ran were deleted (7-15 of 45-48 concurrent saves in a test).

The dream runs in a child forked from the test process (tests/helpers/forked.py) with the SDK loaded:
a process of its own that the saves race, without a Python start-up and an import of anthropic.
"""

from __future__ import annotations

import os
import threading
import time

from conftest import write_memory
from fakeapi import error_body
from helpers import forked


def test_saves_made_while_a_dream_fails_all_stay(memdir, fake_api, run_mem):
    import anthropic  # noqa: F401 - loaded once here, not again in the dream's process

    write_memory(memdir, "a.md", name="a", description="first memory", body="Alpha.\n")
    write_memory(memdir, "b.md", name="b", description="second memory", body="Beta.\n")
    (memdir / "MEMORY.md").write_text("- [a](a.md) — first memory\n- [b](b.md) — second memory\n")
    dream_file = "---\nname: dream\ndescription: written by the dream\ntype: project\n---\n\nMerged.\n"
    fake_api.reply_tool_uses(("write", {"file_path": "dream-made.md", "content": dream_file}),
                             ("delete", {"file_path": "b.md"}))
    saves_done = threading.Event()
    # the call and its two retries: overloaded, the first once the others have saved
    for delay in (saves_done, 0, 0):
        fake_api.reply(error_body("overloaded_error", "Overloaded"), status=529, delay=delay)
    env = {**os.environ, "ANTHROPIC_BASE_URL": fake_api.url}
    dream = forked.Forked(["dream", "--force"], env=env)
    deadline = time.monotonic() + 30
    while not (memdir / "dream-made.md").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (memdir / "dream-made.md").exists(), "the dream's first turn did not run"
    saved = []
    for i in range(12):
        name = f"saved meanwhile {i}"
        r = run_mem("remember", "--offline", "--type", "project", "--name", name,
                    "--description", f"note {i} saved while the dream ran", f"Fact number {i}.", env=env)
        assert r.returncode == 0, r.stderr
        saved.append(r.stdout.strip())
        assert run_mem("log", f"entry {i}", env=env).returncode == 0
        if i == 2:
            assert dream.poll() is None, "the saves must overlap the dream"
    saves_done.set()
    done = dream.wait(timeout=60)
    err = done.stderr
    assert done.returncode == 70 and "529" in err, err
    # the dream's own changes are taken back ...
    assert not (memdir / "dream-made.md").exists() and (memdir / "b.md").read_text().endswith("Beta.\n")
    # ... and nothing anyone else wrote meanwhile is lost
    for path in saved:
        assert os.path.exists(path), path
    index = (memdir / "MEMORY.md").read_text()
    assert all(os.path.basename(p) in index for p in saved)
    logs = "".join(p.read_text() for p in (memdir / "logs").rglob("*.md"))
    assert all(f"entry {i}" in logs for i in range(12))
