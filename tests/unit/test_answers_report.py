"""The eval-answers HTML report (twokeys.evaluation.answers_report), from made-up
outcomes: the measures, recall by budget, the risk-coverage plot, the questions."""

from __future__ import annotations

from twokeys.evaluation.answers import (
    AnswerEvaluation,
    GoldFact,
    Outcome,
    Piece,
    QAItem,
    SystemScore,
)
from twokeys.evaluation.answers_report import curve, render

GOLD = (GoldFact("a.md", "the default is 42"),)


def outcome(qid: str, gold: tuple[GoldFact, ...], text: str, p: float, abstained: bool) -> Outcome:
    item = QAItem(qid, f"What about {qid}?", "paraphrase" if gold else "unanswerable", "test", gold)
    return Outcome(
        item,
        (Piece("a.md", f"[1] a.md | Setup\n{text}"),),
        20,
        answer=text,
        cited=(0,),
        abstained=abstained,
        budget=1000,
        confidence=p,
        why=f"{qid}: the confidence is {p:.2f}",
    )


def evaluation(budget: int) -> AnswerEvaluation:
    ours = (
        outcome("q1", GOLD, "So the default is 42.", 0.9, False),
        outcome("q2", GOLD, "Nothing here.", 0.6, False),
        outcome("q3", (), "Unrelated <b>text</b>.", 0.2, True),
    )
    topk = tuple(Outcome(o.item, o.pieces, o.tokens) for o in ours)
    items = tuple(o.item for o in ours)
    return AnswerEvaluation(
        budget, items, (SystemScore("twokeys", ours), SystemScore("top-k", topk))
    )


def test_the_curve_counts_a_cited_gold_fact_as_right() -> None:
    points = curve(evaluation(1000).systems[0].outcomes)
    assert [(round(p.coverage, 2), round(p.risk, 2)) for p in points] == [
        (0.33, 0.0),
        (0.67, 0.5),
        (1.0, 0.67),
    ]


def test_the_answerable_only_curve_leaves_the_unanswerable_questions_out() -> None:
    points = curve(evaluation(1000).systems[0].outcomes, answerable_only=True)
    assert [(round(p.coverage, 2), round(p.risk, 2)) for p in points] == [(0.5, 0.0), (1.0, 0.5)]


def test_the_report_holds_every_section_and_escapes_text() -> None:
    page = render("report", evaluation(1000), [evaluation(1000), evaluation(2000)], threshold=0.5)
    assert page.startswith("<!doctype html>")
    assert "<svg" in page and "operating point" in page
    assert page.count("<svg") == 2 and "Answerable questions only" in page
    assert 'aria-label="risk-coverage curve, answerable questions only"' in page
    assert "<td>1,000</td>" in page and "<td>2,000</td>" in page
    assert "What about q3?" in page and "abstained" in page and "(unanswerable)" in page
    assert "a.md: the default is 42" in page
    assert "<b>text</b>" not in page  # packed text is escaped (labels only are shown)
    assert "[1] a.md | Setup" in page
