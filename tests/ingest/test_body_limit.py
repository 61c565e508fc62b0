"""Every request body but the photo upload is bounded by ``MAX_JSON_BODY_BYTES`` (413 ``request_too_large``).

Measured by what the app pulls from the request body: the body is an async generator that counts the bytes
it hands over (httpx's ASGI transport asks for each chunk only when the app calls ``receive``), so a body
read whole before the check shows up as every byte pulled. One test runs the real uvicorn server.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from prometheus_client import REGISTRY

from devstack.infra import free_port
from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
LIMIT = 64 * 1024  # the default MAX_JSON_BODY_BYTES (bytes)
CHUNK = 16 * 1024  # bytes per chunk of the generated bodies
ANY_SESSION = "00000000-0000-4000-8000-000000000000"


class CountingBody:
    """``size`` bytes of a JSON-looking body, made lazily in ``CHUNK`` pieces; ``pulled`` counts what the
    app took."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        head = b'{"version": "1", "pad": "'
        self.pulled += len(head)
        yield head
        while self.pulled < self.size:
            piece = b"x" * min(CHUNK, self.size - self.pulled)
            self.pulled += len(piece)
            yield piece


def padded(body: dict[str, Any], size: int) -> bytes:
    """``body`` as JSON with trailing whitespace (still valid JSON) up to exactly ``size`` bytes."""
    raw = json.dumps(body).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


def counted(route: str, status: str) -> float:
    return REGISTRY.get_sample_value("stk_http_requests_total", {"route": route, "status": status}) or 0.0


async def stored_rows(db: Database, table: str) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(sa.text(f"SELECT count(*) FROM {table}"))).scalar_one())


