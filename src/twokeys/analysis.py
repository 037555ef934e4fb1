"""The analyzer: text to index terms, the same named pipeline for documents and queries.

Technical text is full of identifiers that generic tokenizers break: ``ZX-4821``,
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
so ``ZX-4821`` matches documents that contain ``ZX-4821`` and never ``ZX-4812`` (which
shares the part ``zx``), while ``4821`` alone still finds ``ZX-4821`` through its part.
Alphabetic identifiers (``nomic-embed-text``, ``SSL_CTX_new``) are expanded on both sides
so ``embed text`` and ``nomic-embed-text`` meet.

Runs of CJK characters become overlapping character bigrams (as Lucene's CJK analyzer
does), since they carry no spaces.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache

import Stemmer

from twokeys.errors import ConfigError

ANALYZER_VERSION = 1

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
_RAW_TOKEN = re.compile(
    rf"""
    (?P<lead>--?(?={_ALNUM})|\.(?={_ALNUM})|/(?={_ALNUM}))?   # -v  --flag  .NET  /etc
    (?P<body>{_ALNUM}+(?:{_CONNECTOR}+{_ALNUM}+)*)
    (?P<trail>\+\+|\#(?![\w]))?                               # C++  C#
    """,
    re.VERBOSE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_LOOSE_SPLIT = re.compile(r"[:/@=]+")
_ALL_SPLIT = re.compile(r"[-_.:/@+#'=]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_DASHES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-"})


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
        if self.version != ANALYZER_VERSION:
            raise ConfigError(
                f"analyzer.version: index uses analyzer version {self.version}, "
                f"this twokeys has version {ANALYZER_VERSION}; rebuild the index"
            )

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


class Analyzer:
    """Turns text into index terms (:meth:`index_terms`) or query terms (:meth:`query_terms`)."""

    def __init__(self, spec: AnalyzerSpec | None = None) -> None:
        self.spec = spec or AnalyzerSpec()
        self._stopwords = STOPWORD_SETS[self.spec.stopwords]
        self._stemmer = None if self.spec.stemmer == "none" else Stemmer.Stemmer(self.spec.stemmer)
        self._word_cache: dict[str, str | None] = {}

    # -- public -------------------------------------------------------------------

    def index_terms(self, text: str) -> list[str]:
        """Terms for a document: identifiers whole plus their parts."""
        return self._analyze(text, for_query=False)

    def query_terms(self, text: str) -> list[str]:
        """Terms for a query: digit-bearing identifiers whole only (see module doc)."""
        return self._analyze(text, for_query=True)

    def tokens(self, text: str) -> list[Token]:
        """The raw tokens of ``text``, classified, before normalisation."""
        text = _normalize(text)
        out: list[Token] = []
        for raw in _raw_tokens(text, self.spec.cjk_bigrams):
            if raw.endswith(("'s", "'S")) and len(raw) > 2:
                raw = raw[:-2]  # possessive: O'Reilly's -> O'Reilly, SSL_CTX's -> SSL_CTX
            out.append(Token(raw, _is_identifier(raw)))
        return out

    # -- pipeline -----------------------------------------------------------------

    def _analyze(self, text: str, *, for_query: bool) -> list[str]:
        terms: list[str] = []
        for token in self.tokens(text):
            raw = token.text
            if not token.is_identifier:
                word = self._word(raw)
                if word is not None:
                    terms.append(word)
                continue
            whole = self._case(raw)
            terms.append(whole)
            if not self.spec.identifier_parts:
                continue
            if for_query and any(c.isdigit() for c in raw):
                continue
            terms.extend(self._parts(raw, whole))
        return terms

    def _parts(self, raw: str, whole: str) -> Iterable[str]:
        seen = {whole}
        body = raw.lstrip("-./")
        if body.endswith("++"):
            body = body[:-2]
        body = body.rstrip("#")
        segments = [s for s in _LOOSE_SPLIT.split(body) if s]
        if len(segments) > 1:
            for segment in segments:
                if _ALL_SPLIT.search(segment):
                    term = self._case(segment)
                    if term not in seen:
                        seen.add(term)
                        yield term
        for piece in _ALL_SPLIT.split(body):
            for atom in _CAMEL.split(piece) if piece else ():
                if not atom:
                    continue
                part = self._word(atom) if atom.isalpha() else self._case(atom)
                if part is not None and part not in seen:
                    seen.add(part)
                    yield part

    def _case(self, text: str) -> str:
        return text.lower() if self.spec.lowercase else text

    def _word(self, word: str) -> str | None:
        """Lowercase, drop possessive 's, stopword filter and stem a plain word (cached)."""
        cached = self._word_cache.get(word, "")
        if cached != "":
            return cached
        w = word.lower() if self.spec.lowercase else word
        if w.endswith("'s"):
            w = w[:-2]
        result: str | None
        if not w or w in self._stopwords:
            result = None
        elif self._stemmer is not None:
            result = self._stemmer.stemWord(w)
        else:
            result = w
        if len(self._word_cache) < 1_000_000:
            self._word_cache[word] = result
        return result


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).translate(_DASHES)


def _raw_tokens(text: str, cjk_bigrams: bool) -> Iterable[str]:
    for match in _RAW_TOKEN.finditer(text):
        raw = match.group(0)
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
    for m in _RAW_TOKEN.finditer(fragment):
        yield m.group(0)


def _is_identifier(raw: str) -> bool:
    if raw.isalpha():
        return bool(_CAMEL.search(raw)) and not raw.isupper()
    stripped = raw.replace("'", "")
    # a contraction or possessive (don't, user's) is a word
    return not (stripped.isalpha() and raw.count("'") == 1 and not raw.startswith("'"))


@lru_cache(maxsize=8)
def analyzer_for(spec: AnalyzerSpec) -> Analyzer:
    """A shared analyzer per spec (analyzers are stateless apart from a word cache)."""
    return Analyzer(spec)
