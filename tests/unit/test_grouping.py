from __future__ import annotations

from twokeys.grouping import groups_by_size


def test_groups_close_once_their_size_reaches_the_limit() -> None:
    words = ["aaa", "b", "cc", "dddd", "e", "ff"]
    assert list(groups_by_size(words, len, 4)) == [["aaa", "b"], ["cc", "dddd"], ["e", "ff"]]
    assert list(groups_by_size(words, len, 100)) == [words]
    assert list(groups_by_size(words, len, 1)) == [[w] for w in words]


def test_no_group_is_empty() -> None:
    assert list(groups_by_size([], len, 4)) == []
    assert list(groups_by_size(["abcd"], len, 4)) == [["abcd"]]
