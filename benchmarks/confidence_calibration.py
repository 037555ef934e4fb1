"""An experiment: per-collection calibration of the retrieval evidence the learned confidence reads.

The same evidence sits at different levels in different collections: short product
pages give an answerable question a lower dense peak (the collection's cosines spread
differently) and a lower share of its words in one passage than long manual pages do.
A threshold fitted on one kind then abstains on the other's answerable questions. So
each collection measures its own scale, from questions made of its own passages:

* *pseudo-questions* (answered): the first words of the first full sentence of chunks
  spread evenly over the index, every third word left out so that a question does not
  repeat its passage word for word;
* *mixed questions* (not answered by one passage): the first half of one such
  question joined to the second half of one from the other half of the index;
* *heading questions*: section headings of two or more words (:func:`heading_questions`).

:func:`measure` asks both (``samples`` of each) and records the median of each
level-dependent feature (:data:`CALIBRATED`) for each kind; :meth:`Calibration.relative`
reads a question's feature on that scale, 0 at the mixed questions' median and 1 at the
pseudo-questions' (a feature whose two medians are equal is read as its difference from
them). The count features (``unseen``, ``missing_ids``) are not levels and stay as they
are.

Nothing here names a collection's vocabulary: the questions come from the collection
itself. This is an experiment of ``python -m benchmarks.train_confidence OUT
--calibrated`` (README "Answers"): measured there, no reading of these levels ranked the
test questions of both kinds of collection better than the raw features, so
:mod:`twokeys.rag.confidence` does not use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

from twokeys.engine import Index
from twokeys.rag.evidence import NAMES, gather
from twokeys.text.sentences import split_sentences

VERSION = 1
#: features whose level depends on the collection, read on its own scale
#: (the page features came after this calibration was measured and are read raw, so its
#: recorded figures stand)
CALIBRATED = tuple(
    name for name in NAMES if name not in ("unseen", "missing_ids", "page_share", "page_margin")
)
SAMPLES = 16  # pseudo-questions per collection, and as many mixed ones
QUERY_WORDS = (6, 15)  # a pseudo-question: a sentence of at least 6 words, its first 15
DROP = 3  # ... without every third word
DEPTH = 40  # hits retrieved for each question, as ask retrieves
FLAT = 1e-6  # two medians closer than this give no scale


@dataclass(frozen=True, slots=True)
class Level:
    """One feature's medians over a collection's pseudo- and mixed questions."""

    name: str
    answered: float
    mixed: float

    def read(self, value: float) -> float:
        span = self.answered - self.mixed
        if abs(span) < FLAT:
            return value - self.answered
        return (value - self.mixed) / span


@dataclass(frozen=True, slots=True)
class Calibration:
    """A collection's :class:`Level` for each :data:`CALIBRATED` feature."""

    levels: tuple[Level, ...]
    samples: int

    def relative(self, features: Mapping[str, float]) -> dict[str, float]:
        """``features`` with each calibrated one read on the collection's scale."""
        out = dict(features)
        for level in self.levels:
            if level.name in out:
                out[level.name] = level.read(out[level.name])
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "version": VERSION,
            "samples": self.samples,
            "levels": {x.name: [x.answered, x.mixed] for x in self.levels},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Calibration | None:
        """The calibration stored as ``data``, or None when it is of another version."""
        levels = data.get("levels")
        if data.get("version") != VERSION or not isinstance(levels, dict):
            return None
        if set(levels) != set(CALIBRATED):
            return None
        return cls(
            tuple(Level(n, float(levels[n][0]), float(levels[n][1])) for n in CALIBRATED),
            int(str(data["samples"])),
        )


def pseudo_questions(index: Index, samples: int = SAMPLES) -> list[str]:
    """Up to ``2 * samples`` pseudo-questions from the index's own chunks (module
    docstring), from chunks spread evenly over its rows (deterministic), in row order."""
    n = int(index.manifest.counts.get("chunks", 0))
    if n == 0:
        return []
    spread = [int(r) for r in np.unique(np.linspace(0, n - 1, min(n, 8 * samples)).astype(int))]
    # every fourth of them first, so the questions span the index even when most qualify
    rows = [r for offset in range(4) for r in spread[offset::4]]
    low, high = QUERY_WORDS
    found: list[tuple[int, str]] = []
    for row, (chunk, _title, _path) in zip(
        rows, index.backend.chunks_with_source(rows), strict=True
    ):
        for start, end in split_sentences(chunk.text):
            words = chunk.text[start:end].split()
            if len(words) >= low and any(w.isalpha() for w in words):
                kept = [w for i, w in enumerate(words[:high]) if i % DROP != DROP - 1]
                found.append((row, " ".join(kept)))
                break
        if len(found) >= 2 * samples:
            break
    return [q for _, q in sorted(found)]


def heading_questions(index: Index, samples: int = SAMPLES) -> list[str]:
    """Up to ``samples`` distinct headings of two or more words (a chunk's innermost
    heading), from chunks spread evenly over the index: the topic a section answers,
    in the collection's own words but not repeated from the passage."""
    n = int(index.manifest.counts.get("chunks", 0))
    rows = [int(r) for r in np.unique(np.linspace(0, n - 1, min(n, 200)).astype(int))]
    found: list[str] = []
    for chunk, _title, _path in index.backend.chunks_with_source(rows) if rows else []:
        heading = chunk.heading_path[-1].strip() if chunk.heading_path else ""
        if len(heading.split()) >= 2 and heading not in found:
            found.append(heading)
    return found[:: max(1, len(found) // samples)][:samples]


def mixed_questions(questions: Sequence[str]) -> list[str]:
    """Each question's first half joined to the second half of the question half the
    list away (another part of the index)."""
    n = len(questions)
    out = []
    for i, first in enumerate(questions):
        head = first.split()
        tail = questions[(i + n // 2) % n].split()
        out.append(" ".join(head[: len(head) // 2] + tail[len(tail) // 2 :]))
    return out


def asked(
    index: Index, samples: int = SAMPLES, mode: str | None = None
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """The evidence features of the index's pseudo-questions and of its mixed ones
    (module docstring); ``mode`` the retrieval they are asked with (hybrid where the
    index has vectors, else bm25)."""
    if mode is None:
        mode = "bm25" if index.backend.vectors is None else "hybrid"
    found = pseudo_questions(index, samples)
    answered, mixed = found[::2], mixed_questions(found[1::2])

    def features(questions: Sequence[str]) -> list[dict[str, float]]:
        return [
            gather(index, q, index.search(q, mode=mode, k=DEPTH)).as_features() for q in questions
        ]

    return features(answered), features(mixed)


def from_features(
    answered: Sequence[Mapping[str, float]], mixed: Sequence[Mapping[str, float]]
) -> Calibration:
    """The calibration whose levels are the medians of ``answered`` and ``mixed``."""
    if len(answered) < 2 or len(mixed) < 2:
        return Calibration(tuple(Level(n, 0.0, 0.0) for n in CALIBRATED), 0)
    return Calibration(
        tuple(
            Level(
                n,
                float(median(f[n] for f in answered)),
                float(median(f[n] for f in mixed)),
            )
            for n in CALIBRATED
        ),
        len(answered),
    )


def measure(index: Index, samples: int = SAMPLES, mode: str | None = None) -> Calibration:
    """The calibration of ``index`` (module docstring)."""
    return from_features(*asked(index, samples, mode))
