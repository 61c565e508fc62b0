"""Overload degrades, never collapses (issue 19): retries of one capture share one photo check and one
count of ``PHOTO_RATE_LIMIT``, a refusal is remembered for its capture, a check that would answer too
late is refused at once with 503 ``busy``, a check whose client has gone never starts, and a guest
erased during their photo's check gets a 404, not a 500."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from fastapi import FastAPI
from starlette.requests import ClientDisconnect

from ingest.captures import CaptureChecks
from ingest.main import create_app
from ingest.photo_pool import PhotoChecker
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
FACE = "face-woman-red-hat.png"
NO_FACE = "png-16bit-welder-low-light.png"  # takes every detection pass: the slowest check


def photo(name: str) -> bytes:
    return (PHOTOS / name).read_bytes()


@pytest.fixture
def make_app(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> Callable[..., FastAPI]:
    """An ingest app with one photo-check process (close its pool in the test)."""

    def make(**env: Any) -> FastAPI:
        settings = ingest_settings(database_url, redis_url, PHOTO_CHECK_WORKERS=1, **env)
        return create_app(settings, db=db, publisher=Publisher(redis))

    return make


async def upload(client: httpx.AsyncClient, sid: str, name: str, capture: str) -> httpx.Response:
    return await client.post(
        f"/sessions/{sid}/photo", files={"photo": ("x.bin", photo(name))}, data={"capture_id": capture}
    )


async def refusal_rows(db: Database, sid: str) -> int:
    async with db.engine.connect() as conn:
        query = sa.text("SELECT count(*) FROM photo_refusals WHERE session_id = :sid")
        return int((await conn.execute(query, {"sid": sid})).scalar_one())


def photos_of(app: FastAPI) -> PhotoChecker:
    checker: PhotoChecker = app.state.ctx.photos
    return checker


async def test_overlapping_retries_of_one_capture_share_one_check_and_count_once(
    make_app: Callable[..., FastAPI], db: Database
) -> None:
    """Four overlapping sends of one no-face capture (a kiosk that gave up waiting and sent it again)
    run one face check and count once: the guest's next photo is not refused for a minute."""
    app = make_app(PHOTO_RATE_LIMIT=2, PHOTO_RATE_WINDOW_SEC=60)
    try:
        async with app_client(app, base_url="http://kiosk") as kiosk:
            sid = await linked_session(kiosk, db, user_id=501)
            sends = await asyncio.gather(*(upload(kiosk, sid, NO_FACE, "cap-1") for _ in range(4)))
            later = await upload(kiosk, sid, NO_FACE, "cap-1")  # after the check: its stored outcome
            next_photo = await upload(kiosk, sid, FACE, "cap-2")
        assert [s.json()["error"]["code"] for s in [*sends, later]] == ["no_face"] * 5
        assert next_photo.status_code == 202, next_photo.text
        assert photos_of(app).checks_started == 2  # cap-1 once, cap-2 once
        assert await refusal_rows(db, sid) == 1  # the operators' count: one refused photo
    finally:
        await photos_of(app).close()


async def test_a_refusal_is_remembered_for_its_capture_on_every_replica(
    make_app: Callable[..., FastAPI], db: Database
) -> None:
    """The kiosk's retry of a refused capture reaching another ingest replica gets the same refusal
    from the shared store, without a check."""
    first, second = make_app(), make_app()
    try:
        async with app_client(first, base_url="http://kiosk") as kiosk:
            sid = await linked_session(kiosk, db, user_id=502)
            refused = await upload(kiosk, sid, NO_FACE, "cap-1")
        async with app_client(second, base_url="http://kiosk") as other:
            again = await upload(other, sid, NO_FACE, "cap-1")
        assert refused.status_code == again.status_code == 422
        assert again.json()["error"]["code"] == "no_face"
        assert await refusal_rows(db, sid) == 1
        assert photos_of(second).checks_started == 0
    finally:
        await photos_of(first).close()
        await photos_of(second).close()


