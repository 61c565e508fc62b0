"""The maintenance gate's rule for an unreadable database: let the guest through (spec/000)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from telegram import Chat, Message, Update, User

from shared.db import create_engine
from shared.repositories import Database
from telegram_gateway.maintenance_gate import MaintenanceGate

pytestmark = pytest.mark.integration


def private_update(user_id: int) -> Update:
    user = User(id=user_id, first_name="G", is_bot=False)
    chat = Chat(id=user_id, type="private")
    return Update(
        update_id=1,
        message=Message(message_id=1, date=datetime.now(UTC), chat=chat, from_user=user, text="hi"),
    )


async def test_an_unreadable_database_lets_the_guest_through() -> None:
    dead = Database(create_engine("postgresql://postgres@127.0.0.1:1/x", connect_timeout_s=1))
    gate = MaintenanceGate(db=dead, admin_ids=frozenset(), env_maintenance=False)
    context: Any = None
    await gate.check(private_update(5), context)  # returns: no ApplicationHandlerStop, no reply attempted
    await dead.dispose()


async def test_env_maintenance_stops_guests_but_not_admins(db: Database) -> None:
    from telegram.ext import ApplicationHandlerStop

    replies: list[str] = []

    class Recorder(Message):
        async def reply_text(self, text: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            replies.append(text)

    gate = MaintenanceGate(db=db, admin_ids=frozenset({1000}), env_maintenance=True)
    guest = Update(
        update_id=2,
        message=Recorder(
            message_id=2,
            date=datetime.now(UTC),
            chat=Chat(id=7, type="private"),
            from_user=User(id=7, first_name="G", is_bot=False, language_code="ru"),
            text="/start x",
        ),
    )
    with pytest.raises(ApplicationHandlerStop):
        await gate.check(guest, None)  # type: ignore[arg-type]
    assert replies == ["Стойка со стикерами на короткой паузе. Попробуй, пожалуйста, через несколько минут."]
    await gate.check(private_update(1000), None)  # type: ignore[arg-type]  # an admin passes
