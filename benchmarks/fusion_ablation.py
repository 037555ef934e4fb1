"""What each rule of the adaptive fusion contributes: nDCG@10 with one rule taken out.

``python -m benchmarks.fusion_ablation DIR[:SPLIT] ...`` opens each collection's eval
index (the one ``twokeys eval DIR`` builds and keeps in ``$TWOKEYS_CACHE``; run that
first), runs BM25 and dense once per judged query exactly as the hybrid does (300
chunks each, as ``twokeys eval`` asks), then fuses the two runs once per variant with
the library's own fusion functions and prints one markdown row per variant. The
``default`` row equals ``twokeys eval``'s hybrid row; the others change one thing:

* ``shape alone tiers``: every identifier-like token tiers, backed by the sensors or not
  (the rule before :func:`twokeys.fusion.adaptive.unconfirmed`);
* ``no exact tier``: nothing tiers (the weights stay the default's);
* ``no anchors`` / ``no identifier shapes``: that kind of exact term is not read;
* ``no incidental-words rule`` / ``no semantic-support rule``: that weight rule is off;
* ``min-max normalisation``: each run scaled by its top-100 range, the default before
  the chance-level scaling;
* ``support from the run's floor``: a lexical top hit missing from the dense top 100
  given the dense run's last score (an upper bound) instead of its cosine;
* ``bare name's tier by fused score``: a one-word query's exact tier ordered by the
  fused score, as before BM25's order decided it;
* ``one-word weight as others'``: a one-word query weighted as any other query (0.45
  for BM25), not ``one_word_lexical_weight``; ``both (before)``: both, the fusion
  before these two rules;
* ``shared name tiers``: an identifier in a query with other words tiers though BM25's
  next chunks hold it too (the rule before :func:`twokeys.fusion.adaptive.words_pick`);
* ``no verbatim rule``: a chunk holding the whole query word for word is not ranked first
  (:mod:`twokeys.fusion.verbatim`); the held-but-one rule stays on, so since it came
  (session 8) a chunk holding all but one word in order can rank first there, and this
  row is not comparable with its figures from before;
* ``no heading rule``: the chunks whose heading line holds a name the query writes beside
  words are not ranked first below the exact tier (:mod:`twokeys.fusion.headings`);
* ``no definition rule``: nor are the chunks that define a name the query writes as a
  path beside words (:mod:`twokeys.fusion.definitions`);
* ``no held-but-one rule``: a chunk holding the query word for word with one word left
  out is not ranked first among the chunks of equal exact-term count
  (:func:`twokeys.fusion.verbatim.held_but_one_rows`);
* ``no near-miss rule``: a chunk writing a near-miss of the query's code (``ZX-4812`` for
  ``ZX-4821``) and not the code is not ranked below the other candidates
  (:mod:`twokeys.fusion.nearmiss`);
* ``300 deep (before)``: the fusion before its top stopped depending on depth: the
  support rule's floor and the exact tier read all 300 chunks of each run;
* the fixed fusions, for reference.

Collections are given as ``DIR`` (its ``test`` split) or ``DIR:SPLIT``, with
``=INDEX`` when the eval index is not the one ``twokeys eval DIR`` keeps (the
identifier and PDF benchmarks share one index between collections). ``--cache DIR``
keeps each collection's runs (a pickle per collection and split) so variants are
replayed without searching again; ``--by-kind`` gives a column per query kind;
``--save NAME`` writes ``benchmarks/results/NAME.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from twokeys import open_index
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.experiment import default_index_path
from twokeys.evaluation.runs import evaluate
from twokeys.fusion.adaptive import (
    AdaptiveParams,
    QueryFeatures,
    TermEvidence,
    adaptive_fusion,
    anchor_terms,
    lexical_weight,
    semantic_support,
    unconfirmed,
)
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.normalization import normalizer
from twokeys.fusion.rrf import DEFAULT_K, rrf
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import (
    DEFAULT_CANDIDATES,
    DEFAULT_LEXICAL_WEIGHT,
    HybridRetriever,
    RuleRows,
)
from twokeys.types import ScoredChunk

CHUNKS = 300  # chunks asked of each retriever, as twokeys eval asks
DOCS = 100  # documents kept per query


@dataclass(frozen=True)
class Sensed:
    """One query's two runs and what the hybrid reads from them."""

    lexical: list[ScoredChunk]
    dense: list[ScoredChunk]
    features: QueryFeatures
    evidence: tuple[TermEvidence, ...]
    matched: dict[int, frozenset[str]]  # lexical row -> query terms it holds
    chance: float  # the dense run's chance level (BM25's is 0)
    similarity: float  # the cosine of BM25's top hit to the query (0.0: no BM25 hit)
    rules: RuleRows  # the rows the text-reading rules single out (HybridRetriever.rule_rows)


