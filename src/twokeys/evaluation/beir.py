"""Read the queries and relevance judgements of a BEIR-layout collection.

A collection folder holds ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``
(tab-separated ``query-id corpus-id score`` with a header line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from twokeys.errors import IngestError
from twokeys.sanitize import replace_surrogates


@dataclass(frozen=True)
class Collection:
    """A test collection: its corpus file, the judged queries of one split, and qrels."""

    root: Path
    corpus: Path
    queries: dict[str, str]  # only queries with judgements in this split
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance
    query_count: int = 0  # queries in queries.jsonl, judged or not


def check_judged(collection: Collection, split: str) -> None:
    """Fail, naming the file at fault, when no query can be scored."""
    root = collection.root
    if not collection.query_count:
        raise IngestError(f"{root / 'queries.jsonl'}: no queries")
    if not collection.qrels:
        raise IngestError(f"{root / 'qrels' / f'{split}.tsv'}: no judgements")
    if not collection.queries:
        raise IngestError(
            f"none of the {collection.query_count:,} queries of queries.jsonl is judged in "
            f"qrels/{split}.tsv ({len(collection.qrels):,} judged query ids, none of them "
            f"in queries.jsonl)"
        )


def load_collection(root: Path, split: str = "test") -> Collection:
    corpus = root / "corpus.jsonl"
    queries_file = root / "queries.jsonl"
    qrels_file = root / "qrels" / f"{split}.tsv"
    for required in (corpus, queries_file, qrels_file):
        if not required.is_file():
            raise IngestError(f"{root} is not a BEIR collection: missing {required.name}")
    qrels = load_qrels(qrels_file)
    queries: dict[str, str] = {}
    count = 0
    with open(queries_file, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                qid, text = str(record["_id"]), str(record["text"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise IngestError(
                    f"{queries_file} line {number}: bad query record ({exc})"
                ) from exc
            count += 1
            if qid in qrels:
                queries[qid] = replace_surrogates(text)  # "\ud800" is valid JSON
    return Collection(root=root, corpus=corpus, queries=queries, qrels=qrels, query_count=count)


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if number == 1 and parts[0] == "query-id":
                continue
            if not line.strip():
                continue
            if len(parts) != 3:
                raise IngestError(f"{path} line {number}: expected 3 tab-separated fields")
            qid, did, rel = parts
            try:
                qrels.setdefault(qid, {})[did] = int(rel)
            except ValueError:
                raise IngestError(
                    f"{path} line {number}: relevance {rel!r} is not an integer"
                ) from None
    return qrels
