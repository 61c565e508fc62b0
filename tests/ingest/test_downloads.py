"""The download page ``/d/<token>`` (issue 23 item 3): 12 valid stickers as PNG, WebP and a zip, a token
that cannot be forged, and a page that is gone after erasure and after retention."""

from __future__ import annotations

import io
import zipfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image, ImageDraw

from ingest.api.downloads import page_language
from ingest.main import create_app
from shared.db.tables import jobs
from shared.domain import JobStatus
from shared.downloads import KEY_SETTING, download_key, download_token, job_of_token
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings

pytestmark = pytest.mark.integration
#: What a phone's browser sends: error pages come as HTML to it, as the JSON error body to anything else.
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def sticker(n: int, size: tuple[int, int] = (512, 400)) -> bytes:
    """A sticker-like PNG: a coloured disc on transparency, different for each ``n``."""
    im = Image.new("RGBA", size, (0, 0, 0, 0))
    ImageDraw.Draw(im).ellipse((40, 40, size[0] - 40, size[1] - 40), fill=(20 * n % 255, 90, 200, 255))
    out = io.BytesIO()
    im.save(out, "PNG")
    return out.getvalue()


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    settings = ingest_settings(database_url, redis_url)
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as c:
        yield c


async def delivered_job(db: Database, *, status: str = JobStatus.DELIVERED, stickers: int = 12) -> UUID:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="hall-a", token=f"t-{datetime.now(UTC).timestamp()}")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(stickers):
            await repos.blobs.put(
                kind="sticker", data=sticker(i), content_type="image/png", job_id=job.id, position=i
            )
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.id)
            .values(status=status, link_sent_at=datetime.now(UTC) - timedelta(days=1))
        )
    return job.id


async def token_of(db: Database, job_id: UUID) -> str:
    async with db.transaction() as repos:
        return download_token(await download_key(repos), job_id)


async def test_the_page_lists_twelve_stickers_and_every_file_is_a_valid_image(
    db: Database, client: httpx.AsyncClient
) -> None:
    token = await token_of(db, await delivered_job(db))
    page = await client.get(f"/d/{token}")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "script" not in page.headers["content-security-policy"].replace("default-src 'none'", "")
    assert 'name="viewport"' in page.text
    for position in range(12):
        assert f'src="/d/{token}/{position}.webp"' in page.text
        png = await client.get(f"/d/{token}/{position}.png")
        webp = await client.get(f"/d/{token}/{position}.webp")
        assert (png.headers["content-type"], webp.headers["content-type"]) == ("image/png", "image/webp")
        with Image.open(io.BytesIO(png.content)) as im:
            assert (im.format, im.size, im.mode) == ("PNG", (512, 400), "RGBA")
        with Image.open(io.BytesIO(webp.content)) as im:
            # WhatsApp's sticker format: 512 × 512 px WebP with transparency, at most 100 KB.
            assert (im.format, im.size) == ("WEBP", (512, 512))
            assert im.convert("RGBA").getchannel("A").getpixel((0, 0)) == 0
        assert len(webp.content) <= 100_000
    assert (await client.get(f"/d/{token}/12.png")).json()["error"]["code"] == "not_found"


async def test_the_zip_holds_the_twelve_stickers_in_both_formats(
    db: Database, client: httpx.AsyncClient
) -> None:
    token = await token_of(db, await delivered_job(db))
    answer = await client.get(f"/d/{token}/stickers.zip")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        names = archive.namelist()
        assert names == [f"sticker-{n:02d}.{ext}" for n in range(1, 13) for ext in ("png", "webp")]
        for name in names:
            with Image.open(io.BytesIO(archive.read(name))) as im:
                im.verify()
        assert archive.read("sticker-03.png") == sticker(2)


async def test_a_forged_or_altered_token_finds_nothing(db: Database, client: httpx.AsyncClient) -> None:
    job_id = await delivered_job(db)
    token = await token_of(db, job_id)
    # The same job id with another key's tag, one altered character, a token of another length.
    forged = download_token(b"k" * 32, job_id)
    altered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    for bad in (forged, altered, token[:-1], "x" * 43):
        page = await client.get(f"/d/{bad}", headers=BROWSER)
        assert page.status_code == 404, bad
        assert 'data-error="not_found"' in page.text
        assert (await client.get(f"/d/{bad}/0.png")).status_code in {404, 422}
    stored = await key(db)
    assert job_of_token(stored, token) == job_id
    assert job_of_token(stored, forged) is None