Fuse = Callable[[Sensed], list[ScoredChunk]]


Sensing = tuple[dict[str, Sensed], dict[int, str], dict[str, dict[str, int]]]


def sense(root: Path, split: str, index_path: Path | None = None) -> Sensing:
    """Both sensors' runs per judged query, the rows' documents, and the qrels
    (``index_path``: the collection's eval index, else the one ``twokeys eval`` keeps)."""
    collection = load_collection(root, split)
    path = index_path or default_index_path(root)
    if not path.exists():
        sys.exit(f"{root}: no eval index at {path}; run 'twokeys eval {root}' first")
    out: dict[str, Sensed] = {}
    with open_index(path) as index:
        hybrid = index.retriever(SearchRequest("x"))
        assert isinstance(hybrid, HybridRetriever)
        lexical, dense = hybrid.lexical, hybrid.dense
        params = AdaptiveParams()
        rows: set[int] = set()
        for qid in collection.qrels:
            text = collection.queries.get(qid, "")
            if not text.strip():
                continue
            lex = lexical.retrieve(text, CHUNKS)
            vector = dense.encoder.encode_query(text)
            den = dense.retrieve_vector(vector, CHUNKS)
            top = [h.row for h in den.run[: params.dense_top]]
            evidence = lexical.term_evidence(text, lex.run, top, dense.encoder.count_tokens)
            terms = lexical.analyzer.query_terms(text)
            held = lexical.index.explain_many(terms, [h.row for h in lex.run]) if lex.run else []
            features = lexical.features(text, lex)
            rules = hybrid.rule_rows(text, features, lex, den.run, top)  # as _fuse reads them
            out[qid] = Sensed(
                list(lex.run),
                list(den.run),
                features,
                evidence,
                {h.row: frozenset(t for t, _ in m) for h, m in zip(lex.run, held, strict=True)},
                den.chance,
                dense.index.similarity(vector, lex.run[0].row) if lex.run else 0.0,
                rules,
            )
            rows.update(h.row for h in lex.run)
            rows.update(h.row for h in den.run)
        ordered = sorted(rows)
        docs = {r: c.doc_id for r, c in zip(ordered, index.backend.chunks(ordered), strict=True)}
    return out, docs, dict(collection.qrels)


def adaptive(
    params: AdaptiveParams | None = None,
    *,
    confirm: bool = True,
    tier: bool = True,
    anchors: bool = True,
    shapes: bool = True,
    true_support: bool = True,
    bare_by_bm25: bool = True,
    one_word_weight: bool = True,
    single_out: bool = True,
    verbatim: bool = True,
    headings: bool = True,
    definitions: bool = True,
    near_miss: bool = True,
    held_but_one: bool = True,
) -> Fuse:
    """The hybrid's adaptive fusion (``HybridRetriever._fuse``), with switches."""
    params = params or AdaptiveParams()
    pool = DEFAULT_CANDIDATES

    def fuse(s: Sensed) -> list[ScoredChunk]:
        if not s.lexical:
            return s.dense
        features = s.features if shapes else replace(s.features, identifiers=())
        found = anchor_terms(s.evidence, params.anchor_share, params.rare_chunk_share)
        features = replace(features, anchors=found if anchors else ())
        if confirm:
            features = replace(
                features,
                unconfirmed=unconfirmed(
                    features.identifiers, s.evidence, features.one_word, single_out
                ),
            )
        support = semantic_support(
            s.lexical, s.dense[:pool], s.similarity if true_support else None
        )
        if one_word_weight or not features.one_word:
            alpha = lexical_weight(features, params, support)
        else:  # as before: the other rules' weight, without the support rule
            alpha = lexical_weight(replace(features, n_words=0), params)
        if not tier:
            features = replace(features, identifiers=(), anchors=())
        wanted = set(features.exact_terms)
        exact = {
            h.row: len(wanted & s.matched[h.row])
            for h in s.lexical[:pool]
            if wanted & s.matched[h.row]
        }
        return adaptive_fusion(
            s.lexical,
            s.dense,
            features if bare_by_bm25 else replace(features, n_words=0),
            exact,
            params,
            DEFAULT_CANDIDATES,
            alpha,
            (0.0, s.chance),
            verbatim=s.rules.verbatim if verbatim else frozenset(),
            headed=(s.rules.headed if headings else frozenset())
            | (s.rules.defined if definitions else frozenset()),
            near_miss=s.rules.near_miss if near_miss else frozenset(),
            held_but_one=s.rules.held_but_one if held_but_one else frozenset(),
        )

    return fuse


