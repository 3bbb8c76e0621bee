"""mem eval: labelled cases and cases mined from recorded sessions, offline and through the model path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from mem.core.memdir.store import MemoryDir
from mem.cli import cli
from mem.core import evaluate, recall
from mem.clients.claude import transcripts_dir

EXAMPLES = Path(__file__).parent.parent / "examples" / "memory"
#: Where the recorded session's memory directory was on the recording machine.
RECORDED_MEMDIR = "/home/dev/cc-run/home/.claude/projects/-home-dev-cc-run-repo/memory/"

CASES = [
    {"query": "how should I write the integration tests", "relevant": ["feedback_testing.md"]},
    {"query": "which grafana dashboard shows latency?", "relevant": ["reference_grafana.md"]},
    {"query": "can I merge my refactor next week?", "relevant": ["project_merge_freeze.md"]},
    {"query": "write a haiku about autumn leaves", "relevant": []},
]


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def examples(tmp_path):
    d = tmp_path / "examples"
    shutil.copytree(EXAMPLES, d)
    return d


@pytest.fixture
def cases_file(tmp_path):
    p = tmp_path / "cases.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    return p


def test_labelled_cases_on_the_example_directory(examples, cases_file):
    r = run("eval", "--dir", str(examples), "--json", str(cases_file))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["cases"] == 4 and [s["selector"] for s in doc["selectors"]] == ["offline"]
    (off,) = doc["selectors"]
    assert off["with_relevant"] == 3 and off["without_relevant"] == 1
    # What the ranker selects for each case, and the figures from those selections.
    got = {c["query"]: c["selected"] for c in off["results"]}
    assert got[CASES[0]["query"]][0] == "feedback_testing.md"
    assert got[CASES[1]["query"]][0] == "reference_grafana.md"
    assert got[CASES[3]["query"]] == []
    hits = sum(got[c["query"]][:1] == c["relevant"] for c in CASES[:3])
    assert off["top1_precision"] == pytest.approx(hits / 3)
    assert off["no_result_precision"] == 1.0 and off["false_surface"] == 0.0
    assert off["paths"] == {"offline": 4}
    assert off["median_ms"] > 0
    assert "no API key" in r.stderr

    text = run("eval", "--dir", str(examples), str(cases_file))
    header, row = text.stdout.splitlines()[:2]
    assert header.split()[:6] == ["selector", "cases", "Recall@5", "top-1", "no-result", "median"]
    assert row.split()[:2] == ["offline", "3+1"]


def test_cases_from_stdin_and_bad_cases(examples):
    r = run("eval", "--dir", str(examples), "--offline", "-", input=json.dumps(CASES[0]) + "\n")
    assert r.exit_code == 0 and r.stdout.startswith("selector")
    bad = json.dumps(CASES[0]) + "\n{not json\n"
    r = run("eval", "--dir", str(examples), "-", input=bad)
    assert r.exit_code == 2 and r.stderr.startswith("mem: error: <stdin>:2: not JSON")
    r = run("eval", "--dir", str(examples), "-", input='{"query": "x", "relevant": "a.md"}\n')
    assert r.exit_code == 2 and '"relevant" must be a list' in r.stderr
    r = run("eval", "--dir", str(examples))
    assert r.exit_code == 2 and "CASES" in r.stderr
    r = run("eval", "--dir", str(examples), "-", input="\n")
    assert r.exit_code == 1 and "no cases" in r.stderr
    r = run("eval", "--dir", str(examples), "-", input='{"query": "tabs", "relevant": ["gone.md"]}\n')
    assert r.exit_code == 0 and "not memories of" in r.stderr and "gone.md" in r.stderr


def test_the_model_selector_runs_through_the_recall_model_path(examples, cases_file, fake_api):
    # The local server can only check the plumbing: it answers what the test scripts.
    def answer(body):
        query = body["messages"][0]["content"][1]["text"]
        if "grafana" in query:
            return 500, {"type": "error", "error": {"type": "api_error", "message": "down"}}
        pick = [] if "haiku" in query else ["feedback_testing.md"]
        from fakeapi import message

        return message([{"type": "text", "text": json.dumps({"selected_memories": pick})}])

    fake_api.respond_with(answer)
    r = run("eval", "--dir", str(examples), "--json", "--timeout", "20", str(cases_file))
    assert r.exit_code == 0, r.stderr
    off, model = json.loads(r.stdout)["selectors"]
    assert off["selector"] == "offline" and model["selector"] == "model"
    assert off["paths"] == {"offline": 4}
    # the failed call fell back to the ranker, as mem recall does, and says so
    assert sum(model["paths"].values()) == 4 and model["paths"]["model"] == 3
    assert [k for k in model["paths"] if k != "model"][0].startswith("offline (")
    got = {c["query"]: c["selected"] for c in model["results"]}
    assert got[CASES[0]["query"]] == ["feedback_testing.md"]
    assert got[CASES[2]["query"]] == ["feedback_testing.md"]  # the model's (wrong) pick is scored as given
    assert got[CASES[3]["query"]] == []
    assert model["no_result_precision"] == 1.0
    assert fake_api.requests, "the model was called"
    r = run("eval", "--dir", str(examples), "--offline", "--json", str(cases_file))
    assert [s["selector"] for s in json.loads(r.stdout)["selectors"]] == ["offline"]


# --- cases from a recorded session ---------------------------------------------------------


def _recorded_session(memdir: Path, tmp_path: Path) -> Path:
    """The recorded Claude Code session in which the user asked to remember a preference, its
    memory directory as the session left it, and two more turns in the same recorded line shapes:
    one in which the agent reads the memory, one in which the recall hook showed it."""
    shutil.copytree(FIXTURES / "claude-code-05" / "memory-dir-after", memdir)
    raw = (FIXTURES / "transcripts" / "claude-code-05-tool-use-write-memory.jsonl").read_text(encoding="utf-8")
    raw = raw.replace(RECORDED_MEMDIR, str(memdir) + "/")
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    prompt = next(o for o in lines if o.get("type") == "user" and isinstance(o["message"]["content"], str))
    call = next(o for o in lines if o.get("type") == "assistant"
                and o["message"]["content"][0].get("type") == "tool_use")
    shown = next(o for o in lines if o.get("type") == "attachment"
                 and o["attachment"].get("hookEvent") == "UserPromptSubmit")

    def user(text):
        return {**prompt, "uuid": f"u-{len(lines)}", "message": {"role": "user", "content": text}}

    read = json.loads(json.dumps(call))
    read["uuid"] = "a-read"
    read["message"]["content"][0].update(name="Read", input={"file_path": str(memdir / "user-prefers-tabs.md")})
    lines += [user("should this Go file use tabs or spaces for indentation?"), read]
    lines.append(user("which indentation do I prefer in Python files?"))
    context = recall.recall(MemoryDir(memdir), "which indentation do I prefer: tabs", offline=True, force=True).context()
    assert "user-prefers-tabs.md" in context
    lines.append({**shown, "uuid": "h-shown", "attachment": {**shown["attachment"], "content": [context]}})
    lines.append(user("thanks, that is all"))  # nothing read or shown after it: no case
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


def test_cases_from_a_recorded_session(tmp_path):
    memdir = tmp_path / "memory"
    session = _recorded_session(memdir, tmp_path)
    cases = evaluate.cases_from_transcripts([str(session)], MemoryDir(memdir), ["user-prefers-tabs.md"])
    # The first prompt's memory was written, not read: it is not a case.
    assert [(c.query, c.relevant) for c in cases] == [
        ("should this Go file use tabs or spaces for indentation?", ["user-prefers-tabs.md"]),
        ("which indentation do I prefer in Python files?", ["user-prefers-tabs.md"]),
    ]
    assert cases[0].source.startswith(str(session) + ":")


def test_eval_from_the_project_transcripts(tmp_path, monkeypatch):
    project = tmp_path / "repo"
    project.mkdir()
    memdir = tmp_path / "memory"
    session = _recorded_session(memdir, tmp_path)
    where = Path(transcripts_dir(str(project)))
    where.mkdir(parents=True)
    shutil.copy(session, where / "5e55-recorded.jsonl")
    monkeypatch.chdir(project)

    r = run("eval", "--dir", str(memdir), "--from-transcripts", "--print-cases")
    assert r.exit_code == 0, r.stderr
    printed = [json.loads(line) for line in r.stdout.splitlines()]
    assert [c["relevant"] for c in printed] == [["user-prefers-tabs.md"]] * 2
    assert all(c["source"].startswith(str(where)) for c in printed)

    r = run("eval", "--dir", str(memdir), "--from-transcripts", "--json")
    (off,) = json.loads(r.stdout)["selectors"]
    assert off["cases"] == 2 and off["recall_at_5"] is not None and off["no_result_precision"] is None
    # a transcript named on the command line, and a session with nothing read in it
    r = run("eval", "--dir", str(memdir), "--from-transcripts", str(session), "--offline")
    assert r.exit_code == 0 and r.stdout.startswith("selector")
    empty = tmp_path / "empty.jsonl"
    shutil.copy(FIXTURES / "transcripts" / "claude-code-01-hello.jsonl", empty)
    r = run("eval", "--dir", str(memdir), "--from-transcripts", str(empty))
    assert r.exit_code == 1 and "no prompt was followed by a memory file" in r.stderr
    r = run("eval", "--dir", str(memdir), "--from-transcripts", str(tmp_path / "nowhere"))
    assert r.exit_code == 1 and "no transcripts: looked in" in r.stderr and str(tmp_path / "nowhere") in r.stderr


def test_qwen_hook_context_in_the_prompt_counts_as_shown(tmp_path):
    memdir = tmp_path / "memory"
    shutil.copytree(FIXTURES / "claude-code-05" / "memory-dir-after", memdir)
    raw = (FIXTURES / "transcripts" / "qwen-code-05-tool-use-write-memory.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    first = next(o for o in lines if o.get("type") == "user")
    context = f"&lt;system-reminder>\nMemory (saved today): {memdir}/user-prefers-tabs.md:\n\ntabs\n</system-reminder>"
    later = {**first, "uuid": "q-later", "message": {"role": "user", "parts": [
        {"text": "how should I indent this file?"}, {"text": context}]}}
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in [*lines, later]), encoding="utf-8")
    cases = evaluate.cases_from_transcripts([str(path)], MemoryDir(memdir), ["user-prefers-tabs.md"])
    assert [(c.query, c.relevant) for c in cases] == [("how should I indent this file?", ["user-prefers-tabs.md"])]
