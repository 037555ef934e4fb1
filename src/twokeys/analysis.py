"""The analyzer: text to index terms, the same named pipeline for documents and queries.

Technical text is full of identifiers that generic tokenizers break: ``E-4821``,
``qwen2.5:14b``, ``--unrestricted``, ``SSL_CTX_new``, ``/etc/grub.d/40_custom``. This
analyzer finds each *raw token* with a pattern that keeps letters and digits joined by
connectors (``- _ . : / @ + # '``) together, then classifies it:

* a **word** (letters only, possibly with an apostrophe: ``don't``) is lowercased,
  filtered by the stopword list and stemmed;
* an **identifier** (anything with a digit, a connector, an inner capital such as
  ``camelCase``, a leading ``--``/``-``/``.``/``/`` or a trailing ``++``/``#``) is kept
  whole, lowercased and never stemmed. At index time its *parts* are added too:
  the segments between the loose connectors ``: / @ =`` (``qwen2.5`` and ``14b`` for
  ``qwen2.5:14b``) and the atoms between all connectors and camelCase humps
  (``nomic``, ``embed``, ``text``). Alphabetic atoms go through the word filters.

Queries are analysed by the same pipeline with one asymmetry: an identifier that
contains a digit (a code, a version, an address) is searched only as the whole token,
so ``E-4821`` matches documents that contain ``E-4821`` and never ``E-4812`` (which
shares the part ``e``), while ``4821`` alone still finds ``E-4821`` through its part.
Alphabetic identifiers (``nomic-embed-text``, ``SSL_CTX_new``) are expanded on both sides
so ``embed text`` and ``nomic-embed-text`` meet.

A path of names joined by ``::`` (``std::fs::Metadata``) also gives its shorter paths
(``fs::metadata``) and its last name when that is an identifier itself
(``std::fmt::DebugStruct`` -> ``debugstruct``), so a name written as the reader would
shorten it meets the page that writes it in full (issue 33: ``fs::Metadata``,
``DebugStruct``). Each name starts with a letter or ``_`` and is at least two characters
long. Only ``::``: it joins nothing but names, while ``.`` also joins file and host names,
numbers and abbreviations, and giving dotted names their shorter forms put the hybrid
below BM25 on the Python library reference's bare names (python-ids dev: 0.9095 against
BM25's 0.9112; before, 0.9038 against 0.9027).

Runs of CJK characters become overlapping character bigrams (as Lucene's CJK analyzer
does), since they carry no spaces.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from itertools import chain
from types import ModuleType

import Stemmer

from twokeys.errors import ConfigError

_text_kernel: ModuleType | None
try:  # the compiled text rules (``text/_kernel.c``); without them, the pattern alone
    from twokeys.text import _kernel as _text_kernel
except ImportError:  # pragma: no cover - depends on the build
    _text_kernel = None

ANALYZER_VERSION = 2  # 2: a ``::`` path gives its shorter paths

# Lucene's EnglishAnalyzer stop set (as used by Anserini's default BM25 runs).
LUCENE_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)

# The Snowball project's English stop list (snowballstem.org/algorithms/english/stop.txt).
SNOWBALL_STOPWORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing would should could ought i'm you're he's she's it's we're they're i've you've we've
    they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't
    aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't
    shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's
    where's why's how's a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very
    """.split()
)

STOPWORD_SETS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "lucene": LUCENE_STOPWORDS,
    "snowball": SNOWBALL_STOPWORDS,
}
STEMMERS = ("none", "english", "porter")

