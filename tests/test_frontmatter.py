from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem.core.memdir.frontmatter import (
    Document,
    description_of,
    js_trim,
    memory_type_of,
    parse_frontmatter,
    quote_problematic_values,
    render_new,
)

FIX = Path(__file__).parent / "fixtures"
CLIENT_FILES = sorted((FIX / "claude-code-05" / "memory-dir-after").glob("*.md")) + sorted(
    (FIX / "qwen-code-05" / "memory-dir-after").glob("*.md")
)


def test_claude_rewritten_frontmatter_reads_metadata_type():
    text = (FIX / "claude-code-05/memory-dir-after/user-prefers-tabs.md").read_text()
    assert "metadata: \n" in text  # the client's trailing space is part of the format
    parsed = parse_frontmatter(text)
    assert memory_type_of(parsed.data) == ("user", "user")
    assert description_of(parsed.data) == "user wants tabs not spaces"
    assert parsed.data["metadata"]["originSessionId"] == "63ec8da7-3d1c-4d82-927e-992a0039be2f"


@pytest.mark.parametrize("path", CLIENT_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_real_client_files_round_trip_byte_identical(path):
    raw = path.read_bytes()
    doc = Document(raw.decode("utf-8"))
    assert doc.render().encode("utf-8") == raw
    assert not doc.changed


def test_setting_one_key_keeps_every_other_byte():
    text = (FIX / "claude-code-05/memory-dir-after/user-prefers-tabs.md").read_text()
    doc = Document(text)
    doc.set("metadata.type", "feedback")
    out = doc.render()
    assert out == text.replace("  type: user\n", "  type: feedback\n")
    assert Document(out).data["metadata"]["type"] == "feedback"


def test_set_unchanged_value_is_not_a_change():
    doc = Document("---\nname: a\ntype: user\n---\nbody\n")
    doc.set("type", "user")
    assert not doc.changed


def test_set_adds_missing_key_at_end_and_quotes_when_needed():
    doc = Document("---\nname: a\nx-unknown: [1, 2]\n---\n\nbody\n")
    doc.set("description", "fix: the build # now")
    out = doc.render()
    assert out.startswith("---\nname: a\nx-unknown: [1, 2]\ndescription: 'fix: the build # now'\n---\n")
    assert Document(out).data["description"] == "fix: the build # now"
    assert Document(out).data["x-unknown"] == [1, 2]


def test_set_replaces_a_multiline_value_whole():
    doc = Document("---\ndescription: >\n  folded\n  text\ntype: user\n---\nb\n")
    doc.set("description", "one line")
    assert doc.render() == "---\ndescription: one line\ntype: user\n---\nb\n"


def test_crlf_file_keeps_crlf_when_edited():
    text = "---\r\nname: a\r\ntype: user\r\n---\r\n\r\nbody\r\n"
    doc = Document(text)
    assert doc.data == {"name": "a", "type": "user"}
    doc.set("type", "project")
    assert doc.render() == text.replace("user", "project")


def test_bom_is_kept():
    text = "\ufeff---\nname: a\n---\nbody\n"
    doc = Document(text)
    assert doc.data == {"name": "a"}
    doc.set("name", "b")
    assert doc.render() == "\ufeff---\nname: b\n---\nbody\n"


def test_no_frontmatter_gets_one():
    doc = Document("just text\n")
    doc.set("type", "user")
    assert doc.render() == "---\ntype: user\n---\n\njust text\n"


def test_frontmatter_must_start_at_byte_zero():
    assert not parse_frontmatter("\n---\nname: a\n---\n").present
    assert not parse_frontmatter(" ---\nname: a\n---\n").present


def test_closing_delimiter_is_first_triple_dash_even_mid_line():
    parsed = parse_frontmatter("---\nname: a\ndescription: x---y\n---\n")
    # The frontmatter ends at "x---": the YAML is "name: a\ndescription: x".
    assert parsed.data == {"name": "a", "description": "x"}
    assert parsed.content == "y\n---\n"


def test_retry_requotes_values_with_yaml_indicators():
    text = "---\nname: glob\ndescription: matches {a,b}: and more\ntype: reference\n---\n"
    parsed = parse_frontmatter(text)
    assert parsed.retried
    assert parsed.data["description"] == "matches {a,b}: and more"
    assert parsed.data["type"] == "reference"


def test_quote_problematic_values_only_touches_simple_unquoted_lines():
    src = 'a: "already: quoted"\nb: has: colon\n  nested: x: y\nc: 12:34\nd: back\\slash & "q"'
    assert quote_problematic_values(src) == (
        'a: "already: quoted"\nb: "has: colon"\n  nested: x: y\nc: 12:34\nd: "back\\\\slash & \\"q\\""'
    )


def test_unrecoverable_yaml_is_empty_with_error():
    parsed = parse_frontmatter("---\nname: [unclosed\n  - x: :\n---\n")
    assert parsed.present and parsed.data == {} and parsed.error


def test_yaml_12_core_scalars():
    data = parse_frontmatter("---\na: yes\nb: on\nc: 2024-01-01\nd: 010\ne: true\nf: 0x10\ng: ~\n---\n").data
    assert data == {"a": "yes", "b": "on", "c": "2024-01-01", "d": 10, "e": True, "f": 16, "g": None}


def test_non_mapping_frontmatter_is_empty():
    assert parse_frontmatter("---\n- a\n- b\n---\n").data == {}


@pytest.mark.parametrize(
    "value,expected",
    [("x", "x"), ("", None), (0, None), (False, None), (None, None), (12, "12"), (True, "true"), (1.5, "1.5"), (["a", "b"], "a,b")],
)
def test_description_as_js_would_show_it(value, expected):
    assert description_of({"description": value}) == expected


@pytest.mark.parametrize("raw", ["User", " user", "bug", 1, None])
def test_type_set_is_closed_and_exact(raw):
    assert memory_type_of({"type": raw})[0] is None


def test_js_trim_includes_bom_but_not_file_separator():
    assert js_trim("\ufeff a \u2028") == "a"
    assert js_trim("\x1ca\x1c") == "\x1ca\x1c"


def test_render_new_parses_back():
    text = render_new({"name": "n", "description": "d: with colon", "type": "user"}, "Body")
    assert text == "---\nname: n\ndescription: 'd: with colon'\ntype: user\n---\n\nBody\n"
    assert Document(text).data == {"name": "n", "description": "d: with colon", "type": "user"}


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_round_trip_any_text(text):
    assert Document(text).render() == text


_keys = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
_values = st.one_of(st.text(max_size=40).filter(lambda s: "\x00" not in s), st.integers(), st.booleans())


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, st.text(alphabet="abc xyz-", max_size=10), min_size=1, max_size=5), _keys, _values, st.text(max_size=50))
def test_set_changes_only_that_key(fields, key, value, body):
    text = render_new(fields, body)
    doc = Document(text)
    before = dict(doc.data)
    doc.set(key, value)
    after = Document(doc.render()).data
    assert after[key] == value
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}
    expected_order = list(before) if key in before else [*before, key]
    assert list(after) == expected_order


