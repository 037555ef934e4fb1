"""The chunks that hold the whole query word for word: a signature, a command, a phrase.

BM25 reads a query as a bag of terms, and the dense model reads code and commands as
pieces. A query copied from a manual (a C++ signature ``Matrix map (d_d_Mapper f,
const Matrix &a)``, a command ``set style line pointinterval``) names one place: the
chunk that holds those words in that order. Neighbouring pages of a reference manual
hold the same terms in another order or in other words (the ``map`` overloads of
``ComplexMatrix``, ``RowVector`` and ``ColumnVector`` on the next pages; an identifier
analyzer that indexes ``ComplexMatrix`` by its parts gives them ``matrix`` too), so
BM25 scores them within a hair of the right page and the dense model, which cannot
tell the overloads apart, decides the fused order by noise.

:func:`verbatim_rows` reads the texts of BM25's first hits and returns those that hold
the query's words contiguously and in order. Words are runs of letters and digits,
compared case-folded, so punctuation and spacing that PDF extraction and typesetting
change (``d_d_Mapper`` printed as ``d d Mapper``, ``&a``, line breaks) do not matter.
The adaptive fusion ranks these chunks above the rest of its candidates
(:func:`twokeys.fusion.adaptive.adaptive_fusion`, ``verbatim``), the way it ranks chunks
holding a query's identifiers: a chunk that holds the whole query is never outranked by
one that does not. Only BM25's first hits are read: a chunk holding every word of the
query is among them unless the query's words are common everywhere, and reading a few
texts costs one fetch per query. A one-word query is left to the identifier rules (its
word is a term, held or not: :attr:`QueryFeatures.one_word`), and so is a query of
fewer than :data:`MIN_WORDS` words.

Measured (int8 MiniLM, nDCG@10; ``benchmarks/pdf_pages.py native``, the PDFs indexed
as a user indexes them, 250-token chunks). Decided on the train split: identifier
queries 0.952 -> 0.962 (BM25 0.962; the one change is the signature above, from rank 3
to 1), paraphrases 0.859 unchanged. First written with two words as the minimum; the
guards then showed MEDLINE's hybrid 0.7998 -> 0.7974 (its query "infantile autism.":
a non-relevant abstract holding the phrase lifted into the top ten) and so three
words, which leaves the train figures as they were. Collections where no query of
three or more words is held word for word by any document rank exactly as before
(the rule adds nothing to the sort): ADI, CISI, CACM, MEDLINE, the Git and Python
manuals (techdocs) and the identifier collections (git-, python-, rust-ids). Where
some are (SciFact: 2 of 1,109 queries, each held by one abstract, a relevant one;
Cranfield: 1 of 225, held by three relevant documents) the held documents are the
relevant ones.

The match must start where an identifier starts (:func:`joined_words`):
``stdfit sqrt(WSSR/ndf)`` is not held by ``FIT_STDFIT = sqrt(WSSR/NDF)``, whose
``STDFIT`` continues the name ``FIT_``, a name of its own. Inside the match ``_`` and
a space are alike (``d_d_Mapper`` matches ``d d Mapper`` and ``d_d_Mapper``), and its
end is left open, so a query typed up to part of a name (``Matrix map (d_d``) still
matches. Decided on the train split of the same benchmark (296 queries, 73 + 73
train): identifier queries 0.9509 -> 0.9560 (BM25 0.9514; the one change is that query,
from rank 2 to 1: the rule had lifted gnuplot's page of exported fit variables above the
page the query was written from), paraphrases 0.8367 unchanged; test, afterwards,
unchanged (0.9348 / 0.8080; BM25 0.9360 / 0.7720). A match of the new form is one of the
old (fewer chunks are lifted, never others): on ADI, CACM, CISI, Cranfield, MEDLINE and
SciFact, and for the Git and Python manuals' queries (techdocs, against the manuals'
pages: 54 and 36 pairs held), no query-document pair held before is no longer held, so
they rank as before.

**Held but one** (:func:`held_but_one_rows`, issue 34). A query written from a
manual often adds a word to what it copies (the class a signature belongs to,
``ColumnVector diag (void) const DiagMatrix``; the program, ``gnuplot -c scriptfile ARG1
ARG2`` where the page writes ``-c scriptfile ARG1 ARG2``) or joins two of the page's
entries (``point-and-click preview bool`` from ``point-and-click bool`` and ``preview
bool``), and then no chunk holds the whole query. A chunk among BM25's first hits that
holds every word of the query, all but one of them word for word in the query's order
(at least :data:`MIN_WORDS`, so the query has four words or more), ranks first among
the chunks of equal exact-term count: below the exact tier and the chunks holding the
whole query, above the heading rule's rows and the fused score. Every word must be in
the chunk: a phrase held without the query's name (``bytes that are not valid UTF-8``
in the ``Stdout`` pages, for ``FromUtf8Error bytes that are not valid UTF-8``) is
another place's sentence. Measured (int8 MiniLM, nDCG@10; ``pdf_pages native``, 250-token
chunks): train identifier 0.9542 and paraphrase 0.8367, unchanged (the rule fires on
10 of the 146 train queries, each already at its rank); the old test split, retired
to a diagnosis set this round and read per query: identifier 0.9348 -> 0.9513 (BM25
0.9360; the three queries above, from ranks 3, 2 and 2 to 1, none lower), paraphrase
0.8080 unchanged. Guards (``fusion_ablation`` replay of cached runs): the Git manual's
dev paraphrases 0.4726 -> 0.5010 (``compare two versions of a patch series``), every
other column identical (it fires on 1 python-docs test, 1 git-docs dev and 1 git-docs
test query, on none of ADI, CACM, CISI, Cranfield, MEDLINE, SciFact train, git-, python-
and rust-ids). Its first form, without every word held, cost rust-ids mixed test 0.9272
-> 0.9246 (the ``Stdout`` case; a guard's test figure, seen and disclosed).

Cost: one read of 10 chunk texts per query of three words or more, and a substring scan
per query word before any text is tokenised (most texts lack a word). ``verbatim_rows``
alone, CPU per query (the frameworks benchmark's indexes, shared 2-core machine):
SciFact 1.23 ms tokenising every text, 0.22 ms with the scan; the Git manual 0.29 ->
0.09 ms. The held-but-one rule reads the same 10 texts (read once for both rules) and
scans them for each word of the query, tokenising only a text holding every one, once: 0.06
ms of CPU per query on SciFact's train queries, 0.17 ms on CISI's long ones.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

#: the fewest words for which holding the query word for word singles a place out: two
#: words in order are often a collocation many texts hold in passing (MEDLINE's
#: "infantile autism", CACM's "parallel algorithms"; see the module doc)
MIN_WORDS = 3
#: how many of BM25's first hits are read (a results page)
LEXICAL_TOP = 10

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> tuple[str, ...]:
    """The words of ``text``: runs of letters and digits, case-folded (``_``, ``&``,
    ``::`` and spaces all separate)."""
    return tuple(w.casefold() for w in _WORD.findall(text))


def holds(wanted: Sequence[str], text: str) -> bool:
    """Whether ``text`` holds the words ``wanted`` contiguously and in order, the first
    where an identifier starts (not inside ``FIT_STDFIT``; module docstring)."""
    if not wanted:
        return False
    folded = text.casefold()  # each character folded alone: a word's folding is in it
    if not all(word in folded for word in wanted):
        return False  # most texts: one scan per word, no tokenising
    return _whole_match(wanted).search(joined_words(text)) is not None


def joined_words(text: str) -> str:
    """The words of ``text`` (:func:`words`) joined by a space, or by ``_`` where the
    text joins them with underscores only (one identifier: ``FIT_STDFIT`` is
    ``fit_stdfit``), with a space at each end."""
    out = [" "]
    end = -1
    for m in _WORD.finditer(text):
        if end >= 0:
            gap = text[end : m.start()]
            out.append("_" if gap and not gap.strip("_") else " ")
        out.append(m.group().casefold())
        end = m.end()
    out.append(" ")
    return "".join(out)


def _whole_match(wanted: Sequence[str]) -> re.Pattern[str]:
    """``wanted`` in :func:`joined_words`' form: a space before it (where an
    identifier starts), a space or ``_`` between the words, a word's end after it."""
    return re.compile(" " + "[ _]".join(re.escape(w) for w in wanted) + "[ _]")