_ALNUM = r"[^\W_]"
_CONNECTOR = r"[-_.:/@+#'=]"
# No capturing groups, so ``findall`` returns whole tokens.
_RAW_TOKEN = re.compile(
    rf"""
    (?:--?(?={_ALNUM})|\.(?={_ALNUM})|/(?={_ALNUM}))?   # lead: -v  --flag  .NET  /etc
    {_ALNUM}+(?:{_CONNECTOR}+{_ALNUM}+)*                  # body
    (?:\+\+|\#(?![\w]))?                                 # trail: C++  C#
    """,
    re.VERBOSE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_CJK_FIRST = 0x3040  # the first code point _CJK matches
_LOOSE = re.compile(r"[:/@=]")
_LOOSE_SPLIT = re.compile(r"[:/@=]+")
_ALL_SPLIT = re.compile(r"[-_.:/@+#'=]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PATH = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]+::)+[A-Za-z_][A-Za-z0-9_]+")
# Typographic apostrophes and dashes, as their ASCII forms (``str.replace`` of the few
# present is much faster than ``str.translate`` over a long non-ASCII text).
_PUNCTUATION = (
    *(("\u2019", "'"), ("\u2018", "'"), ("\u02bc", "'")),
    *(("\u2010", "-"), ("\u2011", "-"), ("\u2012", "-"), ("\u2013", "-")),
)
# Distinct raw tokens whose terms an analyzer memoises (per kind: index, query).
TERM_CACHE_SIZE = 1_000_000


@dataclass(frozen=True)
class AnalyzerSpec:
    """The analyzer's configuration; saved in the index manifest and validated on load."""

    name: str = "twokeys-technical"
    version: int = ANALYZER_VERSION
    lowercase: bool = True
    stemmer: str = "english"  # Porter2 via PyStemmer; "porter" (Porter 1980) or "none"
    stopwords: str = "snowball"  # "snowball", "lucene" (Anserini's 33 words) or "none"
    identifier_parts: bool = True
    cjk_bigrams: bool = True

    def __post_init__(self) -> None:
        if self.stemmer not in STEMMERS:
            raise ConfigError(
                f"analyzer.stemmer: {self.stemmer!r} is not one of {', '.join(STEMMERS)}"
            )
        if self.stopwords not in STOPWORD_SETS:
            choices = ", ".join(STOPWORD_SETS)
            raise ConfigError(f"analyzer.stopwords: {self.stopwords!r} is not one of {choices}")
        if isinstance(self.version, bool) or not 1 <= self.version <= ANALYZER_VERSION:
            raise ConfigError(
                f"analyzer.version: index uses analyzer version {self.version}, "
                f"this twokeys has version {ANALYZER_VERSION}; rebuild the index"
            )

    @property
    def current(self) -> bool:
        """Whether this twokeys analyses text as the spec's version did. An index built
        by an older version is read (its chunks and vectors are kept when it is rebuilt:
        ``twokeys index`` re-derives the lexical index) but not searched."""
        return self.version == ANALYZER_VERSION

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> AnalyzerSpec:
        fields = cls.__dataclass_fields__
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"analyzer: unknown field(s) {', '.join(unknown)}")
        for key, value in data.items():
            expected = type(getattr(cls(), key))
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise ConfigError(f"analyzer.{key}: expected {expected.__name__}, got {value!r}")
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Token:
    """A raw token as found in the text, before filtering (for tests and ``--explain``)."""

    text: str
    is_identifier: bool


class _TermCache(dict[str, tuple[str, ...]]):
    """Raw token -> its terms: a missing token is computed, and kept while under ``limit``."""

    __slots__ = ("_compute", "_limit")

    def __init__(self, compute: Callable[[str], tuple[str, ...]], limit: int) -> None:
        super().__init__()
        self._compute = compute
        self._limit = limit

    def __missing__(self, raw: str) -> tuple[str, ...]:
        terms = self._compute(raw)
        if len(self) < self._limit:
            self[raw] = terms
        return terms


