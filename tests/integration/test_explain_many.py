"""Batched explain: one call for all hits, the same answers as one call per hit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.lexical.base import LexicalIndex


def test_explain_many_equals_explain_row_by_row(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    words = "power supply fuse firmware signature refund parcel grub menu reset".split()
    docs = {f"d{i:02d}.md": f"# D{i}\n\n" + " ".join(rng.choice(words, 15)) for i in range(30)}
    index = tmp_path / "kb.twokeys"
    build_index(write_docs(tmp_path / "docs", docs), index, IndexOptions(encoder=None))
    with open_index(index) as kb:
        lexical = kb.backend.lexical
        n = kb.backend.stats()["chunks"]  # type: ignore[attr-defined]
        rows = [int(r) for r in rng.permutation(n)] + [0, 0]
        for terms in (["power", "fuse"], ["power", "power", "unknown"], ["zzz"], []):
            expected = [lexical.explain(terms, row) for row in rows]
            assert lexical.explain_many(terms, rows) == expected
            assert LexicalIndex.explain_many(lexical, terms, rows) == expected  # the default
        assert lexical.explain_many(["power"], []) == []
        hits = kb.search("power fuse", mode="bm25", k=5, explain=True)
        assert [h.evidence[0].matched_terms for h in hits] == [
            lexical.explain(["power", "fuse"], kb.backend.documents([h.doc_id])[h.doc_id].first_row)
            for h in hits
        ]
