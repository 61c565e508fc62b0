"""Kiosk sessions: creation, outfit choice, consent, Telegram binding by deep-link token."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import sessions
from shared.domain import KioskSession
from shared.events import DEFAULT_EVENT
from shared.repositories._rows import from_row


def _session(row: Any) -> KioskSession:
    return from_row(KioskSession, row)


class SessionRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def create(self, *, station: str, token: str, event_id: str = DEFAULT_EVENT) -> KioskSession:
        """Insert a new session for kiosk ``station`` of event ``event_id`` with deep-link payload
        ``token``."""
        row = (
            await self.conn.execute(
                sa.insert(sessions)
                .values(id=uuid4(), token=token, station=station, event_id=event_id)
                .returning(sessions)
            )
        ).one()
        return _session(row)

    async def get(self, session_id: UUID, *, for_update: bool = False) -> KioskSession | None:
        query = sa.select(sessions).where(sessions.c.id == session_id)
        if for_update:
            query = query.with_for_update()
        row = (await self.conn.execute(query)).one_or_none()
        return _session(row) if row else None

    async def set_outfit(self, session_id: UUID, outfit_id: str) -> KioskSession | None:
        """Record the guest's outfit choice; ``None`` when the session does not exist."""
        row = (
            await self.conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id)
                .values(outfit_id=outfit_id)
                .returning(sessions)
            )
        ).one_or_none()
        return _session(row) if row else None

    async def record_consent(self, session_id: UUID, *, version: str, language: str) -> KioskSession | None:
        """Record the guest's "Agree" to consent text ``version`` shown in ``language``, at ``now()``.

        Idempotent: agreeing again to the version already recorded changes nothing (the first time and
        language stay); agreeing to another version (the venue changed the text) records that one.
        Returns ``None`` when the session does not exist.
        """
        row = (
            await self.conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id, sessions.c.consent_version.is_distinct_from(version))
                .values(consent_version=version, consent_language=language, consented_at=sa.func.now())
                .returning(sessions)
            )
        ).one_or_none()
        return _session(row) if row else await self.get(session_id)

    async def bind_telegram(
        self,
        token: str,
        *,
        user_id: int,
        chat_id: int,
        name: str | None,
        language: str | None,
        username: str | None = None,
    ) -> KioskSession | None:
        """Bind a Telegram user to the session with deep-link ``token``; ``name`` is their first name,
        ``username`` their ``@username`` without the ``@`` (``None`` when they have none).

        Succeeds when the session is unbound or already bound to the same user (pressing Start twice).
        Returns ``None`` for an unknown token or one bound to another user.
        """
        row = (
            await self.conn.execute(
                sa.update(sessions)
                .where(
                    sessions.c.token == token,
                    sa.or_(sessions.c.tg_user_id.is_(None), sessions.c.tg_user_id == user_id),
                )
                .values(
                    tg_user_id=user_id,
                    tg_chat_id=chat_id,
                    guest_name=name,
                    tg_username=username,
                    language=language,
                    bound_at=sa.func.coalesce(sessions.c.bound_at, sa.func.now()),
                    delivery="telegram",  # a guest who chose "no Telegram" and then linked after all
                )
                .returning(sessions)
            )
        ).one_or_none()
        return _session(row) if row else None

    async def choose_download(self, session_id: UUID) -> KioskSession | None:
        """The guest chose "no Telegram? get them here": ``delivery = 'download'``, only while no Telegram
        user is bound and no photo was taken (a job's pack goes where its session said when it was taken).
        Returns ``None`` when the session does not exist or is past that point."""
        row = (
            await self.conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id, sessions.c.tg_user_id.is_(None), sessions.c.captures == 0)
                .values(delivery="download")
                .returning(sessions)
            )
        ).one_or_none()
        return _session(row) if row else None

    async def unbind_telegram(self, session_id: UUID, *, token: str) -> KioskSession | None:
        """Undo :meth:`bind_telegram` ("not you?" on the kiosk, issue 13): forget the Telegram user, chat,
        name and language, the outfit and the consent, and give the session the new deep-link ``token``
        (the old QR code no longer binds). Returns ``None`` when the session does not exist.

        The caller holds the row (``get(..., for_update=True)``) and has checked that no job exists:
        a job's messages go to the chat its session names.
        """
        row = (
            await self.conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session_id)
                .values(
                    token=token,
                    tg_user_id=None,
                    tg_chat_id=None,
                    guest_name=None,
                    language=None,
                    bound_at=None,
                    outfit_id=None,
                    consent_version=None,
                    consent_language=None,
                    consented_at=None,
                )
                .returning(sessions)
            )
        ).one_or_none()
        return _session(row) if row else None

    async def count_capture(self, session_id: UUID) -> None:
        await self.conn.execute(
            sa.update(sessions).where(sessions.c.id == session_id).values(captures=sessions.c.captures + 1)
        )
