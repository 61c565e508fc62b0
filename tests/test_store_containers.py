"""The fixtures' testcontainers path, forced: Postgres and Redis from compose's images, migrated and used,
then removed. The session's own stores may come from anywhere (the configured servers usually answer), so
this test starts its own containers whenever a Docker engine is reachable."""

from __future__ import annotations

import asyncio

import docker
import pytest
import redis

from shared.migrate import migrate
from tests import store_containers

pytestmark = pytest.mark.integration

NO_ENGINE = store_containers.engine_reachable()


def test_images_are_the_ones_compose_runs() -> None:
    assert store_containers.compose_image("postgres").startswith("postgres:")
    assert store_containers.compose_image("redis").startswith("redis:")


@pytest.mark.skipif(NO_ENGINE is not None, reason=f"testcontainers path not run: {NO_ENGINE}")
def test_stores_start_in_containers_from_compose_images_and_are_removed() -> None:
    started = store_containers.start(postgres=True, redis=True)
    try:
        assert started.postgres_url is not None and started.redis_url is not None
        asyncio.run(migrate(started.postgres_url, wait_s=30))
        client = redis.Redis.from_url(started.redis_url)
        try:
            assert client.ping() and client.set("k", "v") and client.get("k") == b"v"
        finally:
            client.close()
        engine = docker.from_env()
        images = {c.image.tags[0] for c in (x.get_wrapped_container() for x in started._containers)}
        assert images == {store_containers.compose_image("postgres"), store_containers.compose_image("redis")}
        ids = [x.get_wrapped_container().id for x in started._containers]
    finally:
        started.stop()
    assert not [c for c in engine.containers.list(all=True) if c.id in ids]
