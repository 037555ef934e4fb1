"""An evaluation experiment: index a collection, run retrievers over its queries, score them.

``run_retrievers`` searches every judged query with each retriever, collapses chunk hits
to a document run (:func:`~twokeys.evaluation.runs.doc_ranking`) and times each query;
``score_experiment`` scores the runs with ir-measures, compares two retrievers query by
query and finds where BM25 and dense disagree. Everything but the latencies is
deterministic for a given index.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twokeys.engine import MODES, Index
from twokeys.errors import ConfigError, IndexFormatError
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
    untimed warm-up query per retriever (so model loading is not counted).
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
        if queries:
            warm_up = next(iter(queries.values()))
            index.search(warm_up, mode=name, k=chunk_depth, filters=filters)
        run: dict[str, dict[str, float]] = {}
        latency: dict[str, float] = {}
        top: dict[str, tuple[TopDoc, ...]] = {}
        for qid in collection.queries:
            text = queries.get(qid)
            hits = []
            if text is not None:  # an empty query retrieves nothing and is not timed
                started = time.perf_counter()
                hits = index.search(text, mode=name, k=chunk_depth, filters=filters)
                latency[qid] = time.perf_counter() - started
            run[qid] = doc_ranking(hits, depth)
            best: dict[str, TopDoc] = {}
            for hit in hits:
                if len(best) == TOP_DOCS:
                    break
                best.setdefault(hit.doc_id, TopDoc(hit.doc_id, hit.title, hit.score))
            top[qid] = tuple(best.values())
            if advance:
                advance(1)
        runs[name] = RetrieverRun(name=name, run=run, latency=latency, top=top)
    return runs


# -- the index an evaluation searches ------------------------------------------------


def default_index_path(dataset_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """``<cache>/eval/<dataset name>-<hash of its absolute path>.twokeys``.

    ``<cache>`` is ``$TWOKEYS_CACHE``, else ``$XDG_CACHE_HOME/twokeys``, else
    ``~/.cache/twokeys``: collections are often read-only, so the index lives apart.
    """
    env = os.environ if env is None else env
    if env.get("TWOKEYS_CACHE"):
        cache = Path(env["TWOKEYS_CACHE"]).expanduser()
    else:
        base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache = Path(base).expanduser() / "twokeys"
    absolute = dataset_dir.expanduser().resolve()
    digest = hashlib.sha256(str(absolute).encode("utf-8")).hexdigest()[:12]
    return cache / "eval" / f"{absolute.name or 'collection'}-{digest}.twokeys"


@dataclass(frozen=True)
class PreparedIndex:
    """Where the index is, and whether this call (re)built it and why."""

    path: Path
    built: bool
    reason: str  # why it was built; "" when an existing index was reused
    report: IndexReport | None = None


def stale_reason(index_path: Path, encoder: str | None) -> str:
    """Why ``index_path`` can't be reused for ``encoder``, or "".

    ``encoder=None`` (BM25 only) can use any index, with or without vectors.
    """
    if not is_index(index_path):
        return "no index yet"
    try:
        manifest = read_manifest(index_path)
    except IndexFormatError as exc:
        return f"existing index unreadable ({exc})"
    built_with = manifest.encoder.name if manifest.encoder is not None else None
    if encoder is not None and built_with != encoder:
        return f"index built with encoder {built_with or 'none'}, asked for {encoder or 'none'}"
    return ""


def ensure_index(
    collection: Collection,
    index_path: Path,
    *,
    encoder: str | None = "minilm",
    rebuild: bool = False,
    progress: ProgressFactory | None = None,
) -> PreparedIndex:
    """Reuse the index at ``index_path`` when it is one built with ``encoder``, else build it
    from the collection's corpus (an existing index is updated: unchanged documents keep
    their embeddings)."""
    reason = "rebuild asked for" if rebuild else stale_reason(index_path, encoder)
    if not reason:
        return PreparedIndex(index_path, built=False, reason="")
    report = build_index(
        collection.corpus, index_path, IndexOptions(encoder=encoder), progress=progress
    )
    return PreparedIndex(index_path, built=True, reason=reason, report=report)


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
