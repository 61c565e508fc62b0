"""Cutting sheets into figures: grid cells, touching neighbours, missing figures, edge cuts, specks."""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
import pytest

from worker.imaging.chroma import key_green
from worker.imaging.cut import cut_sheet, grid_for

from .synthetic_sheets import Sheet, bar, dot, person

pytestmark = pytest.mark.unit

RED = (210, 50, 60)
BLUE = (60, 80, 200)
YELLOW = (240, 200, 40)
CELL = 256


def four(**extra: list) -> dict[int, list]:  # type: ignore[type-arg]
    drawers = {0: [person(RED)], 1: [person(BLUE)], 2: [person(YELLOW)], 3: [person(RED)]}
    for key, value in extra.items():
        drawers[int(key.removeprefix("cell"))] += value
    return drawers


def inside_cell(box: tuple[int, int, int, int], cell: int, cols: int, slack: int = 6) -> bool:
    row, col = divmod(cell, cols)
    x, y, w, h = box
    return (
        x >= col * CELL - slack
        and y >= row * CELL - slack
        and x + w <= (col + 1) * CELL + slack
        and y + h <= (row + 1) * CELL + slack
    )


@pytest.mark.parametrize(
    ("figures", "width", "height", "grid"),
    [(4, 1024, 1024, (2, 2)), (6, 1536, 1024, (3, 2)), (6, 1024, 1536, (2, 3)), (1, 512, 512, (1, 1))],
)
def test_grid_follows_the_sheet_shape(figures: int, width: int, height: int, grid: tuple[int, int]) -> None:
    assert grid_for(figures, width, height) == grid


