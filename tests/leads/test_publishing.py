"""Publishing lead cards: one card per lead with buttons, the backoff table of spec/000 step by step on a
fake clock, the admin alert, the 20 messages per minute of a group, flood control, and a send that timed
out after Telegram delivered it (found in the chat instead of being sent twice)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from shared import streams
from shared.db.tables import tg_commands
from tests.leads.conftest import LEADS_CHAT, Rig

pytestmark = pytest.mark.integration
CHAT_NOT_FOUND = {"method": "sendMessage", "error_code": 400, "description": "Bad Request: chat not found"}


async def card_commands(rig: Rig) -> list[str]:
    """One step of the rig; the card commands the gateway executed in it."""
    return [c for c in await rig.step() if ":card:" in c]


async def test_a_lead_becomes_one_card_with_its_fields_and_take_and_spam_buttons(rig: Rig) -> None:
    stored = await rig.submit(utm={"utm_source": "ads"})
    await rig.settle()
    (card,) = await rig.chat()
    assert f"Lead #{stored.lead.id}" in card["text"] and "+7 999 000-00-00" in card["text"]
    assert "utm_source: ads" in card["text"]
    buttons = [b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row]
    assert buttons == [f"stickers_lead:{stored.lead.id}:{a}" for a in ("take", "spam")]
    post = await rig.post(stored.lead.id)
    assert (post.state, post.message_id, post.attempts) == ("posted", card["message_id"], 1)
    await rig.results()  # a redelivered result changes nothing
    assert await rig.gateway() == [] and len(await rig.chat()) == 1


async def test_only_one_card_is_in_flight_and_each_lead_gets_one_card(rig: Rig) -> None:
    numbers = [(await rig.submit(contact=f"+7 999 000-00-0{i}")).lead.id for i in range(4)]
    await rig.tick()
    await rig.tick()  # the first card has no outcome yet: nothing else is sent
    assert len(await rig.gateway()) == 1
    await rig.results()
    await rig.settle()
    texts = [m["text"] for m in await rig.chat()]
    assert [t.splitlines()[0] for t in texts] == [f"Lead #{n}" for n in numbers]


@pytest.mark.parametrize("failures", [1, 2, 3, 4, 5, 6])
async def test_each_failure_waits_the_backoff_of_spec_000_before_the_next_attempt(
    rig: Rig, failures: int
) -> None:
    await rig.fault(**CHAT_NOT_FOUND, count=failures)
    stored = await rig.submit()
    expected = [5, 15, 60, 300, 900, 900]
    await rig.step()
    for n in range(failures):
        post = await rig.post(stored.lead.id)
        assert (post.failures, post.state) == (n + 1, "pending")
        rig.clock.advance(expected[n] - 0.5)
        assert await card_commands(rig) == []  # not yet
        rig.clock.advance(0.5)
        assert await card_commands(rig) == [f"lead:{stored.lead.id}:card:{n + 2}"]  # exactly on time
    assert (await rig.post(stored.lead.id)).state == "posted"
    assert len(await rig.chat()) == 1


async def test_a_lead_failing_five_times_alerts_the_admin_at_most_every_30_minutes(rig: Rig) -> None:
    await rig.fault(**CHAT_NOT_FOUND, count=9)
    stored = await rig.submit()
    for delay in (0, 5, 15, 60, 300, 900, 900, 900, 900):
        rig.clock.advance(delay)
        await rig.step()
    async with rig.db.transaction() as repos:
        alerts = (
            await repos.conn.execute(
                sa.select(tg_commands.c.params["text"].astext)
                .where(tg_commands.c.method == "send_admin_message")
                .order_by(tg_commands.c.created_at)
            )
        ).all()
    # failures 5, 7 and 9 come 30 min apart and alert; 6 and 8 come 15 min after an alert and do not
    assert [a[0].split(" could not")[0] for a in alerts] == [f"Lead #{stored.lead.id}"] * 3
    assert [a[0].split(" times")[0][-1] for a in alerts] == ["5", "7", "9"]


async def test_the_group_gets_at_most_20_messages_per_minute(rig: Rig) -> None:
    await rig.sim.post("/sim/limits", {"group_per_minute": 20})
    for i in range(22):
        await rig.submit(contact=f"+7 999 111-22-{i:02d}")
    await rig.settle(rounds=60)
    assert len(await rig.chat()) == 20  # the bucket is empty; the simulator refused nothing
    assert all(call["ok"] for call in await rig.sends())
    rig.clock.advance(2.9)
    assert await rig.step() == []
    rig.clock.advance(0.1)  # one message per 3 s refills
    assert await rig.tick()


async def test_flood_control_from_the_simulator_is_waited_out_and_the_batch_waits(
    db: object, redis: object
) -> None:
    from tests.leads.conftest import make_rig

    rig, bot, runner = await make_rig(db, redis, max_retries=1)  # type: ignore[arg-type]
    try:
        first = await rig.submit(contact="+7 999 000-00-01")
        await rig.submit(contact="+7 999 000-00-02")
        await rig.fault(method="sendMessage", error_code=429, retry_after=1)
        await rig.tick()
        await rig.tick()  # the second card waits for the first
        assert len(await rig.gateway()) == 1  # python-telegram-bot waited retry_after, then sent it
        await rig.results()
        assert (await rig.post(first.lead.id)).state == "posted"
        await rig.settle()
        calls = await rig.sends()
        assert [c["ok"] for c in calls] == [False, True, True]
        assert calls[0]["error_code"] == 429 and len(await rig.chat()) == 2
    finally:
        await bot.shutdown()
        await rig.sim.http.close()
        await runner.cleanup()


async def the_wait_passes(rig: Rig, seconds: float) -> None:
    """``seconds`` pass for the outbox's deferred rows, the gateway's limiter and leads' clock; the
    gateway's reconciler then hints the rows that are due (here: the executor runs them)."""
    async with rig.db.transaction() as repos:
        back = timedelta(seconds=seconds)
        await repos.conn.execute(sa.update(tg_commands).values(not_before=tg_commands.c.not_before - back))
        due = await repos.tg_commands.due_for_dispatch(
            grace=timedelta(0), republish_after=timedelta(hours=1), limit=100
        )
    rig.clock.advance(seconds)
    for record in due:
        await rig.executor.execute(record.command_id)


