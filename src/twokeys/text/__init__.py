"""Text rules shared by chunking, context packing and answers: sentences, a passage's text,
token counts.

This package imports nothing from twokeys but :mod:`twokeys.errors` and :mod:`twokeys.types`
(``tests/unit/test_layers.py`` checks it), so every layer above may use it.
"""
