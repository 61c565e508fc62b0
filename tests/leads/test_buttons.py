"""Card buttons: a press changes the lead's status once (conditional update), edits the card in place to
show who pressed, and is answered; orphan buttons get a polite answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from leads.buttons import CALLBACK_ANSWER_TTL, ORPHAN
from shared.messages import LeadButtonPressed, LeadsChatMessage
from tests.leads.conftest import ADMIN, LEADS_CHAT, Rig

pytestmark = pytest.mark.integration


def pressed(callback_id: str, data: str, card: dict[str, Any], name: str) -> LeadButtonPressed:
    """Staff member 7 (``name``) pressed ``data`` on ``card``, as the gateway routes it."""
    return LeadButtonPressed(
        callback_query_id=callback_id,
        data=data,
        user_id=7,
        user_name=name,
        chat_id=LEADS_CHAT,
        message_id=card["message_id"],
    )


async def posted_card(rig: Rig) -> tuple[int, dict[str, Any]]:
    stored = await rig.submit()
    await rig.settle()
    (card,) = await rig.chat()
    return stored.lead.id, card


async def answer(rig: Rig, callback_id: str) -> str | None:
    body = await rig.sim.get(f"/sim/callbacks/{callback_id}")
    return body["answer"]["text"] if body["answered"] else None


def buttons(card: dict[str, Any]) -> list[str]:
    markup = card.get("reply_markup") or {"inline_keyboard": []}
    return [b["callback_data"].rsplit(":", 1)[1] for row in markup["inline_keyboard"] for b in row]


async def test_take_then_done_edit_the_card_in_place_showing_who_pressed(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    assert buttons(card) == ["take", "spam"]
    taken = await rig.press(
        7, card["message_id"], f"stickers_lead:{lead_id}:take", name="Olga", username="olga"
    )
    await rig.gateway()
    (card,) = await rig.chat()
    assert "Taken by Olga (@olga)" in card["text"] and buttons(card) == ["done", "spam"]
    assert await answer(rig, taken) == f"You took lead #{lead_id}."
    done = await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:done", name="Olga")
    await rig.gateway()
    (card,) = await rig.chat()
    assert "Done by Olga" in card["text"] and buttons(card) == ["reopen"]
    assert await answer(rig, done) == f"Lead #{lead_id} is done."
    async with rig.db.transaction() as repos:
        lead = await repos.leads.get(lead_id)
    assert lead is not None and (lead.status, lead.status_by_id, lead.taken_by_id) == ("done", 7, 7)


async def test_only_the_holder_or_an_admin_may_finish_a_lead_others_are_told_who_holds_it(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:take", name="Olga", username="olga")
    await rig.gateway()
    for action in ("done", "spam"):
        refused = await rig.press(8, card["message_id"], f"stickers_lead:{lead_id}:{action}", name="Ivan")
        await rig.gateway()
        body = await rig.sim.get(f"/sim/callbacks/{refused}")
        assert body["answer"]["show_alert"] is True
        assert body["answer"]["text"] == (
            f"Lead #{lead_id} is held by Olga (@olga). Only they or an admin can mark it {action}."
        )
    (card,) = await rig.chat()
    assert "Taken by Olga (@olga)" in card["text"] and buttons(card) == ["done", "spam"]
    await rig.press(ADMIN, card["message_id"], f"stickers_lead:{lead_id}:done", name="Boss")
    await rig.gateway()
    (card,) = await rig.chat()
    assert "Done by Boss" in card["text"] and "Taken by Olga (@olga)" in card["text"]
    async with rig.db.transaction() as repos:
        lead = await repos.leads.get(lead_id)
    assert lead is not None and (lead.status, lead.status_by_id, lead.taken_by_id) == ("done", ADMIN, 7)


async def test_reopen_gives_a_done_lead_back_to_its_holder_and_only_they_or_an_admin_may(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:take", name="Olga")
    await rig.gateway()
    await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:done", name="Olga")
    await rig.gateway()
    refused = await rig.press(8, card["message_id"], f"stickers_lead:{lead_id}:reopen", name="Ivan")
    await rig.gateway()
    body = await rig.sim.get(f"/sim/callbacks/{refused}")
    assert body["answer"]["show_alert"] is True and "held by Olga" in body["answer"]["text"]
    reopened = await rig.press(ADMIN, card["message_id"], f"stickers_lead:{lead_id}:reopen", name="Boss")
    await rig.gateway()
    assert await answer(rig, reopened) == f"Lead #{lead_id} is open again."
    (card,) = await rig.chat()
    assert "Taken by Olga" in card["text"] and "Reopened by Boss" in card["text"]
    assert buttons(card) == ["done", "spam"]
    await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:done", name="Olga")  # she finishes
    await rig.gateway()
    async with rig.db.transaction() as repos:
        lead = await repos.leads.get(lead_id)
    assert lead is not None and (lead.status, lead.status_version) == ("done", 4)


async def test_a_lead_nobody_took_is_spammed_and_reopened_by_anyone_and_done_only_after_a_take(
    rig: Rig,
) -> None:
    lead_id, card = await posted_card(rig)
    # a card posted before Done left new cards: its Done button reaches the service
    early = await rig.sim.post(
        "/sim/callbacks",
        {"user_id": 8, "chat_id": LEADS_CHAT, "message_id": card["message_id"], "data": card_data(card)},
    )
    await rig.service.buttons.press(
        LeadButtonPressed(
            callback_query_id=early["id"],
            data=f"stickers_lead:{lead_id}:done",
            user_id=8,
            user_name="Ivan",
            chat_id=LEADS_CHAT,
            message_id=card["message_id"],
        )
    )
    await rig.gateway()
    body = await rig.sim.get(f"/sim/callbacks/{early['id']}")
    assert body["answer"]["show_alert"] is True and body["answer"]["text"].startswith(f"Take lead #{lead_id}")
    await rig.press(8, card["message_id"], f"stickers_lead:{lead_id}:spam", name="Ivan")
    await rig.gateway()
    await rig.press(9, card["message_id"], f"stickers_lead:{lead_id}:reopen", name="Anna")
    await rig.gateway()
    (card,) = await rig.chat()
    assert "Reopened by Anna" in card["text"] and buttons(card) == ["take", "spam"]
    async with rig.db.transaction() as repos:
        lead = await repos.leads.get(lead_id)
    assert lead is not None and (lead.status, lead.taken_by_id, lead.status_by_id) == ("new", None, 9)


async def test_two_staff_pressing_take_at_once_get_one_winner(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    data = f"stickers_lead:{lead_id}:take"
    ids = await asyncio.gather(rig.press(7, card["message_id"], data), rig.press(8, card["message_id"], data))
    await rig.gateway()
    answers = sorted([await answer(rig, i) or "" for i in ids])
    assert answers[1] == f"You took lead #{lead_id}."
    assert answers[0].startswith(f"Lead #{lead_id} is already taken by Staff ")
    edits = await rig.sim.get("/sim/calls?method=editMessageText")
    assert len(edits) == 1


async def test_a_redelivered_press_answers_and_edits_once(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    callback_id = await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:spam")
    await rig.service.buttons.press(pressed(callback_id, f"stickers_lead:{lead_id}:spam", card, "Staff 7"))
    executed = await rig.gateway()
    assert sorted(executed) == sorted([f"cbq:{callback_id}", f"lead:{lead_id}:edit:1"])


@pytest.mark.parametrize("data", ["stickers_lead:999999:take", "stickers_lead:1:explode", "stickers_other"])
async def test_orphan_buttons_get_a_polite_answer(rig: Rig, data: str) -> None:
    _lead_id, card = await posted_card(rig)
    # a real press in the simulator (so it can be answered); the data the gateway routes is the orphan
    callback = await rig.sim.post(
        "/sim/callbacks",
        {"user_id": 7, "chat_id": LEADS_CHAT, "message_id": card["message_id"], "data": card_data(card)},
    )
    await rig.service.buttons.press(
        LeadButtonPressed(
            callback_query_id=callback["id"],
            data=data,
            user_id=7,
            user_name="Staff",
            chat_id=LEADS_CHAT,
            message_id=card["message_id"],
        )
    )
    await rig.gateway()
    assert await answer(rig, callback["id"]) == ORPHAN
    assert await rig.sim.get("/sim/calls?method=editMessageText") == []


def card_data(card: dict[str, Any]) -> str:
    return str(card["reply_markup"]["inline_keyboard"][0][0]["callback_data"])


async def test_message_ids_seen_in_the_chat_raise_the_search_floor(rig: Rig) -> None:
    await rig.service.buttons.note_chat_message(LeadsChatMessage(chat_id=LEADS_CHAT, message_id=41))
    await rig.service.buttons.note_chat_message(LeadsChatMessage(chat_id=LEADS_CHAT, message_id=17))
    async with rig.db.transaction() as repos:
        chat = await repos.lead_posts.lock_chat(LEADS_CHAT, now=rig.clock(), capacity=20)
    assert chat is not None and chat.last_message_id == 41


async def test_a_card_edit_held_by_a_long_flood_wait_is_sent_when_it_ends_and_a_newer_one_cancels_it(
    db: object, redis: object
) -> None:
    from datetime import timedelta

    import sqlalchemy as sa

    from shared.db.tables import tg_commands
    from tests.leads.conftest import make_rig

    rig, bot, runner = await make_rig(db, redis, fake_limiter_clock=True)  # type: ignore[arg-type]
    try:
        lead_id, card = await posted_card(rig)
        await rig.fault(method="editMessageText", error_code=429, retry_after=120)
        await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:take", name="Olga")
        await rig.gateway()
        (card,) = await rig.chat()
        assert "Taken by Olga" not in card["text"]  # Telegram applied nothing
        async with rig.db.transaction() as repos:
            (taken,) = await repos.tg_commands.for_subject("lead_post", lead_id, post="card", op="edit")
        assert taken.status == "pending" and taken.attempt == 2  # the same row waits in the outbox

        await rig.gateway()  # a redelivered hint before the wait is over sends nothing
        assert [c["ok"] for c in await rig.sim.get("/sim/calls?method=editMessageText")] == [False]
        async with rig.db.transaction() as repos:  # 121 s pass, for the rows and the gateway's limiter
            shift = timedelta(seconds=121)
            await repos.conn.execute(
                sa.update(tg_commands).values(not_before=tg_commands.c.not_before - shift)
            )
        rig.clock.advance(121)
        await rig.executor.execute(taken.command_id)  # the reconciler's hint, once due
        (card,) = await rig.chat()
        assert "Taken by Olga" in card["text"]

        # a newer press while an older edit still waits: the older one is cancelled, never shown late
        await rig.fault(method="editMessageText", error_code=429, retry_after=120)
        await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:done", name="Olga")
        await rig.gateway()
        # the card still shows Done: a press the chat had before the edit
        await rig.service.buttons.press(pressed("reopen-1", f"stickers_lead:{lead_id}:reopen", card, "Olga"))
        async with rig.db.transaction() as repos:
            edits = await repos.tg_commands.for_subject("lead_post", lead_id, post="card", op="edit")
        assert [(r.subject or {}).get("n") for r in edits] == [1, 2, 3]
        assert [r.status for r in edits] == ["sent", "cancelled", "pending"]
    finally:
        await bot.shutdown()
        await rig.sim.http.close()
        await runner.cleanup()


async def test_a_press_answer_expires_when_telegram_would_refuse_it(rig: Rig) -> None:
    lead_id, card = await posted_card(rig)
    callback_id = await rig.press(7, card["message_id"], f"stickers_lead:{lead_id}:spam")
    async with rig.db.transaction() as repos:
        record = await repos.tg_commands.get(f"cbq:{callback_id}")
    assert record is not None and record.expires_at == rig.clock() + CALLBACK_ANSWER_TTL
