"""Face detection (dlib's HOG detector and 5-point landmarks, :mod:`shared.imaging.faces`) on the real
fixture photos, after ingest normalisation, as the pipeline sees them."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data
from PIL import Image

from ingest.photo import normalize_photo
from shared.imaging.faces import FaceBox, detect_faces, largest_face, model_path

pytestmark = pytest.mark.unit

# the team kit beside the repo (../shared), as in CI
PHOTOS = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "photos"


def photo(name: str) -> np.ndarray:
    path = PHOTOS / name
    assert path.exists(), (
        f"fixture photo {path} is missing: ../shared/fixtures/photos must sit beside the repo"
    )
    normalized = normalize_photo(path.read_bytes(), max_bytes=20_000_000, max_pixels=40_000_000)
    with Image.open(io.BytesIO(normalized.jpeg)) as image:
        return np.asarray(image.convert("RGB"))


# (fixture, approximate face centre as a fraction of width and height, from looking at the photos)
HUMAN_FACES = [
    ("astronaut-portrait.png", (0.44, 0.23)),
    ("child-face-paint.png", (0.70, 0.35)),
    ("exif-orient-6-face.jpg", (0.50, 0.40)),
    ("face-older-man-white-hair.jpg", (0.55, 0.38)),
    ("face-woman-red-hat.png", (0.55, 0.52)),
]


@pytest.mark.parametrize(("name", "centre"), HUMAN_FACES)
def test_the_face_in_each_portrait_is_found(name: str, centre: tuple[float, float]) -> None:
    rgb = photo(name)
    face = largest_face(detect_faces(rgb))
    assert face is not None
    height, width = rgb.shape[:2]
    cx, cy = face.center
    assert abs(cx / width - centre[0]) < 0.12
    assert abs(cy / height - centre[1]) < 0.12
    assert face.area > 0.02 * width * height
    # the 5 landmarks (eye corners, under the nose) lie inside the box, the eyes above the nose point
    assert len(face.landmarks) == 5
    for px, py in face.landmarks:
        assert face.x <= px <= face.x + face.w and face.y <= py <= face.y + face.h, (px, py, face)
    assert face.eyes is not None
    (lx, ly), (rx, ry) = face.eyes
    assert lx < rx and max(ly, ry) < face.landmarks[4][1]


def test_the_exif_rotated_face_is_found_only_upright() -> None:
    upright = photo("exif-orient-6-face.jpg")
    assert detect_faces(upright)
    assert not detect_faces(np.ascontiguousarray(np.rot90(upright)))  # as stored, before EXIF rotation


@pytest.mark.parametrize("turns", [1, 3])
def test_a_face_turned_by_90_degrees_is_not_found(turns: int) -> None:
    """The detector is frontal and upright only (faces.py: "up to about ±40°"): a portrait lying on its
    side has no face, so ingest depends on EXIF orientation being applied first."""
    upright = photo("face-older-man-white-hair.jpg")
    assert detect_faces(upright)
    assert detect_faces(np.ascontiguousarray(np.rot90(upright, turns))) == []


def test_a_pug_is_not_a_face() -> None:
    assert detect_faces(photo("heic-iphone-pug.heic")) == []


def test_a_face_behind_a_welding_mask_is_not_found() -> None:
    # SOURCES.md: "the face is hidden by the mask" (the old Haar cascades fired on bark and dark noise)
    assert detect_faces(photo("png-16bit-welder-low-light.png")) == []


def test_the_skimage_astronaut_demo_default_has_one_face() -> None:
    faces = detect_faces(skimage.data.astronaut())
    assert len(faces) == 1
    x, y, w, h = faces[0].x, faces[0].y, faces[0].w, faces[0].h
    assert 150 < x < 260 and 40 < y < 130 and 80 < w < 160 and h == pytest.approx(w, rel=0.1)


def test_a_tilted_head_is_still_found() -> None:
    image = skimage.data.astronaut()
    matrix = cv2.getRotationMatrix2D((224, 113), 22, 1.0)
    tilted = cv2.warpAffine(image, matrix, (512, 512), borderMode=cv2.BORDER_REFLECT)
    face = largest_face(detect_faces(tilted))
    assert face is not None
    assert abs(face.center[0] - 224) < 40 and abs(face.center[1] - 113) < 40


@pytest.mark.parametrize("fill", ["black", "grey", "noise"])
def test_images_without_faces_give_none(fill: str) -> None:
    if fill == "noise":
        image = np.random.default_rng(3).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    else:
        image = np.full((480, 640, 3), 0 if fill == "black" else 128, np.uint8)
    assert detect_faces(image) == []


def test_boxes_are_in_the_coordinates_of_the_input() -> None:
    small = skimage.data.astronaut()
    large = cv2.resize(small, (1536, 1536), interpolation=cv2.INTER_CUBIC)
    (a,) = detect_faces(small)
    # the astronaut's face among the large copy's detections (see the test below for the other one)
    b = max(detect_faces(large), key=lambda f: f.score)
    assert b.center[0] == pytest.approx(a.center[0] * 3, abs=24)
    assert b.center[1] == pytest.approx(a.center[1] * 3, abs=24)
    assert b.w == pytest.approx(a.w * 3, rel=0.15)
    for (ax, ay), (bx, by) in zip(a.landmarks, b.landmarks, strict=True):
        assert (bx, by) == (pytest.approx(ax * 3, abs=15), pytest.approx(ay * 3, abs=15))


def test_the_largest_face_of_a_large_astronaut_is_her_face() -> None:
    """From 768 px up, the astronaut's chest patch is a weak detection (SVM margin ≤ 0.05 against 1.5
    for the face) as large as her face: the guest's face is the largest of the sure ones."""
    large = cv2.resize(skimage.data.astronaut(), (1536, 1536), interpolation=cv2.INTER_CUBIC)
    faces = detect_faces(large)
    assert max(faces, key=lambda f: f.area).center[1] > 768  # the weak patch is the largest box
    face = largest_face(faces)
    assert face is not None and face.center[1] < 768, face


