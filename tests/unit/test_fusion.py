"""Score normalisations, convex combination and query-adaptive fusion, by hand."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from twokeys.errors import ConfigError
from twokeys.fusion.adaptive import (
    AdaptiveParams,
    QueryFeatures,
    TermEvidence,
    adaptive_fusion,
    anchor_terms,
    is_identifier_like,
    lexical_weight,
    semantic_support,
    unconfirmed,
    words_pick,
)
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.normalization import chance, dbsf, minmax, normalizer, zscore
from twokeys.retrievers.hybrid import _weighted_evidence
from twokeys.types import Evidence, ScoredChunk


def run(*pairs: tuple[int, float]) -> list[ScoredChunk]:
    return [ScoredChunk(row, score, i + 1) for i, (row, score) in enumerate(pairs)]


def scores(r: list[ScoredChunk]) -> list[float]:
    return [h.score for h in r]


def test_minmax() -> None:
    assert scores(minmax(run((1, 10.0), (2, 6.0), (3, 2.0)))) == pytest.approx([1.0, 0.5, 0.0])
    assert scores(minmax(run((1, 3.0), (2, 3.0)))) == [1.0, 1.0]
    assert minmax([]) == []


def test_zscore() -> None:
    # mean 6, population std sqrt(32/3)
    std = (32 / 3) ** 0.5
    assert scores(zscore(run((1, 10.0), (2, 6.0), (3, 2.0)))) == pytest.approx(
        [4 / std, 0.0, -4 / std]
    )


def test_dbsf_uses_three_sigma_bounds() -> None:
    std = (32 / 3) ** 0.5
    lo, hi = 6 - 3 * std, 6 + 3 * std
    got = scores(dbsf(run((1, 10.0), (2, 6.0), (3, 2.0))))
    assert got == pytest.approx([(10 - lo) / (hi - lo), 0.5, (2 - lo) / (hi - lo)])


def test_chance_measures_from_the_sensors_chance_level() -> None:
    r = run((1, 10.0), (2, 6.0), (3, 2.0))
    assert scores(chance(r)) == pytest.approx([1.0, 0.6, 0.2])  # BM25: chance is 0
    assert scores(chance(r, level=2.0)) == pytest.approx([1.0, 0.5, 0.0])
    # a dense run's top cosines lie in a narrow band far above the query's mean cosine:
    # min-max stretches the band to [0, 1], the chance level keeps it narrow
    den = run((1, 0.65), (2, 0.55), (3, 0.45))
    assert scores(minmax(den)) == pytest.approx([1.0, 0.5, 0.0])
    assert scores(chance(den, level=0.05)) == pytest.approx([1.0, 5 / 6, 4 / 6])
    assert scores(normalizer("chance", 2, 0.05)(den)) == pytest.approx([1.0, 5 / 6, 5 / 6])
    # entries below chance go negative; a top no better than chance falls back to min-max
    assert scores(chance(den, level=0.6)) == pytest.approx([1.0, -1.0, -3.0])
    assert scores(chance(den, level=0.7)) == scores(minmax(den))
    assert scores(chance(run((1, 3.0), (2, 3.0)), level=1.0)) == [1.0, 1.0]
    assert chance([]) == []


def test_convex_combination_normalises_each_run_its_own_way() -> None:
    lex = run((1, 10.0), (2, 5.0))  # chance 0: 1, .5
    den = run((2, 0.6), (3, 0.4))  # chance 0.2: 1, .5
    norms = {"lex": normalizer("chance", None, 0.0), "den": normalizer("chance", None, 0.2)}
    fused = convex_combination({"lex": lex, "den": den}, {"lex": 0.5, "den": 0.5}, norms)
    # absent chunks score as their run's floor (.5 here)
    assert {h.row: h.score for h in fused} == pytest.approx({1: 0.75, 2: 0.75, 3: 0.5})
    with pytest.raises(ConfigError, match="normalisers"):
        convex_combination({"lex": lex, "den": den}, {"lex": 0.5, "den": 0.5}, {"lex": minmax})


def test_convex_combination_hand_computed() -> None:
    lex = run((1, 10.0), (2, 6.0), (3, 2.0))  # minmax: 1, .5, 0
    den = run((3, 0.9), (4, 0.5))  # minmax: 1, 0
    fused = convex_combination({"lex": lex, "den": den}, {"lex": 0.4, "den": 0.6}, minmax)
    by_row = {h.row: h.score for h in fused}
    assert by_row == pytest.approx({1: 0.4, 2: 0.2, 3: 0.6, 4: 0.0})
    assert [h.row for h in fused] == [3, 1, 2, 4]
    with pytest.raises(ConfigError):
        convex_combination({"lex": lex}, {"den": 1.0}, minmax)
    with pytest.raises(ConfigError, match="normalization"):
        normalizer("softmax")


def test_a_chunk_absent_from_a_run_scores_as_its_floor() -> None:
    lex = run((1, 10.0), (2, 6.0), (3, 2.0))  # z: +1.22, 0, -1.22
    den = run((2, 0.9), (3, 0.8), (4, 0.1))  # row 1 is not in the dense run
    fused = {
        h.row: h.score
        for h in convex_combination({"l": lex, "d": den}, {"l": 0.5, "d": 0.5}, zscore)
    }
    z_den = dict(zip([2, 3, 4], scores(zscore(den)), strict=True))
    # row 1 gets the dense run's lowest z-score, not 0 (above every hit below the mean)
    assert fused[1] == pytest.approx(0.5 * scores(zscore(lex))[0] + 0.5 * z_den[4])
    # so the fused top does not depend on how deep the runs went (DBSF: z-score / 6 + 1/2)
    deep_den = run((2, 0.9), (3, 0.8), (4, 0.1), (1, 0.05))
    for name in ("dbsf", "zscore", "minmax", "chance"):
        shallow = convex_combination(
            {"l": lex, "d": den}, {"l": 0.5, "d": 0.5}, normalizer(name, 3)
        )
        deep = convex_combination(
            {"l": lex, "d": deep_den}, {"l": 0.5, "d": 0.5}, normalizer(name, 3)
        )
        assert [h.row for h in shallow] == [h.row for h in deep], name
        assert [h.score for h in shallow] == pytest.approx([h.score for h in deep]), name
    # a run of one hit (or all ties) normalises to 1.0 and an absent chunk gets nothing
    one = convex_combination({"l": run((5, 3.0)), "d": den}, {"l": 0.5, "d": 0.5}, minmax)
    by_row = {h.row: h.score for h in one}
    assert by_row[5] == pytest.approx(0.5) and by_row[4] == 0.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ZX-4821", True),
        ("qwen2.5:14b", True),
        ("--unrestricted", True),
        ("SSL_CTX_new", True),
        ("camelCaseName", True),
        ("nomic-embed-text", True),
        ("/etc/grub.d/40_custom", True),
        ("192.168.0.1", True),
        ("1.2.10", True),
        ("42", False),
        ("3.5", False),
        ("T-cell", False),
        ("x-ray", False),
        ("state-of-the-art", False),
        ("Refund", False),
        ("i.e", False),
        ("B12", False),
        ("PrP", False),
        ("gpt-4o", True),
        ("foo.bar", True),
        ("HTTPServer", False),
    ],
)
def test_identifier_like(raw: str, expected: bool) -> None:
    assert is_identifier_like(raw) is expected


def features(
    identifiers: tuple[str, ...] = (),
    confidence: float = 0.8,
    n_terms: int = 5,
    quoted: tuple[tuple[str, ...], ...] = (),
) -> QueryFeatures:
    return QueryFeatures(identifiers, (), quoted, confidence, n_terms)


def test_lexical_weight_rules() -> None:
    p = AdaptiveParams(
        base_lexical_weight=0.4,
        identifier_lexical_weight=0.7,
        confidence_floor=0.3,
        floor_length=6,
        support_floor=0.5,
        support_power=2.0,
    )
    assert lexical_weight(features(("zx-4821",)), p) == 0.7
    assert lexical_weight(features(quoted=(("refund", "window"),)), p) == 0.7
    assert lexical_weight(features(confidence=0.8), p) == 0.4
    # below the floor the weight shrinks in proportion: 0.4 * 0.15 / 0.3
    assert lexical_weight(features(confidence=0.15), p) == pytest.approx(0.2)
    # a 12-term query: the floor is 0.3 * 6 / 12 = 0.15, so 0.15 is not below it
    assert lexical_weight(features(confidence=0.15, n_terms=12), p) == pytest.approx(0.4)
    assert lexical_weight(features(confidence=0.1, n_terms=12), p) == pytest.approx(
        0.4 * 0.1 / 0.15
    )
    # semantic support below its floor: 0.4 * (0.25 / 0.5) ** 2
    assert lexical_weight(features(), p, support=0.25) == pytest.approx(0.1)
    assert lexical_weight(features(), p, support=0.9) == pytest.approx(0.4)
    # queries naming something exact ignore both paraphrase rules
    assert lexical_weight(features(("zx-4821",), confidence=0.1), p, support=0.1) == 0.7
    with pytest.raises(ConfigError, match="adaptive.base_lexical_weight"):
        AdaptiveParams(base_lexical_weight=1.5)
    with pytest.raises(ConfigError, match="adaptive.floor_length"):
        AdaptiveParams(floor_length=0)
    with pytest.raises(ConfigError, match="adaptive.support_power"):
        AdaptiveParams(support_power=-1)


def test_semantic_support_is_the_dense_score_of_the_lexical_top_hit() -> None:
    den = run((3, 0.8), (1, 0.4), (2, 0.2))
    assert semantic_support(run((1, 9.0), (3, 2.0)), den) == pytest.approx(0.5)
    assert semantic_support(run((3, 9.0)), den) == pytest.approx(1.0)
    # a lexical top hit the dense run lacks gets the run's last score, an upper bound
    assert semantic_support(run((7, 9.0)), den) == pytest.approx(0.25)
    # ... or its true similarity, when the caller has the vectors at hand
    assert semantic_support(run((7, 9.0)), den, 0.08) == pytest.approx(0.1)
    assert semantic_support(run((1, 9.0)), den, 0.08) == pytest.approx(0.5)  # its own score
    assert semantic_support([], den) == 1.0
    assert semantic_support(run((1, 9.0)), []) == 1.0
    assert semantic_support(run((1, 9.0)), run((1, -0.2), (3, -0.5))) == 1.0


def test_quoted_strings_shift_weight_but_do_not_tier() -> None:
    quoted = features(quoted=(("see", "get"),))
    assert quoted.exact_terms == ()
    assert quoted.names_something_exact
    assert features(("zx-4821",)).exact_terms == ("zx-4821",)


def test_exact_identifier_chunk_is_never_outranked() -> None:
    lex = run((1, 5.0), (2, 4.0))  # row 2 contains the identifier, row 1 does not
    den = run((1, 0.9), (3, 0.8), (2, 0.1))
    p = AdaptiveParams()
    fused = adaptive_fusion(lex, den, features(("zx-4821",)), {2: 1}, p)
    assert [h.row for h in fused][:1] == [2]
    assert [h.rank for h in fused] == [1, 2, 3]
    plain = adaptive_fusion(lex, den, features(), {}, p)
    assert plain[0].row == 1


def test_adaptive_fusion_ranks_the_first_depth_entries_of_either_run_first() -> None:
    """Chunks below ``depth`` in both runs come after the candidates, even one holding
    the identifier: the fused top does not change with how deep the runs went."""
    lex = run((1, 9.0), (2, 8.0), (3, 7.0), (4, 6.0))  # row 4 holds the identifier
    den = run((5, 0.9), (2, 0.8), (6, 0.7), (7, 0.6))
    p = AdaptiveParams()
    deep = adaptive_fusion(lex, den, features(("zx-4821",)), {4: 1}, p, depth=2)
    assert {h.row for h in deep[:3]} == {1, 2, 5}
    assert [h.row for h in deep[3:]] == [4, 3, 6, 7]  # the identifier tiers among the rest
    shallow = adaptive_fusion(lex[:2], den[:2], features(("zx-4821",)), {}, p, depth=2)
    assert [h.row for h in deep[:3]] == [h.row for h in shallow]
    assert [h.rank for h in deep] == list(range(1, 8))


def test_adaptive_fusion_measures_each_run_from_its_chance_level() -> None:
    lex = run((1, 10.0), (2, 9.0))  # chance 0: 1, .9
    den = run((2, 0.60), (1, 0.58))  # chance .1: 1, .96; a lead of .02 in cosine
    chance_level = adaptive_fusion(lex, den, features(), {}, AdaptiveParams(), levels=(0.0, 0.1))
    assert [h.row for h in chance_level] == [1, 2]
    assert [h.score for h in chance_level] == pytest.approx([0.45 + 0.55 * 0.96, 0.405 + 0.55])
    # min-max stretches both leads to the whole scale, and the dense run's weight wins
    minmax_scaled = adaptive_fusion(
        lex, den, features(), {}, AdaptiveParams(normalization="minmax"), levels=(0.0, 0.1)
    )
    assert [h.row for h in minmax_scaled] == [2, 1]


def test_normalisation_statistics_can_stop_at_a_depth() -> None:
    deep = run((1, 10.0), (2, 6.0), (3, 2.0), (4, 0.0))
    assert scores(minmax(deep, depth=3)) == pytest.approx([1.0, 0.5, 0.0, 0.0])
    # the top of the list does not depend on how deep the run goes
    assert scores(minmax(deep[:3], depth=3)) == scores(minmax(deep, depth=3))[:3]
    assert scores(normalizer("zscore", 2)(deep))[:2] == pytest.approx([1.0, -1.0])


def test_anchor_terms_need_both_sensors_evidence() -> None:
    evidence = [
        TermEvidence("40002", 0.8, in_dense_top=False, word_pieces=1),  # digits: a code
        TermEvidence("error", 0.2, in_dense_top=True, word_pieces=1),
        TermEvidence("getattr", 0.6, in_dense_top=True, word_pieces=3),  # dense finds it
        TermEvidence("fdopen", 0.6, in_dense_top=False, word_pieces=3),
        TermEvidence("item", 0.9, in_dense_top=False, word_pieces=1),  # a word it knows
        TermEvidence("x-ray", 0.3, in_dense_top=False, word_pieces=3),  # incidental to BM25
    ]
    assert anchor_terms(evidence, share=0.5, rare=0.001) == ("40002", "fdopen")
    assert anchor_terms(evidence, share=0.25, rare=0.001) == ("40002", "fdopen", "x-ray")
    assert anchor_terms([], share=0.5, rare=0.001) == ()


def test_rare_terms_anchor_whatever_their_share() -> None:
    tss = TermEvidence("tss", 0.1, in_dense_top=False, word_pieces=1, chunk_share=0.0006)
    assert anchor_terms([tss], share=0.5, rare=0.001) == ("tss",)
    assert anchor_terms([tss], share=0.5, rare=0.0005) == ()
    # rare, but the dense model finds it, or BM25's top hit lacks it
    found = TermEvidence("tss", 0.1, in_dense_top=True, word_pieces=1, chunk_share=0.0006)
    unmatched = TermEvidence("tss", 0.0, in_dense_top=False, word_pieces=1, chunk_share=0.0006)
    assert anchor_terms([found, unmatched], share=0.5, rare=0.001) == ()
    # rare, but BM25's next chunks hold it too: it does not single the top hit out
    shared = TermEvidence("tss", 0.1, False, 1, chunk_share=0.0006, in_lexical_rest=True)
    assert anchor_terms([shared], share=0.5, rare=0.001) == ()


def test_identifiers_tier_only_when_both_sensors_back_them() -> None:
    evidence = [
        TermEvidence("zx-4821", 0.7, in_dense_top=False, word_pieces=4),  # BM25's reason
        TermEvidence("il-6", 0.0, in_dense_top=False, word_pieces=3),  # top hit lacks it
        TermEvidence("pd-1", 0.3, in_dense_top=True, word_pieces=3),  # dense sees it
    ]
    ids = ("zx-4821", "il-6", "pd-1", "v2.1")  # v2.1: no evidence at all
    assert unconfirmed(ids, evidence) == ("il-6", "pd-1", "v2.1")
    f = QueryFeatures(ids, (), (), 0.9, 4, unconfirmed=unconfirmed(ids, evidence))
    assert f.exact_terms == ("zx-4821",)
    # an unconfirmed identifier still names something exact: the paraphrase rules stay off
    lone = QueryFeatures(("il-6",), (), (), 0.1, 4, unconfirmed=("il-6",))
    assert lone.exact_terms == () and lone.names_something_exact
    p = AdaptiveParams(base_lexical_weight=0.4, identifier_lexical_weight=0.7)
    assert lexical_weight(lone, p, support=0.05) == 0.7


def test_anchors_tier_and_skip_the_paraphrase_rules() -> None:
    p = AdaptiveParams(base_lexical_weight=0.4, identifier_lexical_weight=0.7)
    anchored = QueryFeatures((), (), (), 0.1, 3, anchors=("40002",))
    assert anchored.exact_terms == ("40002",)
    assert anchored.names_something_exact
    # no semantic support and low confidence would shrink BM25's weight; not for an anchor
    assert lexical_weight(anchored, p, support=0.05) == 0.7
    both = QueryFeatures(("zx-4821",), (), (), 0.9, 3, anchors=("40002", "zx-4821"))
    assert both.exact_terms == ("zx-4821", "40002")
    lex = run((1, 5.0), (2, 4.0))  # row 2 holds the code
    den = run((1, 0.9), (3, 0.8))
    fused = adaptive_fusion(lex, den, anchored, {2: 1}, p)
    assert fused[0].row == 2
    with pytest.raises(ConfigError, match="adaptive.anchor_share"):
        AdaptiveParams(anchor_share=1.5)
    with pytest.raises(ConfigError, match="adaptive.rare_chunk_share"):
        AdaptiveParams(rare_chunk_share=-0.1)
    with pytest.raises(ConfigError, match="adaptive.dense_top"):
        AdaptiveParams(dense_top=0)


def test_a_one_word_query_is_not_read_by_the_semantic_support_rule() -> None:
    """A bare name's low cosine to the page that defines it is the dense model not
    reading a name, not BM25 matching incidental words (the top hit matches the query's
    one word): the support rule leaves BM25's weight alone, and a one-word query gives
    BM25 its own weight, whatever else the query shows (issue 33)."""
    p = AdaptiveParams(
        base_lexical_weight=0.4, identifier_lexical_weight=0.7, one_word_lexical_weight=0.8
    )
    word = QueryFeatures((), (), (), 1.0, 1, n_words=1)
    assert word.one_word
    assert lexical_weight(word, p, support=0.05) == 0.8
    named = QueryFeatures(("core.editor",), (), (), 1.0, 3, n_words=1)
    assert lexical_weight(named, p, support=0.05) == 0.8
    assert lexical_weight(QueryFeatures(("core.editor",), (), (), 1.0, 3, n_words=2), p) == 0.7
    with pytest.raises(ConfigError, match="one_word_lexical_weight"):
        AdaptiveParams(one_word_lexical_weight=1.5)
    two = QueryFeatures((), (), (), 1.0, 2, n_words=2)
    assert lexical_weight(two, p, support=0.25) == pytest.approx(0.4 * (0.25 / 0.5) ** 2)
    # not counted (a caller that builds features by hand): the rule applies as before
    assert lexical_weight(QueryFeatures((), (), (), 1.0, 1), p, support=0.25) < 0.4


def test_an_identifier_that_is_the_whole_query_tiers_though_the_dense_run_holds_it() -> None:
    evidence = [
        TermEvidence("core.editor", 0.4, in_dense_top=True, word_pieces=3),
        TermEvidence("core", 0.3, in_dense_top=True, word_pieces=1),
    ]
    assert unconfirmed(("core.editor",), evidence) == ("core.editor",)
    assert unconfirmed(("core.editor",), evidence, whole_query=True) == ()
    # BM25's top hit must still hold it
    lacking = [TermEvidence("core.editor", 0.0, in_dense_top=True, word_pieces=3)]
    assert unconfirmed(("core.editor",), lacking, whole_query=True) == ("core.editor",)


def test_a_bare_name_orders_the_chunks_holding_it_by_bm25() -> None:
    """A one-word query that tiers: among the chunks holding the name, BM25's order
    (the dense model reads the name by its pieces: no judge of which chunk defines it);
    the chunks lacking it follow in fused order, as for any query (issue 33)."""
    lex = run((1, 10.0), (2, 9.9), (3, 9.8), (4, 2.0))  # rows 1-3 hold the name
    den = run((3, 0.9), (2, 0.8), (5, 0.7), (1, 0.3))
    p = AdaptiveParams()
    bare = QueryFeatures(("core.editor",), (), (), 1.0, 3, n_words=1)
    held = {1: 1, 2: 1, 3: 1}
    fused = adaptive_fusion(lex, den, bare, held, p, depth=100)
    assert [h.row for h in fused[:3]] == [1, 2, 3]
    # BM25's four hits are all its matches (fewer than the 100 candidates), so row 5,
    # which it lacks, has no BM25 share, and row 4's weak match ranks above it
    assert [h.row for h in fused[3:]] == [4, 5]
    assert [h.row for h in adaptive_fusion(lex, den, bare, held, p, depth=4)[3:]] == [5, 4]
    assert [h.rank for h in fused] == [1, 2, 3, 4, 5]
    # the same name among other words: the fused score orders the tier, as before
    words = QueryFeatures(("core.editor",), (), (), 1.0, 5, n_words=3)
    assert [h.row for h in adaptive_fusion(lex, den, words, held, p, depth=100)[:3]] == [3, 2, 1]


def _loop_fusion(
    lexical: list[ScoredChunk],
    dense: list[ScoredChunk],
    features: QueryFeatures,
    exact: dict[int, int],
    params: AdaptiveParams,
    depth: int | None,
    alpha: float,
    levels: tuple[float, float],
) -> list[tuple[int, str, int]]:
    """The adaptive fusion as plain Python loops (what it was before it ran on arrays):
    a dict of sums, run by run in name order, then one sort by the tier keys."""
    runs = {"lexical": lexical, "dense": dense}
    total = sum((alpha, 1.0 - alpha))
    weights = {"lexical": alpha / total, "dense": (1.0 - alpha) / total}
    level = {"lexical": levels[0], "dense": levels[1]}
    fused: dict[int, float] = {h.row: 0.0 for r in runs.values() for h in r}
    for name in sorted(runs):
        normed = normalizer(params.normalization, depth, level[name])(runs[name])
        if not normed or weights[name] == 0:
            continue
        by_row = {h.row: h.score for h in normed}
        floor = min(by_row.values())
        # a BM25 run shorter than the candidates holds every match: absent rows scored 0
        complete = name == "lexical" and depth is not None and len(lexical) < depth
        if floor == max(by_row.values()):
            floor = 0.0
        elif complete:
            floor = min(0.0, floor)
        for row in fused:
            fused[row] += weights[name] * by_row.get(row, floor)
    pool = None if depth is None else {h.row for r in runs.values() for h in r[:depth]}
    tiered = bool(features.exact_terms)
    at = {h.row: i for i, h in enumerate(lexical)} if tiered and features.one_word else {}
    order = sorted(
        fused.items(),
        key=lambda item: (
            pool is not None and item[0] not in pool,
            -exact.get(item[0], 0) if tiered else 0,
            at.get(item[0], 0) if exact.get(item[0]) else 0,
            -item[1],
            item[0],
        ),
    )
    return [(row, score.hex(), i + 1) for i, (row, score) in enumerate(order)]


def test_adaptive_fusion_on_arrays_is_the_plain_loop_bit_for_bit() -> None:
    rng = random.Random(5)
    for _ in range(300):
        lexical, dense = (
            run(
                *zip(
                    rng.sample(range(200), n),
                    sorted((rng.random() * 9 for _ in range(n)), reverse=True),
                    strict=True,
                )
            )
            for n in (rng.choice([0, 1, 7, 60, 120]), rng.choice([1, 7, 60, 120]))
        )
        one_word = rng.random() < 0.4
        features = QueryFeatures(
            identifiers=rng.choice([(), ("x",)]),
            missing_identifiers=(),
            quoted=(),
            lexical_confidence=rng.random(),
            n_terms=3,
            n_words=1 if one_word else 3,
        )
        exact = {h.row: rng.choice([1, 2]) for h in lexical if rng.random() < 0.3}
        params = AdaptiveParams(normalization=rng.choice(["chance", "minmax", "zscore", "dbsf"]))
        depth = rng.choice([None, 5, 100])
        alpha = rng.choice([0.0, 0.45, 0.8, 1.0, rng.random()])
        levels = (0.0, rng.random())
        fused = adaptive_fusion(lexical, dense, features, exact, params, depth, alpha, levels)
        assert [(h.row, h.score.hex(), h.rank) for h in fused] == _loop_fusion(
            lexical, dense, features, exact, params, depth, alpha, levels
        )
        # a limit makes the first entries of the same run, and no more
        limit = rng.choice([0, 1, 10, 500])
        first = adaptive_fusion(
            lexical, dense, features, exact, params, depth, alpha, levels, limit=limit
        )
        assert first == fused[:limit]


def test_weighted_evidence_is_the_evidence_constructed_field_by_field() -> None:
    """The hybrid's explained evidence, made in one call, equals (and hashes as) the
    values ``Evidence(...)`` makes, per row in the runs' order; a row no run holds gets
    none."""
    lexical = {
        4: (Evidence("bm25", 1, 7.5, matched_terms=(("zx", 5.0), ("code", 2.5))),),
        9: (Evidence("bm25", 2, 3.25),),
    }
    dense = {9: (Evidence("dense", 1, 0.75),), 2: (Evidence("dense", 2, 0.5),)}
    parts = {"bm25": {4: 0.45, 9: 0.2}, "dense": {9: 0.55}}
    weights = {"bm25": 0.45, "dense": 0.55}
    made = _weighted_evidence([9, 4, 2, 7], (("bm25", lexical), ("dense", dense)), parts, weights)
    expected = {
        9: (
            Evidence("bm25", 2, 3.25, fused=0.2, weight=0.45),
            Evidence("dense", 1, 0.75, fused=0.55, weight=0.55),
        ),
        4: (Evidence("bm25", 1, 7.5, 0.45, 0.45, (("zx", 5.0), ("code", 2.5))),),
        2: (Evidence("dense", 2, 0.5, fused=0.0, weight=0.55),),
        7: (),
    }
    assert made == expected and list(made) == [9, 4, 2, 7]
    assert hash(made[9]) == hash(expected[9])
    assert _weighted_evidence([], (("bm25", lexical),), parts, weights) == {}


def test_a_name_beside_words_tiers_only_when_it_singles_the_top_hit_out() -> None:
    """Among a query's words, a name BM25's next chunks hold too (``functools.partial``
    in the asyncio, inspect and functools pages) does not tier: the words pick the page;
    a bare name still tiers (issue 33)."""
    shared = TermEvidence("functools.partial", 0.4, False, 3, in_lexical_rest=True)
    single = TermEvidence("zx-4821", 0.7, False, 4, in_lexical_rest=False)
    assert words_pick(shared) and not words_pick(single)
    ids = ("functools.partial", "zx-4821")
    assert unconfirmed(ids, [shared, single]) == ("functools.partial",)
    assert unconfirmed(ids, [shared, single], single_out=False) == ()
    assert unconfirmed(ids, [shared, single], whole_query=True) == ()
    # the fusion: the chunk the words point to (row 3) is no longer put below the ones
    # that merely write the name (rows 1 and 2)
    features = QueryFeatures(ids[:1], (), (), 0.9, 5, n_words=5)
    lex = run((1, 5.0), (2, 4.8), (3, 4.5))
    den = run((3, 0.9), (1, 0.5), (2, 0.45))
    p = AdaptiveParams()
    tiered = adaptive_fusion(lex, den, features, {1: 1, 2: 1}, p)
    assert [h.row for h in tiered][:2] == [1, 2]
    kept = replace(features, unconfirmed=unconfirmed(ids[:1], [shared]))
    assert adaptive_fusion(lex, den, kept, {1: 1, 2: 1}, p)[0].row == 3


def test_a_bm25_run_shorter_than_the_candidates_floors_the_chunks_it_lacks_at_zero() -> None:
    """A one-word query BM25 matches in two near-equal chunks only (``SIGHUP``: two
    chunks of the ``signal`` page) against a full dense run of other pages: BM25 holds
    every chunk that matches, so the dense-only chunks get no BM25 share and the two
    matching chunks rank first. Flooring the run at its lowest score gave every dense
    chunk 0.98 of the top's BM25 share, and the matches fell below three of them."""
    lex = run((1, 4.30), (2, 4.22))
    den = run(*((row, 0.23 - 0.002 * row) for row in range(3, 23)), (2, 0.19), (1, 0.18))
    one_word = replace(features(n_terms=1), n_words=1)
    fused = adaptive_fusion(lex, den, one_word, {}, AdaptiveParams(), depth=20)
    assert [h.row for h in fused[:2]] == [1, 2]
    # a BM25 run as deep as the candidates may have been cut: absent rows keep its floor
    full = run(*((row, 5.0 - 0.01 * row) for row in range(1, 21)))
    deep = adaptive_fusion(full, den, one_word, {}, AdaptiveParams(), depth=20)
    cut = {h.row: h.score for h in deep}
    assert cut[21] > 0.8 * 0.9  # row 21 (dense only) gets nearly the BM25 run's floor share
