"""The value a question asks for, and whether a text states one (twokeys.rag.answer_types)."""

from __future__ import annotations

import pytest

from twokeys.rag.answer_types import (
    COUNT,
    DURATION,
    expected_type,
    named_unit,
    states,
    value_type,
)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much does the cloud plan cost per month?", "a price"),
        ("How much is the optional desktop dock?", "a price"),
        ("What is the price of a spare battery?", "a price"),
        ("How far can the Hub be from the router?", "a distance"),
        ("What geofencing radius does the app use?", "a distance"),
        ("How high should a camera be mounted?", "a distance"),
        ("What is the night vision range in metres?", "a distance"),
        ("Which temperature does the schedule keep at night?", "a temperature"),
        ("How cold can the Cam Go get before it stops charging?", "a temperature"),
        ("How loud is the siren?", "a sound level"),
        ("How much electricity does a plug use?", "an amount of power or energy"),
        ("In what year was the Hub launched?", "a year"),
        ("How much memory do Studio 2 summaries need?", "an amount of storage or memory"),
        ("How large a memory card does the camera take?", "an amount of storage or memory"),
        ("What frame rate does the Cam Indoor record at?", "a frame rate"),
        ("What voltage range should rail_in show?", "a voltage"),
        ("Can you tell me how much the cloud plan costs?", "a price"),  # a polite request
        ("How many frames per second does it record?", "a frame rate"),
        ("What video resolution does the camera record in?", "a resolution"),
        ("What is the capacity in mAh of the battery?", "an amount of power or energy"),
        ("How loud is the siren in decibels?", "a sound level"),
        ("What upload speed does cloud recording need?", "a data rate"),
        ("What is the input length, in tokens?", "a length in tokens or characters"),
        ("How many characters can a device name have?", "a length in tokens or characters"),
        # a yes/no question offering values to choose from asks which
        ("Is the Ethernet port 100 Mbit/s or gigabit?", "a data rate"),
        ("Does the Cam Indoor record at 25 or 30 fps?", "a frame rate"),
        # "how many" and a unit names the kind
        ("How many gigabytes of storage does the Hub have?", "an amount of storage or memory"),
        ("How many metres of range does the radio have?", "a distance"),
        ("What does DHCP actually stand for?", "the expansion of DHCP"),
        ("What is the acronym ADR short for?", "the expansion of ADR"),
        ("Which HTTP status does the API send when a client is rate limited?", "an HTTP status"),
        ("What status code does the relay answer with?", "an HTTP status"),
    ],
)
def test_a_question_asking_for_a_value_names_its_kind(question: str, kind: str) -> None:
    found = expected_type(question)
    assert found is not None and found.name == kind


@pytest.mark.parametrize(
    "question",
    [
        "What does the pet detection setting do?",
        "How long does a Cam Go take to charge?",  # a duration: nearly any page states one
        "How many Zigbee devices can one Hub handle?",
        "What channel range does hubctl radio status zigbee show?",  # range: not a distance
        "Can I get my money back if the item arrived broken?",
        "How large is the Hub's log buffer?",  # not a card, disk or drive: any size
        # yes/no questions ask whether, not how much
        "Did firmware v3.2 change anything about how much electricity the Hub uses?",
        "Can I see how much electricity each smart plug is using?",
        "Who won the 2018 football World Cup?",
        # alternatives that are no values, or a value far from the "or"
        "Is there a student or education discount on Studio Pro?",
        "Does the 5 V adapter work abroad with a travel plug, or do I need a new one?",
        "What does DHCP lease time mean?",  # not what it stands for
        "What status does the ring light show while pairing?",  # a state, not an HTTP one
        # a value word inside a name: an option, a placeholder, code, a dotted key
        "What does the --depth <depth> option of git clone do?",
        "What does `max_height` control?",
        "What is fetch.depth for?",
    ],
)
def test_other_questions_ask_for_no_kind(question: str) -> None:
    assert expected_type(question) is None


def test_the_words_a_part_carries_from_the_part_before_are_not_read() -> None:
    # "what does its status light do (height Hub placed)": the height was the first part's
    assert expected_type("what does its status light do (height Hub placed)") is None
    assert expected_type("At what height should the Hub be placed") is not None
    assert expected_type("What depth does a shallow clone with --depth 1 have?") is not None


