"""Elements: a question that refers to a setting, option or feature by name.

"What does *the pet detection setting* do?", "How do I use *the energy monitoring
dashboard*?": a determiner, a name of one to three words, and a noun that says what
kind of element of a product the name names (setting, option, feature, mode,
dashboard, plan...). The wording presupposes that an element of that name exists; a
documentation set that describes it writes its name. The name's words are often
corpus words ("pet" in a page about event summaries, "detection" in one about person
detection), so BM25 and the dense model see the question as covered although no page
names the element. This is the lowercase counterpart of the unseen phrases of
:mod:`twokeys.rag.grounding` (``Lumatek Smart Lock``), where capitals mark the name.

:func:`elements` finds them. An element is *documented* when some chunk holds, side
by side, its name's analysed words, or the name's last word or words followed by the
noun (:meth:`Element.writings`): "the camera leave setup mode" reads a verb into the name,
and "setup mode" is written. A name with a word the analyzer drops (a stopword) names
nothing. "Setting" before *up* or *off* is a verb ("keep setting off alerts").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: nouns that name an element of a product's interface or offer
ELEMENT_NOUNS = (
    "setting",
    "option",
    "feature",
    "mode",
    "toggle",
    "button",
    "menu",
    "tab",
    "screen",
    "dashboard",
    "panel",
    "plan",
    "tier",
    "subscription",
    "function",
)

_ELEMENT = re.compile(
    r"\b(?:the|a|an|my|your|its|their|this|that)\s+"
    r"((?:[^\W\d_][\w'-]*\s+){1,3}?)"
    r"(" + "|".join(ELEMENT_NOUNS) + r")s?\b(?!\s+(?:up|off)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Element:
    """A name a question gives an element, and the element noun after it, as written."""

    name: str  # "pet detection"
    noun: str  # "setting"

    def writings(self) -> list[str]:
        """The phrases any of which, written in the pages, documents the element: the
        name, then each tail of the name followed by the noun, longest first."""
        words = self.name.split()
        return [self.name] + [" ".join([*words[i:], self.noun]) for i in range(len(words))]


def elements(question: str) -> list[Element]:
    """The elements ``question`` names (module docstring), in order."""
    return [Element(m.group(1).strip(), m.group(2)) for m in _ELEMENT.finditer(question)]
