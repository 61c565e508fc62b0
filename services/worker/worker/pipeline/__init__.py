"""The generation pipeline's image work: the offline ``local`` provider and the shared post-processing
(chroma key, cut, die-cut outline, Telegram export) every provider's sheets go through.

Pure code: bytes and arrays in, bytes and arrays out; the job handler fetches, stores and logs.
"""

from worker.pipeline.local_render import render_outfit_thumbnail, render_sheets
from worker.pipeline.pack import (
    Pack,
    Sticker,
    cut_sheets,
    render_pack,
    stickers_from_cuts,
    stickers_from_sheets,
)

__all__ = [
    "Pack",
    "Sticker",
    "cut_sheets",
    "render_outfit_thumbnail",
    "render_pack",
    "render_sheets",
    "stickers_from_cuts",
    "stickers_from_sheets",
]
