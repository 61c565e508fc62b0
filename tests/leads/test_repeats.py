"""Repeats: a second lead from the same contact becomes a notice replying under the first card, with the
same delays as cards, and stops after 5 failures (spec/000 "Lead card publishing")."""

from __future__ import annotations

import pytest

from shared.repositories.lead_posts import NOTICE
from tests.leads.conftest import Rig

pytestmark = pytest.mark.integration


async def test_a_repeat_becomes_a_notice_under_the_first_card(rig: Rig) -> None:
    first = await rig.submit(message="First")
    repeat = await rig.submit(message="Second, with a date", request_id="request-repeat-1")
    assert repeat.repeat is not None and repeat.lead.id == first.lead.id
    await rig.settle()
    card, notice = await rig.chat()
    assert f"Lead #{first.lead.id}" in card["text"]
    assert notice["reply_to_message_id"] == card["message_id"]
    assert "wrote again" in notice["text"] and "Second, with a date" in notice["text"]
    callback = await rig.press(
        7, notice["message_id"], f"stickers_repeat:{repeat.repeat.id}:seen", name="Olga"
    )
    await rig.gateway()
    _card, notice = await rig.chat()
    assert "Seen by Olga" in notice["text"] and notice["reply_markup"] is None
    assert (await rig.sim.get(f"/sim/callbacks/{callback}"))["answered"]


async def test_a_repeat_waits_for_the_card_it_replies_to(rig: Rig) -> None:
    await rig.fault(method="sendMessage", error_code=400, description="Bad Request: chat not found")
    first = await rig.submit()
    await rig.step()  # the card failed: retried in 5 s
    await rig.submit(request_id="request-repeat-1")
    assert await rig.step() == []  # nothing to reply under yet
    rig.clock.advance(5)
    await rig.settle()
    card, notice = await rig.chat()
    assert f"Lead #{first.lead.id}" in card["text"] and notice["reply_to_message_id"] == card["message_id"]


async def test_a_failing_notice_uses_the_same_delays_and_stops_after_five_failures(rig: Rig) -> None:
    await rig.submit()
    await rig.settle()
    (card,) = await rig.chat()
    await rig.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 400, "count": 10})
    repeat = await rig.submit(request_id="request-repeat-1")
    assert repeat.repeat is not None
    sent_at = []
    for delay in (0, 5, 15, 60, 300, 900, 900, 900):
        rig.clock.advance(delay)
        if [c for c in await rig.step() if ":notice:" in c]:
            sent_at.append(delay)
    async with rig.db.transaction() as repos:
        post = await repos.lead_posts.get(NOTICE, repeat.repeat.id)
    assert post is not None and (post.state, post.failures, post.attempts) == ("failed", 5, 5)
    assert sent_at == [0, 5, 15, 60, 300]  # then nothing more
    assert len(await rig.chat()) == 1 and card