class Analyzer:
    """Turns text into index terms (:meth:`index_terms`) or query terms (:meth:`query_terms`).

    The terms of a raw token depend on nothing but the token, so each distinct raw token
    is analysed once and its terms memoised (up to :data:`TERM_CACHE_SIZE` tokens per
    kind); a repeated token then costs one dictionary lookup.

    Safe to share between threads: the caches are dictionaries whose entries never
    change once set (two threads may compute the same entry, with the same result), and
    each thread stems with its own stemmer object.
    """

    def __init__(self, spec: AnalyzerSpec | None = None) -> None:
        self.spec = spec or AnalyzerSpec()
        if not self.spec.current:
            raise ConfigError(
                f"analyzer.version: index uses analyzer version {self.spec.version}, "
                f"this twokeys has version {ANALYZER_VERSION}; run `twokeys index` on its "
                "source again (its chunks and vectors are kept)"
            )
        self._stopwords = STOPWORD_SETS[self.spec.stopwords]
        # One PyStemmer object per thread (a Snowball stemmer keeps its working state in
        # the object, so threads must not share one); its own word cache is off (size 0):
        # the term caches below already keep every stem, and its bookkeeping made a new
        # word several times slower to stem.
        self._stemmers = threading.local()
        self._index_cache = _TermCache(partial(self._raw_terms, for_query=False), TERM_CACHE_SIZE)
        self._query_cache = _TermCache(partial(self._raw_terms, for_query=True), TERM_CACHE_SIZE)

    # -- public -------------------------------------------------------------------

    def index_terms(self, text: str) -> list[str]:
        """Terms for a document: identifiers whole plus their parts."""
        return self._analyze(text, self._index_cache)

    def query_terms(self, text: str) -> list[str]:
        """Terms for a query: digit-bearing identifiers whole only (see module doc)."""
        return self._analyze(text, self._query_cache)

    def query_terms_of_raws(self, raws: Iterable[str]) -> list[tuple[str, ...]]:
        """The query terms of each raw token (as found by :func:`raw_tokens_of` in the
        :meth:`scan_form` of a query): :meth:`query_terms` of a text is those of its raw
        tokens, one after another."""
        cache = self._query_cache
        return [cache[raw] for raw in raws]

    def tokens(self, text: str) -> list[Token]:
        """The raw tokens of ``text``, classified, before normalisation."""
        out: list[Token] = []
        for raw in _raw_tokens(_normalize(text), self.spec.cjk_bigrams):
            raw = _strip_possessive(raw)
            out.append(Token(raw, _is_identifier(raw)))
        return out

    def scan_form(self, text: str) -> str | list[str]:
        """``text`` as the raw-token scan reads it: normalised, or already split into its
        raw tokens where CJK bigrams are made (see :func:`raw_tokens_of`)."""
        if text.isascii():  # no normalising to do, no CJK
            return text
        text = _normalize(text)
        if self.spec.cjk_bigrams and _has_cjk(text):
            return list(_raw_tokens(text, cjk_bigrams=True))
        return text

    def index_terms_of_raws(self, raws: Iterable[str]) -> list[tuple[str, ...]]:
        """The index terms of each raw token, as :meth:`index_terms` gives them for it
        (uncached: for a caller that analyses each distinct raw token once). The plain
        words, most of them, are stemmed in one call."""
        out: list[tuple[str, ...]] = []
        words: list[str] = []  # the plain words to stem
        at: list[int] = []  # their places in ``out``
        stop = self._stopwords
        lowercase = self.spec.lowercase
        parts = self.spec.identifier_parts
        # identifiers' words (the "il" of il-6, il-10, ...) recur across raw tokens:
        # each distinct one is analysed once
        known: dict[str, str | None] = {}

        def word_of(atom: str) -> str | None:
            if atom in known:
                return known[atom]
            result = known[atom] = self._word(atom)
            return result

        for raw in raws:
            # a word: no camelCase hump (or all capitals), as _raw_terms and _is_identifier
            # tell them apart
            if raw.isalpha() and (
                raw.islower() or raw[1:].islower() or raw.isupper() or not _CAMEL.search(raw)
            ):
                word = raw.lower() if lowercase else raw
                if word in stop:
                    out.append(())
                else:
                    at.append(len(out))
                    words.append(word)
                    out.append(())
            elif "'" not in raw:
                # an identifier: _terms(raw, True, ...) written out (no possessive to strip,
                # and _is_identifier holds for a token without "'" that is no plain word)
                whole = raw.lower() if lowercase else raw
                if raw.isdigit() or not parts:
                    out.append((whole,))
                else:
                    out.append((whole, *self._parts(raw, whole, word_of)))
            else:
                token = _strip_possessive(raw)  # as _raw_terms does, less its plain-word test
                out.append(self._terms(token, _is_identifier(token), False, word_of))
        if words and self.spec.stemmer != "none":
            words = self._stemmer().stemWords(words)
        for i, word in zip(at, words, strict=True):
            out[i] = (word,)
        return out

    def terms_of(self, token: Token, *, for_query: bool) -> tuple[str, ...]:
        """The terms one raw token contributes (uncached).

        ``index_terms(text)`` equals the terms of each of ``tokens(text)`` in order, and
        likewise for queries; the analyzer's fast path is checked against this one.
        """
        return self._terms(token.text, token.is_identifier, for_query)

    # -- pipeline -----------------------------------------------------------------

    def _analyze(self, text: str, cache: _TermCache) -> list[str]:
        text = _normalize(text)
        raws: Iterable[str]
        if self.spec.cjk_bigrams and _has_cjk(text):
            raws = _raw_tokens(text, cjk_bigrams=True)
        else:
            raws = _RAW_TOKEN.findall(text)
        return list(chain.from_iterable(map(cache.__getitem__, raws)))

    def _raw_terms(self, raw: str, *, for_query: bool) -> tuple[str, ...]:
        if raw.isalpha() and (raw.islower() or raw[1:].islower()):  # a plain word: no hump
            word = self._word(raw)
            return () if word is None else (raw if word == raw else word,)
        token = _strip_possessive(raw)
        terms = self._terms(token, _is_identifier(token), for_query)
        if raw in terms:  # share the cache key's string, to save memory
            return tuple(raw if term == raw else term for term in terms)
        return terms

    def _terms(
        self,
        raw: str,
        is_identifier: bool,
        for_query: bool,
        word_of: Callable[[str], str | None] | None = None,
    ) -> tuple[str, ...]:
        """The terms of a raw token (``word_of``: :meth:`_word`, or a memo of it)."""
        word_of = word_of or self._word
        if not is_identifier:
            word = word_of(raw)
            return () if word is None else (word,)
        whole = self._case(raw)
        if (
            raw.isdigit()  # a number has no parts
            or not self.spec.identifier_parts
            or (for_query and any(c.isdigit() for c in raw))
        ):
            return (whole,)
        return (whole, *self._parts(raw, whole, word_of))

    def _parts(self, raw: str, whole: str, word: Callable[[str], str | None]) -> list[str]:
        seen = {whole}
        parts: list[str] = []
        segments, pieces = _split_identifier(raw)
        if len(segments) > 1:
            for segment in segments:
                if _ALL_SPLIT.search(segment):
                    term = self._case(segment)
                    if term not in seen:
                        seen.add(term)
                        parts.append(term)
        for term in _shorter_forms(raw):
            term = self._case(term)
            if term not in seen:
                seen.add(term)
                parts.append(term)
        lowercase = self.spec.lowercase
        for piece in pieces:
            if not piece:
                continue
            # no camelCase hump without both cases, nor with one capital first (IL, il,
            # Induced): most pieces need no split
            flat = piece.islower() or piece[1:].islower() or piece.isupper() or piece.isdigit()
            for atom in (piece,) if flat else _CAMEL.split(piece):
                if not atom:
                    continue
                part = word(atom) if atom.isalpha() else (atom.lower() if lowercase else atom)
                if part is not None and part not in seen:
                    seen.add(part)
                    parts.append(part)
        return parts

    def _case(self, text: str) -> str:
        return text.lower() if self.spec.lowercase else text

    def _word(self, word: str) -> str | None:
        """Lowercase, drop possessive 's, stopword filter and stem a plain word."""
        spec = self.spec
        w = word.lower() if spec.lowercase else word
        if w.endswith("'s"):
            w = w[:-2]
        if not w or w in self._stopwords:
            return None
        if spec.stemmer == "none":
            return w
        stemmer = getattr(self._stemmers, "stemmer", None) or self._stemmer()
        result: str = stemmer.stemWord(w)
        return result

    def _stemmer(self) -> Stemmer.Stemmer:
        """This thread's stemmer."""
        stemmer: Stemmer.Stemmer | None = getattr(self._stemmers, "stemmer", None)
        if stemmer is None:
            stemmer = self._stemmers.stemmer = Stemmer.Stemmer(self.spec.stemmer, 0)
        return stemmer


