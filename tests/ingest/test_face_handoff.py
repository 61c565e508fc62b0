"""Ingest finds the face once and the worker takes it as stored (issue 20: "the face is found once, at
ingest, and what the worker needs (box, landmarks) is stored with the photo, so the two can never
disagree").

A photo goes through the real ingest app (its photo-check process, real Postgres); the selfie blob it
writes is read back and handed to the worker's :func:`worker.steps.inputs.prepare_inputs`, whose
``detect_faces`` is replaced by a probe that raises: the worker's face is the stored one, and it did not
detect. The probe is shown to fire for a selfie stored without a face (the case where the worker must
detect), so the "did not detect" checks can fail.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import numpy as np
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI
from PIL import Image

import worker.steps.inputs
from ingest.main import create_app
from shared.domain import Blob
from shared.imaging.decode import decode_rgb
from shared.imaging.faces import DETECTOR_ID, FaceBox, detect_faces, largest_face
from shared.repositories import Database
from shared.streams import Publisher
from tests.ingest.ingest_helpers import app_client, ingest_settings, linked_session
from worker.steps.inputs import prepare_inputs

pytestmark = pytest.mark.integration
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"


class DetectedAgain(AssertionError):
    """The worker ran the face detector on a selfie whose face ingest had stored."""


@pytest.fixture
def no_detection_in_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe: the worker's ``detect_faces`` raises (the name :mod:`worker.steps.inputs` calls)."""

    def detect(_rgb: object) -> list[FaceBox]:
        raise DetectedAgain("the worker detected the face again")

    monkeypatch.setattr(worker.steps.inputs, "detect_faces", detect)


@pytest.fixture
def make_app(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> Callable[..., FastAPI]:
    def make(**env: Any) -> FastAPI:
        settings = ingest_settings(database_url, redis_url, PHOTO_CHECK_WORKERS=1, **env)
        return create_app(settings, db=db, publisher=Publisher(redis))

    return make


@pytest.fixture
async def kiosk(make_app: Callable[..., FastAPI]) -> AsyncIterator[httpx.AsyncClient]:
    app = make_app()
    try:
        async with app_client(app, base_url="http://kiosk") as client:
            yield client
    finally:
        await app.state.ctx.photos.close()


async def accepted_selfie(client: httpx.AsyncClient, db: Database, data: bytes, user_id: int) -> Blob:
    """Upload ``data`` as a new guest's photo; the selfie blob ingest stored for the job."""
    sid = await linked_session(client, db, user_id=user_id)
    answer = await client.post(
        f"/sessions/{sid}/photo", files={"photo": ("x.bin", data)}, data={"capture_id": "cap-1"}
    )
    assert answer.status_code == 202, answer.text
    async with db.transaction() as repos:
        (selfie,) = await repos.blobs.for_job(UUID(answer.json()["job_id"]), "selfie")
    return selfie


def upscaled(name: str, side: int) -> bytes:
    """The fixture ``name`` resized to ``side`` px square as a JPEG (ingest shrinks it to 2048 px)."""
    with Image.open(PHOTOS / name) as image:
        out = io.BytesIO()
        image.convert("RGB").resize((side, side), Image.Resampling.BICUBIC).save(out, format="JPEG")
        return out.getvalue()


UPLOADS: dict[str, Callable[[], bytes]] = {
    "portrait": lambda: (PHOTOS / "face-woman-red-hat.png").read_bytes(),
    "exif_rotated": lambda: (PHOTOS / "exif-orient-6-face.jpg").read_bytes(),  # EXIF orientation 6
    "downscaled_by_ingest": lambda: upscaled("face-older-man-white-hair.jpg", 3000),  # > 2048 px
}


@pytest.mark.parametrize("upload", sorted(UPLOADS))
async def test_the_worker_takes_the_face_ingest_stored_without_detecting(
    kiosk: httpx.AsyncClient, db: Database, upload: str, no_detection_in_the_worker: None
) -> None:
    selfie = await accepted_selfie(kiosk, db, UPLOADS[upload](), user_id=300)
    stored = selfie.meta["face"]
    assert stored is not None and stored["detector"] == DETECTOR_ID
    assert len(stored["box"]) == 4 and len(stored["landmarks"]) == 5

    inputs = prepare_inputs(selfie.data, selfie.meta)  # the probe raises if it detects

    assert inputs.face == FaceBox.from_meta(stored)
    # ... and the stored face is in the stored JPEG's px grid (upright, after ingest's downscaling): the
    # detector run afresh on the decoded JPEG finds the same face within a few px (JPEG noise only)
    height, width = inputs.rgb.shape[:2]
    assert max(height, width) <= 2048
    fresh = largest_face(detect_faces(decode_rgb(selfie.data)))
    assert fresh is not None
    tolerance = max(3, 0.05 * fresh.w)
    for got, want in zip(
        (inputs.face.x, inputs.face.y, inputs.face.w, inputs.face.h),
        (fresh.x, fresh.y, fresh.w, fresh.h),
        strict=True,
    ):
        assert abs(got - want) <= tolerance, (upload, inputs.face, fresh)


async def test_a_photo_without_a_face_is_stored_with_face_none_when_faces_are_not_required(
    make_app: Callable[..., FastAPI], db: Database, no_detection_in_the_worker: None
) -> None:
    app = make_app(REQUIRE_FACE="false")
    try:
        async with app_client(app, base_url="http://kiosk") as client:
            selfie = await accepted_selfie(client, db, (PHOTOS / "heic-iphone-pug.heic").read_bytes(), 301)
    finally:
        await app.state.ctx.photos.close()
    assert selfie.meta == {"face": None}  # ingest looked and found none

    inputs = prepare_inputs(selfie.data, selfie.meta)  # the probe raises if it detects

    assert inputs.face is None
    assert inputs.rgb.shape[2] == 3


def test_the_probe_fires_when_the_worker_has_to_detect(no_detection_in_the_worker: None) -> None:
    """The bad case for the two tests above: a selfie stored before issue 20 (no ``"face"`` key) or with
    an unreadable face is detected in the worker, and the probe catches that."""
    out = io.BytesIO()
    Image.fromarray(np.full((64, 64, 3), 128, np.uint8)).save(out, format="JPEG")
    for meta in ({}, {"face": {"box": "unreadable"}}, None):
        with pytest.raises(DetectedAgain):
            prepare_inputs(out.getvalue(), meta)
