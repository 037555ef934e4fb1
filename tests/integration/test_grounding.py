"""Grounding in ``ask``: abstention before any model runs, sentence checks after it, the
extractive fallback when the model is down, the event stream and the JSON schema.

A lexical-only index of the support KB (fast); stub models stand in for real ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SUPPORT_KB, ScriptedLLM
from twokeys import open_index
from twokeys.cli import main
from twokeys.evaluation.answers import QAItem, load_qa
from twokeys.llm.base import LLM, Prompt
from twokeys.llm.http import ServiceUnavailableError
from twokeys.rag import Answer, AskOptions, ask
from twokeys.rag.ask import ABSTAINED, Done, Packed, Retrieved, TextDelta, ask_events
from twokeys.rag.grounding import (
    HEIGHT_FLOOR,
    STRONG_PEAK,
    THRESHOLD,
    Confidence,
    _name_runs,
    _names,
    carry_unseen_things,
    retrieval_confidence,
)
from twokeys.rag.prompt import DECLINE, render_prompt
from twokeys.rag.support import check_sentences
from twokeys.server.openai_api import sources_text

BM25 = AskOptions(mode="bm25")


pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def kb_path(support_kb_bm25: Path) -> Path:
    return support_kb_bm25


@pytest.fixture(scope="module")
def shipped(kb_path: Path) -> dict[str, tuple[QAItem, Confidence]]:
    """Every question of the shipped QA file with its confidence on the lexical index,
    by id (read once for the rule tests below)."""
    items = load_qa(SUPPORT_KB / "qa.jsonl")
    with open_index(kb_path) as kb:
        return {i.id: (i, retrieval_confidence(kb, i.question)) for i in items}


def _named(
    shipped: dict[str, tuple[QAItem, Confidence]], rule: Callable[[Confidence], object]
) -> dict[str, object]:
    """The shipped questions ``rule`` names something for, by id, with what it names."""
    return {k: rule(c) for k, (_, c) in shipped.items() if rule(c)}


def stub_llm(answer: str) -> ScriptedLLM:
    """A model named "stub" that answers ``answer`` in one piece, whatever the sources say."""
    return ScriptedLLM(answer, name="stub", whole=True)


class DownLLM(LLM):
    """A model whose server refuses the connection."""

    name = "down"

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        raise ServiceUnavailableError("stub at http://127.0.0.1:9: connection refused")
        yield ""  # pragma: no cover - makes this a generator


def test_a_model_that_ignores_the_sources_is_flagged_unsupported(kb_path: Path) -> None:
    llm = stub_llm("Paris.")
    options = AskOptions(mode="bm25", abstain=False)
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=llm, options=options)
        cited = ask(
            kb, "What does error code ZX-4821 mean?", llm=stub_llm("Paris [1]."), options=options
        )
    assert answer.kind == "generated" and answer.text == "Paris."
    assert [c.status for c in answer.checks] == ["uncited"] and answer.flagged == answer.checks
    assert [c.status for c in cited.checks] == ["unsupported"] and cited.checks[0].citations == (1,)
    data = cited.to_dict()
    assert data["sentences"] == [
        {"text": "Paris [1].", "citations": [1], "status": "unsupported", "support": 0.0}
    ]


def test_a_model_that_says_the_sources_do_not_answer_abstains(kb_path: Path) -> None:
    # retrieval sees the question as covered; the model, reading the passages, declines
    question = "How loud is the siren of the Hub?"
    options = AskOptions(mode="bm25", abstain=False)
    with open_index(kb_path) as kb:
        declined = ask(kb, question, llm=stub_llm(DECLINE), options=options)
        worded = ask(kb, question, llm=stub_llm("The sources don't say."), options=options)
        strict = ask(kb, question, llm=stub_llm(DECLINE), options=replace(options, strict=True))
        answered = ask(kb, question, llm=stub_llm("Paris."), options=options)
    assert declined.kind == "generated" and declined.declined and declined.abstains
    assert [c.status for c in declined.checks] == ["declines"]
    assert declined.flagged == ()  # claims nothing, so needs no citation
    assert declined.to_dict()["declined"] is True
    assert sources_text(declined).startswith("\n\nClosest sources:")
    assert worded.declined
    with open_index(kb_path) as kb:
        cited = ask(kb, question, llm=stub_llm(f"{DECLINE} [1]"), options=options)
        claim = ask(
            kb, question, llm=stub_llm("The sources don't say, it is 85 dB [1]."), options=options
        )
    assert cited.declined and [c.status for c in cited.checks] == ["declines"]
    assert cited.checks[0].citations == (1,)
    assert not claim.declined and claim.checks[0].status == "unsupported"
    assert strict.text == DECLINE  # --strict keeps it
    assert not answered.declined and not answered.abstains and answered.flagged
    assert sources_text(answered).startswith("\n\nSources:")
    # an answer that declines one part and answers another is no abstention
    part = f"ZX-4821 means the input voltage is too low [1]. {DECLINE}"
    with open_index(kb_path) as kb:
        mixed = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm(part), options=BM25)
    assert [c.status for c in mixed.checks] == ["supported", "declines"]
    assert not mixed.declined


def test_eval_answers_counts_a_model_s_decline_as_abstention(kb_path: Path) -> None:
    from twokeys.evaluation.answers import evaluate_answers

    items = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id in ("qa01", "qa47")]
    options = AskOptions(mode="bm25", abstain=False)  # only the model can abstain
    with open_index(kb_path) as kb:
        declining = evaluate_answers(kb, items, options=options, llm=stub_llm(DECLINE))
        answering = evaluate_answers(kb, items, options=options, llm=stub_llm("Paris [1]."))
    assert declining.systems[0].abstention == 1.0  # qa47, the unanswerable one
    assert declining.systems[0].false_abstention == 1.0  # and qa01, which it could answer
    assert answering.systems[0].abstention == 0.0
    # nothing retrieved to answer from ("bake sourdough bread": no word BM25 knows) is no
    # answer either
    (nothing,) = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id == "qa46"]
    with open_index(kb_path) as kb:
        empty = evaluate_answers(kb, [nothing], options=options, llm=stub_llm("Paris [1]."))
    assert empty.systems[0].outcomes[0].answer is not None
    assert empty.systems[0].abstention == 1.0


def test_strict_drops_what_the_sources_do_not_back(kb_path: Path) -> None:
    text = (
        "ZX-4821 means the Hub found the voltage on its input rail below the safe operating "
        "threshold [1]. The capital of France is Paris [1]. It is sunny today."
    )
    with open_index(kb_path) as kb:
        loose = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm(text), options=BM25)
        strict = ask(
            kb,
            "What does error code ZX-4821 mean?",
            llm=stub_llm(text),
            options=AskOptions(mode="bm25", strict=True),
        )
    assert [c.status for c in loose.checks] == ["supported", "unsupported", "uncited"]
    assert loose.text == text
    assert strict.text.startswith("ZX-4821 means") and "Paris" not in strict.text
    assert "sunny" not in strict.text


def test_an_off_topic_question_abstains_before_the_model_runs(kb_path: Path) -> None:
    llm = stub_llm("Paris.")
    with open_index(kb_path) as kb:
        answer = ask(kb, "Who won the World Cup in the United Kingdom?", llm=llm, options=BM25)
        france = ask(kb, "What is the capital of France?", llm=llm, options=BM25)
        unknown_code = ask(kb, "What does error code ZX-9001 mean?", options=BM25)
    assert llm.calls == []
    assert answer.kind == "abstained" and answer.text.startswith(ABSTAINED)
    assert answer.sources  # the closest sources are still shown
    assert france.kind == "no-evidence"  # BM25 alone matches no word of it
    assert unknown_code.kind == "abstained" and "zx-9001" in unknown_code.text
    assert unknown_code.plan.confidence[0].missing == ("zx-9001",)


def test_a_product_name_built_from_corpus_words_abstains(kb_path: Path) -> None:
    # "Lumatek", "Cam", "Hub" and the ring light table are all in the corpus, so BM25
    # covers each word; no chunk holds "Lumatek Cam Hub" side by side.
    question = "What does the ring light of the Lumatek Cam Hub mean?"
    with open_index(kb_path) as kb:
        made_up = ask(kb, question, options=BM25)
        real = ask(kb, question.replace("Cam Hub", "Cam Exterior"), options=BM25)
        unnamed = retrieval_confidence(kb, question.lower())
    confidence = made_up.plan.confidence[0]
    assert confidence.unseen_names == () and confidence.missing == ()
    assert confidence.unseen_phrases == ("Lumatek Cam Hub",)
    assert made_up.kind == "abstained" and "Lumatek Cam Hub" in made_up.text
    assert unnamed.answerable and unnamed.lexical == confidence.lexical  # same words, no name
    assert real.kind == "extractive" and real.plan.confidence[0].unseen_phrases == ()


def test_a_subcommand_the_pages_never_give_abstains(kb_path: Path) -> None:
    # "hubctl", "diag" and "upload" are all in the corpus (the pages give hubctl diag
    # list, purge and create; "upload" is a camera flag), so BM25 covers each word.
    with open_index(kb_path) as kb:
        made_up = ask(kb, "What does hubctl diag upload do?", options=BM25)
        real = ask(kb, "What is hubctl diag purge used for?", options=BM25)
    confidence = made_up.plan.confidence[0]
    assert confidence.missing == () and confidence.unseen == ()
    assert confidence.unseen_commands == ("hubctl diag upload",)
    assert made_up.kind == "abstained" and "no command hubctl diag upload" in made_up.text
    assert confidence.to_dict()["unseen_commands"] == ["hubctl diag upload"]
    assert real.kind == "extractive" and real.plan.confidence[0].unseen_commands == ()


def test_the_command_rule_names_no_answerable_question(
    shipped: dict[str, tuple[QAItem, Confidence]],
) -> None:
    # over every split of the shipped questions: it fires on the three that write an
    # undocumented subcommand of hubctl, and on none of the 125 answerable ones (13 of
    # which write a documented hubctl, lumatek-cli, lmtk-sign or ping command)
    named = _named(shipped, lambda c: c.unseen_commands)
    assert named == {
        "qa140": ("hubctl diag upload",),
        "qa164": ("hubctl cam reboot",),
        "qa165": ("hubctl net reset",),
    }
    assert all(not shipped[k][0].answerable for k in named)


def test_a_menu_path_a_step_past_the_documented_ones_abstains(kb_path: Path) -> None:
    # the pages write Camera settings > Audio and Settings > Hub > Storage, never a step
    # past them; Storage's page names clip retention in prose, so that step is there
    with open_index(kb_path) as kb:
        made_up = ask(
            kb, "What does the Camera settings > Audio > Noise filter option do?", options=BM25
        )
        prose = retrieval_confidence(kb, "What does Settings > Hub > Storage > Clip retention do?")
        real = ask(kb, "What does Camera settings > Power > Charge limit do?", options=BM25)
    confidence = made_up.plan.confidence[0]
    assert confidence.unseen_menu_steps == ("Camera settings > Audio > Noise filter option",)
    assert made_up.kind == "abstained" and "no menu entry Camera settings > Audio" in made_up.text
    assert confidence.to_dict()["unseen_menu_steps"] == list(confidence.unseen_menu_steps)
    assert prose.unseen_menu_steps == () and prose.answerable
    assert real.kind == "extractive" and real.plan.confidence[0].unseen_menu_steps == ()


def test_the_menu_rule_names_no_answerable_question(
    shipped: dict[str, tuple[QAItem, Confidence]],
) -> None:
    # over every split: it fires on the seven questions that write a step past a
    # documented path, and on none of the 152 answerable ones (7 of which write a
    # documented path)
    named = _named(shipped, lambda c: c.unseen_menu_steps)
    assert named == {
        "qa173": ("Camera settings > Audio > Noise filter option",),
        "qa178": ("Settings > Hub > Network > Speed test measure",),
        "qa179": ("Camera settings > Power > Sleep schedule",),
        "qa180": ("Account > Privacy > Ad preferences",),
        "qa181": ("Settings > Hub > Diagnostics > Send logs send",),
        "qa182": ("Camera settings > Hardware > Infrared",),
        "qa183": ("Settings > Hub > Storage > Auto-delete",),
    }
    assert all(not shipped[k][0].answerable for k in named)


def _lexical_kb(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A lexical-only index of ``pages`` (file name -> Markdown), built under ``tmp_path``."""
    from twokeys import IndexOptions, build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = tmp_path / "kb.twokeys"
    build_index(docs, path, IndexOptions(encoder=None))
    return path


