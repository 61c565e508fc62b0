"""The leads' stream messages round-trip through stream fields (``stk:leads``, ``tg:updates:leads``)."""

from __future__ import annotations

import pytest

from shared.messages import LeadButtonPressed, LeadCreated, LeadRepeated, LeadsChatMessage, decode, encode

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "message",
    [
        LeadCreated(lead_id=3),
        LeadRepeated(repeat_id=2, lead_id=3),
        LeadButtonPressed(
            callback_query_id="42",
            data="stickers_lead:3:take",
            user_id=7,
            user_name="Olga K",
            username="olga",
            chat_id=-1001,
            message_id=9,
        ),
        LeadButtonPressed(callback_query_id="43", data="stickers_lead:3:done", user_id=7, user_name="Olga"),
        LeadsChatMessage(chat_id=-1001, message_id=10),
    ],
)
def test_lead_messages_round_trip(message: object) -> None:
    assert decode(encode(message)) == message  # type: ignore[arg-type]
