"""The single-gateway lock across a real Postgres connection drop (``pg_terminate_backend`` of the lock's
backend, as a Postgres restart does): taken again and work resumes, or exit 1 when another gateway took
it meanwhile (DESIGN.md §2; issue 8: the gateway used to end itself on every Postgres restart)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from telegram.ext import ApplicationBuilder, TypeHandler

from shared.db import plain_url
from telegram_gateway.lock import GATEWAY_LOCK_KEY, GatewayLock, keep_lock
from telegram_gateway.polling import poll_updates
from tests.simulators.tgsim_helpers import TOKEN, serve, sim_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
HOLDER = """
SELECT pid FROM pg_locks
WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


@pytest.fixture
async def admin(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A second connection to the test database: it cuts the lock's backend and plays another gateway."""
    conn = await asyncpg.connect(plain_url(database_url))
    yield conn
    await conn.close()


async def holder_pid(admin: asyncpg.Connection) -> int | None:
    pid = await admin.fetchval(HOLDER, GATEWAY_LOCK_KEY)
    return int(pid) if pid is not None else None


async def cut_the_lock_connection(admin: asyncpg.Connection) -> int:
    """Terminate the backend that holds the gateway lock, as a Postgres restart does; returns its pid."""
    pid = await holder_pid(admin)
    assert pid is not None
    assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    return pid


async def test_a_lock_cut_with_its_connection_is_taken_again_and_the_gateway_carries_on(
    database_url: str, admin: asyncpg.Connection
) -> None:
    lock = GatewayLock(database_url)
    assert await lock.acquire()
    held, stop = asyncio.Event(), asyncio.Event()
    keeper = asyncio.create_task(keep_lock(lock, held=held, stop=stop, check_every_s=0.1, retry_cap_s=0.5))
    try:
        first = await cut_the_lock_connection(admin)
        async with asyncio.timeout(15):
            while (await holder_pid(admin)) in (None, first):
                await asyncio.sleep(0.05)
            await held.wait()
        assert not keeper.done() and not stop.is_set()  # no exit: the process lives on
        assert await lock.still_held()
    finally:
        stop.set()
        assert await keeper == 0
        await lock.release()


async def test_a_lock_another_gateway_took_while_it_was_lost_ends_the_gateway_with_exit_1(
    database_url: str, admin: asyncpg.Connection
) -> None:
    lock = GatewayLock(database_url)
    assert await lock.acquire()
    held, stop = asyncio.Event(), asyncio.Event()
    keeper = asyncio.create_task(keep_lock(lock, held=held, stop=stop, check_every_s=1.0, retry_cap_s=0.5))
    try:
        await cut_the_lock_connection(admin)
        await admin.execute("SELECT pg_advisory_lock($1)", GATEWAY_LOCK_KEY)  # the other gateway
        async with asyncio.timeout(15):
            assert await keeper == 1
        assert stop.is_set() and not held.is_set()
    finally:
        stop.set()
        await lock.release()
        await admin.execute("SELECT pg_advisory_unlock($1)", GATEWAY_LOCK_KEY)


async def test_polling_waits_while_the_lock_is_not_held() -> None:
    runner, running = await serve(sim_config())
    application = ApplicationBuilder().token(TOKEN).base_url(f"{running.url}/bot").updater(None).build()
    seen: list[int] = []

    async def record(update: object, _context: object) -> None:
        seen.append(update.update_id)  # type: ignore[attr-defined]

    application.add_handler(TypeHandler(object, record))
    await application.initialize()
    held, stop = asyncio.Event(), asyncio.Event()
    poller = asyncio.create_task(poll_updates(application, stop, timeout_s=0, held=held))
    try:
        await running.say(5001, "/start", first_name="Ann")
        await asyncio.sleep(1)
        assert await running.get("/sim/calls?method=getUpdates") == [] and seen == []
        held.set()
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.05)
        assert await running.get("/sim/calls?method=getUpdates") != []
    finally:
        stop.set()
        await poller
        await application.shutdown()
        await running.http.close()
        await runner.cleanup()
