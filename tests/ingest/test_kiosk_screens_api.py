"""The kiosk API behind issue 13's screens, against real Postgres and Redis: "not you?" (unlink), the pause
in the status poll, failures as the bot tells them, the done screen's stickers and the branding config."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image
from pydantic import ValidationError

from ingest.branding import ink_on
from ingest.main import create_app
from shared import command_ids, maintenance
from shared.db.tables import tg_commands
from shared.downloads import download_key, job_of_token
from shared.errors import ContentRefused, JobCostExceeded, JobError, NoFaceError, PermanentJobError
from shared.joblife import failure_command_id
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import TEXTS, text
from tests.ingest.ingest_helpers import agree, app_client, ingest_settings, linked_session
from worker.outcomes import fail_permanently

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(ingest_settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    async with app_client(app, base_url="http://kiosk") as c:
        yield c


def png(shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (512, 512), (shade, 40, 90, 255)).save(out, "PNG")
    return out.getvalue()


async def bind(
    db: Database, token: str, user_id: int, name: str = "Ann Lee", language: str | None = "en"
) -> None:
    async with db.transaction() as repos:
        assert await repos.sessions.bind_telegram(
            token, user_id=user_id, chat_id=user_id, name=name, language=language
        )


async def unlink_notices(db: Database, session_id: str) -> list[tuple[int, str]]:
    """(chat id, text) of every "you were unlinked" command stored for the session, oldest first."""
    query = (
        sa.select(tg_commands.c.params["chat_id"].as_integer(), tg_commands.c.params["text"].astext)
        .where(tg_commands.c.command_id.startswith(f"session:{session_id}:unlinked:"))
        .order_by(tg_commands.c.created_at)
    )
    async with db.transaction() as repos:
        return [(int(r[0]), str(r[1])) for r in await repos.conn.execute(query)]


async def open_session(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.post("/sessions", json={"station": "hall-a"})
    assert response.status_code == 201
    body: dict[str, Any] = response.json()
    return body


async def delivered_session(
    client: httpx.AsyncClient, db: Database, *, user_id: int = 501, stickers: int = 12
) -> tuple[str, str, UUID]:
    """A session whose one job was delivered with ``stickers`` stored; returns (id, token, job id)."""
    body = await open_session(client)
    await bind(db, body["token"], user_id)
    async with db.transaction() as repos:
        job = await repos.jobs.insert_queued(session_id=UUID(body["id"]), capture_id="c1", outfit_id="pirate")
        await repos.jobs.claim(job.id, owner="w1")
        for position in range(stickers):
            await repos.blobs.put(
                kind="sticker",
                data=png(position * 20),
                content_type="image/png",
                job_id=job.id,
                position=position,
            )
        await repos.jobs.mark_rendered(job.id, owner="w1", stickers=stickers)
        now = datetime.now(UTC)
        await repos.jobs.start_delivery(
            job.id, sticker_set_name=f"p{user_id}_by_bot", at=now, first_poll_at=now
        )
        await repos.jobs.mark_delivered(job.id, link_sent_at=now)
    return body["id"], body["token"], job.id


# ---- "Hi, <name> — not you?" ----


async def test_a_linked_session_greets_the_guest_by_first_name_and_hides_its_token(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = await open_session(client)
    assert body["token"] and body["deep_link"].endswith(body["token"]) and body["guest_first_name"] is None
    await bind(db, body["token"], 601, name="  Ann   Lee ")
    status = (await client.get(f"/sessions/{body['id']}")).json()
    assert status["telegram_linked"] and status["guest_first_name"] == "Ann"
    # Whoever knows a linked session's id does not learn the token that opens its stickers.
    assert (status["token"], status["deep_link"], status["qr_svg"]) == (None, None, None)


async def test_unlink_forgets_the_guest_and_gives_a_new_qr_code_the_old_one_no_longer_binds(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = await open_session(client)
    await bind(db, body["token"], 602)
    sid = body["id"]
    assert (await client.put(f"/sessions/{sid}/outfit", json={"outfit_id": "chef"})).status_code == 200
    response = await client.post(f"/sessions/{sid}/unlink")
    assert response.status_code == 200
    after = response.json()
    assert (after["telegram_linked"], after["guest_first_name"], after["outfit_id"]) == (False, None, None)
    assert after["status"] == "waiting_for_telegram" and after["consent"] is None
    assert after["token"] != body["token"] and after["qr_svg"].startswith("data:image/svg+xml")
    async with db.transaction() as repos:
        session = await repos.sessions.get(UUID(sid))
        assert session is not None and (session.tg_user_id, session.tg_chat_id) == (None, None)
        # The old QR code binds nobody (its scanner is told the code expired); the new one binds.
        assert (
            await repos.sessions.bind_telegram(
                body["token"], user_id=603, chat_id=603, name="X", language="en"
            )
            is None
        )
        assert await repos.sessions.bind_telegram(
            after["token"], user_id=603, chat_id=603, name="Bo", language="en"
        )
    assert (await client.get(f"/sessions/{sid}")).json()["guest_first_name"] == "Bo"


async def test_after_unlink_the_photos_messages_go_to_the_guest_who_linked_next_not_the_unlinked_one(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = await open_session(client)
    await bind(db, body["token"], 612)
    after = (await client.post(f"/sessions/{body['id']}/unlink")).json()
    await bind(db, after["token"], 613)
    sid = body["id"]
    assert (await client.put(f"/sessions/{sid}/outfit", json={"outfit_id": "chef"})).status_code == 200
    assert (await agree(client, sid)).status_code == 200
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    response = await client.post(
        f"/sessions/{sid}/photo", files={"photo": ("x.png", photo)}, data={"capture_id": "cap-1"}
    )
    assert response.status_code == 202
    async with db.transaction() as repos:
        generating = await repos.tg_commands.get(
            command_ids.generating_notice(UUID(response.json()["job_id"]))
        )
        context = await repos.jobs.get_context(UUID(response.json()["job_id"]))
    assert generating is not None and generating.params["chat_id"] == 613
    assert context is not None and context.tg_chat_id == 613  # delivery's link and failure texts too


async def test_unlink_twice_changes_nothing_the_second_time(client: httpx.AsyncClient, db: Database) -> None:
    body = await open_session(client)
    await bind(db, body["token"], 604)
    first = (await client.post(f"/sessions/{body['id']}/unlink")).json()
    second = await client.post(f"/sessions/{body['id']}/unlink")
    assert second.status_code == 200 and second.json()["token"] == first["token"]
    assert [chat for chat, _ in await unlink_notices(db, body["id"])] == [604]  # told once


async def test_the_unlinked_user_is_told_once_in_their_language_through_the_outbox(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    body = await open_session(client)
    await bind(db, body["token"], 614, language="ru-RU")
    after = (await client.post(f"/sessions/{body['id']}/unlink")).json()
    notices = await unlink_notices(db, body["id"])
    assert notices == [(614, text("unlinked", "ru"))]
    assert "QR" in notices[0][1] and "Не ты?" in notices[0][1]
    # The hint went to tg:outbox at once: the gateway sends it now, the reconciler only if Redis failed.
    async with db.transaction() as repos:
        (record,) = await repos.tg_commands.for_subject("unlink", body["id"])
    assert record.method == "send_message" and record.reply_to is None
    assert record.command_id.startswith(f"session:{body['id']}:unlinked:")
    entries = [str(fields) for _, fields in await redis.xrange("tg:outbox")]
    assert any(record.command_id in entry for entry in entries)
    # A second guest linked to the same session and unlinked in turn is told too, in English.
    await bind(db, after["token"], 615, language="en")
    await client.post(f"/sessions/{body['id']}/unlink")
    assert [n[0] for n in await unlink_notices(db, body["id"])] == [614, 615]
    assert (await unlink_notices(db, body["id"]))[1][1] == text("unlinked", "en")


async def test_unlinking_a_session_nobody_linked_sends_nothing(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = await open_session(client)
    assert (await client.post(f"/sessions/{body['id']}/unlink")).status_code == 200
    assert await unlink_notices(db, body["id"]) == []


async def test_unlink_after_a_photo_is_refused_so_the_job_keeps_its_chat(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid, _, _ = await delivered_session(client, db, user_id=605)
    response = await client.post(f"/sessions/{sid}/unlink")
    assert response.status_code == 409 and response.json()["error"]["code"] == "photo_sent"
    async with db.transaction() as repos:
        session = await repos.sessions.get(UUID(sid))
        assert session is not None and session.tg_chat_id == 605


async def test_unlink_of_an_unknown_session_is_404_and_a_bad_id_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/sessions/00000000-0000-4000-8000-000000000000/unlink")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = await client.post("/sessions/not-a-uuid/unlink")
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


# ---- the pause in the status poll ----


async def test_the_status_poll_says_paused_while_a_pause_is_on_and_not_after(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid = (await open_session(client))["id"]
    assert (await client.get(f"/sessions/{sid}")).json()["paused"] is False
    async with db.transaction() as repos:
        await maintenance.start_pause(repos, source="admin", reason="test")
    try:
        assert (await client.get(f"/sessions/{sid}")).json()["paused"] is True
    finally:
        async with db.transaction() as repos:
            await maintenance.end_pause(repos)
    assert (await client.get(f"/sessions/{sid}")).json()["paused"] is False


# ---- failures as the bot tells them ----


@pytest.mark.parametrize(
    ("exc", "text", "retake"),
    [
        (NoFaceError("no face found in the selfie"), "no_face", True),
        (ContentRefused("sheet: every provider refused this selfie as content"), "content_refused", True),
        (PermanentJobError("unknown outfit 'x'"), "failed", False),
        (JobCostExceeded("JOB_COST_LIMIT 1.5"), "failed", False),
    ],
)
async def test_a_failed_job_shows_the_bots_text_key_and_whether_a_retake_helps(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis, exc: JobError, text: str, retake: bool
) -> None:
    """The worker fails the job as it does in production (``fail_permanently``), which sends the bot's
    text; the status poll names the same text."""
    sid = await linked_session(client, db, user_id=606)
    async with db.transaction() as repos:
        job = await repos.jobs.insert_queued(session_id=UUID(sid), capture_id="c1", outfit_id="astronaut")
        claimed = await repos.jobs.claim(job.id, owner="w1")
    assert claimed is not None
    await fail_permanently(db, Publisher(redis), claimed, owner="w1", exc=exc, max_captures=2)
    status = (await client.get(f"/sessions/{sid}")).json()
    assert status["status"] == "failed"
    assert status["jobs"][0]["failure"] == {"class": str(exc.error_class), "text": text, "retake": retake}
    async with db.transaction() as repos:
        failed = await repos.jobs.get(job.id)
        assert failed is not None
        command = await repos.tg_commands.get(failure_command_id(failed))
    assert command is not None and command.params["text"] == TEXTS[text]["ru"]  # the guest speaks ru


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (NoFaceError("no face found in the selfie"), "no_face_last"),
        (ContentRefused("sheet: every provider refused this selfie as content"), "content_refused_last"),
        (PermanentJobError("unknown outfit 'x'"), "failed"),
    ],
)
async def test_on_the_last_allowed_photo_bot_and_kiosk_send_the_guest_to_the_staff_not_to_a_retake(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis, exc: JobError, text: str
) -> None:
    """The session's second photo (``MAX_CAPTURES_PER_SESSION`` 2) fails: the bot does not ask for
    another selfie the booth would refuse, and the status poll names that same text, without a retake."""
    sid = await linked_session(client, db, user_id=608)
    async with db.transaction() as repos:
        first = await repos.jobs.insert_queued(session_id=UUID(sid), capture_id="c1", outfit_id="astronaut")
        await repos.sessions.count_capture(UUID(sid))
        second = await repos.jobs.insert_queued(session_id=UUID(sid), capture_id="c2", outfit_id="astronaut")
        await repos.sessions.count_capture(UUID(sid))
        claimed = await repos.jobs.claim(second.id, owner="w1")
    assert claimed is not None and first.id != second.id
    await fail_permanently(db, Publisher(redis), claimed, owner="w1", exc=exc, max_captures=2)
    status = (await client.get(f"/sessions/{sid}")).json()
    assert status["captures_left"] == 0
    assert status["jobs"][-1]["failure"] == {"class": str(exc.error_class), "text": text, "retake": False}
    async with db.transaction() as repos:
        failed = await repos.jobs.get(second.id)
        assert failed is not None
        command = await repos.tg_commands.get(failure_command_id(failed))
    assert command is not None and command.params["text"] == TEXTS[text]["ru"]
    config = (await client.get("/kiosk/config")).json()
    assert config["guest_texts"][text] == TEXTS[text]  # the kiosk shows the bot's words


async def test_a_job_that_has_not_failed_has_no_failure(client: httpx.AsyncClient, db: Database) -> None:
    sid, _, _ = await delivered_session(client, db, user_id=607)
    assert (await client.get(f"/sessions/{sid}")).json()["jobs"][0]["failure"] is None


# ---- the done screen's stickers ----


async def test_the_delivered_stickers_are_served_to_the_session_with_its_token(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid, token, job_id = await delivered_session(client, db, user_id=608)
    response = await client.get(f"/sessions/{sid}/stickers", headers={"X-Session-Token": token})
    assert response.status_code == 200
    body = response.json()
    assert body["job_id"] == str(job_id) and body["set_url"] == "https://t.me/addstickers/p608_by_bot"
    assert body["set_qr_svg"].startswith("data:image/svg+xml")
    assert [s["position"] for s in body["stickers"]] == [0, 1, 2, 3]
    three = await client.get(f"/sessions/{sid}/stickers?limit=3", headers={"X-Session-Token": token})
    assert len(three.json()["stickers"]) == 3
    image = await client.get(body["stickers"][2]["url"], headers={"X-Session-Token": token})
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert "no-store" in image.headers["cache-control"]
    assert Image.open(io.BytesIO(image.content)).getpixel((5, 5))[0] == 40  # position 2's shade


async def test_the_done_screen_offers_the_download_page_only_with_a_public_base_url(
    client: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    sid, token, job_id = await delivered_session(client, db, user_id=611)
    headers = {"X-Session-Token": token}
    body = (await client.get(f"/sessions/{sid}/stickers", headers=headers)).json()
    assert body["download_url"] is None and body["download_qr_svg"] is None  # no PUBLIC_BASE_URL
    settings = ingest_settings(database_url, redis_url, PUBLIC_BASE_URL="https://booth.example.com")
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as public:
        body = (await public.get(f"/sessions/{sid}/stickers", headers=headers)).json()
        assert body["download_url"].startswith("https://booth.example.com/d/")
        async with db.transaction() as repos:
            key = await download_key(repos)
        assert job_of_token(key, body["download_url"].rpartition("/")[2]) == job_id
        assert body["download_qr_svg"].startswith("data:image/svg+xml")
        page = await public.get(body["download_url"].removeprefix("https://booth.example.com"))
    assert page.status_code == 200 and page.text.count('loading="lazy"') == 12
    bad_urls = ("booth.example.com", "https://booth.example.com/", "https://booth.example.com/x", "ftp://a.b")
    for bad in (*bad_urls, "http://localhost:8000", "http://booth-laptop"):  # Telegram refuses dotless hosts
        with pytest.raises(ValidationError, match="PUBLIC_BASE_URL"):
            ingest_settings(database_url, redis_url, PUBLIC_BASE_URL=bad)


async def test_stickers_are_404_without_the_token_with_another_sessions_token_or_for_an_unknown_session(
    client: httpx.AsyncClient, db: Database
) -> None:
    sid, token, _ = await delivered_session(client, db, user_id=609)
    other_sid, other_token, _ = await delivered_session(client, db, user_id=610)
    for path in (f"/sessions/{sid}/stickers", f"/sessions/{sid}/stickers/0"):
        for headers in ({}, {"X-Session-Token": other_token}, {"X-Session-Token": token + "x"}):
            response = await client.get(path, headers=headers)
            assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found"), (
                path,
                headers,
            )
    unknown = "00000000-0000-4000-8000-000000000000"
    response = await client.get(f"/sessions/{unknown}/stickers", headers={"X-Session-Token": token})
    assert response.status_code == 404
    # Each session's own token still works: the refusals above were about the pairing, not the rows.
    assert (
        await client.get(f"/sessions/{other_sid}/stickers/0", headers={"X-Session-Token": other_token})
    ).status_code == 200


async def test_no_stickers_before_delivery_and_bad_positions_or_limits_are_4xx(
    client: httpx.AsyncClient, db: Database
) -> None:
    body = await open_session(client)
    headers = {"X-Session-Token": body["token"]}
    response = await client.get(f"/sessions/{body['id']}/stickers", headers=headers)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "no_stickers")
    sid, token, _ = await delivered_session(client, db, user_id=611, stickers=2)
    headers = {"X-Session-Token": token}
    response = await client.get(f"/sessions/{sid}/stickers/5", headers=headers)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "no_stickers")
    for path in (
        f"/sessions/{sid}/stickers/12",
        f"/sessions/{sid}/stickers/-1",
        f"/sessions/{sid}/stickers/x",
    ):
        response = await client.get(path, headers=headers)
        assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_request"), path
    for limit in ("0", "13", "many"):
        response = await client.get(f"/sessions/{sid}/stickers?limit={limit}", headers=headers)
        assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_request"), limit


# ---- branding ----


async def test_the_kiosk_config_carries_the_venue_branding_and_the_bots_texts(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    settings = ingest_settings(
        database_url,
        redis_url,
        KIOSK_EVENT_TITLE=" Tech Expo 2026 ",
        KIOSK_LOGO_URL="https://cdn.example.org/logo.svg",
        KIOSK_ACCENT_COLOR="#0AF",
    )
    async with app_client(create_app(settings, db=db, publisher=Publisher(redis))) as c:
        config = (await c.get("/kiosk/config")).json()
        page = await c.get("/kiosk")
    assert (
        config["event_title"] == "Tech Expo 2026" and config["logo_url"] == "https://cdn.example.org/logo.svg"
    )
    assert (config["accent_color"], config["accent_ink"]) == ("#00aaff", "#17153b")
    assert config["guest_texts"]["no_face"] == TEXTS["no_face"]
    assert config["guest_texts"]["content_refused"]["ru"] == TEXTS["content_refused"]["ru"]
    assert "img-src 'self' data: blob: https://cdn.example.org;" in page.headers["content-security-policy"]


async def test_the_default_config_has_no_title_or_logo_and_the_kiosks_yellow(
    client: httpx.AsyncClient,
) -> None:
    config = (await client.get("/kiosk/config")).json()
    assert (config["event_title"], config["logo_url"], config["accent_color"]) == (None, None, "#ffc93c")
    page = await client.get("/kiosk")
    assert "img-src 'self' data: blob:;" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("KIOSK_ACCENT_COLOR", "red"),
        ("KIOSK_ACCENT_COLOR", "#12345"),
        ("KIOSK_ACCENT_COLOR", "#ffc93c; background: url(x)"),
        ("KIOSK_LOGO_URL", "http://cdn.example.org/logo.png"),
        ("KIOSK_LOGO_URL", "javascript:alert(1)"),
        ("KIOSK_LOGO_URL", "//evil.example/logo.png"),
        ("KIOSK_LOGO_URL", "https://cdn.example.org/a b.png"),
        ("KIOSK_LOGO_URL", "https://cdn.example.org/x.png' 'unsafe-inline"),
        ("KIOSK_EVENT_TITLE", "x" * 81),
        ("KIOSK_EVENT_TITLE", "two\nlines"),
    ],
)
def test_a_bad_branding_setting_stops_ingest_at_start_up(env: str, value: str) -> None:
    with pytest.raises(ValidationError, match=env):
        ingest_settings("postgresql://x/y", "redis://x", **{env: value})


def test_a_logo_path_on_the_own_origin_is_accepted() -> None:
    assert ingest_settings("postgresql://x/y", "redis://x", KIOSK_LOGO_URL="/static/logo.png").kiosk_logo_url


def test_the_ink_on_an_accent_is_the_one_with_more_contrast() -> None:
    assert ink_on("#ffc93c") == "#17153b"  # the kiosk's yellow keeps its dark text
    assert ink_on("#1d4ed8") == "#ffffff"  # a deep blue gets white
    assert ink_on("#000") == "#ffffff" and ink_on("#fff") == "#17153b"
