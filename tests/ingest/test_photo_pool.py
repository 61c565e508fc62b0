"""The photo check in its process pool (issue 12 "Ingest"): concurrent uploads get their own answers, a
killed pool process costs the uploads in flight a retryable 503 and the next upload works, the pool is
sized for the container and closed with the app."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI

from ingest.consent import ConsentRequired
from ingest.main import create_app
from ingest.photo import CheckedPhoto
from ingest.photo_pool import PhotoChecker, container_cpus
from shared.errors import UploadRejected
from shared.imaging.faces import FaceBox
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
FACES = ("face-woman-red-hat.png", "face-older-man-white-hair.jpg", "astronaut-portrait.png")
NO_FACES = ("heic-iphone-pug.heic", "png-16bit-welder-low-light.png")


@pytest.fixture
async def app(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[FastAPI]:
    settings = ingest_settings(database_url, redis_url, PHOTO_CHECK_WORKERS=2)
    application = create_app(settings, db=db, publisher=Publisher(redis))
    yield application
    await application.state.ctx.photos.close()


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app_client(app, base_url="http://kiosk") as c:
        yield c


async def upload(client: httpx.AsyncClient, sid: str, name: str, capture: str = "cap-1") -> httpx.Response:
    return await client.post(
        f"/sessions/{sid}/photo",
        files={"photo": ("x.bin", (PHOTOS / name).read_bytes())},
        data={"capture_id": capture},
    )


async def test_concurrent_uploads_with_and_without_faces_each_get_their_own_answer(
    client: httpx.AsyncClient, db: Database
) -> None:
    names = [*FACES, *NO_FACES, *FACES, *NO_FACES]  # 10 uploads on 2 processes
    sids = [await linked_session(client, db, user_id=100 + i) for i in range(len(names))]
    answers = await asyncio.gather(
        *(upload(client, sid, name) for sid, name in zip(sids, names, strict=True))
    )
    for name, answer in zip(names, answers, strict=True):
        if name in FACES:
            assert answer.status_code == 202, (name, answer.text)
        else:
            assert answer.status_code == 422, (name, answer.text)
            assert answer.json()["error"]["code"] == "no_face"


async def test_a_killed_pool_process_gives_a_retryable_503_and_the_next_upload_works(
    app: FastAPI, client: httpx.AsyncClient, db: Database
) -> None:
    photos: PhotoChecker = app.state.ctx.photos
    first = await photos.start()
    assert len(first) == 2
    sid = await linked_session(client, db, user_id=201)

    # Killed mid-check: the 16-bit welder photo takes every detection pass, so it is still running.
    pending = asyncio.create_task(upload(client, sid, "png-16bit-welder-low-light.png", "cap-a"))
    # wait until its check is in the pool (the executor keeps no public count): the pool was started
    # above, so its pids alone said nothing, and a fixed sleep could kill an idle pool on a busy machine
    async with asyncio.timeout(30):
        while not pending.done() and not getattr(photos._pool, "_pending_work_items", None):
            await asyncio.sleep(0.01)
    for pid in photos.pids():
        os.kill(pid, signal.SIGKILL)
    answer = await pending
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "photo_check_unavailable"
    assert answer.headers["Retry-After"] == "1"

    # The same capture again: a new pool checks it (a face photo this time, so it is accepted).
    again = await upload(client, sid, "face-woman-red-hat.png", "cap-a")
    assert again.status_code == 202, again.text
    assert set(photos.pids()).isdisjoint(first)


async def test_a_pool_process_killed_while_idle_costs_one_503_then_the_pool_is_new(
    app: FastAPI, client: httpx.AsyncClient, db: Database
) -> None:
    photos: PhotoChecker = app.state.ctx.photos
    first = await photos.start()
    sid = await linked_session(client, db, user_id=202)
    os.kill(first[0], signal.SIGKILL)
    answers = []
    for _ in range(2):  # the executor may or may not have seen the death before the first submit
        answers.append(await upload(client, sid, "face-woman-red-hat.png", "cap-b"))
        if answers[-1].status_code != 503:
            break
        await asyncio.sleep(0.2)
    assert answers[-1].status_code == 202, [a.text for a in answers]
    assert all(a.json()["error"]["code"] == "photo_check_unavailable" for a in answers[:-1])
    assert set(photos.pids()).isdisjoint(first)


async def test_the_pool_is_closed_with_the_app(app: FastAPI) -> None:
    photos: PhotoChecker = app.state.ctx.photos
    async with app.router.lifespan_context(app):
        pids = photos.pids()
        assert len(pids) == 2
    assert photos.pids() == []
    for pid in pids:  # gone: the pool joined its processes
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_the_pool_answers_the_jpeg_and_the_face_found_in_it(app: FastAPI) -> None:
    """What crosses the pipe from a pool process: the normalised JPEG and the largest face, with its
    landmarks, in that JPEG's px grid; a no-face photo raises ``no_face``."""
    photos: PhotoChecker = app.state.ctx.photos
    checked = await photos.check((PHOTOS / "face-older-man-white-hair.jpg").read_bytes())
    assert checked.jpeg[:2] == b"\xff\xd8"
    assert checked.face is not None and len(checked.face.landmarks) == 5
    cx, cy = checked.face.center  # the man's face, at (0.55, 0.38) of the 1200 px photo (test_faces.py)
    assert abs(cx - 0.55 * 1200) < 0.12 * 1200 and abs(cy - 0.38 * 1200) < 0.12 * 1200
    with pytest.raises(UploadRejected, match="no_face"):
        await photos.check((PHOTOS / "heic-iphone-pug.heic").read_bytes())


def test_a_checked_photo_survives_the_pipe() -> None:
    face = FaceBox(1, 2, 30, 40, 0.5, ((1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0), (9.5, 10.5)))
    for checked in (CheckedPhoto(b"jpeg", face), CheckedPhoto(b"jpeg", None)):
        assert pickle.loads(pickle.dumps(checked)) == checked


def test_upload_rejections_survive_the_pipe_with_their_class_and_status() -> None:
    rejected = pickle.loads(pickle.dumps(UploadRejected("no_face", "No face.", status=422)))
    assert (type(rejected), rejected.code, rejected.detail, rejected.status) == (
        UploadRejected,
        "no_face",
        "No face.",
        422,
    )
    consent = pickle.loads(pickle.dumps(ConsentRequired()))
    assert type(consent) is ConsentRequired and consent.status == 403


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1), (None, None)],
)
def test_the_default_pool_size_is_the_containers_cpu_quota(
    tmp_path: Path, cpu_max: str | None, expected: int | None
) -> None:
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    affinity = len(os.sched_getaffinity(0))
    assert container_cpus(path) == (affinity if expected is None else min(affinity, expected))
