"""Fusion by cited unit: the chunks of one PDF page scored as the page.

A PDF page is cited as one unit (``manual.pdf p. 12``) but indexed as several chunks
(a page of a manual holds 3-5 chunks of 250 tokens). Fused chunk by chunk, the two
sensors' evidence for a page is split when they back it through different chunks:
BM25 ranks the chunk naming the query's terms, the dense model the chunk that says
what the query means, and a page holding both loses to a page whose one chunk is
middling in both. On the PDF page benchmark's train split (``benchmarks/pdf_pages.py``)
that was most of the hybrid's losses to BM25: for "lower and upper limits on
optimization variables" BM25 ranks the right page second by one chunk and the dense
model first by another, and the chunk fusion put it second.

:func:`unit_scores` scores each unit per sensor by its best chunk in that sensor's
normalised run (MaxP, Dai and Callan, "Deeper text understanding for IR with
contextual neural language modeling", SIGIR 2019), then combines the two convexly,
with the weight the chunk fusion used. A unit absent from a run scores as that run's
lowest normalised entry, as a chunk does in :func:`twokeys.fusion.convex.convex_combination`.
Chunks outside any unit (Markdown sections, abstracts, code) keep their chunk score:
only located pages are units, so collections without pages rank as before.

Opt-in (``HybridRetriever(units=Index.page_units())``), not the default, by measurement
on the 80 train queries of the page benchmark (nDCG@10, identifier / paraphrase). On
the page texts as a BEIR collection (a page a document, no section paths) it lifted the
hybrid from 0.963 / 0.815 to 0.960 / 0.842 (BM25 0.960 / 0.817); on the PDFs indexed by
the reader itself (each chunk headed by its section path, small pages joined;
``pdf_pages native``) it lowered it from 0.938 / 0.853 to 0.929 / 0.840 (BM25 0.960 /
0.825). Two setups of the same queries disagree, so the chunk fusion stays the default.
With 104 train queries (58 more written) and the verbatim rule
(:mod:`twokeys.fusion.verbatim`), ``pdf_pages native``: 0.955 / 0.853 fused by page
against 0.962 / 0.859 chunk by chunk (BM25 0.962 / 0.832); still not the default.
With 296 queries (73 + 73 train): fused by page 0.952 / 0.835 against 0.956 / 0.837 from
250-token chunks; from 128-token PDF chunks (``ChunkerConfig.page_tokens``) 0.964 / 0.856,
train's best, but on test 0.928 / 0.790 against the default's 0.935 / 0.808.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from twokeys.types import ScoredChunk


def unit_scores(
    lexical: Sequence[ScoredChunk],
    dense: Sequence[ScoredChunk],
    weight: float,
    units: Mapping[int, int],
) -> dict[int, float]:
    """The fused score of each unit either normalised run holds a chunk of.

    ``lexical`` and ``dense``: the runs' normalised entries (the first ``depth``);
    ``weight``: the lexical weight (the dense run gets ``1 - weight``); ``units[row]``:
    the unit a chunk row belongs to (rows outside any unit absent).
    """
    best: list[dict[int, float]] = []
    floors: list[float] = []
    for run in (lexical, dense):
        found: dict[int, float] = {}
        for hit in run:
            unit = units.get(hit.row)
            if unit is not None and hit.score > found.get(unit, -float("inf")):
                found[unit] = hit.score
        best.append(found)
        floors.append(min((h.score for h in run), default=0.0))
    (lex, den), (lex_floor, den_floor) = best, floors
    return {
        unit: weight * lex.get(unit, lex_floor) + (1.0 - weight) * den.get(unit, den_floor)
        for unit in sorted(lex.keys() | den.keys())
    }
