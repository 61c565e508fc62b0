"""Erasing a guest also deletes the updates their Telegram sent by webhook (``tg_updates``, issue 22): the
handled ones from that user or in that chat go; another guest's, and one still being handled, stay."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from shared.db.tables import sessions, tg_updates
from shared.repositories import Database

pytestmark = [pytest.mark.integration]

GUEST, OTHER = 5001, 6001


def _message(update_id: int, user: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 1,
            "date": 1,
            "chat": {"id": user, "type": "private"},
            "from": {"id": user, "is_bot": False, "first_name": "Ann"},
            "text": "hello",
        },
    }


def _press(update_id: int, user: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": "1",
            "from": {"id": user, "is_bot": False, "first_name": "Ann"},
            "chat_instance": "1",
            "data": "x",
            "message": {"message_id": 2, "date": 1, "chat": {"id": user, "type": "private"}},
        },
    }


async def test_erasing_a_guest_deletes_their_handled_updates_only(db: Database) -> None:
    now = datetime.now(UTC)
    session_id = uuid.uuid4()
    rows = [
        (1, _message(1, GUEST), now),
        (2, _press(2, GUEST), now),
        (3, _message(3, GUEST), None),  # being handled (the /delete itself): its handler marks it
        (4, _message(4, OTHER), now),
    ]
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.insert(sessions).values(
                id=session_id, token="t-1", station="st", tg_user_id=GUEST, tg_chat_id=GUEST
            )
        )
        await repos.conn.execute(
            sa.insert(tg_updates),
            [{"update_id": u, "body": body, "handled_at": at} for u, body, at in rows],
        )
    async with db.transaction() as repos:
        erased = await repos.erasure.erase_sessions([session_id])
    assert erased.tg_updates == 2 and erased.counts()["tg_updates"] == 2
    async with db.transaction() as repos:
        left = [
            r[0] for r in await repos.conn.execute(sa.select(tg_updates.c.update_id).order_by("update_id"))
        ]
    assert left == [3, 4]
