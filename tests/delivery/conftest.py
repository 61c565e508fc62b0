"""Delivery test fixtures: a ``PackDelivery`` on the run's Postgres and Redis."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from delivery.packs import PackDelivery
from delivery.settings import DeliverySettings
from shared.repositories import Database
from shared.streams import Publisher


@pytest.fixture
def delivery(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> PackDelivery:
    settings = DeliverySettings(
        DATABASE_URL=database_url, REDIS_URL=redis_url, BOT_USERNAME="stickerbooth_bot"
    )  # type: ignore[call-arg]
    return PackDelivery(db=db, publisher=Publisher(redis), settings=settings)