def _abstains_naming(answer: Answer, rule: str, name: str) -> None:
    """``answer`` abstained on its one part, whose confidence names ``name`` under
    ``rule`` (a field of :class:`Confidence` and of its JSON), as the reason says."""
    confidence = answer.plan.confidence[0]
    assert getattr(confidence, rule) == (name,) and not confidence.answerable
    assert answer.kind == "abstained" and f"never mentions {name}" in answer.text
    assert confidence.to_dict()[rule] == [name]


def test_a_mode_the_pages_never_name_abstains(tmp_path: Path) -> None:
    # a constructed corpus: "mode" is always written qualified, by three kinds; "report"
    # is written alone too; "take" is always qualified, but by words commoner than it
    path = _lexical_kb(
        tmp_path,
        {
            "setup.md": "# Setup\n\nHold the button until the Hub enters setup mode.\n",
            "pairing.md": "# Pairing\n\nPut each sensor into pairing mode as its leaflet says.\n",
            "scenes.md": "# Scenes\n\nA scene can turn camera privacy mode on for the evening.\n",
            "report.md": "# Reports\n\nThe weekly report lists errors. A report is kept a year.\n",
            "restart.md": "# Restart\n\nThe Hub may take a minute. Updates can take an hour. "
            "Large exports take a day.\n",
        },
    )
    with open_index(path) as kb:
        made_up = ask(kb, "How do I turn on vacation mode on the Hub?", options=BM25)
        real = retrieval_confidence(kb, "How do I put a sensor into pairing mode?")
        alone = retrieval_confidence(kb, "What does the monthly report list?")
        common = retrieval_confidence(kb, "How long does the Hub take after a restart?")
    _abstains_naming(made_up, "unseen_kinds", "vacation mode")
    assert real.unseen_kinds == () and real.answerable
    assert alone.unseen_kinds == ()  # "report" is written alone: a thing, not a family
    assert common.unseen_kinds == ()  # "Hub" is commoner than "take": no member named


