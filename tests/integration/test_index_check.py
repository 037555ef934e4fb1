"""Damaged indexes are named, not searched: `twokeys check [--repair]`, `info`'s verdict,
and `index` that repairs instead of copying damage forward (issue 12's cases)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.errors import IndexFormatError, TwokeysError
from twokeys.repair import repair_index
from twokeys.store import local
from twokeys.store.check import check_index
from twokeys.store.local import MANIFEST

DOCS = {
    f"doc{i:02d}.md": f"# Page {i}\n\n## Part\n\nThe hub model {i} reports error ZX-{4800 + i} "
    f"when the power supply drops. Firmware {i}.{i} fixes the signature check.\n"
    for i in range(40)
}
OPTIONS = IndexOptions(encoder="test-hash")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("check")
    src = write_docs(root / "docs", DOCS)
    index = root / "kb.twokeys"
    build_index(src, index, OPTIONS)
    return src, index


@pytest.fixture
def copy(pristine: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """(sources, index, generation folder) of a fresh copy that a test may damage."""
    src, index = pristine
    target = tmp_path / "kb.twokeys"
    shutil.copytree(index, target)
    generation = json.loads((target / MANIFEST).read_text())["generation"]
    return src, target, target / generation


def _rewrite(file: Path, change: Callable[[np.ndarray], np.ndarray]) -> None:
    np.save(file, change(np.load(file)), allow_pickle=False)


def _nan_rows(array: np.ndarray) -> np.ndarray:
    array[3:7] = np.nan
    return array


def test_a_whole_index_passes_both_checks(pristine: tuple[Path, Path]) -> None:
    _, index = pristine
    assert check_index(index, deep=True).ok
    assert check_index(index, deep=False).ok
    code, out, _ = run("check", "--index", str(index))
    assert code == 0 and "ok (full check)" in out
    code, out, _ = run("info", "--index", str(index))
    assert code == 0 and "ok (sizes and counts)" in out


def test_truncated_vocabulary_is_named_not_no_results(copy: tuple[Path, Path, Path]) -> None:
    _, index, gen = copy
    vocab = gen / "lexical.vocab.txt"
    vocab.write_text("".join(vocab.read_text().splitlines(keepends=True)[:10]))
    code, out, err = run("search", "ZX-4801", "--index", str(index), "--mode", "bm25")
    assert code == 1 and "lexical.vocab.txt" in err and "no results" not in out
    code, _, err = run("info", "--index", str(index))
    assert code == 1 and "damaged:" in err and "lexical.vocab.txt" in err


def test_embeddings_with_missing_rows_are_named(copy: tuple[Path, Path, Path]) -> None:
    src, index, gen = copy
    _rewrite(gen / "dense.embeddings.npy", lambda a: a[:10])
    with open_index(index, encoder=HashEncoder()) as kb:
        with pytest.raises(IndexFormatError, match=r"dense\.embeddings\.npy"):
            kb.search("hub power", mode="dense")
        assert kb.search("hub power", mode="bm25")  # the rest of the index still works
    report = check_index(index, deep=False)
    assert [p.file.name for p in report.problems] == ["dense.embeddings.npy"] * 3
    rebuilt = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))  # not copied
    assert rebuilt.embedded_chunks == enc.encoded == len(DOCS)
    assert check_index(index).ok


def test_zero_length_embeddings_give_one_line_not_aborted(copy: tuple[Path, Path, Path]) -> None:
    _, index, gen = copy
    (gen / "dense.embeddings.npy").write_bytes(b"")
    code, _, err = run("search", "hub", "--index", str(index), "--mode", "dense")
    assert code == 1 and "Aborted" not in err
    assert err.startswith("error: ") and "dense.embeddings.npy: 0 bytes" in err
    assert len(err.strip().splitlines()) == 1


def test_nan_vectors_are_named_and_not_copied_forward(copy: tuple[Path, Path, Path]) -> None:
    src, index, gen = copy
    _rewrite(gen / "dense.embeddings.npy", _nan_rows)
    not_finite = r"rows \[3, 4, 5, 6\] are not finite"
    with (
        open_index(index, encoder=HashEncoder()) as kb,
        pytest.raises(IndexFormatError, match=not_finite),
    ):
        kb.search("hub power", mode="dense")
    deep = check_index(index, deep=True)
    assert any("4 vector(s) not finite" in p.message for p in deep.problems)
    # re-indexing with nothing changed repairs instead of keeping the damage; the file
    # fails its recorded sha256, so every vector is embedded again
    report = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))
    assert report.committed and report.repaired
    assert enc.encoded == report.embedded_chunks == len(DOCS)
    assert check_index(index, deep=True).ok
    with open_index(index, encoder=HashEncoder()) as kb:
        assert len(kb.search("hub power", mode="dense", k=5)) == 5


def test_index_re_embeds_only_bad_rows_of_a_large_vector_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file too large to hash: the rows that fail the check are embedded again, alone."""
    monkeypatch.setattr(local, "HASHED_UP_TO", 0)
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, OPTIONS)
    generation = json.loads((index / MANIFEST).read_text())["generation"]
    _rewrite(index / generation / "dense.embeddings.npy", _nan_rows)
    (src / "doc20.md").write_text("# Changed\n\nA new text for one page.\n")
    report = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))
    assert [p.rows_only for p in report.repaired] == [True]
    assert enc.encoded == report.embedded_chunks == 1 + 4  # the changed page and 4 bad rows
    assert check_index(index, deep=True).ok


