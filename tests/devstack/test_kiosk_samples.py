"""The kiosk's attract-loop samples: drawn by ``devstack.kiosk_samples``, small, and named by the page."""

from __future__ import annotations

import io
import re
from pathlib import Path

from PIL import Image

from devstack.kiosk_samples import FOLDER, PICKS, SIZE_PX, sample_webp, write_samples

KIOSK_JS = FOLDER / "kiosk.js"


def test_the_shipped_samples_are_small_webp_stickers_and_the_page_names_each_of_them() -> None:
    shipped = sorted(FOLDER.glob("sample-*.webp"))
    assert len(shipped) == len(PICKS)
    for path in shipped:
        assert path.stat().st_size <= 16 * 1024, path
        with Image.open(path) as image:
            assert image.format == "WEBP" and max(image.size) == SIZE_PX and image.mode == "RGBA"
    listed = re.search(r"const SAMPLES = \[([\d, ]+)\]", KIOSK_JS.read_text())
    assert listed is not None
    assert {f"sample-{n.strip()}.webp" for n in listed.group(1).split(",")} == {p.name for p in shipped}


def test_a_sample_is_a_figure_on_transparency(tmp_path: Path) -> None:
    written = write_samples(tmp_path)
    assert [p.name for p in written] == [f"sample-{n}.webp" for n in range(1, len(PICKS) + 1)]
    with Image.open(io.BytesIO(sample_webp(*PICKS[0]))) as image:
        alpha = image.getchannel("A")
    assert alpha.getpixel((0, 0)) == 0 and alpha.getextrema() == (0, 255)