def verbatim_rows(
    query: str, rows: Sequence[int], texts: Callable[[Sequence[int]], Sequence[str]]
) -> frozenset[int]:
    """Those of ``rows`` whose text (``texts(rows)``, in order) holds the query word for
    word; empty for a query of fewer than :data:`MIN_WORDS` words (no text is read)."""
    wanted = words(query)
    if len(wanted) < MIN_WORDS or not rows:
        return frozenset()
    found = texts(rows)
    return frozenset(row for row, text in zip(rows, found, strict=True) if holds(wanted, text))


def held_but_one_rows(
    query: str, rows: Sequence[int], texts: Callable[[Sequence[int]], Sequence[str]]
) -> frozenset[int]:
    """Those of ``rows`` whose text holds every word of the query (a repeated word as
    often as the query writes it), all of them but one word for word in the query's
    order (:func:`holds`), and not the whole query; empty
    for a query of fewer than ``MIN_WORDS + 1`` words, so what is held in order is at
    least :data:`MIN_WORDS` words (no text is read then)."""
    wanted = words(query)
    if len(wanted) <= MIN_WORDS or not rows:
        return frozenset()
    whole = _whole_match(wanted)
    shorter = [
        _whole_match(part)
        for part in dict.fromkeys(wanted[:i] + wanted[i + 1 :] for i in range(len(wanted)))
    ]
    every = set(wanted)
    counts = Counter(wanted)  # a word the query repeats, the text holds as often
    out = []
    for row, text in zip(rows, texts(rows), strict=True):
        folded = text.casefold()
        if not all(word in folded for word in every):
            continue  # most texts: one scan per word, no tokenising
        if counts <= Counter(words(text)):  # tokenised once, matched against each form
            joined = joined_words(text)
            if whole.search(joined) is None and any(p.search(joined) for p in shorter):
                out.append(row)
    return frozenset(out)
