"""Every text field refuses NUL and other invalid code points with 422 ``invalid_characters``.

Before: a NUL in a lead field reached Postgres, which refuses ``\\x00`` in ``text``: 500, lead lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from ingest.api.text import first_invalid_character
from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration

# JSON cannot carry a lone surrogate from Python's encoder as text, so bodies are written by hand.
BAD = {
    "nul": "\\u0000",
    "bell": "\\u0007",
    "escape": "\\u001b",
    "del": "\\u007f",
    "c1": "\\u0085",
    "lone_surrogate": "\\ud800",
    "noncharacter": "\\ufffe",
    "plane16_noncharacter": "\\udbff\\udfff",  # U+10FFFF as a JSON surrogate pair
    "fdd0": "\\ufdd0",
}
LEAD_FIELDS = ["name", "contact", "message", "sourcePage", "utm.utm_source", "requestId"]


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(ingest_settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    async with app_client(app, raise_app_exceptions=False) as c:
        yield c


def lead_json(field: str, escaped: str) -> str:
    values: dict[str, Any] = {
        "requestId": '"req-0001-abcd"',
        "name": '"Maria"',
        "contact": '"+7 916 123-45-67"',
        "message": '"Hello"',
        "sourcePage": '"/pricing"',
        "consent": "true",
    }
    utm = '{"utm_source": "ads"}'
    if field == "utm.utm_source":
        utm = f'{{"utm_source": "ad{escaped}s"}}'
    elif field == "contact":
        values[field] = f'"+7 916 123{escaped}-45-67"'
    else:
        values[field] = f'"{values[field][1:-1]}{escaped}x"'
    return "{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + f', "utm": {utm}}}'


def assert_invalid_characters(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_characters"
    assert field in [f["field"] for f in error["fields"]]


@pytest.mark.parametrize(
    ("field", "kind"),
    [(field, "nul") for field in LEAD_FIELDS] + [("message", kind) for kind in sorted(BAD) if kind != "nul"],
)
async def test_a_lead_with_an_invalid_code_point_is_a_422_and_nothing_is_stored(
    client: httpx.AsyncClient, db: Database, field: str, kind: str
) -> None:
    response = await client.post(
        "/leads", content=lead_json(field, BAD[kind]), headers={"Content-Type": "application/json"}
    )
    assert_invalid_characters(response, field)
    async with db.transaction() as repos:
        assert await repos.leads.list_recent(10) == []


async def test_a_lead_message_keeps_its_newlines_and_tabs(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/leads",
        content=lead_json("message", "\\r\\n\\tline two"),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


async def test_a_newline_in_a_one_line_field_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/leads", content=lead_json("name", "\\n"), headers={"Content-Type": "application/json"}
    )
    assert_invalid_characters(response, "name")


async def test_a_station_with_a_nul_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/sessions", content='{"station": "hall\\u0000a"}', headers={"Content-Type": "application/json"}
    )
    assert_invalid_characters(response, "station")


async def test_an_outfit_id_with_a_lone_surrogate_is_refused(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/sessions", json={})).json()["id"]
    response = await client.put(
        f"/sessions/{sid}/outfit",
        content='{"outfit_id": "pir\\udc80ate"}',
        headers={"Content-Type": "application/json"},
    )
    assert_invalid_characters(response, "outfit_id")


async def test_an_outfit_thumbnail_path_with_a_nul_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.get("/outfits/pir%00ate/thumbnail.png")
    assert_invalid_characters(response, "outfit_id")


async def test_a_capture_id_with_a_nul_or_invalid_utf8_is_refused(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db)
    for capture in (b"cap\x00one", b"cap\xff\xfe"):
        boundary = "b0undary"
        content = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="capture_id"\r\n\r\n'.encode()
            + capture
            + f"\r\n--{boundary}\r\n".encode()
            + b'Content-Disposition: form-data; name="photo"; filename="a.jpg"\r\n\r\n'
            + b"\xff\xd8\xff"
            + f"\r\n--{boundary}--\r\n".encode()
        )
        response = await client.post(
            f"/sessions/{sid}/photo",
            content=content,
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        assert_invalid_characters(response, "capture_id")


@pytest.mark.parametrize(
    ("text", "newlines", "index"),
    [
        ("plain text", False, None),
        ("Ünïcödé — ok 🙂", False, None),
        ("tab\there", False, 3),
        ("tab\there", True, None),
        ("a\r\nb", True, None),
        ("a\x00", True, 1),
        ("\x1b[31m", True, 0),
        ("x\u009b", True, 1),
        ("x\ud83d", True, 1),
        ("\U0010ffff", True, 0),
        ("\U0001fffe", True, 0),
        ("\ufdef", True, 0),
        ("\ufdf0", True, None),  # just past the noncharacter block
        ("\ufffd", True, None),  # the replacement character is text
    ],
)
def test_first_invalid_character_finds_exactly_the_refused_classes(
    text: str, newlines: bool, index: int | None
) -> None:
    assert first_invalid_character(text, newlines=newlines) == index