def assert_too_large(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "request_too_large"


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(ingest_settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    async with app_client(app, base_url="http://kiosk", raise_app_exceptions=False) as c:
        yield c


async def test_a_declared_length_over_the_limit_is_a_413_before_reading_and_nothing_is_stored(
    client: httpx.AsyncClient, db: Database
) -> None:
    before = counted("/sessions", "413")
    body = CountingBody(400 * 1024 * 1024)
    headers = {"Content-Type": "application/json", "Content-Length": str(body.size)}
    response = await client.post("/sessions", content=body, headers=headers)
    assert_too_large(response)
    assert body.pulled == 0
    assert await stored_rows(db, "sessions") == 0
    assert counted("/sessions", "413") == before + 1


async def test_a_chunked_consent_without_login_is_cut_at_the_limit(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = (await client.post("/sessions", json={})).json()["id"]
    before = counted("/sessions/{session_id}/consent", "413")
    body = CountingBody(400 * 1024 * 1024)  # no Content-Length: httpx sends it chunked
    response = await client.put(f"/sessions/{sid}/consent", content=body)
    assert_too_large(response)
    assert LIMIT < body.pulled <= LIMIT + CHUNK
    assert (await client.get(f"/sessions/{sid}")).json()["consent"] is None
    assert counted("/sessions/{session_id}/consent", "413") == before + 1


@pytest.mark.parametrize(
    ("method", "path"), [("PUT", f"/sessions/{ANY_SESSION}/outfit"), ("POST", "/admin/erasures")]
)
async def test_every_other_route_is_bounded_too(client: httpx.AsyncClient, method: str, path: str) -> None:
    body = CountingBody(10 * LIMIT)
    assert_too_large(await client.request(method, path, content=body))
    assert body.pulled <= LIMIT + CHUNK


async def test_an_unknown_route_stays_a_404_without_reading(client: httpx.AsyncClient) -> None:
    body = CountingBody(10 * LIMIT)
    response = await client.post("/nowhere", content=body)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert body.pulled == 0


async def test_a_body_of_exactly_the_limit_is_answered_as_before_and_one_byte_more_is_not(
    client: httpx.AsyncClient, db: Database
) -> None:
    headers = {"Content-Type": "application/json"}
    taken = await client.post("/sessions", content=padded({"station": "hall-a"}, LIMIT), headers=headers)
    assert taken.status_code == 201, taken.text
    assert taken.json()["station"] == "hall-a"
    refused = await client.post(
        "/sessions", content=padded({"station": "hall-a"}, LIMIT + 1), headers=headers
    )
    assert_too_large(refused)
    assert await stored_rows(db, "sessions") == 1


async def test_a_body_within_the_limit_keeps_its_own_errors(client: httpx.AsyncClient) -> None:
    response = await client.post("/sessions", content=b"{", headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def largest_lead() -> bytes:
    """A lead with every field at its length limit, each text code point an astral one sent as a
    ``\\uXXXX\\uXXXX`` escape (12 bytes): the largest body a legitimate client can send."""
    astral = "\U0001f600"
    domain = "a" * (254 - 64 - 1 - 4) + ".com"
    lead = {
        "requestId": "r" * 64,
        "name": astral * 120,
        "contact": f"{'m' * 64}@{domain}",
        "message": astral * 2000,
        "sourcePage": astral * 500,
        "utm": {f"utm_{key}": astral * 200 for key in ("source", "medium", "campaign", "term", "content")},
        "consent": True,
    }
    return json.dumps(lead, ensure_ascii=True).encode()


async def test_the_largest_legitimate_lead_fits_the_default_limit(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = largest_lead()
    assert 40_000 < len(body) < LIMIT
    response = await client.post("/leads", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    assert await stored_rows(db, "leads") == 1


async def test_an_oversized_lead_is_refused_declared_or_chunked_and_not_stored(
    client: httpx.AsyncClient, db: Database
) -> None:
    declared = CountingBody(2 * LIMIT)
    headers = {"Content-Type": "application/json", "Content-Length": str(declared.size)}
    assert_too_large(await client.post("/leads", content=declared, headers=headers))
    chunked = CountingBody(2 * LIMIT)
    assert_too_large(await client.post("/leads", content=chunked))
    assert (declared.pulled, chunked.pulled <= LIMIT + CHUNK) == (0, True)
    assert await stored_rows(db, "leads") == 0


async def test_the_landing_page_can_read_the_413_of_a_cross_origin_lead(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    origin = "https://landing.example"
    settings = ingest_settings(database_url, redis_url, LEADS_CORS_ORIGINS=origin)
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as c:
        body = CountingBody(2 * LIMIT)
        headers = {"Origin": origin, "Content-Length": str(body.size)}
        response = await c.post("/leads", content=body, headers=headers)
    assert_too_large(response)
    assert response.headers["access-control-allow-origin"] == origin


async def test_the_photo_upload_keeps_its_own_limit(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    settings = ingest_settings(database_url, redis_url, MAX_JSON_BODY_BYTES=1024, MAX_UPLOAD_BYTES=1_000_000)
    app = create_app(settings, db=db, publisher=Publisher(redis))
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    assert 1024 < len(photo) < 1_000_000
    async with app_client(app, base_url="http://kiosk") as c:
        sid = await linked_session(c, db)
        files = {"photo": ("me.png", photo, "image/png")}
        taken = await c.post(f"/sessions/{sid}/photo", data={"capture_id": "cap-1"}, files=files)
        assert taken.status_code == 202, taken.text
        big = {"photo": ("big.png", b"\x89PNG" + b"\0" * 1_100_000, "image/png")}
        refused = await c.post(f"/sessions/{sid}/photo", data={"capture_id": "cap-2"}, files=big)
        assert refused.status_code == 413 and refused.json()["error"]["code"] == "file_too_large"


@pytest.fixture
def server(database_url: str, redis_url: str) -> Iterator[tuple[str, int]]:
    """``python -m ingest`` (uvicorn) on a free port: its base URL and process id."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "BOT_USERNAME": "stickerbooth_bot",
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "ingest"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "ingest did not start"
            time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def rss_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (bytes), from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.e2e
def test_the_real_server_answers_a_huge_chunked_body_with_413_at_once(server: tuple[str, int]) -> None:
    """A raw socket, so the answer is seen while the body is still being sent (an HTTP client sends the
    whole body first): 413 comes after a few MB at most, however much more the client would send."""
    url, pid = server
    port = int(url.rsplit(":", 1)[1])
    rss_before = rss_bytes(pid)
    piece = b"x" * (64 * 1024)
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    sent = 0
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"PUT /sessions/{ANY_SESSION}/consent HTTP/1.1\r\nHost: ingest\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            while sent < 400 * 1024 * 1024 and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk)
                sent += len(piece)
        except OSError:  # the server closed while the body was still coming
            pass
        answer = b""
        while b"request_too_large" not in answer and (data := sock.recv(65536)):
            answer += data
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b'"code":"request_too_large"' in answer
    # the byte count is the measure of "at once"; the time bound only catches a stall (loose: busy CI)
    assert sent < 32 * 1024 * 1024 and elapsed < 20, (sent, elapsed)
    assert rss_bytes(pid) - rss_before < 32 * 1024 * 1024
