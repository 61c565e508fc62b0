"""The admin API behind the operators' page (issue 13 item 3): the overview, the job list with its guest,
search and paging, a job's page (timeline, stickers, contact sheet, calls, link messages), Retry refused
for failures a retry cannot fix, "Resend link" through the outbox, and the leads CSV export."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image

from shared import streams
from shared.db.tables import job_events, jobs
from shared.domain import JobStatus
from shared.likeness import LIKENESS_MAX_DISTANCE
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.texts import text
from tests.ingest.conftest import ADMIN_AUTH as AUTH

pytestmark = pytest.mark.integration
NOBODY = "00000000-0000-0000-0000-000000000000"


def png(colour: tuple[int, int, int, int] = (200, 40, 40, 255)) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (64, 64), colour).save(out, format="PNG")
    return out.getvalue()


async def guest_job(
    db: Database,
    *,
    name: str,
    user_id: int,
    username: str | None,
    status: JobStatus = JobStatus.DELIVERED,
    created_at: datetime | None = None,
    stickers: int = 0,
    **values: object,
) -> UUID:
    """A job of a bound guest at station ``hall-b``, in ``status`` with ``values`` set on its row."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="hall-b", token=f"tok-{user_id}-{name}-{created_at}")
        await repos.sessions.bind_telegram(
            session.token, user_id=user_id, chat_id=user_id, name=name, language="en", username=username
        )
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="pirate")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        for position in range(stickers):
            await repos.blobs.put(
                kind="sticker",
                data=png(),
                content_type="image/png",
                job_id=job.id,
                position=position,
                meta={"emoji": "😀"},
            )
        row: dict[str, object] = {"status": status.value, **values}
        if created_at is not None:
            row["created_at"] = created_at
            # the photo was accepted then too (its first event: where time to link starts)
            await repos.conn.execute(
                sa.update(job_events).where(job_events.c.job_id == job.id).values(at=created_at)
            )
        if status == JobStatus.DELIVERED:
            row.setdefault("sticker_set_name", f"sb{job.id.hex}_by_stickerbooth_bot")
            row.setdefault("link_sent_at", datetime.now(UTC))
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(**row))
    return job.id


# --- auth and bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/admin/overview"),
        ("GET", "/admin/jobs?q=anna"),
        ("GET", f"/admin/jobs/{NOBODY}"),
        ("GET", f"/admin/jobs/{NOBODY}/stickers/0"),
        ("GET", f"/admin/jobs/{NOBODY}/contact-sheet"),
        ("POST", f"/admin/jobs/{NOBODY}/resend-link"),
        ("GET", "/admin/leads.csv"),
    ],
)
async def test_every_console_route_needs_the_token(
    admin_client: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await admin_client.request(method, path)
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
    wrong = await admin_client.request(method, path, headers={"Authorization": "Bearer not-the-token-at-all"})
    assert wrong.status_code == 401


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/admin/jobs?cursor=garbage", 422, "invalid_cursor"),
        ("/admin/jobs?cursor=12_nothex", 422, "invalid_cursor"),
        ("/admin/jobs?limit=101", 422, "invalid_request"),
        ("/admin/jobs?limit=0", 422, "invalid_request"),
        ("/admin/jobs?q=" + "x" * 101, 422, "invalid_request"),
        ("/admin/jobs/not-a-uuid", 422, "invalid_request"),
        (f"/admin/jobs/{NOBODY}", 404, "not_found"),
        (f"/admin/jobs/{NOBODY}/stickers/0", 404, "not_found"),
        (f"/admin/jobs/{NOBODY}/stickers/99", 422, "invalid_request"),
        (f"/admin/jobs/{NOBODY}/contact-sheet", 404, "not_found"),
        ("/admin/leads.csv?status=bogus", 422, "invalid_request"),
    ],
)
async def test_bad_input_is_a_4xx_with_a_code(
    admin_client: httpx.AsyncClient, path: str, status: int, code: str
) -> None:
    response = await admin_client.get(path, headers=AUTH)
    assert response.status_code == status and response.json()["error"]["code"] == code, response.text