def _normalize(text: str) -> str:
    if text.isascii():  # NFKC leaves ASCII alone and it has none of _PUNCTUATION
        return text
    text = unicodedata.normalize("NFKC", text)
    for typographic, plain in _PUNCTUATION:
        if typographic in text:
            text = text.replace(typographic, plain)
    return text


def _split_identifier(raw: str) -> tuple[Sequence[str], Sequence[str]]:
    """An identifier's loose segments (split at ``: / @ =``) and its pieces (split at
    every connector, with empty strings where a lead or a run of connectors was), as
    :func:`_split_identifier_by_patterns` gives them less its empty strings. Most
    identifiers (IL-6, 0.05, p53, HepG2-derived) hold no connector but ``-`` and ``.``:
    no loose segment, no trail to drop, and ``str.split`` finds the pieces."""
    if raw.replace("-", "").replace(".", "").isalnum():
        return (), (raw,) if raw.isalnum() else raw.replace(".", "-").split("-")
    return _split_identifier_by_patterns(raw)


def _split_identifier_by_patterns(raw: str) -> tuple[Sequence[str], Sequence[str]]:
    """:func:`_split_identifier` for any identifier: the lead and the trail (``C++``,
    ``C#``) dropped, then the loose segments if any and the pieces by the patterns."""
    body = raw.lstrip("-./")
    if body.endswith("++"):
        body = body[:-2]
    body = body.rstrip("#")
    segments = [s for s in _LOOSE_SPLIT.split(body) if s] if _LOOSE.search(body) else ()
    return segments, _ALL_SPLIT.split(body)


