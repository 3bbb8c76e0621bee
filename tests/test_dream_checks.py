"""The dream's checks, each tested both ways: what it must report and what it must not."""

from __future__ import annotations

from datetime import date

import pytest
from helpers.messy import DISTINCT, PARAPHRASES

from mem.core.jobs import dream_checks as dc

TODAY = date(2026, 11, 25)


def memory(spec) -> dc.Memory:
    rel, name, description, type_, body = spec
    return dc.Memory(rel, name, description, type_, body)


def mem(body: str, rel: str = "m.md", type_: str = "project", description: str = "d") -> dc.Memory:
    return dc.Memory(rel, rel[:-3], description, type_, body)


def pair_findings(a, b, kind):
    return [f for f in dc.findings([memory(a), memory(b)], TODAY) if f.kind == kind]


@pytest.mark.parametrize("pair", PARAPHRASES, ids=lambda p: p[0][0])
def test_paraphrases_are_near_duplicates(pair):
    assert len(pair_findings(*pair, "near-duplicate")) == 1


@pytest.mark.parametrize("pair", DISTINCT, ids=lambda p: p[0][0])
def test_distinct_memories_are_not(pair):
    assert pair_findings(*pair, "near-duplicate") == []


def test_the_threshold_separates_the_labelled_pairs():
    """The calibration: every paraphrase scores above NEAR_DUPLICATE, every distinct pair with other bodies below."""
    everything = [memory(s) for pair in PARAPHRASES + DISTINCT for s in pair]
    unique = list({m.relpath: m for m in everything}.values())
    sim = dc.similarities(unique)
    para = [sim[tuple(sorted((a[0], b[0])))] for a, b in PARAPHRASES]
    distinct = [sim.get(tuple(sorted((a[0], b[0]))), 0.0) for a, b in DISTINCT if a[4] != b[4]]
    assert min(para) >= dc.NEAR_DUPLICATE > max(distinct)


@pytest.mark.parametrize("text", ["Merge freeze until 2026-03-12.", "Launch on March 12, 2026.",
                                  "Beta ends 12 Mar 2026 and GA is Mar 30 2026."])
def test_a_project_memory_whose_dates_passed_is_stale(text):
    found = dc.stale_dates(mem(text), TODAY)
    assert found is not None and found.files == ["m.md"] and "has passed" in found.evidence[0]


@pytest.mark.parametrize("text,type_", [("Freeze until 2026-03-12, the next one on 2027-01-10.", "project"),
                                         ("Freeze until 2026-03-12.", "feedback"), ("No dates here.", "project"),
                                         ("Build 2026-13-45 is not a date.", "project")])
def test_not_stale(text, type_):
    assert dc.stale_dates(mem(text, type_=type_), TODAY) is None


@pytest.mark.parametrize("text", ["Alice took over yesterday.", "We ship next week.", "It broke last Thursday.",
                                  "Due in two days.", "Started three weeks ago."])
def test_relative_dates_are_reported(text):
    assert dc.relative_dates(mem(text)) is not None


@pytest.mark.parametrize("text", ["We ship weekly.", "The last step is the deploy.", "Next, run the tests.",
                                  "Deploys happen on Thursdays.", "It took two days in 2025-06."])
def test_not_relative_dates(text):
    assert dc.relative_dates(mem(text)) is None


@pytest.mark.parametrize("a,b", [("Always use pnpm in the web app.", "Never use pnpm in the web app."),
                                 ("Use tabs for indentation.", "Don't use tabs for indentation."),
                                 ("The dev database listens on port 5432.", "The dev database listens on port 5433."),
                                 ("The request timeout is 30 seconds.", "The request timeout is 60 seconds.")])
def test_contradictions(a, b):
    found = dc.contradiction(mem(a, "a.md"), mem(b, "b.md"))
    assert found is not None and found.files == ["a.md", "b.md"]
    assert any(e.startswith("a.md: ") for e in found.evidence) and any(e.startswith("b.md: ") for e in found.evidence)


@pytest.mark.parametrize("a,b", [("Always use pnpm in the web app.", "Always use pnpm; never use yarn."),
                                 ("Use tabs, never spaces.", "Indent with tabs."),
                                 ("The dev database listens on port 5432.", "The dev database listens on port 5432."),
                                 ("Freeze until 2026-03-12.", "Freeze until 2026-03-19."),
                                 ("Don't use tabs.", "Don't use tabs in YAML.")])
def test_not_contradictions(a, b):
    assert dc.contradiction(mem(a, "a.md"), mem(b, "b.md")) is None


def test_contradictions_are_looked_for_only_between_memories_on_one_subject():
    a = mem("Always use pnpm for the web app packages.", "a.md", description="web app package manager")
    b = mem("Never use pnpm: the deploy cluster has no network.", "b.md", description="kubernetes deploy cluster")
    assert dc.contradiction(a, b) is not None  # the rule alone fires...
    assert [f for f in dc.findings([a, b], TODAY) if f.kind == "contradiction"] == []  # ...but not on another subject