# --- overview ------------------------------------------------------------------------------------------


async def test_the_overview_shows_the_evening(admin_client: httpx.AsyncClient, db: Database) -> None:
    now = datetime.now(UTC)
    await guest_job(
        db,
        name="Anna",
        user_id=11,
        username="anna_k",
        created_at=now - timedelta(seconds=90),
        link_sent_at=now,
    )
    await guest_job(
        db,
        name="Boris",
        user_id=12,
        username=None,
        status=JobStatus.FAILED,
        error_class="permanent",
        error="no face found in the selfie",
    )
    async with db.transaction() as repos:
        await repos.usage.record(
            ApiCall(
                provider="gemini",
                model="m",
                kind="sheet",
                call_type="image",
                outcome="ok",
                cost_usd=0.42,
                latency_s=3.0,
            )
        )
    body = (await admin_client.get("/admin/overview", headers=AUTH)).json()
    assert body["guests_last_hour"] == 1
    assert body["time_to_link"]["p50_s"] == pytest.approx(90, abs=1)
    assert body["failures_today"] == {"no_face": 1}
    assert body["spend_today"] == {"usd": 0.42, "budget_usd": None}
    assert body["image_requests_today"] == {"by_provider": {"gemini": 1}, "limit": 1000}
    assert body["providers"]["by_provider"][0]["provider"] == "gemini"
    assert {s["stream"] for s in body["streams"]} >= {streams.JOBS, streams.TG_OUTBOX}
    assert body["pause"] is None


# --- job list ------------------------------------------------------------------------------------------