def _shorter_forms(raw: str) -> list[str]:
    """A ``::`` path's shorter paths and its last name if that is an identifier
    (``std::fmt::DebugStruct`` -> ``fmt::DebugStruct``, ``DebugStruct``); nothing for
    any other token (see the module doc)."""
    if "::" not in raw or not _PATH.fullmatch(raw):
        return []
    names = raw.split("::")
    forms = ["::".join(names[i:]) for i in range(1, len(names) - 1)]
    if _is_identifier(names[-1]):
        forms.append(names[-1])
    return forms


def _strip_possessive(raw: str) -> str:
    """O'Reilly's -> O'Reilly, SSL_CTX's -> SSL_CTX."""
    if raw.endswith(("'s", "'S")) and len(raw) > 2:
        return raw[:-2]
    return raw


def _has_cjk(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`_CJK`: not searched for where the
    compiled kernel finds every character below its ranges (a search over a long text
    of accents and Greek letters cost more than its normalisation)."""
    if _text_kernel is not None and _text_kernel.all_below(text, _CJK_FIRST):
        return False
    return _CJK.search(text) is not None


def _raw_tokens(text: str, cjk_bigrams: bool) -> Iterable[str]:
    """Raw tokens of normalised text; runs of CJK become character bigrams."""
    for raw in _RAW_TOKEN.findall(text):
        if cjk_bigrams and _CJK.search(raw):
            yield from _split_cjk(raw)
        else:
            yield raw


def _split_cjk(raw: str) -> Iterable[str]:
    pos = 0
    for m in _CJK.finditer(raw):
        if m.start() > pos:
            yield from _plain(raw[pos : m.start()])
        run = m.group(0)
        if len(run) == 1:
            yield run
        else:
            for i in range(len(run) - 1):
                yield run[i : i + 2]
        pos = m.end()
    if pos < len(raw):
        yield from _plain(raw[pos:])


def _plain(fragment: str) -> Iterable[str]:
    yield from _RAW_TOKEN.findall(fragment)


def raw_tokens_of(scanned: str | list[str]) -> list[str]:
    """The raw tokens of a text in its :meth:`Analyzer.scan_form`."""
    return scanned if isinstance(scanned, list) else _RAW_TOKEN.findall(scanned)


def _is_identifier(raw: str) -> bool:
    if raw.isalpha():
        return bool(_CAMEL.search(raw)) and not raw.isupper()
    stripped = raw.replace("'", "")
    # a contraction or possessive (don't, user's) is a word
    return not (stripped.isalpha() and raw.count("'") == 1 and not raw.startswith("'"))


@lru_cache(maxsize=8)
def analyzer_for(spec: AnalyzerSpec) -> Analyzer:
    """A shared analyzer per spec (analyzers are stateless apart from their term caches)."""
    return Analyzer(spec)