async def test_a_long_flood_wait_from_telegram_holds_the_card_in_the_outbox_and_the_batch_behind_it(
    db: object, redis: object
) -> None:
    """End to end: the simulator's 429 (``retry_after`` 120) goes through the gateway's limiter and
    executor, which defers the card's command (issue 21): leads sees no failure, its post stays
    ``sending`` so the next card waits behind it, and the same command posts the card when the wait is
    over."""
    from tests.leads.conftest import make_rig

    rig, bot, runner = await make_rig(db, redis, fake_limiter_clock=True)  # type: ignore[arg-type]
    try:
        stored = await rig.submit(contact="+7 999 000-00-01")
        second = await rig.submit(contact="+7 999 000-00-02")
        await rig.fault(method="sendMessage", error_code=429, retry_after=120)
        await rig.step()
        post = await rig.post(stored.lead.id)
        assert (post.state, post.failures) == ("sending", 0)
        async with rig.db.transaction() as repos:
            (command,) = await repos.tg_commands.for_subject("lead_post", stored.lead.id, post="card")
        assert command.status == "pending" and command.attempt == 2
        rig.clock.advance(60)
        assert await card_commands(rig) == []  # the batch waits; nothing was asked again
        await the_wait_passes(rig, 121)
        await rig.settle()  # the card's outcome is applied (read from its row: its result came late)
        assert (await rig.post(stored.lead.id)).state == "posted"
        await rig.settle()  # then the next card goes
        assert (await rig.post(second.lead.id)).state == "posted" and len(await rig.chat()) == 2
        assert [c["ok"] for c in await rig.sends()] == [False, True, True]
    finally:
        await bot.shutdown()
        await rig.sim.http.close()
        await runner.cleanup()