@pytest.mark.parametrize(
    ("question", "text", "stated"),
    [
        ("How much does it cost?", "Express delivery costs 9 EUR.", True),
        ("How much does it cost?", "Return shipping is free.", True),
        ("How much does it cost?", "Plans keep clips for 7, 30 or 60 days.", False),
        ("How much does it cost?", "Storage has less than 5% free space left.", False),
        ("How much does it cost?", "Answer the door hands-free.", False),
        ("How much does it cost?", "Delete old clips to free up storage.", False),
        ("How much does it cost?", "Replacements are sent free of charge.", True),
        ("How far can it be?", "Keep it within 10 m of the router.", True),
        ("How far can it be?", "Keep it within three metres.", True),
        ("How far can it be?", "It takes 5 minutes to pair.", False),
        ("Which temperature is best?", "Charge it between 0 and 45 °C.", True),
        ("Which temperature is best?", "Charging stops when it is too hot.", False),
        ("How loud is it?", "The siren sounds at 85 dB.", True),
        ("How loud is it?", "Weak signals below -70 dBm cause drops.", False),
        ("How much power does it draw?", "It draws 0.4 W in standby.", True),
        ("In what year was it made?", "Released in 2024.", True),
        ("In what year was it made?", "Version 3.2.1 fixed it.", False),
        ("How much memory does it need?", "At least 16 GB of memory.", True),
        ("How much memory does it need?", "Memory use grows with the number of tiles.", False),
        ("What frame rate does it record at?", "Clips are recorded at 15 fps.", True),
        ("What voltage should it show?", "Between 4.85 V and 5.25 V.", True),
        ("What voltage should it show?", "A low voltage makes it restart.", False),
        ("What frame rate does it record at?", "Clips are recorded at 2K.", False),
        ("What video resolution does it record?", "Lower the quality from 2K to 1080p.", True),
        ("What upload speed does it need?", "At least 2 Mbit/s of upload.", True),
        ("What upload speed does it need?", "A gigabit port.", True),
        ("What upload speed does it need?", "Uploads fail on a slow line.", False),
        ("What is the length in tokens?", "Inputs up to 8192 tokens.", True),
        ("What is the length in tokens?", "Create a token in the app.", False),
        ("What does DHCP stand for?", "Dynamic Host Configuration Protocol (DHCP)", True),
        ("What does IoT stand for?", "devices of the Internet of Things", True),
        ("What does DHCP stand for?", "Very short DHCP lease times cause drops.", False),
        ("Which HTTP status comes back?", "It receives status `429 Too Many Requests`.", True),
        ("Which HTTP status comes back?", "A response of `HTTP/2 200` means it works.", True),
        ("Which HTTP status comes back?", "The server answers 201 Created.", True),
        ("Which HTTP status comes back?", "One Hub supports up to 150 Zigbee devices.", False),
        ("Which HTTP status comes back?", "Requests are rate limited per client token.", False),
    ],
)
def test_a_text_states_a_value_of_the_kind_or_not(question: str, text: str, stated: bool) -> None:
    kind = expected_type(question)
    assert kind is not None
    assert states(kind, text) is stated


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long is the Hub's hardware warranty?", DURATION),
        ("How soon will my refund arrive?", DURATION),
        ("how many days do I have to send it back", DURATION),
        ("How many devices can one Hub manage?", COUNT),
        ("How much does the cloud plan cost?", None),  # a price: expected_type's
        ("What does the siren do?", None),
        ("what does it show (how long warranty)", None),  # carried words are not asked
    ],
)
def test_value_type_adds_durations_and_numbers(question: str, kind: object) -> None:
    got = value_type(question)
    if kind is None:
        assert got is expected_type(question)
    else:
        assert got is kind and expected_type(question) is None  # never a reason to abstain


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("The warranty lasts 24 months from purchase.", True),
        ("Unplug it for a full thirty seconds.", True),
        ("Refunds take up to ten working days.", True),
        ("Every Hub comes with a limited hardware warranty.", False),
        ("Restart the Hub so it recalculates free space.", False),
    ],
)
def test_a_duration_is_a_number_with_a_unit_of_time(text: str, held: bool) -> None:
    assert states(DURATION, text) is held


@pytest.mark.parametrize(
    ("question", "text", "stated"),
    [
        ("What is the capacity in mAh of the battery?", "A 2600 mAh cell.", True),
        ("What is the capacity in mAh of the battery?", "Charge from a 10 W adapter.", False),
        ("What is the range in metres?", "Up to 30 m indoors.", True),
        ("What is the range in metres?", "Up to 30 meters indoors.", True),
        ("What is the range in metres?", "Up to 100 ft indoors.", False),
        ("How loud is it in decibels?", "It sounds at 85 dB.", True),
        ("How many gigabytes does it hold?", "It holds 32 GB of clips.", True),
        ("How many gigabytes does it hold?", "It holds 2000 MB of clips.", False),
    ],
)
def test_a_named_unit_is_the_unit_the_value_must_be_in(
    question: str, text: str, stated: bool
) -> None:
    kind, unit = expected_type(question), named_unit(question)
    assert kind is not None and unit is not None
    assert states(kind, text, unit) is stated
    assert states(kind, text)  # without the unit, any value of the kind does


def test_no_unit_is_named_without_in_and_a_unit() -> None:
    assert named_unit("How far can the Hub be from the router?") is None
    assert named_unit("Which room is it in?") is None
