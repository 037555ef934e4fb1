"""Query-adaptive fusion: read the query, shift weight between lexical and dense evidence.

Plain fusion gives both sensors the same say for every query. But a query naming an
error code, a version, a flag or a function (``E-4821``, ``qwen2.5:14b``,
``--unrestricted``, ``SSL_CTX_new``) is answered by exact matching, while a paraphrase
whose words the documents never use is answered by the dense model only. This module
reads the query and both sensors' evidence and returns per-query fusion weights, then
fuses by a convex combination of normalised scores (Bruch et al., TOIS 2023), with
one hard rule on top: a chunk that contains the query's identifiers exactly is never
outranked by one that lacks them.

What is read (see :class:`QueryFeatures`):

* identifier-like tokens the corpus contains (:func:`is_identifier_like`) and quoted
  strings: the query names something exact, so the lexical weight is
  ``identifier_lexical_weight`` and the two paraphrase rules below do not apply
  (whether the identifier tiers is the sensors' call, below);
* anchors (:func:`anchor_terms`): terms the evidence says only exact matching can
  answer for, whatever their shape (``40002``, ``22P03``, ``fdopen``). BM25's top hit
  holds the term and none of the dense run's ``dense_top`` chunks does, and either the
  term supplies at least ``anchor_share`` of that hit's score while the dense model's
  tokenizer cuts it into pieces (or it holds digits), or fewer than
  ``rare_chunk_share`` of the corpus' chunks hold it and none of BM25's next
  ``dense_top - 1`` chunks does. Anchors act as identifiers
  (tier, weight, no paraphrase rules): a dense model that cannot read a code is no
  judge of the chunk holding it;
* lexical confidence (rare-term idf mass): the share of the query's idf mass that the
  best lexical hit matches (:mod:`twokeys.fusion.confidence`). Below
  ``confidence_floor`` BM25 is matching incidental words, and the lexical weight
  shrinks in proportion;
* query length: one chunk covers less of a long query's idf mass than of a short
  one's, so for queries longer than ``floor_length`` terms the floor is scaled by
  ``floor_length / n_terms``;
* semantic support (sensor agreement): the dense similarity of the lexical top hit
  (its cosine, asked of the vector index when the dense run lacks it) divided by the
  dense top-1 similarity (:func:`semantic_support`). When BM25's best chunk is far from
  the query in meaning, the lexical weight is multiplied by
  ``(support / support_floor) ** support_power``.

* query words (issue 33): a one-word query (a bare name: ``isnan``, ``core.editor``,
  ``ManuallyDrop``) is not read by the semantic-support rule, and an identifier that is
  the whole query tiers even when the dense run's top chunks hold it. With no other word
  around it, the dense model reads a name by its pieces (``core``, ``editor``): its low
  cosine to the page that defines the name says nothing about BM25 matching incidental
  words (BM25's top hit matches the query's one word: lexical confidence 1), and its
  holding the name is no confirmation of the page that defines it. Before, the support
  rule, fed the true cosine of BM25's top hit, could cut BM25's weight on such a query
  to ``0.45 * (support / 0.5) ** 2`` (0.11 at support 0.25), enough for a page BM25
  ranks first and the dense run misses to fall out of the top 10. None of the six
  shared collections' queries is one word, so their rankings are unchanged.
  Among the chunks that hold a bare name exactly (the exact tier of a one-word query),
  BM25's order decides, not the fused score: the dense model's cosine to each of them
  is its reading of the name's pieces, the same for the page that defines the name and
  for every page that mentions it, while BM25's small margins between them (how often
  the name and its parts occur, in how long a chunk) are the evidence of which page is
  about the name. Measured on the train splits (int8 MiniLM, nDCG@10): git-ids dev
  0.9417 -> 0.9517 (BM25 0.9517; 14 queries had lost the defining page to a page that
  mentions the name: ``core.editor`` to gitfaq, ``submodule.active`` to
  gitsubmodules), the Git manual's identifier queries (dev) 0.9335 -> 0.9489.
  And a one-word query weighs BM25 at ``one_word_lexical_weight`` (0.8), whatever the
  other rules read: with one word to read, the dense model places the pages about the
  word's pieces (``addHandler``: pages about handlers; ``Integral``, ``Cursor``: the
  pages using the word most), which on a collection of module pages (the Python library
  reference) outranked the page that defines the name, not only within the exact tier
  but for the many names whose shape does not tier (``add_writer``, ``Example``). 0.8 is
  the smallest of 0.6, 0.7, 0.8, 0.9 that puts the hybrid at or above BM25 on the dev
  splits: python-ids dev 0.8886 (BM25 0.9027) -> 0.9038, rust-ids dev 0.9617 -> 0.9560
  (BM25 0.9305), git-ids dev 0.9517 (= BM25). No query of the six shared collections is
  one word.

Depth: the rules and the fusion read the first ``depth`` (the hybrid's ``candidates``,
100) entries of each run, and the chunks among them rank first, so the fused top is the
same whether the caller asks for 10 hits or ``twokeys eval``'s 300. Before, the support
rule gave a top hit missing from the dense run the run's last score (an upper bound
that fell the deeper the run went) and a chunk at BM25's rank 250 holding an identifier
tiered above the candidates: SciFact test gave 0.7304 in ``twokeys eval`` and 0.7338 at
k = 100. With the true cosine (int8 MiniLM, nDCG@10, 300 chunks asked): SciFact train
0.7325 -> 0.7332 (11 queries change: 7 better, 4 worse), the Python manual's dev split
0.9373 -> 0.9284 (one paraphrase, "run an external program and capture what it prints":
BM25's right page is at cosine 0.165, the query's chance level 0.119), the Git manual's
0.8553 unchanged; SciFact test 0.7346, Cranfield 0.4153 (LSI 0.4151). Fusing true
scores for every chunk missing from one run (its cosine, its BM25 score) instead of the
run's floor was measured too and not adopted: SciFact train 0.7360 but the Git dev split
0.8457 and MEDLINE 0.7967, below dense alone (0.7978); true cosines alone (BM25's floor
kept) gave SciFact train 0.7330 and the Git dev split 0.8520.

Only anchors and the identifiers the sensors back put chunks in the exact tier: an
identifier tiers when BM25's top hit holds it and none of the dense run's ``dense_top``
chunks does (:func:`unconfirmed`). A shape alone tiered SciFact's gene names (``IL-6``,
``interleukin-2``), lifting every abstract that mentions them above the answer: SciFact
train nDCG@10 0.7290 -> 0.7300, the Python manual's dev split 0.925 -> 0.932, the Git
manual's 0.858 -> 0.853, the support KB's identifiers still at rank 1. In a query with
words beside the name, the name must also single BM25's top hit out: none of BM25's next
chunks (ranks 2 to ``dense_top``) holds it (:func:`words_pick`). A name several pages
write (``functools.partial``: the asyncio, inspect and functools pages) does not say
which page is asked about; the words do, and the tier had lifted every chunk writing the
name above the one the words point to (the functools page defines it as ``partial``).
Measured on the dev splits (int8 MiniLM, nDCG@10): the Python manual's mixed queries
0.9477 -> 0.9607 (dense 0.9643, BM25 0.9449); the Git manual's (0.9815) and Rust's
(0.9479) mixed queries and every other kind unchanged; a bare name is not affected.
Where such a shared name stands decides next (:mod:`twokeys.fusion.headings`, the
``headed`` rows of :func:`adaptive_fusion`): when one heading among BM25's candidates
holds the name and names it (its innermost heading, or the document's title, begins with
it), that heading's chunks rank first among the chunks of equal exact-term count, the
section about the name before the ones that use it (``DebugStruct``'s page before the
``Debug`` trait's, which shows one; ``AtomicBool``'s before ``fence``'s example).
Measured on the dev splits (int8 MiniLM, nDCG@10): Rust's mixed queries 0.9471 -> 0.9665
(4 better, none worse); the Git and Python manuals' kinds, git-ids, python-ids and
rust-ids' bare names unchanged (a one-word query is not read); SciFact train 0.7332
unchanged (0.7293 when any heading holding the name counted: several abstracts are
titled by ``IL-10`` or ``PD-1``; 0.7328 when one heading beginning with the name
counted whatever other headings held it).
Quoted strings do not tier: in CACM and CISI most quotes are scare quotes ("what you see
is what you get", "type correct"), and tiering on their words cost 0.03 nDCG@10 on CACM.

The anchor thresholds are not fitted: ``anchor_share`` 1/2 (the term is most of why
BM25 ranks the hit first), ``dense_top`` 10 (a results page), ``rare_chunk_share``
0.1% (issue 10's bound for a rare term). Without anchors, queries naming a code or a
function by a plain word lost BM25's right answer: the "no semantic support" rule cut
BM25's weight exactly where the dense model was blind.

The weights and floors (0.45, 0.45, 0.5, 6, 0.5, 2) were picked, with min-max scaling,
by the mean nDCG@10 over SciFact's train split and the ADI, CACM, CISI, Cranfield and
MEDLINE collections, among the settings that rank every support-KB query's document in
the top 3 (identifier queries first); SciFact test, which is reported, was not used.

Scaling (``normalization``): ``chance``, each run measured from its sensor's chance
level (0 for BM25, the query's mean cosine over all chunks for the dense model) as a
share of its top hit's lead (:mod:`twokeys.fusion.normalization`). Min-max measured the
dense run from its 100th cosine, far above chance in the narrow band a dense top hundred
occupies, and so stretched cosine differences of a few hundredths to the whole scale.
The weights were not re-tuned for it. On the splits rules are chosen on (int8 MiniLM,
nDCG@10) it moved SciFact train 0.7283 -> 0.7325, the Python manual's dev split 0.9270
-> 0.9373, the Git manual's 0.8526 -> 0.8553 and MEDLINE 0.8009 -> 0.8015, the support
KB's identifier queries still at rank 1. Rejected there: z-score scaling with these
weights (SciFact train 0.7315, but MEDLINE 0.7920 below dense alone, 0.7978, and a
support-KB paraphrase out of the top 3: a peaked BM25 run gains say whether it is
right or not), min-max over 300 entries (MEDLINE 0.7947), weights from the runs' top
gaps (MEDLINE 0.7761-0.7932). It cost Cranfield 0.4194 -> 0.4144, 0.0007 below LSI
(0.4153 once the fused top stopped depending on depth, above);
with both weights 0.4 Cranfield is 0.4203 and SciFact train 0.7338. SciFact test was
looked at once for each of these two: 0.7304 (the default) and 0.7281 (weights 0.4),
against 0.7217 with min-max scaling.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.fusion.convex import combine
from twokeys.fusion.normalization import normalized_scores, normalizer
from twokeys.fusion.rrf import check_weight
from twokeys.fusion.units import unit_scores
from twokeys.lexical.index import RUN_SLOTS, slotted_values
from twokeys.types import ScoredChunk

_QUOTED = re.compile(r'"([^"]+)"')
_STOP_PARTS = frozenset("a an and as at by for in of on or the to with".split())


@dataclass(frozen=True)
class AdaptiveParams:
    base_lexical_weight: float = 0.45
    identifier_lexical_weight: float = 0.45
    confidence_floor: float = 0.5
    floor_length: int = 6
    support_floor: float = 0.5
    support_power: float = 2.0
    normalization: str = "chance"
    anchor_share: float = 0.5
    rare_chunk_share: float = 0.001
    dense_top: int = 10
    one_word_lexical_weight: float = 0.8

    def __post_init__(self) -> None:
        for name in (
            "base_lexical_weight",
            "identifier_lexical_weight",
            "confidence_floor",
            "support_floor",
            "anchor_share",
            "rare_chunk_share",
            "one_word_lexical_weight",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:  # NaN fails this test too
                raise ConfigError(f"adaptive.{name}: must be in [0, 1], got {value!r}")
        length = self.floor_length
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ConfigError(f"adaptive.floor_length: must be an integer >= 1, got {length!r}")
        if not math.isfinite(self.support_power) or self.support_power < 0:
            raise ConfigError(
                f"adaptive.support_power: must be a finite number >= 0, got {self.support_power!r}"
            )
        if (
            isinstance(self.dense_top, bool)
            or not isinstance(self.dense_top, int)
            or self.dense_top < 1
        ):
            raise ConfigError(
                f"adaptive.dense_top: must be an integer >= 1, got {self.dense_top!r}"
            )
        normalizer(self.normalization)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class QueryFeatures:
    """What the adaptive fusion read from a query."""

    identifiers: tuple[str, ...]  # identifier-like terms the corpus contains
    missing_identifiers: tuple[str, ...]  # identifier-like terms the corpus lacks
    quoted: tuple[tuple[str, ...], ...]  # analysed terms of each quoted string
    lexical_confidence: float
    n_terms: int
    anchors: tuple[str, ...] = ()  # terms only exact matching sees (:func:`anchor_terms`)
    unconfirmed: tuple[str, ...] = ()  # identifiers the sensors do not back (:func:`unconfirmed`)
    n_words: int = 0  # query words that give terms (0: not counted)

    @property
    def one_word(self) -> bool:
        """Whether the query is one word: a bare name (``isnan``, ``core.editor``) or a
        single term, with nothing around it for the dense model to read a meaning from."""
        return self.n_words == 1

    @property
    def exact_terms(self) -> tuple[str, ...]:
        """Terms a chunk must contain to be in the top tier: the identifiers the sensors
        confirm, and anchors."""
        confirmed = tuple(t for t in self.identifiers if t not in self.unconfirmed)
        return tuple(dict.fromkeys(confirmed + self.anchors))

    @property
    def names_something_exact(self) -> bool:
        """Whether the query has a matched identifier, an anchor or a quoted string."""
        return bool(self.identifiers or self.anchors or self.quoted)


@dataclass(frozen=True)
class TermEvidence:
    """What the index and the two sensors show about one query term the corpus holds."""

    term: str
    top_share: float  # share of BM25's top-hit score this term supplies (0: not matched)
    in_dense_top: bool  # whether any of the dense run's top chunks holds the term
    word_pieces: int  # pieces the dense model's tokenizer cuts the query's word into
    chunk_share: float | None = None  # share of the corpus' chunks holding it (None: unknown)
    in_lexical_rest: bool = False  # whether BM25's next chunks (ranks 2 to 10) hold it too

    @property
    def opaque_to_dense(self) -> bool:
        """Whether the dense model can only see the term as pieces: a word its
        vocabulary lacks, or one holding digits (codes, versions, numbers)."""
        return self.word_pieces > 1 or any(c.isdigit() for c in self.term)


def anchor_terms(evidence: Sequence[TermEvidence], share: float, rare: float) -> tuple[str, ...]:
    """The terms only exact matching can answer for.

    BM25's top hit holds the term and none of the dense model's top chunks does, and
    either BM25 ranks that hit first because of it (the term supplies at least ``share``
    of its score) while the dense model sees it only as pieces, or the term is rare
    (fewer than ``rare`` of the corpus' chunks hold it) and singles the hit out (none of
    BM25's next chunks holds it).
    """
    return tuple(
        e.term
        for e in evidence
        if e.top_share > 0
        and not e.in_dense_top
        and (
            (e.top_share >= share and e.opaque_to_dense)
            or (e.chunk_share is not None and e.chunk_share < rare and not e.in_lexical_rest)
        )
    )


def unconfirmed(
    identifiers: Sequence[str],
    evidence: Sequence[TermEvidence],
    whole_query: bool = False,
    single_out: bool = True,
) -> tuple[str, ...]:
    """The identifiers whose shape the two sensors do not back: BM25's top hit lacks the
    term (it is not what exact matching ranks by) or one of the dense run's top chunks
    holds it (the dense model sees it, so the plain fusion already favours it). Such a
    term still names something exact, but it does not tier: lifting every chunk holding
    a common gene name (``IL-6``) above the rest buried SciFact's answers.

    ``whole_query``: the identifier is the whole query (a bare name, ``core.editor``).
    Then the dense run's holding it is no confirmation: with no other words to read, the
    dense model ranks the pages about the name's parts (``core``, ``editor``), and the
    chunk that holds the name exactly is what was asked for; only BM25's top hit must
    hold it.

    ``single_out`` (a query with words beside the name): the identifier must also single
    BM25's top hit out, none of BM25's next chunks holding it (:func:`words_pick`)."""
    backed = {
        e.term
        for e in evidence
        if e.top_share > 0
        and (whole_query or not e.in_dense_top)
        and not (single_out and not whole_query and words_pick(e))
    }
    return tuple(t for t in identifiers if t not in backed)


def words_pick(evidence: TermEvidence) -> bool:
    """Whether, in a query with words beside the name, the words and not the name must
    pick the chunk: BM25's next chunks (ranks 2 to ``dense_top``) hold the name too.

    A name several pages write (``functools.partial``: the asyncio, inspect and functools
    pages; an option several commands share, ``--patch``) does not say which of them is
    asked about; the query's other words do, and the fused score reads them (the dense
    cosine and BM25's weight of every term). Tiering such a name lifted every chunk that
    writes it above the one the words point to, which often writes the name in another
    form (the page defining ``partial`` under ``.. module:: functools``). A name only
    BM25's top hit holds among its first chunks is what singles that hit out, and tiers
    as before (issue 33, mixed queries).

    This reads identifier-shaped names only. A name that is also an anchor by its share
    of BM25's top hit (:func:`anchor_terms`: at least ``anchor_share`` of the hit's
    score, cut into pieces by the dense tokenizer or holding digits) still tiers when
    BM25's next chunks hold it: that branch does not read ``in_lexical_rest``. Applying
    the same condition there is untested on the measured collections (found in review,
    left for a measured change)."""
    return evidence.in_lexical_rest


def is_identifier_like(raw: str) -> bool:
    """Whether a raw query token names something exact: a code, version, flag, symbol, path.

    Counted: tokens with ``_ : / @ # = +`` or a leading ``-``/``.``/``/`` (SSL_CTX_new,
    qwen2.5:14b, --unrestricted, .NET, /etc/x); letters and digits joined by ``-`` or
    ``.`` (E-4821, v3.3, gpt-4o); dotted numbers with two or more dots (1.2.10,
    192.168.0.1); dotted names (foo.bar); camelCase with two or more humps; hyphenated
    names of three or more parts without function words (nomic-embed-text).
    Not counted: plain numbers, words, abbreviations (i.e., e.g.), short mixed tokens
    that are ordinary vocabulary in technical prose (B12, 6MP, PrP, x-ray, T-cell,
    state-of-the-art).
    """
    if raw.startswith(("-", ".", "/")) or any(c in raw for c in "_:/@#+="):
        return True
    has_alpha = any(c.isalpha() for c in raw)
    has_digit = any(c.isdigit() for c in raw)
    separators = sum(c in "-." for c in raw)
    if has_digit:
        if not has_alpha:
            return raw.count(".") >= 2
        return separators >= 1
    if "." in raw:
        parts = [p for p in raw.split(".") if p]
        return len(parts) >= 2 and all(len(p) >= 2 for p in parts)
    if raw.isalpha():
        humps = sum(1 for a, b in pairwise(raw) if a.islower() and b.isupper())
        return humps >= 2 or (humps == 1 and len(raw) >= 8)
    parts = [p for p in raw.lower().split("-") if p]
    return len(parts) >= 3 and not (set(parts) & _STOP_PARTS)


def quoted_strings(query: str) -> list[str]:
    return _QUOTED.findall(query)


def semantic_support(
    lexical: Sequence[ScoredChunk],
    dense: Sequence[ScoredChunk],
    similarity: float | None = None,
) -> float:
    """Dense similarity of the lexical top hit over the dense top-1 similarity, in [0, 1].

    ``similarity``: the lexical top hit's cosine to the query, when the caller has the
    vectors at hand (the hybrid asks its vector index: one dot product). Without it, a
    top hit missing from the dense run is given the run's last score, an upper bound
    that depends on how deep the run went. 1.0 when either run is empty or the dense top
    score is not positive (nothing to compare).
    """
    if not lexical or not dense or dense[0].score <= 0:
        return 1.0
    top = lexical[0].row
    found = next((h.score for h in dense if h.row == top), None)
    if found is None:
        found = dense[-1].score if similarity is None else similarity
    return min(1.0, max(0.0, found / dense[0].score))


def confidence_floor(n_terms: int, params: AdaptiveParams) -> float:
    """The lexical confidence below which BM25 is matching incidental words."""
    return params.confidence_floor * min(1.0, params.floor_length / max(n_terms, 1))


def lexical_weight(features: QueryFeatures, params: AdaptiveParams, support: float = 1.0) -> float:
    """The lexical run's weight in [0, 1] for one query (the dense run gets the rest)."""
    if features.one_word:
        return params.one_word_lexical_weight
    if features.names_something_exact:
        return params.identifier_lexical_weight
    weight = params.base_lexical_weight
    floor = confidence_floor(features.n_terms, params)
    if floor > 0 and features.lexical_confidence < floor:
        weight *= features.lexical_confidence / floor
    if params.support_floor > 0 and support < params.support_floor and not features.one_word:
        weight *= (support / params.support_floor) ** params.support_power
    return weight


