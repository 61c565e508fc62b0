"""Connections to ingest's real server (uvicorn as ``python -m ingest`` configures it, on a loopback port):
header, body and idle time-outs, a cap per client that does not flood the log, and ``X-Forwarded-For``
believed only from the configured proxies (issue 19)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import redis.asyncio as aioredis
import structlog
import uvicorn

from ingest.main import create_app, server_config
from ingest.server import quiet_accept_errors
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import ingest_settings

pytestmark = pytest.mark.integration

Serve = Callable[..., Any]
_writers: list[asyncio.StreamWriter] = []


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the server, closed when the server stops."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    _writers.append(writer)
    return reader, writer


@pytest.fixture
def serve(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> Serve:
    """``async with serve(**env) as port``: ingest's server on 127.0.0.1 at ``port``."""

    @asynccontextmanager
    async def running(**env: Any) -> AsyncIterator[int]:
        settings = ingest_settings(
            database_url, redis_url, HOST="127.0.0.1", PORT=0, PHOTO_CHECK_WORKERS=1, **env
        )
        app = create_app(settings, db=db, publisher=Publisher(redis))
        server = uvicorn.Server(server_config(settings, app))
        task = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(30):
                while not server.started:
                    await asyncio.sleep(0.02)
            yield server.servers[0].sockets[0].getsockname()[1]
        finally:
            while _writers:
                _writers.pop().close()
            server.should_exit = True
            await task

    return running


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closed the connection within ``seconds`` (whatever it sent before)."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


async def request(port: int, raw: bytes) -> bytes:
    reader, writer = await connect(port)
    writer.write(raw)
    async with asyncio.timeout(20):
        return await reader.readuntil(b"\r\n\r\n")


async def test_a_head_trickled_a_byte_at_a_time_is_cut_at_the_header_deadline(serve: Serve) -> None:
    async with serve(HTTP_HEADER_TIMEOUT_SEC=1) as port:
        silent_reader, _silent = await connect(port)
        reader, writer = await connect(port)

        async def trickle() -> None:
            for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 100:
                writer.write(bytes([byte]))
                await asyncio.sleep(0.1)

        trickling = asyncio.create_task(trickle())
        assert await closed_within(silent_reader, 3), "a connection that sends nothing"
        assert await closed_within(reader, 3), "a head trickled a byte every 0.1 s"
        trickling.cancel()
        # a whole request on a new connection is answered
        assert (await request(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).startswith(b"HTTP/1.1 200")


async def test_a_stalled_body_is_cut_and_a_slow_one_that_keeps_moving_is_answered(serve: Serve) -> None:
    body = b'{"station": "hall-a"}'
    head = b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: %d\r\n\r\n" % len(body)
    async with serve(HTTP_BODY_TIMEOUT_SEC=1) as port:
        reader, writer = await connect(port)
        writer.write(head + body[:5])
        assert await closed_within(reader, 4), "a body stalled after 5 bytes"

        reader, writer = await connect(port)
        writer.write(head)
        for byte in body:  # 21 bytes over ~6 s: well past the time-out, never a pause as long
            writer.write(bytes([byte]))
            await asyncio.sleep(0.3)
        async with asyncio.timeout(10):
            answer = await reader.readuntil(b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 201"), answer


async def test_one_client_is_capped_and_its_refusals_are_one_log_line(serve: Serve) -> None:
    async with serve(HTTP_MAX_CONNECTIONS_PER_CLIENT=3, HTTP_HEADER_TIMEOUT_SEC=60) as port:
        held = [await connect(port) for _ in range(3)]
        await asyncio.sleep(0.2)
        with structlog.testing.capture_logs() as logs:
            refused = [await connect(port) for _ in range(20)]
            assert all([await closed_within(r, 3) for r, _w in refused]), "over the cap: closed at once"
        lines = [e for e in logs if e["event"] == "HTTP_CONNECTIONS_REFUSED"]
        assert len(lines) == 1 and lines[0]["client"] == "127.0.0.1", lines
        assert not await closed_within(held[0][0], 0.3), "the first three stay open"
        held[0][1].close()
        await asyncio.sleep(0.2)
        assert (await request(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(("trusted", "second"), [("", b"429"), ("127.0.0.1", b"201")])
async def test_forwarded_addresses_are_believed_only_from_the_configured_proxies(
    serve: Serve, trusted: str, second: bytes
) -> None:
    """By default nobody's ``X-Forwarded-For`` is believed, so a client cannot name itself a new address
    for each session (``SESSIONS_RATE_LIMIT``); from a configured proxy it names the visitor."""
    env = {"SESSIONS_RATE_LIMIT": 1, "FORWARDED_ALLOW_IPS": trusted}
    async with serve(**env) as port:
        answers = [
            await request(
                port,
                b"POST /sessions HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.%d\r\n"
                b"Content-Length: 0\r\n\r\n" % i,
            )
            for i in (1, 2)
        ]
    assert answers[0].startswith(b"HTTP/1.1 201"), answers[0]
    assert answers[1].startswith(b"HTTP/1.1 " + second), answers[1]


def test_asyncios_accept_error_at_the_open_file_limit_is_one_line_per_interval() -> None:
    """At the open-file limit asyncio logs a failed accept up to ``backlog`` times per wake-up (400,000
    lines, 135 MB, in 40 s); it is let through once per interval."""
    quiet_accept_errors()
    seen: list[logging.LogRecord] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Seen()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        for _ in range(2048):
            logger.error("socket.accept() out of system resource\nsocket: <fd=17>", exc_info=OSError(24))
        logger.error("another asyncio error")
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage().splitlines()[0] for r in seen] == [
        "socket.accept() out of system resource",
        "another asyncio error",
    ]
