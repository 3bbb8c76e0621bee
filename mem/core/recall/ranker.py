"""The offline selector: a lexical ranker over memory files, in any script and width.

BM25F over four fields of each topic file — its name (frontmatter ``name``
and the file name), its description, its body and its line in MEMORY.md
(title and hook, which often name it in other words) — with the name and the
description weighted above the body, since they are written to say what the
memory is for. Indexing and querying see text alike: NFKC first, so
full-width Latin and digits typed from a CJK input method (ＤＯＣＫＥＲ) and
half-width katakana meet their ordinary forms, then case folding. Then terms,
by script:

* Latin-script words are case-folded, split at camelCase and digit
  boundaries (the whole word is kept too), stop words dropped, and reduced
  by the Porter stemmer, so ``deploying``, ``deploys`` and ``deployment``
  meet at ``deploy``.
* Chinese and Japanese have no spaces: runs of Han, kana and CJK characters
  become overlapping character bigrams (``数据仓库`` → 数据 据仓 仓库). Bigrams
  made of grammatical particles, or of a function word, carry nothing and are
  dropped; in Japanese, pairs never cross a change of script, and hiragana
  (mostly inflection and particles next to kanji) keeps only its words of
  three characters or more (やりかた), or of two in text written in hiragana
  alone (しけんのやりかた).
* Korean words lose their particles and endings (점검표를 → 점검표) and are
  indexed with their prefixes of two syllables or more, so a shortened
  compound (운영 점검) meets the whole noun (운영 출시 점검표).

One text may mix all of these; each run of a script is cut its own way.

A score is comparable across memory directories of any size: each query term
contributes ``idf(t) / idf_max`` times a saturated field-weighted term
frequency, so a rare word matched squarely in a description is worth about
0.5 and a common one little (a directory of a few memories is judged as if it
held 50, or every word would look common). In a query, the bigrams of one CJK
run share the weight of its words (about one per two characters), so 数据库
counts as one and a half words, not two. A memory is returned only if its
score clears an absolute threshold (evidence that does not happen by chance),
a relative one (no long tail under a clear winner), and — when it shares a
single word with a longer query — a higher bar, since one shared word is the
commonest way for an unrelated memory to match (a word said twice counts
once). An unrelated question therefore mostly selects nothing; what it still
selects shares two common words of the question and scores under about 0.9,
as a memory sharing two words of a long relevant question can: words alone
cannot tell them apart (bench/RESULTS.md), the model path can.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence

# --- parameters (chosen on the tuning half of tests/fixtures/recall-bench; see bench/RESULTS.md) ---

K1 = 1.2
#: field: (weight, length normalisation b)
FIELDS = {"name": (2.0, 0.3), "description": (3.0, 0.5), "body": (1.0, 0.75), "index": (1.0, 0.3)}
#: A memory needs at least this much evidence (in idf_max units) to be selected.
MIN_SCORE = 0.6
#: ... and at least this share of the best memory's score.
RELATIVE = 0.4
#: A memory that shares only one word with a query of several words needs this much.
MIN_SINGLE = 1.0
#: Document frequencies are judged as if the directory held at least this many memories: in a
#: directory of three, every word would look common and nothing would ever clear the threshold.
MIN_DOCS = 50
#: Bump when the terms a text gives change: cached indexes of older versions are rebuilt.
INDEX_VERSION = 2
#: Bodies are indexed up to this many characters (what surfacing could show, and some).
BODY_CHARS = 8192


# --- English ---------------------------------------------------------------

STOP_WORDS = frozenset(
    """
    a about above after again against all almost also am an and any anything are aren around as at
    be because been before being below between both but by can cannot could couldn did didn do does
    doesn doing don done down during each either else ever every few for from further get gets got
    had hadn has hasn have haven having he her here hers herself him himself his how however i if in
    into is isn it its itself just let lets like ll me might more most much must mustn my myself
    need needs no nor not now of off on once one only or other our ours ourselves out over own
    please re really same shall she should shouldn so some something still such than that thats the
    their theirs them themselves then there these they thing things this those though through to too
    under until up upon us ve very via want wants was wasn way we were weren what whats when where
    whether which while who whom why will with won would wouldn yet you your yours yourself
    yourselves okay ok hey hi hello thanks thank tell show give know think help use using used make
    sure going go also etc eg ie
    """.split()
    # Request words: every prompt to a coding agent has them; they say nothing about a memory's subject.
    + """
    write add change update create try look find suggest new old good fine keep put see
    """.split()
)

_VOWELS = frozenset("aeiou")
#: Stems of the stop words that are not stop words themselves ("changed" -> chang); kept in step
#: with STOP_WORDS by a test, and written out so start-up does not stem them every time.
_STOP_STEMS = frozenset(
    """
    abov ani anyth becaus befor chang creat doe dure els everi howev onc onli ourselv pleas
    realli someth themselv thi tri updat veri whi yourselv
    """.split()
)


def _cons(w: str, i: int) -> bool:
    c = w[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]."""
    m, i, n = 0, 0, len(stem)
    while i < n and _cons(stem, i):
        i += 1
    while i < n:
        while i < n and not _cons(stem, i):
            i += 1
        if i >= n:
            break
        while i < n and _cons(stem, i):
            i += 1
        m += 1
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    n = len(w)
    return n >= 3 and _cons(w, n - 3) and not _cons(w, n - 2) and _cons(w, n - 1) and w[-1] not in "wxy"


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
)


