"""Identity QA by a vision call on contact sheets (spec/002 "Pack QA"): the reference (anchor or selfie)
as image 1, the stickers numbered in reading order on contact sheets; the answer names the outliers
(hair length, hair colour, skin tone, face shape, facial hair). QA that is unavailable, disabled
(``QA_IDENTITY_ENABLED=false``) or answers nonsense accepts the stickers as they are."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shared.errors import ProviderUnavailable, RetryableJobError
from worker.context import ProviderCalls
from worker.imaging.contact import contact_sheet
from worker.providers.answers import QA_SCHEMA, QaAnswer, parse_answer
from worker.providers.base import InputImage, VisionKind, VisionRequest
from worker.providers.images import encode_drawing
from worker.providers.prompts import vision_prompt

__all__ = ["identity_outliers"]

_REFERENCE_TEXT = {"anchor": "the anchor portrait", "selfie": "the guest's selfie"}


def _contact_image(stickers: list[npt.NDArray[np.uint8]], cols: int, rows: int) -> InputImage:
    """The contact sheet of ``stickers`` as the wire's PNG (CPU-bound: run in a thread)."""
    return encode_drawing(contact_sheet(stickers, cols, rows), "contact")


async def identity_outliers(
    calls: ProviderCalls,
    reference: InputImage,
    stickers: Sequence[npt.NDArray[np.uint8]],
    *,
    qa_identity_enabled: bool,
    kind: VisionKind = "pack_qa",
    grid: tuple[int, int] | None = None,
) -> dict[int, list[str]]:
    """Which of ``stickers`` (outlined RGBA) do not look like ``reference``.

    Args:
        reference: the anchor (consistency) or the selfie (the other paths).
        stickers: the stickers to judge, in order.
        qa_identity_enabled: ``QA_IDENTITY_ENABLED``; off accepts every sticker without a call.
        kind: ``pack_qa`` or ``sheet_qa``.
        grid: the contact sheet's (cols, rows); default 4 columns, as many rows as needed.

    Returns:
        0-based positions in ``stickers`` → reasons; empty when all match or QA is unavailable.

    Raises:
        JobCostExceeded: the job's ceiling was reached before the call.
    """
    if not qa_identity_enabled or not stickers:
        return {}
    cols, rows = grid or (min(4, len(stickers)), math.ceil(len(stickers) / 4))
    contact = await calls.cpu(_contact_image, list(stickers), cols, rows)
    request = VisionRequest(
        kind=kind,
        prompt=vision_prompt(
            kind, reference=_REFERENCE_TEXT[reference.role], count=len(stickers), grid=(cols, rows)
        ),
        images=(reference, contact),
        schema=QA_SCHEMA,
        contact_grid=(cols, rows),
    )
    try:
        async with calls.stage("qa"):
            answer = await calls.vision(request)
    except (RetryableJobError, ProviderUnavailable) as exc:
        calls.event("QA_UNAVAILABLE", level="warning", kind=kind, error=str(exc)[:200])
        return {}
    parsed = parse_answer(QaAnswer, answer)
    if parsed is None:
        calls.event("QA_UNAVAILABLE", level="warning", kind=kind, error="unusable answer")
        return {}
    outliers = {o.index - 1: o.reasons for o in parsed.outliers if 1 <= o.index <= len(stickers)}
    calls.event("QA", kind=kind, outliers={k + 1: v for k, v in outliers.items()})
    return outliers
