"""The extractive answer's sentence choice on hand-made contexts: lead-ins carry the
terms of the code they introduce, quotes bring the sentences read with them, and a part
never quotes another part's evidence."""

from __future__ import annotations

import re
from collections.abc import Sequence

from twokeys.rag.extractive import extract
from twokeys.rag.packing import Block, PackedContext


def _terms(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text.lower())


def _context(*texts: str, queries: Sequence[tuple[int, ...]] = ()) -> PackedContext:
    blocks = tuple(
        Block(
            number=n,
            path=f"doc{n}.md",
            title=f"Doc {n}",
            heading_path=(f"Doc {n}",),
            text=text,
            chunk_ids=(f"c{n}",),
            queries=queries[n - 1] if queries else (0,),
            tokens=len(text.split()),
            trimmed=False,
        )
        for n, text in enumerate(texts, 1)
    )
    return PackedContext(blocks, (), ())


def _quoted(context: PackedContext, *queries: str, **kwargs: object) -> list[str]:
    result = extract(context, queries, query_terms=_terms, text_terms=_terms, **kwargs)  # type: ignore[arg-type]
    return [q.text for q in result.quotes]


GUIDE = """## How to fix it

1. Change the retention to thirty days or less.
2. Remove old diagnostic bundles from the Hub shell:

```sh
hubctl diag purge --older-than 14d
```

3. Restart the Hub so it recalculates free space.
"""


def test_a_lead_in_carries_the_terms_of_the_code_it_introduces() -> None:
    quotes = _quoted(_context(GUIDE), "What is hubctl diag purge for?")
    assert quotes == ["Remove old diagnostic bundles from the Hub shell:"]


def test_without_the_code_the_lead_in_is_not_found() -> None:
    text = GUIDE.replace("hubctl diag purge --older-than 14d", "echo done")
    assert "Remove old diagnostic bundles from the Hub shell:" not in _quoted(
        _context(text), "What is hubctl diag purge for?"
    )


def _cosine_by_phrase(weights: dict[str, float]):  # type: ignore[no-untyped-def]
    """A stand-in dense model: each sentence's cosine is set by a phrase it holds."""

    def similarity(query: str, sentences: Sequence[str]) -> list[float]:
        return [
            max((w for phrase, w in weights.items() if phrase in s), default=0.0) for s in sentences
        ]

    return similarity


PARAGRAPHS = (
    "Orders are packed in our warehouse near the border. "
    "Parcels to islands can take two extra days.\n\n"
    "Express costs more than standard shipping."
)


def test_a_quote_brings_a_close_neighbour_from_its_paragraph() -> None:
    # the dense model prefers the sentence that sets the scene; the answer follows it
    similarity = _cosine_by_phrase({"warehouse": 0.9, "islands": 0.6, "Express": 0.6})
    quotes = _quoted(_context(PARAGRAPHS), "when will my order arrive?", similarity=similarity)
    assert quotes == [
        "Orders are packed in our warehouse near the border.",
        "Parcels to islands can take two extra days.",
    ]  # the sentence after the blank line is no neighbour, and below the quote floor


def test_a_weak_neighbour_is_left_out() -> None:
    similarity = _cosine_by_phrase({"warehouse": 0.9, "islands": 0.3})
    quotes = _quoted(_context(PARAGRAPHS), "when will my order arrive?", similarity=similarity)
    assert quotes == ["Orders are packed in our warehouse near the border."]


def test_each_part_quotes_its_own_blocks() -> None:
    context = _context(
        "The warranty lasts two years from purchase.",
        "Refunds are paid within ten business days.",
        queries=((0,), (1,)),
    )
    result = extract(
        context,
        ["how long is the warranty", "when are refunds paid"],
        query_terms=_terms,
        text_terms=_terms,
    )
    assert [(q.query, q.number) for q in result.quotes] == [(0, 1), (1, 2)]


def _answer(context: PackedContext, *queries: str, **kwargs: object) -> str:
    result = extract(context, queries, query_terms=_terms, text_terms=_terms, **kwargs)  # type: ignore[arg-type]
    return result.text


CLI_GUIDE = """## Exit codes

| Code | Meaning |
| --- | --- |
| 0 | Success |
| 3 | Not signed in |
| 4 | Hub unreachable |

## Signing

```sh
# Verify a downloaded manifest against the public release key
lmtk-sign verify --manifest hub-fw.manifest
#!/bin/sh
```
"""


def test_a_table_row_is_quoted_with_its_header_and_heading() -> None:
    quotes = _quoted(_context(CLI_GUIDE), "Which exit code means not signed in?")
    assert quotes == ["Code: 3; Meaning: Not signed in"]
    assert "- Exit codes \u2014 Code: 3; Meaning: Not signed in [1]" in _answer(
        _context(CLI_GUIDE), "Which exit code means not signed in?"
    )


CLI_PAGE = """## Installing

Run `lumatek-cli` from the folder the installer created for you.

## Exit codes

| Code | Meaning |
| --- | --- |
| 0 | Success |
| 4 | Hub unreachable |
"""


def test_the_dense_model_reads_a_row_under_its_heading() -> None:
    # a row's cells ("Code: 4; Meaning: Hub unreachable") do not say what the table is
    # about; its heading does, as the answer shows it ("Exit codes — Code: 4; ...")
    similarity = _cosine_by_phrase({"Exit codes": 0.8, "lumatek-cli": 0.6})
    quotes = _quoted(
        _context(CLI_PAGE), "what does exit code 4 from lumatek-cli mean?", similarity=similarity
    )
    assert quotes[0] == "Code: 4; Meaning: Hub unreachable"