def adaptive_fusion(
    lexical: Sequence[ScoredChunk],
    dense: Sequence[ScoredChunk],
    features: QueryFeatures,
    exact_matches: Mapping[int, int],
    params: AdaptiveParams,
    depth: int | None = None,
    weight: float | None = None,
    levels: tuple[float, float] = (0.0, 0.0),
    units: Mapping[int, int] | None = None,
    verbatim: Collection[int] = frozenset(),
    limit: int | None = None,
    headed: Collection[int] = frozenset(),
    near_miss: Collection[int] = frozenset(),
    held_but_one: Collection[int] = frozenset(),
) -> list[ScoredChunk]:
    """Fuse one query's runs; ``exact_matches[row]`` = how many exact terms ``row`` contains.

    ``depth``: the candidates fused: the chunks among either run's first ``depth``
    entries rank first (exact tier, then fused score), the deeper ones after them, and
    the normalisation statistics are those of the first ``depth`` entries, so the
    fused top does not change with how deep the caller asked the runs to go;
    ``weight``: the lexical weight if the caller has computed it (:func:`lexical_weight`
    with :func:`semantic_support` of these runs), else computed here; ``levels``: the
    lexical and the dense run's chance levels (``RetrieverResult.chance``), read by the
    ``chance`` normalisation; ``units[row]``: the cited unit (a PDF page) of each located
    chunk row, whose chunks then score as their unit (:mod:`twokeys.fusion.units`), the
    chunk's own score ordering a unit's chunks; ``verbatim``: the rows that hold the
    whole query word for word (:mod:`twokeys.fusion.verbatim`), ranked above the other
    candidates (and so above the exact tier's other chunks); ``limit``: only the first
    ``limit`` entries of the fused run are made (None: all of them), the same as the
    first ``limit`` of the whole run; ``headed``: the rows whose heading line names the
    query's name (:mod:`twokeys.fusion.headings`) or that define it
    (:mod:`twokeys.fusion.definitions`), ranked first among the rows of equal
    exact-term count (below the exact tier and the verbatim rule, above the fused score);
    ``near_miss``: the rows that write a near-miss of the query's code and not the code
    (:mod:`twokeys.fusion.nearmiss`), ranked below the other candidates;
    ``held_but_one``: the rows that hold every word of the query, all but one word for
    word (:func:`twokeys.fusion.verbatim.held_but_one_rows`), ranked first among the
    rows of equal exact-term count (below the exact tier and the verbatim rule, above
    the heading rule's rows and the fused score).
    """
    alpha = (
        lexical_weight(features, params, semantic_support(lexical, dense))
        if weight is None
        else weight
    )
    # what convex_combination and a sort by the tier keys give, computed on arrays: the
    # same float operations (see :func:`twokeys.fusion.convex.combine`), the same order
    lex_rows, lex_scores = _columns(lexical)
    dense_rows, dense_scores = _columns(dense)
    weights = {"lexical": alpha, "dense": 1.0 - alpha}
    total = sum(check_weight(name, w) for name, w in weights.items())
    method = params.normalization
    lex_norm = _normalized(method, lex_scores, depth, levels[0])
    dense_norm = _normalized(method, dense_scores, depth, levels[1])
    rows, fused = combine(
        {  # in the order of the runs' names, as convex_combination adds them
            "dense": (dense_rows, dense_norm),
            "lexical": (lex_rows, lex_norm),
        },
        {name: w / total for name, w in weights.items()},
        # fewer BM25 entries than the candidates asked for: every match is among them
        complete=("lexical",) if depth is not None and len(lex_rows) < depth else (),
    )
    keys: list[npt.NDArray[np.generic]] = [rows, -fused]
    if units:  # a unit's score first, its chunk's own score among the unit's chunks
        n = len(lex_rows) + len(dense_rows) if depth is None else depth
        by_unit = unit_scores(
            _entries(lex_rows[:n], lex_norm[:n]),
            _entries(dense_rows[:n], dense_norm[:n]),
            alpha,
            units,
        )
        own = fused
        fused = np.array(
            [
                by_unit.get(units[row], score) if row in units else score
                for row, score in zip(rows.tolist(), own.tolist(), strict=True)
            ],
            np.float64,
        )
        keys = [rows, -own, -fused]
    inside = (
        None
        if depth is None
        else np.isin(rows, np.concatenate([lex_rows[:depth], dense_rows[:depth]]))
    )
    if (
        features.exact_terms
        or verbatim
        or headed
        or held_but_one
        or near_miss
        or (inside is not None and not inside.all())
    ):
        exact = _per_row(rows, exact_matches) if features.exact_terms else None
        if exact is not None and features.one_word:
            # a bare name: among the chunks that hold it, BM25's order
            at = np.zeros(len(rows), np.int64)
            at[np.searchsorted(rows, lex_rows)] = np.arange(len(lex_rows))
            keys.append(np.where(exact != 0, at, 0))
        if headed:  # the section about the name before those using it
            keys.append(_outside(rows, headed))
        if held_but_one:
            keys.append(_outside(rows, held_but_one))
        if exact is not None:
            keys.append(-exact)
        if verbatim:
            keys.append(_outside(rows, verbatim))
        if near_miss:  # what the user did not ask for, below the other candidates
            keys.append(~_outside(rows, near_miss))
        if inside is not None:
            keys.append(~inside)
    order = np.lexsort(keys)[:limit]  # [:None]: all
    ranks = list(range(1, len(order) + 1))
    columns = (rows[order].tolist(), fused[order].tolist(), ranks)
    return slotted_values(ScoredChunk, RUN_SLOTS, columns)


