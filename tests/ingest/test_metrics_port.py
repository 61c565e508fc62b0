"""Where ingest serves ``/metrics``: on its own port (``OPS_PORT``, as the k8s manifests set it) and then
not on the port the venue's ingress publishes; without ``OPS_PORT`` (``make up``, Compose) on the main
port."""

from __future__ import annotations

import httpx
import pytest
import redis.asyncio as aioredis

from devstack.infra import free_port
from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings

pytestmark = pytest.mark.integration


async def test_with_an_ops_port_the_public_port_hides_the_metrics(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    port = free_port()
    settings = ingest_settings(database_url, redis_url, OPS_PORT=port, PHOTO_CHECK_WORKERS=1)
    app = create_app(settings, db=db, publisher=Publisher(redis))
    async with app.router.lifespan_context(app), app_client(app) as public:
        hidden = await public.get("/metrics")
        assert (await public.get("/healthz")).status_code == 200
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as ops:
            scraped = await ops.get("/metrics")
            ready = await ops.get("/readyz")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"
    assert "stk_http_requests_total" not in hidden.text
    assert scraped.status_code == 200 and "stk_http_requests_total" in scraped.text
    assert ready.json() == {"ok": True}


@pytest.mark.parametrize("ops_port", [None, 8000])
async def test_without_an_ops_port_of_its_own_the_metrics_are_on_the_main_port(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, ops_port: int | None
) -> None:
    """``OPS_PORT`` unset (``make up``) or equal to ``PORT`` (the image sets ``OPS_PORT=8000`` for its
    ``HEALTHCHECK``, Compose): one port, no second server trying to bind it."""
    env = {"PORT": 8000, "PHOTO_CHECK_WORKERS": 1} | ({"OPS_PORT": ops_port} if ops_port else {})
    app = create_app(ingest_settings(database_url, redis_url, **env), db=db, publisher=Publisher(redis))
    async with app.router.lifespan_context(app), app_client(app) as public:
        scraped = await public.get("/metrics")
    assert scraped.status_code == 200 and "stk_http_requests_total" in scraped.text
