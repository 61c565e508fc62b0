"""Write the kiosk's attract-loop sample stickers into ``services/ingest/ingest/static/kiosk/sample-*.webp``.

The samples are drawn by the offline cartoon engine (``cartoon``) on its faceless mannequin, in the
catalog's outfits and the pack's poses, with the worker's die-cut outline, then downscaled to 192 px WebP
(about 10 KB each). No guest photo is used: the test photos in ``../shared/fixtures`` must not ship as
product assets. Run after changing an outfit or the drawing: ``python -m devstack.kiosk_samples``.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from cartoon.figure import draw_figure
from cartoon.poses import POSES
from shared.outfits import load_catalog
from worker.imaging.outline import add_die_cut_outline

FOLDER = Path(__file__).resolve().parents[1] / "services" / "ingest" / "ingest" / "static" / "kiosk"
SIZE_PX = 192
#: (outfit id, pose name): eight stickers, each outfit at least once.
PICKS = (
    ("pirate", "waving"),
    ("astronaut", "party"),
    ("wizard", "cool"),
    ("chef", "heart"),
    ("cowboy", "thumbs_up"),
    ("superhero", "victory"),
    ("pirate", "laughing"),
    ("astronaut", "love"),
)


def sample_webp(outfit_id: str, pose_name: str) -> bytes:
    """One sample sticker as WebP bytes, ``SIZE_PX`` on its long side. Raises KeyError for an unknown
    outfit, StopIteration for an unknown pose."""
    outfit = load_catalog()[outfit_id]
    pose = next(p for p in POSES if p.name == pose_name)
    image = Image.fromarray(add_die_cut_outline(draw_figure(None, outfit, pose, seed=1)))
    image.thumbnail((SIZE_PX, SIZE_PX), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "WEBP", quality=82, method=6)
    return out.getvalue()


def write_samples(folder: Path = FOLDER) -> list[Path]:
    """Write ``sample-1.webp`` … ``sample-8.webp`` into ``folder``; returns the files written."""
    written = []
    for number, (outfit_id, pose_name) in enumerate(PICKS, start=1):
        path = folder / f"sample-{number}.webp"
        path.write_bytes(sample_webp(outfit_id, pose_name))
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_samples():
        print(written_path, written_path.stat().st_size)
