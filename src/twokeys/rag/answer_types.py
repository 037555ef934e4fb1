"""Answer types: a question that asks for a quantity of some kind is answered only by
text that states one.

"How much does the cloud plan cost?" is answered by a price, "How loud is the siren?"
by a sound level, "What radius does geofencing use?" by a distance. This is the
*expected answer type* of factoid question answering, read here on the question's
wording alone: a question word and a noun or adjective that name the kind of value
(``how much ... cost``, ``how loud``, ``which temperature``, ``what radius``; not a
word that names several kinds, such as *range*: a channel range, a temperature range;
nor a word inside a name, such as the option ``--depth`` or the key ``fetch.depth``),
never anything learned from a collection. Both retrieval sensors see such a question as
covered when the pages discuss its subject (the plans, the Hub, the app) without ever
giving the value; the value's form is what they cannot check.

:func:`expected_type` names the type a question asks for (None for most questions: what,
why, how do I, can I, and counts or durations, which nearly any page can state; and
None for a yes/no question, "Did v3.2 change how much power the Hub uses?", which asks
whether, unless it politely asks for the value: "Can you tell me how much ...").
:func:`value_type` adds those two (:data:`DURATION`, :data:`COUNT`): not a reason to
abstain, but the form an answer to "how long" or "how many" takes, which the extractive
answer makes sure to quote. :func:`states` says whether a text holds an expression of
that type: a number with a unit of that kind (``35 °C``, ``50 EUR``, ``2 metres``,
``15 W``), or words that answer it without one (``free`` for a price). A sub-query is not
answered by its retrieved chunks when none of them states such a value *about its
subject*: holds a term of the question besides the words that ask for the value
(:attr:`AnswerType.words`), so that the shipping page's "costs 9 EUR" does not answer
what a cloud plan costs. A question that names the unit it wants ("the capacity in
mAh", "the range in metres") is answered only by a value in that unit
(:func:`named_unit`): "a 10 W adapter" is a value of power, not the battery's capacity.

The kinds: a price, a distance, a temperature, a sound level, an amount of power or
energy, a voltage (``5 V``), an amount of storage or memory (``16 GB``), a frame rate
(``15 fps``), a resolution (``1080p``, ``2K``), a data rate (``2 Mbit/s``, gigabit), a
length in tokens or characters, an HTTP status (``429 Too Many Requests``) and a year;
and the expansion of an acronym ("What does DHCP stand for?": :func:`expansion`). A
yes/no question asks for none, unless it offers values of a kind as alternatives ("Is
the port 100 Mbit/s or gigabit?").
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
            # "free" of a price, not of room ("free space") nor a compound ("hands-free")
            r"|(?<![\w-])free\b(?![\s-]+(?:space|storage|memory|disk|capacity|slots?|time|up)\b)"
            r"(?!-)|\bno (?:extra |additional )?(?:charge|cost|fee)\b|\bat no cost\b",
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
        re.compile(
            r"\b(?:what|which)\b[^?]*\btemperatures?\b|\bhow (?:hot|cold|warm)\b"
            r"|\bin (?:degrees|celsius|fahrenheit)\b",
            _I,
        ),
        re.compile(r"°|\bdegrees?\b|\bcelsius\b|\bfahrenheit\b|\d\s?[CF]\b|\bfreezing\b", _I),
        "temperature hot cold warm",
    ),
    AnswerType(
        "a sound level",
        re.compile(
            r"\bhow loud\b|\b(?:what|which)\b[^?]*\b(?:loudness|volume level)\b"
            r"|\bin (?:decibels|dB)\b",
            _I,
        ),
        re.compile(r"\d\s?(?:dB|dBA|decibels?)\b", _I),
        "how loud loudness volume level",
    ),
    AnswerType(
        "an amount of power or energy",
        re.compile(
            r"\bhow much (?:electricity|power|energy|current)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:wattage|power draw|power consumption|energy use"
            r"|battery capacity)\b"
            r"|\bin (?:watts|W|kW|kWh|Wh|mAh|milliamp[- ]hours)\b",
            _I,
        ),
        re.compile(r"\d\s?(?:W|kW|kWh|Wh|mW|watts?|mAh|Ah)\b", _I),
        "how much electricity power energy current wattage draw consumption use capacity",
    ),
    AnswerType(
        "a voltage",
        re.compile(r"\b(?:what|which)\b[^?]*\bvoltages?\b|\bhow many volts\b|\bin volts\b", _I),
        re.compile(r"\d\s?(?:V|volts?|mV|kV)\b", _I),
        "voltage volts how many",
    ),
    AnswerType(
        "an amount of storage or memory",
        re.compile(
            r"\bhow much (?:storage|space|memory|RAM|disk)\b"
            r"|\bhow (?:large|big) (?:a |an )?(?:memory card|microSD card|SD card|card|disk"
            r"|drive)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:storage capacity|memory size)\b"
            r"|\bin (?:GB|MB|TB|gigabytes|megabytes|terabytes)\b",
            _I,
        ),
        re.compile(r"\d\s?(?:GB|MB|TB|KB|GiB|MiB|gigabytes?|megabytes?|terabytes?)\b", _I),
        "how much large big storage space memory ram disk capacity size",
    ),
    AnswerType(
        "a frame rate",
        re.compile(
            r"\b(?:what|which)\b[^?]*\bframe[- ]?rates?\b|\bhow many frames\b"
            r"|\bframes per second\b|\bin fps\b",
            _I,
        ),
        re.compile(r"\d\s?(?:fps|frames?\s+(?:per|a|each)\s+second)\b", _I),
        "frame rate frames per second fps how many",
    ),
    AnswerType(
        "a resolution",
        re.compile(
            r"\b(?:what|which)\b[^?]*\b(?:video|image|picture|camera|recording|maximum|max)"
            r" resolution\b|\b(?:what|which) resolution\b|\bhow many (?:megapixels|pixels)\b",
            _I,
        ),
        re.compile(
            r"\b\d{3,4}p\b|\b\d(?:\.\d)?K\b|\b\d{3,4}\s?[x×]\s?\d{3,4}\b|\bmegapixels?\b"
            r"|\d\s?MP\b|\b(?:full |ultra )?HD\b",
            _I,
        ),
        "resolution video image picture maximum max megapixels pixels",
    ),
    AnswerType(
        "a data rate",
        re.compile(
            r"\b(?:what|which|how much)\b[^?]*\b(?:bandwidth|upload speed|download speed"
            r"|data rate|bit ?rate|line speed|connection speed|network speed)\b",
            _I,
        ),
        re.compile(
            r"\d\s?(?:Mbit/s|Mbps|Mb/s|Gbit/s|Gbps|Gb/s|kbit/s|kbps|kb/s)(?!\w)"
            r"|\b(?:megabit|gigabit|fast ethernet)s?\b",
            _I,
        ),
        "bandwidth upload download speed data rate bit line connection network megabit gigabit"
        " mbit mbps gbit gbps",
    ),
    AnswerType(
        "a length in tokens or characters",
        re.compile(
            r"\bin (?:tokens|characters)\b|\bhow many (?:tokens|characters)\b"
            r"|\b(?:what|which)\b[^?]*\b(?:token|character) (?:limit|length|count)\b",
            _I,
        ),
        re.compile(rf"{_NUMBER}\s?-?(?:tokens?|characters?|chars)\b", _I),
        "tokens characters token character limit length count how many",
    ),
    AnswerType(
        "an HTTP status",
        re.compile(
            r"\b(?:what|which)\b[^?]*\b(?:HTTP (?:status|response|error)|status code"
            r"|response code)s?\b",
            _I,
        ),
        # a code with its reason phrase ("429 Too Many Requests", "200 OK"), or after the
        # word that names it ("status 503", "HTTP/2 200", "code 404")
        re.compile(
            r"\b[1-5]\d\d\s+(?:OK|[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+|Continue|Created|Accepted"
            r"|Found|Unauthorized|Forbidden|Conflict|Gone|Locked)\b"
            r"|\b(?i:HTTP(?:/[\d.]+)?|status|code)\s+`?[1-5]\d\d\b"
        ),
        "http status response error code",
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


# an option, a placeholder, code in backticks, a dotted key (fetch.depth): a name, whose
# words ("depth", "height", "price") do not ask for a value of that kind
_CODE_NAME = re.compile(
    r"`[^`]*`|<[^<>\s]+>|(?<![\w-])--?[A-Za-z][\w-]*|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"
)


def own_words(question: str) -> str:
    """``question`` without a closing parenthesis: a sub-query carries there the words of
    the part before it ("what does its light do (height Hub placed)",
    :mod:`twokeys.rag.decompose`), which asked their own question."""
    return _CARRIED.sub("", question)


def expected_type(question: str) -> AnswerType | None:
    """The kind of value ``question`` asks for, or None when it asks for none of
    :data:`TYPES` (the first that matches wins), read on :func:`own_words`."""
    own = own_words(question)
    if _WHETHER.match(own) and not _INDIRECT.match(own):
        # "Did v3.2 change how much power the Hub uses?" asks whether; "Is the port
        # 100 Mbit/s or gigabit?" asks which of two values
        return _alternatives(own)
    words = _CODE_NAME.sub(" ", own)  # "--depth", "<depth>", `max_depth`: names, not asks
    for kind in TYPES:
        if kind.asked.search(words):
            return kind
    unit = _unit_group(own)  # "How many metres of range ...": the unit names the kind
    if unit is not None:
        return next(kind for kind in TYPES if kind.name == unit[0])
    return expansion(own)


def _alternatives(question: str) -> AnswerType | None:
    """The kind of the values a yes/no question offers as alternatives ("25 or 30 fps",
    "100 Mbit/s or gigabit"): a value of a kind stated next to an "or"."""
    for found in _OR.finditer(question):
        near = question[max(0, found.start() - _NEAR_OR) : found.end() + _NEAR_OR]
        for kind in TYPES:
            if kind.stated.search(near):
                return kind
    return None


_OR = re.compile(r"\bor\b", _I)
_NEAR_OR = 24  # characters either side of "or" that hold its alternatives


def expansion(question: str) -> AnswerType | None:
    """What an acronym stands for, when ``question`` asks it ("What does DHCP stand
    for?"): words whose initials spell it, in order, with short function words between
    ("Dynamic Host Configuration Protocol", "Internet of Things" for IoT)."""
    found = _STANDS_FOR.search(question)
    if found is None:
        return None
    acronym = found.group("acronym")
    letters = [c for c in acronym if c.isupper()]
    words = r"(?:[\s-]+(?:of|and|for|the|to|in|on|over|by)\b)*[\s-]+".join(
        rf"{c}[\w'-]*" for c in letters
    )
    return AnswerType(
        f"the expansion of {acronym}",
        re.compile(re.escape(acronym)),
        re.compile(rf"\b{words}\b", _I),
        f"{acronym} what does stand for short abbreviation acronym actually",
    )


_STANDS_FOR = re.compile(
    r"\b(?i:what)\b[^?]*?\b(?P<acronym>[A-Z][a-zA-Z]*[A-Z])s?\b[^?]*?\b(?:stands? for|short for)\b"
)


# a yes/no question (an auxiliary verb first), unless it is a polite way to ask for the
# value itself ("Can you tell me how much it costs?", "Do you know what radius ...")
_WHETHER = re.compile(
    r"^\W*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|shall"
    r"|may|might|must|am)\b",
    _I,
)
_INDIRECT = re.compile(
    r"^\W*(?:can|could|would|will|do|does)\s+(?:you|anyone|somebody|someone)\s+"
    r"(?:please\s+)?(?:tell|know|say|explain|show)\b",
    _I,
)


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


# A question that names its unit ("in metres", "in mAh", "how many gigabytes") asks for
# a value in that unit: each group holds the kind and the ways one unit is written, the
# first the question's own words.
_UNITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a distance", ("metres", "meters", "m")),
    ("a distance", ("centimetres", "centimeters", "cm")),
    ("a distance", ("kilometres", "kilometers", "km")),
    ("a distance", ("feet", "foot", "ft")),
    ("a distance", ("inches", "inch")),
    ("a distance", ("miles", "mile")),
    ("an amount of power or energy", ("mAh", "milliamp-hours", "milliamp hours")),
    ("an amount of power or energy", ("watts", "watt", "W")),
    ("an amount of power or energy", ("Wh", "watt-hours", "watt hours")),
    ("an amount of power or energy", ("kWh", "kilowatt-hours", "kilowatt hours")),
    ("a sound level", ("decibels", "decibel", "dB", "dBA")),
    ("a temperature", ("celsius", "°C", "C")),
    ("a temperature", ("fahrenheit", "°F", "F")),
    ("an amount of storage or memory", ("GB", "gigabytes", "gigabyte", "GiB")),
    ("an amount of storage or memory", ("MB", "megabytes", "megabyte", "MiB")),
    ("an amount of storage or memory", ("TB", "terabytes", "terabyte")),
    ("a frame rate", ("fps", "frames per second")),
)
_UNIT_WORDS = "|".join(re.escape(u) for _, g in _UNITS for u in g if len(u) > 1)
_NAMED_UNIT = re.compile(rf"\b(?:in|how many) ({_UNIT_WORDS})(?!\w)", _I)


def named_unit(question: str) -> re.Pattern[str] | None:
    """A number written with the unit ``question`` asks its value in ("What is the
    capacity in mAh", "How many gigabytes ..."), in any of that unit's spellings; None
    when it names none. A text giving the value in another unit ("10 W" for a capacity
    in mAh) does not answer it."""
    group = _unit_group(question)
    if group is None:
        return None
    spellings = "|".join(re.escape(u) for u in sorted(group[1], key=len, reverse=True))
    return re.compile(rf"\d\s?-?(?:{spellings})(?![\w])", _I)


def _unit_group(question: str) -> tuple[str, tuple[str, ...]] | None:
    found = _NAMED_UNIT.search(own_words(question))
    if found is None:
        return None
    said = found.group(1).lower()
    return next(g for g in _UNITS if said in (u.lower() for u in g[1]))


def states(kind: AnswerType, text: str, unit: re.Pattern[str] | None = None) -> bool:
    """Whether ``text`` holds an expression of ``kind`` (in ``unit``, when given:
    :func:`named_unit`)."""
    if unit is not None and unit.search(text) is None:
        return False
    return kind.stated.search(text) is not None
