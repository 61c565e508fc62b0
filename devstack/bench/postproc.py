"""The ``make bench`` rows "Post-processing": the image post-processing CPU time of one 12-sticker pack,
next to the floor measured in the same run.

Post-processing is everything between the provider's answer and the stickers: decoding the sheet PNGs,
keying and cutting them, skin normalisation, the die-cut outline, export (with its PNG encoding) and the
per-sticker QA numbers. The floor is what no pipeline can avoid: decoding the same sheets and encoding
the same 12 stickers as PNG (the exporter's settings). Both are process CPU seconds, single-threaded,
the median of ``--repeat`` runs. The sheets come from the ``local`` renderer (layout ``3x4``: three
1024 × 1024 px sheets), encoded as a provider sends them, and are measured twice: as drawn (1K) and
enlarged to 2048 × 2048 px, the size providers return at 2K (spec/002 "Sheets": sheets at 2K), which
the pipeline cuts at 1024 px (:data:`worker.imaging.cut.WORK_CELL_PX`).
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from cartoon.poses import POSES
from cartoon.sheets import render_sheets, sheet_layout
from devstack.bench.report import Options, Row
from shared.imaging.decode import decode_rgb
from shared.imaging.lab import Lab, mean_lab, skin_mask
from shared.outfits import load_catalog
from worker.imaging.cut import cut_sheet
from worker.imaging.export import export_sticker
from worker.imaging.finish import finish_figure, finish_sticker, green_fringe
from worker.imaging.skin import normalise_skin
from worker.providers.images import decode_output

__all__ = ["TARGET_RATIO", "measure", "post_process", "run", "stage_breakdown"]

TARGET_RATIO = 1.5
T = TypeVar("T")

DEFAULT_PHOTO = (
    Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "photos" / "astronaut-portrait.png"
)


def _png(image: npt.NDArray[np.uint8], level: int = 6) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG", compress_level=level)
    return out.getvalue()


class _Stages:
    """Process CPU seconds summed per stage name (``None``: not recorded)."""

    def __init__(self, seconds: dict[str, float] | None) -> None:
        self.seconds = seconds

    def run(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, its CPU time added to ``name``."""
        if self.seconds is None:
            return fn(*args, **kwargs)
        started = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - started


def _skin_of(figure: npt.NDArray[np.uint8]) -> Lab | None:
    return mean_lab(figure, skin_mask(figure))


def post_process(
    sheets: Sequence[bytes], figures_per_sheet: int, stages: dict[str, float] | None = None
) -> list[bytes]:
    """Provider sheets (PNG bytes) → 12 sticker PNGs, as the pipeline does it (consistency's skin step
    included, toward the first figure's skin). With ``stages``, adds the CPU seconds of ``decode``,
    ``cut`` (key and cut), ``skin`` and ``finish`` (:func:`worker.imaging.finish.finish_sticker`) to it."""
    timed = _Stages(stages)
    images = [timed.run("decode", decode_output, data) for data in sheets]
    cuts = [timed.run("cut", cut_sheet, image, figures_per_sheet) for image in images]
    figures = [figure.rgba for cut in cuts for figure in cut.figures]
    reference = timed.run("skin", _skin_of, figures[0])
    pngs = []
    for figure, pose in zip(figures, POSES, strict=False):
        if reference is not None:
            figure, _ = timed.run(
                "skin", normalise_skin, figure, reference, threshold_de=6.0, strength=0.85, max_de=4.0
            )
        sticker, _outlined, _qa = timed.run("finish", finish_sticker, figure, pose.emoji)
        pngs.append(sticker.png)
    return pngs


def stage_breakdown(sheets: Sequence[bytes], figures_per_sheet: int) -> dict[str, float]:
    """CPU seconds per stage of one :func:`post_process` run, its ``finish`` split into ``outline`` (the
    fringe check, scaling and die-cut outline), ``encode`` (:func:`worker.imaging.export.export_sticker`)
    and ``qa`` (the rest) by timing the outline and the export again on the same figures."""
    stages: dict[str, float] = {}
    post_process(sheets, figures_per_sheet, stages)
    figures = [f.rgba for data in sheets for f in cut_sheet(decode_output(data), figures_per_sheet).figures]
    again = _Stages({})
    for figure in figures:
        again.run("outline", green_fringe, figure)
        outlined = again.run("outline", finish_figure, figure)
        again.run("encode", export_sticker, outlined)
    split = again.seconds or {}
    finish = stages.pop("finish", 0.0)
    stages["outline"] = split.get("outline", 0.0)
    stages["encode"] = split.get("encode", 0.0)
    stages["qa"] = max(0.0, finish - stages["outline"] - stages["encode"])
    return stages


