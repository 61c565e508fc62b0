"""render_pack end to end (local provider → real cut → outline → export), and the provider-neutral
stickers_from_sheets path."""

from __future__ import annotations

import io
from collections.abc import Callable

import cv2
import numpy as np
import pytest
import skimage.data
from PIL import Image

from shared.errors import ErrorClass, NoFaceError, RetryableJobError
from shared.outfits import get_outfit
from worker.pipeline import Pack, render_pack, stickers_from_sheets
from worker.pipeline.export import MAX_STICKER_BYTES
from worker.pipeline.poses import POSES

from .synthetic_sheets import Sheet, person

pytestmark = pytest.mark.unit


def jpeg(rgb: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="JPEG", quality=92)
    return out.getvalue()


@pytest.fixture(scope="module")
def astronaut_pack() -> Pack:
    return render_pack(jpeg(skimage.data.astronaut()), get_outfit("astronaut"))


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
    assert [s.emoji for s in astronaut_pack.stickers] == [pose.emoji for pose in POSES]
    assert len(set(s.emoji for s in astronaut_pack.stickers)) == 12


def test_the_pack_reports_stage_timings(astronaut_pack: Pack) -> None:
    assert set(astronaut_pack.timings) == {"face", "render_sheets", "cut", "finish"}
    assert all(seconds >= 0 for seconds in astronaut_pack.timings.values())
    assert sum(astronaut_pack.timings.values()) < 30


def test_the_2x6_layout_gives_12_stickers_too() -> None:
    pack = render_pack(jpeg(skimage.data.astronaut()), get_outfit("pirate"), layout="2x6")
    assert len(pack.stickers) == 12


def test_no_face_is_a_permanent_failure() -> None:
    with pytest.raises(NoFaceError):
        render_pack(jpeg(np.full((300, 300, 3), 90, np.uint8)), get_outfit("chef"))


def test_provider_sheets_go_through_the_same_path(sheet_factory: Callable[..., Sheet]) -> None:
    sheets = [
        sheet_factory(2, 2, {i: [person((200, 60, 60))] for i in range(4)}, seed=s).rgb for s in range(3)
    ]
    stickers = stickers_from_sheets(sheets, 4, [pose.emoji for pose in POSES])
    assert len(stickers) == 12
    assert all(max(s.width, s.height) == 512 for s in stickers)


def test_a_sheet_with_a_missing_figure_is_an_invalid_attempt(sheet_factory: Callable[..., Sheet]) -> None:
    good = sheet_factory(2, 2, {i: [person((200, 60, 60))] for i in range(4)}).rgb
    bad = sheet_factory(2, 2, {i: [person((200, 60, 60))] for i in range(3)}).rgb
    with pytest.raises(RetryableJobError) as caught:
        stickers_from_sheets([good, bad, good], 4, [pose.emoji for pose in POSES])
    assert caught.value.error_class == ErrorClass.INVALID
    assert "sheet 1" in str(caught.value) and "missing [3]" in str(caught.value)
