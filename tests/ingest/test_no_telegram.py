"""A guest without Telegram (issue 23 item 3): "no Telegram? get them here" on the kiosk makes the session
a download one; it takes its photo without a Telegram link, no bot message is queued for it, delivery
delivers the rendered pack as its download page (no set, the selfie erased), and the done screen gets the
page's QR code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.packs import PackDelivery
from delivery.settings import DeliverySettings
from ingest.main import create_app
from shared.db.tables import jobs, tg_commands
from shared.domain import JobStatus
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import agree, app_client, ingest_settings

pytestmark = pytest.mark.integration
PHOTO = (
    Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos" / "face-woman-red-hat.png"
).read_bytes()
BASE = "https://booth.example.com"


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    settings = ingest_settings(database_url, redis_url, PUBLIC_BASE_URL=BASE)
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as c:
        yield c


async def download_session(client: httpx.AsyncClient) -> dict[str, str]:
    body = (await client.post("/sessions", json={"station": "hall-a"})).json()
    chosen = await client.put(f"/sessions/{body['id']}/delivery", json={"mode": "download"})
    assert chosen.status_code == 200, chosen.text
    assert (chosen.json()["status"], chosen.json()["delivery"]) == ("choose_outfit", "download")
    return body


async def commands_of(db: Database) -> list[str]:
    async with db.engine.connect() as conn:
        return list((await conn.execute(sa.select(tg_commands.c.command_id))).scalars())


async def test_a_guest_without_telegram_takes_a_photo_and_gets_the_download_page(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    session = await download_session(client)
    sid = session["id"]
    assert (await client.put(f"/sessions/{sid}/outfit", json={"outfit_id": "pirate"})).status_code == 200
    assert (await agree(client, sid)).status_code == 200
    before = await commands_of(db)
    upload = await client.post(
        f"/sessions/{sid}/photo", files={"photo": ("p.png", PHOTO)}, data={"capture_id": "cap-1"}
    )
    assert upload.status_code == 202, upload.text
    assert await commands_of(db) == before  # no "Generating…" to a chat nobody has
    job_id = upload.json()["job_id"]
    again = await client.put(f"/sessions/{sid}/delivery", json={"mode": "download"})
    assert again.json()["error"]["code"] == "photo_sent"

    # The worker's part, as the worker's store step leaves it: 12 stickers, the job rendered.
    async with db.transaction() as repos:
        for i in range(12):
            await repos.blobs.put(
                kind="sticker", data=PHOTO, content_type="image/png", job_id=job_id, position=i
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job_id).values(status=JobStatus.RENDERED))
    settings = DeliverySettings(
        DATABASE_URL=database_url, REDIS_URL=redis_url, BOT_USERNAME="stickerbooth_bot", PUBLIC_BASE_URL=BASE
    )  # type: ignore[call-arg]
    await PackDelivery(db=db, publisher=Publisher(redis), settings=settings).request_set(job_id)

    async with db.transaction() as repos:
        job = await repos.jobs.get(job_id)
        assert job is not None and job.status == JobStatus.DELIVERED and job.sticker_set_name is None
        assert job.link_sent_at is not None and job.selfie_deleted_at is not None
        assert not await repos.blobs.ids_for_job(job_id, "selfie")  # erased as when a set is created
    assert await commands_of(db) == before  # no set, no link message: nothing for Telegram at all
    done = (
        await client.get(f"/sessions/{sid}/stickers", headers={"X-Session-Token": session["token"]})
    ).json()
    assert done["set_url"] is None and done["download_url"].startswith(f"{BASE}/d/")
    assert done["download_qr_svg"].startswith("data:image/svg+xml")
    page = await client.get(done["download_url"].removeprefix(BASE))
    assert page.status_code == 200 and page.text.count('loading="lazy"') == 12


async def test_without_a_public_base_url_downloads_are_not_offered(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    settings = ingest_settings(database_url, redis_url)
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as plain:
        assert (await plain.get("/kiosk/config")).json()["download_offered"] is False
        sid = (await plain.post("/sessions", json={"station": "hall-a"})).json()["id"]
        refused = await plain.put(f"/sessions/{sid}/delivery", json={"mode": "download"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "download_unavailable")
        status = (await plain.get(f"/sessions/{sid}")).json()
        assert status["status"] == "waiting_for_telegram"
        photo = await plain.post(
            f"/sessions/{sid}/photo", files={"photo": ("p.png", PHOTO)}, data={"capture_id": "c"}
        )
        assert photo.json()["error"]["code"] == "telegram_not_linked"


async def test_a_linked_guest_cannot_choose_download_and_linking_after_choosing_it_means_telegram(
    client: httpx.AsyncClient, db: Database
) -> None:
    assert (await client.get("/kiosk/config")).json()["download_offered"] is True
    session = await download_session(client)
    token = session["deep_link"].split("start=")[1]
    async with db.transaction() as repos:  # the guest scanned the QR code after all
        await repos.sessions.bind_telegram(token, user_id=91, chat_id=91, name="Ann", language="en")
    status = (await client.get(f"/sessions/{session['id']}")).json()
    assert (status["delivery"], status["telegram_linked"]) == ("telegram", True)
    refused = await client.put(f"/sessions/{session['id']}/delivery", json={"mode": "download"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "telegram_linked")
    bad = await client.put(f"/sessions/{session['id']}/delivery", json={"mode": "email"})
    assert bad.status_code == 422
    missing = await client.put(
        "/sessions/00000000-0000-0000-0000-000000000000/delivery", json={"mode": "download"}
    )
    assert missing.status_code == 404