async def test_a_check_that_would_answer_too_late_is_refused_busy_at_once_and_taken_later(
    make_app: Callable[..., FastAPI], db: Database
) -> None:
    """One process, each check taken to last 1 s until measured, at most 1.5 s of wait: while one
    photo is being checked, a second capture would answer in 2 s, so it is refused at once with 503
    ``busy`` and ``Retry-After``; sent again after it, it is taken."""
    app = make_app(PHOTO_CHECK_MAX_WAIT_SEC=1.5)
    try:
        async with app_client(app, base_url="http://kiosk") as kiosk:
            sids = [await linked_session(kiosk, db, user_id=510 + i) for i in range(2)]
            answers = await asyncio.gather(
                upload(kiosk, sids[0], FACE, "cap-a"), upload(kiosk, sids[1], FACE, "cap-b")
            )
            busy = [a for a in answers if a.status_code == 503]
            assert len(busy) == 1, [a.text for a in answers]
            assert busy[0].json()["error"]["code"] == "busy"
            assert int(busy[0].headers["Retry-After"]) >= 1
            index = answers.index(busy[0])
            again = await upload(kiosk, sids[index], FACE, ["cap-a", "cap-b"][index])
        assert again.status_code == 202, again.text
        assert photos_of(app).checks_started == 2
    finally:
        await photos_of(app).close()


async def test_a_check_whose_client_has_gone_is_dropped_before_it_starts(redis: aioredis.Redis) -> None:
    photos = PhotoChecker(workers=1, max_bytes=15_000_000, max_pixels=40_000_000, require_face=True)
    checks = CaptureChecks(photos, redis, max_wait_s=60)
    session = UUID(int=7)
    try:
        running = asyncio.create_task(checks.check(session, "cap-running", photo(NO_FACE)))
        gone = asyncio.Event()
        queued = asyncio.create_task(checks.check(session, "cap-queued", photo(FACE), gone=gone))
        async with asyncio.timeout(30):
            while photos.waiting == 0:
                await asyncio.sleep(0.01)
        gone.set()  # the kiosk behind the queued check disconnected
        with pytest.raises(ClientDisconnect):
            await queued
        with pytest.raises(Exception, match="no_face"):
            await running
        async with asyncio.timeout(30):
            while photos.waiting:
                await asyncio.sleep(0.01)
        assert photos.checks_started == 1
        assert not checks.running(session, "cap-queued")  # not remembered: a retry checks it anew
    finally:
        await photos.close()


async def test_a_guest_erased_during_their_photos_check_gets_a_404_not_a_500(
    make_app: Callable[..., FastAPI], db: Database
) -> None:
    app = make_app()
    photos = photos_of(app)
    try:
        async with app_client(app, base_url="http://kiosk", raise_app_exceptions=False) as kiosk:
            other = await linked_session(kiosk, db, user_id=520)
            sid = await linked_session(kiosk, db, user_id=521)
            ahead = asyncio.create_task(upload(kiosk, other, NO_FACE, "cap-slow"))
            async with asyncio.timeout(30):  # the slow check holds the only process
                while not getattr(photos._pool, "_pending_work_items", None):
                    await asyncio.sleep(0.01)
            mine = asyncio.create_task(upload(kiosk, sid, FACE, "cap-1"))
            async with asyncio.timeout(30):  # mine waits its turn (in ingest, or in the executor before)
                while not (photos.__dict__.get("waiting") or len(photos._pool._pending_work_items) > 1):  # type: ignore[union-attr]
                    await asyncio.sleep(0.01)
            async with db.transaction() as repos:
                await repos.erasure.erase_sessions([UUID(sid)])
            answer = await mine
            await ahead
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "not_found"
    finally:
        await photos.close()


def test_the_kiosk_sends_photos_no_larger_than_the_pipeline_uses() -> None:
    """The kiosk shrinks a photo to the long side the worker sends a provider, no more, no less."""
    import re

    from ingest.api.kiosk import PHOTO_MAX_SIDE_PX
    from worker.providers.images import PHOTO_MAX_SIDE_PX as PIPELINE_SIDE_PX

    kiosk_js = Path(__file__).resolve().parents[2] / "services/ingest/ingest/static/kiosk/kiosk.js"
    script = kiosk_js.read_text()
    in_script = re.search(r"const PHOTO_MAX_SIDE_PX = (\d+);", script)
    assert in_script is not None
    assert PHOTO_MAX_SIDE_PX == PIPELINE_SIDE_PX == int(in_script[1])