NETWORK_RESET = """## Network reset

A network reset removes saved Wi-Fi details only.

1. Press and hold the button on the back for 5 seconds, until the light pulses yellow.
2. Release the button. The Hub forgets its Wi-Fi details and returns to setup mode.

Devices and rules are not affected.
"""


def test_other_questions_and_other_lists_quote_the_step_alone() -> None:
    similarity = _cosine_by_phrase({"removes saved": 0.9, "forgets": 0.85, "Press": 0.2})
    quotes = _quoted(
        _context(NETWORK_RESET), "What happens to the Wi-Fi details?", similarity=similarity
    )
    assert "The Hub forgets its Wi-Fi details and returns to setup mode." in quotes
    assert "Release the button." not in quotes
    # a bulleted list is no procedure, and a step after a blank line starts a new list
    only_step = _cosine_by_phrase({"removes saved": 0.1, "forgets": 0.9, "Press": 0.2})
    for text in (
        NETWORK_RESET.replace("1. ", "- ").replace("2. ", "- "),
        NETWORK_RESET.replace("\n2. ", "\n\n2. "),
    ):
        quotes = _quoted(_context(text), "How do I reset the Wi-Fi details?", similarity=only_step)
        assert "The Hub forgets its Wi-Fi details and returns to setup mode." in quotes
        assert not any(q.startswith("Press and hold") for q in quotes)


PLACEMENT = """## General principles

- **Angle:** tilt the camera down. A view that is mostly sky confuses the exposure.
- **Distance:** the clearest detail is within 6 metres of the lens. Beyond that,
  people are detected but not clearly identifiable.
"""


def test_a_sentence_of_another_list_item_is_not_read_with_a_quote() -> None:
    similarity = _cosine_by_phrase({"Distance": 0.9, "Beyond": 0.7, "mostly sky": 0.7})
    question = "Where must people stand to be seen clearly?"
    quotes = _quoted(_context(PLACEMENT), question, similarity=similarity)
    assert quotes == [
        "**Distance:** the clearest detail is within 6 metres of the lens.",
        "Beyond that, people are detected but not clearly identifiable.",
    ]


RELEASES = """### 1.2.9

- Added the `--quiet` option to the command-line tool.
- Fixed a crash on start-up.

The release also updated the bundled certificates.
"""


def test_a_list_item_is_shown_under_its_heading_and_prose_alone() -> None:
    answer = _answer(_context(RELEASES), "which release added the quiet option?")
    assert "- 1.2.9 \u2014 Added the `--quiet` option to the command-line tool. [1]" in answer
    answer = _answer(_context(RELEASES), "which certificates were updated?")
    assert "- The release also updated the bundled certificates. [1]" in answer


def test_a_word_of_the_page_heading_counts_for_each_of_its_sentences() -> None:
    # both sections are "Coverage"; only the page heading says which product
    blocks = tuple(
        Block(
            number=n,
            path=f"{product.lower()}.md",
            title=product,
            heading_path=(product, "Coverage"),
            text=text,
            chunk_ids=(f"c{n}",),
            queries=(0,),
            tokens=len(text.split()),
            trimmed=False,
        )
        for n, (product, text) in enumerate(
            [
                ("Hubs", "The warranty lasts three years."),
                ("Cameras", "The warranty lasts two years."),
            ],
            1,
        )
    )
    quotes = _quoted(
        PackedContext(blocks, (), ()), "how long is the warranty of cameras", per_query=1
    )
    assert quotes == ["The warranty lasts two years."]


FAQ = """## Power

### Can I use my Hub abroad?

Yes. The supplied adapter accepts 100 to 240 V, so you only need a plug adaptor.

### Does the Hub need a surge protector?

A surge protector is not required, but it protects the Hub when you travel between rooms.
"""


def _cosine_of_framing(alone: dict[str, float], framed: dict[str, float]):  # type: ignore[no-untyped-def]
    """A stand-in dense model that tells a sentence read alone from one read after its
    heading ("Heading — sentence"): each is scored by a phrase it holds."""

    def similarity(query: str, sentences: Sequence[str]) -> list[float]:
        table = [framed if " \u2014 " in s else alone for s in sentences]
        return [
            max((w for p, w in t.items() if p in s), default=0.0)
            for t, s in zip(table, sentences, strict=True)
        ]

    return similarity


def test_a_sentence_is_read_as_the_answer_to_its_heading() -> None:
    # the answer repeats none of the question; its heading paraphrases it
    similarity = _cosine_of_framing(
        {"supplied adapter": 0.2, "travel": 0.5}, {"use my Hub abroad": 0.8, "travel": 0.5}
    )
    quotes = _quoted(
        _context(FAQ), "Can I take the Hub when I move overseas?", similarity=similarity
    )
    assert quotes[0].startswith("The supplied adapter accepts 100 to 240 V")


def test_a_sentence_keeps_its_own_reading_when_that_is_better() -> None:
    # read after a heading about something else, the sentence would score lower
    similarity = _cosine_of_framing({"travel": 0.9}, {"travel": 0.1, "abroad": 0.4})
    quotes = _quoted(_context(FAQ), "Can I travel with the Hub?", similarity=similarity)
    assert quotes[0].startswith("A surge protector")


def test_only_prose_sentences_are_read_twice() -> None:
    read: list[str] = []

    def similarity(query: str, sentences: Sequence[str]) -> list[float]:
        read.extend(sentences)
        return [0.5] * len(sentences)

    _quoted(_context(FAQ, CLI_PAGE), "Can I use the Hub abroad?", similarity=similarity)
    framed = [s for s in read if " \u2014 " in s]
    assert any(s.startswith("Can I use my Hub abroad? \u2014 The supplied adapter") for s in framed)
    assert framed.count("Exit codes \u2014 Code: 4; Meaning: Hub unreachable") == 1  # a row: once
    assert len(read) == len(set(read))