_fast_values = st.text(alphabet=st.sampled_from(list("ab Z09:#-'\"{}[]&*!|>%@`,?.~\t") + ["é", "数", "😀"]), max_size=12)
_fast_lines = st.lists(
    st.tuples(st.sampled_from(["", "  ", "    "]), st.from_regex(r"[a-z_][a-z0-9_-]{0,5}", fullmatch=True), st.one_of(st.none(), _fast_values)),
    max_size=6,
)


@settings(max_examples=500, deadline=None)
@given(_fast_lines)
def test_fast_path_agrees_with_yaml_whenever_it_answers(lines):
    from mem.core.memdir.frontmatter import YamlError, _fast_load, load_yaml

    text = "".join(f"{indent}{key}:" + ("" if value is None else f" {value}") + "\n" for indent, key, value in lines)
    fast = _fast_load(text)
    if fast is None:
        return
    try:
        slow = load_yaml(text)
    except YamlError:
        raise AssertionError(f"fast path accepted what YAML rejects: {text!r} -> {fast!r}")
    assert fast == (slow if isinstance(slow, dict) else {}), text


def test_fast_path_covers_the_usual_files():
    from mem.core.memdir.frontmatter import _fast_load

    examples = Path(__file__).parent.parent / "examples" / "memory"
    files = [p for p in [*CLIENT_FILES, *examples.glob("*.md")] if p.name != "MEMORY.md"]
    assert len(files) >= 10
    for path in files:
        fm = path.read_text().split("---\n")[1]
        assert _fast_load(fm) is not None, path


def test_setting_a_nested_key_under_a_scalar_is_refused_cleanly():
    doc = Document("---\nmetadata: x\n---\nbody\n")
    with pytest.raises(ValueError, match="'metadata' is not a mapping"):
        doc.set("metadata.type", "user")
    assert doc.render() == "---\nmetadata: x\n---\nbody\n"
