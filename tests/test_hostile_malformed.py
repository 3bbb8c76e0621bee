"""Malformed inputs are refused with their own exit code, never 70 (issue #32, third round: item 3).

Found by fuzzing each command's inputs (archives, eval cases, hook payloads, settings) with
malformed shapes: a manifest path that is a number, an mtime of NaN or 1e300, JSON nested
100,000 deep, settings that are not UTF-8, a transcript path with a NUL byte or naming a directory.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from mem.cli import cli

GOOD = b"---\nname: a\ndescription: d\ntype: user\n---\n\nbody\n"
SHA = hashlib.sha256(GOOD).hexdigest()
DEEP = "[" * 100_000 + "]" * 100_000


def mem(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def archive(path: Path, manifest: bytes, files: dict[str, bytes]) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in [("mem-manifest.json", manifest), *(("memory/" + k, v) for k, v in files.items())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(raw.getvalue()))
    return path


def manifest(**entry) -> bytes:
    return json.dumps({"format": "mem-export", "version": 1, "files": [{"sha256": SHA, **entry}]}).encode()


MANIFESTS = {
    "path-is-a-number": (manifest(path=5), 4),
    "mtime-nan": (manifest(path="a.md").replace(b'"sha256"', b'"mtime": NaN, "sha256"'), 0),
    "mtime-1e300": (manifest(path="a.md", mtime=1e300), 0),
    "nested-100000-deep": (DEEP.encode(), 4),
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_a_malformed_manifest_is_refused_or_its_bad_mtime_ignored(memdir, tmp_path, case):
    data, code = MANIFESTS[case]
    r = mem("import", str(archive(tmp_path / "a.tar.gz", data, {"a.md": GOOD})))
    assert r.exit_code == code, (r.stdout, r.stderr)
    if code == 4:
        assert "not a mem export manifest" in r.stderr
    else:
        assert (memdir / "a.md").read_bytes() == GOOD


def test_eval_cases_nested_too_deep(memdir, tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(DEEP + "\n")
    r = mem("eval", "--offline", str(cases))
    assert r.exit_code == 2 and "nested too deep" in r.stderr, r.stderr


@pytest.mark.parametrize("shape", ["deep", "not-utf8"])
def test_settings_that_cannot_be_read_as_json(memdir, tmp_path, monkeypatch, shape):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    settings = home / ".claude" / "settings.json"
    settings.write_bytes(DEEP.encode() if shape == "deep" else b"\xff\xfe{}")
    r = mem("hooks", "install")
    assert r.exit_code == 4 and str(settings) in r.stderr, r.stderr
    assert mem("status").exit_code == 0
    r = mem("status", "--settings", str(settings))
    assert r.exit_code == 2, r.stderr


def test_a_hook_payload_nested_too_deep_is_not_an_internal_error(memdir):
    r = mem("prompt", "--hook", input=DEEP)
    assert r.exit_code == 0 and "nested too deep" in r.stderr and "RecursionError" not in r.stderr, r.stderr


@pytest.mark.parametrize("transcript", ["/tmp/\u0000x", "/tmp"])
def test_session_update_with_a_transcript_that_is_no_file(memdir, transcript):
    payload = json.dumps({"session_id": "s1", "cwd": "/tmp", "transcript_path": transcript,
                          "hook_event_name": "Stop"})
    r = mem("session", "update", "--hook", input=payload)
    assert "Error:" not in r.stderr and "cannot read the transcript" in r.stderr, r.stderr
