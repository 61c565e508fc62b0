"""The worker's CPU-bound image code runs off the event loop (issue 12 item 2: one job's CPU never
stalls another's I/O).

The checker installs a profile hook (``sys.setprofile``) on the event loop's thread only: a call of one
of :data:`CPU_FUNCTIONS` that the hook sees ran on the loop; a call in a worker thread
(``asyncio.to_thread``, the render context's ``cpu``/``cut``) is invisible to it. Counting calls, not
timing them, makes the test deterministic on a loaded machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from types import CodeType, FrameType
from typing import Any

import numpy as np
import pytest
import skimage.data
from PIL import Image

import cartoon.appearance
import cartoon.composite
import cartoon.face_cartoon
import cartoon.offline
import shared.imaging.decode
import shared.imaging.faces
import shared.imaging.lab
import shared.imaging.resample
import worker.imaging.chroma
import worker.imaging.contact
import worker.imaging.cut
import worker.imaging.export
import worker.imaging.finish
import worker.imaging.outline
import worker.imaging.skin
import worker.providers.images
import worker.steps.inputs
from shared.outfits import get_outfit, load_catalog
from tests.worker.render_helpers import settings
from worker.context import MemoryArtefacts, RenderContext
from worker.cost import CostLedger, MemoryUsageStore
from worker.providers.chain import ChainPolicy, ProviderChain
from worker.providers.local import LocalProvider
from worker.render import render_job

pytestmark = pytest.mark.unit

#: Every CPU-heavy entry point the worker's render reaches: decode, key and cut, skin, outline, finish,
#: export, contact sheet, the wire encodings, the face detector and descriptor (dlib), the cartoon head and
#: the local provider's appearance measurement, the composite head.
CPU_FUNCTIONS: tuple[Callable[..., Any], ...] = (
    worker.providers.images.decode_output,
    worker.providers.images.encode_drawing,
    worker.providers.images.encode_photo,
    worker.imaging.cut.cut_sheet,
    worker.imaging.chroma.key_green,
    worker.imaging.finish.finish_sticker,
    worker.imaging.export.export_sticker,
    worker.imaging.outline.add_die_cut_outline,
    worker.imaging.skin.normalise_skin,
    worker.imaging.skin.shift_region,
    worker.imaging.skin.remove_green_spill,
    worker.imaging.contact.contact_sheet,
    worker.steps.inputs.prepare_inputs,
    worker.steps.inputs.face_crop,
    shared.imaging.decode.decode_rgb,
    shared.imaging.faces.detect_faces,
    shared.imaging.faces.face_descriptor,
    shared.imaging.lab.skin_pixels,
    shared.imaging.lab.hair_mask,
    shared.imaging.resample.resize_rgba,
    cartoon.composite.compose_head,
    cartoon.face_cartoon.cartoonize_face,
    cartoon.appearance.measure_appearance,
    cartoon.offline.encode_png,
)


@contextlib.contextmanager
def calls_on_this_thread(functions: tuple[Callable[..., Any], ...]) -> Iterator[list[str]]:
    """Record the names of ``functions`` called on the current thread (only this thread's profile hook
    is set) while the block runs."""
    codes: dict[CodeType, str] = {fn.__code__: f"{fn.__module__}.{fn.__qualname__}" for fn in functions}
    seen: list[str] = []

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            seen.append(codes[frame.f_code])

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def jpeg(rgb: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="JPEG", quality=92)
    return out.getvalue()


def context(variant: str) -> RenderContext:
    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return True

    async def no_wait(_seconds: float) -> None:
        return None

    chosen = settings(variant)
    return RenderContext(
        job_id=None,
        selfie=jpeg(skimage.data.astronaut()),
        outfit=get_outfit("chef"),
        settings=chosen,
        chain=ProviderChain(
            [LocalProvider(load_catalog())],
            ChainPolicy(),
            image_slots=asyncio.Semaphore(9),
            alert=alert,
            sleep=no_wait,
        ),
        ledger=CostLedger(
            MemoryUsageStore(),
            job_id=None,
            created_at=datetime.now(UTC),
            max_cost_usd=chosen.job_max_cost_usd,
        ),
        artefacts=MemoryArtefacts(),
        cut_slots=asyncio.Semaphore(2),
        alert=alert,
    )


async def test_the_checker_sees_a_cpu_step_called_on_the_loop() -> None:
    """The bad case: a step called inline (as ``encode_drawing`` once was in pack QA) is caught, and
    the same step through the context's thread helper is not."""
    ctx = context("consistency")
    image = np.zeros((64, 64, 3), np.uint8)
    with calls_on_this_thread(CPU_FUNCTIONS) as inline:
        worker.providers.images.encode_drawing(image, "contact")
    with calls_on_this_thread(CPU_FUNCTIONS) as threaded:
        await ctx.cpu(worker.providers.images.encode_drawing, image, "contact")
    assert inline == ["worker.providers.images.encode_drawing"]
    assert threaded == []


@pytest.mark.parametrize("variant", ["consistency", "hybrid", "legacy", "composite"])
async def test_a_render_runs_no_cpu_step_on_the_event_loop(variant: str) -> None:
    ctx = context(variant)
    with calls_on_this_thread(CPU_FUNCTIONS) as on_loop:
        pack = await render_job(ctx)
    assert len(pack.stickers) == 12
    assert on_loop == []


async def test_a_reused_anchor_is_decoded_and_encoded_off_the_loop() -> None:
    first = context("consistency")
    await render_job(first)
    again = context("consistency")
    again.artefacts = first.artefacts
    with calls_on_this_thread(CPU_FUNCTIONS) as on_loop:
        await render_job(again)
    assert any(e["event"] == "ANCHOR_REUSED" for e in again.events)
    assert on_loop == []
