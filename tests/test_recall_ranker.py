"""The offline selector: terms for English and CJK text, BM25F scores, thresholds, and its quality."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mem.core.memdir import manifest
from mem.core.memdir.store import MemoryDir
from mem.core import recall
from mem.core.recall import ranker

BENCH = Path(__file__).parent / "fixtures" / "recall-bench"


# --- terms ------------------------------------------------------------------


@pytest.mark.parametrize("word, stem", [
    ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("agreed", "agre"), ("hopping", "hop"),
    ("motoring", "motor"), ("relational", "relat"), ("conditional", "condit"), ("formaliti", "formal"),
    ("electrical", "electr"), ("adjustment", "adjust"), ("adoption", "adopt"), ("controll", "control"),
    ("migrations", "migrat"), ("migrate", "migrat"), ("testing", "test"),
    # Porter2's rule for a final y: deploy, deploys, deploying and deployment meet
    ("deploy", "deploy"), ("deploys", "deploy"), ("deploying", "deploy"), ("deployment", "deploy"),
    ("happy", "happi"), ("flaky", "flaki"),
])
def test_porter(word, stem):
    assert ranker.porter(word) == stem


def test_stop_stems_are_in_step_with_the_stop_words():
    computed = {ranker.porter(w) for w in ranker.STOP_WORDS if len(ranker.porter(w)) > 2} - ranker.STOP_WORDS
    assert computed == set(ranker._STOP_STEMS)


def test_english_terms():
    assert ranker.terms("The staging deploys FAILED with MIGRATION_TIMEOUT=900") == \
        ["stage", "deploy", "fail", "migrat", "timeout", "900"]
    # camelCase is split, and the whole word kept; short pieces are not worth splitting
    assert ranker.terms("PostgreSQL getUserName iOS") == ["postgresql", "postgr", "sql", "getusernam", "user", "name", "io"]
    # inflections of stop words are stop words too
    assert ranker.terms("changed writing updates") == []


def test_chinese_is_cut_into_bigrams_at_function_words():
    assert ranker.terms("数据仓库迁移到 Iceberg 的截止时间是什么时候？") == \
        ["数据", "据仓", "仓库", "库迁", "迁移", "iceberg", "截止", "止时", "时间"]
    assert ranker.terms("这个查询用了 SELECT *，可以直接上线吗") == ["查询", "询用", "select", "上线"]


def test_japanese_pairs_within_kanji_and_katakana():
    assert ranker.terms("iOS アプリのリリース日はいつにすればいい？") == \
        ["io", "アプ", "プリ", "リリ", "リー", "ース", "日"]


def test_text_is_normalised_alike_for_indexing_and_querying():
    # full-width Latin and digits (typed from a CJK input method), half-width katakana, case
    assert ranker.terms("ＤＯＣＫＥＲ ｃｏｍｐｏｓｅ ２０２６") == ranker.terms("docker compose 2026") == \
        ["docker", "compos", "2026"]
    assert ranker.terms("ﾘﾘｰｽﾉｰﾄ") == ranker.terms("リリースノート")
    assert ranker.terms("ＳＥＬＥＣＴ　＊") == ["select"]
    assert ranker.terms("Ｓｅｎｔｒｙ") == ranker.terms("SENTRY") == ["sentri"]
    # case folding beyond ASCII, and no camelCase split of a word that is not ASCII
    assert ranker.terms("Straße STRASSE") == ["strass", "strass"]
    assert ranker.terms("Überprüfung ÜBERPRÜFUNG") == ["überprüfung", "überprüfung"]


def test_hiragana_words_are_kept():
    # hiragana-only text keeps its words; next to kanji only words of three or more count
    assert ranker.terms("しけんのやりかた") == ["しけ", "けん", "やり", "りか", "かた"]
    assert ranker.terms("スプリントのふりかえりのまとめを書いてください") == \
        ["スプ", "プリ", "リン", "ント", "ふり", "りか", "かえ", "えり", "まと", "とめ", "書"]
    # particles, inflection and question words are not terms
    assert ranker.terms("いつにすればいい") == []


def test_korean_words_lose_their_particles_and_keep_their_prefixes():
    assert ranker.terms("운영 출시 점검표를 확인하려면") == ["운영", "출시", "점검표", "점검", "확인"]
    # a particle written apart, a question word and a request are not terms
    assert ranker.terms("Sentry 에서 어떻게 알려줘") == ["sentri"]
    # a shortened compound meets the whole one
    idx = _index([
        ("release.md", "운영 출시 점검표", "운영 환경 출시 전에 확인하는 점검표", "롤백 계획"),
        ("oncall.md", "당직", "야간 당직 순서", "전화"),
    ])
    assert [h.key for h in idx.rank("운영 점검 뭐 해야 돼?")] == ["release.md"]
    assert idx.rank("내일 서울 날씨 어때?") == []


def test_mixed_scripts_in_one_query():
    assert ranker.terms("staging の deploy が migration timeout で失敗した") == \
        ["stage", "deploy", "migrat", "timeout", "失敗"]
    assert ranker.terms("이 PR 너무 커요, 1200 lines") == ["pr", "너무", "커요", "1200", "line"]


def test_a_cjk_word_counts_as_its_length_over_two():
    q = ranker.query_terms("数据库")
    assert q.words == 1.5
    assert q.coverage({"数据"}) == 1.0
    assert q.coverage({"数据", "据库"}) == 1.5
    assert ranker.query_terms("PostgreSQL migration").words == 2


def test_a_word_said_twice_is_one_word_of_the_query():
    q = ranker.query_terms("the difference between docker stop and docker kill")
    assert q.words == 4  # differ, docker, stop, kill
    assert q.coverage({"docker"}) == 1
    # so a memory sharing only the repeated word is held to the bar for one shared word
    idx = _index(DOCS + [("compose.md", "local-stack", "run the stack locally with docker compose", "make up")])
    assert idx.rank("the difference between docker stop and docker kill") == []


# --- scores and thresholds --------------------------------------------------------


def _index(docs):
    return ranker.Index([ranker.make_doc(k, ranker.name_text(k, n), d, b) for k, n, d, b in docs])


DOCS = [
    ("staging.md", "staging-deploy", "staging deploys fail when the migration job times out", "Rerun with MIGRATION_TIMEOUT=900."),
    ("prod.md", "prod-deploy-window", "production deploys only on Tuesday and Thursday", "Via the deploy bot."),
    ("tabs.md", "tabs", "user prefers tabs in Go code", "gofmt."),
    ("zh.md", "数仓迁移", "数据仓库从 Hive 迁移到 Iceberg", "截止日期 2026 年 6 月。"),
    ("rust.md", "rust", "user is learning Rust", "explain borrow checker errors"),
]


def test_the_relevant_memory_ranks_first_and_unrelated_queries_get_nothing():
    idx = _index(DOCS)
    assert [h.key for h in idx.rank("the staging deploy failed with a migration timeout")][0] == "staging.md"
    assert [h.key for h in idx.rank("数据仓库迁移的截止时间")] == ["zh.md"]
    assert idx.rank("write a haiku about autumn leaves") == []
    assert idx.rank("今天天气怎么样") == []
    # one shared word of several is weak evidence
    assert idx.rank("deploy my personal blog to GitHub Pages") == []


def test_name_and_description_weigh_more_than_the_body():
    idx = _index([
        ("a.md", "cache", "the CI cache is keyed on the lock file", "nothing else"),
        ("b.md", "other", "something else entirely", "the CI cache is keyed on the lock file"),
    ])
    scores = {h.key: h.score for h in idx.scores("CI cache lock file")}
    assert scores["a.md"] > scores["b.md"]


def test_an_empty_directory_or_query_ranks_nothing():
    assert ranker.Index([]).rank("anything at all") == []
    assert _index(DOCS).rank("the and of") == []


# --- the labelled set ------------------------------------------------------------


def _bench():
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    try:
        import recall as bench_recall
    finally:
        sys.path.pop(0)
    return bench_recall


def test_the_labelled_set_is_what_the_issue_asks_for():
    memories = sorted((BENCH / "memories").glob("*.md"))
    queries = json.loads((BENCH / "queries.json").read_text(encoding="utf-8"))
    headers = manifest.scan(str(BENCH / "memories"))
    assert len(memories) >= 40
    assert {h.type for h in headers} == {"user", "feedback", "project", "reference"}
    assert all(not h.warnings for h in headers), [(h.relpath, h.warnings) for h in headers if h.warnings]
    assert {q["lang"] for q in queries} >= {"en", "zh"}
    assert len(queries) >= 60
    assert sum(1 for q in queries if not q["relevant"]) >= 15
    names = {m.name for m in memories}
    paraphrases = json.loads((BENCH / "paraphrase.json").read_text(encoding="utf-8"))
    for q in queries + paraphrases:
        assert set(q["relevant"]) <= names, q
    assert all(q["split"] in ("tune", "heldout") for q in queries)


def test_every_script_has_its_slice_in_both_halves():
    queries = json.loads((BENCH / "queries.json").read_text(encoding="utf-8"))
    for lang in ("en", "zh", "ja", "ko", "mixed", "fullwidth"):
        for split in ("tune", "heldout"):
            mine = [q for q in queries if q["lang"] == lang and q["split"] == split]
            assert sum(1 for q in mine if q["relevant"]) >= 4, (lang, split)
            assert any(not q["relevant"] for q in mine), (lang, split)
    assert sum(1 for q in queries if q["split"] == "heldout" and not q["relevant"]) >= 20


def test_offline_selector_holds_its_level_and_beats_the_baseline():
    # The issue's goals are judged on the held-out half by `make bench-recall` (bench/RESULTS.md);
    # this keeps the level reached on the whole set from slipping.
    bench = _bench()
    q = bench.quality()
    o, b = q["offline"]["all"], q["baseline"]["all"]
    assert o["recall_at_5"] >= 0.90
    assert o["top1_precision"] >= 0.90
    assert o["false_surface"] <= 0.12  # 0.116 once the tune half got 28 harder nothing-relevant queries
    assert o["recall_at_5"] > b["recall_at_5"] and o["top1_precision"] > b["top1_precision"] + 0.2
    assert o["false_surface"] < b["false_surface"]
    for lang in ("zh", "ja", "ko", "fullwidth"):
        whole = bench.evaluate(bench.offline_selector(str(BENCH / "memories")),
                               [x for x in bench.load_queries() if x["lang"] == lang])
        assert whole["recall_at_5"] >= 0.90, lang


def test_the_index_cache_is_used_and_refreshed(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / "a.md").write_text("---\nname: a\ndescription: staging deploy timeouts\ntype: project\n---\n\nrerun\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    idx = recall.offline_index(MemoryDir(root), manifest.scan(str(root)), str(cache))
    assert [h.key for h in idx.rank("staging deploy timeouts")] == ["a.md"]
    assert (cache / recall.INDEX_CACHE).exists()
    # a changed file is read again, not taken from the cache
    import os
    (root / "a.md").write_text("---\nname: a\ndescription: grafana dashboards for latency\ntype: reference\n---\n\nx\n")
    os.utime(root / "a.md", (1_800_000_000, 1_800_000_000))
    idx = recall.offline_index(MemoryDir(root), manifest.scan(str(root)), str(cache))
    assert idx.rank("staging deploy timeouts") == []
    assert [h.key for h in idx.rank("grafana latency dashboards")] == ["a.md"]
    # a damaged cache is ignored
    (cache / recall.INDEX_CACHE).write_bytes(b"\x00garbage")
    idx = recall.offline_index(MemoryDir(root), manifest.scan(str(root)), str(cache))
    assert [h.key for h in idx.rank("grafana latency dashboards")] == ["a.md"]


def test_a_memory_is_matched_on_its_index_line_too(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / "overview.md").write_text("---\nname: overview\ndescription: Ledgerly, invoicing SaaS\ntype: project\n---\n\nx\n")
    (root / "MEMORY.md").write_text("- [Project overview](overview.md) — what the product is built with: the tech stack\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    idx = recall.offline_index(MemoryDir(root), manifest.scan(str(root)), str(cache))
    assert [h.key for h in idx.rank("tech stack")] == ["overview.md"]
    # the index line changes, the file does not: the cached terms of the line are refreshed
    import os
    (root / "MEMORY.md").write_text("- [Project overview](overview.md) — the product in one line\n")
    os.utime(root / "MEMORY.md", (1_800_000_000, 1_800_000_000))
    idx = recall.offline_index(MemoryDir(root), manifest.scan(str(root)), str(cache))
    assert idx.rank("tech stack") == []
    assert [h.key for h in idx.rank("the product in one line")] == ["overview.md"]


def test_a_small_directory_still_recalls():
    idx = _index(DOCS[:1])
    assert [h.key for h in idx.rank("the staging deploy failed with a migration timeout")] == ["staging.md"]
    assert idx.rank("write a haiku about autumn leaves") == []
    assert idx.rank("what is the capital of Australia") == []
