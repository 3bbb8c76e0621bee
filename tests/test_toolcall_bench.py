"""bench/toolcall.py: the blind split heldout-3 counts for the goals once its file is there, and not before."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import toolcall  # noqa: E402


def test_the_blind_split_is_loaded_when_present_and_is_the_goal_split(tmp_path, monkeypatch):
    bench = ROOT / "tests" / "fixtures" / "toolcall-bench"
    shutil.copy(bench / "calls.json", tmp_path / "calls.json")
    shutil.copytree(bench / "memories", tmp_path / "memories")
    monkeypatch.setattr(toolcall, "BENCH", str(tmp_path))
    calls = toolcall.load_calls()
    assert {c["split"] for c in calls} == set(toolcall.TUNING)
    assert toolcall.goal_split(calls) == "heldout"
    blind = [{"id": "b001", "split": "whatever", "kind": "bash", "lang": "en", "client": "claude", "tool_name": "Bash",
              "tool_input": {"command": "git push --force"}, "relevant": ["feedback_no_force_push.md"]}]
    (tmp_path / "calls-heldout-3.json").write_text(json.dumps(blind), encoding="utf-8")
    calls = toolcall.load_calls()
    assert [c["id"] for c in calls if c["split"] == "heldout-3"] == ["b001"]
    assert toolcall.goal_split(calls) == "heldout-3"
    text, overall = toolcall.table(calls, toolcall.surfaced_for(calls))
    assert "| heldout-3 | **all** | 1 |" in text and overall["heldout-3"]["recall"] == 1.0


def test_cross_validation_never_sees_the_blind_split(tmp_path, monkeypatch):
    monkeypatch.setattr(toolcall, "GRID", [(2.0, 2)])
    calls = [c for c in toolcall.load_calls() if c["split"] != "heldout-3"][:12]
    blind = [{**calls[0], "id": "b001", "split": "heldout-3", "relevant": []}]
    text, pooled = toolcall.cross_validate(calls + blind)
    assert "heldout-3" not in text and pooled["calls"] == len(calls)


def test_a_blind_call_whose_id_repeats_one_of_calls_json_keeps_its_own_result(tmp_path, monkeypatch):
    bench = ROOT / "tests" / "fixtures" / "toolcall-bench"
    shutil.copy(bench / "calls.json", tmp_path / "calls.json")
    shutil.copytree(bench / "memories", tmp_path / "memories")
    monkeypatch.setattr(toolcall, "BENCH", str(tmp_path))
    blind = [{"id": "t001", "tool_name": "Bash", "tool_input": {"command": "git status"}, "relevant": []}]
    (tmp_path / "calls-heldout-3.json").write_text(json.dumps(blind), encoding="utf-8")
    calls = toolcall.load_calls()
    got = toolcall.surfaced_for(calls)
    assert got["t001"] == ["feedback_no_force_push.md"] and got["heldout-3/t001"] == []
    text, overall = toolcall.table(calls, got)  # a call without kind, lang or client is in no slice but "all"
    assert overall["heldout-3"]["false_surface"] == 0.0