def test_a_clean_sheet_gives_one_figure_per_cell(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(2, 2, four())
    cut = cut_sheet(sheet.rgb, 4)
    assert cut.valid and cut.clean
    assert [f.cell for f in cut.figures] == [0, 1, 2, 3]
    assert cut.missing == [] and cut.edge_cut == [] and cut.split == []
    for figure in cut.figures:
        assert inside_cell(figure.box, figure.cell, 2)
        assert figure.rgba.shape[2] == 4
        assert figure.rgba[0, 0, 3] == 0 or figure.rgba[-1, -1, 3] == 0


def test_six_figures_on_a_landscape_sheet(sheet_factory: Callable[..., Sheet]) -> None:
    drawers = {i: [person(RED if i % 2 else BLUE)] for i in range(6)}
    cut = cut_sheet(sheet_factory(3, 2, drawers).rgb, 6)
    assert cut.clean
    assert [f.cell for f in cut.figures] == list(range(6))


def test_touching_neighbours_are_split_at_the_narrowest_point(sheet_factory: Callable[..., Sheet]) -> None:
    # an arm of the figure in cell 0 reaches into cell 1 and touches that figure's body
    arm = bar(RED, 0.62, 0.55, 1.42, 0.6)
    sheet = sheet_factory(2, 2, four(cell0=[arm]))
    keyed = key_green(sheet.rgb)
    count, _ = cv2.connectedComponents((keyed[..., 3] >= 128).astype(np.uint8))
    assert count - 1 == 3  # the two top figures really are one blob
    cut = cut_sheet(sheet.rgb, 4)
    assert cut.valid
    assert cut.split == [0, 1]
    left, right = cut.figures[0], cut.figures[1]
    assert left.was_split and right.was_split
    # each keeps its own body; the cut runs through the thin arm, not through a body
    right_body_x = CELL + 0.34 * CELL
    left_body_x = 0.66 * CELL
    assert left_body_x < right.box[0] < right_body_x - 8
    assert left_body_x + 8 < left.box[0] + left.box[2] < right_body_x
    area_left = int((left.rgba[..., 3] > 128).sum())
    area_right = int((right.rgba[..., 3] > 128).sum())
    assert 0.8 < area_left / area_right < 1.6


def test_a_missing_figure_is_reported(sheet_factory: Callable[..., Sheet]) -> None:
    drawers = four()
    del drawers[3]
    cut = cut_sheet(sheet_factory(2, 2, drawers).rgb, 4)
    assert not cut.valid
    assert cut.missing == [3]
    assert [f.cell for f in cut.figures] == [0, 1, 2]
    assert "missing [3]" in cut.describe()


def test_a_figure_cut_by_the_sheet_edge_is_reported(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(2, 2, four(cell2=[bar(YELLOW, -0.2, 0.5, 0.3, 0.56)]))
    cut = cut_sheet(sheet.rgb, 4)
    assert cut.valid and not cut.clean
    assert cut.edge_cut == [2]
    assert cut.figures[2].touches_edge
    assert not cut.figures[0].touches_edge


def test_specks_are_dropped_and_decorations_stay_with_their_figure(
    sheet_factory: Callable[..., Sheet],
) -> None:
    speck = dot(BLUE, 0.05, 0.05, 1.5)  # a few px: noise
    heart = bar(YELLOW, 0.78, 0.1, 0.86, 0.18)  # a floating decoration of ~20×20 px
    sheet = sheet_factory(2, 2, four(cell1=[speck, heart]))
    cut = cut_sheet(sheet.rgb, 4)
    assert cut.clean
    assert cut.specks >= 1
    figure = cut.figures[1]
    x, y, w, _ = figure.box
    assert x + w >= CELL + 0.86 * CELL and y <= 0.1 * CELL + 4  # the crop reaches the decoration
    assert x > CELL + 0.1 * CELL  # but not the speck


def test_an_already_keyed_sheet_can_be_cut(sheet_factory: Callable[..., Sheet]) -> None:
    sheet = sheet_factory(2, 2, four())
    cut = cut_sheet(key_green(sheet.rgb), 4)
    assert cut.clean


def test_a_sheet_without_figures_is_all_missing(sheet_factory: Callable[..., Sheet]) -> None:
    cut = cut_sheet(sheet_factory(2, 2, {}).rgb, 4)
    assert cut.missing == [0, 1, 2, 3]
    assert cut.figures == []


def test_an_off_centre_grid_is_read_in_order(sheet_factory: Callable[..., Sheet]) -> None:
    # the left column drawn 55 % of a cell to the right: mostly inside the right-hand cells
    shifted = {
        0: [_shifted(person(RED), 0.55)],
        1: [person(BLUE)],
        2: [_shifted(person(YELLOW), 0.55)],
        3: [person(RED)],
    }
    sheet = sheet_factory(2, 2, shifted)
    keyed = key_green(sheet.rgb)
    count, _ = cv2.connectedComponents((keyed[..., 3] >= 128).astype(np.uint8))
    assert count - 1 == 4  # four separate figures, none touching
    cut = cut_sheet(sheet.rgb, 4)
    assert cut.valid, cut.describe()
    assert [f.cell for f in cut.figures] == [0, 1, 2, 3]
    xs = [f.box[0] for f in cut.figures]
    assert CELL * 0.6 < xs[0] < CELL < xs[1] and CELL * 0.6 < xs[2] < CELL < xs[3]
    red = cut.figures[0].rgba  # the red figure, not the blue one
    body = red[red[..., 3] == 255][:, :3].astype(int)
    assert ((body[:, 0] > 180) & (body[:, 2] < 90)).sum() > 1000


def test_two_figures_in_one_cell_make_the_sheet_invalid(sheet_factory: Callable[..., Sheet]) -> None:
    pair = [_placed(person(BLUE), 0.0, 0.25, 0.5), _placed(person(RED), 0.5, 0.25, 0.5)]
    drawers = {0: pair, 1: [person(BLUE)], 2: [person(YELLOW)], 3: [person(RED)]}
    cut = cut_sheet(sheet_factory(2, 2, drawers).rgb, 4)
    assert not cut.valid
    assert cut.extra == 1 and cut.missing == []
    assert "extra 1" in cut.describe()


def _placed(draw, fx: float, fy: float, scale: float):  # type: ignore[no-untyped-def]
    def moved(canvas: np.ndarray, alpha: np.ndarray, rect: tuple[int, int, int, int]) -> None:
        x, y, w, h = rect
        draw(canvas, alpha, (x + round(fx * w), y + round(fy * h), round(w * scale), round(h * scale)))

    return moved


def _shifted(draw, dx: float):  # type: ignore[no-untyped-def]
    def moved(canvas: np.ndarray, alpha: np.ndarray, rect: tuple[int, int, int, int]) -> None:
        x, y, w, h = rect
        draw(canvas, alpha, (x + round(dx * w), y, w, h))

    return moved