def _longest(word: str, suffixes: Iterable[str]) -> str | None:
    best = None
    for s in suffixes:
        if word.endswith(s) and (best is None or len(s) > len(best)):
            best = s
    return best


def porter(word: str) -> str:
    """The Porter (1980) stemmer, for lower-case ASCII words."""
    w = word
    if len(w) <= 2:
        return w
    # 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # 1b
    again = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, again = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, again = w[:-3], True
    if again:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    # 1c, as Porter2 has it: only after a consonant, so deploy/deploys/deploying meet
    if w.endswith("y") and len(w) > 2 and _cons(w, len(w) - 2):
        w = w[:-1] + "i"
    # 2, 3
    for table in (_STEP2, _STEP3):
        s = _longest(w, (a for a, _ in table))
        if s is not None:
            stem = w[: -len(s)]
            if _measure(stem) > 0:
                w = stem + dict(table)[s]
    # 4
    s = _longest(w, _STEP4)
    if s is not None:
        stem = w[: -len(s)]
        if _measure(stem) > 1 and (s != "ion" or stem.endswith(("s", "t"))):
            w = stem
    # 5a
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    # 5b
    if _measure(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w


# --- CJK -------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_CJK = _HAN + _HIRAGANA + _KATAKANA
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"

# Words: runs of letters and digits. A word with CJK characters in it is split again (lazily:
# the pattern with the CJK ranges takes a while to compile, and most memories need none of it).
_WORD = re.compile(r"[^\W_]+")
_SCRIPT_SPLIT = rf"[{_CJK}]+|[{_HANGUL}]+|[^{_CJK}{_HANGUL}]+"
_CAMEL = r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_]+"
_HAS_KANA = rf"[{_HIRAGANA}{_KATAKANA}]"

#: Chinese grammatical characters: a bigram holding one spans a word boundary or is grammar.
_CJK_PARTICLES = frozenset("的了吗呢吧啊嘛呀哦着之是在和与及或把被让给对从到很太也都就又有")
#: Chinese function words that say nothing about a memory's subject; text is split at them.
_CJK_STOP_WORDS = (
    """
    我们 你们 他们 她们 它们 咱们 这个 那个 这些 那些 哪些 哪个 这样 那样 这里 那里 哪里 什么 怎么 怎样
    如何 为什么 可以 可能 一下 一个 一些 请问 帮我 给我 不是 就是 还是 但是 因为 所以 如果 然后 应该
    需要 有没有 没有 是否 现在 已经 时候 其他 自己 以及 或者 并且 而且 这么 那么 多少 为了 关于 对于
    通过 进行 问题 一直 知道 觉得 感觉 直接 一样 有点 我 你 他 她 它 这 那 哪
    """.split()
)
_CJK_STOP_SPLIT = (
    "|".join(sorted((re.escape(w) for w in _CJK_STOP_WORDS), key=len, reverse=True))
    + "|[" + "".join(sorted(_CJK_PARTICLES)) + "]"
)
_SCRIPT_RUN = rf"[{_HIRAGANA}]+|[{_KATAKANA}]+|[^{_HIRAGANA}{_KATAKANA}]+"
#: Japanese particles: a hiragana stretch is cut at them into words.
_KANA_PARTICLES = "のをはがにでとへも"
#: Inflections and auxiliaries that end a hiragana stretch (書いてください, 確認しました). Patterns
#: here are strings, compiled (and cached by re) when text in their script first comes.
_KANA_ENDINGS = (
    "(?:すればいい|ればいい|ばいい|たらいい|すれば|れば|たら|ください|ましょう|ました|ません|します|しました|している|しない|されて|される|られる|ですか|でした"
    "|ます|です|する|して|した|たい|ない|れる|だ|か|ね|よ)$"
)

