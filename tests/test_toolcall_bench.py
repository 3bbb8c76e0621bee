"""bench/toolcall.py: the newest blind split not yet spent counts for the goals; every earlier one is tuning data."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "bench"))  # after the standard library: a bench module must never shadow one of its modules

import toolcall  # noqa: E402


def test_the_newest_blind_file_is_the_goal_split_and_every_earlier_one_is_tuning_data(tmp_path, monkeypatch):
    bench = ROOT / "tests" / "fixtures" / "toolcall-bench"
    shutil.copy(bench / "calls.json", tmp_path / "calls.json")
    shutil.copytree(bench / "memories", tmp_path / "memories")
    monkeypatch.setattr(toolcall, "BENCH", str(tmp_path))
    calls = toolcall.load_calls()
    assert {c["split"] for c in calls} == set(toolcall.CALLS_SPLITS)
    assert toolcall.goal_split(calls) == "heldout" and not toolcall.is_blind("heldout")
    spent = [{"id": "s001", "split": "whatever", "tool_name": "Bash", "tool_input": {"command": "git push --force"},
              "relevant": ["feedback_no_force_push.md"]}]
    (tmp_path / "calls-heldout-3.json").write_text(json.dumps(spent), encoding="utf-8")
    calls = toolcall.load_calls()
    assert [c["id"] for c in calls if c["split"] == "heldout-3"] == ["s001"]
    assert toolcall.goal_split(calls) == "heldout-3" and not toolcall.is_blind("heldout-3")  # spent: tuning data
    assert toolcall.tuning_splits(calls) == ["tune", "heldout-1", "heldout", "heldout-3"]
    (tmp_path / "calls-heldout-4.json").write_text(json.dumps([{**spent[0], "id": "s002"}]), encoding="utf-8")
    calls = toolcall.load_calls()
    assert toolcall.goal_split(calls) == "heldout-4" and not toolcall.is_blind("heldout-4")  # spent too
    blind = [{**spent[0], "id": "b001"}]
    (tmp_path / "calls-heldout-5.json").write_text(json.dumps(blind), encoding="utf-8")
    calls = toolcall.load_calls()
    assert toolcall.goal_split(calls) == "heldout-5" and toolcall.is_blind("heldout-5")
    assert toolcall.tuning_splits(calls) == ["tune", "heldout-1", "heldout", "heldout-3", "heldout-4"]
    text, overall = toolcall.table(calls, toolcall.surfaced_for(calls))
    assert "| heldout-5 | **all** | 1 |" in text and overall["heldout-5"]["recall"] == 1.0


def test_cross_validation_never_sees_the_blind_split(tmp_path, monkeypatch):
    monkeypatch.setattr(toolcall, "GRID", [(2.0, 2)])
    calls = [c for c in toolcall.load_calls() if c["split"] not in ("heldout-3", "heldout-4")][:12]
    blind = [{**calls[0], "id": "b001", "split": "heldout-5", "relevant": []}]
    text, pooled = toolcall.cross_validate(calls + blind)
    assert "heldout-5" not in text and pooled["calls"] == len(calls)


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