def before() -> Fuse:
    """The adaptive fusion as it was before its top stopped depending on depth: the
    support rule's floor and the exact tier read whole 300-chunk runs, and chunks below
    the first 100 of both runs could tier above the rest."""
    params = AdaptiveParams()

    def fuse(s: Sensed) -> list[ScoredChunk]:
        if not s.lexical:
            return s.dense
        found = anchor_terms(s.evidence, params.anchor_share, params.rare_chunk_share)
        features = replace(s.features, anchors=found)
        features = replace(
            features, unconfirmed=unconfirmed(features.identifiers, s.evidence, single_out=False)
        )
        alpha = lexical_weight(features, params, semantic_support(s.lexical, s.dense))
        fused = convex_combination(
            {"bm25": s.lexical, "dense": s.dense},
            {"bm25": alpha, "dense": 1 - alpha},
            {
                "bm25": normalizer(params.normalization, DEFAULT_CANDIDATES),
                "dense": normalizer(params.normalization, DEFAULT_CANDIDATES, s.chance),
            },
        )
        wanted = set(features.exact_terms)
        if wanted:
            exact = {r: len(wanted & held) for r, held in s.matched.items()}
            fused.sort(key=lambda h: (-exact.get(h.row, 0), -h.score, h.row))
        return fused

    return fuse


def fixed(name: str) -> Fuse:
    def fuse(s: Sensed) -> list[ScoredChunk]:
        runs = {"bm25": s.lexical, "dense": s.dense}
        if name == "rrf":
            return rrf(runs, DEFAULT_K, {"bm25": 1.0, "dense": 1.0})
        if not s.lexical:
            return s.dense
        w = DEFAULT_LEXICAL_WEIGHT
        norms = {
            "bm25": normalizer(name, DEFAULT_CANDIDATES),
            "dense": normalizer(name, DEFAULT_CANDIDATES, s.chance),
        }
        return convex_combination(runs, {"bm25": w, "dense": 1 - w}, norms)

    return fuse


VARIANTS: dict[str, Fuse] = {
    "default": adaptive(),
    "shape alone tiers": adaptive(confirm=False),
    "no exact tier": adaptive(tier=False),
    "no anchors": adaptive(anchors=False),
    "no identifier shapes": adaptive(shapes=False),
    "no incidental-words rule": adaptive(replace(AdaptiveParams(), confidence_floor=0.0)),
    "no semantic-support rule": adaptive(replace(AdaptiveParams(), support_floor=0.0)),
    "min-max normalisation": adaptive(replace(AdaptiveParams(), normalization="minmax")),
    "support from the run's floor": adaptive(true_support=False),
    "bare name's tier by fused score": adaptive(bare_by_bm25=False),
    "one-word weight as others'": adaptive(one_word_weight=False),
    "both (before)": adaptive(bare_by_bm25=False, one_word_weight=False),
    "shared name tiers": adaptive(single_out=False),
    "no verbatim rule": adaptive(verbatim=False),
    "no heading rule": adaptive(headings=False),
    "no definition rule": adaptive(definitions=False),
    "no near-miss rule": adaptive(near_miss=False),
    "no held-but-one rule": adaptive(held_but_one=False),
    "300 deep (before)": before(),
    "fixed minmax": fixed("minmax"),
    "fixed zscore": fixed("zscore"),
    "fixed dbsf": fixed("dbsf"),
    "fixed chance": fixed("chance"),
    "rrf": fixed("rrf"),
    "bm25": lambda s: s.lexical,
    "dense": lambda s: s.dense,
}


