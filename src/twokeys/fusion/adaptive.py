"""Query-adaptive fusion: read the query, shift weight between lexical and dense evidence.

Plain fusion gives both sensors the same say for every query. But a query naming an
error code, a version, a flag or a function (``ZX-4821``, ``qwen2.5:14b``,
``--unrestricted``, ``SSL_CTX_new``) is answered by exact matching, while a paraphrase
whose words the documents never use is answered by the dense model only. This module
reads the query and the lexical evidence and returns per-query fusion weights, then
fuses by a convex combination of normalised scores (Bruch et al., TOIS 2023), with
one hard rule on top: a chunk that contains the query's identifiers (or quoted
strings) exactly is never outranked by one that lacks them.

Features (see :class:`QueryFeatures`): identifier-like tokens the corpus contains,
quoted strings, the lexical confidence (share of the query's idf mass matched by the
best lexical hit, :mod:`twokeys.fusion.confidence`) and the query length.

Weights: the lexical weight is ``base_lexical_weight`` for ordinary queries,
``identifier_lexical_weight`` when the query has a matched identifier or quoted
string, and shrinks in proportion when the lexical confidence falls below
``confidence_floor`` (BM25 is then matching incidental words). The defaults (0.45, 0.6,
0.3, min-max) were picked by the mean nDCG@10 over SciFact's train split and the ADI,
CACM, CISI, Cranfield and MEDLINE collections (never SciFact test, which is reported).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

from twokeys.errors import ConfigError
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.normalization import normalizer
from twokeys.types import ScoredChunk

_QUOTED = re.compile(r'"([^"]+)"')
_STOP_PARTS = frozenset("a an and as at by for in of on or the to with".split())


@dataclass(frozen=True)
class AdaptiveParams:
    base_lexical_weight: float = 0.45
    identifier_lexical_weight: float = 0.6
    confidence_floor: float = 0.3
    normalization: str = "minmax"

    def __post_init__(self) -> None:
        for name in ("base_lexical_weight", "identifier_lexical_weight", "confidence_floor"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"adaptive.{name}: must be in [0, 1], got {value!r}")
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

    @property
    def exact_terms(self) -> tuple[str, ...]:
        """Terms a chunk must contain to be in the top tier."""
        quoted = tuple(t for group in self.quoted for t in group)
        return tuple(dict.fromkeys(self.identifiers + quoted))


def is_identifier_like(raw: str) -> bool:
    """Whether a raw query token names something exact: a code, version, flag, symbol, path.

    Counted: tokens with ``_ : / @ # = +`` or a leading ``-``/``.``/``/`` (SSL_CTX_new,
    qwen2.5:14b, --unrestricted, .NET, /etc/x); letters and digits joined by ``-`` or
    ``.`` (ZX-4821, v3.3, gpt-4o); dotted numbers with two or more dots (1.2.10,
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


def lexical_weight(features: QueryFeatures, params: AdaptiveParams) -> float:
    if features.exact_terms:
        return params.identifier_lexical_weight
    weight = params.base_lexical_weight
    if params.confidence_floor > 0 and features.lexical_confidence < params.confidence_floor:
        weight *= features.lexical_confidence / params.confidence_floor
    return weight


def adaptive_fusion(
    lexical: Sequence[ScoredChunk],
    dense: Sequence[ScoredChunk],
    features: QueryFeatures,
    exact_matches: Mapping[int, int],
    params: AdaptiveParams,
    depth: int | None = None,
) -> list[ScoredChunk]:
    """Fuse one query's runs; ``exact_matches[row]`` = how many exact terms ``row`` contains.

    ``depth``: normalisation statistics over each run's first ``depth`` entries.
    """
    alpha = lexical_weight(features, params)
    fused = convex_combination(
        {"lexical": lexical, "dense": dense},
        {"lexical": alpha, "dense": 1.0 - alpha},
        normalizer(params.normalization, depth),
    )
    if features.exact_terms:
        fused.sort(key=lambda h: (-exact_matches.get(h.row, 0), -h.score, h.row))
    return [ScoredChunk(h.row, h.score, i + 1) for i, h in enumerate(fused)]