#: Hiragana words that say nothing about a memory's subject.
_KANA_STOP_WORDS = frozenset(
    "いつ どこ なに なん どう どの どれ だれ いい よい これ それ あれ この その あの ここ そこ ため こと もの"
    " よう とき ところ ちょっと おねがい".split()
)


def _kana_words(stretch: str, alone: bool) -> list[str]:
    """The words of a hiragana stretch worth pairing.

    A stretch is cut at a particle only where two characters or more stand on
    each side (しけん|の|やりかた, but まとめ stays whole), and loses its
    inflection (書い|てください). Next to kanji, hiragana is mostly inflection
    and particles, so only words of three characters or more count there
    (やりかた, ふりかえり); text written in hiragana alone keeps its
    two-character words too.
    """
    pieces, begin = [], 0
    for i, c in enumerate(stretch):
        if c in _KANA_PARTICLES and i - begin >= 2 and len(stretch) - i - 1 >= 2:
            pieces.append(stretch[begin:i])
            begin = i + 1
    pieces.append(stretch[begin:])
    least = 2 if alone else 3
    out = []
    for w in pieces:
        w = re.sub(_KANA_ENDINGS, "", w.strip(_KANA_PARTICLES))
        if len(w) >= least and w not in _KANA_STOP_WORDS:
            out.append(w)
    return out


def _cjk_parts(run: str) -> list[str]:
    """The stretches of a CJK run that carry meaning, to be cut into bigrams."""
    if re.search(_HAS_KANA, run):
        # Japanese: pair within katakana, kanji and hiragana stretches, never across a script change.
        stretches = re.findall(_SCRIPT_RUN, run)
        alone = len(stretches) == 1
        out = []
        for p in stretches:
            if "\u3041" <= p[0] <= "\u309f":
                out.extend(_kana_words(p, alone))
            else:
                out.append(p)
        return out
    return [p for p in re.split(_CJK_STOP_SPLIT, run) if p]


def _bigrams(part: str) -> list[str]:
    return [part] if len(part) == 1 else [part[i:i + 2] for i in range(len(part) - 1)]


# --- Korean ----------------------------------------------------------------

#: Particles and verb endings that follow a Korean word (점검표를, 배포하려면), longest first:
#: stripped (twice at most: 배포하기도) while two syllables remain.
_HANGUL_ENDINGS = (
    "(?:" + "|".join(sorted(
        """
        에서는 에서도 에게서 으로는 으로도 까지는 부터는 이라고 이라는 하려면 하는데 했는데 합니다 합니까
        했어요 했나요 하나요 되나요 할까요 해야 해요 해서 하고 하는 하면 하기 하지 했다 했나 할까 하다
        되는 되면 되나 돼요 됐어 되어 된 할 한 해 에서 에게 한테 으로 부터 까지 보다 처럼 마다 이나 이랑
        라고 라는 나요 까요 은 는 이 가 을 를 에 의 와 과 로 도 만 랑 요
        """.split(), key=len, reverse=True)) + ")$"
)
#: Korean words that say nothing about a memory's subject (after their endings are stripped).
_HANGUL_STOP_WORDS = frozenset(
    """
    어떻게 어떤 무엇 뭐 뭘 어디 어디서 언제 왜 누구 이거 그거 저거 이것 그것 저것 여기 거기 우리 저희 제가
    내가 좀 더 그리고 그런데 하지만 그래서 또 및 등 것 수 때 잘 다 있 없 있어 없어 있나 있는 없는 있을
    주세요 줘 알려줘 알려주세요 알려 해줘 해주세요 부탁 이번 지금 오늘 같은 다른 모든 이런 그런 하나 되나
    이 그 저 나 너 제 내 어떻게든 방법 법 뭔가 정도 건가 건지
    """.split()
)


