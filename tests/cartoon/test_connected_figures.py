"""Every figure the ``local`` renderer draws from a fixture face is one shape: the worker's cut finds exactly
one figure per cell (a head floating above its collar, or a free-standing speech bubble the size of a
fifth of a figure, is a second figure and makes the sheet invalid, so the pack falls back to composite)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pillow_heif
import pytest

from cartoon.body import HEAD_CENTRE, HEAD_RADII
from cartoon.face_cartoon import CartoonFace
from cartoon.figure import COLLAR_Y, chin_y
from cartoon.sheets import draw_sheets, prepare_face, sheet_layout
from ingest.photo import normalize_photo
from shared.errors import NoFaceError, PermanentJobError, UploadRejected
from shared.imaging.decode import decode_rgb
from shared.outfits import get_outfit
from worker.imaging.cut import cut_sheet

pytestmark = pytest.mark.unit

# the team kit beside the repo (../shared), as in CI
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
# wizard: the reported case (a brim over a head cut at the chin); superhero: no hat, the smallest figures,
# and the HAHA bubble
OUTFITS = ("wizard", "superhero")
Faces = dict[str, CartoonFace]


def _faces(source: str) -> Faces:
    """The cartoon head of every fixture photo with a detectable face, by file name: from the file as it
    is (``make render``, the AI simulator given the photo) or from the JPEG ingest stores (upright,
    re-encoded: what the worker hands the renderer). The segmentation differs a little between the two."""
    pillow_heif.register_heif_opener()
    found: Faces = {}
    for path in sorted(PHOTOS.iterdir()):
        if path.suffix.lower() in {".md", ".txt"}:
            continue
        try:
            data = path.read_bytes()
            if source == "ingest":
                data = normalize_photo(data, max_bytes=20_000_000, max_pixels=40_000_000).jpeg
            found[path.name] = prepare_face(decode_rgb(data))
        except (NoFaceError, PermanentJobError, UploadRejected):  # the pug, the welder's mask, the cut JPEG
            continue
    return found


@pytest.fixture(scope="module", params=["file", "ingest"])
def faces(request: pytest.FixtureRequest) -> Faces:
    return _faces(str(request.param))


def test_the_fixture_faces_include_the_reported_one(faces: Faces) -> None:
    assert "face-woman-red-hat.png" in faces and len(faces) >= 5, sorted(faces)


@pytest.mark.parametrize("outfit_id", OUTFITS)
def test_every_cell_of_the_3x4_layout_cuts_to_exactly_one_figure(faces: Faces, outfit_id: str) -> None:
    grid = sheet_layout("3x4")
    failures = []
    for name, face in faces.items():
        for s, sheet in enumerate(draw_sheets(face, get_outfit(outfit_id), grid)):
            cut = cut_sheet(sheet, grid.per_sheet)  # as the worker cuts a provider's sheet
            if not cut.clean or len(cut.figures) != grid.per_sheet:
                failures.append(f"{name} sheet {s}: {cut.describe()}")
    assert failures == []


def test_the_chin_is_where_the_head_mask_ends(faces: Faces) -> None:
    """A head mask filling its crop ends at the head ellipse's bottom, below the collar (no neck drawn);
    the red-hat guest's ends above it (the neck is drawn)."""
    clipped = faces["face-woman-red-hat.png"]
    full = CartoonFace(
        rgb=clipped.rgb,
        head=np.ones_like(clipped.head),
        eyes=clipped.eyes,
        eye_width=clipped.eye_width,
        mouth=clipped.mouth,
        skin=clipped.skin,
    )
    assert chin_y(full) == HEAD_CENTRE[1] + HEAD_RADII[1]
    chin = chin_y(clipped)
    assert chin is not None and chin < COLLAR_Y
