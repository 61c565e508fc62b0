"""The kiosk API against real Postgres and Redis: the guest journey's HTTP half and its refusals."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image
from prometheus_client import REGISTRY

from ingest.main import create_app
from shared import streams
from shared.db.tables import photo_refusals
from shared.messages import JobQueued, TelegramCommand, decode
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.conftest import ADMIN_AUTH
from tests.ingest.ingest_helpers import agree, app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(ingest_settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    async with app_client(app, base_url="http://kiosk") as c:
        yield c


async def stored_rows(db: Database, table: str) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(sa.text(f"SELECT count(*) FROM {table}"))).scalar_one())


def photo_bytes(name: str = "face-woman-red-hat.png") -> bytes:
    return (PHOTOS / name).read_bytes()


async def upload(client: httpx.AsyncClient, sid: str, data: bytes, capture: str = "cap-1") -> httpx.Response:
    return await client.post(
        f"/sessions/{sid}/photo", files={"photo": ("x.bin", data)}, data={"capture_id": capture}
    )


async def test_a_session_carries_a_deep_link_and_a_qr_code(client: httpx.AsyncClient) -> None:
    response = await client.post("/sessions", json={"station": "hall-a"})
    assert response.status_code == 201
    body = response.json()
    token = body["deep_link"].removeprefix("https://t.me/stickerbooth_bot?start=")
    assert 1 <= len(token) <= 64 and all(c.isalnum() or c in "_-" for c in token)
    assert body["qr_svg"].startswith("data:image/svg+xml")
    assert body["status"] == "waiting_for_telegram"


async def test_outfits_list_the_catalog(client: httpx.AsyncClient) -> None:
    outfits = (await client.get("/outfits")).json()
    assert len(outfits) >= 4
    assert {"id", "title", "prompt", "body_template", "thumbnail_url"} <= set(outfits[0])


async def test_an_accepted_photo_queues_the_job_and_the_generating_message(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    sid = await linked_session(client, db)
    response = await upload(client, sid, photo_bytes())
    assert response.status_code == 202, response.text
    job_id = UUID(response.json()["job_id"])
    jobs = await redis.xrange(streams.JOBS)
    assert [decode(fields) for _id, fields in jobs] == [JobQueued(job_id=job_id)]
    commands = [decode(fields) for _id, fields in await redis.xrange(streams.TG_OUTBOX)]
    assert commands == [TelegramCommand(command_id=f"job:{job_id}:generating")]
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(f"job:{job_id}:generating")
        selfie = await repos.blobs.for_job(job_id, "selfie")
        job = await repos.jobs.get(job_id)
    assert record is not None and record.params["chat_id"] == 77 and "Генерируем" in record.params["text"]
    assert len(selfie) == 1 and selfie[0].data[:2] == b"\xff\xd8"
    assert job is not None and job.status == "queued"
    status = (await client.get(f"/sessions/{sid}")).json()
    assert status["status"] == "generating" and status["captures_left"] == 1


async def test_the_same_capture_uploaded_twice_makes_one_job(client: httpx.AsyncClient, db: Database) -> None:
    sid = await linked_session(client, db)
    first = await upload(client, sid, photo_bytes())
    second = await upload(client, sid, photo_bytes())
    assert (first.status_code, second.status_code) == (202, 200)
    assert first.json()["job_id"] == second.json()["job_id"]
    assert (await client.get(f"/sessions/{sid}")).json()["captures"] == 1


async def test_a_third_capture_is_refused(client: httpx.AsyncClient, db: Database) -> None:
    sid = await linked_session(client, db)
    assert (await upload(client, sid, photo_bytes(), "a")).status_code == 202
    assert (await upload(client, sid, photo_bytes(), "b")).status_code == 202
    third = await upload(client, sid, photo_bytes(), "c")
    assert third.status_code == 409 and third.json()["error"]["code"] == "capture_limit"


async def test_upload_before_telegram_or_outfit_is_refused(client: httpx.AsyncClient, db: Database) -> None:
    unlinked = (await client.post("/sessions", json={})).json()["id"]
    response = await upload(client, unlinked, photo_bytes())
    assert response.status_code == 409 and response.json()["error"]["code"] == "telegram_not_linked"
    no_outfit = await linked_session(client, db, outfit=None)
    response = await upload(client, no_outfit, photo_bytes())
    assert response.status_code == 409 and response.json()["error"]["code"] == "outfit_not_chosen"


async def test_the_consent_screen_names_the_providers_the_link_and_the_retention(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    venue = ingest_settings(
        database_url,
        redis_url,
        PRIMARY_AI_PROVIDER="openai",
        FALLBACK_AI_PROVIDER="local",
        SELFIE_RETENTION_HOURS=6,
        STICKER_RETENTION_DAYS=14,
    )
    app = create_app(venue, db=db, publisher=Publisher(redis))
    async with app_client(app, base_url="http://kiosk") as client:
        body = (await client.get("/consent")).json()
    assert body["providers"] == ["openai", "local"]
    assert (body["selfie_retention_hours"], body["sticker_retention_days"]) == (6, 14)
    en, ru = "\n".join(body["points"]["en"]), "\n".join(body["points"]["ru"])
    assert "OpenAI or the booth's own server" in en and "OpenAI или собственный сервер стойки" in ru
    assert "anyone with its link" in en and "6 hours" in en and "14 days" in en and "/delete" in en
    assert "6 ч" in ru and "14 дн." in ru and "/delete" in ru
    de, es = body["points"]["de"], body["points"]["es"]  # every catalogue's language (shared/locales)
    assert de[0] == (
        "Um deine Sticker zu zeichnen, wird dein Foto an OpenAI oder einen eigenen Server der Station "
        "gesendet."
    )
    assert (
        es[0] == "Para dibujar tus stickers, enviamos tu foto a OpenAI o bien un servidor propio del stand."
    )
    assert "höchstens 6 Stunden" in de[2] and "14 Tage" in de[2] and "14 días" in es[2]
    assert body["version"].startswith("1-")


async def test_the_consent_text_and_its_version_come_from_the_settings(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    bodies = []
    for text in ("Photos go to {providers}.\\nKept {selfie_hours} h.", "Photos go to {providers}."):
        venue = ingest_settings(database_url, redis_url, CONSENT_VERSION="2026-12", CONSENT_TEXT_EN=text)
        app = create_app(venue, db=db, publisher=Publisher(redis))
        async with app_client(app, base_url="http://k") as client:
            bodies.append((await client.get("/consent")).json())
    assert bodies[0]["points"]["en"] == ["Photos go to Google Gemini or OpenAI.", "Kept 24 h."]
    assert bodies[1]["points"]["en"] == ["Photos go to Google Gemini or OpenAI."]
    versions = [b["version"] for b in bodies]
    assert all(v.startswith("2026-12-") for v in versions) and versions[0] != versions[1]
    with pytest.raises(ValueError, match="unknown placeholder"):
        ingest_settings(database_url, redis_url, CONSENT_TEXT_RU="Фото уходит в {provider}")


@pytest.mark.parametrize(
    "text", ["{providers:d}", "{providers!z}", "{providers:{selfie_hours}}", "{selfie_hours:>30000000}"]
)
def test_a_placeholder_with_a_format_spec_or_conversion_stops_ingest_at_start_up(
    text: str, database_url: str, redis_url: str
) -> None:
    """They would pass a names-only check and then fail (500) or balloon on every GET /consent."""
    with pytest.raises(ValueError, match="must be written bare"):
        ingest_settings(database_url, redis_url, CONSENT_TEXT_EN=f"Photos go to {text}.")


async def test_an_upload_without_consent_is_refused_and_nothing_is_written(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    sid = await linked_session(client, db, consent=False)
    assert (await client.get(f"/sessions/{sid}")).json()["status"] == "consent_required"
    response = await upload(client, sid, photo_bytes())
    assert response.status_code == 403 and response.json()["error"]["code"] == "consent_required"
    assert (await stored_rows(db, "jobs"), await stored_rows(db, "blobs")) == (0, 0)
    assert (await stored_rows(db, "tg_commands"), await redis.xlen(streams.JOBS)) == (0, 0)
    assert (await client.get(f"/sessions/{sid}")).json()["captures"] == 0


async def test_consent_is_recorded_with_its_version_and_time_once_then_the_upload_is_accepted(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db, consent=False)
    version = (await client.get("/consent")).json()["version"]
    first = await agree(client, sid, "es")
    assert first.status_code == 200 and first.json()["status"] == "ready_for_photo"
    recorded = first.json()["consent"]
    assert (recorded["version"], recorded["language"]) == (version, "es")
    again = await agree(client, sid, "en")  # a second tap: nothing changes
    assert again.status_code == 200 and again.json()["consent"] == recorded
    async with db.transaction() as repos:
        session = await repos.sessions.get(UUID(sid))
    assert session is not None and session.consent_version == version and session.consent_language == "es"
    assert session.consented_at is not None and session.consented_at.isoformat() == recorded["at"]
    assert (await upload(client, sid, photo_bytes())).status_code == 202


async def test_consent_to_an_outdated_text_or_an_unknown_session_is_refused(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = await linked_session(client, db, consent=False)
    stale = await client.put(f"/sessions/{sid}/consent", json={"version": "0-deadbeef"})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "consent_outdated"
    assert (await client.get(f"/sessions/{sid}")).json()["consent"] is None
    unknown = await agree(client, "00000000-0000-4000-8000-000000000000")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    wrong_language = await client.put(f"/sessions/{sid}/consent", json={"version": "x", "language": "fr"})
    assert wrong_language.status_code == 422


async def test_the_upload_documents_consent_required(admin_client: httpx.AsyncClient) -> None:
    document = (await admin_client.get("/admin/openapi.json", headers=ADMIN_AUTH)).json()
    refusals = document["paths"]["/sessions/{session_id}/photo"]["post"]["responses"]
    assert "consent_required" in refusals["403"]["description"]
    consent = document["paths"]["/sessions/{session_id}/consent"]["put"]["responses"]
    assert "consent_outdated" in consent["409"]["description"]


def _png_header_claiming(width: int, height: int) -> bytes:
    """A tiny, well-formed PNG whose header claims ``width`` × ``height`` px (shaped like a bomb)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 1024)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (b"", 422, "empty_file"),
        (b"%PDF-1.4 not an image at all" * 10, 415, "unsupported_format"),
        ("truncated-jpeg.jpg", 422, "corrupt_image"),
        (_png_header_claiming(60_000, 60_000), 413, "too_many_pixels"),
        ("heic-iphone-pug.heic", 422, "no_face"),
    ],
)
async def test_bad_photos_get_a_coded_4xx_and_nothing_is_stored(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis, data: bytes | str, status: int, code: str
) -> None:
    sid = await linked_session(client, db)
    payload = photo_bytes(data) if isinstance(data, str) else data
    response = await upload(client, sid, payload)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    async with db.transaction() as repos:
        assert await repos.jobs.for_session(UUID(sid)) == []
    assert await redis.xlen(streams.JOBS) == 0
    assert (await client.get(f"/sessions/{sid}")).json()["captures"] == 0
    # ... but the refusal is counted for the operators: its code, station and session, no photo
    assert await refusals(db) == [(UUID(sid), "hall-a", code)]