async def key(db: Database) -> bytes:
    async with db.transaction() as repos:
        return await download_key(repos)


async def test_the_key_is_made_once_and_shared(db: Database) -> None:
    first, second = await key(db), await key(db)
    assert first == second and len(first) == 32
    async with db.transaction() as repos:
        await repos.settings.delete(KEY_SETTING)  # revokes every link issued so far
    assert await key(db) != first


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.PROCESSING, JobStatus.FAILED])
async def test_a_job_still_drawn_or_failed_has_no_page(
    db: Database, client: httpx.AsyncClient, status: str
) -> None:
    token = await token_of(db, await delivered_job(db, status=status))
    assert (await client.get(f"/d/{token}")).status_code == 404
    assert (await client.get(f"/d/{token}/stickers.zip")).json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("status", [JobStatus.RENDERED, JobStatus.DELIVERING])
async def test_a_rendered_pack_has_its_page_before_delivery_marks_it_delivered(
    db: Database, client: httpx.AsyncClient, status: str
) -> None:
    token = await token_of(db, await delivered_job(db, status=status))
    assert (await client.get(f"/d/{token}")).status_code == 200


async def test_the_page_is_gone_after_erasure(db: Database, client: httpx.AsyncClient) -> None:
    job_id = await delivered_job(db)
    token = await token_of(db, job_id)
    assert (await client.get(f"/d/{token}")).status_code == 200
    async with db.transaction() as repos:
        await repos.erasure.erase_jobs([job_id])
    page = await client.get(f"/d/{token}", headers=BROWSER)
    assert page.status_code == 404 and 'data-error="not_found"' in page.text
    assert (await client.get(f"/d/{token}")).json()["error"]["code"] == "not_found"  # not a browser
    assert (await client.get(f"/d/{token}/0.webp")).json()["error"]["code"] == "not_found"


async def test_the_page_expires_with_the_stickers_retention(db: Database, client: httpx.AsyncClient) -> None:
    job_id = await delivered_job(db)
    token = await token_of(db, job_id)
    async with db.transaction() as repos:
        kept = await repos.retention.purge_stickers(
            delivered_before=datetime.now(UTC) - timedelta(days=2), failed_before=datetime.now(UTC), limit=100
        )
    assert kept.selected == 0
    assert (await client.get(f"/d/{token}")).status_code == 200
    async with db.transaction() as repos:
        await repos.retention.purge_stickers(
            delivered_before=datetime.now(UTC), failed_before=datetime.now(UTC), limit=100
        )
    page = await client.get(f"/d/{token}", headers=BROWSER)
    assert page.status_code == 410
    assert 'data-error="expired"' in page.text
    assert (await client.get(f"/d/{token}/stickers.zip")).json()["error"]["code"] == "expired"


async def test_the_page_speaks_the_phones_language(db: Database, client: httpx.AsyncClient) -> None:
    job_id = await delivered_job(db)
    token = await token_of(db, job_id)
    german = await client.get(
        f"/d/{token}", headers={**BROWSER, "Accept-Language": "de-AT,de;q=0.9,en;q=0.5"}
    )
    assert '<html lang="de">' in german.text and "Deine 12 Sticker" in german.text
    assert "Alle herunterladen (ZIP)" in german.text and 'alt="Sticker 3"' in german.text
    assert german.headers["vary"] == "Accept, Accept-Language"
    french = await client.get(f"/d/{token}", headers={**BROWSER, "Accept-Language": "fr-FR,fr;q=0.9"})
    assert '<html lang="en">' in french.text and "Your 12 stickers" in french.text  # no French catalogue
    async with db.transaction() as repos:
        await repos.erasure.erase_jobs([job_id])
    spanish = await client.get(f"/d/{token}", headers={**BROWSER, "Accept-Language": "fr;q=0.9,es;q=0.8"})
    assert spanish.status_code == 404 and "Aquí no hay nada" in spanish.text


@pytest.mark.parametrize(
    ("header", "language"),
    [("", "en"), ("ru", "ru"), ("en;q=0.5,es", "es"), ("de;q=0,es", "es"), ("*", "en"), ("fr,de;q=x", "en")],
)
def test_the_page_language_follows_accept_language_weights(header: str, language: str) -> None:
    assert page_language(header) == language
