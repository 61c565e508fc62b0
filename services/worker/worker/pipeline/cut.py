"""Cutting a keyed sheet into figures and checking the sheet (spec/002 "Cut and chroma key",
"Sheet validity").

Figures are the connected components of the opaque pixels. The sheet is read as the grid the provider
was asked for (2×2 or 3×2 cells), and each component belongs to the cell holding most of its pixels;
small components near a figure (a heart, a "Z", confetti) stay with it, specks are dropped. A component
with a large share of its pixels in two or more cells is two figures touching: it is split by a
watershed on its distance transform, seeded with the thickest part of each cell's share, so the cut
runs through the narrowest neck between them.

Validity: a cell with no figure is *missing* (the sheet burns an attempt in the legacy path, the figure
is regenerated in the newer paths); a figure touching the sheet border is *edge cut* (probably clipped
by the frame, queued for single-figure regeneration).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt
from skimage.segmentation import watershed

from worker.pipeline.chroma import key_green

__all__ = ["CutFigure", "SheetCut", "cut_sheet", "grid_for"]

_SPECK_FRACTION = 0.0006  # of a cell's area: smaller components are noise
_MIN_FIGURE_FRACTION = 0.03  # of a cell's area: a smaller main component is not a figure
_SPLIT_SHARE = 0.15  # a component with this share of its pixels in a second cell spans two cells
_FRINGE_PX = 2  # soft edge pixels kept around a figure's opaque core


@dataclass(frozen=True, slots=True)
class CutFigure:
    """One figure cut from a sheet.

    Attributes:
        cell: grid cell index, row-major (0 = top left).
        rgba: h×w×4 uint8 RGBA crop, transparent outside the figure.
        box: (x, y, w, h) of the crop in sheet px.
        touches_edge: the figure reaches the sheet border (probably clipped).
        was_split: the figure touched a neighbour and was separated from it.
    """

    cell: int
    rgba: npt.NDArray[np.uint8]
    box: tuple[int, int, int, int]
    touches_edge: bool
    was_split: bool


@dataclass(frozen=True, slots=True)
class SheetCut:
    """The result of cutting one sheet.

    Attributes:
        expected: number of cells (figures the sheet should hold).
        figures: the figures found, ordered by cell.
        missing: cells without a figure.
        edge_cut: cells whose figure touches the sheet border.
        split: cells whose figure was separated from a touching neighbour.
        specks: components ignored as noise.
    """

    expected: int
    figures: list[CutFigure]
    missing: list[int] = field(default_factory=list)
    edge_cut: list[int] = field(default_factory=list)
    split: list[int] = field(default_factory=list)
    specks: int = 0

    @property
    def valid(self) -> bool:
        """Every cell has a figure (edge cuts are handled by single-figure regeneration)."""
        return not self.missing

    @property
    def clean(self) -> bool:
        """Valid and no figure touches the border."""
        return self.valid and not self.edge_cut

    def describe(self) -> str:
        """One line for logs, e.g. ``4/4 figures, missing [], edge [2], split [0, 1]``."""
        return (
            f"{len(self.figures)}/{self.expected} figures, missing {self.missing}, "
            f"edge {self.edge_cut}, split {self.split}, specks {self.specks}"
        )


def grid_for(figures: int, width: int, height: int) -> tuple[int, int]:
    """(cols, rows) for ``figures`` cells on a sheet of ``width``×``height`` px, cells as square as
    possible (4 → 2×2; 6 → 3×2 on a landscape sheet, 2×3 on a portrait one)."""
    best = (figures, 1)
    best_err = float("inf")
    for rows in range(1, figures + 1):
        if figures % rows:
            continue
        cols = figures // rows
        err = abs(np.log((width / cols) / (height / rows)))
        if err < best_err - 1e-9:
            best, best_err = (cols, rows), err
    return best


def _cell_index_map(height: int, width: int, cols: int, rows: int) -> npt.NDArray[np.int32]:
    ys = np.minimum(np.arange(height) * rows // height, rows - 1)
    xs = np.minimum(np.arange(width) * cols // width, cols - 1)
    return (ys[:, None] * cols + xs[None, :]).astype(np.int32)


def _split_component(
    component: npt.NDArray[np.bool_], cells: npt.NDArray[np.int32], targets: list[int]
) -> npt.NDArray[np.int32]:
    """Split one component (a crop) between ``targets`` cells; returns per pixel the target cell or -1."""
    dist = cv2.distanceTransform(component.astype(np.uint8), cv2.DIST_L2, 5)
    markers = np.zeros(component.shape, np.int32)
    for k, cell in enumerate(targets, start=1):
        share = component & (cells == cell)
        if not share.any():
            continue
        peak = float(dist[share].max())
        markers[share & (dist >= 0.6 * peak)] = k
    labels = watershed(-dist, markers, mask=component)
    lookup = np.array([-1, *targets], np.int32)
    return lookup[labels]


def cut_sheet(sheet: npt.NDArray[np.uint8], figures: int) -> SheetCut:
    """Key a green-screen sheet (or take an already keyed one) and cut it into figures.

    Args:
        sheet: H×W×3 uint8 RGB on green, or H×W×4 uint8 RGBA already keyed.
        figures: how many figures the sheet should hold (4 or 6), laid out as :func:`grid_for`.

    Returns:
        The figures and the validity report; never raises for a bad sheet.
    """
    rgba = key_green(sheet) if sheet.shape[2] == 3 else sheet
    height, width = rgba.shape[:2]
    cols, rows = grid_for(figures, width, height)
    cell_area = (width / cols) * (height / rows)
    cells = _cell_index_map(height, width, cols, rows)
    solid = (rgba[..., 3] >= 128).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(solid, connectivity=8)

    owner = np.full(height * width, -1, np.int32)  # cell that owns each pixel, or -1
    flat_labels = labels.ravel()
    speck_area = max(24.0, _SPECK_FRACTION * cell_area)
    specks = 0
    split_cells: set[int] = set()
    for label in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[label])
        if area < speck_area:
            specks += 1
            continue
        crop_labels = labels[y : y + h, x : x + w]
        component = crop_labels == label
        crop_cells = cells[y : y + h, x : x + w]
        shares = np.bincount(crop_cells[component], minlength=cols * rows)
        big = [int(c) for c in np.nonzero(shares >= max(_SPLIT_SHARE * area, speck_area))[0]]
        ys, xs = np.nonzero(component)
        flat_index = (ys + y) * width + (xs + x)
        if len(big) >= 2:
            assignment = _split_component(component, crop_cells, big)
            owner[flat_index] = assignment[ys, xs]
            split_cells.update(big)
        else:
            owner[flat_index] = int(np.argmax(shares))
    del flat_labels

    owner_map = owner.reshape(height, width)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * _FRINGE_PX + 1, 2 * _FRINGE_PX + 1))
    found: list[CutFigure] = []
    missing: list[int] = []
    edge_cut: list[int] = []
    min_figure = _MIN_FIGURE_FRACTION * cell_area
    for cell in range(cols * rows):
        mine = owner_map == cell
        if mine.sum() < min_figure:
            missing.append(cell)
            continue
        others = (owner_map >= 0) & ~mine
        keep = (cv2.dilate(mine.astype(np.uint8), kernel) > 0) & ~others
        x, y, w, h = cv2.boundingRect(keep.astype(np.uint8))
        crop = rgba[y : y + h, x : x + w].copy()
        crop[..., 3] = np.where(keep[y : y + h, x : x + w], crop[..., 3], 0)
        crop[crop[..., 3] == 0, :3] = 0
        core_x, core_y, core_w, core_h = cv2.boundingRect(mine.astype(np.uint8))
        touches = core_x <= 0 or core_y <= 0 or core_x + core_w >= width or core_y + core_h >= height
        if touches:
            edge_cut.append(cell)
        found.append(
            CutFigure(
                cell=cell, rgba=crop, box=(x, y, w, h), touches_edge=touches, was_split=cell in split_cells
            )
        )
    return SheetCut(
        expected=cols * rows,
        figures=found,
        missing=missing,
        edge_cut=edge_cut,
        split=sorted(split_cells),
        specks=specks,
    )
