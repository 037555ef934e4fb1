"""The verbatim rule: which texts hold a query word for word, the adaptive fusion ranking
them above the other candidates, and the hybrid reading chunk texts from its index."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from conftest import HashEncoder, assert_rule_decides, hash_index, open_hybrid
from twokeys.dense.encoder import Kind
from twokeys.fusion.adaptive import AdaptiveParams, QueryFeatures, adaptive_fusion
from twokeys.fusion.verbatim import (
    held_but_one_rows,
    holds,
    joined_words,
    verbatim_rows,
    words,
)
from twokeys.types import ScoredChunk

SIGNATURE = "Matrix map (d_d_Mapper f, const Matrix &a)"


def run(*pairs: tuple[int, float]) -> list[ScoredChunk]:
    return [ScoredChunk(row, score, i + 1) for i, (row, score) in enumerate(pairs)]


def test_words_ignore_case_punctuation_and_how_extraction_spaced_them() -> None:
    assert words(SIGNATURE) == ("matrix", "map", "d", "d", "mapper", "f", "const", "matrix", "a")
    printed = "Matrix map (d d Mapper f,\nconst Matrix &a)\nvoid map (d d Mapper f)"
    assert holds(words(SIGNATURE), printed)
    # the overload of the next class: the same terms, not the same words
    assert not holds(words(SIGNATURE), "ComplexMatrix map (d d Mapper f, const ComplexMatrix &a)")
    assert not holds(words("termoption set"), "set termoption font")  # order counts
    assert not holds(words("set term"), "set termoption")  # whole words only
    assert not holds((), "anything")


def test_the_held_words_start_where_an_identifier_starts() -> None:
    query = words("stdfit sqrt(WSSR/ndf)")
    assert holds(query, "or stdfit sqrt(WSSR/ndf), the standard deviation")
    assert not holds(query, "FIT_STDFIT = sqrt(WSSR/NDF)")  # a name of its own
    assert not holds(words("key box width"), "set_key box width")
    assert holds(words("set key box"), "set key box_width")  # the end is left open
    # inside the match an underscore is a space, as the PDF may print either
    assert holds(words(SIGNATURE), "Matrix map (d_d_Mapper f, const Matrix &a)")
    assert holds(words("Matrix map d d Mapper"), "Matrix map (d_d_Mapper f")
    assert joined_words("FIT_STDFIT = sqrt(WSSR/NDF)") == " fit_stdfit sqrt wssr ndf "


def test_a_query_of_one_or_two_words_reads_no_text() -> None:
    def texts(rows: Sequence[int]) -> list[str]:
        raise AssertionError("read")

    assert verbatim_rows("isnan", [1, 2], texts) == frozenset()
    assert verbatim_rows("infantile autism.", [1, 2], texts) == frozenset()  # two words
    assert verbatim_rows("set key box", [], texts) == frozenset()
    found = verbatim_rows(
        "set key box", [4, 5, 6], lambda rows: ["set key box", "key set box", "x set key box"]
    )
    assert found == {4, 6}


def test_a_chunk_holding_the_query_outranks_a_near_tie_the_dense_model_prefers() -> None:
    lexical = run((1, 18.907), (2, 18.901), (3, 15.0))  # BM25: a near tie between 1 and 2
    dense = run((2, 0.62), (1, 0.58), (3, 0.55))
    features = QueryFeatures((), (), (), 1.0, 9)
    params = AdaptiveParams()
    plain = adaptive_fusion(lexical, dense, features, {}, params, depth=100, weight=0.45)
    assert [h.row for h in plain] == [2, 1, 3]
    held = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45, verbatim={1}
    )
    assert [h.row for h in held] == [1, 2, 3]
    assert [h.rank for h in held] == [1, 2, 3]
    # a row outside the candidates is not lifted by holding the query
    deep = adaptive_fusion(lexical, dense, features, {}, params, depth=2, weight=0.45, verbatim={3})
    assert [h.row for h in deep] == [2, 1, 3]


def _index_overloads(tmp_path: Path, encoder: HashEncoder) -> None:
    """Two overloads' pages, BM25 nearly tied on the signature, as ``kb.twokeys``."""
    hash_index(
        tmp_path,
        {
            "matrix.md": "# Matrix\n\nMatrix map (d_d_Mapper f, const Matrix &a) applies f.\n",
            "complex.md": "# Complex\n\nComplexMatrix map (d_d_Mapper f, const ComplexMatrix &a)"
            " applies f to a complex matrix, matrix by matrix.\n",
        },
        encoder,
    )


