"""The admin page's contact sheet of a job: its stickers side by side, numbered in reading order (the
grid the worker's pack QA shows the vision model, spec/002 "Pack QA"). Pure: PNG bytes in, PNG bytes out."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image, ImageDraw

__all__ = ["contact_sheet_png"]


def contact_sheet_png(stickers: Sequence[bytes], *, cols: int = 4, cell_px: int = 192) -> bytes:
    """Lay PNG ``stickers`` (any size, RGBA or not) out ``cols`` to a row in cells of ``cell_px`` px on
    a light grey card (a white die-cut outline stays visible), each fitted into its cell and numbered
    from 1 in its top-left corner.

    Returns:
        PNG bytes of ``cols·cell_px`` × ``rows·cell_px`` px, ``rows = ceil(len / cols)``.

    Raises:
        ValueError: no stickers; PIL.UnidentifiedImageError: one is not an image.
    """
    if not stickers:
        raise ValueError("no stickers")
    rows = -(-len(stickers) // cols)
    sheet = Image.new("RGB", (cols * cell_px, rows * cell_px), (226, 228, 236))
    draw = ImageDraw.Draw(sheet)
    inner = cell_px - 12
    for k, data in enumerate(stickers):
        with Image.open(io.BytesIO(data)) as image:
            sticker = image.convert("RGBA")
        sticker.thumbnail((inner, inner))
        row, col = divmod(k, cols)
        x0 = col * cell_px + (cell_px - sticker.width) // 2
        y0 = row * cell_px + (cell_px - sticker.height) // 2
        sheet.paste(sticker, (x0, y0), sticker)
        draw.text((col * cell_px + 6, row * cell_px + 4), str(k + 1), fill=(70, 70, 90))
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=True)
    return out.getvalue()