def floor(sheets: Sequence[bytes], stickers: Sequence[npt.NDArray[np.uint8]]) -> None:
    """The unavoidable part: decode the sheets, encode the 12 stickers."""
    for data in sheets:
        with Image.open(io.BytesIO(data)) as image:
            np.asarray(image.convert("RGB"))
    for rgba in stickers:
        _png(rgba)


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times)


def run(photo: bytes, *, outfit_id: str = "chef", repeat: int = 3, sheet_px: int = 1024) -> dict[str, float]:
    """Measure with sheets of ``sheet_px``; returns ``post_s``, ``floor_s`` (CPU seconds per pack),
    ``ratio`` and the :func:`stage_breakdown` of one more run as ``stage_<name>`` seconds."""
    cv2.setNumThreads(1)
    grid = sheet_layout("3x4")
    drawn = render_sheets(decode_rgb(photo), load_catalog()[outfit_id], "3x4")
    sized = [
        sheet
        if sheet.shape[1] == sheet_px
        else np.asarray(cv2.resize(sheet, (sheet_px, sheet_px), interpolation=cv2.INTER_CUBIC), np.uint8)
        for sheet in drawn
    ]
    sheets = [_png(sheet, 1) for sheet in sized]
    stickers = [
        np.asarray(Image.open(io.BytesIO(p)).convert("RGBA")) for p in post_process(sheets, grid.per_sheet)
    ]
    post_s = _cpu(lambda: post_process(sheets, grid.per_sheet), repeat)
    floor_s = _cpu(lambda: floor(sheets, stickers), repeat)
    stages = {f"stage_{name}": seconds for name, seconds in stage_breakdown(sheets, grid.per_sheet).items()}
    return {"post_s": post_s, "floor_s": floor_s, "ratio": post_s / floor_s, **stages}


def _note(result: dict[str, float]) -> str:
    """Where the CPU goes (decode and encode are the floor's own parts) and, for a missed target, why and
    what would fix it."""
    stages = {k.removeprefix("stage_"): v for k, v in result.items() if k.startswith("stage_")}
    shares = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in stages.items())
    if result["ratio"] <= TARGET_RATIO:
        return f"CPU per stage: {shares}."
    return (
        f"CPU per stage: {shares}. Missed: the floor is one decode and one encode; every other stage is "
        "per-pixel work over each sheet or figure that is held bit-exact: the outline's exact Euclidean "
        "distance transform (about 1.5 ms a figure; OpenCV's 5×5 mask is 3× faster but moves the "
        "border's anti-aliased rim by up to 50/255 alpha), Lab values equal to scikit-image's to the last "
        "bit (its per-pixel matrix product, about 1.6 ms a figure) and the keyer's full-sheet tests "
        "(computed in cache-sized bands). With 1K sheets the cut also pays for page faults: glibc hands "
        "the sheet-sized temporaries back to the kernel after every sheet (2K sheets raise its "
        "thresholds, and the faults go). Fixes: a fused compiled keyer and outline, the approximate "
        "distance transform and float32 Lab if a slight pixel change is accepted, an allocator that keeps "
        "its pages (M_TRIM_THRESHOLD) for the 1K case."
    )


def measure(options: Options) -> list[Row]:
    """Rows for 1K sheets (the local renderer's size) and 2K sheets (the providers' size); the target is
    at most 1.5× the floor (issue 12)."""
    photo = DEFAULT_PHOTO.read_bytes()
    repeat = 1 if options.quick else 3
    rows = []
    for sheet_px, label in ((1024, "1K sheets (local renderer)"), (2048, "2K sheets (provider size)")):
        result = run(photo, repeat=repeat, sheet_px=sheet_px)
        rows.append(
            Row(
                group="Post-processing",
                name=f"CPU per 12-sticker pack, {label}",
                ours=f"{result['post_s']:.3f} s",
                reference=f"{result['floor_s']:.3f} s (decode 3 sheets + encode 12 PNGs)",
                ratio=result["ratio"],
                target="≤ 1.5× floor",
                met=result["ratio"] <= TARGET_RATIO,
                note=_note(result),
            )
        )
    return rows
