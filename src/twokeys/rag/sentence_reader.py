"""A cheap reading of passages: each passage's best sentence, compared with the question
in the static MiniLM space.

A hybrid search scores a chunk as a whole, so a chunk that holds the answer in one
sentence among others about something else ranks below one that repeats the question's
words throughout. Comparing the question with each sentence alone sees that sentence. The
full model would read every sentence of a hundred hits in seconds of CPU; the static
encoder (:mod:`twokeys.dense.static_minilm`: a token table summed and mapped into the
full model's space, no network run) reads them in tens of milliseconds, most of it
tokenising, at the price of coarser cosines (about 0.74 to the full model's on held-out
sentences). Both the question and the sentences are read by the static encoder, so the
cosines compare like with like whatever the index's own encoder is.

:func:`best_sentence_cosines` returns the best sentence's cosine of each text;
:func:`static_reader` binds the shared static encoder to a question. The encoder's token
table is built from the shipped model on first use (about 25 s of one core) and cached
in the user's cache folder (:func:`twokeys.dense.static_minilm.table_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from twokeys.text.sentences import split_sentences

if TYPE_CHECKING:
    from twokeys.dense.static_minilm import StaticMiniLM

#: the best sentence's cosine of each text, for one question
Reader = Callable[[Sequence[str]], npt.NDArray[np.float64]]


def best_sentence_cosines(
    encoder: StaticMiniLM, question: str, texts: Sequence[str]
) -> npt.NDArray[np.float64]:
    """The highest cosine between ``question`` and a sentence of each text (sentences as
    :func:`~twokeys.text.sentences.split_sentences` cuts them, list items and code lines
    included); 0 for a text without one."""
    best = np.zeros(len(texts), dtype=np.float64)
    sentences: list[str] = []
    owners: list[int] = []
    for n, text in enumerate(texts):
        for start, end in split_sentences(text):
            sentences.append(text[start:end])
            owners.append(n)
    if not sentences:
        return best
    query = encoder.encode_one(question).astype(np.float64)
    vectors = encoder.embed_batch(sentences, "document").astype(np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    cosines = (vectors @ query) / np.maximum(norms, 1e-12)
    best.fill(-np.inf)
    np.maximum.at(best, np.asarray(owners, dtype=np.intp), cosines)
    best[np.isneginf(best)] = 0.0
    return best


@cache
def static_encoder() -> StaticMiniLM:
    """The static MiniLM encoder, loaded once per process."""
    from twokeys.dense.static_minilm import StaticMiniLM

    return StaticMiniLM()


def static_reader(question: str) -> Reader:
    """:func:`best_sentence_cosines` of ``question`` with the shared static encoder,
    loaded (its table built, on a machine's first use) at the first read, so a caller
    that reads nothing (a run of fewer than two hits is not re-ranked) pays nothing."""

    def read(texts: Sequence[str]) -> npt.NDArray[np.float64]:
        return best_sentence_cosines(static_encoder(), question, texts)

    return read