def _outside(rows: npt.NDArray[np.int64], held: Collection[int]) -> npt.NDArray[np.bool_]:
    """A sort key: False for the rows in ``held`` (they sort first), True for the rest."""
    return ~np.isin(rows, np.fromiter(held, np.int64, len(held)))


def _entries(rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> list[ScoredChunk]:
    """Normalised entries as :func:`unit_scores` reads them."""
    return [
        ScoredChunk(row, score, i + 1)
        for i, (row, score) in enumerate(zip(rows.tolist(), scores.tolist(), strict=True))
    ]


def _columns(run: Sequence[ScoredChunk]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    rows = np.fromiter((h.row for h in run), np.int64, len(run))
    return rows, np.fromiter((h.score for h in run), np.float64, len(run))


def _normalized(
    method: str, scores: npt.NDArray[np.float64], depth: int | None, level: float
) -> npt.NDArray[np.float64]:
    return normalized_scores(method, scores, depth, level) if len(scores) else scores


def _per_row(rows: npt.NDArray[np.int64], counts: Mapping[int, int]) -> npt.NDArray[np.int64]:
    """``counts[row]`` (0 where absent) for each of ``rows`` (ascending)."""
    out = np.zeros(len(rows), np.int64)
    if counts and len(rows):
        keys = np.fromiter(counts.keys(), np.int64, len(counts))
        values = np.fromiter(counts.values(), np.int64, len(counts))
        at = np.minimum(np.searchsorted(rows, keys), len(rows) - 1)
        held = rows[at] == keys
        out[at[held]] = values[held]
    return out
