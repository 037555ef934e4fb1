"""Menu paths a corpus documents, and a query path that leaves them."""

from __future__ import annotations

from twokeys.analysis import Analyzer
from twokeys.rag.commands import Command
from twokeys.rag.menus import departure, head_term, menu_paths, query_path

A = Analyzer()

PAGE = """Turn audio off under **Camera settings > Audio**. Enable
**Camera settings > Power > Charge limit** or read **Camera settings > Power > Battery health**.
Open **Settings > Hub > Network**, then **Settings > Hub > Network > History**.
Go to **Account > Privacy > Delete my Lumatek ID**. A bold **Warning** and `x > 0`,
`hubctl log > out.txt` and **Windows/macOS > 12** are no paths.
"""


def _known() -> list[Command]:
    return menu_paths(PAGE, A)


def _leaves(query: str) -> tuple[str, bool] | None:
    pieces = query_path(query)
    assert pieces is not None
    found = departure(pieces, _known(), A)
    return None if found is None else (found.written, found.leaf)


def test_menu_paths_are_bold_or_code_spans_of_word_steps() -> None:
    paths = [" > ".join(w.text for w in p) for p in _known()]
    assert paths == [
        "Camera settings > Audio",
        "Camera settings > Power > Charge limit",
        "Camera settings > Power > Battery health",
        "Settings > Hub > Network",
        "Settings > Hub > Network > History",
        "Account > Privacy > Delete my Lumatek ID",
    ]
    assert _known()[5][2].term == "delet lumatek id"  # content terms, stopwords left out


def test_a_query_path_is_cut_at_the_separators() -> None:
    assert query_path("What is Settings > Hub?") == ["What is Settings", "Hub?"]
    assert query_path("Is 3 > 2?") == ["Is 3", "2?"]
    assert query_path("What is a hub?") is None
    assert head_term(["How do I open Camera settings"], A) == "set"


def test_a_step_no_documented_path_has_is_named() -> None:
    # a branching step: every documented Camera settings > Power path goes on
    assert _leaves("How do I set up Camera settings > Power > Sleep schedule?") == (
        "Camera settings > Power > Sleep schedule",
        False,
    )
    assert _leaves("What is Account > Privacy > Ad preferences for?") == (
        "Account > Privacy > Ad preferences",
        False,
    )
    # past a documented path's end: the caller decides from the pages' prose
    assert _leaves("What does Camera settings > Audio > Noise filter do?") == (
        "Camera settings > Audio > Noise filter",
        True,
    )


def test_documented_paths_and_their_prefixes_are_not() -> None:
    assert _leaves("What does Camera settings > Power > Charge limit do?") is None
    assert _leaves("What does Settings > Hub > Network > History list?") is None
    assert _leaves("Does Settings > Hub > Network > History show drops?") is None
    assert _leaves("Where is Camera settings > Power?") is None
    # a documented step starts the words after the last separator
    assert _leaves("When Camera settings > Power > Battery health drops, what then?") is None
    # the first step must end the text before the first separator
    assert _leaves("What does Studio > Preferences do?") is None
    assert _leaves("Is 3 > 2?") is None