def ndcg(
    sensed: dict[str, Sensed],
    docs: dict[int, str],
    qrels: dict[str, dict[str, int]],
    fuse: Fuse,
    only: set[str] | None = None,
) -> float:
    """Mean nDCG@10 of ``fuse`` over the judged queries (``only``: those ids)."""
    run: dict[str, dict[str, float]] = {}
    for qid, s in sensed.items():
        if only is not None and qid not in only:
            continue
        ranking: dict[str, float] = {}
        for hit in fuse(s)[:CHUNKS]:
            if docs[hit.row] not in ranking:
                ranking[docs[hit.row]] = float(DOCS - len(ranking))
                if len(ranking) == DOCS:
                    break
        run[qid] = ranking
    judged = {q: r for q, r in qrels.items() if q in run}
    return evaluate(judged, run, ["nDCG@10"])["nDCG@10"]


def kinds(root: Path) -> dict[str, set[str]]:
    """Query kind (``metadata.kind`` in ``queries.jsonl``) -> query ids; {} without kinds."""
    out: dict[str, set[str]] = {}
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        kind = (record.get("metadata") or {}).get("kind")
        if kind:
            out.setdefault(kind, set()).add(record["_id"])
    return out


def sensed(spec: str, cache: Path | None) -> tuple[str, Sensing]:
    """``DIR[:SPLIT][=INDEX]``'s runs, read from ``cache`` when sensed before (the runs
    depend on the index and the sensors only, not on the fusion being measured)."""
    spec, _, index = spec.partition("=")
    path, _, split = spec.partition(":")
    root, split = Path(path), split or "test"
    name = f"{root.name} {split}"
    stored = None
    if cache is not None:
        # v2: the runs carry the verbatim rule's rows; v6: the heading rule's too; v11:
        # the definition rule's (v7-v10: its earlier forms, branch mixed7); v12: the
        # near-miss rule's; v13: the held-but-one rule's; v14: its repeated words counted;
        # v15: the rules' rows as one RuleRows
        key = hashlib.sha256(f"v15|{root.resolve()}|{split}|{index}".encode()).hexdigest()[:12]
        stored = cache / f"{root.name}-{split}-{key}.pickle"
        if stored.exists():
            with open(stored, "rb") as fh:
                data: Sensing = pickle.load(fh)  # our own cache, written below
            return name, data
    print(f"sensing {name} ...", file=sys.stderr)
    data = sense(root, split, Path(index) if index else None)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        with open(stored, "wb") as fh:
            pickle.dump(data, fh)
    return name, data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "collections", nargs="+", help="DIR, DIR:SPLIT (default split test), DIR[:SPLIT]=INDEX"
    )
    parser.add_argument("--cache", type=Path, help="keep each collection's runs here")
    parser.add_argument("--variants", help="comma-separated variant names (default: all)")
    parser.add_argument("--save", help="also write benchmarks/results/SAVE.json")
    parser.add_argument(
        "--by-kind", action="store_true", help="a column per query kind (queries.jsonl's)"
    )
    args = parser.parse_args(argv)
    columns: list[tuple[str, Sensing, set[str] | None]] = []
    for spec in args.collections:
        name, data = sensed(spec, args.cache)
        by_kind = kinds(Path(spec.partition("=")[0].partition(":")[0])) if args.by_kind else {}
        if len(by_kind) < 2:
            columns.append((name, data, None))
        for kind, ids in sorted(by_kind.items()):
            judged = ids & set(data[0])
            if len(by_kind) > 1 and judged:
                columns.append((f"{name} {kind} ({len(judged)})", data, judged))
    chosen = args.variants.split(",") if args.variants else list(VARIANTS)
    print("| variant | " + " | ".join(name for name, _, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    table: dict[str, dict[str, float]] = {}
    for variant in chosen:
        values = [ndcg(*data, VARIANTS[variant], only) for _, data, only in columns]
        table[variant] = {name: v for (name, _, _), v in zip(columns, values, strict=True)}
        print(f"| {variant} | " + " | ".join(f"{v:.4f}" for v in values) + " |")
    if args.save:
        from benchmarks.common import save_result

        save_result(args.save, {"measure": "nDCG@10", "collections": args.collections, **table})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