def _hangul_terms(word: str) -> tuple[str, ...]:
    """A Korean word's stem and, for a compound, the stem's prefixes of two syllables or more.

    Korean compounds are written with or without spaces (운영 점검표, 운영점검표);
    indexing the prefixes lets a shortened query word (점검) meet the whole
    noun (점검표) it begins.
    """
    if re.fullmatch(_HANGUL_ENDINGS, word):
        return ()  # a particle written apart (Sentry 에서)
    for _ in range(2):
        stripped = re.sub(_HANGUL_ENDINGS, "", word)
        if stripped in _HANGUL_STOP_WORDS:
            return ()  # 뭐라고, 어디에서: a question word with its ending
        if stripped == word or len(stripped) < 2:
            break
        word = stripped
    if word in _HANGUL_STOP_WORDS:
        return ()
    return (word, *(word[:k] for k in range(len(word) - 1, 1, -1)))


# --- Latin -----------------------------------------------------------------

_stem_cache: dict[str, str | None] = {}


def _latin_term(word: str) -> str | None:
    """A case-folded word → its term, or None for a stop word (cached: the same words recur)."""
    cached = _stem_cache.get(word, "")
    if cached != "":
        return cached
    if word in STOP_WORDS or (len(word) == 1 and not word.isdigit()):
        term = None
    elif word.isascii() and word.isalpha():
        term = porter(word)
        if term in _STOP_STEMS or term in STOP_WORDS:
            term = None  # "changed", "writing": inflections of a stop word
    else:
        term = word
    if len(_stem_cache) < 100_000:
        _stem_cache[word] = term
    return term


def _is_cjk(c: str) -> bool:
    return ("\u3041" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff"
            or "\uff66" <= c <= "\uff9f" or "\u31f0" <= c <= "\u31ff" or c >= "\U00020000")


def _is_hangul(c: str) -> bool:
    return "\uac00" <= c <= "\ud7af" or "\u1100" <= c <= "\u11ff" or "\u3130" <= c <= "\u318f"


