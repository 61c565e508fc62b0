"""A sticker pack from sheets: cut → outline → export, shared by every provider.

The ``local`` provider feeds :func:`render_pack`; AI providers hand their green-screen sheets to
:func:`stickers_from_sheets` (or :func:`cut_sheets` first, when they want to regenerate single figures
before finishing), so all sheets go through the same keying, cutting, outline and export code.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shared.errors import ErrorClass, RetryableJobError
from shared.outfits import Outfit
from worker.pipeline.cut import SheetCut, cut_sheet
from worker.pipeline.finish import Sticker, finish_sticker
from worker.pipeline.local_render import decode_rgb, draw_sheets, prepare_face, sheet_layout
from worker.pipeline.poses import POSES

__all__ = [
    "PACK_SIZE",
    "Pack",
    "Sticker",
    "cut_sheets",
    "render_pack",
    "stickers_from_cuts",
    "stickers_from_sheets",
]

PACK_SIZE = 12  # stickers per pack (DESIGN.md §1)


@dataclass(frozen=True, slots=True)
class Pack:
    """The 12 stickers of a job and the seconds spent per stage (``face``, ``render_sheets``, ``cut``,
    ``finish`` for the offline :func:`render_pack`; the stages of :func:`worker.render.render_job`)."""

    stickers: list[Sticker]
    timings: dict[str, float] = field(default_factory=dict)


class _Stopwatch:
    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings if timings is not None else {}
        self.started = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self.started)
        self.started = now


def cut_sheets(sheets: Sequence[npt.NDArray[np.uint8]], figures_per_sheet: int) -> list[SheetCut]:
    """Key and cut every sheet (H×W×3 uint8 RGB on green); see :func:`worker.pipeline.cut.cut_sheet`."""
    return [cut_sheet(sheet, figures_per_sheet) for sheet in sheets]


def stickers_from_cuts(
    cuts: Sequence[SheetCut], emojis: Sequence[str], *, timings: dict[str, float] | None = None
) -> list[Sticker]:
    """Outline and export the figures of valid sheet cuts, in sheet and cell order
    (:func:`worker.pipeline.finish.finish_sticker`).

    Raises:
        RetryableJobError: (class ``invalid``) a sheet misses figures, or the figure count does not
            match ``emojis``.
    """
    for number, cut in enumerate(cuts):
        if not cut.valid:
            raise RetryableJobError(
                f"sheet {number} is not valid: {cut.describe()}", error_class=ErrorClass.INVALID
            )
    figures = [figure for cut in cuts for figure in cut.figures]
    if len(figures) != len(emojis):
        raise RetryableJobError(
            f"{len(figures)} figures for {len(emojis)} emojis", error_class=ErrorClass.INVALID
        )
    watch = _Stopwatch(timings)
    stickers = [finish_sticker(figure.rgba, emoji)[0] for figure, emoji in zip(figures, emojis, strict=True)]
    watch.lap("finish")
    return stickers


def stickers_from_sheets(
    sheets: Sequence[npt.NDArray[np.uint8]],
    figures_per_sheet: int,
    emojis: Sequence[str],
    *,
    timings: dict[str, float] | None = None,
) -> list[Sticker]:
    """Cut, outline and export green-screen sheets (any provider's).

    Args:
        sheets: H×W×3 uint8 RGB sheets on a green backdrop.
        figures_per_sheet: 4 (layout ``3x4``) or 6 (layout ``2x6``).
        emojis: one emoji per figure, in sheet order then row-major cell order.
        timings: if given, seconds are added under ``cut`` and ``finish`` (outline and export).

    Raises:
        RetryableJobError: (class ``invalid``) a sheet without its full grid of figures.
    """
    watch = _Stopwatch(timings)
    cuts = cut_sheets(sheets, figures_per_sheet)
    watch.lap("cut")
    return stickers_from_cuts(cuts, emojis, timings=watch.timings)


def render_pack(selfie_jpeg: bytes, outfit: Outfit, *, layout: str = "3x4") -> Pack:
    """The whole offline pipeline: selfie → 12 stickers with the ``local`` provider.

    Args:
        selfie_jpeg: the normalised selfie (JPEG from ingest; any Pillow-readable image works).
        outfit: the costume.
        layout: ``3x4`` or ``2x6`` (``SHEET_LAYOUT``).

    Raises:
        NoFaceError: no face in the selfie (permanent).
        PermanentJobError: the selfie cannot be decoded.
        RetryableJobError: the sheets could not be cut into 12 figures (class ``invalid``).
    """
    timings: dict[str, float] = {}
    watch = _Stopwatch(timings)
    grid = sheet_layout(layout)
    selfie = decode_rgb(selfie_jpeg)
    face = prepare_face(selfie)
    watch.lap("face")
    poses = POSES[:PACK_SIZE]
    sheets = draw_sheets(face, outfit, grid, poses)
    watch.lap("render_sheets")
    stickers = stickers_from_sheets(sheets, grid.per_sheet, [pose.emoji for pose in poses], timings=timings)
    return Pack(stickers=stickers, timings=timings)
