"""The white die-cut outline: width, smoothness, filled holes, shadow."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from worker.imaging.outline import OUTLINE_PX, add_die_cut_outline, outline_margin

pytestmark = pytest.mark.unit


def disc(size: int = 160, radius: int = 50, *, hole: int = 0) -> np.ndarray:
    rgba = np.zeros((size, size, 4), np.uint8)
    cv2.circle(rgba, (size // 2, size // 2), radius, (200, 40, 60, 255), -1, cv2.LINE_AA)
    if hole:
        cv2.circle(rgba, (size // 2, size // 2), hole, (0, 0, 0, 0), -1)
    return rgba


def test_the_outline_is_white_and_about_radius_px_wide() -> None:
    out = add_die_cut_outline(disc(), shadow=False)
    margin = outline_margin(shadow=False)
    assert out.shape == (160 + 2 * margin, 160 + 2 * margin, 4)
    centre = out.shape[0] // 2
    # walk right from the centre: figure, then white backing, then nothing
    row = out[centre, centre:]
    figure_end = 50
    assert row[figure_end - 5, :3].tolist() == [200, 40, 60]
    ring = row[figure_end + 2 : figure_end + int(OUTLINE_PX) - 1]
    assert (ring[:, 3] == 255).all() and (ring[:, :3] >= 250).all()
    assert (row[figure_end + int(OUTLINE_PX) + 3 :, 3] == 0).all()


def test_the_shadow_is_soft_and_faint() -> None:
    out = add_die_cut_outline(disc(), shadow=True)
    centre = out.shape[1] // 2
    column = out[centre:, centre]  # downwards: the shadow is offset down
    beyond = column[50 + int(OUTLINE_PX) + 3 : 50 + int(OUTLINE_PX) + 8]
    assert (beyond[:, 3] > 0).all() and (beyond[:, 3] < 90).all()
    assert (beyond[:, :3] < 80).all()  # dark, not white
    assert out[0, 0, 3] == 0  # corners stay transparent


def test_holes_are_backed_with_white() -> None:
    out = add_die_cut_outline(disc(hole=20), shadow=False)
    centre = out.shape[0] // 2
    assert out[centre, centre, 3] == 255
    assert (out[centre, centre, :3] >= 250).all()


def test_figure_pixels_are_not_changed() -> None:
    figure = disc()
    out = add_die_cut_outline(figure, shadow=True)
    margin = outline_margin()
    inner = out[margin : margin + 160, margin : margin + 160]
    solid = figure[..., 3] == 255
    assert np.array_equal(inner[solid], figure[solid])


def test_separate_parts_get_their_own_backing() -> None:
    rgba = np.zeros((100, 300, 4), np.uint8)
    rgba[30:70, 10:50] = (10, 10, 200, 255)
    rgba[30:70, 250:290] = (10, 10, 200, 255)
    out = add_die_cut_outline(rgba, shadow=False)
    margin = outline_margin(shadow=False)
    assert out[margin + 50, margin + 150, 3] == 0  # the gap between them stays open
