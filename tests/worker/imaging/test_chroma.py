"""Green keying on provider-like sheets: off-green shaded backdrops, green clothing, holes, fringes."""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
import pytest

from worker.imaging.chroma import estimate_backdrop, key_green

from .synthetic_sheets import Sheet, bar, person

pytestmark = pytest.mark.unit

RED = (210, 50, 60)
BLUE = (60, 80, 200)
SHIRT_GREEN = (40, 170, 60)


def green_excess(rgb: np.ndarray) -> np.ndarray:
    data = rgb.astype(np.int32)
    return data[..., 1] - np.maximum(data[..., 0], data[..., 2])


@pytest.fixture
def sheet(sheet_factory: Callable[..., Sheet]) -> Sheet:
    return sheet_factory(
        2,
        2,
        {
            0: [person(RED)],
            1: [person(BLUE, shirt=SHIRT_GREEN)],
            2: [person(RED, ring=True)],
            3: [person((240, 200, 40))],
        },
    )


def test_the_backdrop_is_measured_not_assumed(sheet: Sheet) -> None:
    backdrop = estimate_backdrop(sheet.rgb)
    assert backdrop.is_green
    border = np.concatenate([sheet.backdrop[:4].reshape(-1, 3), sheet.backdrop[-4:].reshape(-1, 3)])
    assert np.abs(np.array(backdrop.colour) - np.median(border, axis=0)).max() < 8
    assert np.abs(np.array(backdrop.colour) - (0, 255, 0)).max() > 20  # really not #00FF00
    model = backdrop.render(*sheet.rgb.shape[:2])
    clear = sheet.coverage == 0
    assert np.abs(model[clear] - sheet.backdrop[clear]).mean() < 4


def test_a_shaded_off_green_backdrop_becomes_fully_transparent(sheet: Sheet) -> None:
    alpha = key_green(sheet.rgb)[..., 3]
    far = cv2.dilate((sheet.coverage > 0).astype(np.uint8), np.ones((9, 9), np.uint8)) == 0
    assert (alpha[far] == 0).mean() > 0.999


