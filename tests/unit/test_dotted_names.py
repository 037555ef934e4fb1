"""A dotted qualified name the pages never write in full is found when one chunk holds
each of its parts as a word (documentation drops the qualifiers its page supplies), and
so is a keyword with a value (``ensure_ascii=False`` where the page gives the keyword
and says when it is false); versions and other digit-bearing codes still match whole."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.engine import Index
from twokeys.rag.grounding import retrieval_confidence

DOCS = {
    "ftplib.md": "# ftplib: FTP protocol client\n\n"
    "FTP.getwelcome() returns the welcome message sent by the server.\n",
    "nntplib.md": "# nntplib: NNTP protocol client\n\n"
    "NNTP.getwelcome() returns the welcome message of the news server.\n",
    "ospath.md": "# os.path: pathname manipulations\n\n"
    "join(path, *paths) joins one or more path segments.\n",
    "text.md": "# Text sequence type\n\nThe str methods: split(sep) returns a list of words.\n",
    "config.md": "# Configuration\n\nThe sys_path setting lists folders; join them with colons.\n",
    "release.md": "# Release notes\n\nVersion 1.2.1 fixed 2 bugs on 10 devices.\n",
    "json.md": "# json: JSON encoder\n\ndumps(obj, ensure_ascii=True) serialises obj. If "
    "ensure_ascii is false, non-ASCII characters are written as they are.\n",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    root = tmp_path_factory.mktemp("dotted")
    build_index(write_docs(root / "docs", DOCS), root / "kb.twokeys", IndexOptions(encoder=None))
    with open_index(root / "kb.twokeys") as index:
        yield index


@pytest.mark.parametrize(
    ("name", "term"),
    [
        ("ftplib.FTP.getwelcome", "ftplib.ftp.getwelcome"),  # FTP.getwelcome on the ftplib page
        ("os.path.join", "os.path.join"),  # the page's heading gives os.path
        ("str.split", "str.split"),  # prose names the type, the member stands alone
    ],
)
def test_a_name_whose_parts_share_a_chunk_is_found(kb: Index, name: str, term: str) -> None:
    confidence = retrieval_confidence(kb, f"What does {name} do?")
    assert confidence.missing == () and term in confidence.found and confidence.answerable


@pytest.mark.parametrize(
    ("name", "term"),
    [
        ("ftplib.NNTP.getwelcome", "ftplib.nntp.getwelcome"),  # ftplib and NNTP: two pages
        ("sys.path.join", "sys.path.join"),  # sys and path only inside sys_path
        ("os.path.split", "os.path.split"),  # split is on another page
    ],
)
def test_a_name_whose_parts_are_apart_is_missing(kb: Index, name: str, term: str) -> None:
    confidence = retrieval_confidence(kb, f"What does {name} do?")
    assert confidence.missing == (term,) and not confidence.answerable


@pytest.mark.parametrize("code", ["1.2.10", "v1.2", "v2.10"])
def test_a_version_still_matches_whole(kb: Index, code: str) -> None:
    # 1, 2 and 10 are all written in the release notes' one chunk, but not as 1.2.10
    confidence = retrieval_confidence(kb, f"What did version {code} fix?")
    assert confidence.missing == (code,) and not confidence.answerable
    assert retrieval_confidence(kb, "What did version 1.2.1 fix?").found == ("1.2.1",)


def test_a_keyword_and_value_are_found_in_one_chunk_apart(kb: Index) -> None:
    found = retrieval_confidence(kb, "What does dumps do with ensure_ascii=False?")
    assert found.missing == () and "ensure_ascii=false" in found.found and found.answerable
    # a keyword no page gives, or a value never written beside it, is missing
    for setting in ("ignore_case=true", "ensure_ascii=maybe"):
        confidence = retrieval_confidence(kb, f"What does dumps do with {setting}?")
        assert confidence.missing == (setting,) and not confidence.answerable
