"""A code the dense model cannot read is answered by BM25, whatever its shape.

``40002`` is no identifier by shape (a plain number), and a dense model that does not
see digits finds nothing about it. The evidence (BM25 ranks its top chunk first because
of ``40002``; no dense top chunk holds it) makes it an anchor: the chunk holding it is
ranked first, and the "no semantic support" rule does not shrink BM25's weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.dense.encoder import Kind, register_encoder
from twokeys.evaluation.runs import doc_rank


class DigitBlindEncoder(HashEncoder):
    """The hashing encoder, blind to every word holding a digit (as a model whose
    vocabulary splits codes into meaningless pieces)."""

    id = "test:hash-64-digit-blind"

    def fingerprint(self) -> str:
        return "sha256:digit-blind-" + super().fingerprint()[7:]

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        seen = [" ".join(w for w in t.split() if not any(c.isdigit() for c in w)) for t in texts]
        return super().embed_batch(seen, kind)


register_encoder("test-digit-blind", DigitBlindEncoder)

TOPICS = "upload sync login camera battery router storage export import billing share backup"


def test_a_code_only_bm25_can_read_is_ranked_first(tmp_path: Path) -> None:
    docs = {
        f"{topic}.md": f"# {topic} error\n\nAn error during {topic}: the {topic} error "
        f"appears when {topic} fails. Retry the {topic}, then report the error.\n"
        for topic in TOPICS.split()
    }
    docs["codes.md"] = "# Codes\n\nCode 40002 means the monthly quota is exhausted.\n"
    index = tmp_path / "kb.twokeys"
    options = IndexOptions(encoder="test-digit-blind")
    build_index(write_docs(tmp_path / "docs", docs), index, options)
    with open_index(index) as kb:
        assert doc_rank(kb.search("error 40002", mode="bm25", k=20), "codes.md") == 1
        assert (doc_rank(kb.search("error 40002", mode="dense", k=20), "codes.md") or 99) > 10
        assert doc_rank(kb.search("error 40002", mode="hybrid", k=20), "codes.md") == 1
