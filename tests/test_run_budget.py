"""A job run's spending cap: --budget / MEM_BUDGET_<JOB>, checked before every request, a clean stop.

The greedy readers below never stop asking to read a 36 KB file; each run must end at its cap
with what it wrote kept and the memory directory valid, against the local Messages-API server and
the local chat-completions server (with and without usage in its answers).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import write_memory

A = "---\nname: deploy-day\ndescription: deploys happen on fridays\ntype: project\n---\n\nDeploys happen on Fridays.\n"
B = "---\nname: deploy-day-2\ndescription: deploy on friday afternoons\ntype: project\n---\n\nWe deploy Friday afternoons.\n"
MERGED = ("---\nname: deploy-day\ndescription: deploys happen on Friday afternoons\ntype: project\n---\n\n"
          "Deploys happen on Friday afternoons.\n")
INDEX = "- [Deploy day](a.md) — Friday afternoons\n- [Notes](notes.md) — ETL\n"


def seeded(memdir: Path) -> Path:
    (memdir / "a.md").write_text(A)
    (memdir / "b.md").write_text(B)
    notes = "".join(f"{i:05d} the nightly ETL reads from the replica; the runbook says so in step {i % 13}.\n"
                    for i in range(480))
    write_memory(memdir, "notes.md", name="notes", description="long ETL notes", type="reference", body=notes)
    (memdir / "MEMORY.md").write_text("- [Deploy day](a.md) — fridays\n- [Deploy 2](b.md) — friday\n"
                                      "- [Notes](notes.md) — ETL\n")
    return memdir


def assert_valid(run_mem, memdir: Path) -> None:
    """No temp file left, every pointer leads to a topic file and every topic file has one, lint clean."""
    names = sorted(p.relative_to(memdir).as_posix() for p in memdir.rglob("*")
                   if p.is_file() and p.name != ".consolidate-lock")
    assert all(n.endswith(".md") for n in names), names
    pointers = re.findall(r"\]\(([^)]+)\)", (memdir / "MEMORY.md").read_text())
    assert sorted(pointers) == sorted(n for n in names if n != "MEMORY.md")
    assert run_mem("index", "--check").returncode == 0
    r = run_mem("lint")
    assert r.returncode == 0, r.stdout + r.stderr


def events(kind: str) -> list[dict]:
    from mem.core.memdir.events import events_path

    lines = Path(events_path()).read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["command"] == kind]


# --- the syntax ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, caps", [
    ("500k", (500_000, 7)),
    ("1.5M", (1_500_000, 7)),
    ("20000", (20_000, 7)),
    ("in=1M,out=50k", (1_000_000, 50_000)),
    ("out=2k", (3, 2_000)),
    (" in = 2M , out = none ", (2_000_000, None)),
    ("none", (None, None)),
])
def test_budget_syntax(text, caps):
    from mem.core.jobs.budget import Caps, parse_budget

    assert parse_budget(text, Caps(3, 7)) == caps


@pytest.mark.parametrize("text", ["", "0", "-5k", "1.5k5", "12kb", "1G", "in=", "in=1M,in=2M", "input=1M",
                                  "in=1M;out=5k", "0.0001k", "1e6", "in=1M,", "k"])
def test_bad_budgets_are_refused(text):
    from mem.core.jobs.budget import parse_budget

    with pytest.raises(ValueError) as exc:
        parse_budget(text)
    assert "\n" not in str(exc.value)


def test_every_size_with_two_decimals_is_a_whole_number_of_tokens():
    from mem.core.jobs.budget import parse_budget

    for unit, size in (("k", 1_000), ("M", 1_000_000)):
        for hundredths in range(1, 1_000):
            text = f"{hundredths // 100}.{hundredths % 100:02d}{unit}"
            assert parse_budget(text).input == hundredths * size // 100, text
    with pytest.raises(ValueError, match="whole number"):
        parse_budget("0.0005k")


def test_the_option_wins_over_the_environment_which_wins_over_the_default():
    from mem.core.jobs.budget import Caps, caps_for

    default = Caps(1_000_000, 100_000)
    env = {"MEM_BUDGET_DREAM": "in=300k"}
    assert caps_for("dream", None, default, {}) == (default, "default")
    assert caps_for("dream", None, default, env) == (Caps(300_000, 100_000), "MEM_BUDGET_DREAM")
    assert caps_for("dream", "2M", default, env) == (Caps(2_000_000, 100_000), "--budget")
    with pytest.raises(ValueError, match="^MEM_BUDGET_DREAM: "):
        caps_for("dream", None, default, {"MEM_BUDGET_DREAM": "lots"})


def test_a_request_is_refused_before_it_would_go_over_and_its_output_is_capped():
    from mem.core.jobs.budget import Caps, Spend

    spend = Spend(Caps(10_000, 1_000))
    assert spend.allow(4_000, 8_192) == 1_000  # max_tokens lowered to the output left
    spend.charge({"input_tokens": 3_000, "cache_read_input_tokens": 1_000, "output_tokens": 900})
    assert (spend.input, spend.output) == (4_000, 900)
    assert spend.allow(6_000, 8_192) is None and spend.stopped == "output"  # 100 left: too few to answer
    spend = Spend(Caps(10_000, None))
    spend.charge({"input_tokens": 4_000, "output_tokens": 10})
    assert spend.allow(6_000, 8_192) == 8_192 and spend.allow(6_001, 8_192) is None and spend.stopped == "input"


@pytest.mark.parametrize("command", ["dream", "extract"])
@pytest.mark.parametrize("value, why", [("5x", "bad token count '5x'"), ("in=0", "at least 1"),
                                        ("in=1M,upload=3", "bad budget part 'upload=3'")])
def test_the_cli_refuses_a_bad_budget_in_one_line(run_mem, memdir, fake_api, command, value, why):
    r = run_mem(command, "--budget", value, *(["--force"] if command == "dream" else []))
    assert r.returncode == 2 and r.stdout == ""
    assert "--budget" in r.stderr and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert fake_api.requests == []


def test_a_bad_environment_budget_is_a_configuration_error(run_mem, memdir, fake_api):
    seeded(memdir)
    before = {p.name: p.read_bytes() for p in memdir.iterdir()}
    r = run_mem("dream", "--force", env={"MEM_BUDGET_DREAM": "plenty"})
    assert r.returncode == 3 and "MEM_BUDGET_DREAM" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert fake_api.requests == [] and {p.name: p.read_bytes() for p in memdir.iterdir()} == before


# --- a greedy dream ------------------------------------------------------------------------------


def greedy_dream_against_anthropic(fake_api):
    from fakeapi import message, tool_use_block

    fake_api.reply_tool_uses(("read", {"file_path": "MEMORY.md"}), ("read", {"file_path": "a.md"}),
                             ("read", {"file_path": "b.md"}))
    fake_api.reply_tool_uses(("write", {"file_path": "a.md", "content": MERGED}),
                             ("delete", {"file_path": "b.md", "merged_into": "a.md"}),
                             ("write", {"file_path": "MEMORY.md", "content": INDEX}))
    fake_api.respond_with(lambda body: message([tool_use_block("read", {"file_path": "notes.md"}) for _ in range(2)],
                                               stop_reason="tool_use"))


def test_a_greedy_dream_stops_at_its_budget_with_the_directory_valid(run_mem, memdir, fake_api):
    seeded(memdir)
    greedy_dream_against_anthropic(fake_api)
    r = run_mem("dream", "--force", "--json", "--budget", "in=150k,out=50k")
    assert r.returncode == 6, r.stderr
    doc = json.loads(r.stdout)
    assert doc["stopped_at_budget"] is True and doc["budget"]["stopped"] == "input"
    assert doc["budget"]["source"] == "--budget" and doc["budget"]["input_tokens"] == 150_000
    # the server's own counts, summed: never over the cap (nor the consolidation round's 90 % of it)
    counted = sum(q["input_tokens"] for q in fake_api.requests)
    assert counted == doc["budget"]["spent_input_tokens"] <= 135_000
    assert 3 < len(fake_api.requests) < 40 and {q["status"] for q in fake_api.requests} == {200}
    # what it did before the cap is kept, validated, and one operation of the history
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    assert doc["updated"] == ["MEMORY.md", "a.md"] and doc["deleted"] == ["b.md"] and doc["snapshot"]
    assert_valid(run_mem, memdir)
    [event] = events("dream")
    assert event["outcome"] == "budget" and event["detail"]["budget"]["stopped"] == "input"


def test_a_cron_dream_at_its_budget_is_not_a_failure(run_mem, memdir, fake_api, monkeypatch, tmp_path):
    """--all-projects (what the nightly schedule runs) exits 0 for a dream that used its budget, and
    says so on stderr even with -q."""
    monkeypatch.delenv("MEM_DIR", raising=False)
    home = Path(os.environ["CLAUDE_CONFIG_DIR"]) if os.environ.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude"
    project = home / "projects" / "-tmp-proj" / "memory"
    project.mkdir(parents=True)
    seeded(project)
    greedy_dream_against_anthropic(fake_api)
    r = run_mem("dream", "--all-projects", "--force", "-q", "--layout", "claude",
                env={"MEM_BUDGET_DREAM": "120k"})
    assert r.returncode == 0, r.stderr
    assert "stopped at its budget (in=120k,out=100k, MEM_BUDGET_DREAM;" in r.stderr
    assert (project / "a.md").read_text() == MERGED and sum(q["input_tokens"] for q in fake_api.requests) <= 120_000


@pytest.mark.parametrize("usage", [True, False], ids=["usage", "no-usage"])
def test_a_greedy_dream_against_an_openai_server_stops_at_its_budget(run_mem, memdir, fake_openai, usage):
    from fakeopenai import completion, tool_call

    fake_openai.usage = usage
    seeded(memdir)
    fake_openai.reply_tool_calls(("read", {"file_path": "a.md"}), ("read", {"file_path": "b.md"}))
    fake_openai.reply_tool_calls(("write", {"file_path": "a.md", "content": MERGED}),
                                 ("delete", {"file_path": "b.md", "merged_into": "a.md"}),
                                 ("write", {"file_path": "MEMORY.md", "content": INDEX}))
    fake_openai.respond_with(lambda body: completion(
        {"role": "assistant", "content": None, "tool_calls": [tool_call("read", {"file_path": "notes.md"})]},
        "tool_calls"))
    r = run_mem("dream", "--force", "--json", env={"MEM_BUDGET_DREAM": "100k"})
    assert r.returncode == 6, r.stderr
    doc = json.loads(r.stdout)
    assert doc["stopped_at_budget"] is True and doc["budget"]["source"] == "MEM_BUDGET_DREAM"
    sent = [q for q in fake_openai.requests if q["path"].endswith("/chat/completions")]
    assert 3 < len(sent) < 40 and {q["status"] for q in sent} == {200}
    # the server's count (mem's own estimate when the server gives none, which errs high) stays under it
    assert sum(q["prompt_tokens"] for q in sent) <= doc["budget"]["spent_input_tokens"] <= 90_000
    assert (memdir / "a.md").read_text() == MERGED and not (memdir / "b.md").exists()
    assert_valid(run_mem, memdir)


# --- extract over a long session -----------------------------------------------------------------


def test_extract_stops_between_windows_and_the_next_run_goes_on(run_mem, memdir, fake_api, tmp_path, monkeypatch):
    from fakeapi import message
    from sessions import write_session

    from mem.core.jobs import extract as ex
    from mem.core.memdir.store import MemoryDir
    from mem.core.transcripts import read_transcript

    path = tmp_path / "long.jsonl"
    facts = write_session(str(path), target_bytes=1_000_000, fact_every=2)
    fake_api.context_window = 30_000
    monkeypatch.setenv("MEM_CONTEXT_WINDOW", "30000")
    fake_api.respond_with(lambda body: message([{"type": "text", "text": "Nothing worth saving."}]))
    r = run_mem("extract", "--transcript", str(path), "--json", "--budget", "50k")
    assert r.returncode == 6, r.stderr
    first = json.loads(r.stdout)
    assert first["stopped_at_budget"] is True and 0 < first["windows_done"] < first["windows"]
    assert "stopped at its budget" in r.stderr and "the next run goes on from the cursor" in r.stderr
    assert sum(q["input_tokens"] for q in fake_api.requests) == first["budget"]["spent_input_tokens"] <= 50_000
    assert len(fake_api.requests) == first["windows_done"]
    messages = read_transcript(str(path)).messages
    cursor = ex.read_cursor(MemoryDir(memdir), messages[0].session_id)["last_uuid"]
    assert cursor == first["cursor"]["after"] != messages[-1].uuid
    k = next(i for i, m in enumerate(messages) if m.uuid == cursor)
    sent_first = [str(q["body"]["messages"]) for q in fake_api.requests]
    assert events("extract")[-1]["outcome"] == "budget"

    # the next run starts after the cursor and, with room, finishes the session
    done = len(fake_api.requests)
    r = run_mem("extract", "--transcript", str(path), "--json", "--budget", "none")
    assert r.returncode == 0, r.stderr
    second = json.loads(r.stdout)
    assert second["stopped_at_budget"] is False and second["cursor"]["before"] == cursor
    assert second["cursor"]["after"] == messages[-1].uuid
    sent_second = [str(q["body"]["messages"]) for q in fake_api.requests[done:]]
    told = [f for f in facts if any(f in m.text for m in messages[:k + 1])]
    assert told and not any(f in s for f in told for s in sent_second)  # not read again
    missing = [f for f in facts if not any(f in s for s in sent_first + sent_second)]
    assert missing == []  # nothing lost between the two runs


def test_extract_honours_its_environment_budget(run_mem, memdir, fake_api, tmp_path):
    from fakeapi import message
    from sessions import write_session

    path = tmp_path / "s.jsonl"
    write_session(str(path), target_bytes=20_000)
    fake_api.respond_with(lambda body: message([{"type": "text", "text": "Nothing worth saving."}]))
    r = run_mem("extract", "--transcript", str(path), "--json", env={"MEM_BUDGET_EXTRACT": "1k"})
    assert r.returncode == 6, r.stderr
    doc = json.loads(r.stdout)
    assert doc["budget"]["source"] == "MEM_BUDGET_EXTRACT" and doc["windows_done"] == 0
    assert fake_api.requests == [] and doc["cursor"]["after"] is None


def test_extract_under_a_small_cap_makes_progress_every_run(run_mem, memdir, fake_api, tmp_path):
    """A model that never stops reading, a cap that cuts the first window short: each run still moves
    the cursor (the windows are sized to the cap, and a run's first window is not read again), and
    over three runs every planted fact reaches a request."""
    from fakeapi import message, tool_use_block
    from sessions import write_session

    from mem.core.transcripts import read_transcript

    seeded(memdir)
    path = tmp_path / "s.jsonl"
    facts = write_session(str(path), target_bytes=200_000, fact_every=2)
    uuids = [m.uuid for m in read_transcript(str(path)).messages]
    fake_api.respond_with(lambda body: message([tool_use_block("read", {"file_path": "notes.md"})],
                                               stop_reason="tool_use"))
    cursors, done = [None], 0
    for _ in range(3):
        r = run_mem("extract", "--transcript", str(path), "--json", "--budget", "40k")
        assert r.returncode in (0, 6), r.stderr
        doc = json.loads(r.stdout)
        assert sum(q["input_tokens"] for q in fake_api.requests[done:]) <= 40_000
        done = len(fake_api.requests)
        assert doc["cursor"]["before"] == cursors[-1]
        cursors.append(doc["cursor"]["after"])
        if doc["cursor"]["after"] == uuids[-1]:
            break
        assert doc["cut_short"] is True and "the cursor moved past it" in r.stderr
        assert uuids.index(cursors[-1]) > (uuids.index(cursors[-2]) if cursors[-2] else -1)
    assert cursors[-1] == uuids[-1], cursors
    sent = [json.dumps(q["body"]["messages"]) for q in fake_api.requests]
    assert [f for f in facts if not any(f in s for s in sent)] == []
    assert_valid(run_mem, memdir)


def test_extract_under_a_cap_too_small_for_a_window_says_so(run_mem, memdir, fake_api, tmp_path):
    from fakeapi import message
    from sessions import write_session

    seeded(memdir)
    path = tmp_path / "s.jsonl"
    write_session(str(path), target_bytes=20_000)
    fake_api.respond_with(lambda body: message([{"type": "text", "text": "Nothing worth saving."}]))
    r = run_mem("extract", "--transcript", str(path), "--json", "--budget", "8k")
    assert r.returncode == 6 and fake_api.requests == []
    doc = json.loads(r.stdout)
    assert doc["budget_needs"] > 8_000 and doc["cursor"]["after"] is None
    assert (f"not started: the input cap (8k, --budget) is below what the smallest window needs "
            f"(~{doc['budget_needs']:,} input tokens") in r.stderr


# --- mem cost ------------------------------------------------------------------------------------


def test_cost_shows_each_jobs_spend_against_its_budget(run_mem, memdir, fake_api):
    seeded(memdir)
    greedy_dream_against_anthropic(fake_api)
    assert run_mem("dream", "--force", "--budget", "in=150k,out=50k").returncode == 6
    spent = sum(q["input_tokens"] for q in fake_api.requests)
    r = run_mem("cost", "--json", env={"MEM_BUDGET_DREAM": "in=2M,out=80k"})
    assert r.returncode == 0, r.stderr
    rows = {b["job"]: b for b in json.loads(r.stdout)["budgets"]}
    assert set(rows) == {"extract", "remember", "session", "dream"}
    dream = rows["dream"]
    assert (dream["input_tokens"], dream["output_tokens"], dream["source"]) == (2_000_000, 80_000, "MEM_BUDGET_DREAM")
    assert dream["runs"] == 1 and dream["largest_run_input_tokens"] == dream["last_run_input_tokens"] == spent
    assert dream["stopped_at_budget"] == 1
    assert rows["extract"]["runs"] == 0 and rows["extract"]["input_tokens"] == 1_000_000
    r = run_mem("cost")
    assert r.returncode == 0, r.stderr
    assert f"dream: in=1M,out=100k (default); largest run {spent:,} in" in r.stdout
    assert "1 run stopped at it" in r.stdout and "extract: in=1M,out=100k (default); no run recorded" in r.stdout


# --- the other agent jobs ------------------------------------------------------------------------

REVIEW = ("---\nname: review-day\ndescription: the user reviews pull requests on Tuesdays\ntype: user\n---\n\n"
          "The user reviews pull requests on Tuesdays.\n")


def test_remember_stops_at_its_budget_with_the_memory_it_saved_indexed(run_mem, memdir, fake_api):
    from fakeapi import message, tool_use_block

    seeded(memdir)
    fake_api.reply_tool_use("write", {"file_path": "review-day.md", "content": REVIEW})
    fake_api.respond_with(lambda body: message([tool_use_block("read", {"file_path": "notes.md"})],
                                               stop_reason="tool_use"))
    r = run_mem("remember", "--json", "--budget", "40k", "I review PRs on Tuesdays")
    assert r.returncode == 6, r.stderr
    doc = json.loads(r.stdout)
    assert doc["stopped_at_budget"] is True and doc["saved"] == ["review-day.md"]
    assert sum(q["input_tokens"] for q in fake_api.requests) <= 40_000 and len(fake_api.requests) < 4
    assert (memdir / "review-day.md").read_text() == REVIEW and "](review-day.md)" in (memdir / "MEMORY.md").read_text()
    assert events("remember")[-1]["outcome"] == "budget"


def test_a_failed_attempt_the_server_counted_is_charged_and_the_retry_checked(run_mem, memdir, fake_api):
    """A 500 whose answer reports usage: those tokens are spent, and the retry is not sent when they
    leave it no room under the cap."""
    from fakeapi import error_body

    seeded(memdir)
    fake_api.reply({**error_body("api_error", "the backend fell over"),
                    "usage": {"input_tokens": 38_000, "output_tokens": 0}}, status=500)
    fake_api.reply_text("Nothing to save.")
    r = run_mem("remember", "--budget", "40k", "I review PRs on Tuesdays")
    assert len(fake_api.requests) == 1 and fake_api.requests[0]["input_tokens"] > 2_000  # no room for a retry
    assert r.returncode == 1 and "stopped at its budget (input 40k tokens, --budget; spent 38,000 in" in r.stderr


def test_a_failed_attempt_is_charged_before_a_retry_that_fits(run_mem, memdir, fake_api):
    from fakeapi import error_body

    seeded(memdir)
    fake_api.reply({**error_body("api_error", "the backend fell over"),
                    "usage": {"input_tokens": 5_000, "output_tokens": 0}}, status=500)
    fake_api.reply_tool_use("write", {"file_path": "review-day.md", "content": REVIEW})
    fake_api.reply_text("Saved.")
    r = run_mem("remember", "--json", "--budget", "300k", "I review PRs on Tuesdays")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(fake_api.requests) == 3 and doc["saved"] == ["review-day.md"]
    assert doc["budget"]["spent_input_tokens"] == 5_000 + sum(q["input_tokens"] for q in fake_api.requests[1:])


def test_session_update_honours_its_environment_budget(run_mem, tmp_path, fake_api):
    from mem.core import session

    path = Path(session.notes_path("63ec8da7-3d1c-4d82-927e-992a0039be2f", str(tmp_path)))
    session.init(str(path), session.DEFAULT_TEMPLATE)
    before = path.read_text()
    fixture = Path(__file__).parent / "fixtures" / "session" / "06-compact.jsonl"
    r = run_mem("session", "update", "--transcript", str(fixture), "--project", str(tmp_path), "--json",
                env={"MEM_BUDGET_SESSION": "500"})
    assert r.returncode == 6, r.stderr
    doc = json.loads(r.stdout)
    assert doc["stopped_at_budget"] is True and doc["budget"]["source"] == "MEM_BUDGET_SESSION"


def test_the_session_notes_stop_hook_honours_its_budget_option(run_mem, tmp_path, fake_api):
    from fakeapi import message

    from mem.core import session

    sid = "63ec8da7-3d1c-4d82-927e-992a0039be2f"
    path = Path(session.notes_path(sid, str(tmp_path)))
    session.init(str(path), session.DEFAULT_TEMPLATE)
    before = path.read_text()
    transcript = tmp_path / "s.jsonl"  # the recorded session and one long prompt: an update is due
    long_prompt = {"type": "user", "message": {"role": "user", "content": "Remember the ETL runbook. " * 3_000},
                   "uuid": "5d1c8e2a-0000-4000-8000-000000000001", "timestamp": "2026-11-22T02:00:00.000Z",
                   "sessionId": sid, "cwd": str(tmp_path)}
    transcript.write_text((Path(__file__).parent / "fixtures" / "session" / "06-compact.jsonl").read_text()
                          + json.dumps(long_prompt) + "\n")
    fake_api.respond_with(lambda body: message([{"type": "text", "text": "Nothing to change."}]))
    payload = json.dumps({"session_id": sid, "hook_event_name": "Stop", "cwd": str(tmp_path),
                          "transcript_path": str(transcript)})
    r = run_mem("session", "update", "--hook", "--budget", "500", input=payload)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert "stopped at its budget" in r.stderr
    assert fake_api.requests == [] and path.read_text() == before
    assert fake_api.requests == [] and path.read_text() == before
