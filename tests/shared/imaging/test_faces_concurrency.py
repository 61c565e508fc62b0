"""Face detection from several threads at once, as ingest's upload threads and the worker's slots run it.

Issue 8: a detector shared by threads (then OpenCV's Haar cascades) corrupted its state and crashed
ingest with SIGSEGV when four upload threads checked no-face photos at once. dlib's detector and shape
predictor also keep per-call scratch state, and :mod:`shared.imaging.faces` gives each thread its own
copies; this test holds it to that: threads detecting at once give exactly the answer of one thread (boxes,
scores and landmarks). The check runs in a child process so that a segfault fails this test instead of
killing pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PIL import Image

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
PHOTOS = REPO.parent / "shared" / "fixtures" / "photos"
THREADS = 4
ROUNDS = 15


def _inputs(folder: Path) -> dict[str, Path]:
    """The hold-out-like uploads: no face, CMYK JPEG, 16-bit PNG, RGBA PNG (files in ``folder``)."""
    files = {
        "no_face": PHOTOS / "heic-iphone-pug.heic",
        "sixteen_bit": PHOTOS / "png-16bit-welder-low-light.png",
        "cmyk": folder / "cmyk.jpg",
        "alpha": folder / "alpha.png",
    }
    with Image.open(PHOTOS / "face-woman-red-hat.png") as image:
        image.convert("CMYK").save(files["cmyk"], format="JPEG", quality=90)
    with Image.open(PHOTOS / "astronaut-portrait.png") as image:
        rgba = image.convert("RGBA")
        rgba.putalpha(Image.linear_gradient("L").resize(rgba.size))
        rgba.save(files["alpha"], format="PNG")
    for path in files.values():
        assert path.exists(), f"fixture {path} is missing: ../shared/fixtures/photos must sit beside the repo"
    with Image.open(files["cmyk"]) as check:
        assert check.mode == "CMYK"
    assert files["sixteen_bit"].read_bytes()[24] == 16  # IHDR bit depth: 16 bits per sample
    with Image.open(files["alpha"]) as check:
        assert check.mode == "RGBA" and check.getextrema()[3][0] < 255
    return files


# Normalises each upload as ingest does, detects once per input on the main thread (the reference), then
# THREADS threads each check every input ROUNDS times, all starting together; prints both as JSON.
_CHILD = textwrap.dedent(
    """
    import io, json, sys, threading
    import numpy as np
    from PIL import Image
    from ingest.photo import normalize_photo
    from shared.imaging.faces import detect_faces

    files = json.loads(sys.argv[1])
    threads, rounds = int(sys.argv[2]), int(sys.argv[3])
    rgb = {}
    for name, path in files.items():
        jpeg = normalize_photo(open(path, "rb").read(), max_bytes=20_000_000, max_pixels=40_000_000).jpeg
        rgb[name] = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"), dtype=np.uint8)

    def answer(name):
        return [[f.x, f.y, f.w, f.h, f.score, f.landmarks] for f in detect_faces(rgb[name])]

    names = sorted(rgb)
    reference = {name: answer(name) for name in names}
    results = {}
    start = threading.Barrier(threads)

    def check(k):
        start.wait()
        mine = []
        for r in range(rounds):
            name = names[(k + r) % len(names)]
            try:
                mine.append([name, answer(name)])
            except Exception as exc:  # an error from a detector whose state another thread corrupted
                mine.append([name, f"{type(exc).__name__}: {exc}"])
        results[k] = mine

    pool = [threading.Thread(target=check, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(json.dumps({"reference": reference, "threads": results}))
    """
)


@pytest.mark.timeout(300)  # 60 detections of mostly face-less photos on a shared 2-core machine
def test_four_threads_checking_hostile_photos_at_once_do_not_crash_and_agree(tmp_path: Path) -> None:
    files = _inputs(tmp_path)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            json.dumps({k: str(v) for k, v in files.items()}),
            str(THREADS),
            str(ROUNDS),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        cwd=tmp_path,
        env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": "/usr/bin:/bin"},  # ours
    )
    assert child.returncode == 0, f"child exited {child.returncode} (-11 is SIGSEGV): {child.stderr[-2000:]}"
    out = json.loads(child.stdout)
    reference = out["reference"]
    assert reference["no_face"] == [] and reference["sixteen_bit"] == []
    assert reference["cmyk"] and reference["alpha"], reference  # the two portraits keep their face
    assert all(len(face[5]) == 5 for face in reference["cmyk"] + reference["alpha"])  # with landmarks
    per_thread = out["threads"]
    assert len(per_thread) == THREADS
    for mine in per_thread.values():
        assert len(mine) == ROUNDS
        for name, boxes in mine:
            assert boxes == reference[name], (name, boxes, reference[name])
