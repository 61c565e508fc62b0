"""The chaos ledger judges outcomes it is fed: every checker fires on a doubled or bad outcome."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from devstack.chaos.ledger import (
    DELIVERED,
    DESIGNED,
    LET_DOWN,
    BotMessage,
    FaultKind,
    Guest,
    JobRow,
    LeadSubmission,
    Observed,
    PauseSeen,
    ProcessExit,
    StickerSet,
    classify,
    judge,
)
from shared.texts import TEXTS

GROUP = -100123
T0 = 1_800_000_000.0
KINDS = {
    "kill:worker": FaultKind(
        "kill:worker", "delivered, or crashed twice", frozenset({"crashed"}), per_fault=1
    ),
    "ai:credit": FaultKind("ai:credit", "paused, then delivered", pauses=True),
    "ai:safety": FaultKind("ai:safety", "content_refused", frozenset({"content"})),
    "tg:429": FaultKind("tg:429", "delivered"),
    "tg:hold-own-chat": FaultKind("tg:hold-own-chat", "delivered", holds_reply=True),
}

pytestmark = pytest.mark.unit


def en(key: str, **values: str) -> str:
    return TEXTS[key]["en"].format(**values)


def link(name: str) -> str:
    return en("pack_ready", link=f"https://t.me/addstickers/{name}")


def msgs(chat: int, *texts: str, at: float = T0 + 60) -> list[BotMessage]:
    return [BotMessage(chat, t, at + i, i + 1) for i, t in enumerate(texts)]


def delivered_world(**changes: object) -> Observed:
    """Two guests delivered and one lead carded: the baseline every test spoils in one way."""
    observed = Observed(
        guests=[
            Guest(1, "astronaut", True, 202, job_id="j1", accepted_at=T0),
            Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0),
        ],
        jobs={"j1": JobRow("j1", "delivered", None, 1), "j2": JobRow("j2", "delivered", None, 2)},
        messages={
            1: msgs(1, en("linked"), en("generating"), link("a_by_bot")),
            2: msgs(2, en("linked"), en("generating"), link("b_by_bot")),
            GROUP: msgs(GROUP, "Lead #1 — Ann, +1555"),
        },
        sets=[StickerSet("a_by_bot", 1, 12), StickerSet("b_by_bot", 2, 12)],
        leads=[LeadSubmission("r1", 1)],
        leads_chat_id=GROUP,
        injected=Counter({"tg:429": 3}),
        exits=[ProcessExit("worker", -9, caused=True)],
    )
    for name, value in changes.items():
        setattr(observed, name, value)
    return observed


def test_a_clean_run_is_ok_and_counts_links() -> None:
    ledger = judge(delivered_world(), KINDS)
    assert ledger.ok, ledger.table()
    assert [v.outcome for v in ledger.verdicts] == [DELIVERED, DELIVERED]
    assert ledger.link_s == [62.0, 62.0]
    assert ledger.table().splitlines()[-1] == (
        "chaos: journeys=2 leads=1 faults=3 let_down=0 lost=0 duplicated=0 unexpected_exits=0"
    )


def test_classify_knows_every_text_in_both_languages() -> None:
    assert classify(link("x_by_bot")) == "pack_ready"
    assert classify(TEXTS["failed"]["ru"]) == "failed"
    assert classify("hello there") == "other"


def test_two_sets_for_one_guest_are_duplicated() -> None:
    world = delivered_world()
    world.sets.append(StickerSet("a2_by_bot", 1, 12))
    ledger = judge(world, KINDS)
    assert ledger.duplicated == ["guest 1: 2 sticker sets"]
    assert not ledger.ok


def test_two_links_are_duplicated() -> None:
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), link("a_by_bot"), link("a2_by_bot"))
    ledger = judge(world, KINDS)
    assert "guest 1: 2 links" in ledger.duplicated


def test_a_message_sent_twice_is_duplicated() -> None:
    world = delivered_world()
    world.messages[2] = msgs(2, en("linked"), en("generating"), en("generating"), link("b_by_bot"))
    ledger = judge(world, KINDS)
    assert len(ledger.duplicated) == 1 and ledger.duplicated[0].startswith("guest 2: message sent 2 times")


def test_a_card_posted_twice_is_duplicated() -> None:
    world = delivered_world()
    world.messages[GROUP] = msgs(GROUP, "Lead #1 — Ann", "Lead #1 — Ann")
    assert judge(world, KINDS).duplicated == ["lead #1: 2 cards"]


def test_two_leads_merged_into_one_number_are_duplicated() -> None:
    world = delivered_world(leads=[LeadSubmission("r1", 1), LeadSubmission("r2", 1)])
    assert judge(world, KINDS).duplicated == ["lead #1 given to 2 requests"]


def test_a_lead_without_a_card_or_a_number_is_lost() -> None:
    world = delivered_world(
        leads=[LeadSubmission("r1", 1), LeadSubmission("r2", 2), LeadSubmission("r3", None)]
    )
    assert judge(world, KINDS).lost == ["lead r3: never got a number", "lead #2: no card"]


def test_the_generic_failure_without_an_injected_cause_lets_the_guest_down() -> None:
    world = delivered_world()
    world.jobs["j2"] = JobRow("j2", "failed", "invalid", 2)
    world.messages[2] = msgs(2, en("linked"), en("generating"), en("failed"))
    world.sets = world.sets[:1]
    ledger = judge(world, KINDS)
    assert [v.outcome for v in ledger.verdicts] == [DELIVERED, LET_DOWN]
    assert "without an injected cause" in ledger.verdicts[1].reason
    assert ledger.summary().endswith("let_down=1 lost=0 duplicated=0 unexpected_exits=0")


def test_a_failure_is_designed_only_up_to_what_the_injected_faults_explain() -> None:
    world = delivered_world(injected=Counter({"kill:worker": 1}))
    for n in (1, 2):
        world.jobs[f"j{n}"] = JobRow(f"j{n}", "failed", "crashed", n)
        world.messages[n] = msgs(n, en("linked"), en("generating"), en("failed"))
    world.sets = []
    ledger = judge(world, KINDS)
    assert [v.outcome for v in ledger.verdicts] == [DESIGNED, LET_DOWN]
    assert ledger.verdicts[0].kinds == ("kill:worker",)


def test_a_fault_explains_only_the_classes_it_can_cause() -> None:
    world = delivered_world(injected=Counter({"tg:429": 5}))
    world.jobs["j1"] = JobRow("j1", "failed", "crashed", 1)
    world.messages[1] = msgs(1, en("linked"), en("failed"))
    assert judge(world, KINDS).verdicts[0].outcome == LET_DOWN


def test_a_content_refusal_needs_its_own_text() -> None:
    world = delivered_world(injected=Counter({"ai:safety": 3}))
    world.jobs["j1"] = JobRow("j1", "failed", "content", 1)
    world.messages[1] = msgs(1, en("linked"), en("failed"))  # the generic text: wrong for class content
    verdict = judge(world, KINDS).verdicts[0]
    assert verdict.outcome == LET_DOWN and "for class content" in verdict.reason
    if "content_refused" in TEXTS:  # the key the content-refusal mend adds
        world.messages[1] = msgs(1, en("linked"), en("content_refused"))
        assert judge(world, KINDS).verdicts[0].outcome == DESIGNED


def test_silence_is_let_down_and_lost() -> None:
    world = delivered_world()
    world.jobs["j1"] = JobRow("j1", "processing", None, 1)
    world.messages[1] = msgs(1, en("linked"), en("generating"))
    ledger = judge(world, KINDS)
    assert ledger.verdicts[0].outcome == LET_DOWN
    assert ledger.lost and ledger.lost[0].startswith("guest 1 job j1: silence")


def test_a_late_link_lets_the_guest_down() -> None:
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), link("a_by_bot"), at=T0 + 901)
    assert "deadline" in judge(world, KINDS).verdicts[0].reason


def test_two_different_texts_let_the_guest_down() -> None:
    world = delivered_world(injected=Counter({"kill:worker": 3}))
    world.jobs["j1"] = JobRow("j1", "failed", "crashed", 1)
    world.messages[1] = msgs(1, en("linked"), en("failed"), link("a_by_bot"))
    assert judge(world, KINDS).verdicts[0].outcome == LET_DOWN


def test_the_break_text_may_answer_each_start_but_not_more() -> None:
    """A guest told "short break" presses Start again and may be told again; a third telling is doubled."""
    world = delivered_world(injected=Counter({"ai:credit": 1}))
    paused = (en("linked"), en("maintenance"), en("maintenance"), en("generating"), link("b_by_bot"))
    world.messages[2] = msgs(2, *paused)
    world.guests[1] = Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0, starts=2)
    assert judge(world, KINDS).duplicated == []
    world.guests[1] = Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0, starts=1)
    assert judge(world, KINDS).duplicated == [
        "guest 2: message sent 2 times: " + repr(en("maintenance")[:60])
    ]


def test_unavailable_then_delivered_needs_an_injected_pause() -> None:
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), en("generating"), en("unavailable"), link("a_by_bot"))
    assert judge(world, KINDS).verdicts[0].outcome == LET_DOWN
    world.injected = Counter({"ai:credit": 3})
    assert judge(world, KINDS).verdicts[0].outcome == DELIVERED


@pytest.mark.parametrize(
    ("face", "status", "code", "outcome"),
    [
        (False, 422, "no_face", DESIGNED),
        (True, 422, "no_face", LET_DOWN),
        (True, 415, "unsupported", LET_DOWN),
    ],
)
def test_refused_uploads_are_counted(face: bool, status: int, code: str, outcome: str) -> None:
    world = delivered_world()
    world.guests[0] = Guest(1, "pug-heic", face, status, upload_code=code)
    world.messages[1] = msgs(1, en("linked"))
    world.sets = world.sets[1:]
    assert judge(world, KINDS).verdicts[0].outcome == outcome


def test_an_exit_the_run_did_not_cause_is_unexpected() -> None:
    world = delivered_world(
        exits=[ProcessExit("worker", -9, True), ProcessExit("telegram-gateway", 1, False)]
    )
    ledger = judge(world, KINDS)
    assert ledger.unexpected_exits == ["telegram-gateway exited with 1"]
    assert not ledger.ok
    assert ledger.summary().endswith("unexpected_exits=1")


def test_the_table_has_a_row_per_injected_kind() -> None:
    world = delivered_world(injected=Counter({"tg:429": 3, "ai:credit": 4}))
    world.guests[0] = Guest(1, "astronaut", True, 202, job_id="j1", accepted_at=T0, targeted=("tg:429",))
    table = judge(world, KINDS).table().splitlines()
    assert table[1].split() == ["ai:credit", "4", "0", "0", "0"]
    assert table[2].split() == ["tg:429", "3", "1", "0", "0"]
    assert table[3].split() == ["-", "-", "1", "0", "0"]


def test_a_start_answered_late_lets_the_guest_down_unless_their_own_chat_was_held() -> None:
    world = delivered_world()
    world.guests[0] = Guest(1, "jpeg", True, 202, job_id="j1", accepted_at=T0, started_at=T0 + 30)
    assert judge(world, KINDS).verdicts[0].outcome == DELIVERED  # answered 30 s after Start
    world.guests[0] = Guest(1, "jpeg", True, 202, job_id="j1", accepted_at=T0, started_at=T0 - 10)
    verdict = judge(world, KINDS).verdicts[0]
    assert verdict.outcome == LET_DOWN and verdict.reason == "the bot answered Start after 70s"
    world.guests[0] = Guest(
        1, "jpeg", True, 202, job_id="j1", accepted_at=T0, started_at=T0 - 10, targeted=("tg:hold-own-chat",)
    )
    assert judge(world, KINDS).verdicts[0].outcome == DELIVERED


def test_the_links_preview_sticker_is_allowed_once_and_only_with_a_link() -> None:
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), en("generating"), link("a_by_bot"), "[sticker a_by_bot]")
    assert judge(world, KINDS).ok
    world.messages[1].append(BotMessage(1, "[sticker a_by_bot]", T0 + 99, 9))
    assert judge(world, KINDS).duplicated == ["guest 1: message sent 2 times: '[sticker a_by_bot]'"]
    failed = delivered_world()
    failed.jobs["j1"] = JobRow("j1", "failed", "internal", 1)
    failed.messages[1] = msgs(1, en("linked"), en("failed"), "[sticker a_by_bot]")
    verdict = judge(failed, KINDS).verdicts[0]
    assert verdict.outcome == LET_DOWN and verdict.reason == "no link text: only the preview sticker"


# --- issue 19: what the ledger did not see --------------------------------------------------------------


def test_a_guest_with_only_the_preview_sticker_and_no_link_text_is_let_down() -> None:
    """A link whose answer was lost and never sent again: the job is ``delivered``, the preview came."""
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), en("generating"), "[sticker a_by_bot]")
    ledger = judge(world, KINDS)
    verdict = ledger.verdicts[0]
    assert verdict.outcome == LET_DOWN and verdict.reason == "no link text: only the preview sticker"
    assert not ledger.ok


def test_a_link_after_something_went_wrong_is_let_down_even_with_honest_words() -> None:
    world = delivered_world()
    honest = en("pack_ready_after_failure", link="https://t.me/addstickers/a_by_bot")
    world.messages[1] = msgs(1, en("linked"), en("generating"), en("failed"), honest)
    verdict = judge(world, KINDS).verdicts[0]
    assert verdict.outcome == LET_DOWN and verdict.reason == "a link after a failure text (failed)"


def test_a_link_past_the_deadline_is_delivered_only_with_the_sorry_words() -> None:
    late_at = T0 + 16 * 60
    sorry = en("pack_ready_late", link="https://t.me/addstickers/a_by_bot")
    world = delivered_world()
    world.messages[1] = msgs(1, en("linked"), en("generating"), sorry, at=late_at)
    ledger = judge(world, KINDS)
    assert ledger.verdicts[0].outcome == DELIVERED and ledger.ok, ledger.table()
    world.messages[1] = msgs(1, en("linked"), en("generating"), link("a_by_bot"), at=late_at)
    verdict = judge(world, KINDS).verdicts[0]
    assert verdict.outcome == LET_DOWN and "without a sorry" in verdict.reason


def test_a_late_link_in_other_words_counts_as_a_second_link() -> None:
    world = delivered_world()
    sorry = en("pack_ready_late", link="https://t.me/addstickers/a_by_bot")
    world.messages[1] = msgs(1, en("linked"), link("a_by_bot"), sorry)
    assert judge(world, KINDS).duplicated == ["guest 1: 2 links"]


def test_a_booth_auto_paused_for_a_reason_no_injected_fault_explains_lets_its_guests_down() -> None:
    """One guest's content refusal classed ``outage`` paused the whole booth while ``ai:credit`` (which
    explains only a ``credit`` pause) was injected too: the pause texts are not excused by it."""
    kinds = {
        **KINDS,
        "ai:credit": FaultKind("ai:credit", "paused", pauses=True, pause_reasons=frozenset({"credit"})),
    }
    world = delivered_world(injected=Counter({"ai:credit": 1}))
    world.messages[2] = msgs(2, en("linked"), en("generating"), en("unavailable"), link("b_by_bot"))
    world.pauses = [PauseSeen("auto", "credit")]
    assert judge(world, kinds).ok  # the credit pause is the injected fault's
    world.pauses = [PauseSeen("auto", "credit"), PauseSeen("auto", "outage"), PauseSeen("admin", "x")]
    ledger = judge(world, kinds)
    assert ledger.unexplained_pauses == ["auto pause (outage) that no injected fault explains"]
    verdict = ledger.verdicts[1]
    assert verdict.outcome == LET_DOWN and "without an injected pause" in verdict.reason
    assert not ledger.ok and "UNEXPLAINED PAUSE" in ledger.table()


def test_a_busy_answer_to_start_needs_an_injected_postgres_outage_and_comes_once_per_start() -> None:
    """The gateway answers a Start it could not record (Postgres unreachable) with "busy, press Start
    again": fine on the way only when the run took Postgres away, once per Start the guest pressed."""
    kinds = {**KINDS, "postgres_restart": FaultKind("postgres_restart", "delivered", store_busy=True)}
    world = delivered_world()
    world.messages[2] = msgs(2, en("busy"), en("busy"), en("linked"), en("generating"), link("b_by_bot"))
    world.guests[1] = Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0, starts=3)
    verdict = judge(world, kinds).verdicts[1]
    assert (verdict.outcome, verdict.reason) == (LET_DOWN, "busy text without an injected Postgres outage")
    world.injected = Counter({"postgres_restart": 1})
    ledger = judge(world, kinds)
    assert ledger.ok and ledger.verdicts[1].outcome == DELIVERED, ledger.table()
    world.guests[1] = Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0, starts=1)
    assert judge(world, kinds).duplicated == ["guest 2: message sent 2 times: " + repr(en("busy")[:60])]


def test_pressing_start_again_after_silence_is_fine_only_when_a_fault_could_eat_the_answer() -> None:
    """During a Postgres outage the gateway answers Start "busy" straight from the handler; a 5xx or a
    long flood wait on the guest's chat at that moment eats it, and the guest, hearing nothing, presses
    Start again (chaos run of 2026-12-03: two burst guests were judged never_linked). Silence with no such
    fault aimed at the guest is a bot that ignored them."""
    world = delivered_world(injected=Counter({"tg:hold-own-chat": 1}))
    world.guests[1] = Guest(2, "cmyk", True, 202, job_id="j2", accepted_at=T0, starts=2, silent_starts=1)
    verdict = judge(world, KINDS).verdicts[1]  # the fault was aimed at another guest
    assert (verdict.outcome, verdict.reason) == (
        LET_DOWN,
        "the bot never answered a Start (pressed again after silence)",
    )
    world.guests[1] = dataclasses.replace(world.guests[1], targeted=("tg:hold-own-chat",))
    ledger = judge(world, KINDS)
    assert ledger.ok and ledger.verdicts[1].outcome == DELIVERED, ledger.table()