@pytest.mark.parametrize("fault", ["drop_after_apply", "delay_after_apply"])
async def test_a_send_that_timed_out_after_delivery_is_found_not_sent_again(
    db: object, redis: object, fault: str
) -> None:
    from tests.leads.conftest import make_rig

    # a 1 s read timeout under a 3 s delay: 0.3 s left ordinary calls little room on a busy machine
    rig, bot, runner = await make_rig(db, redis, read_timeout=1.0)  # type: ignore[arg-type]
    try:
        stored = await rig.submit()
        await rig.fault(method="sendMessage", kind=fault, seconds=3)
        await rig.step()
        post = await rig.post(stored.lead.id)
        assert (post.state, post.failures) == ("unsure", 1)
        rig.clock.advance(4.9)
        assert await rig.step() == []  # the search waits the backoff too
        rig.clock.advance(0.1)
        await rig.settle()
        (card,) = await rig.chat()
        post = await rig.post(stored.lead.id)
        assert (post.state, post.message_id, post.attempts) == ("posted", card["message_id"], 1)
    finally:
        await bot.shutdown()
        await rig.sim.http.close()
        await runner.cleanup()


async def test_a_search_answered_with_flood_control_is_deferred_and_finds_the_card_after_the_wait(
    db: object, redis: object
) -> None:
    from tests.leads.conftest import make_rig

    rig, bot, runner = await make_rig(  # type: ignore[arg-type]
        db, redis, read_timeout=1.0, fake_limiter_clock=True
    )
    try:
        stored = await rig.submit()
        await rig.fault(method="sendMessage", kind="drop_after_apply")
        await rig.step()
        rig.clock.advance(5)
        await rig.fault(method="editMessageReplyMarkup", error_code=429, retry_after=120)
        await rig.step()
        post = await rig.post(stored.lead.id)
        assert (post.state, post.failures) == ("checking", 1)  # the 429 is no failure of the search
        await the_wait_passes(rig, 121)
        await rig.settle()
        (card,) = await rig.chat()
        assert (await rig.post(stored.lead.id)).message_id == card["message_id"]
    finally:
        await bot.shutdown()
        await rig.sim.http.close()
        await runner.cleanup()


async def test_a_send_dropped_before_delivery_is_searched_for_then_sent_once(rig: Rig) -> None:
    stored = await rig.submit()
    await rig.fault(method="sendMessage", kind="drop")
    await rig.step()
    assert (await rig.post(stored.lead.id)).state == "unsure"
    rig.clock.advance(5)
    await rig.settle()
    assert len(await rig.chat()) == 1
    assert (await rig.post(stored.lead.id)).attempts == 2


async def test_a_lost_result_is_read_from_the_command_row(rig: Rig) -> None:
    stored = await rig.submit()
    await rig.tick()
    await rig.gateway()
    await rig.redis.delete(streams.results_stream("leads"))  # Redis lost the answer
    rig.clock.advance(29)
    await rig.tick()
    assert (await rig.post(stored.lead.id)).state == "sending"
    rig.clock.advance(1)
    await rig.tick()
    assert (await rig.post(stored.lead.id)).state == "posted"


async def test_cards_wait_while_the_gateway_is_down_then_go_out_once_each(rig: Rig) -> None:
    numbers = [(await rig.submit(contact=f"+7 999 000-00-0{i}")).lead.id for i in range(3)]
    for _ in range(5):
        await rig.tick()  # no gateway: the command stays pending
        rig.clock.advance(60)
    post = await rig.post(numbers[0])
    assert (post.state, post.failures, post.attempts) == ("sending", 0, 1)
    await rig.settle()
    texts = [m["text"].splitlines()[0] for m in await rig.chat()]
    assert texts == [f"Lead #{n}" for n in numbers]


async def test_a_press_on_a_card_of_unknown_outcome_proves_it_was_posted(rig: Rig) -> None:
    stored = await rig.submit()
    await rig.fault(method="sendMessage", kind="drop_after_apply")
    await rig.step()
    (card,) = await rig.chat()
    await rig.press(7, card["message_id"], f"stickers_lead:{stored.lead.id}:take")
    post = await rig.post(stored.lead.id)
    assert (post.state, post.message_id) == ("posted", card["message_id"])
    rig.clock.advance(timedelta(minutes=20).total_seconds())
    await rig.settle()
    assert len(await rig.sends()) == 1 and LEADS_CHAT < 0
