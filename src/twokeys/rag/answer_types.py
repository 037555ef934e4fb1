"""Answer types: a question that asks for a quantity of some kind is answered only by
text that states one.

"How much does the cloud plan cost?" is answered by a price, "How loud is the siren?"
by a sound level, "What radius does geofencing use?" by a distance. This is the
*expected answer type* of factoid question answering, read here on the question's
wording alone: a question word and a noun or adjective that name the kind of value
(``how much ... cost``, ``how loud``, ``which temperature``, ``what radius``; not a
word that names several kinds, such as *range*: a channel range, a temperature range),
never anything learned from a collection. Both retrieval sensors see such a question as
covered when the pages discuss its subject (the plans, the Hub, the app) without ever
giving the value; the value's form is what they cannot check.

:func:`expected_type` names the type a question asks for (None for most questions: what,
why, how do I, can I, and counts or durations, which nearly any page can state).
:func:`value_type` adds those two (:data:`DURATION`, :data:`COUNT`): not a reason to
abstain, but the form an answer to "how long" or "how many" takes, which the extractive
answer makes sure to quote. :func:`states` says whether a text holds an expression of
that type: a number with a unit of that kind (``35 °C``, ``50 EUR``, ``2 metres``,
``15 W``), or words that answer it without one (``free`` for a price). A sub-query is not
answered by its retrieved chunks when none of them states such a value *about its
subject*: holds a term of the question besides the words that ask for the value
(:attr:`AnswerType.words`), so that the shipping page's "costs 9 EUR" does not answer
what a cloud plan costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnswerType:
    """A kind of value: the wording of questions asking for it and of texts stating it."""

    name: str  # as the abstention reason says it: "a price"
    asked: re.Pattern[str]
    stated: re.Pattern[str]
    words: str  # the words questions ask for it with: not the subject of the question


_NUMBER = (
    r"(?:\d[\d.,]*|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty"
    r"|fifty|hundred|a few|several)\b)"
)
_I = re.IGNORECASE

TYPES: tuple[AnswerType, ...] = (
    AnswerType(
        "a price",
        re.compile(
            r"\bhow much\b[^?]*\b(?:costs?|charged?|pay|paid|priced?)\b"
            r"|\bhow much (?:is|are)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:price|cost)s?\b",
            _I,
        ),
        re.compile(
            r"[$€£¥]\s?\d|\d\s?(?:[$€£¥]|USD|EUR|GBP|CHF|JPY)\b"
            r"|\b(?:dollars?|euros?|pounds sterling|cents?|pence)\b"
            r"|\bfree\b|\bno (?:extra |additional )?(?:charge|cost|fee)\b|\bat no cost\b",
            _I,
        ),
        "how much cost charge pay paid price priced",
    ),
    AnswerType(
        "a distance",
        re.compile(
            r"\bhow (?:far|high|tall|deep|close)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:distance|radius|height|depth)\b"
            r"|\bin (?:metres|meters|feet|centimetres|centimeters|inches|kilometres|kilometers"
            r"|miles)\b",
            _I,
        ),
        re.compile(
            rf"{_NUMBER}\s?-?(?:m|cm|mm|km|ft|in|metres?|meters?|centimetres?|centimeters?"
            r"|millimetres?|kilometres?|kilometers?|feet|foot|inch(?:es)?|miles?|yards?)\b"
            r"|\b(?:arm's length|eye level|head height)\b",
            _I,
        ),
        "how far high tall deep close distance radius height depth metres meters feet",
    ),
    AnswerType(
        "a temperature",
        re.compile(r"\b(?:what|which)\b[^?]*\btemperatures?\b|\bhow (?:hot|cold|warm)\b", _I),
        re.compile(r"°|\bdegrees?\b|\bcelsius\b|\bfahrenheit\b|\d\s?[CF]\b|\bfreezing\b", _I),
        "temperature hot cold warm",
    ),
    AnswerType(
        "a sound level",
        re.compile(r"\bhow loud\b|\b(?:what|which)\b[^?]*\b(?:loudness|volume level)\b", _I),
        re.compile(r"\d\s?(?:dB|dBA|decibels?)\b", _I),
        "how loud loudness volume level",
    ),
    AnswerType(
        "an amount of power or energy",
        re.compile(
            r"\bhow much (?:electricity|power|energy|current)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:wattage|power draw|power consumption|energy use)\b",
            _I,
        ),
        re.compile(r"\d\s?(?:W|kW|kWh|Wh|mW|watts?|mAh|Ah)\b", _I),
        "how much electricity power energy current wattage draw consumption use",
    ),
    AnswerType(
        "a year",
        re.compile(r"\b(?:what|which|in what) year\b", _I),
        re.compile(r"\b(?:1[5-9]|20)\d\d\b"),
        "year",
    ),
)


# a number as durations and counts are written: _NUMBER's, and more words for one
_COUNT = (
    rf"(?:{_NUMBER}|\b(?:eleven|fifteen|thirty|forty|forty-eight|sixty|ninety|a couple of"
    r"|an?|half an?)\b)"
)

# Kinds of value that nearly any page states somewhere, so never a reason to abstain
# (:func:`expected_type` leaves them out), but the form an answer to them takes: an
# extractive answer to "how long ..." that quotes no duration has missed it.
DURATION = AnswerType(
    "a duration",
    re.compile(
        r"\bhow (?:long|soon|quickly|fast)\b"
        r"|\bhow (?:many|much) (?:time|milliseconds|seconds|minutes|hours|days|weeks|months"
        r"|years)\b",
        _I,
    ),
    re.compile(
        rf"{_COUNT}\s?-?(?:milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?"
        r"|working days|business days|weeks?|months?|years?)\b"
        r"|\b(?:overnight|immediately|instantly|straight away|right away)\b",
        _I,
    ),
    "how long soon quickly fast time",
)
COUNT = AnswerType(
    "a number",
    re.compile(r"\bhow many\b", _I),
    re.compile(rf"{_COUNT}|\b(?:no|none|unlimited|any number of)\b", _I),
    "how many",
)

_CARRIED = re.compile(r"\s*\([^()]*\)\s*$")


def own_words(question: str) -> str:
    """``question`` without a closing parenthesis: a sub-query carries there the words of
    the part before it ("what does its light do (height Hub placed)",
    :mod:`twokeys.rag.decompose`), which asked their own question."""
    return _CARRIED.sub("", question)


def expected_type(question: str) -> AnswerType | None:
    """The kind of value ``question`` asks for, or None when it asks for none of
    :data:`TYPES` (the first that matches wins), read on :func:`own_words`."""
    own = own_words(question)
    for kind in TYPES:
        if kind.asked.search(own):
            return kind
    return None


def value_type(question: str) -> AnswerType | None:
    """The kind of value ``question`` asks for, durations and numbers included: what
    an answer quotes (:mod:`twokeys.rag.extractive`), read on :func:`own_words`."""
    kind = expected_type(question)
    if kind is not None:
        return kind
    own = own_words(question)
    for kind in (DURATION, COUNT):
        if kind.asked.search(own):
            return kind
    return None


def states(kind: AnswerType, text: str) -> bool:
    """Whether ``text`` holds an expression of ``kind``."""
    return kind.stated.search(text) is not None
