"""The offline ``local`` provider: sheet layouts, separated figures, faces, catalog thumbnails."""

from __future__ import annotations

import io

import numpy as np
import pytest
import skimage.data
from PIL import Image

from cartoon.sheets import (
    draw_sheets,
    render_outfit_thumbnail,
    render_sheets,
    sheet_layout,
)
from shared.errors import NoFaceError, PermanentJobError
from shared.imaging.decode import decode_rgb
from shared.outfits import get_outfit, load_catalog
from worker.imaging.cut import cut_sheet

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("layout", "count", "size"),
    [("3x4", 3, (1024, 1024)), ("2x6", 2, (1024, 1536)), ("1x12", 1, (1536, 2048))],
)
def test_sheets_follow_the_layout_on_pure_green(layout: str, count: int, size: tuple[int, int]) -> None:
    sheets = render_sheets(skimage.data.astronaut(), get_outfit("astronaut"), layout)
    assert len(sheets) == count
    for sheet in sheets:
        assert sheet.shape == (*size, 3) and sheet.dtype == np.uint8
        border = np.concatenate([sheet[0], sheet[-1], sheet[:, 0], sheet[:, -1]])
        assert (border == (0, 255, 0)).all()


@pytest.mark.parametrize("layout", ["2x6", "1x12"])
@pytest.mark.parametrize("outfit_id", sorted(load_catalog()))
def test_figures_neither_touch_each_other_nor_the_edge(outfit_id: str, layout: str) -> None:
    grid = sheet_layout(layout)
    for sheet in draw_sheets(None, get_outfit(outfit_id), grid):
        cut = cut_sheet(sheet, grid.per_sheet)
        assert cut.clean, cut.describe()
        assert cut.split == []
        cell = sheet.shape[1] // grid.cols
        for figure in cut.figures:  # inside its own cell: room for the die-cut outline (issue 12)
            row, col = divmod(figure.cell, grid.cols)
            x, y, w, h = figure.box
            assert col * cell < x and x + w < (col + 1) * cell and row * cell < y and y + h < (row + 1) * cell


def test_the_one_sheet_layout_is_4_by_3_whatever_the_aspect_of_sheets_of_6() -> None:
    assert {sheet_layout("1x12", aspect) for aspect in ("3:2", "2:3")} == {sheet_layout("1x12")}
    assert sheet_layout("1x12").sheet_size == (2048, 1536)


def test_a_photo_without_a_face_is_a_permanent_failure() -> None:
    with pytest.raises(NoFaceError):
        render_sheets(np.full((400, 300, 3), 180, np.uint8), get_outfit("chef"))


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="layout"):
        sheet_layout("4x3")


def test_undecodable_selfie_bytes_are_permanent() -> None:
    with pytest.raises(PermanentJobError):
        decode_rgb(b"not an image")


@pytest.mark.parametrize("outfit_id", sorted(load_catalog()))
def test_each_outfit_has_a_faceless_thumbnail(outfit_id: str) -> None:
    png = render_outfit_thumbnail(get_outfit(outfit_id))
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (256, 256) and image.mode == "RGBA"
    pixels = np.asarray(image)
    assert pixels[0, 0, 3] == 0 and pixels[-1, -1, 3] == 0
    assert 0.15 < (pixels[..., 3] > 128).mean() < 0.7