def test_out_of_range_lexical_arrays_are_named(copy: tuple[Path, Path, Path]) -> None:
    _, index, gen = copy

    def out_of_range(a: np.ndarray) -> np.ndarray:
        a[-5:] = 10**6
        return a

    _rewrite(gen / "lexical.indices.npy", out_of_range)
    with open_index(index) as kb:
        terms = sorted(kb.backend.lexical.inner._vocabulary)  # type: ignore[attr-defined]
        with pytest.raises(IndexFormatError, match=r"lexical\.\*\.npy: arrays out of range"):
            kb.backend.lexical.search(terms, 5)
        with pytest.raises(IndexFormatError, match="out of range"):
            kb.backend.lexical.search_many([terms[:3]], 5)
    problems = check_index(index).problems
    assert any(
        p.file.name == "lexical.indices.npy" and "outside 0.." in p.message for p in problems
    )


def test_damaged_database_is_named_and_index_rereads_sources(
    copy: tuple[Path, Path, Path],
) -> None:
    src, index, gen = copy
    with open(gen / "twokeys.sqlite", "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\xff" * 4096)
    with open_index(index) as kb, pytest.raises(IndexFormatError, match="twokeys.sqlite"):
        kb.backend.all_documents()  # search reads hits from the hit files, not the database
        list(kb.backend.iter_chunks())
    code, _, err = run("check", "--repair", "--index", str(index))
    assert code == 1 and "re-index from the sources" in err
    report = build_index(src, index, OPTIONS)
    assert report.full_rebuild_reason and report.added == len(DOCS)
    assert check_index(index).ok
    assert [p.name for p in index.iterdir() if p.name.startswith("gen-")] == [
        json.loads((index / MANIFEST).read_text())["generation"]
    ]


def test_bad_heading_json_is_named_with_its_row(copy: tuple[Path, Path, Path]) -> None:
    src, index, gen = copy
    db = sqlite3.connect(gen / "twokeys.sqlite")
    db.execute("UPDATE chunks SET heading = '[\"Page' WHERE row = 2")
    db.commit()
    db.close()
    with open_index(index) as kb, pytest.raises(IndexFormatError, match="chunk row 2: heading"):
        list(kb.backend.iter_chunks())  # search reads headings from the hit files
    assert any("chunk row 2" in p.message for p in check_index(index).problems)
    report = build_index(src, index, OPTIONS)  # the database is not copied forward
    assert "damaged" in report.full_rebuild_reason and check_index(index).ok


def test_unrecorded_size_change_is_named(copy: tuple[Path, Path, Path]) -> None:
    _, index, gen = copy
    with open(gen / "lexical.tf.npy", "ab") as fh:
        fh.write(b"\0" * 8)
    with open_index(index) as kb, pytest.raises(IndexFormatError, match="lexical.tf.npy"):
        kb.backend.term_matrix()
    assert not check_index(index, deep=False).ok


@pytest.mark.parametrize(
    ("name", "damage", "embedded"),
    [
        ("lexical.vocab.txt", lambda f: f.write_text("a\nb\n"), 0),
        ("lexical.weights.npy", lambda f: _rewrite(f, lambda a: a * np.float32(np.nan)), 0),
        ("dense.embeddings.npy", lambda f: _rewrite(f, _nan_rows), len(DOCS)),  # sha256 fails
        ("dense.embeddings.npy", lambda f: f.write_bytes(b""), len(DOCS)),
    ],
)
def test_repair_rebuilds_from_stored_chunks(
    copy: tuple[Path, Path, Path], name: str, damage: Callable[[Path], None], embedded: int
) -> None:
    _, index, gen = copy
    with open_index(index, encoder=HashEncoder()) as kb:
        expected = [(h.doc_id, h.chunk.text) for h in kb.search("hub firmware 17", k=5)]
    damage(gen / name)
    code, _, err = run("check", "--index", str(index))
    assert code == 1 and name in err
    result = repair_index(index, encoder=(enc := HashEncoder()))
    assert result.rebuilt is not None and result.rebuilt.embedded_chunks == enc.encoded == embedded
    assert check_index(index).ok
    with open_index(index, encoder=HashEncoder()) as kb:
        assert [(h.doc_id, h.chunk.text) for h in kb.search("hub firmware 17", k=5)] == expected
    assert [p.name for p in index.iterdir() if p.name.startswith("gen-")] == [
        json.loads((index / MANIFEST).read_text())["generation"]
    ]


def test_repair_of_a_whole_index_changes_nothing(copy: tuple[Path, Path, Path]) -> None:
    _, index, _ = copy
    before = (index / MANIFEST).read_bytes()
    result = repair_index(index, encoder=HashEncoder())
    assert result.found.ok and result.rebuilt is None
    assert (index / MANIFEST).read_bytes() == before


def test_check_of_a_missing_index_is_one_line(tmp_path: Path) -> None:
    report = check_index(tmp_path / "none")
    assert not report.ok and "no index at" in str(report.problems[0])
    with pytest.raises(TwokeysError, match="no index at"):
        repair_index(tmp_path / "none")


def test_check_repair_on_the_command_line(copy: tuple[Path, Path, Path]) -> None:
    _, index, gen = copy
    _rewrite(gen / "lexical.indices.npy", lambda a: np.minimum(a + 1000, 10**6).astype(a.dtype))
    code, out, err = run("check", "--repair", "-q", "--index", str(index))
    assert code == 0, err
    assert "damaged:" in err and "lexical.indices.npy" in err
    assert "repaired: rebuilt 40 documents" in out and "ok (full check)" in out
    code, out, _ = run("search", "ZX-4817", "--index", str(index), "--mode", "bm25", "-k", "1")
    assert code == 0 and out.startswith("1. doc17.md")
