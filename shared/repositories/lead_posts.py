"""Publication state of what the leads service posts into the staff chat: lead cards and repeat notices.

Both kinds share one state machine (:class:`shared.domain.PostState`, its edges declared once in
:data:`ALLOWED`; only a notice gives up, ``→ failed``) and one set of conditional updates: every transition
names the post, the state it expects and the attempt (or probe) number of the command whose outcome it
applies, so a late or repeated result can never move a post twice. An edge :data:`ALLOWED` does not declare
is refused before any SQL runs (:class:`shared.errors.UndeclaredTransition`), as the job's are. Times are
passed in by the caller (the publisher's clock), never taken from the database, so backoff is testable.

``lead_chats`` holds the per-chat pacing row; :meth:`LeadPostRepository.lock_chat` locks it, which
serialises publishing across replicas of the leads service. A transaction that writes both the chat row
and a post row writes the chat row first, so two of them can never wait for each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import lead_chats, lead_repeats, leads
from shared.domain import IN_FLIGHT_POST_STATES, LeadChat, LeadPost, PostState
from shared.errors import UndeclaredTransition
from shared.repositories._rows import from_row

CARD = "card"
NOTICE = "notice"
_PENDING, _SENDING, _UNSURE = PostState.PENDING, PostState.SENDING, PostState.UNSURE
_CHECKING, _POSTED, _FAILED = PostState.CHECKING, PostState.POSTED, PostState.FAILED

#: The publication machine's edges, ``from → {to, …}``: the only place they are declared. A send is
#: ``pending → sending``, then ``posted``, back to ``pending`` (failed), ``failed`` (a
#: notice gives up) or ``unsure`` (the outcome is unknown); an unsure post is searched for (``unsure →
#: checking``) and found (``posted``), not found (``pending``) or the search failed (``unsure``). A message
#: found in the chat marks any unposted state ``posted``.
ALLOWED: dict[PostState, frozenset[PostState]] = {
    _PENDING: frozenset({_SENDING, _POSTED}),
    _SENDING: frozenset({_POSTED, _PENDING, _FAILED, _UNSURE}),
    _UNSURE: frozenset({_CHECKING, _POSTED}),
    _CHECKING: frozenset({_POSTED, _PENDING, _UNSURE}),
    _POSTED: frozenset(),
    _FAILED: frozenset({_POSTED}),
}


@dataclass(frozen=True)
class _Kind:
    table: sa.Table
    lead_id: sa.ColumnElement[Any]
    message_id: sa.Column[Any]
    posted_at: sa.Column[Any]


_KINDS = {
    CARD: _Kind(leads, leads.c.id, leads.c.card_message_id, leads.c.published_at),
    NOTICE: _Kind(
        lead_repeats, lead_repeats.c.lead_id, lead_repeats.c.message_id, lead_repeats.c.notified_at
    ),
}


def _columns(kind: str) -> list[sa.ColumnElement[Any]]:
    k = _KINDS[kind]
    t = k.table
    return [
        sa.literal(kind).label("kind"),
        t.c.id,
        k.lead_id.label("lead_id"),
        t.c.post_state.label("state"),
        t.c.attempts,
        t.c.probes,
        t.c.failures,
        t.c.next_attempt_at,
        t.c.last_attempt_at,
        t.c.probe_after,
        k.message_id.label("message_id"),
        t.c.created_at,
    ]


def _post(row: Any) -> LeadPost:
    return from_row(LeadPost, row)


def _chat(row: Any) -> LeadChat:
    return from_row(LeadChat, row)


def _failure(
    kind: str, state: PostState | sa.ColumnElement[Any], *, next_attempt_at: datetime, error: str
) -> dict[str, Any]:
    """The values of a move that counts one more consecutive failure: ``state``, due at ``next_attempt_at``,
    ``error`` kept as ``last_error`` (its first 500 characters)."""
    t = _KINDS[kind].table
    return {
        "post_state": state,
        "failures": t.c.failures + 1,
        "next_attempt_at": next_attempt_at,
        "last_error": error[:500],
    }


class LeadPostRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    # --- the chat ---------------------------------------------------------------------------------------

    async def lock_chat(self, chat_id: int, *, now: datetime, capacity: float) -> LeadChat | None:
        """Lock the chat's pacing row until commit (created with a full bucket of ``capacity`` tokens).

        Returns ``None`` when another transaction holds it: another replica is publishing right now.
        """
        await self.conn.execute(
            insert(lead_chats)
            .values(chat_id=chat_id, tokens=capacity, tokens_at=now)
            .on_conflict_do_nothing(index_elements=[lead_chats.c.chat_id])
        )
        row = (
            await self.conn.execute(
                sa.select(lead_chats).where(lead_chats.c.chat_id == chat_id).with_for_update(skip_locked=True)
            )
        ).one_or_none()
        return _chat(row) if row else None

    async def save_bucket(self, chat_id: int, *, tokens: float, tokens_at: datetime) -> None:
        await self.conn.execute(
            sa.update(lead_chats)
            .where(lead_chats.c.chat_id == chat_id)
            .values(tokens=tokens, tokens_at=tokens_at)
        )

    async def spend_token(self, chat_id: int) -> None:
        """Count one message that did not go through the publisher (a card edit); may go below zero."""
        await self.conn.execute(
            sa.update(lead_chats)
            .where(lead_chats.c.chat_id == chat_id)
            .values(tokens=lead_chats.c.tokens - 1)
        )

    async def note_message_id(self, chat_id: int, message_id: int, *, now: datetime, capacity: float) -> None:
        """Raise the chat's highest known message id to ``message_id`` (lower ids change nothing)."""
        stmt = insert(lead_chats).values(
            chat_id=chat_id, last_message_id=message_id, tokens=capacity, tokens_at=now
        )
        await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[lead_chats.c.chat_id],
                set_={"last_message_id": sa.func.greatest(lead_chats.c.last_message_id, message_id)},
            )
        )

    # --- reading posts ----------------------------------------------------------------------------------

    async def get(self, kind: str, post_id: int) -> LeadPost | None:
        table = _KINDS[kind].table
        row = (await self.conn.execute(sa.select(*_columns(kind)).where(table.c.id == post_id))).one_or_none()
        return _post(row) if row else None

    async def in_flight(self) -> list[LeadPost]:
        """Posts whose last command has no known outcome yet (``sending``, ``unsure``, ``checking``)."""
        posts: list[LeadPost] = []
        for kind, k in _KINDS.items():
            rows = await self.conn.execute(
                sa.select(*_columns(kind))
                .where(k.table.c.post_state.in_(IN_FLIGHT_POST_STATES))
                .order_by(k.table.c.id)
            )
            posts.extend(_post(r) for r in rows)
        return posts

    async def next_due(self, *, now: datetime) -> LeadPost | None:
        """The pending post that has waited longest: cards due at ``now``, and notices due at ``now``
        whose lead's card is posted (a notice replies under it). Ties go to cards, then to lower ids."""
        cards = sa.select(*_columns(CARD), sa.literal(0).label("rank")).where(
            leads.c.post_state == _PENDING,
            sa.or_(leads.c.next_attempt_at.is_(None), leads.c.next_attempt_at <= now),
        )
        notices = (
            sa.select(*_columns(NOTICE), sa.literal(1).label("rank"))
            .join(leads, leads.c.id == lead_repeats.c.lead_id)
            .where(
                lead_repeats.c.post_state == _PENDING,
                sa.or_(lead_repeats.c.next_attempt_at.is_(None), lead_repeats.c.next_attempt_at <= now),
                leads.c.post_state == _POSTED,
            )
        )
        both = sa.union_all(cards, notices).subquery()
        row = (
            await self.conn.execute(
                sa.select(*[c for c in both.c if c.name != "rank"])
                .order_by(sa.func.coalesce(both.c.next_attempt_at, both.c.created_at), both.c.rank, both.c.id)
                .limit(1)
            )
        ).one_or_none()
        return _post(row) if row else None

    async def posted_ids_after(self, message_id: int, *, limit: int = 100) -> list[int]:
        """Message ids of posted cards and notices above ``message_id`` (known: a probe must skip them)."""
        ids: list[int] = []
        for k in _KINDS.values():
            rows = await self.conn.execute(
                sa.select(k.message_id).where(k.message_id > message_id).order_by(k.message_id).limit(limit)
            )
            ids.extend(int(r[0]) for r in rows)
        return sorted(ids)[:limit]

    async def oldest_unposted_at(self) -> datetime | None:
        """``created_at`` of the oldest lead whose card is not posted yet (pending age)."""
        return (
            await self.conn.execute(
                sa.select(sa.func.min(leads.c.created_at)).where(leads.c.post_state != _POSTED)
            )
        ).scalar()

    # --- transitions ------------------------------------------------------------------------------------

    async def _move(
        self,
        kind: str,
        post_id: int,
        *,
        states: Sequence[PostState],
        to: Sequence[PostState],
        values: dict[str, Any],
        attempt: int | None = None,
        probe: int | None = None,
    ) -> LeadPost | None:
        """Move the post from one of ``states`` to one of ``to`` (``values`` sets ``post_state``) when its
        attempt (probe) number is ``attempt`` (``probe``); ``None`` when it is elsewhere.

        Raises:
            UndeclaredTransition: an edge from ``states`` to ``to`` is not in :data:`ALLOWED` (a bug;
                before any SQL).
        """
        undeclared = [f"{a} → {b}" for a in states for b in to if PostState(b) not in ALLOWED[PostState(a)]]
        if undeclared or not states or not to:
            raise UndeclaredTransition(f"lead post move {undeclared or 'from/to nothing'} is not in ALLOWED")
        table = _KINDS[kind].table
        conditions = [table.c.id == post_id, table.c.post_state.in_(list(states))]
        if attempt is not None:
            conditions.append(table.c.attempts == attempt)
        if probe is not None:
            conditions.append(table.c.probes == probe)
        row = (
            await self.conn.execute(
                sa.update(table).where(*conditions).values(**values).returning(*_columns(kind))
            )
        ).one_or_none()
        return _post(row) if row else None

    async def start_send(self, post: LeadPost, *, now: datetime, probe_after: int) -> LeadPost | None:
        """``pending → sending`` as attempt ``post.attempts + 1``, remembering the chat's highest known
        message id (``probe_after``) in case the outcome of this send is never known."""
        t = _KINDS[post.kind].table
        return await self._move(
            post.kind,
            post.id,
            states=[_PENDING],
            to=[_SENDING],
            attempt=post.attempts,
            values={
                "post_state": _SENDING,
                "attempts": t.c.attempts + 1,
                "last_attempt_at": now,
                "probe_after": probe_after,
            },
        )

    async def start_probe(self, post: LeadPost, *, now: datetime) -> LeadPost | None:
        """``unsure → checking`` as probe ``post.probes + 1``: the chat is searched for the sent message."""
        t = _KINDS[post.kind].table
        return await self._move(
            post.kind,
            post.id,
            states=[_UNSURE],
            to=[_CHECKING],
            probe=post.probes,
            values={"post_state": _CHECKING, "probes": t.c.probes + 1, "last_attempt_at": now},
        )

    async def mark_posted(
        self, kind: str, post_id: int, *, message_id: int, chat_id: int, now: datetime
    ) -> bool:
        """Any unposted state ``→ posted`` with the message's id; ``False`` when it was posted already."""
        k = _KINDS[kind]
        values: dict[str, Any] = {
            "post_state": _POSTED,
            k.message_id.name: message_id,
            k.posted_at.name: now,
            "failures": 0,
            "next_attempt_at": None,
            "last_error": None,
        }
        if kind == CARD:
            values["card_chat_id"] = chat_id
        unposted = [s for s in PostState if s != _POSTED]
        moved = await self._move(kind, post_id, states=unposted, to=[_POSTED], values=values)
        return moved is not None

    async def send_failed(
        self,
        kind: str,
        post_id: int,
        attempt: int,
        *,
        next_attempt_at: datetime,
        error: str,
        give_up_after: int | None = None,
    ) -> LeadPost | None:
        """``sending → pending`` with one more consecutive failure, due at ``next_attempt_at``; ``→ failed``
        instead once the failures reach ``give_up_after`` (repeat notices)."""
        t = _KINDS[kind].table
        state: PostState | sa.ColumnElement[Any] = _PENDING
        if give_up_after is not None:
            state = sa.case((t.c.failures + 1 >= give_up_after, _FAILED.value), else_=_PENDING.value)
        return await self._move(
            kind,
            post_id,
            states=[_SENDING],
            to=[_PENDING] if give_up_after is None else [_PENDING, _FAILED],
            attempt=attempt,
            values=_failure(kind, state, next_attempt_at=next_attempt_at, error=error),
        )

    async def send_unsure(
        self, kind: str, post_id: int, attempt: int, *, next_attempt_at: datetime, error: str
    ) -> LeadPost | None:
        """``sending → unsure``: the send may have reached Telegram. Counted as a failure; the chat is
        searched at ``next_attempt_at`` before anything is sent again."""
        return await self._move(
            kind,
            post_id,
            states=[_SENDING],
            to=[_UNSURE],
            attempt=attempt,
            values=_failure(kind, _UNSURE, next_attempt_at=next_attempt_at, error=error),
        )

    async def probe_absent(self, kind: str, post_id: int, probe: int, *, now: datetime) -> LeadPost | None:
        """``checking → pending``, due at once: the message is not in the chat, so sending it again cannot
        duplicate it (the backoff was served while ``unsure``)."""
        return await self._move(
            kind,
            post_id,
            states=[_CHECKING],
            to=[_PENDING],
            probe=probe,
            values={"post_state": _PENDING, "next_attempt_at": now},
        )

    async def probe_failed(
        self, kind: str, post_id: int, probe: int, *, next_attempt_at: datetime, error: str
    ) -> LeadPost | None:
        """``checking → unsure`` with one more failure: the search itself failed; search again later."""
        return await self._move(
            kind,
            post_id,
            states=[_CHECKING],
            to=[_UNSURE],
            probe=probe,
            values=_failure(kind, _UNSURE, next_attempt_at=next_attempt_at, error=error),
        )

    async def claim_alert(self, lead_id: int, *, now: datetime, every: timedelta) -> bool:
        """Whether the caller may alert about lead ``lead_id`` now: at most once per ``every``, one winner
        across replicas (conditional update of ``alerted_at``)."""
        result = await self.conn.execute(
            sa.update(leads)
            .where(
                leads.c.id == lead_id, sa.or_(leads.c.alerted_at.is_(None), leads.c.alerted_at <= now - every)
            )
            .values(alerted_at=now)
        )
        return bool(result.rowcount)