async def refusals(db: Database) -> list[tuple[UUID, str, str]]:
    """Every ``photo_refusals`` row as (session id, station, code), oldest first."""
    query = sa.select(photo_refusals.c.session_id, photo_refusals.c.station, photo_refusals.c.code)
    async with db.transaction() as repos:
        return [tuple(r) for r in await repos.conn.execute(query.order_by(photo_refusals.c.id))]  # type: ignore[misc]


def refusal_count(code: str) -> float:
    return REGISTRY.get_sample_value("stk_photo_refusals_total", {"code": code}) or 0.0


async def test_refused_photos_are_counted_by_code_in_the_overview_and_metrics_not_other_4xx(
    client: httpx.AsyncClient, admin_client: httpx.AsyncClient, db: Database
) -> None:
    before = {code: refusal_count(code) for code in ("no_face", "corrupt_image")}
    sid = await linked_session(client, db)
    for capture in ("a", "b"):
        assert (await upload(client, sid, photo_bytes("heic-iphone-pug.heic"), capture)).status_code == 422
    assert (await upload(client, sid, photo_bytes("truncated-jpeg.jpg"), "c")).status_code == 422
    # not a refused photo: the session was not ready (no consent) or the request had no capture id
    unready = await linked_session(client, db, consent=False, user_id=78)
    assert (await upload(client, unready, photo_bytes())).status_code == 403
    missing = await client.post(f"/sessions/{sid}/photo", files={"photo": ("x.png", photo_bytes())})
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "capture_id_required"
    assert refusal_count("no_face") - before["no_face"] == 2
    assert refusal_count("corrupt_image") - before["corrupt_image"] == 1
    overview = (await admin_client.get("/admin/overview", headers=ADMIN_AUTH)).json()
    assert overview["refused_last_hour"] == {"by_code": {"no_face": 2, "corrupt_image": 1}, "total": 3}
    assert [code for _, _, code in await refusals(db)] == ["no_face", "no_face", "corrupt_image"]
    # Erasing the guest erases their refusals too.
    erased = await admin_client.post("/admin/erasures", json={"tg_user_id": 77}, headers=ADMIN_AUTH)
    assert erased.status_code == 200 and erased.json()["deleted"]["photo_refusals"] == 3
    assert await refusals(db) == []


