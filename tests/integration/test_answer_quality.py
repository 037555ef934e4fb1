"""The issue's done-means on the support KB with the real dense model (slow: builds the
MiniLM index): context recall well above the naive pipeline, every unanswerable question
of the dev, test and heldout splits abstained on, extractive fact containment, the paraphrased
refund question quoting the defective-condition rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SUPPORT_KB
from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.answers import GoldFact, QAItem, SystemScore, evaluate_answers, load_qa
from twokeys.rag import ask
from twokeys.rag.grounding import retrieval_confidence

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quality") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions())
    return path


def _split(score: SystemScore, *splits: str) -> SystemScore:
    return SystemScore(score.name, tuple(o for o in score.outcomes if o.item.split in splits))


def test_answers_on_the_support_kb(kb_path: Path) -> None:
    items = [i for i in load_qa(SUPPORT_KB / "qa.jsonl") if i.split in ("dev", "test", "heldout")]
    with open_index(kb_path) as kb:
        result = evaluate_answers(kb, items, budget=1000)
        refund = ask(kb, "Can I get my money back if the item arrived broken?")
    # every unanswerable question of the three splits (qa112's Smart Lock: an unseen phrase)
    assert result.system("twokeys").abstention == 1.0
    ours, naive = (result.system(name) for name in ("twokeys", "naive-2000chars"))
    assert ours.context_recall is not None and naive.context_recall is not None
    assert ours.context_recall >= 0.95
    assert ours.context_recall >= naive.context_recall + 0.15
    assert ours.fact_containment is not None and ours.fact_containment >= 0.80
    # the test split, which no rule was tuned on
    test = _split(ours, "test")
    assert test.context_recall is not None and test.context_recall >= 0.94
    assert test.false_abstention is not None and test.false_abstention <= 0.05
    assert "qualifies for a full refund" in refund.text


def test_table_rows_and_list_items_are_quoted(kb_path: Path) -> None:
    # facts the pages give only in a table row, or a list item whose heading names the
    # release
    with open_index(kb_path) as kb:
        view = ask(kb, "What is the horizontal field of view of the Lumatek Cam Exterior?")
        quiet = ask(kb, "Which Studio release added the --quiet option to the command-line tool?")
    assert "Model: Lumatek Cam Exterior; Horizontal field of view: 130 degrees" in view.text
    assert "1.2.9 \u2014 Added the `--quiet` option" in quiet.text


def test_context_recall_reads_a_block_with_its_label(kb_path: Path) -> None:
    # the release is named only in the changelog chunk's heading path, which the block's
    # label line gives the model; top-k passes the chunk's text alone
    question = "Which Studio release added the --quiet option to the command-line tool?"
    item = QAItem(
        "q", question, "identifier", "test", (GoldFact("release-notes/changelog.md", "1.2.9"),)
    )
    with open_index(kb_path) as kb:
        result = evaluate_answers(kb, [item], budget=1000, naive_chars=())
    assert result.system("twokeys").context_recall == 1.0
    assert result.system("top-k").context_recall == 0.0


def test_a_name_no_chunk_holds_is_unseen(kb_path: Path) -> None:
    # the pages name no VPN, and error codes are identifiers, matched as written
    with open_index(kb_path) as kb:
        vpn = retrieval_confidence(kb, "How do I set up the Hub as a VPN server?")
        code = retrieval_confidence(kb, "What does error ZX-4813 mean on my Hub?")
        rating = retrieval_confidence(kb, "What is the IP rating of the Cam Go for outdoor use?")
    assert rating.unseen_names == ("IP",)  # the pages write IP66, a word of its own
    assert vpn.unseen_names == ("VPN",) and not vpn.answerable
    assert not code.answerable


def test_the_whole_file_at_1000_tokens(kb_path: Path) -> None:
    # every split of the shipped file (930 questions in 26 splits, 18 written blind):
    # recall 0.961 (naive 0.298; the issue asks 0.95), fact containment 0.751, citation
    # precision 0.683, abstention 187/346, false abstention 41/584, each kept from
    # falling further. With the six rule modules fitted to this knowledge base it was
    # 0.961, 0.807, 0.689, 283/346 and 37/584, and 0.961, 0.794, 0.687, 187/346 and
    # 36/584 with the reading and matching rules that a second ablation removed (no
    # gain on the blind documentation splits, README "A second ablation"): procedure
    # steps, code lines and comments, lists after a lead-in, names written otherwise...
    items = load_qa(SUPPORT_KB / "qa.jsonl")
    with open_index(kb_path) as kb:
        result = evaluate_answers(kb, items, budget=1000, naive_chars=(2000,))
    ours, naive = (result.system(name) for name in ("twokeys", "naive-2000chars"))
    assert ours.context_recall is not None and naive.context_recall is not None
    assert ours.context_recall >= 0.95 and ours.context_recall >= naive.context_recall + 0.15
    assert ours.fact_containment is not None and ours.fact_containment >= 0.75
    assert ours.citation_precision is not None and ours.citation_precision >= 0.68
    assert ours.abstention is not None and ours.abstention >= 187 / 346
    assert ours.false_abstention is not None and ours.false_abstention <= 41 / 584


def test_general_knowledge_questions_are_declined(kb_path: Path) -> None:
    # 70 everyday questions the KB cannot answer; the 40 blind ones were written by someone
    # who had seen no rule. With the dense peak alone, 14 of 30 and 18 of 40 were answered
    # (benchmarks/abstention.py); the dense height floor leaves 2 and 4
    from benchmarks.abstention import PROBES, answered, lines

    with open_index(kb_path) as kb:
        tuning = answered(kb, lines(PROBES["tuning"]), lambda c: c.answerable)
        blind = answered(kb, lines(PROBES["blind"]), lambda c: c.answerable)
    assert tuning <= 2 and blind <= 4
