"""The pure contract: key validation (reference §8.3), checksums, batches, repo names."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath

import pytest
from conftest import git
from hypothesis import given
from hypothesis import strategies as st

from mem.core.memdir.store import MemoryDir
from mem.core.team import keys
from mem.core.team.keys import InvalidKeyError, check_key


@pytest.mark.parametrize("key", [
    "MEMORY.md", "patterns.md", "sub/dir/file.md", "notes.txt", "100%.md", "a%ZZb.md", "%E0%A4%A.md",
    "caf\u00e9.md", "日本語/メモ.md", ".hidden.md", "a..b.md",
])
def test_keys_that_are_fine(key):
    assert check_key(key) == key


@pytest.mark.parametrize("key,reason", [
    ("", "empty"),
    ("a\0b.md", "NUL"),
    ("%2e%2e%2fetc%2fpasswd", "percent-encoded"),
    ("a%2Fb.md", "percent-encoded"),
    ("%2E%2E", "percent-encoded"),
    ("\uff0e\uff0e\uff0fsecrets", "Unicode"),   # fullwidth ../ becomes ../ under NFKC
    ("a\uff0fb.md", "Unicode"),
    ("a\\b.md", "backslash"),
    ("..\\x", "backslash"),
    ("/etc/passwd", "absolute"),
    ("..", "escapes"),
    ("../x.md", "escapes"),
    ("a/../../x.md", "escapes"),
    (".", "escapes"),
    ("a/../b.md", "normal form"),
    ("./a.md", "normal form"),
    ("a//b.md", "normal form"),
    ("a/", "normal form"),
    ("a\nb.md", "control"),
    ("a\x7fb.md", "control"),
    ("x" * 256 + ".md", "longer"),
    ("/".join(["abcdefgh"] * 120), "longer"),
])
def test_keys_that_are_refused(key, reason):
    with pytest.raises(InvalidKeyError) as exc:
        check_key(key)
    assert reason.lower() in exc.value.reason.lower()
    assert exc.value.exit_code == 4


def test_non_strings_are_refused():
    for key in (None, 3, b"a.md", ["a"]):
        with pytest.raises(InvalidKeyError):
            check_key(key)


@given(st.text(min_size=1, max_size=40))
def test_an_accepted_key_never_leaves_team(key):
    try:
        check_key(key)
    except InvalidKeyError:
        return
    joined = posixpath.normpath("/m/team/" + key)
    assert joined.startswith("/m/team/") and joined == "/m/team/" + key
    assert ".." not in key.split("/") and "\\" not in key and "\0" not in key


def test_key_path_follows_the_memory_dir_write_path_and_stays_in_team(tmp_path):
    root = tmp_path / "memory"
    (root / "team" / "sub").mkdir(parents=True)
    (root / "MEMORY.md").write_text("- [a](a.md)\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    store = MemoryDir(str(root))
    assert keys.key_path(store, "sub/new.md") == os.path.realpath(root / "team" / "sub" / "new.md")
    os.symlink("../MEMORY.md", root / "team" / "index-link.md")       # in the memory dir, out of team/
    os.symlink(str(outside), root / "team" / "out")                    # a directory elsewhere
    os.symlink(str(tmp_path / "nowhere.md"), root / "team" / "dangling.md")
    for key in ("index-link.md", "out/x.md", "dangling.md", "../MEMORY.md"):
        with pytest.raises(InvalidKeyError):
            keys.key_path(store, key)


def test_hash_content_is_sha256_of_utf8():
    assert keys.hash_content("héllo") == "sha256:" + hashlib.sha256("héllo".encode()).hexdigest()


def test_batches_pack_sorted_keys_under_the_limit_and_oversized_alone():
    delta = {f"k{i:02d}.md": "x" * 60_000 for i in range(7)}
    delta["big.md"] = "y" * 240_000
    delta["a.md"] = "small"
    out = keys.batches(delta)
    assert [k for b in out for k in b] == sorted(delta)
    for b in out:
        size = len(json.dumps({"entries": b}, ensure_ascii=False, separators=(",", ":")).encode())
        assert size <= keys.MAX_PUT_BODY_BYTES or len(b) == 1
    assert {"big.md": "y" * 240_000} in out
    assert keys.batches({}) == []


def test_batch_byte_count_matches_the_reference_formula():
    # {"entries":{}} is 14 bytes; each entry adds its two JSON strings (UTF-8, not escaped) + 2.
    assert keys.EMPTY_BODY_BYTES == len('{"entries":{}}')
    assert keys.entry_bytes("a", 'é"\n') == len('"a"') + len('"é\\"\\n"'.encode()) + 2
    limit = 14 + keys.entry_bytes("a", "1") + keys.entry_bytes("b", "2")
    assert keys.batches({"b": "2", "a": "1"}, limit) == [{"a": "1", "b": "2"}]
    assert keys.batches({"b": "2", "a": "1"}, limit - 1) == [{"a": "1"}, {"b": "2"}]


def test_repo_checksum_depends_only_on_content():
    a = keys.repo_checksum({"x.md": keys.hash_content("1"), "y.md": keys.hash_content("2")})
    b = keys.repo_checksum({"y.md": keys.hash_content("2"), "x.md": keys.hash_content("1")})
    assert a == b and a.startswith("sha256:")
    assert a != keys.repo_checksum({"x.md": keys.hash_content("1")})


@pytest.mark.parametrize("url,repo", [
    ("git@github.com:acme/widgets.git", "acme/widgets"),
    ("git@github.com:acme/widgets", "acme/widgets"),
    ("https://github.com/acme/widgets.git", "acme/widgets"),
    ("https://github.com/acme/widgets/", "acme/widgets"),
    ("https://user:pw@github.com/acme/widgets.git", "acme/widgets"),
    ("ssh://git@github.com:2222/acme/widgets.git", "acme/widgets"),
    ("git://example.org/acme/widgets", "acme/widgets"),
    ("https://gitlab.com/group/sub/repo.git", "group/sub/repo"),
    ("/srv/git/widgets.git", None),
    ("file:///srv/git/acme/widgets.git", None),
    ("https://github.com/acme", None),
    ("git@github.com:../../etc.git", None),
    ("", None),
])
def test_repo_from_remote(url, repo):
    assert keys.repo_from_remote(url) == repo


def test_repo_from_a_real_git_repository_prefers_origin(tmp_path):
    git("init", "-q", cwd=tmp_path)
    assert keys.git_remote_repo(str(tmp_path)) is None
    git("remote", "add", "upstream", "https://github.com/other/thing.git", cwd=tmp_path)
    assert keys.git_remote_repo(str(tmp_path)) == "other/thing"
    git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=tmp_path)
    assert keys.git_remote_repo(str(tmp_path)) == "acme/widgets"
    assert keys.git_remote_repo(str(tmp_path / "missing")) is None
