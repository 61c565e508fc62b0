"""The anchor portrait of the consistency path (spec/002 "Anchor"): a neutral, front-facing figure in the
target style and outfit (1K, 1:1); verified against the selfie (hair length, hair colour, facial hair,
glasses; ``ANCHOR_VERIFY_TIMEOUT_SEC``) with exactly one retry on a verified mismatch (the first anchor is
used when the retry does not match either); its skin shifted toward the passport's estimate
(``ANCHOR_SKIN_STRENGTH`` 0.6, at most ``SKIN_NORM_MAX_DE`` 4 ΔE); cached on the job (blob ``anchor``).
No anchor at all sends the job down the legacy figure path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cartoon.offline import encode_png
from shared.errors import ProviderUnavailable, RetryableJobError
from shared.imaging.lab import Lab, delta_e, hex_to_lab, mean_lab, skin_mask
from shared.outfits import Outfit
from worker.context import ArtefactCache, ProviderCalls
from worker.imaging.cut import cut_sheet
from worker.imaging.skin import capped_shift, shift_region
from worker.providers.answers import ANCHOR_CHECK_SCHEMA, AnchorCheck, Passport, parse_answer
from worker.providers.base import InputImage, ProviderCallError, VisionRequest
from worker.providers.images import decode_output, encode_drawing
from worker.providers.prompts import vision_prompt
from worker.steps.sheets import PromptTerms, draw_single

__all__ = ["Anchor", "anchor_portrait", "shift_anchor_skin"]


@dataclass(frozen=True, slots=True)
class Anchor:
    """The anchor: the image (H×W×3 RGB on green), its wire encoding (image 1 of every sheet request)
    and its skin colour (Lab; ``None`` when no skin is visible)."""

    rgb: npt.NDArray[np.uint8]
    image: InputImage
    skin: Lab | None


def _skin_of(rgb: npt.NDArray[np.uint8], near: Lab | None) -> Lab | None:
    cut = cut_sheet(rgb, 1)
    if not cut.figures:
        return None
    figure = cut.figures[0].rgba
    return mean_lab(figure, skin_mask(figure, near))


def _anchor_of(rgb: npt.NDArray[np.uint8], near: Lab | None) -> Anchor:
    """The anchor of an H×W×3 image: its wire encoding and skin colour (CPU-bound: run in a thread)."""
    return Anchor(rgb=rgb, image=encode_drawing(rgb, "anchor"), skin=_skin_of(rgb, near))


def _reused(cached: bytes) -> Anchor:
    """The anchor of a job's stored ``anchor`` PNG (CPU-bound: run in a thread)."""
    return _anchor_of(np.ascontiguousarray(decode_output(cached)[..., :3]), None)


def shift_anchor_skin(
    rgb: npt.NDArray[np.uint8], target: Lab, *, strength: float, max_de: float
) -> tuple[npt.NDArray[np.uint8], float, float | None]:
    """Move the anchor's skin toward ``target`` (the passport's skin tone).

    Returns:
        The shifted H×W×3 image, the ΔE2000 of the applied shift, and the skin's ΔE2000 from the
        target before (``None`` when no skin was found).
    """
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
    mask = skin_mask(rgba, target)
    current = mean_lab(rgba, mask)
    if current is None:
        return rgb, 0.0, None
    shift = capped_shift(current, target, strength=strength, max_de=max_de)
    applied = delta_e(current, current + shift)
    return np.ascontiguousarray(shift_region(rgba, mask, shift)[..., :3]), applied, delta_e(current, target)


async def _verify(
    calls: ProviderCalls, anchor: npt.NDArray[np.uint8], selfie: InputImage, *, timeout_s: float
) -> AnchorCheck | None:
    request = VisionRequest(
        kind="verify",
        prompt=vision_prompt("verify"),
        images=(await calls.cpu(encode_drawing, anchor, "anchor"), selfie),
        schema=ANCHOR_CHECK_SCHEMA,
    )
    try:
        answer = await calls.vision(request, timeout_s=timeout_s)
    except (RetryableJobError, ProviderUnavailable) as exc:
        calls.event("ANCHOR_VERIFY_UNAVAILABLE", level="warning", error=str(exc)[:200])
        return None
    return parse_answer(AnchorCheck, answer)


async def anchor_portrait(
    calls: ProviderCalls,
    artefacts: ArtefactCache,
    selfie: InputImage,
    face: InputImage | None,
    passport: Passport | None,
    *,
    outfit: Outfit,
    art_style: str,
    anchor_retries: int,
    anchor_verify: bool,
    anchor_verify_timeout_sec: float,
    anchor_skin_strength: float,
    skin_norm_max_de: float,
) -> Anchor | None:
    """The job's anchor: cached in ``artefacts`` (``anchor``), else drawn, verified (one retry on a
    mismatch) and skin-shifted; ``None`` when it could not be drawn (the caller takes the legacy path).

    Args:
        outfit, art_style: the prompt's costume and ``ART_STYLE``.
        anchor_retries: redraws after a verified mismatch (``ANCHOR_RETRIES``, 1).
        anchor_verify: verify the anchor against the selfie (``ANCHOR_VERIFY``, on).
        anchor_verify_timeout_sec: the verify call's timeout (``ANCHOR_VERIFY_TIMEOUT_SEC``, 10 s).
        anchor_skin_strength: the share of the way to the passport's skin (``ANCHOR_SKIN_STRENGTH``, 0.6).
        skin_norm_max_de: the largest skin shift (``SKIN_NORM_MAX_DE``, 4 ΔE2000).

    Raises:
        JobCostExceeded, ProviderUnavailable: from the chain.
    """
    cached = await artefacts.get("anchor")
    if cached is not None:
        calls.event("ANCHOR_REUSED")
        return await calls.cpu(_reused, cached)
    refs = (selfie, face) if face is not None else (selfie,)
    terms = PromptTerms(outfit=outfit, art_style=art_style, passport=passport)
    rgb: npt.NDArray[np.uint8] | None = None
    async with calls.stage("anchor"):
        for attempt in range(anchor_retries + 1):
            try:
                drawn, _cut = await draw_single(calls, "anchor", "neutral", refs, terms)
            except (RetryableJobError, ProviderCallError) as exc:
                calls.event("ANCHOR_FAILED", level="warning", attempt=attempt + 1, error=str(exc)[:200])
                break
            rgb = drawn if rgb is None else rgb
            if not anchor_verify:
                rgb = drawn
                break
            check = await _verify(calls, drawn, selfie, timeout_s=anchor_verify_timeout_sec)
            if check is None or check.match:
                rgb = drawn
                calls.event("ANCHOR_VERIFIED", attempt=attempt + 1, match=check.match if check else None)
                break
            calls.event("ANCHOR_MISMATCH", level="warning", attempt=attempt + 1, mismatches=check.mismatches)
    if rgb is None:
        return None
    chosen: npt.NDArray[np.uint8] = rgb
    target = hex_to_lab(passport.skin_tone_hex) if passport is not None else None
    if target is not None:
        chosen, applied, before = await calls.cpu(
            lambda: shift_anchor_skin(chosen, target, strength=anchor_skin_strength, max_de=skin_norm_max_de)
        )
        calls.event(
            "ANCHOR_SKIN_SHIFT",
            before_de=None if before is None else round(before, 2),
            applied_de=round(applied, 2),
        )
    await artefacts.put("anchor", await calls.cpu(encode_png, chosen), "image/png")
    return await calls.cpu(_anchor_of, chosen, target)
