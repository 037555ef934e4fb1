"""benchmarks.train_confidence's evidence cache: rows whose labels read another context
(the sentence windows the labels read before they read ``pack``) are not reused."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from benchmarks import train_confidence as tc

from twokeys.rag.evidence import Evidence


class _Rebuilt(Exception):
    pass


def _rows(name: str) -> dict[str, tc.Row]:
    evidence = Evidence(*(0.0,) * 12)
    return {i.id: tc.Row(name, i, evidence, 1.0, True) for i in tc.items_of(name)}


def _refuse_index(*_: object) -> Path:
    raise _Rebuilt


@pytest.mark.parametrize("lexical", [False, True])
def test_rows_cached_under_the_old_labels_are_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lexical: bool
) -> None:
    monkeypatch.setattr(tc, "index_path", _refuse_index)
    folder = tmp_path / tc.KB
    folder.mkdir()
    old = folder / ("evidence-bm25.pkl" if lexical else "evidence.pkl")  # windows' labels
    old.write_bytes(pickle.dumps(_rows(tc.KB)))
    with pytest.raises(_Rebuilt):
        tc.rows_of(tmp_path, tc.KB, lexical)
    # rows cached under the packed context's labels are read back, no index opened
    tc.evidence_cache(tmp_path, tc.KB, lexical).write_bytes(pickle.dumps(_rows(tc.KB)))
    rows = tc.rows_of(tmp_path, tc.KB, lexical)
    assert [r.item.id for r in rows] == [i.id for i in tc.items_of(tc.KB)]


def test_rows_cached_before_a_feature_was_added_are_gathered_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tc, "index_path", _refuse_index)
    (tmp_path / tc.KB).mkdir()
    rows = _rows(tc.KB)
    first = next(iter(rows))
    old = _OldEvidence()  # pickles as the evidence did before the last two features existed
    rows[first] = tc.Row(tc.KB, rows[first].item, old, 1.0, True)  # type: ignore[arg-type]
    tc.evidence_cache(tmp_path, tc.KB).write_bytes(pickle.dumps(rows))
    with pytest.raises(_Rebuilt):
        tc.rows_of(tmp_path, tc.KB)


class _OldEvidence:
    """Pickled, an :class:`Evidence` whose state is 11 values (loading it leaves the last
    field unset)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (object.__new__, (Evidence,), (0.0,) * 11)
