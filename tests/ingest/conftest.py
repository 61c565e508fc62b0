"""Fixtures of the ingest tests: the app on the real test database and Redis, called in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio as aioredis

from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings

#: The admin token the ``admin_client`` app is configured with, and the header that carries it.
ADMIN_TOKEN = "an-admin-token-that-is-long-enough-0123456789"
ADMIN_AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
async def admin_client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of an ingest app with ``ADMIN_TOKEN`` set (send :data:`ADMIN_AUTH`)."""
    settings = ingest_settings(database_url, redis_url, ADMIN_TOKEN=ADMIN_TOKEN)
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as c:
        yield c
