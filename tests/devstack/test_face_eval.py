"""``make face-eval`` (devstack/bench/faces.py): the face set scored; a scorer that can fail (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devstack.bench import faces as face_eval
from devstack.bench import haar_reference
from devstack.bench.report import write_markdown

FIXTURES = face_eval.FIXTURES_DIR
# Fixture photos of ../shared/fixtures/photos with their truth: enough to score every kind of verdict.
SMALL_SET = [
    {"file": "astronaut-portrait.png", "label": "face", "min_faces": 1},
    {"file": "face-older-man-white-hair.jpg", "label": "group", "min_faces": 2},
    {"file": "child-face-paint.png", "label": "profile", "min_faces": 1},
    {"file": "heic-iphone-pug.heic", "label": "no_face", "min_faces": 0},
    {"file": "png-16bit-welder-low-light.png", "label": "no_face", "min_faces": 0},
    {"file": "truncated-jpeg.jpg", "label": "corrupt", "min_faces": 0},
]


@pytest.fixture
def small_set(tmp_path: Path) -> list[face_eval.Photo]:
    truth = tmp_path / "truth.json"
    entries = [{**e, "source": {"fixture": f"../shared/fixtures/photos/{e['file']}"}} for e in SMALL_SET]
    truth.write_text(json.dumps({"photos": entries}))
    return face_eval.load_set(truth, tmp_path / "no-set-photos", FIXTURES)


def test_on_the_fixtures_the_product_detector_refuses_no_face_and_accepts_no_empty_photo() -> None:
    """The set's entries that are the kit's fixtures (on every machine that runs the suite); the whole set
    is scored by ``make face-eval``, which exits 1 on the same failures or when its photos are missing."""
    photos = face_eval.load_set(fixtures_only=True)
    assert {p.label for p in photos} == {"face", "no_face", "corrupt"}
    detectors, _unavailable = face_eval.default_detectors()
    product = [d for d in detectors if d.name == "dlib"]
    report = face_eval.measure(photos, product, repeats=1)
    summary = report.summary("dlib")
    assert summary.false_refusals == []
    assert summary.false_accepts == []
    assert report.ok("dlib")
    corrupt = [r for r in report.results if r.photo.label == "corrupt"]
    assert corrupt and all(r.refused == "corrupt_image" for r in corrupt)


def test_a_detector_that_always_says_face_is_scored_as_accepting_every_empty_photo(
    small_set: list[face_eval.Photo],
) -> None:
    always = face_eval.Detector("always", lambda rgb: 1)
    report = face_eval.measure(small_set, [always], repeats=1)
    summary = report.summary("always")
    assert summary.false_accepts == ["heic-iphone-pug.heic", "png-16bit-welder-low-light.png"]
    assert summary.false_refusals == []
    assert summary.profiles_found == ["child-face-paint.png"]
    assert summary.groups_short == ["face-older-man-white-hair.jpg"]  # 1 face where 2 are expected
    assert not report.ok("always")


def test_a_detector_that_never_finds_a_face_is_scored_as_refusing_every_face(
    small_set: list[face_eval.Photo],
) -> None:
    never = face_eval.Detector("never", lambda rgb: [])  # a list of faces counts as its length
    report = face_eval.measure(small_set, [never], repeats=1)
    summary = report.summary("never")
    assert summary.false_refusals == ["astronaut-portrait.png", "face-older-man-white-hair.jpg"]
    assert summary.false_accepts == []
    assert summary.profiles_missed == ["child-face-paint.png"]
    assert not report.ok("never")
    refused = {r.photo.file: r.refused for r in report.results if r.refused}
    assert refused == {"truncated-jpeg.jpg": "corrupt_image"}  # reported as ingest refused it, not scored


def test_a_detector_that_sees_the_jpeg_differently_is_reported_as_disagreeing(
    small_set: list[face_eval.Photo],
) -> None:
    calls = {"n": 0}

    def flip(rgb: np.ndarray) -> int:  # the timed calls on the pixels come first, then one on the JPEG
        calls["n"] += 1
        return 1 if calls["n"] % 2 else 0

    report = face_eval.measure(small_set[:1], [face_eval.Detector("flip", flip)], repeats=1)
    assert report.summary("flip").disagreements == ["astronaut-portrait.png (1 vs 0)"]
    table = face_eval.table(report)
    assert "jpeg round trip disagreements: astronaut-portrait.png (1 vs 0)" in table
    assert report.to_json()["photos"][0]["detectors"]["flip"]["faces_stored_jpeg"] == 0


def test_a_missing_photo_names_the_folder_that_must_sit_beside_the_repo(tmp_path: Path) -> None:
    truth = tmp_path / "truth.json"
    truth.write_text(
        json.dumps({"photos": [{"file": "x.jpg", "label": "face", "min_faces": 1, "source": {}}]})
    )
    with pytest.raises(FileNotFoundError, match="must sit beside the repo"):
        face_eval.load_set(truth, tmp_path, tmp_path)


def test_the_haar_reference_is_reported_unavailable_without_cascades(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenCV 5 wheels ship an empty cv2/data/: the same as pointing the reference at an empty folder.
    monkeypatch.setattr(haar_reference, "_cascade_dir", lambda: str(tmp_path))
    monkeypatch.setattr(haar_reference, "_CASCADES", haar_reference._ThreadCascades())
    reason = haar_reference.unavailable()
    assert reason is not None and "frontalface_alt2" in reason
    with pytest.raises(haar_reference.ReferenceUnavailable):
        haar_reference.detect_faces(np.zeros((64, 64, 3), np.uint8))
    detectors, unavailable = face_eval.default_detectors()
    assert [d.name for d in detectors] == ["dlib"] and "haar" in unavailable


@pytest.mark.parametrize(
    ("label", "min_faces", "count", "expected"),
    [
        ("face", 1, 0, "false_refusal"),
        ("face", 1, 2, "ok"),
        ("group", 3, 2, "group_short"),
        ("group", 3, 0, "false_refusal"),
        ("no_face", 0, 1, "false_accept"),
        ("no_face", 0, 0, "ok"),
        ("profile", 1, 0, "profile_missed"),
        ("profile", 1, 1, "profile_found"),
    ],
)
def test_each_count_gets_its_verdict(
    label: face_eval.Label, min_faces: int, count: int, expected: str
) -> None:
    assert face_eval.verdict(label, min_faces, count) == expected


def test_make_bench_rewrites_benchmarks_md_but_keeps_the_face_check_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\nold figures\n\n## Face check\n\nface figures\n")
    write_markdown(path, [], elapsed_s=1.0)
    text = path.read_text()
    assert "old figures" not in text
    assert text.endswith("## Face check\n\nface figures\n")
    without = tmp_path / "other.md"
    write_markdown(without, [], elapsed_s=1.0)
    assert "Face check" not in without.read_text()
