"""Every error answer has the ``{"error": {"code", "message"}}`` body, is in the OpenAPI document and is
counted in ``stk_http_requests_total``; a malformed ``Authorization`` header is a 401, never a 500."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from ingest.main import create_app
from ingest.settings import IngestSettings
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings

pytestmark = pytest.mark.integration
ADMIN_TOKEN = "s3cret-admin-token-0123456789"
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def settings(database_url: str, redis_url: str) -> IngestSettings:
    return ingest_settings(database_url, redis_url, ADMIN_TOKEN=ADMIN_TOKEN)


async def client_for(app: Any) -> httpx.AsyncClient:
    return app_client(app, raise_app_exceptions=False)


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_for(
        create_app(settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    ) as c:
        yield c


class BrokenDatabase:
    """A Database whose every transaction fails with a bug (not a DatabaseUnavailable)."""

    def transaction(self) -> Any:
        raise RuntimeError("a bug in a repository")

    async def ping(self) -> None:
        raise RuntimeError("a bug in a repository")

    async def dispose(self) -> None:
        return None


def counted(route: str, status: str) -> float:
    return REGISTRY.get_sample_value("stk_http_requests_total", {"route": route, "status": status}) or 0.0


def assert_error_body(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith("application/json"), (
        response.status_code,
        response.text,
    )
    error = response.json()["error"]
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z_]+", error["code"])
    assert isinstance(error["message"], str) and error["message"]
    return error


async def test_an_unhandled_exception_is_a_500_with_the_error_body_and_is_counted(
    redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    app = create_app(settings(database_url, redis_url), db=BrokenDatabase(), publisher=Publisher(redis))  # type: ignore[arg-type]
    before = counted("/sessions/{session_id}", "500")
    async with await client_for(app) as c:
        response = await c.get("/sessions/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 500
    assert counted("/sessions/{session_id}", "500") == before + 1
    assert assert_error_body(response)["code"] == "internal_error"
    assert "a bug in a repository" not in response.text  # nothing of the bug reaches the client


async def test_answers_are_counted_by_route_template_and_status(client: httpx.AsyncClient) -> None:
    before_ok, before_404 = counted("/outfits", "200"), counted("unmatched", "404")
    assert (await client.get("/outfits")).status_code == 200
    assert (await client.get("/no/such/route")).status_code == 404
    assert (counted("/outfits", "200"), counted("unmatched", "404")) == (before_ok + 1, before_404 + 1)


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/no/such/route", 404, "not_found"),
        ("DELETE", "/outfits", 405, "method_not_allowed"),
        ("POST", "/healthz", 405, "method_not_allowed"),
        ("GET", "/sessions/not-a-uuid", 422, "invalid_request"),
    ],
)
async def test_framework_errors_answer_with_the_error_body(
    client: httpx.AsyncClient, method: str, path: str, status: int, code: str
) -> None:
    response = await client.request(method, path)
    assert response.status_code == status
    assert assert_error_body(response)["code"] == code
    if status == 405:
        assert response.headers["allow"]


async def test_a_body_that_is_not_json_is_a_422_with_the_error_body(client: httpx.AsyncClient) -> None:
    response = await client.post("/leads", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and assert_error_body(response)["code"] == "invalid_request"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer ключ-администратора".encode(),  # non-ASCII bytes: compare_digest on str raised TypeError
        "Bearer s3cret-admin-token-012345678é".encode(),
        b"Bearer \xff\xfe\xfd",
        b"Bearer",
        b"Bearer ",
        b"Basic czNjcmV0OmFkbWlu",
        b"bearer" + b" " * 3,
        b"Bearer " + ADMIN_TOKEN.encode() + b" extra",
        b"",
        b"\tBearer " + ADMIN_TOKEN[:-1].encode(),
    ],
)
async def test_any_malformed_authorization_header_is_a_401(client: httpx.AsyncClient, header: bytes) -> None:
    for path in ("/admin/leads", "/admin/status", "/admin/jobs"):
        response = await client.get(path, headers={"Authorization": header})
        assert response.status_code == 401, (path, header, response.status_code)
        assert assert_error_body(response)["code"] == "unauthorized"


async def test_the_right_token_still_opens_the_admin_api(client: httpx.AsyncClient) -> None:
    response = await client.get("/admin/status", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200


async def test_every_route_documents_the_error_body(client: httpx.AsyncClient) -> None:
    document = (
        await client.get("/admin/openapi.json", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    ).json()
    assert document["components"]["schemas"]["ErrorBody"]["properties"]["error"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("404", "413", "422", "500", "503"):
                assert status in responses, (method, path, status)
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status, schema)
    upload = document["paths"]["/sessions/{session_id}/photo"]["post"]
    assert {"400", "409", "413", "415"} <= set(upload["responses"])
    body = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["required"] == ["photo"] and set(body["properties"]) == {"photo", "capture_id"}


# Malformed inputs for every operation of the OpenAPI document: values for path parameters, bodies, and
# headers. Each answer must be below 500 and, when it is an error, carry the error body.
PATH_VALUES = ["not-a-uuid", "%00", "%ED%A0%80", "x" * 300, "00000000-0000-4000-8000-000000000000", "..%2f"]
BODIES: list[tuple[str, bytes]] = [
    ("application/json", b"{"),
    ("application/json", b'{"name": "\\u0000", "station": "\\ud800", "outfit_id": 5, "requestId": []}'),
    ("application/json", b"[]"),
    ("application/json", b"null"),
    ("multipart/form-data; boundary=zz", b"--zz\r\nContent-Disposition: form-data\r\n\r\nx"),
    ("text/plain", b"\x00\xff"),
]
HEADERS: list[dict[str, bytes]] = [
    {"Authorization": "Bearer Ünïcode".encode()},
    {"Idempotency-Key": b"\xff" * 80},
    {"If-None-Match": b"\x80\x81"},
]


async def test_every_route_of_the_openapi_document_survives_malformed_input(
    client: httpx.AsyncClient,
) -> None:
    document = (
        await client.get("/admin/openapi.json", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    ).json()
    tried = 0
    for template, operations in document["paths"].items():
        for method in operations:
            paths = (
                [re.sub(r"\{[^}]+\}", value, template) for value in PATH_VALUES]
                if "{" in template
                else [template]
            )
            for path in paths:
                for content_type, body in BODIES:
                    for headers in HEADERS:
                        response = await client.request(
                            method.upper(),
                            path + "?limit=-1&status=%00",
                            content=body,
                            headers={"Content-Type": content_type, **headers},
                        )
                        tried += 1
                        assert response.status_code < 500, (
                            method,
                            path,
                            content_type,
                            headers,
                            response.text,
                        )
                        if response.status_code >= 400:
                            assert_error_body(response)
    assert tried > 500


def test_every_route_has_its_500_series_at_zero_before_any_request(database_url: str, redis_url: str) -> None:
    """The 5xx alert rule's selector has series on a fresh ingest (else ``make compose-check`` fails it).
    A fresh process: this session's registry has seen other tests' 500s."""
    code = (
        "import sys; from ingest.main import create_app; from ingest.settings import IngestSettings; "
        "from shared.metrics import exposition; create_app(IngestSettings()); "
        "sys.stdout.write(exposition().decode())"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "BOT_USERNAME": "stickerbooth_bot",
        "ADMIN_TOKEN": ADMIN_TOKEN,
    }
    text = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    five_hundreds = {
        s.labels["route"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "stk_http_requests_total" and s.labels["status"] == "500"
    }
    assert {"/sessions/{session_id}/photo", "/leads", "/admin/status", "/admin/openapi.json"} <= set(
        five_hundreds
    )
    assert set(five_hundreds.values()) == {0.0}