def test_the_kind_rule_names_no_answerable_question(
    shipped: dict[str, tuple[QAItem, Confidence]],
) -> None:
    # over every split: it fires on the nine questions that name a mode the pages never
    # name (every "mode" in the pages is setup, pairing, privacy or snapshot mode; "Dark
    # mode" is from heldout7 and "dark mode" from heldout8 and heldout11, each written
    # after the rule by someone who had not read it), on the three that ask what exit
    # code 5 means (the lumatek-cli table numbers its codes 0 to 4), and on one of the 472
    # answerable ones, written blind (heldout19: "covered ... or for a shorter period",
    # where the pages qualify "period" only as billing, grace, ... periods), and on a
    # heldout21 question the existence rule names too ("longer than the standard period");
    # 5 answerable ones name setup, pairing, snapshot or Focus mode, and five exit code 3 or 4
    named = _named(shipped, lambda c: c.unseen_kinds)
    assert named == {
        "qa539": ("code 5",),
        "qa575": ("code 5",),
        "qa692": ("code 5",),
        "qa709": ("shorter period",),
        "qa792": ("standard period",),
        "qa142": ("vacation mode",),
        "qa184": ("away mode",),
        "qa185": ("eco mode",),
        "qa186": ("night mode",),
        "qa200": ("guest mode",),
        "qa207": ("silent mode",),
        "qa263": ("Dark mode",),
        "qa316": ("dark mode",),
        "qa426": ("dark mode",),
    }
    assert {k for k in named if shipped[k][0].answerable} == {"qa709"}


