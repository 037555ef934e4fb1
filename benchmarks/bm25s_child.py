"""bm25s in a virtual environment of its own: the child that ``bm25_clean.py`` drives.

Run with that environment's Python (``BM25S_VENV/bin/python benchmarks/bm25s_child.py
CORPUS QUERIES [SETUP,SETUP...]``, every setup when none are named); it imports nothing
of twokeys or of the benchmarks package, only bm25s and what its README installs beside
it. It builds one retriever per documented
setup over CORPUS (BEIR ``corpus.jsonl``: title + text, as twokeys indexes them), prints
one JSON line (``ready``: setups, build seconds, versions, installed packages), then
answers commands on stdin, one JSON line each:

* ``run NAME``: every query of QUERIES (one per line) once through setup NAME, one at
  a time from its text to its top-10 rows; wall-clock and this thread's CPU seconds.
* ``rows NAME N``: the top-10 rows of the first N queries (a check that the setup
  ranks as the same call in another environment does).
* ``quit``.

Setups (bm25s 0.3.16's README; ``show_progress=False`` as in ``peer_calls.py``):

* ``bm25s``: the Quickstart: ``bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer)``,
  ``BM25()`` (numpy backend), ``bm25s.tokenize(query, stemmer=stemmer)``,
  ``retrieve(query_tokens, k=10)``.
* ``bm25s numba``: the same with ``BM25(backend="numba")`` ("speedup via numba").
* ``bm25s Tokenizer`` and ``bm25s Tokenizer numba``: the README's ``Tokenizer`` class
  (``stopwords="en"``, the same stemmer), queries as token ids
  (``tokenize([query], update_vocab=False, return_as="ids")``), which skips the string
  vocabulary lookups of ``bm25s.tokenize``; ``retrieve(..., return_as="documents")``
  (rows only: no ``Results`` tuple, no scores array handed back).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from importlib import metadata

K = 10


def load_texts(path: str) -> list[str]:
    texts = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                title, body = record.get("title") or "", record.get("text") or ""
                texts.append(f"{title}\n{body}" if title else body)
    return texts


def build(
    texts: list[str], only: set[str] | None = None
) -> tuple[dict[str, Callable[[str], object]], dict[str, float]]:
    import bm25s
    import Stemmer
    from bm25s.tokenization import Tokenizer

    stemmer = Stemmer.Stemmer("english")
    setups: dict[str, Callable[[str], object]] = {}
    seconds: dict[str, float] = {}

    for backend in ("numpy", "numba"):
        name = "bm25s" if backend == "numpy" else "bm25s numba"
        if only is not None and name not in only:
            continue
        start = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25() if backend == "numpy" else bm25s.BM25(backend="numba")
        retriever.index(tokens, show_progress=False)
        seconds[name] = time.perf_counter() - start

        def readme(query: str, retriever: bm25s.BM25 = retriever) -> object:
            query_tokens = bm25s.tokenize(query, stemmer=stemmer, show_progress=False)
            return retriever.retrieve(query_tokens, k=K, show_progress=False).documents[0]

        setups[name] = readme

    for backend in ("numpy", "numba"):
        name = "bm25s Tokenizer" if backend == "numpy" else "bm25s Tokenizer numba"
        if only is not None and name not in only:
            continue
        start = time.perf_counter()
        tokenizer = Tokenizer(stopwords="en", stemmer=stemmer)
        ids = tokenizer.tokenize(texts, return_as="ids", show_progress=False)
        retriever = bm25s.BM25(backend=backend)
        retriever.index(ids, show_progress=False)
        seconds[name] = time.perf_counter() - start

        def with_ids(
            query: str, retriever: bm25s.BM25 = retriever, tokenizer: Tokenizer = tokenizer
        ) -> object:
            query_ids = tokenizer.tokenize(
                [query], update_vocab=False, return_as="ids", show_progress=False
            )
            return retriever.retrieve(query_ids, k=K, show_progress=False, return_as="documents")[0]

        setups[name] = with_ids
    return setups, seconds


def main() -> None:
    corpus, queries_file = sys.argv[1], sys.argv[2]
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    texts = load_texts(corpus)
    with open(queries_file, encoding="utf-8") as fh:
        queries = [line.rstrip("\n") for line in fh]
    setups, build_s = build(texts, only)
    del texts
    for fn in setups.values():  # warm up: numba compiles on first use
        for query in queries[:5]:
            fn(query)
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    ready = {
        "setups": list(setups),
        "build_s": build_s,
        "packages": packages,
        "python": sys.version.split()[0],
    }
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "run":
            fn = setups[" ".join(command[1:])]
            start, start_cpu = time.perf_counter(), time.thread_time()
            for query in queries:
                fn(query)
            out = {"wall_s": time.perf_counter() - start, "cpu_s": time.thread_time() - start_cpu}
        elif command[0] == "rows":
            fn = setups[" ".join(command[1:-1])]
            out = {"rows": [[int(r) for r in fn(q)] for q in queries[: int(command[-1])]]}
        else:
            out = {"error": f"unknown command {command[0]!r}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
