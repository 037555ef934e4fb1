"""A model's own abstention: a sentence saying the sources do not answer.

A question on a topic the pages discuss without the asked fact looks covered to both
sensors; a model reading the passages can tell, and the prompt asks it to reply
:data:`~twokeys.rag.prompt.DECLINE`. Models word it their own way, so :func:`declines`
reads the common forms ("the sources do not say ...", "it is not stated in the
passages", "I don't know", "there is no information about ..."), also after a hedge.
Such a sentence claims nothing and needs no citation.
"""

from __future__ import annotations

import re

from twokeys.rag.prompt import DECLINE

_GIVEN = r"(?:provided|given|retrieved|available|cited|above)"
_SOURCES = (  # what the model was given; "documents" or "information" alone name anything
    rf"(?:the\s+)?(?:{_GIVEN}\s+)?(?:sources?|passages?|context|documentation)"
    rf"|(?:the\s+)?{_GIVEN}\s+(?:documents?|texts?|information|excerpts?)"
)
_VERB = (
    r"(?:answer|say|mention|contain|include|provide|specify|state|cover|give|describe"
    r"|list|address|discuss|explain|indicate)s?"
)
_LEAD = (  # "I'm sorry, but ...", "Unfortunately, ...", "Based on the provided context, ..."
    r"(?:(?:I'm|I’m|I\s+am)\s+(?:sorry|afraid)|sorry|unfortunately|however"
    rf"|(?:based\s+on|according\s+to|in)\s+(?:{_SOURCES}))\s*[,:]?\s*(?:but\s+)?"
)
_DECLINE = re.compile(
    rf"^\W*(?:{_LEAD})?(?:"
    # "The sources do not say ...", "The provided context doesn't mention ..."
    rf"(?:{_SOURCES})\s+(?:do|does|did)\s*(?:not|n't|n’t)\s+{_VERB}\b"
    rf"|(?:{_SOURCES})\s+(?:cannot|can't|can’t|don't|don’t|doesn't|doesn’t)\s+{_VERB}\b"
    # "This is not mentioned in the sources", "... cannot be answered from the passages"
    rf"|.*\b(?:is|are)\s*(?:not|n't)\s+(?:mentioned|stated|specified|given|provided|covered"
    rf"|found|answered|described|included|listed)\s+(?:in|by)\s+(?:{_SOURCES})\b"
    rf"|.*\bcannot\s+be\s+(?:answered|determined|found)\s+(?:from|with|in|using)\s+(?:{_SOURCES})\b"
    # "I don't know.", "I cannot find this in the sources."
    r"|I\s+(?:do\s+not|don't|don’t|cannot|can't|can’t)\s+(?:know|find|answer|tell|say)\b"
    # "There is no information about the siren's volume."
    r"|(?:there\s+is\s+|I\s+found\s+)?no\s+(?:information|mention|details?)\s+"
    r"(?:about|on|of|regarding|in)\b"
    r")",
    re.IGNORECASE,
)


def is_decline(sentence: str) -> bool:
    """Whether ``sentence`` is the declining sentence the prompt asks for, word for word
    (a model may cite a block after it out of habit; the sentence still claims nothing)."""
    return _words(sentence) == _words(DECLINE)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def declines(sentence: str) -> bool:
    """Whether ``sentence`` says the sources do not answer (module docstring)."""
    return bool(_DECLINE.match(sentence.strip()))