def test_the_hybrid_reads_its_chunks_texts(tmp_path: Path) -> None:
    encoder = HashEncoder()
    _index_overloads(tmp_path, encoder)
    with open_hybrid(tmp_path / "kb.twokeys", encoder, SIGNATURE) as (index, retriever):
        assert retriever.texts is not None
        rows = [0, 1]
        assert list(retriever.texts(rows)) == [c.text for c in index.backend.chunks(rows)]
        first = retriever.retrieve(SIGNATURE, 2).run[0].row
        assert index.backend.chunks([first])[0].doc_id == "matrix.md"
        assert index.search(SIGNATURE, mode="hybrid", k=1)[0].path == "matrix.md"


class _PrefersComplex(HashEncoder):
    """A dense model that can't tell the overloads apart and leans to the wrong one:
    the query and any text naming ``ComplexMatrix`` share one direction."""

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dim), 1e-3, np.float32)
        for i, text in enumerate(texts):
            out[i, 0 if kind == "query" or "ComplexMatrix" in text else 1] = 1.0
        return out


def test_the_rule_decides_the_hybrids_order_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``Index.search``: the dense model prefers the other overload and BM25
    nearly ties them, so without the rule the hybrid ranks the wrong page first; with
    it, the page holding the signature word for word."""
    encoder = _PrefersComplex()
    _index_overloads(tmp_path, encoder)
    assert_rule_decides(
        tmp_path / "kb.twokeys",
        encoder,
        SIGNATURE,
        monkeypatch,
        "verbatim_rows",
        "matrix.md",
        "complex.md",
    )


@pytest.mark.parametrize("query", ["Matrix map (d_d", "const Matrix &a"])
def test_queries_of_several_words_are_read(query: str) -> None:
    found = verbatim_rows(query, [7], lambda rows: [SIGNATURE])
    assert found == {7}


def test_holds_agrees_with_reading_every_word() -> None:
    """The substring pre-check only skips texts that cannot hold the words: the answer
    is the same as tokenising every text, case-folding included (``ß``, ``İ``)."""
    import random

    rng = random.Random(7)
    vocabulary = ["Straße", "strasse", "İstanbul", "map", "Matrix", "d_d_Mapper", "a", "&", "x1"]
    for _ in range(2000):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 8)))
        query = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 4)))
        wanted = words(query)
        # the reference: identifiers split at "_", a match starting at an identifier's
        # first part only
        parts = [
            (part.casefold(), k > 0)
            for name in re.findall(r"\w+", text)
            for k, part in enumerate(p for p in name.split("_") if p)
        ]
        n = len(wanted)
        expected = n > 0 and any(
            tuple(w for w, _ in parts[i : i + n]) == wanted and not parts[i][1]
            for i in range(len(parts) - n + 1)
        )
        assert holds(wanted, text) == expected, (query, text)


OPTIONS = "point-and-click bool\nIf bool is #t, add links.\npreview bool\nIf bool is #t, preview."


def test_a_chunk_holding_all_but_one_word_in_order_and_every_word() -> None:
    texts = {
        1: OPTIONS,  # "point and click bool" in order, "preview" elsewhere
        2: "Selective point-and-click: which events to include.",  # lacks preview, bool
        3: "point-and-click preview bool",  # the whole query: the verbatim rule's
        4: "bool preview point and click",  # every word, no three of them in order
        5: "Write bytes that are not valid UTF-8 to the stream.",  # lacks the name
    }

    def read(rows: Sequence[int]) -> list[str]:
        return [texts[row] for row in rows]

    assert held_but_one_rows("point-and-click preview bool", [1, 2, 3, 4], read) == {1}
    name = "FromUtf8Error bytes that are not valid UTF-8"
    assert held_but_one_rows(name, [5], read) == frozenset()
    assert held_but_one_rows(name, [5], lambda rows: ["FromUtf8Error: " + texts[5]]) == {5}
    # the word left out may be the first, the last or one inside
    signature = "ColumnVector diag (void) const DiagMatrix"
    page = "class DiagMatrix\nColumnVector diag (void) const\nColumnVector diag (int k) const"
    assert held_but_one_rows(signature, [9], lambda rows: [page]) == {9}
    command = "gnuplot -c scriptfile ARG1 ARG2"
    usage = "Usage: gnuplot {OPTIONS}\n-c scriptfile ARG1 ARG2 ..."
    assert held_but_one_rows(command, [9], lambda rows: [usage]) == {9}
    # every word, but not all but one of them in the query's order
    shuffled = "ARG2 scriptfile -c gnuplot ARG1"
    assert held_but_one_rows(command, [9], lambda rows: [shuffled]) == frozenset()


def test_a_word_the_query_repeats_is_held_as_often() -> None:
    """``Matrix`` twice in the query: a text writing it once holds the rest in order
    but not every word of the query."""
    query = "Matrix map (const Matrix &a) scale"
    once = "Of the class: map (const Matrix &a) scale applies f."
    twice = "Matrix Of the class: map (const Matrix &a) scale applies f."
    assert held_but_one_rows(query, [1], lambda rows: [once]) == frozenset()
    assert held_but_one_rows(query, [2], lambda rows: [twice]) == {2}


def test_a_query_of_three_words_or_fewer_reads_no_text_for_the_held_but_one_rule() -> None:
    def texts(rows: Sequence[int]) -> list[str]:
        raise AssertionError("read")

    assert held_but_one_rows("set key box", [1, 2], texts) == frozenset()
    assert held_but_one_rows("set key box width", [], texts) == frozenset()


def test_held_but_one_ranks_below_the_exact_tier_and_the_whole_query() -> None:
    lexical = run((1, 16.8), (2, 10.8), (3, 10.0), (4, 9.0))
    dense = run((2, 0.55), (3, 0.54), (4, 0.53), (1, 0.30))  # the dense model prefers 2
    features = QueryFeatures((), (), (), 1.0, 5)
    params = AdaptiveParams()
    plain = adaptive_fusion(lexical, dense, features, {}, params, depth=100, weight=0.45)
    assert plain[0].row == 2
    lifted = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45, held_but_one={1}
    )
    assert [h.row for h in lifted] == [1] + [h.row for h in plain if h.row != 1]
    # a chunk holding the whole query ranks above it
    whole = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45,
        verbatim={4}, held_but_one={1},
    )  # fmt: skip
    assert [h.row for h in whole][:2] == [4, 1]
    # and so does a chunk holding more of the query's exact terms
    named = QueryFeatures(("x_y",), (), (), 1.0, 5)
    tiered = adaptive_fusion(
        lexical, dense, named, {3: 1}, params, depth=100, weight=0.45, held_but_one={1}
    )
    assert [h.row for h in tiered][:2] == [3, 1]
    # above the heading rule's rows, below the candidates' edge
    headed = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45,
        headed={2}, held_but_one={1},
    )  # fmt: skip
    assert [h.row for h in headed][:2] == [1, 2]
    deep = adaptive_fusion(
        lexical, dense, features, {}, params, depth=2, weight=0.45, held_but_one={4}
    )
    assert [h.row for h in deep][-1] == 4


def test_the_held_but_one_rule_decides_the_hybrids_order_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``Index.search``: the query adds its class's name to a signature the
    page writes without it; the dense model prefers the other overload's page."""
    query = "Matrix map (d_d_Mapper f, const Matrix &a) RealMatrixClass"
    encoder = _PrefersComplex()
    path = hash_index(
        tmp_path,
        {
            "matrix.md": "# Matrix\n\nOf RealMatrixClass: Matrix map (d_d_Mapper f,"
            " const Matrix &a) applies f.\n",
            "complex.md": "# Complex\n\nOf RealMatrixClass: ComplexMatrix map (d_d_Mapper f,"
            " const ComplexMatrix &a) applies f to a complex matrix, matrix by matrix.\n",
        },
        encoder,
    )
    assert_rule_decides(
        path, encoder, query, monkeypatch, "held_but_one_rows", "matrix.md", "complex.md"
    )