def test_a_number_the_pages_never_give_a_numbered_family_abstains(tmp_path: Path) -> None:
    # a constructed corpus: exit codes 0 to 3 in a table, reset levels 1 to 3 in
    # headings; "wait 10 seconds" measures and numbers nothing
    path = _lexical_kb(
        tmp_path,
        {
            "cli.md": "# The command-line tool\n\n## Exit codes\n\n| Code | Meaning |\n"
            "| --- | --- |\n| 0 | Success |\n| 1 | General failure |\n| 2 | Bad arguments |\n"
            "| 3 | Not signed in |\n\nScripts check the exit code before they retry.\n",
            "reset.md": "# Resetting\n\n## Level 1: Restart\n\nUnplug it.\n\n"
            "## Level 2: Network reset\n\nHold the button.\n\n## Level 3: Factory reset\n\n"
            "Hold the button longer, then wait 10 seconds.\n",
        },
    )
    with open_index(path) as kb:
        made_up = ask(kb, "What does exit code 7 from the tool mean?", options=BM25)
        real = retrieval_confidence(kb, "What does exit code 3 from the tool mean?")
        level = retrieval_confidence(kb, "What does a level 4 reset remove?")
        quantity = retrieval_confidence(kb, "Should I wait 20 seconds after a level 3 reset?")
    _abstains_naming(made_up, "unseen_kinds", "code 7")
    assert real.unseen_kinds == () and real.answerable
    assert level.unseen_kinds == ("level 4",)
    assert quantity.unseen_kinds == ()  # a number of seconds, and a level the pages give


def test_a_name_that_asks_for_the_value_is_no_unseen_name(tmp_path: Path) -> None:
    # "RAM" is never written; "How much RAM" asks for an amount of memory, which the
    # summaries page states. The Hub's page states none, so there the name stays unseen
    path = _lexical_kb(
        tmp_path,
        {
            "summaries.md": "# Daily summaries\n\nSummaries need a desktop with at least "
            "16 GB of memory.\n",
            "hub.md": "# The Hub\n\nThe Hub keeps its rules in memory and on flash.\n",
        },
    )
    with open_index(path) as kb:
        stated = retrieval_confidence(kb, "How much RAM does my desktop need for summaries?")
        hub = retrieval_confidence(kb, "How much RAM does the Hub have?")
        named = retrieval_confidence(kb, "Does the summary run on my RAM disk?")
    assert stated.unseen_names == () and stated.unstated == ""
    assert hub.unstated == "an amount of storage or memory" and not hub.answerable
    assert hub.unseen_names == ("RAM",)
    assert named.unseen_names == ("RAM",)  # no value asked for: a name like any other


def test_a_setting_the_pages_never_name_abstains(tmp_path: Path) -> None:
    # a constructed corpus: "detection" and "pets" are corpus words, "pet detection" is
    # never written; "charge limit setting" is
    path = _lexical_kb(
        tmp_path,
        {
            "camera.md": "# Camera\n\nPerson detection ignores pets and moving trees. It runs on "
            "the camera itself.\n",
            "summary.md": "# Summaries\n\nA summary lists deliveries, visitors and pets.\n",
            "power.md": "# Power\n\n## Charge limit\n\nThe charge limit setting stops "
            "charging at 80 percent to spare the battery.\n",
        },
    )
    with open_index(path) as kb:
        made_up = ask(kb, "What does the pet detection setting do?", options=BM25)
        real = retrieval_confidence(kb, "What does the charge limit setting do?")
        verb = retrieval_confidence(kb, "Does the camera leave person detection on?")
    _abstains_naming(made_up, "unseen_elements", "pet detection")
    assert real.unseen_elements == () and real.answerable
    assert verb.unseen_elements == ()  # no element noun: nothing is named