def test_wrong_input_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="RGB"):
        detect_faces(np.zeros((10, 10), np.uint8))


def test_a_face_survives_the_blob_meta_round_trip() -> None:
    """What ingest stores with the selfie (:meth:`FaceBox.to_meta`, JSON in Postgres) is what the worker
    reads back (:meth:`FaceBox.from_meta`): box and landmarks to 0.01 px."""
    (face,) = detect_faces(skimage.data.astronaut())
    stored = json.loads(json.dumps(face.to_meta()))
    back = FaceBox.from_meta(stored)
    assert (back.x, back.y, back.w, back.h) == (face.x, face.y, face.w, face.h)
    assert back.score == pytest.approx(face.score, abs=1e-4)
    assert len(back.landmarks) == 5
    for got, want in zip(back.landmarks, face.landmarks, strict=True):
        assert got == pytest.approx(want, abs=0.01)
    assert back.eyes == face.eyes


@pytest.mark.parametrize(
    "meta", [{}, {"box": [1, 2, 3]}, {"box": "abc"}, {"box": [1, 2, 3, 4], "landmarks": [[1]]}]
)
def test_a_stored_face_that_is_not_one_is_refused(meta: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not a stored face"):
        FaceBox.from_meta(meta)


def test_largest_face_picks_by_area() -> None:
    small = FaceBox(0, 0, 10, 10, 5)
    big = FaceBox(50, 50, 40, 40, 3)
    assert largest_face([small, big]) == big
    assert largest_face([]) is None


def test_the_model_files_are_found_without_setuptools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights come with the install (no download at run time), and are found without importing
    ``face_recognition_models``, whose ``__init__`` needs setuptools' ``pkg_resources``."""
    monkeypatch.setitem(sys.modules, "pkg_resources", None)  # an import of it now fails
    monkeypatch.delitem(sys.modules, "face_recognition_models", raising=False)
    for name in ("shape_predictor_5_face_landmarks.dat", "dlib_face_recognition_resnet_model_v1.dat"):
        assert Path(model_path(name)).stat().st_size > 1_000_000
    with pytest.raises(RuntimeError, match="missing"):
        model_path("no-such-model.dat")