async def test_an_oversized_upload_is_refused_before_decoding(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    app = create_app(
        ingest_settings(database_url, redis_url, MAX_UPLOAD_BYTES=1000), db=db, publisher=Publisher(redis)
    )
    async with app_client(app, base_url="http://kiosk") as client:
        sid = await linked_session(client, db)
        response = await upload(client, sid, photo_bytes())
    assert response.status_code == 413 and response.json()["error"]["code"] == "file_too_large"


async def test_exif_rotated_photos_are_stored_upright(client: httpx.AsyncClient, db: Database) -> None:
    sid = await linked_session(client, db)
    response = await upload(client, sid, photo_bytes("exif-orient-6-face.jpg"))
    assert response.status_code == 202, response.text
    async with db.transaction() as repos:
        selfie = (await repos.blobs.for_job(UUID(response.json()["job_id"]), "selfie"))[0]
    import numpy as np
    from PIL import ImageOps

    stored = np.asarray(Image.open(io.BytesIO(selfie.data)).convert("RGB"), dtype=np.float32)
    original = Image.open(PHOTOS / "exif-orient-6-face.jpg")
    upright = np.asarray(
        ImageOps.exif_transpose(original).convert("RGB").resize(stored.shape[1::-1]), np.float32
    )
    raw = np.asarray(original.convert("RGB").resize(stored.shape[1::-1]), np.float32)
    assert np.abs(stored - upright).mean() < np.abs(stored - raw).mean() / 2  # EXIF orientation 6 applied


async def test_maintenance_mode_answers_503(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    app = create_app(
        ingest_settings(database_url, redis_url, MAINTENANCE_MODE=True), db=db, publisher=Publisher(redis)
    )
    async with app_client(app, base_url="http://kiosk") as client:
        response = await client.post("/sessions", json={})
    assert response.status_code == 503 and response.json()["error"]["code"] == "maintenance"


async def test_postgres_down_answers_503_not_500(redis: aioredis.Redis, redis_url: str) -> None:
    from shared.db import create_engine

    dead = Database(create_engine("postgresql://postgres@127.0.0.1:1/x", connect_timeout_s=1))
    app = create_app(
        ingest_settings("postgresql://postgres@127.0.0.1:1/x", redis_url), db=dead, publisher=Publisher(redis)
    )
    async with app_client(app, base_url="http://kiosk") as client:
        response = await client.post("/sessions", json={})
        ready = await client.get("/readyz")
    await dead.dispose()
    assert response.status_code == 503 and response.json()["error"]["code"] == "database_unavailable"
    assert ready.status_code == 503


async def test_redis_down_still_accepts_the_photo_and_leaves_the_hint_for_the_reconciler(
    db: Database, database_url: str
) -> None:
    from shared.streams import create_redis

    dead_redis = create_redis("redis://127.0.0.1:1/0")
    app = create_app(
        ingest_settings(database_url, "redis://127.0.0.1:1/0"), db=db, publisher=Publisher(dead_redis)
    )
    async with app_client(app, base_url="http://kiosk") as client:
        sid = await linked_session(client, db)
        response = await upload(client, sid, photo_bytes())
    await dead_redis.aclose()
    assert response.status_code == 202
    async with db.transaction() as repos:
        job = await repos.jobs.get(UUID(response.json()["job_id"]))
        record = await repos.tg_commands.get(f"job:{response.json()['job_id']}:generating")
    assert job is not None and job.status == "queued"
    assert record is not None and record.status == "pending"


async def test_an_admin_or_auto_pause_also_answers_503(client: httpx.AsyncClient, db: Database) -> None:
    from shared import maintenance

    async with db.transaction() as repos:
        await maintenance.start_pause(repos, source="auto", reason="credit")
    response = await client.post("/sessions", json={})
    assert response.status_code == 503 and response.json()["error"]["code"] == "maintenance"
    assert (await client.get("/outfits")).status_code == 200  # the catalog still loads


async def test_every_outfit_has_a_thumbnail(client: httpx.AsyncClient) -> None:
    for outfit in (await client.get("/outfits")).json():
        response = await client.get(outfit["thumbnail_url"])
        assert response.status_code == 200 and response.headers["content-type"] == "image/png"
        image = Image.open(io.BytesIO(response.content))
        assert image.size == (256, 256) and image.mode == "RGBA"


async def test_a_client_looping_on_new_sessions_is_refused_and_writes_nothing(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    settings = ingest_settings(database_url, redis_url, SESSIONS_RATE_LIMIT=3, SESSIONS_RATE_WINDOW_SEC=60)
    replicas = [create_app(settings, db=db, publisher=Publisher(redis)) for _ in range(2)]

    def from_ip(app: object, ip: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(ip, 5555))  # type: ignore[arg-type]
        return httpx.AsyncClient(transport=transport, base_url="http://kiosk")

    async with from_ip(replicas[0], "203.0.113.5") as one, from_ip(replicas[1], "203.0.113.5") as two:
        answers = [await (one, two)[i % 2].post("/sessions", json={"station": "hall-a"}) for i in range(5)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429, 429]  # one limit across replicas
    refused = answers[3]
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert await stored_rows(db, "sessions") == 3
    async with from_ip(replicas[0], "198.51.100.20") as another_kiosk:
        assert (await another_kiosk.post("/sessions", json={"station": "hall-b"})).status_code == 201


KIOSK_KEY = "kiosk-key-" + "7" * 16


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Kiosk-Key": "wrong-key-wrong-key"},
        {"X-Kiosk-Key": KIOSK_KEY[:-1]},
        {b"X-Kiosk-Key": "ключ".encode()},  # raw UTF-8 bytes: a 401, never a 500
    ],
)
async def test_with_a_kiosk_key_set_only_the_kiosks_open_sessions(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, headers: Any
) -> None:
    app = create_app(
        ingest_settings(database_url, redis_url, KIOSK_KEY=KIOSK_KEY), db=db, publisher=Publisher(redis)
    )
    async with app_client(app, base_url="http://kiosk") as phone:
        refused = await phone.post("/sessions", json={"station": "hall-a"}, headers=headers)
        not_even_read = await phone.post("/sessions", content=b"{not json", headers=headers)
        kiosk = await phone.post("/sessions", json={"station": "hall-a"}, headers={"X-Kiosk-Key": KIOSK_KEY})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "kiosk_key_required"
    assert not_even_read.status_code == 401  # the key before the body: a stranger learns nothing more
    assert kiosk.status_code == 201
    assert await stored_rows(db, "sessions") == 1


@pytest.mark.parametrize("body", [b"{not json", b'{"station": "hall a"}'])
async def test_with_a_kiosk_key_set_a_strangers_json_body_is_not_parsed_before_the_key(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, body: bytes
) -> None:
    """As a browser or a script sends it (``Content-Type: application/json``): FastAPI parses a JSON body
    before any dependency runs, so the key has to be checked before that, not in one."""
    app = create_app(
        ingest_settings(database_url, redis_url, KIOSK_KEY=KIOSK_KEY), db=db, publisher=Publisher(redis)
    )
    json_type = {"Content-Type": "application/json"}
    async with app_client(app, base_url="http://kiosk") as phone:
        stranger = await phone.post("/sessions", content=body, headers=json_type)
        kiosk = await phone.post("/sessions", content=body, headers={**json_type, "X-Kiosk-Key": KIOSK_KEY})
    assert stranger.status_code == 401 and stranger.json()["error"]["code"] == "kiosk_key_required"
    assert kiosk.status_code == 422  # the kiosk's own malformed body is still told what is wrong


async def test_a_phone_flooding_from_the_kiosks_address_cannot_use_up_the_kiosks_limit(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """Guests' phones on the venue Wi-Fi often reach ingest from the kiosks' own public address: with
    ``KIOSK_KEY`` set they are refused without counting, and keyed kiosks are counted per station."""
    env = {"KIOSK_KEY": KIOSK_KEY, "SESSIONS_RATE_LIMIT": 2, "SESSIONS_RATE_WINDOW_SEC": 60}
    app = create_app(ingest_settings(database_url, redis_url, **env), db=db, publisher=Publisher(redis))
    venue = httpx.ASGITransport(app=app, client=("203.0.113.5", 5555))
    keyed = {"X-Kiosk-Key": KIOSK_KEY}
    async with httpx.AsyncClient(transport=venue, base_url="http://kiosk") as client:
        flood = [(await client.post("/sessions", json={"station": "hall-a"})).status_code for _ in range(5)]
        hall_a = [
            (await client.post("/sessions", json={"station": "hall-a"}, headers=keyed)).status_code
            for _ in range(3)
        ]
        hall_b = (await client.post("/sessions", json={"station": "hall-b"}, headers=keyed)).status_code
    assert flood == [401] * 5
    assert hall_a == [201, 201, 429]  # a kiosk stuck in a loop is still stopped, per station
    assert hall_b == 201
    assert await stored_rows(db, "sessions") == 3


async def test_sessions_that_failed_on_our_side_do_not_count_against_the_kiosk(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """A kiosk retrying through a Postgres outage (or a pause) is not refused afterwards for sessions it
    never got: the limit is counted after the maintenance check, which reads Postgres."""
    from shared.db import create_engine

    limit = {"SESSIONS_RATE_LIMIT": 2, "SESSIONS_RATE_WINDOW_SEC": 60}
    dead_url = "postgresql://postgres@127.0.0.1:1/x"
    dead = Database(create_engine(dead_url, connect_timeout_s=1))
    outage = create_app(ingest_settings(dead_url, redis_url, **limit), db=dead, publisher=Publisher(redis))
    back = create_app(ingest_settings(database_url, redis_url, **limit), db=db, publisher=Publisher(redis))
    try:
        async with app_client(outage, base_url="http://kiosk") as kiosk:
            codes = [(await kiosk.post("/sessions", json={})).json()["error"]["code"] for _ in range(4)]
    finally:
        await dead.dispose()
    assert codes == ["database_unavailable"] * 4
    async with app_client(back, base_url="http://kiosk") as kiosk:
        assert [(await kiosk.post("/sessions", json={})).status_code for _ in range(3)] == [201, 201, 429]


async def test_one_session_looping_on_refused_photos_is_stopped_and_another_kiosk_goes_through(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """Refused photos use no capture, so without a limit one session could keep the photo check busy
    for every kiosk; a repeated capture id is answered from its row and not counted."""
    settings = ingest_settings(database_url, redis_url, PHOTO_RATE_LIMIT=3, PHOTO_RATE_WINDOW_SEC=60)
    app = create_app(settings, db=db, publisher=Publisher(redis))
    no_face = photo_bytes("png-16bit-welder-low-light.png")
    async with app_client(app, base_url="http://kiosk") as kiosk:
        looping = await linked_session(kiosk, db, user_id=301)
        codes = [
            (await upload(kiosk, looping, no_face, capture=f"loop-{i}")).json()["error"]["code"]
            for i in range(5)
        ]
        other = await linked_session(kiosk, db, user_id=302)
        first = await upload(kiosk, other, photo_bytes(), capture="guest-1")
        again = [await upload(kiosk, other, photo_bytes(), capture="guest-1") for _ in range(4)]
    assert codes == ["no_face"] * 3 + ["rate_limited"] * 2
    assert first.status_code == 202
    assert [a.status_code for a in again] == [200] * 4  # the kiosk's retries of one capture: never 429


async def test_the_api_documents_are_for_admins_only(admin_client: httpx.AsyncClient) -> None:
    """The kiosks' port is the venue network's: no public /docs, /redoc or /openapi.json; the document is
    behind the admin token."""
    for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
        assert (await admin_client.get(path)).status_code == 404, path
    assert (await admin_client.get("/admin/openapi.json")).status_code == 401
    document = (await admin_client.get("/admin/openapi.json", headers=ADMIN_AUTH)).json()
    assert "/sessions/{session_id}/photo" in document["paths"]