def _token_units(tok: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The words of one token as ("latin", terms), ("hangul", terms) or ("cjk", bigrams of one stretch)."""
    if _is_cjk(tok[0]):
        return tuple(("cjk", tuple(_bigrams(part))) for part in _cjk_parts(tok))
    if _is_hangul(tok[0]):
        found = _hangul_terms(tok)
        return (("hangul", found),) if found else ()
    if tok.islower() or tok.isupper() or tok.isdigit() or not tok.isascii():
        # camelCase is split in ASCII only: Straße is one word (strass), not Stra + ße
        term = _latin_term(tok.lower() if tok.isascii() else tok.casefold())
        return (("latin", (term,)),) if term else ()
    parts = [p.lower() for p in re.findall(_CAMEL, tok)]
    if len(parts) < 2 or any(len(p) < 2 for p in parts):
        parts = [tok.lower()]  # iOS, getX: not worth splitting
    else:
        parts = [tok.lower(), *parts]  # PostgreSQL: postgresql, postgre, sql
    found = tuple(t for t in map(_latin_term, parts) if t)
    return (("latin", found),) if found else ()


_token_cache: dict[str, tuple[str, ...]] = {}


def normalise(text: str) -> str:
    """Text as indexing and querying both see it: NFKC, so full-width Latin and digits (ＤＯＣＫＥＲ),
    half-width katakana and compatibility characters meet their ordinary forms. Case is folded
    per word, after camelCase is split."""
    if text.isascii():
        return text
    import unicodedata  # a built-in module: cheap, and ASCII text never needs it

    return unicodedata.normalize("NFKC", text)


def _tokens(text: str) -> list[str]:
    if text.isascii():
        return _WORD.findall(text)
    out: list[str] = []
    for w in _WORD.findall(normalise(text)):
        if w.isascii():
            out.append(w)
        else:
            out.extend(re.findall(_SCRIPT_SPLIT, w))
    return out


def terms(text: str) -> list[str]:
    """The index terms of a text, in order (duplicates kept: they are term frequencies)."""
    out: list[str] = []
    cache = _token_cache
    for tok in _tokens(text):
        found = cache.get(tok)
        if found is None:
            found = tuple(t for _, ts in _token_units(tok) for t in ts)
            if len(cache) < 200_000:
                cache[tok] = found
        out.extend(found)
    return out


def _units(text: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    for tok in _tokens(text):
        yield from _token_units(tok)


class Query:
    """A query's terms, each with the share of a word it stands for, and its words for coverage."""

    # Plain classes rather than dataclasses here and in recall: defining a dataclass costs
    # about half a millisecond at import, and this module is on the path of every prompt.
    __slots__ = ("weights", "units")

    def __init__(self, weights: dict[str, float], units: list[tuple[str, tuple[str, ...]]]):
        self.weights = weights
        self.units = units

    @property
    def words(self) -> float:
        return sum(_unit_words(kind, ts, set(ts)) for kind, ts in self.units)

    def coverage(self, matched: set[str]) -> float:
        """How many of the query's words a document matched."""
        return sum(_unit_words(kind, ts, matched) for kind, ts in self.units)


def _unit_words(kind: str, ts: tuple[str, ...], matched: set[str]) -> float:
    if kind != "cjk" or len(ts) == 1:
        return 1.0 if any(t in matched for t in ts) else 0.0
    covered: set[int] = set()
    for i, t in enumerate(ts):
        if t in matched:
            covered.update((i, i + 1))
    return len(covered) / 2


def query_terms(text: str) -> Query:
    weights: dict[str, float] = {}
    # A word said twice is one word of the query: "docker stop and docker kill" is not half about docker.
    units = list(dict.fromkeys(_units(text)))
    for kind, ts in units:
        if kind != "cjk":
            w = 1.0 / len(ts)  # a camelCase word or a Korean compound is one word, however it is split
        else:
            n = len(ts) + 1 if len(ts) > 1 else 1
            # Overlapping bigrams are not independent evidence: 数据库 is one and a half words, not two.
            w = 1.0 if n == 1 else (n / 2) / (n - 1)
        for t in ts:
            if w > weights.get(t, 0.0):
                weights[t] = w
    return Query(weights, units)


_TYPE_PREFIX = re.compile(r"^(?:user|feedback|project|reference)[_-]")


def name_text(relpath: str, name: str | None) -> str:
    """What the name field holds: the frontmatter name and the file name.

    A file name's leading ``user_``/``feedback_``/... is the naming convention
    for the type, not the subject, and is left out.
    """
    base = relpath.rsplit("/", 1)[-1]
    if base.endswith(".md"):
        base = base[:-3]
    base = _TYPE_PREFIX.sub("", base)
    return f"{name or ''} {base.replace('_', ' ').replace('-', ' ')}"


# --- the index -------------------------------------------------------------


class Doc:
    """One memory as the index sees it."""

    __slots__ = ("key", "fields", "lengths")

    def __init__(self, key: str, fields: dict[str, dict[str, int]], lengths: dict[str, int]):
        self.key = key  # the relpath
        self.fields = fields  # field -> term -> count
        self.lengths = lengths  # field -> number of terms


class Hit:
    """A memory that shares terms with a query."""

    __slots__ = ("key", "score", "matched", "coverage")

    def __init__(self, key: str, score: float, matched: tuple[str, ...], coverage: float = 0.0):
        self.key = key
        self.score = score
        self.matched = matched  # the query terms it matched
        self.coverage = coverage  # how many of the query's words it matched (CJK bigrams count as half words)

    def __repr__(self) -> str:
        return f"Hit({self.key!r}, {self.score:.3f}, {self.matched!r}, {self.coverage:g})"


def count_terms(text: str) -> tuple[dict[str, int], int]:
    """A field's term counts and length."""
    from collections import Counter

    found = terms(text)
    return dict(Counter(found)), len(found)


def make_doc(key: str, name: str, description: str, body: str, index_line: str = "") -> Doc:
    """``index_line``: the memory's line in MEMORY.md (its title and hook), which names it in other words."""
    fields, lengths = {}, {}
    for field, text in (("name", name), ("description", description), ("body", body[:BODY_CHARS]),
                        ("index", index_line)):
        fields[field], lengths[field] = count_terms(text)
    return Doc(key, fields, lengths)


class Index:
    """BM25F over a set of memories; ``rank(query)`` gives the hits above the thresholds."""

    def __init__(self, docs: Sequence[Doc], *, fields: dict | None = None, k1: float = K1,
                 min_score: float = MIN_SCORE, relative: float = RELATIVE, min_single: float = MIN_SINGLE,
                 df: dict[str, int] | None = None):
        self.docs = list(docs)
        self.fields = FIELDS if fields is None else fields
        self.k1 = k1
        self.min_score = min_score
        self.relative = relative
        self.min_single = min_single
        n = len(self.docs)
        self.avg = {
            f: (sum(d.lengths[f] for d in self.docs) / n if n else 0.0) or 1.0 for f in self.fields
        }
        # Given (from a cache), or filled per query term: a query has a few terms, the index thousands.
        self._df: dict[str, int] = {} if df is None else df
        self._df_complete = df is not None
        self.n = max(n, MIN_DOCS)
        self.idf_max = math.log(1 + (self.n + 0.5) / 0.5)

    def df(self, term: str) -> int:
        """How many memories hold ``term`` in any field."""
        n = self._df.get(term)
        if n is None:
            if self._df_complete:
                return 0
            n = sum(1 for d in self.docs if any(term in counts for counts in d.fields.values()))
            self._df[term] = n
        return n

    def all_df(self) -> dict[str, int]:
        """Every term's document frequency (to keep with a cached index)."""
        df: dict[str, int] = {}
        for d in self.docs:
            seen: set[str] = set()
            for counts in d.fields.values():
                seen.update(counts)
            for t in seen:
                df[t] = df.get(t, 0) + 1
        return df

    def idf(self, term: str) -> float:
        """Inverse document frequency, as a share of the largest one possible in this index."""
        df = self.df(term)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5)) / self.idf_max

    def scores(self, query: str | Query, docs: Iterable[Doc] | None = None) -> list[Hit]:
        """Every memory (of ``docs``, default all) that shares a term with the query, best first (no thresholds)."""
        q = query if isinstance(query, Query) else query_terms(query)
        if not q.weights:
            return []
        # Per query term its weight times idf, per field its constants: worked out once, not per memory.
        q_items = [(t, qw * self.idf(t)) for t, qw in q.weights.items()]
        fields = [(f, weight, b, self.avg[f]) for f, (weight, b) in self.fields.items()]
        k1 = self.k1
        hits = []
        for d in self.docs if docs is None else docs:
            total = 0.0
            matched = []
            for t, qi in q_items:
                tfw = 0.0
                for f, weight, b, avg in fields:
                    tf = d.fields[f].get(t)
                    if tf:
                        tfw += weight * tf / (1 - b + b * d.lengths[f] / avg)
                if tfw:
                    total += qi * tfw / (k1 + tfw)
                    matched.append(t)
            if total > 0:
                hits.append(Hit(d.key, total, tuple(matched), q.coverage(set(matched))))
        hits.sort(key=lambda h: -h.score)
        return hits

    def rank(self, query: str, limit: int = 5, exclude: Iterable[str] = ()) -> list[Hit]:
        """The memories worth surfacing, best first; ``exclude`` keys are not candidates (but still
        count for how common a word is)."""
        q = query_terms(query)
        skip = set(exclude)
        return self.worth_surfacing(q, [h for h in self.scores(q) if h.key not in skip], limit)

    def worth_surfacing(self, q: Query, hits: list[Hit], limit: int = 5) -> list[Hit]:
        """Of ``hits`` (``scores``' answer for ``q``), the ones ``rank`` keeps."""
        # One shared word is weak evidence: unless the query is that short, it must be strong.
        single = min(2.0, q.words / 2)
        hits = [h for h in hits if h.coverage >= single - 1e-9 or h.score >= self.min_single]
        if not hits or hits[0].score < self.min_score:
            return []
        floor = max(self.min_score, self.relative * hits[0].score)
        return [h for h in hits if h.score >= floor][:limit]
