"""Write the kiosk's outfit thumbnails into ``shared/outfits/thumbnails/`` (package data served by ingest).

Run after changing an outfit or the figure drawing: ``python -m devstack.thumbnails``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from cartoon.sheets import render_outfit_thumbnail
from shared.outfits import load_catalog


def write_thumbnails(folder: Path) -> list[Path]:
    """Render every outfit's thumbnail into ``folder``; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for outfit in load_catalog().values():
        path = folder / f"{outfit.id}.png"
        path.write_bytes(render_outfit_thumbnail(outfit))
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_thumbnails(Path(str(resources.files("shared") / "outfits" / "thumbnails"))):
        print(written_path)
