"""Which gateway replica leads: a lease in Postgres, a hot standby, fencing (issue 22; DESIGN.md §2).

Telegram allows one ``getUpdates`` consumer per token (REFERENCE.md) and every command must be sent at
most once, so exactly one replica does the gateway's Telegram work: it executes ``tg:outbox``, polls in
polling mode and runs the periodic duties. Until issue 22 that was whoever held a session-level advisory
lock, and a second gateway refused to start (exit 1): a lock lives as long as its connection, so a leader
on a lost node or behind a partition kept it until Postgres noticed the dead TCP connection, and nobody
could take over meanwhile. Now any number of replicas start; the one holding the ``gateway_lease`` row
(:mod:`shared.repositories.gateway_lease`) leads and the others wait, trying to take it every
``ttl / 6`` seconds.

- The leader renews the lease every ``ttl / 3`` (default TTL 6 s: every 2 s). Each renewal is measured
  from *before* the statement was sent, so this replica's idea of its lease always ends before Postgres's.
- It fences itself: when no renewal succeeded by that end minus a margin (``ttl / 6``), ``held`` is
  cleared (nothing new is claimed, fetched or ticked) even if Postgres cannot be reached to say so, and the
  replica becomes a standby that tries to take the lease anew (as a new epoch; never the old one).
- A standby takes the lease once ``expires_at`` has passed, as ``epoch + 1``: a leader that was SIGKILLed,
  lost its node, or is partitioned from Postgres stops renewing, so the lease lapses at most ``ttl`` after
  its last renewal, whatever became of its connection; the standby holds it within ``ttl + ttl / 6`` (7 s).
- Nothing is claimed on a stale lease: ``tg_commands`` ``pending → sending`` requires the claimer's
  ``(holder, epoch)`` to hold the lease in the same statement
  (:meth:`shared.repositories.tg_commands.TelegramCommandRepository.start_sending`), so an old leader
  that wakes after a partition, before it noticed, claims nothing.
- A graceful stop (SIGTERM, a rolling update) ends the lease at once, so the standby takes over on its next
  try instead of after the TTL.

``held`` (:class:`asyncio.Event`) stays the one signal "this replica leads": polling, the executor, the
``tg:outbox`` consumer, the menu and the duties wait on it, as they did on the lock. ``stk_gateway_leader``
is 1 while it is set.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import structlog

from shared import metrics
from shared.errors import UnavailableError
from shared.repositories import Database
from shared.repositories.gateway_lease import LeaseClaim
from shared.streams import sleep_or_stop

log = structlog.get_logger(__name__)

#: ``GATEWAY_LEASE_TTL_SEC``'s default: a dead leader is replaced within ~7 s (the issue asks 10 s).
LEASE_TTL_S = 6.0


class GatewayLease:
    """Keeps (or waits for) the gateway lease for one replica; run :meth:`keep` as a long task.

    Args:
        db: a :class:`Database` of its own (one connection is enough), so renewals never queue behind the
            gateway's other work for a pooled connection.
        holder: this replica's unique name (host, pid and a random part: a restarted replica is a new
            holder).
        ttl_s: the lease's time to live (s). Renewal every ``ttl_s / 3``, fencing ``ttl_s / 6`` before its
            end, a standby's try every ``ttl_s / 6``; each statement is bounded by ``ttl_s / 3``.
        held: set while this replica leads (created when ``None``).
    """

    def __init__(
        self, db: Database, *, holder: str, ttl_s: float = LEASE_TTL_S, held: asyncio.Event | None = None
    ) -> None:
        self.db = db
        self.holder = holder
        self.ttl_s = ttl_s
        self.held = held if held is not None else asyncio.Event()
        self.claim: LeaseClaim | None = None
        self._valid_until = 0.0  # monotonic: when this replica's lease surely ends
        self._fence_timer: asyncio.TimerHandle | None = None

    @property
    def renew_every_s(self) -> float:
        return self.ttl_s / 3

    @property
    def margin_s(self) -> float:
        return self.ttl_s / 6

    @property
    def current(self) -> LeaseClaim | None:
        """The claim to fence work with while this replica leads; ``None`` as a standby (or fenced)."""
        if self.claim is None or not self.held.is_set() or time.monotonic() >= self._fence_at:
            return None
        return self.claim

    @property
    def _fence_at(self) -> float:
        return self._valid_until - self.margin_s

    async def keep(self, stop: asyncio.Event) -> int:
        """Lead or stand by until ``stop``: renew while leading, fence when renewals fail, take the lease
        once it is free. Postgres unreachable is never an exit (logged, tried again). On ``stop`` the
        lease is released so a standby takes over at once. Returns 0."""
        try:
            while not stop.is_set():
                await self.step()
                await sleep_or_stop(stop, self.renew_every_s if self.held.is_set() else self.margin_s)
        finally:
            await self._release()
        return 0

    async def step(self) -> None:
        """One try: renew the held lease, or take a free one; fences or leads accordingly."""
        sent_at = time.monotonic()
        ttl = timedelta(seconds=self.ttl_s)
        previous = self.claim if self.held.is_set() else None
        try:
            async with asyncio.timeout(self.renew_every_s):
                async with self.db.transaction() as repos:
                    if previous is not None:
                        claim = await repos.gateway_lease.renew(previous.holder, previous.epoch, ttl=ttl)
                    else:
                        claim = await repos.gateway_lease.take(self.holder, ttl=ttl)
        except (UnavailableError, TimeoutError, OSError) as exc:
            # leading: the fence timer ends it in time; standing by: try again next round
            log.warning("GATEWAY_LEASE_UNREACHABLE", leading=previous is not None, error=type(exc).__name__)
            return
        if claim is not None:
            self._lead(claim, sent_at, renewed=previous is not None)
        elif previous is not None:
            self.fence("lease renewal refused: expired or taken over")

    def _lead(self, claim: LeaseClaim, sent_at: float, *, renewed: bool) -> None:
        self.claim = claim
        self._valid_until = sent_at + self.ttl_s
        if self._fence_timer is not None:
            self._fence_timer.cancel()
        delay = max(0.0, self._fence_at - time.monotonic())
        self._fence_timer = asyncio.get_running_loop().call_later(
            delay, self.fence, "no renewal before the lease's end"
        )
        if not renewed:
            metrics.GATEWAY_LEASE_EPOCH.set(claim.epoch)
            log.info("GATEWAY_LEASE_TAKEN", holder=claim.holder, epoch=claim.epoch)
        if not self.held.is_set():
            self.held.set()
            metrics.GATEWAY_LEADER.set(1)

    def fence(self, reason: str) -> None:
        """Stop leading now: ``held`` is cleared, so nothing new is claimed, fetched or ticked."""
        if self._fence_timer is not None:
            self._fence_timer.cancel()
            self._fence_timer = None
        if self.held.is_set():
            log.error("GATEWAY_LEASE_LOST", reason=reason, epoch=self.claim.epoch if self.claim else None)
        self.held.clear()
        metrics.GATEWAY_LEADER.set(0)

    async def _release(self) -> None:
        claim = self.current
        if self._fence_timer is not None:
            self._fence_timer.cancel()
            self._fence_timer = None
        self.held.clear()
        metrics.GATEWAY_LEADER.set(0)
        if claim is None:
            return
        try:
            async with asyncio.timeout(self.renew_every_s):
                async with self.db.transaction() as repos:
                    await repos.gateway_lease.release(claim.holder, claim.epoch)
            log.info("GATEWAY_LEASE_RELEASED", epoch=claim.epoch)
        except (UnavailableError, TimeoutError, OSError) as exc:
            log.warning("GATEWAY_LEASE_NOT_RELEASED", error=type(exc).__name__, lapses_in_s=self.ttl_s)
