"""``gateway_lease``: which telegram-gateway replica leads, for how long, in which generation (issue 22).

One row per lease name (the gateway's is :data:`GATEWAY_LEASE`). The leader renews it well before
``expires_at``; a standby takes it only once ``expires_at`` has passed, as the next ``epoch``. Every time
is Postgres's ``clock_timestamp()`` (never a replica's clock, and not ``now()``, which is the start of a
transaction): a leader that is killed, loses its node or is cut off from Postgres simply stops renewing,
and its lease lapses ``ttl`` after the last renewal, whatever became of its connection.

A claim of work is fenced by the lease (:func:`lease_is_current`): ``tg_commands`` ``pending → sending``
requires, in the same statement, that the claimer's ``(holder, epoch)`` is the row's and not expired,
reading the row ``FOR SHARE`` so that a takeover (an ``UPDATE`` of the row) waits for a claim in progress
and a claim after a takeover sees the new holder. An old leader that wakes after a partition claims
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import gateway_lease

#: The telegram-gateway's lease: the replica holding it executes the outbox and polls Telegram.
GATEWAY_LEASE = "telegram-gateway"


@dataclass(frozen=True)
class LeaseClaim:
    """A replica's hold on a lease: ``holder`` (the replica's unique name) in generation ``epoch``;
    ``expires_at``: when it lapses unless renewed (Postgres's clock)."""

    holder: str
    epoch: int
    expires_at: datetime


def _held_now(holder: str, epoch: int, name: str) -> tuple[sa.ColumnElement[bool], ...]:
    """The conditions "lease ``name`` is ``(holder, epoch)``'s and has not expired" (Postgres's clock)."""
    return (
        gateway_lease.c.name == name,
        gateway_lease.c.holder == holder,
        gateway_lease.c.epoch == epoch,
        gateway_lease.c.expires_at > sa.func.clock_timestamp(),
    )


def lease_is_current(holder: str, epoch: int, name: str = GATEWAY_LEASE) -> sa.ColumnElement[bool]:
    """SQL: ``(holder, epoch)`` holds lease ``name`` right now (not expired), the row read ``FOR SHARE``
    (a takeover waits for the statement's transaction; see the module docstring)."""
    current = (
        sa.select(sa.literal(1))
        .select_from(gateway_lease)
        .where(*_held_now(holder, epoch, name))
        .with_for_update(read=True)
    )
    return sa.exists(current)


class GatewayLeaseRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def take(self, holder: str, *, ttl: timedelta, name: str = GATEWAY_LEASE) -> LeaseClaim | None:
        """Take lease ``name`` for ``ttl`` when nobody holds it (no row yet: epoch 1) or it has expired
        (epoch + 1). ``None`` while another replica's lease runs (even when it is ``holder``'s own older
        claim: a replica that lost its lease takes it again as a new epoch, never resumes the old one)."""
        expires = sa.func.clock_timestamp() + ttl
        statement = (
            insert(gateway_lease)
            .values(name=name, holder=holder, epoch=1, expires_at=expires, taken_at=sa.func.clock_timestamp())
            .on_conflict_do_update(
                index_elements=[gateway_lease.c.name],
                set_={
                    "holder": holder,
                    "epoch": gateway_lease.c.epoch + 1,
                    "expires_at": expires,
                    "taken_at": sa.func.clock_timestamp(),
                },
                where=gateway_lease.c.expires_at <= sa.func.clock_timestamp(),
            )
            .returning(gateway_lease.c.holder, gateway_lease.c.epoch, gateway_lease.c.expires_at)
        )
        row = (await self.conn.execute(statement)).one_or_none()
        return LeaseClaim(row.holder, row.epoch, row.expires_at) if row else None

    async def renew(
        self, holder: str, epoch: int, *, ttl: timedelta, name: str = GATEWAY_LEASE
    ) -> LeaseClaim | None:
        """Extend ``(holder, epoch)``'s lease to ``ttl`` from now; ``None`` when it is not theirs any more
        or has already expired (then it may have been taken: the holder must :meth:`take` it anew)."""
        row = (
            await self.conn.execute(
                sa.update(gateway_lease)
                .where(*_held_now(holder, epoch, name))
                .values(expires_at=sa.func.clock_timestamp() + ttl)
                .returning(gateway_lease.c.holder, gateway_lease.c.epoch, gateway_lease.c.expires_at)
            )
        ).one_or_none()
        return LeaseClaim(row.holder, row.epoch, row.expires_at) if row else None

    async def release(self, holder: str, epoch: int, *, name: str = GATEWAY_LEASE) -> bool:
        """End ``(holder, epoch)``'s lease now (a graceful stop), so a standby takes it on its next try
        instead of after the TTL. ``False`` when it was not theirs."""
        result = await self.conn.execute(
            sa.update(gateway_lease)
            .where(*_held_now(holder, epoch, name))
            .values(expires_at=sa.func.clock_timestamp())
        )
        return bool(result.rowcount)

    async def current(self, name: str = GATEWAY_LEASE) -> LeaseClaim | None:
        """The lease's row as it stands (expired or not), or ``None`` when it was never taken."""
        row = (
            await self.conn.execute(
                sa.select(gateway_lease.c.holder, gateway_lease.c.epoch, gateway_lease.c.expires_at).where(
                    gateway_lease.c.name == name
                )
            )
        ).one_or_none()
        return LeaseClaim(row.holder, row.epoch, row.expires_at) if row else None