def test_an_offer_the_pages_never_name_abstains(tmp_path: Path) -> None:
    # a constructed corpus: "extended" and "warranty" are corpus words, never in one
    # passage; "charging dock" is named in other words ("charges ... desktop dock")
    path = _lexical_kb(
        tmp_path,
        {
            "warranty.md": "# Warranty\n\nThe warranty covers faults for two years from "
            "delivery.\n",
            "updates.md": "# Updates\n\nThe extended changelog lists every fix.\n",
            "power.md": "# Power\n\nThe camera charges over USB-C or in the optional "
            "desktop dock, sold separately.\n",
        },
    )
    with open_index(path) as kb:
        made_up = ask(kb, "Can I buy an extended warranty for the camera?", options=BM25)
        real = retrieval_confidence(kb, "Do you sell a charging dock for the camera?")
        part = retrieval_confidence(kb, "Does the camera have a swappable battery?")
    _abstains_naming(made_up, "unseen_things", "extended warranty")
    assert real.unseen_things == () and real.answerable
    assert part.unseen_things == ()  # what a product has is described, not named


def test_a_value_no_source_states_abstains(tmp_path: Path) -> None:
    # the pages discuss plans and the siren without a price or a sound level; the
    # shipping page gives prices
    path = _lexical_kb(
        tmp_path,
        {
            "plans.md": "# Cloud plans\n\nCloud plans keep clips for 7, 30 or 60 days. Change "
            "your cloud plan under Settings.\n",
            "shipping.md": "# Shipping\n\nExpress shipping costs 9 EUR and takes one day.\n",
            "siren.md": "# Siren\n\nThe siren sounds when an alarm rule fires.\n",
        },
    )
    with open_index(path) as kb:
        price = ask(kb, "How much does the cloud plan cost per month?", options=BM25)
        shipping = retrieval_confidence(kb, "How much does express shipping cost?")
        loud = retrieval_confidence(kb, "How loud is the siren?")
        what = retrieval_confidence(kb, "What does the siren do?")
    confidence = price.plan.confidence[0]
    assert confidence.unstated == "a price" and not confidence.answerable
    assert price.kind == "abstained" and "asks for a price" in price.text
    assert confidence.to_dict()["unstated_answer_type"] == "a price"
    assert shipping.unstated == "" and shipping.answerable
    assert loud.unstated == "a sound level" and not loud.answerable
    assert what.unstated == ""


def test_the_element_and_value_rules_name_no_answerable_question(
    shipped: dict[str, tuple[QAItem, Confidence]],
) -> None:
    # over every split, on this lexical index: the element rule fires on 22 unanswerable
    # questions and on one answerable one, written blind ("the faster shipping option":
    # the pages call it Express); the value rule on 40 unanswerable ones and on seven
    # answerable ones whose page BM25 alone does not retrieve (a paraphrase: "how high
    # up" for "mount the camera between 2 and 3 metres"; the default hybrid finds it for
    # all but qa587). heldout7 to heldout24 were written by people who had read no rule
    elements = _named(shipped, lambda c: c.unseen_elements)
    values = _named(shipped, lambda c: c.unstated)
    assert elements == {
        "qa176": ("Lumatek Cloud Plus",),
        "qa187": ("motion sensitivity",),
        "qa202": ("pet detection",),
        "qa205": ("energy monitoring",),
        "qa210": ("smart zoom",),
        "qa231": ("wide dynamic range",),
        "qa235": ("solar",),
        "qa238": ("glare reduction",),
        "qa264": ("solar",),
        "qa316": ("dark",),
        "qa345": ("solar",),
        "qa379": ("solar",),
        "qa416": ("solar",),
        "qa426": ("dark",),
        "qa456": ("solar",),
        "qa497": ("solar",),
        "qa591": ("faster shipping",),
        "qa606": ("solar",),
        "qa665": ("solar",),
        "qa700": ("solar",),
        "qa743": ("solar",),
        "qa808": ("solar",),
        "qa821": ("solar",),
    }
    assert values == {
        "qa26": "a distance",
        "qa51": "a resolution",
        "qa113": "a frame rate",
        "qa228": "a distance",
        "qa230": "a sound level",
        "qa233": "a temperature",
        "qa261": "a sound level",
        "qa271": "a distance",
        "qa305": "a price",
        "qa306": "a price",
        "qa307": "a distance",
        "qa330": "a distance",
        "qa340": "a price",
        "qa346": "a distance",
        "qa378": "a price",
        "qa452": "a price",
        "qa460": "an amount of power or energy",
        "qa485": "a price",
        "qa533": "a price",
        "qa541": "the expansion of DHCP",
        "qa551": "a distance",
        "qa569": "a price",
        "qa587": "a distance",
        "qa610": "a distance",
        "qa614": "a price",
        "qa640": "a price",
        "qa647": "a frame rate",
        "qa696": "a distance",
        "qa698": "an amount of power or energy",
        "qa718": "a distance",
        "qa724": "a frame rate",
        "qa728": "a length in tokens or characters",
        "qa734": "a price",
        "qa778": "a price",
        "qa785": "an amount of power or energy",
        "qa787": "a distance",
        "qa788": "a distance",
        "qa852": "a distance",
        "qa858": "a price",
        "qa862": "an amount of power or energy",
        "qa866": "a temperature",
        "qa870": "an amount of storage or memory",
        "qa879": "a distance",
        "qa893": "a price",
        "qa896": "an amount of power or energy",
        "qa922": "an amount of storage or memory",
        "qa928": "a frame rate",
    }
    answerable = {k for k, (i, _) in shipped.items() if i.answerable}
    assert answerable & set(elements) == {"qa591"}
    assert answerable & set(values) == {
        *("qa26", "qa271", "qa330", "qa551", "qa587", "qa787", "qa852")
    }


