"""An evaluation experiment: index a collection, run retrievers over its queries, score them.

``run_retrievers`` searches every judged query with each retriever, collapses chunk hits
to a document run (:func:`~twokeys.evaluation.runs.doc_ranking`) and times each query;
``score_experiment`` scores the runs with ir-measures, compares two retrievers query by
query and finds where BM25 and dense disagree. Everything but the latencies is
deterministic for a given index.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twokeys.cachedir import cache_home
from twokeys.dense.encoder import get_encoder
from twokeys.engine import MODES, Index
from twokeys.errors import ConfigError, IndexFormatError, QuerySyntaxError
from twokeys.evaluation.beir import Collection
from twokeys.evaluation.disagreements import Disagreement, Side, find_disagreements
from twokeys.evaluation.measures import LABELS, PRIMARY, Evaluator, Scores
from twokeys.evaluation.runs import doc_ranking
from twokeys.evaluation.significance import PERMUTATIONS, SEED, PairedComparison, compare
from twokeys.indexer import IndexOptions, IndexReport, ProgressFactory, build_index
from twokeys.store.local import is_index, read_manifest

TOP_DOCS = 10  # documents kept per query for reports


@dataclass(frozen=True)
class TopDoc:
    """A document in a retriever's top list: its id, title and best chunk's score."""

    doc_id: str
    title: str
    score: float


@dataclass(frozen=True)
class RetrieverRun:
    """One retriever over a collection's judged queries."""

    name: str
    run: dict[str, dict[str, float]]  # query id -> doc id -> rank-derived score
    latency: dict[str, float]  # query id -> seconds for Index.search (non-empty queries)
    top: dict[str, tuple[TopDoc, ...]]  # query id -> top documents, best first
    failed: dict[str, str] = field(default_factory=dict)  # query id -> why it was not run

    def ranking(self, query_id: str) -> list[str]:
        """The query's document ids, best first (ties by doc id)."""
        scored = self.run.get(query_id, {})
        return sorted(scored, key=lambda doc: (-scored[doc], doc))

    @property
    def ms_per_query(self) -> float:
        return 1000.0 * statistics.fmean(self.latency.values()) if self.latency else 0.0


def run_retrievers(
    index: Index,
    collection: Collection,
    retrievers: Sequence[str],
    depth: int = 100,
    chunk_depth: int = 300,
    *,
    filters: Sequence[str] = (),
    progress: ProgressFactory | None = None,
) -> dict[str, RetrieverRun]:
    """Search every judged query with each retriever (one of :data:`twokeys.engine.MODES`).

    ``filters`` (:mod:`twokeys.filters`) restrict every search to the documents they
    allow, so filtered retrieval is measured as a user would run it.

    Each query asks for ``chunk_depth`` chunks, collapsed to the top ``depth`` documents.
    Latency is the wall time of :meth:`Index.search`, query encoding included, after one
    untimed warm-up query per retriever (so model loading is not counted). A query the
    retriever rejects as malformed (a Boolean query with an unbalanced parenthesis) is
    recorded in :attr:`RetrieverRun.failed` and scored as retrieving nothing: one bad
    query does not abort the run.
    """
    for name in retrievers:
        if name not in MODES:
            raise ConfigError(f"retriever: {name!r} is not one of {', '.join(MODES)}")
    if depth < 1:
        raise ConfigError(f"depth: must be >= 1, got {depth}")
    if chunk_depth < depth:
        raise ConfigError(f"chunk_depth: must be >= depth ({depth}), got {chunk_depth}")
    queries = {qid: text for qid, text in collection.queries.items() if text.strip()}
    runs: dict[str, RetrieverRun] = {}
    for name in dict.fromkeys(retrievers):
        advance = progress(f"Searching ({name})", len(collection.queries)) if progress else None
        run: dict[str, dict[str, float]] = {}
        latency: dict[str, float] = {}
        top: dict[str, tuple[TopDoc, ...]] = {}
        failed: dict[str, str] = {}
        warm = False
        for qid in collection.queries:
            text = queries.get(qid)
            hits = []
            if text is not None:  # an empty query retrieves nothing and is not timed
                try:
                    if not warm:
                        index.search(
                            text, mode=name, k=chunk_depth, filters=filters
                        )  # warm-up, untimed
                        warm = True
                    started = time.perf_counter()
                    hits = index.search(text, mode=name, k=chunk_depth, filters=filters)
                    latency[qid] = time.perf_counter() - started
                except QuerySyntaxError as exc:
                    failed[qid] = str(exc)
            run[qid] = doc_ranking(hits, depth)
            best: dict[str, TopDoc] = {}
            for hit in hits:
                if len(best) == TOP_DOCS:
                    break
                best.setdefault(hit.doc_id, TopDoc(hit.doc_id, hit.title, hit.score))
            top[qid] = tuple(best.values())
            if advance:
                advance(1)
        runs[name] = RetrieverRun(name=name, run=run, latency=latency, top=top, failed=failed)
    return runs


