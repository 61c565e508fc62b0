"""The operator CLI (``make render``): a pack from a photo without the services, with the offline
``local`` provider: 12 Telegram stickers, a contact sheet and ``report.json`` with stages, timings and
costs. Every variant renders each face photo of ``../shared/fixtures/photos`` (the whole matrix is the
``slow`` tier; ``make test`` renders each variant once, each on another face)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from cartoon.poses import POSES
from devstack.render import cli
from worker.variants import VARIANTS

pytestmark = pytest.mark.integration

PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
FACES = [
    "astronaut-portrait.png",
    "child-face-paint.png",
    "exif-orient-6-face.jpg",
    "face-older-man-white-hair.jpg",
    "face-woman-red-hat.png",
]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key reaches the CLI from a developer's shell: the local provider renders."""
    for name in ("GEMINI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def check_pack(out: Path, variant: str) -> None:
    names = sorted(p.name for p in out.glob("[0-9][0-9]-*.png"))
    assert names == [f"{k:02d}-{pose.name}.png" for k, pose in enumerate(POSES, start=1)]
    for name in names:
        with Image.open(out / name) as image:
            assert image.mode in ("RGBA", "P") and max(image.size) == 512
        assert (out / name).stat().st_size <= 512 * 1024
    with Image.open(out / "contact.png") as contact:
        assert contact.size == (4 * 384, 3 * 384)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (report["variant"], report["providers"], report["cost_usd"]) == (variant, ["local"], 0.0)
    assert {"passport", "generate", "cut", "finish"} <= set(report["stages"])
    assert report["calls"] and all(call["outcome"] == "ok" for call in report["calls"])
    assert len(report["stickers"]) == 12


@pytest.mark.parametrize(("variant", "face"), list(zip(sorted(VARIANTS), FACES, strict=True)))
def test_each_variant_renders_a_face_photo(tmp_path: Path, variant: str, face: str) -> None:
    assert PHOTOS.is_dir(), f"{PHOTOS} is missing: ../shared must sit beside the repository"
    out = tmp_path / variant
    assert (
        cli(["--photo", str(PHOTOS / face), "--variant", variant, "--outfit", "pirate", "--out", str(out)])
        == 0
    )
    check_pack(out, variant)


@pytest.mark.slow
@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_renders_every_face_photo(tmp_path: Path, variant: str, face: str) -> None:
    out = tmp_path / f"{variant}-{face}"
    assert cli(["--photo", str(PHOTOS / face), "--variant", variant, "--out", str(out)]) == 0
    check_pack(out, variant)


def test_a_photo_without_a_face_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["--photo", str(PHOTOS / "heic-iphone-pug.heic"), "--out", str(tmp_path)]) == 1
    assert "NoFaceError (permanent)" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.png"))