def test_the_offer_rule_names_five_answerable_questions(
    shipped: dict[str, tuple[QAItem, Confidence]],
) -> None:
    # over every split: the existence rule names 60 unanswerable questions and five
    # answerable ones, written blind in the customer's words: "a developer version of the
    # Hub" (the pages call it the Developer Edition; declined by the sensors before the
    # rule too), in heldout18 "a charging cradle" (a desktop dock), in heldout22 "a new
    # rubber seal" (a replacement gasket), "a charging stand" (the dock again) and "a
    # daily written summary" (a summary of each day's events). It came after heldout17;
    # the paraphrases of heldout11 about what a product has ("Does the Cam Go have a
    # swappable battery?") are why it reads offers only, and heldout18 and heldout22
    # (existence questions) were written blind to judge it. It also reads "Is there a
    # maximum number of household members ..." (heldout24) as asking for "a maximum
    # number", which no chunk names: declined rightly here, for the wrong reason
    things = _named(shipped, lambda c: c.unseen_things)
    assert set(things) == {
        *("qa232", "qa257", "qa262", "qa345", "qa348", "qa379", "qa388", "qa411"),
        *("qa416", "qa417", "qa418", "qa420", "qa421", "qa422", "qa424", "qa425"),
        *("qa427", "qa430", "qa454", "qa455", "qa456", "qa467", "qa468", "qa474"),
        *("qa480", "qa482", "qa495", "qa606", "qa641", "qa643", "qa652", "qa655"),
        *("qa662", "qa665", "qa668", "qa672", "qa674", "qa676", "qa678", "qa679"),
        *("qa680", "qa383", "qa540", "qa645", "qa700", "qa716", "qa726", "qa743"),
        *("qa754", "qa759", "qa760", "qa792", "qa808", "qa813", "qa818", "qa821"),
        *("qa827", "qa831", "qa833", "qa834", "qa841", "qa848", "qa849", "qa919", "qa925"),
    }
    assert things["qa468"] == ("extended warranty",)
    assert things["qa645"] == ("student discount or education discount",)
    assert things["qa430"] == ("trade-in programme",)
    answerable = {k for k, (i, _) in shipped.items() if i.answerable}
    assert answerable & set(things) == {"qa411", "qa679", "qa831", "qa834", "qa848"}


def test_an_identifier_written_inside_a_longer_one_is_not_missing(kb_path: Path) -> None:
    # the corpus writes curl http://lumatek-hub.local/api/limits, one token indexed whole
    # and by parts; "--download" has its part "download" in the corpus, never the flag
    with open_index(kb_path) as kb:
        inside = retrieval_confidence(kb, "What does the Hub's /api/limits endpoint report?")
        flag = retrieval_confidence(kb, "What does the --download flag measure?")
        code = retrieval_confidence(kb, "What does error code ZX-482 mean?")
    assert inside.missing == () and inside.found == ("/api/limits",) and inside.answerable
    assert flag.missing == ("--download",) and not flag.answerable
    assert code.missing == ("zx-482",)  # one with a digit must match whole (ZX-4821 is no help)


def test_a_quantity_written_apart_is_not_missing(kb_path: Path) -> None:
    # the pages write "2.4 GHz"; a customer writes "2.4GHz": one quantity, neither a
    # missing identifier nor one whose exact match vouches for the question
    with open_index(kb_path) as kb:
        glued = retrieval_confidence(kb, "Which 2.4GHz channel should the router use?")
        other = retrieval_confidence(kb, "Does the Hub have a 6.5GHz radio?")
    assert glued.missing == () and glued.found == ()
    assert other.missing == ("6.5ghz",) and not other.answerable


def test_an_unseen_subcommand_outweighs_every_other_sign() -> None:
    seen = Confidence("q", 1.0, STRONG_PEAK + 1, (), found=("--note",))
    assert seen.answerable
    assert not replace(seen, unseen_commands=("hubctl diag upload",)).answerable
    assert not replace(seen, unseen_menu_steps=("Camera settings > Audio > Noise",)).answerable


def test_an_unseen_phrase_counts_like_an_unseen_name() -> None:
    seen = Confidence("q", 0.9, 4.0, ())
    assert seen.answerable
    assert not replace(seen, unseen_phrases=("Lumatek Smart Lock",)).answerable
    assert replace(seen, dense=STRONG_PEAK, unseen_phrases=("Lumatek Smart Lock",)).answerable
    assert not replace(seen, dense=None, unseen_phrases=("Lumatek Smart Lock",)).answerable
    assert not replace(seen, unseen_kinds=("vacation mode",)).answerable
    assert replace(seen, dense=STRONG_PEAK, unseen_kinds=("vacation mode",)).answerable


def test_a_strong_peak_does_not_vouch_for_an_unseen_thing() -> None:
    # the page about the topic (the cloud plan) is close whether or not it offers the thing
    seen = Confidence("Is there a free trial of the cloud plan", 0.9, STRONG_PEAK + 1, ())
    assert seen.answerable
    assert not replace(seen, unseen_things=("free trial",)).answerable
    assert replace(seen, unseen_things=("free trial",), found=("ZX-4821",)).answerable


