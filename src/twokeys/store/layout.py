"""The local directory backend's file names (see :mod:`twokeys.store.local` for the layout)."""

from __future__ import annotations

MANIFEST = "manifest.json"  # the commit record: spec, counts, current generation
DATABASE = "twokeys.sqlite"  # a generation's documents and chunks
VOCABULARY = "lexical.vocab.txt"  # one term a line, sorted; line number = term id
EMBEDDINGS = "dense.embeddings.npy"  # (chunks, dim) unit vectors
LOCK = ".lock"  # held by the one writer
