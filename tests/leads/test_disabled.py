"""``LEADS_ENABLED=0`` removes the publisher and the handlers: the leads process only idles (its health
endpoint answers), reads no stream and sends no card, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from devstack.infra import free_port
from shared import streams
from shared.repositories import Database

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


async def test_a_disabled_leads_service_publishes_nothing_and_reads_no_stream(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with db.transaction() as repos:
        await repos.leads.submit(
            request_id="request-off-1",
            name="Ann",
            contact="+79990000000",
            contact_kind="phone",
            contact_key="tel:+79990000000",
            message="",
            source_page=None,
            utm={},
        )
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "services" / "leads")]),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "LEADS_CHAT_ID": "-1001234567890",
        "LEADS_ENABLED": "0",
        "LEADS_PUBLISH_INTERVAL_SEC": "0.1",
        "OPS_PORT": str(port),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "leads", env=env, stderr=asyncio.subprocess.PIPE, cwd=REPO
    )
    try:
        async with asyncio.timeout(30), httpx.AsyncClient(timeout=1) as http:
            while True:
                assert proc.returncode is None, "the disabled service exited"
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # five publish intervals of an enabled service
        async with db.transaction() as repos:
            post = await repos.lead_posts.get("card", 1)
            assert post is not None and (post.state, post.attempts) == ("pending", 0)
        for stream in (streams.LEADS, streams.TG_UPDATES_LEADS, streams.results_stream("leads")):
            assert not await redis.exists(stream)  # no consumer group was ever created
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert proc.returncode == 0
    assert b'"leads_enabled": false' in err or b"leads_enabled=False" in err