# -- the index an evaluation searches ------------------------------------------------


def default_index_path(dataset_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """``<cache>/eval/<dataset name>-<hash of its absolute path>.twokeys``.

    ``<cache>`` is ``$TWOKEYS_CACHE``, else ``$XDG_CACHE_HOME/twokeys``, else
    ``~/.cache/twokeys``: collections are often read-only, so the index lives apart.
    """
    cache = cache_home(env)
    absolute = dataset_dir.expanduser().resolve()
    digest = hashlib.sha256(str(absolute).encode("utf-8")).hexdigest()[:12]
    return cache / "eval" / f"{absolute.name or 'collection'}-{digest}.twokeys"


@dataclass(frozen=True)
class PreparedIndex:
    """Where the index is, and whether this call (re)built it and why."""

    path: Path | str  # a str: a postgresql:// location
    built: bool
    reason: str  # why it was built; "" when an existing index was reused
    report: IndexReport | None = None


def corpus_stamp(corpus: Path) -> dict[str, Any]:
    """What identifies a corpus file's content: its size and SHA-256 (and, for the
    reader, its path and mtime)."""
    digest = hashlib.sha256()
    with open(corpus, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    info = corpus.stat()
    return {
        "corpus": str(corpus.resolve()),
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "sha256": digest.hexdigest(),
    }


def stamp_path(index_path: Path) -> Path:
    """Where eval records the corpus an index was built from: beside the index."""
    return index_path.with_name(index_path.name + ".corpus.json")


def stale_reason(
    index_path: Path,
    encoder: str | None,
    stamp: Mapping[str, Any] | None = None,
    *,
    require_stamp: bool = False,
) -> str:
    """Why ``index_path`` can't be reused for ``encoder`` and the corpus of ``stamp``, or "".

    ``encoder=None`` (BM25 only) can use any index, with or without vectors. An index
    whose recorded corpus stamp (:func:`stamp_path`) differs in size or hash from
    ``stamp`` is stale; one without a record (built by ``twokeys index``) is reused,
    unless ``require_stamp`` (eval's own cached index, built before stamps existed).
    """
    if not is_index(index_path):
        return "no index yet"
    try:
        manifest = read_manifest(index_path)
    except IndexFormatError as exc:
        return f"existing index unreadable ({exc})"
    if not manifest.analyzer.current:
        return f"index built with analyzer version {manifest.analyzer.version}"
    built_with = manifest.encoder.name if manifest.encoder is not None else None
    if encoder is not None and built_with != encoder:
        return f"index built with encoder {built_with or 'none'}, asked for {encoder or 'none'}"
    if encoder is not None and manifest.encoder is not None:
        # the same name, but another model, graph or tokenizer (a new twokeys version):
        # its vectors can't be searched with this encoder, so the index is updated
        current = get_encoder(encoder)
        changed = manifest.encoder.mismatch(
            current.id, current.fingerprint(), current.tokenizer_fingerprint()
        )
        if changed:
            return changed
    if stamp is not None:
        try:
            recorded = json.loads(stamp_path(index_path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return "no record of the corpus it was built from" if require_stamp else ""
        except (OSError, ValueError):
            return "its corpus record is unreadable"
        if not isinstance(recorded, dict) or any(
            recorded.get(key) != stamp[key] for key in ("size", "sha256")
        ):
            return "corpus.jsonl changed since the index was built"
    return ""


def postgres_stale_reason(location: str, encoder: str | None) -> str:
    """Why the PostgreSQL index at ``location`` must be (re)built for ``encoder``, or ""
    to reuse it: it is reused when it exists and was built with ``encoder`` (any index
    serves BM25 only). A database records no corpus stamp."""
    from twokeys.store.postgres.backend import PostgresIndex

    try:
        backend = PostgresIndex(location)
    except IndexFormatError:
        return "no index yet"
    info = backend.manifest.encoder
    backend.close()
    built_with = info.name if info is not None else None
    if encoder is not None and built_with != encoder:
        return f"index built with encoder {built_with or 'none'}, asked for {encoder}"
    return ""


def ensure_index(
    collection: Collection,
    index_path: Path | str,
    *,
    encoder: str | None = "minilm",
    rebuild: bool = False,
    progress: ProgressFactory | None = None,
    cached: bool = False,
) -> PreparedIndex:
    """Reuse the index at ``index_path`` when it is one built with ``encoder``, else build it
    from the collection's corpus (an existing index is updated: unchanged documents keep
    their embeddings). The corpus file's size and hash are recorded beside the index
    and checked on reuse: a changed corpus.jsonl updates the index. ``cached``: the
    index is eval's own (the default path), so one without that record is updated too."""
    if isinstance(index_path, str):  # postgresql://
        reason = "rebuild asked for" if rebuild else postgres_stale_reason(index_path, encoder)
        if not reason:
            return PreparedIndex(index_path, built=False, reason="")
        report = build_index(
            collection.corpus, index_path, IndexOptions(encoder=encoder), progress=progress
        )
        return PreparedIndex(index_path, built=True, reason=reason, report=report)
    stamp = corpus_stamp(collection.corpus)
    reason = (
        "rebuild asked for"
        if rebuild
        else stale_reason(index_path, encoder, stamp, require_stamp=cached)
    )
    if not reason:
        return PreparedIndex(index_path, built=False, reason="")
    report = build_index(
        collection.corpus, index_path, IndexOptions(encoder=encoder), progress=progress
    )
    with contextlib.suppress(OSError):  # read-only: the index is right, only not stamped
        stamp_path(index_path).write_text(json.dumps(stamp, indent=1), encoding="utf-8")
    return PreparedIndex(index_path, built=True, reason=reason, report=report)


@dataclass(frozen=True)
class JudgedCoverage:
    """How many of the documents the qrels judge (for queries with text) the index holds."""

    judged: int
    relevant: int
    missing: int
    missing_relevant: int

    def warning(self) -> str:
        """A one-line warning when judged documents are missing, else ""."""
        if self.relevant and self.missing_relevant == self.relevant:
            return (
                f"the index holds none of the {self.relevant:,} relevant documents the qrels "
                "name: was it built from another corpus? (--rebuild builds it from corpus.jsonl)"
            )
        if self.missing:
            return (
                f"{self.missing:,} of the {self.judged:,} judged documents "
                f"({self.missing_relevant:,} of {self.relevant:,} relevant) are not in the index "
                "(not in corpus.jsonl, or skipped when it was indexed); they count as misses"
            )
        return ""


def judged_coverage(collection: Collection, index_ids: set[str]) -> JudgedCoverage:
    judged = {doc for qid in collection.queries for doc in collection.qrels[qid]}
    relevant = {
        doc for qid in collection.queries for doc, rel in collection.qrels[qid].items() if rel > 0
    }
    return JudgedCoverage(
        judged=len(judged),
        relevant=len(relevant),
        missing=len(judged - index_ids),
        missing_relevant=len(relevant - index_ids),
    )


# -- scoring --------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """Runs, their scores, a paired comparison and the BM25 / dense disagreements."""

    dataset: str
    split: str
    queries: dict[str, str]
    measures: tuple[str, ...]  # ir-measures names, in table order
    runs: dict[str, RetrieverRun]
    scores: dict[str, Scores]
    comparisons: tuple[PairedComparison, ...]  # the compared pair, one per measure
    disagreements: tuple[Disagreement, ...]  # all of them, largest difference first

    def to_dict(self, disagreements: int | None = None) -> dict[str, Any]:
        """JSON-ready data; ``disagreements`` caps how many are listed."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "queries": len(self.queries),
            "measures": [{"measure": m, "label": LABELS.get(m, m)} for m in self.measures],
            "retrievers": {
                name: {
                    "means": self.scores[name].means,
                    "ms_per_query": run.ms_per_query,
                    "per_query": self.scores[name].per_query,
                    "failed": dict(run.failed),
                }
                for name, run in self.runs.items()
            },
            "comparisons": [_comparison_dict(c) for c in self.comparisons],
            "disagreements": [_disagreement_dict(d) for d in self.disagreements[:disagreements]],
        }


def score_experiment(
    collection: Collection,
    runs: Mapping[str, RetrieverRun],
    *,
    split: str = "",
    compare_pair: tuple[str, str] | None = None,
    disagreement_pair: tuple[str, str] | None = None,
    measures: Sequence[str] | None = None,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> Experiment:
    """Score ``runs``; compare ``compare_pair`` (baseline, challenger) on every measure;
    list where the two retrievers of ``disagreement_pair`` disagree."""
    qrels = {qid: collection.qrels[qid] for qid in collection.queries}  # judged, with text
    evaluator = Evaluator(qrels, measures)
    if PRIMARY not in evaluator.names:
        raise ConfigError(f"measures: must include {PRIMARY}")
    scores = {name: evaluator.score(run.run) for name, run in runs.items()}
    for pair, what in ((compare_pair, "compare"), (disagreement_pair, "disagreements")):
        for name in pair or ():
            if name not in runs:
                raise ConfigError(f"{what}: {name!r} was not run ({', '.join(runs)})")
    comparisons: tuple[PairedComparison, ...] = ()
    if compare_pair is not None:
        a, b = compare_pair
        comparisons = tuple(
            compare(
                a,
                scores[a].per_query[m],
                b,
                scores[b].per_query[m],
                measure=m,
                permutations=permutations,
                seed=seed,
            )
            for m in evaluator.names
        )
    disagreements: tuple[Disagreement, ...] = ()
    if disagreement_pair is not None:
        left, right = (
            Side(
                name,
                {qid: runs[name].ranking(qid) for qid in qrels},
                scores[name].per_query[PRIMARY],
            )
            for name in disagreement_pair
        )
        disagreements = tuple(find_disagreements(collection.queries, qrels, left, right))
    return Experiment(
        dataset=collection.root.resolve().name,
        split=split,
        queries=dict(collection.queries),
        measures=tuple(evaluator.names),
        runs=dict(runs),
        scores=scores,
        comparisons=comparisons,
        disagreements=disagreements,
    )


def _comparison_dict(c: PairedComparison) -> dict[str, Any]:
    return {
        "a": c.a,
        "b": c.b,
        "measure": c.measure,
        "queries": c.queries,
        "mean_a": c.mean_a,
        "mean_b": c.mean_b,
        "mean_delta": c.mean_delta,
        "wins": c.record.wins,
        "ties": c.record.ties,
        "losses": c.record.losses,
        "t_statistic": c.t_statistic,
        "t_pvalue": c.t_pvalue,
        "randomisation_pvalue": c.randomisation_pvalue,
        "permutations": c.permutations,
        "seed": c.seed,
        "deltas": c.deltas,
    }


def _disagreement_dict(d: Disagreement) -> dict[str, Any]:
    return {
        "query_id": d.query_id,
        "query": d.query,
        "reason": d.reason,
        "winner": d.winner,
        d.left: {
            "ndcg@10": d.left_ndcg,
            "top": [{"doc_id": r.doc_id, "relevance": r.relevance} for r in d.left_top],
        },
        d.right: {
            "ndcg@10": d.right_ndcg,
            "top": [{"doc_id": r.doc_id, "relevance": r.relevance} for r in d.right_top],
        },
    }


# -- TREC run files -------------------------------------------------------------------


def write_trec_runs(runs: Mapping[str, RetrieverRun], directory: Path) -> list[Path]:
    """Write ``<directory>/<retriever>.trec``: ``qid Q0 docid rank score twokeys-<name>``.

    Scores are the rank-derived ones that were evaluated, so trec_eval on these files
    reproduces the figures exactly (no score ties for it to reorder).
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, run in runs.items():
        lines = []
        for qid in run.run:
            for rank, doc in enumerate(run.ranking(qid), 1):
                for value in (qid, doc):
                    if not value or any(ch.isspace() for ch in value):
                        raise ConfigError(f"TREC run: id {value!r} is empty or has whitespace")
                lines.append(f"{qid} Q0 {doc} {rank} {run.run[qid][doc]:g} twokeys-{name}\n")
        path = directory / f"{name}.trec"
        path.write_text("".join(lines), encoding="utf-8")
        written.append(path)
    return written