def test_a_part_referring_back_to_an_unseen_thing_has_it_unseen_too() -> None:
    first = Confidence("Is there a free trial of the cloud plan", 0.9, 4.0, ())
    then = Confidence("how long does it last (free trial cloud plan)", 0.9, 4.0, ())
    other = Confidence("how much is it (cloud plan)", 0.9, 4.0, ())
    plain = Confidence("how long does a free trial last", 0.9, 4.0, ())  # carries nothing
    missing = replace(first, unseen_things=("free trial",))
    out = carry_unseen_things([missing, then, other, plain])
    assert out[1].unseen_things == ("free trial",) and not out[1].answerable
    assert out[1].reason == "the index never mentions free trial"
    assert out[2] == other and out[3] == plain
    assert carry_unseen_things([first, then]) == (first, then)  # the thing is named
    either = replace(first, unseen_things=("student discount or education discount",))
    then = Confidence("is it for Studio Pro (education discount)", 0.9, 4.0, ())
    assert carry_unseen_things([either, then])[1].unseen_things == either.unseen_things


def test_a_peak_of_chance_cosines_does_not_vouch() -> None:
    # a peak of 4 sd over a low, narrow spread of cosines (an off-topic question on a
    # large corpus) with little coverage: the height from chance decides
    seen = Confidence("q", 0.3, 4.0, (), height=0.30)
    assert seen.score >= THRESHOLD and seen.above_chance and seen.answerable
    assert not replace(seen, height=0.25).answerable  # 0.25 + 0.5 * 0.3 < HEIGHT_FLOOR
    assert replace(seen, height=HEIGHT_FLOOR).answerable
    assert replace(seen, height=None).answerable  # no height read: the peak rule alone
    assert replace(seen, height=0.25, found=("ZX-4821",)).answerable  # an exact identifier
    assert replace(seen, height=0.25).to_dict()["dense_height"] == 0.25


def test_name_runs_are_capitalised_words_side_by_side() -> None:
    assert _name_runs("How long does the Lumatek Smart Lock last?") == ["Lumatek Smart Lock"]
    assert (
        _name_runs("Lumatek Studio runs on which Chromebook?") == []
    )  # a sentence start is no name
    assert _name_runs("Does the Hub's Wi-Fi drop, and does Apple Home work?") == ["Apple Home"]
    assert _name_runs("Pair a Cam Go with your phone. Then open Studio Pro?") == [
        "Cam Go",
        "Studio Pro",
    ]
    assert _name_runs("Reset Hub Button Not Working") == []  # title case marks no name
    # a capitalised unit after a number is no name: "GHz Wi-Fi" is not a run
    assert _name_runs("Which channel should my router's 2.4 GHz Wi-Fi use?") == []
    assert _names("Which channel should my router's 2.4 GHz Wi-Fi use?") == ["Wi-Fi"]


