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

:func:`element_names` finds the names; the grounding rule then asks whether some chunk
holds a name's analysed words side by side. Words the analyzer drops (stopwords) end
a name, so "the *way* the mode works" names nothing.
"""

from __future__ import annotations

import re

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
    r"(?:" + "|".join(ELEMENT_NOUNS) + r")s?\b",
    re.IGNORECASE,
)


def element_names(question: str) -> list[str]:
    """The names ``question`` gives elements (module docstring), as written, in order."""
    return [m.group(1).strip() for m in _ELEMENT.finditer(question)]
