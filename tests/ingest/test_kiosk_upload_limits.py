"""The photo upload reads its body only for a session that takes a photo, and never past the size limit.

Measured by what the app pulls from the request body: the body is an async generator that counts the bytes
it hands over (httpx's ASGI transport asks for each chunk only when the app calls ``receive``), so a body
spooled to a temporary file before the check shows up as every byte pulled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
LIMIT = 1_000_000  # MAX_UPLOAD_BYTES of these tests (bytes)
CHUNK = 64 * 1024  # what a server hands the app per receive() (uvicorn reads 64 KiB)
OVERHEAD = 16 * 1024  # the multipart framing allowed beyond the limit
BOUNDARY = "----kioskBoundary0123456789"


class CountingBody:
    """A multipart body, ``capture_id`` then a ``photo`` part of ``photo_bytes`` bytes, made lazily."""

    def __init__(self, photo_bytes: int, *, capture_id: str = "cap-1", photo: bytes | None = None) -> None:
        self.photo_bytes = photo_bytes
        self.capture_id = capture_id
        self.photo = photo
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="capture_id"\r\n\r\n{self.capture_id}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="photo"; filename="me.jpg"\r\n'
            "Content-Type: image/jpeg\r\n\r\n"
        ).encode()
        yield self._count(head)
        if self.photo is not None:
            for start in range(0, len(self.photo), CHUNK):
                yield self._count(self.photo[start : start + CHUNK])
        else:
            sent = 0
            while sent < self.photo_bytes:
                piece = b"\xff" * min(CHUNK, self.photo_bytes - sent)
                sent += len(piece)
                yield self._count(piece)
        yield self._count(f"\r\n--{BOUNDARY}--\r\n".encode())

    def _count(self, piece: bytes) -> bytes:
        self.pulled += len(piece)
        return piece


HEADERS = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        ingest_settings(database_url, redis_url, MAX_UPLOAD_BYTES=LIMIT), db=db, publisher=Publisher(redis)
    )
    async with app_client(app, base_url="http://kiosk", raise_app_exceptions=False) as c:
        yield c


async def test_an_unknown_session_is_a_404_before_any_of_a_huge_body_is_read(
    client: httpx.AsyncClient,
) -> None:
    body = CountingBody(20 * LIMIT)
    response = await client.post(
        "/sessions/00000000-0000-4000-8000-000000000000/photo", content=body, headers=HEADERS
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert body.pulled == 0


async def test_a_declared_length_over_the_limit_is_a_413_before_reading(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    body = CountingBody(3 * LIMIT)
    headers = {**HEADERS, "Content-Length": str(3 * LIMIT + 400)}
    response = await client.post(f"/sessions/{sid}/photo", content=body, headers=headers)
    assert response.status_code == 413 and response.json()["error"]["code"] == "file_too_large"
    assert body.pulled == 0


async def test_a_streamed_body_over_the_limit_is_cut_at_the_limit_with_413(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    body = CountingBody(20 * LIMIT)  # no Content-Length: httpx sends it chunked
    response = await client.post(f"/sessions/{sid}/photo", content=body, headers=HEADERS)
    assert response.status_code == 413 and response.json()["error"]["code"] == "file_too_large"
    assert LIMIT < body.pulled <= LIMIT + OVERHEAD + CHUNK
    assert (await client.get(f"/sessions/{sid}")).json()["captures"] == 0


async def test_a_photo_just_under_the_limit_with_its_framing_is_taken(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    assert len(photo) < LIMIT
    body = CountingBody(0, photo=photo)
    response = await client.post(f"/sessions/{sid}/photo", content=body, headers=HEADERS)
    assert response.status_code == 202, response.text
    assert response.json()["capture_id"] == "cap-1"


async def test_a_retry_at_the_capture_limit_is_answered_without_reading_its_photo(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    first = await client.post(f"/sessions/{sid}/photo", content=CountingBody(0, photo=photo), headers=HEADERS)
    second = await client.post(
        f"/sessions/{sid}/photo", content=CountingBody(0, photo=photo, capture_id="cap-2"), headers=HEADERS
    )
    assert (first.status_code, second.status_code) == (202, 202)
    retry = CountingBody(0, photo=photo)
    again = await client.post(f"/sessions/{sid}/photo", content=retry, headers=HEADERS)
    assert again.status_code == 200 and again.json()["job_id"] == first.json()["job_id"]
    third = CountingBody(0, photo=photo, capture_id="cap-3")
    refused = await client.post(f"/sessions/{sid}/photo", content=third, headers=HEADERS)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "capture_limit"
    assert retry.pulled < CHUNK and third.pulled < CHUNK  # the photos were never read


async def test_an_upload_before_telegram_is_linked_reads_nothing(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/sessions", json={})).json()["id"]
    body = CountingBody(5 * LIMIT)
    response = await client.post(f"/sessions/{sid}/photo", content=body, headers=HEADERS)
    assert response.status_code == 409 and response.json()["error"]["code"] == "telegram_not_linked"
    assert body.pulled == 0


@pytest.mark.parametrize(
    "content",
    [
        b"not multipart at all",
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=photo\r\n\r\nab".encode(),
    ],
    ids=["garbage", "truncated"],
)
async def test_a_malformed_multipart_body_is_a_400_with_the_error_body(
    client: httpx.AsyncClient, db: Database, content: bytes
) -> None:
    sid = await linked_session(client, db)
    response = await client.post(f"/sessions/{sid}/photo", content=content, headers=HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_multipart"


async def test_an_upload_without_a_photo_part_names_the_missing_field(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    response = await client.post(
        f"/sessions/{sid}/photo", data={"capture_id": "c1"}, files={"x": ("a", b"1")}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["fields"][0]["field"] == "photo"
