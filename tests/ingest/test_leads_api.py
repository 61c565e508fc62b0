"""``POST /leads`` against real Postgres and Redis: idempotent by ``requestId`` (also at the same moment),
repeats by contact, field errors, a rate limit shared by replicas, CORS, a Redis that does not answer,
``LEADS_ENABLED=0`` and the admin listing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from fastapi import FastAPI

from ingest.main import create_app
from shared import streams
from shared.db.tables import leads
from shared.events import Event
from shared.messages import LeadCreated, LeadRepeated, decode
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import ingest_settings

pytestmark = pytest.mark.integration
ADMIN_TOKEN = "admin-token-for-tests-0123456789"
AppFactory = Callable[..., FastAPI]


def lead(request_id: str = "req-00000001", **fields: Any) -> dict[str, Any]:
    body = {
        "requestId": request_id,
        "name": "Maria",
        "contact": "+7 999 000-00-00",
        "message": "300 guests",
        "consent": True,
    }
    body.update(fields)
    return body


@pytest.fixture
def make_app(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AppFactory:
    def make(publisher: Publisher | None = None, **env: Any) -> FastAPI:
        settings = ingest_settings(database_url, redis_url, **env)
        return create_app(settings, db=db, publisher=publisher or Publisher(redis))

    return make


def client(app: FastAPI, ip: str = "203.0.113.7") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(ip, 5555)), base_url="http://booth"
    )


@pytest.fixture
async def api(make_app: AppFactory) -> AsyncIterator[httpx.AsyncClient]:
    async with client(make_app(ADMIN_TOKEN=ADMIN_TOKEN)) as c:
        yield c


async def test_a_retried_request_answers_200_with_the_same_number_and_one_lead(
    api: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    first = await api.post("/leads", json=lead())
    again = await api.post("/leads", json=lead(message="changed on retry"))
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json() == {"lead_number": 1, "requestId": "req-00000001", "repeat": False}
    async with db.transaction() as repos:
        rows = await repos.leads.list_recent()
    assert [(lead_.id, lead_.message, lead_.contact_kind) for lead_, _ in rows] == [
        (1, "300 guests", "phone")
    ]
    hints = [decode(f) for _id, f in await redis.xrange(streams.LEADS)]
    assert hints == [LeadCreated(lead_id=1)]


async def test_concurrent_submits_of_one_request_store_one_lead_and_never_fail(
    api: httpx.AsyncClient, db: Database
) -> None:
    answers = await asyncio.gather(*(api.post("/leads", json=lead()) for _ in range(8)))
    assert sorted(a.status_code for a in answers) == [200] * 7 + [201]
    # One lead, the same number in every answer. Not necessarily 1: an INSERT … ON CONFLICT DO NOTHING
    # that loses the race has already drawn its identity value (Postgres sequences are not gap-free).
    (number,) = {a.json()["lead_number"] for a in answers}
    async with db.transaction() as repos:
        ((stored, _repeats),) = await repos.leads.list_recent()
    assert stored.id == number


async def test_the_same_contact_again_becomes_a_repeat_of_the_first_lead(
    api: httpx.AsyncClient, redis: aioredis.Redis, db: Database
) -> None:
    await api.post("/leads", json=lead(contact="+7 (999) 000-00-00"))
    repeat = await api.post("/leads", json=lead("req-00000002", contact="8 999 000 00 00", message="again"))
    concurrent = await asyncio.gather(
        *(api.post("/leads", json=lead("req-00000003", contact="+79990000000")) for _ in range(4))
    )
    assert repeat.status_code == 201 and repeat.json() == {
        "lead_number": 1,
        "requestId": "req-00000002",
        "repeat": True,
    }
    assert sorted(a.status_code for a in concurrent) == [200, 200, 200, 201]
    other = await api.post("/leads", json=lead("req-00000004", contact="@Maria_K"))
    assert other.json()["lead_number"] == 2 and not other.json()["repeat"]
    hints = [decode(f) for _id, f in await redis.xrange(streams.LEADS)]
    assert [type(h) for h in hints] == [LeadCreated, LeadRepeated, LeadRepeated, LeadCreated]
    async with db.transaction() as repos:
        ((first, repeats), *_rest) = reversed(await repos.leads.list_recent())
    assert first.id == 1 and repeats == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (lead(contact="call me maybe"), "contact"),
        (lead(contact="ann@@example"), "contact"),
        (lead(contact="+7 12"), "contact"),
        (lead(name="   "), "name"),
        (lead(requestId="short"), "requestId"),
        (lead(requestId="has spaces in it"), "requestId"),
        (lead(message="x" * 2001), "message"),
        (lead(utm={"utm_source": "ads", "evil": "1"}), "utm.evil"),
        ({"name": "Maria"}, "requestId"),
    ],
)
async def test_a_malformed_lead_gets_422_naming_the_field(
    api: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await api.post("/leads", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert field in [f["field"] for f in error["fields"]]


async def test_a_body_that_is_not_json_gets_422(api: httpx.AsyncClient) -> None:
    response = await api.post("/leads", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422


@pytest.mark.parametrize(
    ("contact", "kind"),
    [
        ("ann.k@Example.com", "email"),
        ("@ann_k", "telegram"),
        ("https://t.me/ann_k", "telegram"),
        ("+44 20 7946 0958", "phone"),
    ],
)
async def test_phone_email_and_telegram_contacts_are_accepted(
    api: httpx.AsyncClient, db: Database, contact: str, kind: str
) -> None:
    assert (await api.post("/leads", json=lead(contact=contact))).status_code == 201
    async with db.transaction() as repos:
        ((stored, _),) = await repos.leads.list_recent()
    assert stored.contact_kind == kind


async def test_the_rate_limit_is_shared_by_replicas_and_spares_retries(make_app: AppFactory) -> None:
    env = {"LEADS_RATE_LIMIT": 3, "LEADS_RATE_WINDOW_SEC": 600}
    async with client(make_app(**env)) as one, client(make_app(**env)) as two:
        answers = [
            await (one if i % 2 else two).post(
                "/leads", json=lead(f"req-0000001{i}", contact=f"+7999000000{i}")
            )
            for i in range(4)
        ]
        assert [a.status_code for a in answers] == [201, 201, 201, 429]
        assert answers[3].json()["error"]["code"] == "rate_limited"
        assert 0 < int(answers[3].headers["Retry-After"]) <= 600
        assert (
            await one.post("/leads", json=lead("req-00000010", contact="+79990000000"))
        ).status_code == 200
    async with client(make_app(**env), ip="198.51.100.9") as elsewhere:
        assert (
            await elsewhere.post("/leads", json=lead("req-00000020", contact="+79991111111"))
        ).status_code == 201


async def test_a_redis_that_never_answers_does_not_hold_the_visitor(
    make_app: AppFactory, db: Database
) -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # never answers; returns when the client hangs up

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    stuck = aioredis.Redis.from_url(f"redis://127.0.0.1:{port}/0", socket_timeout=30)
    try:
        async with client(make_app(publisher=Publisher(stuck))) as api:
            response = await asyncio.wait_for(
                api.post("/leads", json=lead()), timeout=5
            )  # the landing's limit
        assert response.status_code == 201
        async with db.transaction() as repos:
            assert len(await repos.leads.list_recent()) == 1  # stored: the leads service polls the rows
    finally:
        await stuck.aclose(close_connection_pool=True)
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_cors_allows_the_landing_origins_from_settings_only(make_app: AppFactory) -> None:
    app = make_app(LEADS_CORS_ORIGINS="https://landing.example.com, https://www.landing.example.com/")
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    async with client(app) as api:
        ok = await api.options("/leads", headers={"Origin": "https://www.landing.example.com", **preflight})
        bad = await api.options("/leads", headers={"Origin": "https://evil.example.com", **preflight})
        posted = await api.post("/leads", json=lead(), headers={"Origin": "https://landing.example.com"})
    assert (
        ok.status_code == 200
        and ok.headers["access-control-allow-origin"] == "https://www.landing.example.com"
    )
    assert "access-control-allow-origin" not in bad.headers
    assert posted.headers["access-control-allow-origin"] == "https://landing.example.com"


async def test_with_leads_off_the_endpoint_and_the_form_are_gone(make_app: AppFactory) -> None:
    async with client(make_app(LEADS_ENABLED="0")) as api:
        assert (await api.post("/leads", json=lead())).status_code == 404
        assert (await api.get("/landing")).status_code == 404
        assert (await api.get("/landing/leads.js")).status_code == 404


async def test_the_landing_page_and_its_script_are_served(api: httpx.AsyncClient) -> None:
    page = await api.get("/landing")
    script = await api.get("/landing/leads.js")
    assert page.status_code == 200 and "data-sticker-lead" in page.text and "/landing/leads.js" in page.text
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in page.headers["content-security-policy"] and "<style" not in page.text
    assert '<html lang="en">' in page.text and "{{" not in page.text
    assert "180 days after my last request" in page.text  # LEAD_RETENTION_DAYS' default
    for asset in ("/landing/landing.css", "/landing/landing.js"):
        assert asset in page.text and (await api.get(asset)).status_code == 200


@pytest.mark.parametrize(
    ("header", "query", "language"),
    [
        ("ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", None, "ru"),
        ("en-GB,en;q=0.9,ru;q=0.8", None, "en"),
        ("de-DE,de;q=0.9,ru;q=0.5", None, "ru"),
        ("de-DE,fr;q=0.9", None, "en"),
        ("ru;q=0, en", None, "en"),
        ("ru;q=oops", None, "en"),
        ("ru", "en", "en"),
        (None, "ru", "ru"),
    ],
)
async def test_the_landing_page_speaks_the_visitors_language(
    api: httpx.AsyncClient, header: str | None, query: str | None, language: str
) -> None:
    headers = {"Accept-Language": header} if header else {}
    page = await api.get("/landing", params={"lang": query} if query else None, headers=headers)
    assert page.status_code == 200 and f'<html lang="{language}">' in page.text
    assert page.headers["vary"] == "Accept-Language"


async def test_an_unknown_landing_language_is_a_422(api: httpx.AsyncClient) -> None:
    response = await api.get("/landing", params={"lang": "de"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("consent", [None, False, "yes", 1])
async def test_a_lead_without_consent_is_refused_and_not_stored(
    api: httpx.AsyncClient, db: Database, consent: object
) -> None:
    body = lead()
    if consent is None:
        del body["consent"]
    else:
        body["consent"] = consent
    response = await api.post("/leads", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] in ("consent_required", "invalid_request")
    assert "consent" in [f["field"] for f in error["fields"]]
    async with db.transaction() as repos:
        assert await repos.leads.find_request(body["requestId"]) is None


async def test_a_lead_records_when_the_visitor_consented(api: httpx.AsyncClient, db: Database) -> None:
    before = datetime.now(UTC)
    assert (await api.post("/leads", json=lead())).status_code == 201
    assert (await api.post("/leads", json=lead("req-00000002", message="again"))).status_code == 201
    async with db.transaction() as repos:
        first = await repos.leads.find_request("req-00000001")
        repeat = await repos.leads.find_request("req-00000002")
    assert first is not None and first.lead.consented_at is not None and first.lead.consented_at >= before
    assert repeat is not None and repeat.repeat is not None and repeat.repeat.consented_at is not None


async def test_the_admin_listing_needs_the_token(
    api: httpx.AsyncClient, make_app: AppFactory, db: Database
) -> None:
    await api.post("/leads", json=lead())
    async with db.transaction() as repos:
        await repos.leads.set_status(
            1, status="taken", allowed_from=["new"], by_id=7, by_name="Olga", now=_now()
        )
    assert (await api.get("/admin/leads")).status_code == 401
    assert (
        await api.get("/admin/leads", headers={"Authorization": "Bearer wrong-token-000000"})
    ).status_code == 401
    listed = await api.get("/admin/leads", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert listed.status_code == 200
    (row,) = listed.json()["leads"]
    assert (row["number"], row["status"], row["status_by"], row["card"]["state"]) == (
        1,
        "taken",
        "Olga",
        "pending",
    )
    taken_only = await api.get("/admin/leads?status=new", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert taken_only.json() == {"leads": []}
    async with client(make_app()) as no_token:
        off = await no_token.get("/admin/leads", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert off.status_code == 403 and off.json()["error"]["code"] == "admin_disabled"


def test_a_weak_admin_token_is_refused_at_start(database_url: str, redis_url: str) -> None:
    with pytest.raises(ValueError, match="ADMIN_TOKEN"):
        ingest_settings(database_url, redis_url, ADMIN_TOKEN="changeme")


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_a_lead_names_its_event_and_an_unknown_event_is_stored_as_none(
    api: httpx.AsyncClient, db: Database
) -> None:
    async with db.transaction() as repos:
        await repos.events.save(Event(id="tokyo", name="Tokyo fair", time_zone="Asia/Tokyo"))
    bodies = [
        lead("req-event-001", contact="a@example.com", event="tokyo"),
        lead("req-event-002", contact="b@example.com", event="gone-event"),  # a stale landing page
        lead("req-event-003", contact="c@example.com", event=42),
        lead("req-event-004", contact="d@example.com"),
    ]
    for body in bodies:
        answer = await api.post("/leads", json=body)
        assert answer.status_code == 201, answer.text
    async with db.transaction() as repos:
        stored = dict((await repos.conn.execute(sa.select(leads.c.request_id, leads.c.event_id))).all())
    assert stored == {
        "req-event-001": "tokyo",
        "req-event-002": None,
        "req-event-003": None,
        "req-event-004": None,
    }
