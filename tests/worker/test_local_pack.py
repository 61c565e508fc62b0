"""A whole pack through the worker's own orchestrator (:func:`worker.render.render_job`) with the offline
``local`` provider (the :mod:`cartoon` engine): selfie → sheets → cut → outline → export."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data
from PIL import Image

from cartoon.poses import POSES
from shared.errors import NoFaceError
from shared.outfits import get_outfit, load_catalog
from tests.worker.render_helpers import settings
from worker.context import MemoryArtefacts, RenderContext
from worker.cost import CostLedger, MemoryUsageStore
from worker.imaging.export import MAX_STICKER_BYTES
from worker.providers.chain import ChainPolicy, ProviderChain
from worker.providers.local import LocalProvider
from worker.render import Pack, render_job

pytestmark = pytest.mark.unit


def jpeg(rgb: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="JPEG", quality=92)
    return out.getvalue()


async def render_locally(selfie: bytes, outfit: str, variant: str = "consistency", **overrides: Any) -> Pack:
    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return True

    async def no_wait(_seconds: float) -> None:
        return None

    chosen = settings(variant, **overrides)
    ctx = RenderContext(
        job_id=None,
        selfie=selfie,
        outfit=get_outfit(outfit),
        settings=chosen,
        chain=ProviderChain(
            [LocalProvider(load_catalog())],
            ChainPolicy(),
            image_slots=asyncio.Semaphore(9),
            alert=alert,
            sleep=no_wait,
        ),
        ledger=CostLedger(
            MemoryUsageStore(),
            job_id=None,
            created_at=datetime.now(UTC),
            max_cost_usd=chosen.job_max_cost_usd,
        ),
        artefacts=MemoryArtefacts(),
        cut_slots=asyncio.Semaphore(2),
        alert=alert,
    )
    return await render_job(ctx)


@pytest.fixture(scope="module")
def astronaut_pack() -> Pack:
    return asyncio.run(render_locally(jpeg(skimage.data.astronaut()), "astronaut"))


def test_a_pack_has_12_telegram_valid_stickers(astronaut_pack: Pack) -> None:
    assert len(astronaut_pack.stickers) == 12
    for sticker in astronaut_pack.stickers:
        assert sticker.png.startswith(b"\x89PNG\r\n\x1a\n")
        assert len(sticker.png) <= MAX_STICKER_BYTES
        image = Image.open(io.BytesIO(sticker.png))
        assert image.size == (sticker.width, sticker.height)
        assert max(image.size) == 512 and min(image.size) <= 512
        rgba = np.asarray(image.convert("RGBA"))
        corners = [rgba[0, 0, 3], rgba[0, -1, 3], rgba[-1, 0, 3], rgba[-1, -1, 3]]
        assert max(corners) == 0


def test_each_sticker_sits_on_a_white_die_cut_outline(astronaut_pack: Pack) -> None:
    for sticker in astronaut_pack.stickers:
        rgba = np.asarray(Image.open(io.BytesIO(sticker.png)).convert("RGBA"))
        opaque = (rgba[..., 3] >= 250).astype(np.uint8)
        rim = (opaque > 0) & (cv2.erode(opaque, np.ones((5, 5), np.uint8)) == 0)
        assert rim.sum() > 500
        white = (rgba[..., :3] >= 235).all(axis=2)
        assert white[rim].mean() > 0.9


def test_stickers_carry_the_pose_emojis_in_order(astronaut_pack: Pack) -> None:
    assert [s.emoji for s in astronaut_pack.stickers] == [pose.emoji for pose in POSES[:12]]
    assert len(set(s.emoji for s in astronaut_pack.stickers)) == 12


def test_the_pack_reports_stage_timings(astronaut_pack: Pack) -> None:
    assert astronaut_pack.timings
    assert all(seconds >= 0 for seconds in astronaut_pack.timings.values())


async def test_the_2x6_layout_gives_12_stickers_too() -> None:
    pack = await render_locally(jpeg(skimage.data.astronaut()), "pirate", "legacy")
    assert len(pack.stickers) == 12


async def test_no_face_is_a_permanent_failure() -> None:
    with pytest.raises(NoFaceError):
        await render_locally(jpeg(np.full((300, 300, 3), 90, np.uint8)), "chef")