async def test_the_job_list_shows_the_guest_and_finds_them_every_way(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    anna = await guest_job(db, name="Anna", user_id=555001, username="anna_k")
    boris = await guest_job(
        db,
        name="Boris",
        user_id=555002,
        username="b_100%",
        status=JobStatus.FAILED,
        error_class="deadline",
        error="late",
    )
    listed = {j["id"]: j for j in (await admin_client.get("/admin/jobs", headers=AUTH)).json()["jobs"]}
    row = listed[str(anna)]
    assert row["guest"] == {"name": "Anna", "username": "anna_k", "user_id": 555001}
    assert (row["station"], row["outfit_id"], row["resendable"], row["retryable"]) == (
        "hall-b",
        "pirate",
        True,
        False,
    )
    assert (listed[str(boris)]["failure"], listed[str(boris)]["retryable"]) == ("deadline", True)

    async def found(q: str) -> set[str]:
        response = await admin_client.get("/admin/jobs", params={"q": q}, headers=AUTH)
        assert response.status_code == 200, response.text
        return {j["id"] for j in response.json()["jobs"]}

    assert await found("ann") == {str(anna)}  # guest name, any case
    assert await found("@ANNA_K") == {str(anna)}  # @username
    assert await found("555002") == {str(boris)}  # Telegram user id
    assert await found(str(boris)[:8]) == {str(boris)}  # job id prefix
    assert await found(anna.hex[:12]) == {str(anna)}  # set name
    assert await found("100%") == {str(boris)}  # a LIKE wildcard is a character, not "anything"
    assert await found("a%") == set()  # as a wildcard it would find "anna_k"
    assert await found("nobody") == set()


async def test_paging_walks_every_job_once_newest_first(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    start = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)
    made = [
        await guest_job(
            db, name=f"G{n}", user_id=9000 + n, username=None, created_at=start + timedelta(minutes=n // 2)
        )
        for n in range(7)
    ]  # pairs share a created_at: the id breaks the tie
    seen: list[tuple[str, str]] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        body = (await admin_client.get("/admin/jobs", params=params, headers=AUTH)).json()
        seen += [(j["created_at"], j["id"]) for j in body["jobs"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and len(seen) == 7
    assert sorted(i for _, i in seen) == sorted(str(m) for m in made)
    assert seen == sorted(seen, reverse=True)  # newest first, ties by id, each job once


# --- job page ------------------------------------------------------------------------------------------


async def test_a_job_page_has_its_timeline_stickers_sheet_and_calls(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    job_id = await guest_job(
        db, name="Anna", user_id=21, username="anna_k", status=JobStatus.QUEUED, stickers=12
    )
    async with db.transaction() as repos:
        await repos.jobs.claim(job_id, owner="w1")
        for cost, outcome in ((0.04, "ok"), (0.0, "rate_limit"), (0.13, "ok")):
            await repos.usage.record(
                ApiCall(
                    provider="gemini",
                    model="img",
                    kind="sheet",
                    call_type="image",
                    outcome=outcome,
                    cost_usd=cost,
                    latency_s=2.5,
                    job_id=job_id,
                )
            )
    body = (await admin_client.get(f"/admin/jobs/{job_id}", headers=AUTH)).json()
    assert [e["to"] for e in body["events"]] == ["queued", "processing"]
    assert body["guest"]["username"] == "anna_k" and body["station"] == "hall-b"
    assert [s["position"] for s in body["stickers"]] == list(range(12)) and body["stickers"][0][
        "emoji"
    ] == "😀"
    assert [c["outcome"] for c in body["calls"]] == ["ok", "rate_limit", "ok"]
    assert body["cost_usd"] == pytest.approx(0.17)
    sticker = await admin_client.get(body["stickers"][3]["url"], headers=AUTH)
    assert sticker.status_code == 200 and sticker.headers["content-type"] == "image/png"
    assert sticker.headers["cache-control"] == "private, no-store"
    assert (await admin_client.get(f"/admin/jobs/{job_id}/stickers/12", headers=AUTH)).status_code == 404
    sheet = await admin_client.get(body["contact_sheet_url"], headers=AUTH)
    assert sheet.status_code == 200
    with Image.open(io.BytesIO(sheet.content)) as image:
        assert image.size == (4 * 192, 3 * 192)
        assert image.getpixel((96, 96))[:3] == (200, 40, 40)  # the first sticker sits in the first cell


async def test_each_sticker_shows_its_likeness_or_why_it_has_none(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    """Issue 20 item 5: each sticker carries the distance the worker stored in its blob's meta, or
    ``null`` with the worker's reason, or ``not_scored`` when it was stored before likeness existed; the
    answer carries the bound the page marks against."""
    job_id = await guest_job(db, name="Lena", user_id=31, username="lena_l")
    metas: list[dict[str, object]] = [
        {"emoji": "😀", "likeness": 0.41, "likeness_reason": None},  # judged, like the guest
        {"emoji": "😎", "likeness": None, "likeness_reason": "eyes_hidden"},  # not judged, says why
        {"emoji": "🙂"},  # stored before issue 20
        {"emoji": "😮", "likeness": 0.87, "likeness_reason": None},  # judged, not like the guest
        {"emoji": "😐", "likeness": 0, "likeness_reason": None},  # identical: 0 is a distance, not "none"
        {"emoji": "🤔", "likeness": "far", "likeness_reason": None},  # not a number: no distance, no 500
    ]
    async with db.transaction() as repos:
        for position, meta in enumerate(metas):
            await repos.blobs.put(
                kind="sticker",
                data=png(),
                content_type="image/png",
                job_id=job_id,
                position=position,
                meta=meta,
            )
    response = await admin_client.get(f"/admin/jobs/{job_id}", headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["likeness_bound"] == LIKENESS_MAX_DISTANCE
    assert [(s["position"], s["emoji"], s["likeness"], s["likeness_reason"]) for s in body["stickers"]] == [
        (0, "😀", 0.41, None),
        (1, "😎", None, "eyes_hidden"),
        (2, "🙂", None, "not_scored"),
        (3, "😮", 0.87, None),
        (4, "😐", 0.0, None),
        (5, "🤔", None, None),
    ]
    assert body["stickers"][3]["url"] == f"/admin/jobs/{job_id}/stickers/3"
    # the stickers' likeness is read without their bytes, but the images are still there
    assert (await admin_client.get(body["stickers"][5]["url"], headers=AUTH)).status_code == 200


async def test_the_openapi_document_describes_the_job_page_and_its_likeness(
    admin_client: httpx.AsyncClient,
) -> None:
    document = (await admin_client.get("/admin/openapi.json", headers=AUTH)).json()
    answer = document["paths"]["/admin/jobs/{job_id}"]["get"]["responses"]["200"]["content"]
    assert answer["application/json"]["schema"] == {"$ref": "#/components/schemas/JobDetailOut"}
    schemas = document["components"]["schemas"]
    job = schemas["JobDetailOut"]["properties"]
    assert (
        job["likeness_bound"]["type"] == "number"
        and "LIKENESS_MAX_DISTANCE" in job["likeness_bound"]["description"]
    )
    assert job["stickers"]["items"] == {"$ref": "#/components/schemas/StickerOut"}
    sticker = schemas["StickerOut"]["properties"]
    assert {"type": "number"} in sticker["likeness"]["anyOf"] and {"type": "null"} in sticker["likeness"][
        "anyOf"
    ]
    assert "not_scored" in sticker["likeness_reason"]["description"]
    assert "from" in schemas["EventOut"]["properties"]  # the timeline's key, as the page reads it


# --- retry and resend ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_class", "error", "code"),
    [
        ("permanent", "no face found in the selfie", "retry_cannot_help"),
        ("permanent", "unknown outfit 'x'", "retry_cannot_help"),
        ("content", "every provider refused", "content_refused"),
    ],
)
async def test_retry_is_refused_for_failures_it_cannot_fix(
    admin_client: httpx.AsyncClient,
    db: Database,
    redis: aioredis.Redis,
    error_class: str,
    error: str,
    code: str,
) -> None:
    job_id = await guest_job(
        db, name="C", user_id=31, username=None, status=JobStatus.FAILED, error_class=error_class, error=error
    )
    shown = (await admin_client.get(f"/admin/jobs/{job_id}", headers=AUTH)).json()
    assert shown["retryable"] is False
    response = await admin_client.post(f"/admin/jobs/{job_id}/retry", headers=AUTH)
    assert response.status_code == 409 and response.json()["error"]["code"] == code
    assert await redis.xlen(streams.JOBS) == 0


async def test_resend_link_queues_the_link_message_again_once_per_press(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    job_id = await guest_job(db, name="Anna", user_id=41, username="anna_k")
    first = await admin_client.post(f"/admin/jobs/{job_id}/resend-link", headers=AUTH)
    second = await admin_client.post(f"/admin/jobs/{job_id}/resend-link", headers=AUTH)
    assert first.status_code == second.status_code == 200, first.text
    ids = [first.json()["command_id"], second.json()["command_id"]]
    assert ids == [f"job:{job_id}:resend_link:1", f"job:{job_id}:resend_link:2"]
    assert await redis.xlen(streams.TG_OUTBOX) == 2
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(ids[1])
        job = await repos.jobs.get(job_id)
    assert record is not None and job is not None and record.method == "send_message"
    link = f"https://t.me/addstickers/{job.sticker_set_name}"
    assert record.params["chat_id"] == 41 and record.params["text"] == text("pack_ready", "en", link=link)
    page = (await admin_client.get(f"/admin/jobs/{job_id}", headers=AUTH)).json()
    assert [m["command_id"] for m in page["link_messages"]] == ids


async def test_resend_link_of_a_job_not_delivered_is_a_409_and_of_none_a_404(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    job_id = await guest_job(db, name="D", user_id=51, username=None, status=JobStatus.PROCESSING)
    response = await admin_client.post(f"/admin/jobs/{job_id}/resend-link", headers=AUTH)
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_delivered"
    missing = await admin_client.post(f"/admin/jobs/{NOBODY}/resend-link", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert await redis.xlen(streams.TG_OUTBOX) == 0


# --- leads CSV -----------------------------------------------------------------------------------------


async def test_the_leads_csv_quotes_cells_and_disarms_formulas(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    submissions = [
        ('=HYPERLINK("http://evil")', "+7 999 123-45-67", 'Hello, "world"\nsecond line'),
        ("Анна", "@anna_k", "-2+3"),
        ("Plain", "a@example.org", "ok"),
    ]
    async with db.transaction() as repos:
        for n, (name, contact, message) in enumerate(submissions):
            await repos.leads.submit(
                request_id=f"r{n}",
                name=name,
                contact=contact,
                contact_kind="other",
                contact_key=f"k{n}",
                message=message,
                source_page=None,
                utm={"utm_source": "x"},
            )
    response = await admin_client.get("/admin/leads.csv", headers=AUTH)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"].startswith('attachment; filename="leads-')
    raw = response.content.decode("utf-8")
    assert raw.startswith("\ufeffnumber,created_at,")
    rows = list(csv.DictReader(io.StringIO(raw.removeprefix("\ufeff"), newline="")))
    by_number = {r["number"]: r for r in rows}
    assert by_number["1"]["name"] == '\'=HYPERLINK("http://evil")'
    assert by_number["1"]["contact"] == "'+7 999 123-45-67"
    assert by_number["1"]["message"] == 'Hello, "world"\nsecond line'  # quoted, the quote doubled
    assert (by_number["2"]["name"], by_number["2"]["contact"], by_number["2"]["message"]) == (
        "Анна",
        "'@anna_k",
        "'-2+3",
    )
    assert (by_number["3"]["contact"], by_number["3"]["utm"]) == ("a@example.org", "utm_source=x")
    assert '"Hello, ""world""\nsecond line"' in raw


async def test_queued_again_shows_only_while_the_job_waits_again_then_retried(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    job_id = await guest_job(
        db,
        name="Vera",
        user_id=555301,
        username=None,
        status=JobStatus.FAILED,
        error_class="timeout",
        error="x",
    )
    fresh = await guest_job(db, name="Ivo", user_id=555302, username=None, status=JobStatus.QUEUED)

    async def row(job: UUID) -> dict[str, object]:
        listed = (await admin_client.get("/admin/jobs", headers=AUTH)).json()["jobs"]
        found: dict[str, object] = next(j for j in listed if j["id"] == str(job))
        return found

    retried = await admin_client.post(f"/admin/jobs/{job_id}/retry", headers=AUTH)
    assert retried.status_code == 200
    assert (retried.json()["requeues"], retried.json()["queued_again"]) == (1, True)
    assert ((await row(job_id))["requeues"], (await row(job_id))["queued_again"]) == (1, True)
    assert ((await row(fresh))["requeues"], (await row(fresh))["queued_again"]) == (0, False)  # first time
    # a worker takes it, a shutdown requeues it (2), it is taken again and delivered
    async with db.transaction() as repos:
        assert await repos.jobs.claim(job_id, owner="w1")
        assert await repos.jobs.requeue_after_shutdown(job_id, owner="w1", free=True)
    assert ((await row(job_id))["requeues"], (await row(job_id))["queued_again"]) == (2, True)
    async with db.transaction() as repos:
        assert await repos.jobs.claim(job_id, owner="w2")
    assert (await row(job_id))["queued_again"] is False  # being made: no longer waiting
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job_id)
            .values(status=JobStatus.DELIVERED.value, link_sent_at=datetime.now(UTC))
        )
    delivered = await row(job_id)
    assert (delivered["status"], delivered["requeues"], delivered["queued_again"]) == ("delivered", 2, False)
    page = (await admin_client.get(f"/admin/jobs/{job_id}", headers=AUTH)).json()
    assert (page["requeues"], page["queued_again"]) == (2, False)
