"""The token budget: per-model limits, an estimator that never under-counts the server, corrections."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fakeapi import count_tokens, text_tokens as server_text_tokens
from mem.core.jobs import budget as b

# Text of the kinds a transcript carries: prose, code and JSON punctuation, digits, CJK, kana,
# Hangul, accented Latin, emoji.
ALPHABET = st.sampled_from(list("the quick brown fox ") + list("{}[]():;,.\"'=<>/\\_-+*#@\n\t")
                           + list("0123456789") + list("中文记忆ひらがなカタカナ한국어") + list("éüñßжд")
                           + ["😀", "𠀀", "\u3000", "！"])
TEXT = st.text(ALPHABET, max_size=400)


def _block(text: str, kind: int) -> dict:
    if kind == 0:
        return {"type": "text", "text": text}
    if kind == 1:
        return {"type": "tool_use", "id": "t1", "name": "read", "input": {"file_path": text}}
    return {"type": "tool_result", "tool_use_id": "t1", "content": text}


BODY = st.builds(
    lambda system, texts, kinds, tool: {
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": [_block(t, k)]}
                     for i, (t, k) in enumerate(zip(texts, kinds))] or [{"role": "user", "content": system}],
        "tools": [{"name": "read", "description": tool, "input_schema": {"type": "object", "properties": {}}}],
        "max_tokens": 100,
    },
    TEXT, st.lists(TEXT, max_size=6), st.lists(st.integers(0, 2), min_size=6, max_size=6), TEXT,
)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_text_estimate_never_under_counts_the_server(text):
    assert b.text_tokens(text) >= server_text_tokens(text)


@settings(max_examples=200, deadline=None)
@given(BODY)
def test_request_estimate_never_under_counts_the_server(body):
    assert b.request_tokens(body) >= count_tokens(body)


def test_a_spread_of_real_shaped_inputs():
    samples = [
        "Please remember that integration tests hit a real Postgres database. " * 200,
        json.dumps({"rows": [{"id": i, "name": f"n{i}", "tags": ["a", "b"]} for i in range(500)]}),
        "def f(x):\n    return {k: v for k, v in x.items() if v is not None}  # 12345\n" * 300,
        "请记住：集成测试必须连接真实的数据库，不要使用模拟对象。" * 300,
        "テストは本物のデータベースを使うこと。한국어 메모리 파일입니다. " * 300,
    ]
    for text in samples:
        body = {"system": "S", "messages": [{"role": "user", "content": text}], "max_tokens": 1}
        ours, server = b.request_tokens(body), count_tokens(body)
        assert ours >= server
        assert ours <= 1.6 * server  # conservative, not absurd


def test_limits_table_and_environment(monkeypatch):
    assert b.limits_for("claude-sonnet-5-5", {}) == (200_000, 32_000)
    assert b.limits_for("claude-3-haiku-20240307", {}) == (200_000, 4_096)
    assert b.limits_for("some-proxy-model", {}) == b.DEFAULT_LIMITS
    env = {"MEM_CONTEXT_WINDOW": "50_000", "MEM_MAX_OUTPUT_TOKENS": "2000"}
    assert b.limits_for("claude-sonnet-5-5", env) == (50_000, 2_000)
    assert b.limits_for("claude-sonnet-5-5", {"MEM_CONTEXT_WINDOW": "lots"}) == (200_000, 32_000)


def test_room_and_corrections():
    budget = b.Budget(b.Limits(100_000, 32_000), max_output=8_192)
    assert budget.max_output == 8_192
    assert budget.room == 100_000 - 8_192 - 5_000
    assert budget.estimate(1_000) == 1_000
    budget.observe(1_000, {"input_tokens": 600, "cache_read_input_tokens": 600})  # the server counts more
    assert budget.estimate(1_000) == 1_200
    budget.observe(1_000, {"input_tokens": 100})  # far less: never below the bounded factor, and the max wins
    assert budget.estimate(1_000) == 1_200
    fresh = b.Budget(b.Limits(100_000, 4_000))
    fresh.observe(1_000, {"input_tokens": 10})
    assert fresh.estimate(1_000) == 950 and fresh.max_output == 4_000


def test_cut_to_fit_keeps_head_and_tail():
    text = "".join(f"line {i}\n" for i in range(5_000))
    cut = b.cut_to_fit(text, 500, note="; ask for less")
    assert b.text_tokens(cut) <= 500
    assert cut.startswith("line 0\n") and cut.endswith("line 4999\n") and "characters cut; ask for less]" in cut
    assert b.cut_to_fit("short", 500) == "short"
    assert b.text_tokens(b.cut_to_fit("中文" * 10_000, 300)) <= 300
    by_chars = b.cut_to_fit(text, 100_000, chars=2_000)
    assert len(by_chars) <= 2_000 and by_chars.startswith("line 0\n")
