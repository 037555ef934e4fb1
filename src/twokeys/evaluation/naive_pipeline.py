"""The naive baseline of ``eval-answers``: the context of the Ollama hybrid-pipeline project
(github.com/JunyiiBlvd/ollama-hybrid-pipeline, ``context_loader.search_knowledge_base``),
rebuilt as that project calls it.

Over a folder of Markdown files it runs two retrievals on the whole question and merges
them:

* *cosine*, file level: each file is embedded as its name (``-`` and ``_`` read as
  spaces) and its first :data:`PREVIEW_CHARS` characters; the best :data:`COSINE_K`
  files with a cosine of at least :data:`COSINE_THRESHOLD` give that preview;
* *BM25*, paragraph level: every file split at blank lines, BM25Okapi (``rank_bm25``
  with its defaults) over tokens split at whitespace and punctuation but not hyphens;
  the best :data:`BM25_K` paragraphs with a score above zero.

Cosine hits first, then BM25 hits, skipping a repeat of the same file and first 100
characters, at most :data:`MAX_RESULTS`; each is shown as ``### name`` and its first
:data:`PIECE_CHARS` characters, the whole section cut at the character budget
(``CONTEXT_INJECT_LIMIT``: 2,000 in that project's v3, 4,000 since).

Differences, all in the baseline's favour or forced: the embedding model is the
index's own (the project used all-MiniLM-L6-v2 before moving to nomic-embed-text
through Ollama, which this machine does not run); files are found in subfolders too (the
project globs one folder); its other context sections (a listing of its own scripts, a
file the prompt names, session memory) are left out, so the whole budget goes to the
knowledge base.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder
from twokeys.errors import ConfigError

PREVIEW_CHARS = 1500  # rag_index._PREVIEW_CHARS
COSINE_K = 2  # search_knowledge_base: query_knowledge(prompt, top_k=2)
COSINE_THRESHOLD = 0.25  # _KB_SIMILARITY_THRESHOLD
BM25_K = 2  # _kb_bm25.search(prompt, top_k=2)
MAX_RESULTS = 3  # _merge(..., max_results=3)
PIECE_CHARS = 600  # f"### {stem}\n{text[:600]}"
DEDUP_CHARS = 100  # _merge's key: (stem, text[:100])
HEADER = "## Knowledge Base\n"

_SPLIT = re.compile(r"[\s,;:!()\[\]{}<>/\"'\\@#$%^&*+=~|.]+")


def tokenize(text: str) -> list[str]:
    """Lowercased tokens split at whitespace and punctuation, hyphens kept."""
    return [t for t in _SPLIT.split(text.lower()) if t]


@dataclass(frozen=True, slots=True)
class NaivePiece:
    path: str  # relative to the folder
    text: str  # as shown, cut to PIECE_CHARS


@dataclass(frozen=True)
class NaiveContext:
    pieces: tuple[NaivePiece, ...]  # whatever of each survives the character cut
    text: str


class NaivePipeline:
    """The project's knowledge-base context over ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | Path, encoder: Encoder | None) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError:
            raise ConfigError(
                "the naive baseline needs rank_bm25: pip install 'twokeys[eval]'"
            ) from None
        root = Path(folder)
        files = sorted(p for p in root.rglob("*.md") if p.is_file()) if root.is_dir() else []
        if not files:
            raise ConfigError(f"{root}: no Markdown files for the naive baseline")
        self._paths = [p.relative_to(root).as_posix() for p in files]
        texts = [p.read_text(encoding="utf-8", errors="ignore") for p in files]
        self._previews = [t[:PREVIEW_CHARS] for t in texts]
        self._encoder = encoder
        self._file_vectors: npt.NDArray[np.float32] | None = None
        if encoder is not None:
            names = [Path(p).stem.replace("-", " ").replace("_", " ") for p in self._paths]
            self._file_vectors = encoder.encode(
                [f"{n} {t}" for n, t in zip(names, self._previews, strict=True)], "document"
            )
        self._paragraphs: list[tuple[int, str]] = [
            (i, para.strip())
            for i, t in enumerate(texts)
            for para in t.split("\n\n")
            if para.strip()
        ]
        self._bm25 = BM25Okapi([tokenize(p) for _, p in self._paragraphs])

    def context(self, question: str, chars: int) -> NaiveContext:
        hits: list[tuple[int, str]] = []  # (file, text)
        if self._encoder is not None and self._file_vectors is not None:
            # the project embeds the question with the same call as the files
            query = self._encoder.encode([question], "document")[0]
            cosines = self._file_vectors @ query
            for i in _top(cosines, COSINE_K):
                if cosines[i] >= COSINE_THRESHOLD:
                    hits.append((i, self._previews[i]))
        scores = np.asarray(self._bm25.get_scores(tokenize(question)), dtype=np.float64)
        for j in _top(scores, BM25_K):
            if scores[j] > 0:
                hits.append(self._paragraphs[j])
        merged: list[tuple[int, str]] = []
        seen: set[tuple[int, str]] = set()
        for i, text in hits:
            key = (i, text[:DEDUP_CHARS])
            if key not in seen:
                seen.add(key)
                merged.append((i, text))
            if len(merged) >= MAX_RESULTS:
                break
        if not merged:
            return NaiveContext((), "")
        shown = [
            (i, f"### {Path(self._paths[i]).stem}\n", text[:PIECE_CHARS]) for i, text in merged
        ]
        full = HEADER + "\n\n".join(head + body for _, head, body in shown)
        cut = full[:chars]
        # each piece keeps what of it lies before the cut
        pieces: list[NaivePiece] = []
        at = len(HEADER)
        for i, head, body in shown:
            start = at + len(head)
            if start >= len(cut):
                break
            pieces.append(NaivePiece(self._paths[i], cut[start : start + len(body)]))
            at = start + len(body) + 2
        return NaiveContext(tuple(pieces), cut)


def _top(scores: npt.NDArray[np.floating], k: int) -> Sequence[int]:
    """Indices of the ``k`` highest scores, best first (ties: the earlier index)."""
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]