def test_a_part_the_sources_do_not_answer_is_said_so(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean, and what is ZX-9001?", options=BM25)
    assert answer.kind == "extractive"
    assert answer.plan.unanswered == ("what is ZX-9001",)
    assert "The sources do not answer this part." in answer.text
    assert all(s.path != "errors/zx-9001.md" for s in answer.sources)
    assert "below the safe operating threshold" in answer.text
    # BM25 finds nothing for ZX-9001; a part with hits gets its closest sources, packed
    # after the hits the answered part was judged on (those retrieved to fill the budget
    # come last), and nothing is quoted from a block only it brought
    with open_index(kb_path) as kb:
        answer = ask(
            kb, "What does error code ZX-4821 mean, and does the Hub support Z-Wave?", options=BM25
        )
    assert answer.plan.unanswered == ("does the Hub support Z-Wave",)
    # a model is told which part the sources do not answer, though its sources are there
    prompt = render_prompt(answer.plan.prompt)
    assert "1. What does error code ZX-4821 mean\n" in prompt
    assert "2. does the Hub support Z-Wave (the sources do not answer this part; say so)" in prompt
    blocks = answer.plan.context.blocks
    judged = {hit.chunk_id for hit in answer.plan.runs[0].hits[: BM25.k]}
    assert judged & set(blocks[0].chunk_ids)  # the answered part's best comes first
    own = [b.number for b in blocks if b.queries == (1,)]
    answered = [b.number for b in blocks if judged & set(b.chunk_ids)]
    filling = [b.number for b in blocks if b.queries == (0,) and b.number not in answered]
    assert own and min(own) > max(answered)
    assert filling and min(filling) > max(own)
    assert not set(own) & set(answer.cited)


def test_a_name_a_part_carries_from_the_part_before_is_not_its_own(kb_path: Path) -> None:
    # a sub-query carries the words of the part before it in a closing parenthesis; an
    # unseen name there ("VPN") was that part's question, not this one's
    with open_index(kb_path) as kb:
        carried = retrieval_confidence(kb, "how long does a factory reset take (Hub behind a VPN)")
        own = retrieval_confidence(kb, "what does the VPN mode do (power supply)")
    assert carried.unseen == ()
    assert own.unseen_names == ("VPN",) and not own.answerable


def test_an_unreachable_model_gives_the_extractive_answer(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        events = list(
            ask_events(kb, "What does error code ZX-4821 mean?", llm=DownLLM(), options=BM25)
        )
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Retrieved", "Packed", "ModelFailed", "TextDelta", "Done"]
    answer = events[-1].answer  # type: ignore[union-attr]
    assert answer.kind == "extractive" and "connection refused" in (answer.model_error or "")
    assert "below the safe operating threshold" in answer.text


def test_events_arrive_in_order_and_the_answer_serialises(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        events = list(
            ask_events(
                kb,
                "What does error code ZX-4821 mean?",
                llm=stub_llm("Low voltage [1]."),
                options=BM25,
            )
        )
    assert isinstance(events[0], Retrieved) and isinstance(events[1], Packed)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Low voltage [1]."]
    done = events[-1]
    assert isinstance(done, Done) and done.answer.cited == (1,)
    data = json.loads(json.dumps(done.answer.to_dict(with_prompt=True)))
    assert data["kind"] == "generated" and data["confidence"][0]["answerable"] is True
    assert data["sources"][0]["path"] == "errors/zx-4821.md" and "prompt" in data


def test_a_merged_block_cites_the_heading_of_the_quoted_chunk(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "Why was nomic-embed-text chosen over mxbai-embed-large?", options=BM25)
    source = next(s for s in answer.sources if s.path == "engineering/decision-log.md")
    assert source.cited
    assert all("ADR-017" in h for h in source.quoted_headings), source.quoted_headings


def test_sentence_checks_attach_a_lone_citation_to_its_sentence() -> None:
    checks = check_sentences("Low voltage. [1]", (), str.split)
    assert [c.text for c in checks] == ["Low voltage. [1]"]


def test_cli_says_once_that_the_model_is_down_and_exits_3(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ask",
            "What does error code ZX-4821 mean?",
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
            "--llm",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--prompt-style",
            "chat",
            "--timeout",
            "2",
        ],
    )
    assert result.exit_code == 3, result.output
    assert result.stderr.count("warning:") == 1 and "giving the extractive answer" in result.stderr
    assert "Answer (openai:x)" not in result.stdout
    assert result.stdout.startswith("Extractive answer")


def test_cli_abstains_with_the_closest_sources(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ask",
            "Who won the World Cup in the United Kingdom?",
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
        ],
    )
    assert result.exit_code == 0
    assert result.stdout.startswith(ABSTAINED) and "Closest sources:" in result.stdout


def test_eval_answers_compares_ask_with_the_baselines(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "eval-answers",
            str(SUPPORT_KB / "qa.jsonl"),
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
            "--split",
            "dev",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    systems = {s["system"]: s for s in data["systems"]}
    assert list(systems) == ["twokeys", "naive-2000chars", "naive-4000chars", "top-k"]
    assert data["questions"] == 43 and data["budget"] == 1000
    ours = systems["twokeys"]
    assert ours["context_recall"] > systems["naive-2000chars"]["context_recall"]
    assert ours["abstention"] > 0.5 and systems["top-k"]["abstention"] == 0.0
    assert systems["naive-2000chars"]["fact_containment"] is None


def test_eval_answers_names_a_docs_folder_without_markdown(kb_path: Path, tmp_path: Path) -> None:
    args = ["eval-answers", str(SUPPORT_KB / "qa.jsonl"), "--index", str(kb_path), "--mode", "bm25"]
    result = CliRunner().invoke(main, [*args, "--split", "dev", "--docs", str(tmp_path)])
    assert result.exit_code != 0
    assert f"{tmp_path}: no Markdown files for the naive baseline" in result.output
    assert "Traceback" not in result.output


def test_an_empty_generated_answer_falls_back_to_the_extractive_one(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm("  "), options=BM25)
    assert answer.kind == "extractive" and answer.model_error == "stub returned an empty answer"
    assert "below the safe operating threshold" in answer.text


def test_llm_decomposition_with_the_model_down_says_so_once(kb_path: Path) -> None:
    options = AskOptions(mode="bm25", decompose="llm")
    with open_index(kb_path) as kb:
        events = list(
            ask_events(kb, "What does error code ZX-4821 mean?", llm=DownLLM(), options=options)
        )
    assert [type(e).__name__ for e in events].count("ModelFailed") == 1
    answer = events[-1].answer  # type: ignore[union-attr]
    assert answer.kind == "extractive" and answer.model_error is not None


def test_eval_answers_with_a_model_counts_its_citations(kb_path: Path) -> None:
    from twokeys.evaluation.answers import evaluate_answers, load_qa

    items = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id in ("qa01", "qa07")]
    with open_index(kb_path) as kb:
        result = evaluate_answers(kb, items, options=BM25, llm=stub_llm("Paris [1]."))
    ours = result.systems[0]
    assert ours.name == "twokeys+stub"
    assert ours.fact_containment == 0.0  # the stub never states a gold fact
    assert ours.citation_precision == 1.0  # but block [1] holds it on both questions
