"""What reaches the agent's context (issue #32, third round: item 3): a file with a second hard link
(its other name may be outside the memory directory) or a NUL byte is never surfaced by recall nor
injected as the index; the files.py readers refuse them where ``for_context`` asks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from mem.cli import cli
from mem.core.memdir.files import HardLinked, NotText, read_bytes

QUERY = ["how", "do", "we", "deploy", "the", "service", "to", "production", "builds", "staging"]


def topic(name: str, description: str, body: str) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\ntype: project\n---\n\n{body}\n".encode()


@pytest.fixture
def planted(memdir, tmp_path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_notes.md").write_bytes(topic("deploy", "how we deploy the service to production",
                                                "OUTSIDE-CANARY deploy with make deploy to production."))
    os.link(outside / "id_notes.md", memdir / "project_deploy.md")
    (memdir / "project_release.md").write_bytes(
        topic("release", "how we release and deploy builds", "NUL-CANARY\0 release and deploy builds."))
    (memdir / "project_staging.md").write_bytes(
        topic("staging", "how we deploy to staging", "PLAIN-CANARY deploy to staging with make stage."))
    return memdir


def test_recall_surfaces_neither_a_hard_linked_nor_a_nul_bearing_file(planted):
    r = CliRunner().invoke(cli, ["recall", "--offline", "--force", *QUERY], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert "PLAIN-CANARY" in r.stdout
    assert "OUTSIDE-CANARY" not in r.stdout and "NUL-CANARY" not in r.stdout and "\0" not in r.stdout


def test_the_recall_hook_injects_neither(planted):
    payload = json.dumps({"prompt": " ".join(QUERY), "session_id": "s1", "cwd": "/tmp",
                          "hook_event_name": "UserPromptSubmit"})
    r = CliRunner().invoke(cli, ["recall", "--hook", "--offline"], input=payload, catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert "OUTSIDE-CANARY" not in r.stdout and "NUL-CANARY" not in r.stdout and "\\u0000" not in r.stdout


@pytest.mark.parametrize("kind", ["nul", "hard-link"])
def test_an_index_with_a_nul_byte_or_a_second_link_is_not_injected(memdir, tmp_path, kind):
    index = memdir / "MEMORY.md"
    index.write_bytes(b"- [Deploy](project_deploy.md) \xe2\x80\x94 INDEX-CANARY\n" + (b"\0\n" if kind == "nul" else b""))
    if kind == "hard-link":
        os.link(index, tmp_path / "elsewhere.md")
    payload = json.dumps({"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "startup"})
    r = CliRunner().invoke(cli, ["prompt", "--hook"], input=payload, catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert "INDEX-CANARY" not in r.stdout and "\\u0000" not in r.stdout
    assert "not read" in r.stderr


def test_the_reader_refuses_them_only_for_context(tmp_path):
    a = tmp_path / "a.md"
    a.write_bytes(b"x\0y")
    assert read_bytes(str(a)) == b"x\0y"
    with pytest.raises(NotText):
        read_bytes(str(a), for_context=True)
    b = tmp_path / "b.md"
    b.write_bytes(b"text")
    os.link(b, tmp_path / "c.md")
    with pytest.raises(HardLinked):
        read_bytes(str(b), for_context=True)
