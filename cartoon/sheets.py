"""The offline ``local`` provider: draws the sticker sheets from the selfie with OpenCV, no AI call.

It produces the same artefact an AI provider returns, sheets of figures on green ``#00FF00``
(spec/002 "Sheets": layout ``3x4`` = 3 sheets of 4 figures in a 2×2 grid, 1:1; ``2x6`` = 2 sheets of
6 figures in a 3×2 grid; issue 12's ``1x12`` = all 12 figures on one sheet, 4 columns × 3 rows, 4:3),
so the rest of the pipeline (cut, outline, export) cannot tell them apart.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from PIL import Image

from cartoon.body import CELL
from cartoon.face_cartoon import CartoonFace, cartoonize_face
from cartoon.figure import draw_figure, face_size_px
from cartoon.poses import POSES, Pose
from shared.errors import NoFaceError
from shared.imaging.faces import FaceBox, detect_faces, largest_face
from shared.imaging.resample import resize_rgba
from shared.outfits import Outfit

__all__ = [
    "CHROMA_GREEN",
    "LAYOUTS",
    "SheetLayout",
    "draw_grid",
    "draw_sheets",
    "prepare_face",
    "render_outfit_thumbnail",
    "render_sheets",
    "sheet_layout",
]

CHROMA_GREEN = (0, 255, 0)
THUMBNAIL_PX = 256


@dataclass(frozen=True, slots=True)
class SheetLayout:
    """How the 12 figures of a pack are spread over sheets (spec/002 "Sheets")."""

    sheets: int
    cols: int
    rows: int

    @property
    def per_sheet(self) -> int:
        """Figures on one sheet."""
        return self.cols * self.rows

    @property
    def sheet_size(self) -> tuple[int, int]:
        """Sheet (width, height) px: one 512 px cell per figure."""
        return (self.cols * CELL, self.rows * CELL)


#: ``SHEET_LAYOUT`` names: ``<sheets>x<figures per sheet>`` (spec/002 "Sheets"; ``1x12`` from issue 12:
#: one 4:3 sheet, 2048 × 1536 px at 2K, so each cell is 512 px, the sticker size).
LAYOUTS: dict[str, SheetLayout] = {
    "3x4": SheetLayout(3, 2, 2),
    "2x6": SheetLayout(2, 3, 2),
    "1x12": SheetLayout(1, 4, 3),
}


def sheet_layout(layout: str, aspect: str = "3:2") -> SheetLayout:
    """The layout named ``3x4`` (3 sheets of 2 × 2, 1:1), ``2x6`` (2 sheets of 6) or ``1x12`` (one sheet
    of 4 columns × 3 rows, 4:3) (``SHEET_LAYOUT``).

    Sheets of 6 follow ``aspect`` (``FIGURE_SHEET_ASPECT``): ``3:2`` is 3 columns × 2 rows (landscape),
    ``2:3`` is 2 columns × 3 rows (portrait). The other layouts ignore it: ``1x12`` stays landscape,
    the shape both providers offer (Gemini ``4:3``; OpenAI's nearest size is ``1536x1024``).

    Raises:
        ValueError: any other name or aspect.
    """
    try:
        grid = LAYOUTS[layout]
    except KeyError:
        raise ValueError(f"unknown sheet layout {layout!r}; expected one of {sorted(LAYOUTS)}") from None
    if grid.per_sheet != 6:
        return grid
    if aspect == "3:2":
        return SheetLayout(grid.sheets, 3, 2)
    if aspect == "2:3":
        return SheetLayout(grid.sheets, 2, 3)
    raise ValueError(f"unknown sheet aspect {aspect!r}; expected 3:2 or 2:3")


def prepare_face(selfie: npt.NDArray[np.uint8], face: FaceBox | None = None) -> CartoonFace:
    """Draw the guest's face as a cartoon head.

    Args:
        selfie: H×W×3 uint8 RGB photo.
        face: the guest's face in ``selfie`` px when the caller has it (the one ingest stored with the
            selfie); ``None``: the largest face :func:`shared.imaging.faces.detect_faces` finds.

    Raises:
        NoFaceError: no face passed and no human face found in the photo.
    """
    if face is None:
        face = largest_face(detect_faces(selfie))
    if face is None:
        raise NoFaceError("no face found in the selfie")
    return cartoonize_face(selfie, face, face_size_px())


def draw_grid(
    face: CartoonFace | None,
    outfit: Outfit,
    poses: Sequence[Pose | None],
    cols: int,
    rows: int,
    *,
    parts: Literal["all", "head"] = "all",
    seed: int = 0,
) -> npt.NDArray[np.uint8]:
    """One sheet: the figures (or heads) of ``poses`` in reading order in a ``cols`` × ``rows`` grid of
    512 px cells on pure green; ``None`` leaves a cell empty.

    Returns:
        (rows·512)×(cols·512)×3 uint8 RGB.
    """
    sheet = np.empty((rows * CELL, cols * CELL, 3), np.uint8)
    sheet[:] = CHROMA_GREEN
    for k, pose in enumerate(poses[: cols * rows]):
        if pose is None:
            continue
        figure = draw_figure(face, outfit, pose, seed=seed + k, parts=parts)
        row, col = divmod(k, cols)
        cell = sheet[row * CELL : (row + 1) * CELL, col * CELL : (col + 1) * CELL]
        alpha = figure[..., 3:4].astype(np.float32) / 255.0
        blended = figure[..., :3].astype(np.float32) * alpha + cell.astype(np.float32) * (1.0 - alpha)
        cell[:] = np.clip(blended + 0.5, 0, 255).astype(np.uint8)
    return sheet


def draw_sheets(
    face: CartoonFace | None, outfit: Outfit, layout: SheetLayout, poses: tuple[Pose, ...] = POSES
) -> list[npt.NDArray[np.uint8]]:
    """Draw the figures of ``poses`` row by row into sheets on pure green.

    Returns:
        ``layout.sheets`` images, each H×W×3 uint8 RGB of ``layout.sheet_size``.
    """
    return [
        draw_grid(
            face,
            outfit,
            poses[s * layout.per_sheet : (s + 1) * layout.per_sheet],
            layout.cols,
            layout.rows,
            seed=s * layout.per_sheet,
        )
        for s in range(layout.sheets)
    ]


def render_sheets(
    selfie: npt.NDArray[np.uint8], outfit: Outfit, layout: str = "3x4"
) -> list[npt.NDArray[np.uint8]]:
    """The ``local`` provider: the 12 poses of a pack as green-screen sheets, from the selfie alone.

    Args:
        selfie: H×W×3 uint8 RGB photo with the guest's face.
        outfit: the costume.
        layout: ``3x4`` (3 sheets 1024×1024 px), ``2x6`` (2 sheets 1536×1024 px) or ``1x12`` (one sheet
            2048×1536 px).

    Raises:
        NoFaceError: no face in the selfie.
    """
    return draw_sheets(prepare_face(selfie), outfit, sheet_layout(layout))


def render_outfit_thumbnail(outfit: Outfit) -> bytes:
    """The outfit on a faceless mannequin, waving: a 256×256 px RGBA PNG for the kiosk catalog."""
    figure = draw_figure(None, outfit, POSES[0])
    small = resize_rgba(figure, (THUMBNAIL_PX, THUMBNAIL_PX))
    out = io.BytesIO()
    Image.fromarray(small).save(out, format="PNG", optimize=True)
    return out.getvalue()
