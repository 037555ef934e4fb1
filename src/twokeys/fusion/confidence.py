"""Lexical confidence: how much of the query the best lexical match actually covers.

BM25 always returns *something* when any query word occurs in the corpus; for a
paraphrase ("money back if it arrived broken") its top hits match one or two common
words, and giving that list the same say as the dense list in RRF drags unrelated
chunks up. The confidence of a lexical run is the share of the query's idf mass that
its top hit matches::

    confidence = sum(qtf(t) * idf(t) for t matched by the top hit)
               / sum(qtf(t) * idf(t) for t in the query)

Query terms absent from the corpus count with the idf of an unseen term, so a query
whose key words the corpus never uses gets low confidence. An identifier query
("E-4821") whose rare token is matched gets a confidence near 1. The hybrid
retriever uses ``confidence ** 2`` as the lexical run's weight in weighted RRF.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def lexical_confidence(
    query_term_weights: Mapping[str, float], idf: Mapping[str, float], matched: Sequence[str]
) -> float:
    """Share in [0, 1] of the query's idf mass covered by the ``matched`` terms."""
    total = sum(qtf * idf[t] for t, qtf in query_term_weights.items())
    if total <= 0:
        return 0.0
    # each term once, in the order given: a set's order changes with the process's string
    # hashes, and the float sum with it (in its last bit)
    hit = sum(
        query_term_weights[t] * idf[t] for t in dict.fromkeys(matched) if t in query_term_weights
    )
    return min(1.0, hit / total)
