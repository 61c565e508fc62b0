"""All SQL of Sticker Booth. Each repository wraps one transaction's connection and returns domain objects.

Use through :class:`shared.repositories.Database`::

    async with db.transaction() as repos:
        job = await repos.jobs.claim(job_id, owner="worker-1")

Every state change is a conditional ``UPDATE ... WHERE status = ... RETURNING`` (DESIGN.md §3): a method
that loses the race returns ``None`` instead of overwriting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from shared.db import transaction
from shared.repositories.alerts import AlertRepository
from shared.repositories.blobs import BlobRepository
from shared.repositories.erasure import ErasureRepository
from shared.repositories.events import EventRepository
from shared.repositories.gateway_lease import GatewayLeaseRepository
from shared.repositories.job_search import JobSearchRepository
from shared.repositories.jobs import JobRepository
from shared.repositories.lead_posts import LeadPostRepository
from shared.repositories.leads import LeadRepository
from shared.repositories.overview import OverviewRepository
from shared.repositories.preflight import PreflightRepository
from shared.repositories.refusals import PhotoRefusalRepository
from shared.repositories.retention import RetentionRepository
from shared.repositories.sessions import SessionRepository
from shared.repositories.settings import SettingsRepository
from shared.repositories.tg_commands import TelegramCommandRepository
from shared.repositories.tg_updates import TelegramUpdateRepository
from shared.repositories.usage import UsageRepository

__all__ = ["Database", "Repositories"]


class Repositories:
    """The repositories bound to one open transaction."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.sessions = SessionRepository(conn)
        self.jobs = JobRepository(conn)
        self.blobs = BlobRepository(conn)
        self.settings = SettingsRepository(conn)
        self.tg_commands = TelegramCommandRepository(conn)
        self.tg_updates = TelegramUpdateRepository(conn)
        self.leads = LeadRepository(conn)
        self.lead_posts = LeadPostRepository(conn)
        self.alerts = AlertRepository(conn)
        self.usage = UsageRepository(conn)
        self.erasure = ErasureRepository(conn)
        self.retention = RetentionRepository(conn)
        self.overview = OverviewRepository(conn)
        self.job_search = JobSearchRepository(conn)
        self.refusals = PhotoRefusalRepository(conn)
        self.preflight = PreflightRepository(conn)
        self.gateway_lease = GatewayLeaseRepository(conn)
        self.events = EventRepository(conn)


class Database:
    """The process's entry to Postgres: hands out transactions with repositories."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Repositories]:
        """Open a transaction; commits when the block ends, rolls back on error.

        Raises:
            DatabaseUnavailable: Postgres could not be reached.
        """
        async with transaction(self.engine) as conn:
            yield Repositories(conn)

    async def ping(self) -> None:
        """Run ``SELECT 1``. Raises DatabaseUnavailable when Postgres is down."""
        async with transaction(self.engine) as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()