def test_figures_stay_opaque(sheet: Sheet) -> None:
    alpha = key_green(sheet.rgb)[..., 3]
    inside = cv2.erode((sheet.coverage >= 1.0).astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    assert (alpha[inside] == 255).mean() > 0.999


def test_green_clothing_enclosed_by_the_figure_is_kept(sheet: Sheet) -> None:
    keyed = key_green(sheet.rgb)
    # the shirt of the figure in cell 1 (cell 256 px: x 256 + 0.40..0.60 of 256, y 0.50..0.78 of 256)
    shirt = keyed[140:190, 370:400]
    assert (shirt[..., 3] == 255).all()
    assert np.abs(shirt[..., :3].astype(int) - SHIRT_GREEN).max() <= 4


def test_backdrop_seen_through_a_hole_is_removed(sheet: Sheet) -> None:
    keyed = key_green(sheet.rgb)
    # cell 2 (bottom left): ring centre at (0.5, 0.64) of the cell
    centre_y, centre_x = 256 + round(0.64 * 256), round(0.5 * 256)
    hole = keyed[centre_y - 8 : centre_y + 8, centre_x - 8 : centre_x + 8, 3]
    assert (hole == 0).all()


def test_anti_aliased_edges_keep_soft_alpha_and_lose_their_green_fringe(sheet: Sheet) -> None:
    keyed = key_green(sheet.rgb)
    edge = (sheet.coverage > 0.05) & (sheet.coverage < 0.95)
    assert edge.sum() > 500
    before = green_excess(sheet.rgb)[edge]
    assert before.mean() > 40  # the mixed pixels really were green
    alpha = keyed[..., 3]
    visible = edge & (alpha > 0)
    after = green_excess(keyed[..., :3])[visible]
    assert after.max() <= 2
    # alpha follows the true coverage on the edge (a soft key, not a hard cut-out)
    estimated = alpha[edge].astype(np.float32) / 255.0
    assert np.abs(estimated - sheet.coverage[edge]).mean() < 0.2
    assert ((alpha[edge] > 0) & (alpha[edge] < 255)).mean() > 0.5


def test_the_colour_of_edge_pixels_is_unmixed_towards_the_figure(sheet: Sheet) -> None:
    keyed = key_green(sheet.rgb)
    alpha = keyed[..., 3]
    edge = (sheet.coverage > 0.3) & (sheet.coverage < 0.95) & (alpha > 0)
    # the figures are outlined in near-black ink: unmixed edge pixels are dark, not green-grey
    assert keyed[..., :3][edge].astype(int).mean() < 90


def test_transparent_pixels_carry_no_colour(sheet: Sheet) -> None:
    keyed = key_green(sheet.rgb)
    assert (keyed[keyed[..., 3] == 0, :3] == 0).all()


def test_pure_chroma_green_works_too(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(1, 1, {0: [person(RED)]})
    rgb = sheet.rgb.astype(np.float32)
    coverage = sheet.coverage[..., None]
    figure = (rgb - sheet.backdrop * (1 - coverage)).clip(0, 255)
    pure = (figure + np.array([0, 255, 0], np.float32) * (1 - coverage)).clip(0, 255).astype(np.uint8)
    alpha = key_green(pure)[..., 3]
    assert (alpha[sheet.coverage == 0] == 0).mean() > 0.999
    assert alpha[sheet.coverage >= 1].min() == 255


def test_a_sheet_without_a_green_border_is_not_keyed(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(1, 1, {0: [bar(BLUE, 0.2, 0.2, 0.8, 0.8)]})
    grey = sheet.rgb.copy()
    grey[sheet.coverage == 0] = (128, 128, 128)
    backdrop = estimate_backdrop(grey)
    assert not backdrop.is_green
    assert (key_green(grey)[..., 3] == 0).all()


def test_a_shadow_cast_on_the_backdrop_is_removed(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(1, 1, {0: [person(RED)]})
    height, width = sheet.rgb.shape[:2]
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    # a soft ground shadow under the feet, down to 45 % of the backdrop's brightness
    blob = np.exp(-(((xs - 128) / 70) ** 2 + ((ys - 226) / 14) ** 2))
    shade = 1.0 - 0.55 * blob * (1.0 - sheet.coverage)
    shaded = np.clip(sheet.rgb.astype(np.float32) * shade[..., None], 0, 255).astype(np.uint8)
    keyed = key_green(shaded)
    in_shadow = (blob > 0.2) & (sheet.coverage == 0)
    assert in_shadow.sum() > 500
    assert (keyed[..., 3][in_shadow] == 0).mean() > 0.99
    assert (keyed[..., 3][sheet.coverage >= 1] == 255).mean() > 0.99


def test_a_sliver_of_backdrop_between_two_outlines_is_removed(sheet_factory: Callable[..., Sheet]) -> None:
    # two bars 2 px apart inside one figure (legs, an arm near the body), closed at both ends
    sheet = sheet_factory(
        1,
        1,
        {
            0: [
                bar(RED, 0.30, 0.30, 0.47, 0.70),
                bar(RED, 0.47 + 7 / 256, 0.30, 0.70, 0.70),
                bar(RED, 0.30, 0.28, 0.70, 0.32),
                bar(RED, 0.30, 0.68, 0.70, 0.72),
            ]
        },
    )
    keyed = key_green(sheet.rgb)
    rows, cols = slice(round(0.4 * 256), round(0.6 * 256)), slice(116, 132)
    gap = np.zeros(sheet.coverage.shape, bool)
    gap[rows, cols] = sheet.coverage[rows, cols] < 0.95
    assert green_excess(sheet.rgb)[gap].max() > 40  # the backdrop shows through
    visible = gap & (keyed[..., 3] > 0)
    assert green_excess(keyed[..., :3])[visible].max(initial=0) <= 2
