"""Lexical (sparse, term-matching) retrieval."""
