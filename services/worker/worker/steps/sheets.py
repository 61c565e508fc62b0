"""Sheets: asked for, decoded, keyed and cut, and judged (spec/002 "Sheets", "Cut and chroma key",
"Sheet validity").

Layout ``3x4`` is 3 sheets of 4 figures (2 × 2, 1:1); ``2x6`` is 2 sheets of 6 (3 × 2 or 2 × 3 after
``FIGURE_SHEET_ASPECT``); ``1x12`` (issue 12) is one sheet of 4 × 3 (4:3); sheets are asked for at 2K.
An invalid sheet, or one the chain could not deliver for a charged reason (a refusal, a timeout, an
answer without an image), burns one sheet attempt; a valid sheet is taken at once. "Valid" is strict in
the legacy and composite paths (one figure in every cell, no extra) and lenient in the newer paths, where
a missing or edge-cut figure becomes a single-figure regeneration instead: there a sheet is valid with no
extra figure and at most half its cells missing.

The one-sheet layout (``1x12``, used by the consistency, classic and hybrid paths; legacy and composite
keep their 2 sheets of 6) has its own rules:

- valid with no extra figure and at most :data:`ONE_SHEET_MAX_MISSING` (2) cells missing, not half:
  each missing figure is a 1K single-figure call (Gemini $0.039) and the whole sheet again is one 2K
  call ($0.067), so from 2 missing on, drawing the sheet again costs about what the singles would;
- a figure must keep room for its die-cut outline: one that reaches a line of its cell (the cell edge,
  the sheet border included) or was split from a touching neighbour is *crowded* (:func:`crowded`) and
  becomes an ``edge`` defect, regenerated as a single figure under ``CONSISTENCY_MAX_REGEN``;
- an invalid sheet is drawn again (``FIGURE_SHEET_ATTEMPTS``, 3); when none is valid the path raises
  :class:`worker.context.NoValidSheet` and the job falls back to composite (``FIGURE_FALLBACK_ENABLED``)
  like any other layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cartoon.poses import POSES
from cartoon.sheets import sheet_layout
from shared.errors import RetryableJobError
from shared.outfits import Outfit
from worker.context import ProviderCalls
from worker.imaging.cut import SheetCut
from worker.providers.answers import Passport
from worker.providers.base import Aspect, DrawSpec, ImageKind, ImageRequest, InputImage, ProviderCallError
from worker.providers.prompts import ColourLock, image_prompt

__all__ = [
    "ONE_SHEET_MAX_MISSING",
    "PromptTerms",
    "SheetPlan",
    "SheetResult",
    "crowded",
    "draw_sheet",
    "draw_single",
    "lenient",
    "plan_sheets",
    "sheet_with_attempts",
    "strict",
]

PACK_SIZE = 12
#: Missing cells a one-sheet (``1x12``) sheet may have and still be taken (module docstring).
ONE_SHEET_MAX_MISSING = 2
_ASPECTS: dict[tuple[int, int], Aspect] = {(3, 2): "3:2", (2, 3): "2:3", (4, 3): "4:3"}


@dataclass(frozen=True, slots=True)
class PromptTerms:
    """What every image prompt of one path says besides its task and poses
    (:func:`worker.providers.prompts.image_prompt`; spec/002 "How the variants differ").

    Attributes:
        outfit: the costume (its ``prompt`` is quoted).
        art_style: ``ART_STYLE`` (``cute_cartoon``).
        passport: the appearance passport, when there is one.
        hard_locks: the consistency path's ``HARD LOCKS`` block.
        colour_lock: hybrid's ``COLOR LOCK`` block.
    """

    outfit: Outfit
    art_style: str
    passport: Passport | None = None
    hard_locks: bool = False
    colour_lock: ColourLock | None = None

    def prompt(self, kind: ImageKind, spec: DrawSpec, refs: Sequence[InputImage], aspect: str) -> str:
        """The prompt of an image request of ``kind`` for ``spec``, with ``refs`` attached."""
        return image_prompt(
            kind,
            spec,
            outfit=self.outfit,
            art_style=self.art_style,
            roles=[image.role for image in refs],
            aspect=aspect,
            passport=self.passport,
            hard_locks=self.hard_locks,
            colour_lock=self.colour_lock,
        )


@dataclass(frozen=True, slots=True)
class SheetPlan:
    """One sheet of a pack: its number (0-based), the poses of its cells in reading order, the pack
    slot of its first cell, its grid and aspect ratio."""

    number: int
    poses: tuple[str, ...]
    first_slot: int
    cols: int
    rows: int

    @property
    def figures(self) -> int:
        """Cells on the sheet."""
        return self.cols * self.rows

    @property
    def one_sheet(self) -> bool:
        """The whole pack on this sheet (layout ``1x12``): its own validity and room rules."""
        return self.figures >= PACK_SIZE

    @property
    def aspect(self) -> Aspect:
        """``1:1``, ``3:2`` (landscape), ``2:3`` (portrait) or ``4:3`` (the one-sheet 4 × 3 grid)."""
        if self.cols == self.rows:
            return "1:1"
        return _ASPECTS.get((self.cols, self.rows), "3:2" if self.cols > self.rows else "2:3")


def plan_sheets(layout: str, aspect: str) -> list[SheetPlan]:
    """The sheets of a 12-sticker pack for ``SHEET_LAYOUT`` and ``FIGURE_SHEET_ASPECT``."""
    grid = sheet_layout(layout, aspect)
    names = [pose.name for pose in POSES[:PACK_SIZE]]
    return [
        SheetPlan(
            number=s,
            poses=tuple(names[s * grid.per_sheet : (s + 1) * grid.per_sheet]),
            first_slot=s * grid.per_sheet,
            cols=grid.cols,
            rows=grid.rows,
        )
        for s in range(grid.sheets)
    ]


@dataclass(frozen=True, slots=True)
class SheetResult:
    """A sheet that came back: the image (H×W×3 RGB, or ×4 when the provider drew transparency), its
    cut, and how many attempts it took."""

    plan: SheetPlan
    image: npt.NDArray[np.uint8]
    cut: SheetCut
    attempts: int


def strict(cut: SheetCut) -> bool:
    """Legacy and composite validity: one figure in every cell, no extra figure."""
    return cut.valid


def lenient(cut: SheetCut) -> bool:
    """Newer-path validity: no extra figure, at most half the cells missing (those are regenerated);
    on a one-sheet (12-cell) sheet at most :data:`ONE_SHEET_MAX_MISSING`."""
    limit = ONE_SHEET_MAX_MISSING if cut.expected >= PACK_SIZE else cut.expected // 2
    return not cut.extra and len(cut.missing) <= limit


def crowded(result: SheetResult) -> list[int]:
    """The cells of a one-sheet sheet whose figure has no room for its die-cut outline: its box (the
    cut's crop, the figure plus its soft fringe, in sheet px) reaches or crosses a line of its own cell
    of the requested grid, or it was split from a touching neighbour. Empty for the other layouts,
    whose 1024 px cells (at 2K) leave the room by themselves."""
    plan = result.plan
    if not plan.one_sheet:
        return []
    height, width = result.image.shape[:2]
    cell_w, cell_h = width / plan.cols, height / plan.rows
    found = []
    for figure in result.cut.figures:
        row, col = divmod(figure.cell, plan.cols)
        x, y, w, h = figure.box
        inside = (
            x > col * cell_w
            and y > row * cell_h
            and x + w < (col + 1) * cell_w
            and y + h < (row + 1) * cell_h
        )
        if not inside or figure.was_split:
            found.append(figure.cell)
    return found


async def draw_sheet(
    calls: ProviderCalls,
    plan: SheetPlan,
    refs: Sequence[InputImage],
    terms: PromptTerms,
    *,
    kind: str = "sheet",
) -> tuple[npt.NDArray[np.uint8], SheetCut]:
    """Ask for one sheet (``kind`` ``sheet`` or ``heads``) at 2K and cut it (stages ``generate`` and
    ``cut``); returns the image (H×W×3 RGB, or ×4) and its cut.

    Raises:
        RetryableJobError: the chain could not deliver for a charged reason (an answer that is not an
            image included).
        ContentRefused, ProviderUnavailable, JobCostExceeded: from the chain.
    """
    spec = DrawSpec(
        outfit_id=terms.outfit.id,
        poses=plan.poses,
        cols=plan.cols,
        rows=plan.rows,
        heads_only=kind == "heads",
    )
    image_kind: ImageKind = "heads" if kind == "heads" else "sheet"
    prompt = terms.prompt(image_kind, spec, refs, plan.aspect)
    request = ImageRequest(
        kind=image_kind, prompt=prompt, images=tuple(refs), size="2K", aspect=plan.aspect, spec=spec
    )
    async with calls.stage("generate"):
        result = await calls.image(request)  # decoded there: bytes that are not an image
    async with calls.stage("cut"):  # are the chain's ``invalid``, never a crash here
        cut = await calls.cut(result.image, plan.figures)
    return result.image, cut


async def draw_single(
    calls: ProviderCalls, kind: ImageKind, pose: str, refs: Sequence[InputImage], terms: PromptTerms
) -> tuple[npt.NDArray[np.uint8], SheetCut]:
    """Ask for one figure in ``pose`` at 1K, 1:1 (``kind`` ``anchor`` or ``figure``, a single-figure
    regeneration) and cut it; returns the image (H×W×3 RGB) and its cut.

    Raises:
        The same as :func:`draw_sheet`.
    """
    spec = DrawSpec(outfit_id=terms.outfit.id, poses=(pose,))
    prompt = terms.prompt(kind, spec, refs, "1:1")
    request = ImageRequest(kind=kind, prompt=prompt, images=tuple(refs), size="1K", aspect="1:1", spec=spec)
    result = await calls.image(request)
    image = np.ascontiguousarray(result.image[..., :3])
    return image, await calls.cut(image, 1)


async def sheet_with_attempts(
    calls: ProviderCalls,
    plan: SheetPlan,
    refs: Sequence[InputImage],
    terms: PromptTerms,
    *,
    attempts: int,
    accept: Callable[[SheetCut], bool],
    kind: str = "sheet",
    keep: list[SheetResult] | None = None,
) -> SheetResult | None:
    """Ask for a sheet until ``accept`` takes one, at most ``attempts`` times (``FIGURE_SHEET_ATTEMPTS``);
    ``None`` when none was taken. Every sheet that came back is appended to ``keep`` (composite uses the
    best cells of all). Logs ``SHEET`` (taken), ``SHEET_INVALID`` and ``SHEET_FAILED`` per attempt.

    Raises:
        ContentRefused: every provider refused the job's selfie: no further attempt is made.
        ProviderUnavailable, JobCostExceeded: from the chain.
    """
    for attempt in range(1, attempts + 1):
        try:
            image, cut = await draw_sheet(calls, plan, refs, terms, kind=kind)
        except (RetryableJobError, ProviderCallError) as exc:
            calls.event(
                "SHEET_FAILED", level="warning", sheet=plan.number, attempt=attempt, error=str(exc)[:200]
            )
            continue
        result = SheetResult(plan=plan, image=image, cut=cut, attempts=attempt)
        if keep is not None:
            keep.append(result)
        if accept(cut):
            calls.event("SHEET", sheet=plan.number, attempt=attempt, cut=cut.describe())
            return result
        calls.event("SHEET_INVALID", level="warning", sheet=plan.number, attempt=attempt, cut=cut.describe())
    return None
