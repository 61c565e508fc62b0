"""Per-sticker QA numbers (green fringe re-despilled, coverage, 512 fit, bytes) and composite stickers (a
head composed with Pillow onto the outfit's body template)."""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from cartoon.body import HEAD_CENTRE
from cartoon.composite import body_template, compose_head
from cartoon.figure import FIGURE_SHIFT, draw_figure
from cartoon.poses import POSES, pose_named
from shared.outfits import get_outfit
from worker.imaging.finish import FRINGE_MAX, finish_sticker, green_fringe

pytestmark = pytest.mark.unit


def blob(edge: tuple[int, int, int]) -> np.ndarray:
    rgba = np.zeros((200, 120, 4), np.uint8)
    cv2.ellipse(rgba, (60, 100), (50, 90), 0, 0, 360, (*edge, 255), -1)
    cv2.ellipse(rgba, (60, 100), (44, 84), 0, 0, 360, (200, 60, 60, 255), -1)
    return rgba


def test_a_green_fringe_left_by_the_key_is_despilled_before_the_outline() -> None:
    fringed = blob((90, 200, 80))
    assert green_fringe(fringed) > FRINGE_MAX
    sticker, _outlined, qa = finish_sticker(fringed, "🙂")
    assert qa.despilled and qa.fringe <= FRINGE_MAX
    assert qa.fits and qa.ok and qa.bytes == len(sticker.png) <= 512 * 1024
    with Image.open(io.BytesIO(sticker.png)) as image:
        assert max(image.size) == 512 and image.size == (sticker.width, sticker.height)


def test_a_clean_figure_is_not_touched_and_a_sliver_has_little_coverage() -> None:
    _, _, clean = finish_sticker(blob((30, 25, 35)), "🙂")
    assert not clean.despilled and clean.coverage > 0.3
    sliver = np.zeros((400, 20, 4), np.uint8)
    sliver[:, 9:11] = (30, 25, 35, 255)
    _, _, thin = finish_sticker(sliver, "🙂")
    assert thin.coverage < 0.08 and not thin.ok


def test_a_head_is_composed_onto_the_body_template_of_its_pose() -> None:
    outfit = get_outfit("wizard")
    pose = POSES[0]
    head = draw_figure(None, outfit, pose, parts="head")
    ys, xs = np.nonzero(head[..., 3])
    crop = head[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    composed = compose_head(outfit, pose, crop)
    body = body_template(outfit, pose)
    assert composed.shape == (512, 512, 4)
    centre = (round(HEAD_CENTRE[1] + FIGURE_SHIFT[1]), round(HEAD_CENTRE[0]))
    assert body[centre][3] == 0 and composed[centre][3] == 255  # the head fills the template's gap
    below = composed[420:470, 200:310, 3]
    assert (below == body[420:470, 200:310, 3]).all()  # legs are the template's


def test_a_tilted_pose_tilts_the_composed_head() -> None:
    outfit = get_outfit("chef")
    head = draw_figure(None, outfit, pose_named("neutral"), parts="head")
    ys, xs = np.nonzero(head[..., 3])
    crop = head[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    upright = compose_head(outfit, pose_named("neutral"), crop)[..., 3] > 0
    tilted = compose_head(outfit, pose_named("sleeping"), crop)[..., 3] > 0
    assert (upright[:260] != tilted[:260]).sum() > 2000
