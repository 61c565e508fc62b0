"""``make face-eval``: the face check scored on public photos with a known truth (issue 20).

Every photo of the set (``tests/fixtures/faces/truth.json``: the photos in ``../shared/fixtures/faces``,
whose ``SOURCES.md`` gives each one's source and licence, plus the fixtures of ``../shared/fixtures/photos``)
goes through ingest's normalisation as a kiosk upload would (a photo ingest refuses is reported with its
code), then, in the same process, through each detector: today's Haar cascades
(:mod:`devstack.bench.haar_reference`, reported as unavailable where OpenCV ships no cascades), the
product's :func:`shared.imaging.faces.detect_faces`, and any ``--extra MODULE:FUNCTION`` (a function of an
H×W×3 uint8 RGB array returning a face count or a list of faces).

Reported per photo and in total, per detector:

- **false refusals**: a ``face`` or ``group`` photo where no face is found (or that ingest refuses);
- **false accepts**: a ``no_face`` photo where a face is found;
- **profiles** found / missed (a missed profile is not a false refusal), groups with fewer faces than
  ``min_faces``;
- **CPU time** of one detection on the normalised pixels (``time.process_time``; OpenCV on one thread,
  as ingest's photo-check processes run it; the minimum of ``--repeats`` runs): median, p90, max and
  total (ms), and each detector's total against the reference's (same photos, same run);
- **agreement**: the face count on the normalised pixels (what ingest sees) against the count on the
  stored JPEG decoded again (what the worker saw before issue 20).

Exit status 0 when the product's detector has no false refusal and no false accept (the done criterion
of issue 20), else 1. ``python -m devstack face-eval --help`` for the options.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from devstack.bench import haar_reference
from devstack.processes import REPO

# check_photo's own two steps: the normalised pixels (what ingest detects on) and the JPEG it stores.
from ingest.photo import _jpeg, _normalised, load_decoders
from ingest.settings import IngestSettings
from shared.errors import UploadRejected
from shared.imaging import faces

__all__ = [
    "Detector",
    "Photo",
    "Report",
    "default_detectors",
    "load_set",
    "main",
    "measure",
]

TRUTH = REPO / "tests" / "fixtures" / "faces" / "truth.json"
#: The set's photos: ``../shared/fixtures/faces`` beside the repo, or ``FACE_SET_DIR`` (a copy elsewhere).
SET_DIR = Path(os.environ.get("FACE_SET_DIR") or REPO.parent / "shared" / "fixtures" / "faces")
FIXTURES_DIR = REPO.parent / "shared" / "fixtures" / "photos"
DEFAULT_JSON = REPO / "out" / "face-eval.json"

Label = Literal["face", "group", "profile", "no_face", "corrupt"]
LABELS: tuple[Label, ...] = ("face", "group", "profile", "no_face", "corrupt")
RGB = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class Photo:
    """One photo of the set and its truth (``truth.json``)."""

    file: str
    label: Label
    min_faces: int
    path: Path


@dataclass(frozen=True, slots=True)
class Detector:
    """A face detector under evaluation: ``find`` returns the faces found in H×W×3 uint8 RGB pixels, as a
    count or as a list of faces."""

    name: str
    find: Callable[[RGB], int | Sequence[object]]

    def count(self, rgb: RGB) -> int:
        found = self.find(rgb)
        return found if isinstance(found, int) else len(found)


@dataclass(slots=True)
class Outcome:
    """One detector on one photo."""

    count: int  # faces on the normalised pixels
    count_stored: int  # faces on the stored JPEG decoded again
    cpu_s: float  # CPU s of one detection on the normalised pixels (min of the repeats)
    verdict: str


@dataclass(slots=True)
class PhotoResult:
    photo: Photo
    refused: str | None  # ingest's UploadRejected code, or None when the photo was accepted
    size: tuple[int, int] | None  # normalised width, height (px)
    outcomes: dict[str, Outcome] = field(default_factory=dict)


@dataclass(slots=True)
class Summary:
    """One detector's totals over the set."""

    false_refusals: list[str]
    false_accepts: list[str]
    profiles_found: list[str]
    profiles_missed: list[str]
    groups_short: list[str]
    disagreements: list[str]
    ms: dict[str, float]  # median, p90, max, total

    def to_json(self) -> dict[str, Any]:
        return {
            "false_refusals": self.false_refusals,
            "false_accepts": self.false_accepts,
            "profiles_found": self.profiles_found,
            "profiles_missed": self.profiles_missed,
            "groups_short": self.groups_short,
            "disagreements": self.disagreements,
            "cpu_ms": {k: round(v, 2) for k, v in self.ms.items()},
        }


@dataclass(slots=True)
class Report:
    results: list[PhotoResult]
    detectors: list[str]
    unavailable: dict[str, str]  # detector name -> why it did not run
    repeats: int

    def summary(self, name: str) -> Summary:
        """Totals of detector ``name`` (one of :attr:`detectors`)."""
        s = Summary([], [], [], [], [], [], {})
        times = []
        for result in self.results:
            file, label = result.photo.file, result.photo.label
            if result.refused is not None:
                if label in ("face", "group"):
                    s.false_refusals.append(file)
                continue
            outcome = result.outcomes[name]
            times.append(outcome.cpu_s * 1000.0)
            if outcome.verdict == "false_refusal":
                s.false_refusals.append(file)
            elif outcome.verdict == "false_accept":
                s.false_accepts.append(file)
            elif outcome.verdict == "profile_found":
                s.profiles_found.append(file)
            elif outcome.verdict == "profile_missed":
                s.profiles_missed.append(file)
            elif outcome.verdict == "group_short":
                s.groups_short.append(file)
            if outcome.count != outcome.count_stored:
                s.disagreements.append(f"{file} ({outcome.count} vs {outcome.count_stored})")
        if times:
            p90 = statistics.quantiles(times, n=10)[8] if len(times) > 1 else times[0]
            s.ms = {"median": statistics.median(times), "p90": p90, "max": max(times), "total": sum(times)}
        return s

    def ok(self, name: str) -> bool:
        """No false refusal and no false accept for detector ``name``."""
        summary = self.summary(name)
        return not summary.false_refusals and not summary.false_accepts

    def to_json(self) -> dict[str, Any]:
        return {
            "repeats": self.repeats,
            "detectors": self.detectors,
            "unavailable": self.unavailable,
            "summary": {name: self.summary(name).to_json() for name in self.detectors},
            "photos": [
                {
                    "file": r.photo.file,
                    "label": r.photo.label,
                    "min_faces": r.photo.min_faces,
                    "refused": r.refused,
                    "size": r.size,
                    "detectors": {
                        name: {
                            "faces": o.count,
                            "faces_stored_jpeg": o.count_stored,
                            "cpu_ms": round(o.cpu_s * 1000.0, 2),
                            "verdict": o.verdict,
                        }
                        for name, o in r.outcomes.items()
                    },
                }
                for r in self.results
            ],
        }


def load_set(
    truth: Path = TRUTH,
    set_dir: Path = SET_DIR,
    fixtures_dir: Path = FIXTURES_DIR,
    *,
    fixtures_only: bool = False,
) -> list[Photo]:
    """The photos of ``truth`` (``{"photos": [{"file", "label", "min_faces", "source"}, ...]}``): those
    whose ``source`` names a ``fixture`` are read from ``fixtures_dir``, the others from ``set_dir``
    (skipped with ``fixtures_only``: the team kit's fixtures are on every machine that runs ``make
    test``; the set's public photos are data the kit keeps, not this repository).

    Raises:
        FileNotFoundError: a photo is missing (the message names the folder that must sit beside the repo).
        ValueError: an unknown label.
    """
    photos = []
    missing = []
    for entry in json.loads(truth.read_text())["photos"]:
        if entry["label"] not in LABELS:
            raise ValueError(f"{entry['file']}: unknown label {entry['label']!r} (one of {LABELS})")
        if fixtures_only and "fixture" not in entry["source"]:
            continue
        folder = fixtures_dir if "fixture" in entry["source"] else set_dir
        path = folder / entry["file"]
        if not path.is_file():
            missing.append(str(path))
        photos.append(Photo(entry["file"], entry["label"], int(entry["min_faces"]), path))
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} photo(s) of the face set are missing, e.g. {missing[0]}: "
            f"{set_dir} and {fixtures_dir} must sit beside the repo"
        )
    return photos


def verdict(label: Label, min_faces: int, count: int) -> str:
    """What ``count`` faces mean for a photo of ``label``: ``ok``, ``false_refusal`` (a face or group
    photo, no face), ``false_accept`` (a no-face photo, a face), ``profile_found``/``profile_missed``,
    ``group_short`` (a group with some but fewer than ``min_faces`` faces)."""
    if label in ("face", "group"):
        if count == 0:
            return "false_refusal"
        return "group_short" if count < min_faces else "ok"
    if label == "no_face":
        return "false_accept" if count else "ok"
    if label == "profile":
        return "profile_found" if count else "profile_missed"
    return "ok"


def default_detectors() -> tuple[list[Detector], dict[str, str]]:
    """Haar (the reference; absent, with the reason, where OpenCV ships no cascades) and the product's
    dlib detector."""
    detectors = []
    unavailable = {}
    reason = haar_reference.unavailable()
    if reason is None:
        detectors.append(Detector("haar", haar_reference.detect_faces))
    else:
        unavailable["haar"] = reason
    faces.load_detector()
    detectors.append(Detector("dlib", faces.detect_faces))
    return detectors, unavailable


def _extra(spec: str) -> Detector:
    """``[NAME=]MODULE:FUNCTION`` → a :class:`Detector` (name: NAME, else MODULE's last part)."""
    name, _, target = spec.rpartition("=")
    module_name, _, function_name = target.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    return Detector(name or module_name.rsplit(".", 1)[-1], function)


def _decode_stored(jpeg: bytes) -> RGB:
    with Image.open(io.BytesIO(jpeg)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def _cpu_s(detector: Detector, rgb: RGB, repeats: int) -> tuple[int, float]:
    best = float("inf")
    count = 0
    for _ in range(max(1, repeats)):
        started = time.process_time()
        count = detector.count(rgb)
        best = min(best, time.process_time() - started)
    return count, best


def measure(
    photos: Sequence[Photo],
    detectors: Sequence[Detector],
    *,
    repeats: int = 3,
    unavailable: dict[str, str] | None = None,
    progress: Callable[[PhotoResult], None] | None = None,
) -> Report:
    """Score ``detectors`` on ``photos``: ingest's normalisation, then each detector on the normalised
    pixels (timed, ``repeats`` runs, the minimum kept) and once on the stored JPEG decoded again.

    Raises:
        Whatever a detector raises (a broken detector stops the run rather than being scored as "no face").
    """
    load_decoders()
    cv2.setNumThreads(1)  # as ingest's photo-check processes run (ingest.photo_pool): one core per check
    limits = IngestSettings.model_construct()  # the defaults: no environment needed
    results = []
    for photo in photos:
        data = photo.path.read_bytes()
        try:
            image, _format = _normalised(
                data, max_bytes=limits.max_upload_bytes, max_pixels=limits.max_upload_pixels
            )
        except UploadRejected as exc:
            result = PhotoResult(photo, exc.code, None)
        else:
            rgb = np.asarray(image, dtype=np.uint8)
            stored = _decode_stored(_jpeg(image))
            result = PhotoResult(photo, None, (image.width, image.height))
            for detector in detectors:
                count, cpu_s = _cpu_s(detector, rgb, repeats)
                count_stored = detector.count(stored)
                result.outcomes[detector.name] = Outcome(
                    count, count_stored, cpu_s, verdict(photo.label, photo.min_faces, count)
                )
        results.append(result)
        if progress is not None:
            progress(result)
    return Report(results, [d.name for d in detectors], dict(unavailable or {}), repeats)


def _line(result: PhotoResult, names: Sequence[str]) -> str:
    head = f"{result.photo.file[:38]:38} {result.photo.label:8} {result.photo.min_faces:>2}"
    if result.refused is not None:
        return f"{head}  refused by ingest: {result.refused}"
    cells = []
    for name in names:
        o = result.outcomes[name]
        mark = "" if o.verdict == "ok" else f" {o.verdict.upper()}"
        stored = "" if o.count == o.count_stored else f" (jpeg {o.count_stored})"
        cells.append(f"{name} {o.count:>2}{stored} {o.cpu_s * 1000:7.1f} ms{mark}")
    return f"{head}  " + " | ".join(cells)


def table(report: Report) -> str:
    """The per-detector totals as a readable table (one column per detector)."""
    names = report.detectors
    summaries = {name: report.summary(name) for name in names}
    scored = {label: sum(1 for r in report.results if r.photo.label == label) for label in LABELS}
    rows: list[tuple[str, Callable[[Summary], str]]] = [
        (
            f"false refusals (of {scored['face'] + scored['group']} face/group)",
            lambda s: str(len(s.false_refusals)),
        ),
        (f"false accepts (of {scored['no_face']} no-face)", lambda s: str(len(s.false_accepts))),
        (
            f"profiles found (of {scored['profile']})",
            lambda s: f"{len(s.profiles_found)}",
        ),
        ("groups short of min_faces", lambda s: str(len(s.groups_short))),
        ("jpeg round trip changes the count", lambda s: str(len(s.disagreements))),
        ("CPU ms median", lambda s: f"{s.ms.get('median', 0):.1f}"),
        ("CPU ms p90", lambda s: f"{s.ms.get('p90', 0):.1f}"),
        ("CPU ms max", lambda s: f"{s.ms.get('max', 0):.1f}"),
        ("CPU ms total", lambda s: f"{s.ms.get('total', 0):.0f}"),
    ]
    width = 44
    lines = [f"{'':{width}}" + "".join(f"{name:>12}" for name in names)]
    lines += [
        f"{title:{width}}" + "".join(f"{cell(summaries[n]):>12}" for n in names) for title, cell in rows
    ]
    if "haar" in summaries and summaries["haar"].ms.get("total"):
        old = summaries["haar"].ms["total"]
        ratios = "".join(
            f"{old / summaries[n].ms['total']:>11.1f}x" for n in names if summaries[n].ms.get("total")
        )
        lines.append(f"{'speed vs haar (total CPU, same photos)':{width}}{ratios}")
    for name, reason in report.unavailable.items():
        lines.append(f"{name}: not run ({reason})")
    for name in names:
        s = summaries[name]
        for title, files in (
            ("false refusals", s.false_refusals),
            ("false accepts", s.false_accepts),
            ("profiles missed", s.profiles_missed),
            ("groups short", s.groups_short),
            ("jpeg round trip disagreements", s.disagreements),
        ):
            if files:
                lines.append(f"{name} {title}: {', '.join(files)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack face-eval", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``face-eval`` (shared with ``python -m devstack face-eval``)."""
    parser.add_argument("--truth", type=Path, default=TRUTH, help="truth table (JSON)")
    parser.add_argument("--photos", type=Path, default=SET_DIR, help="folder of the set's photos")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES_DIR, help="folder of the fixture photos")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per photo and detector (min kept)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the JSON report")
    parser.add_argument(
        "--extra", action="append", default=[], help="another detector, [NAME=]MODULE:FUNCTION (repeatable)"
    )
    parser.add_argument("--no-haar", action="store_true", help="skip the Haar reference")
    parser.add_argument("--quiet", action="store_true", help="no line per photo")


def run(args: argparse.Namespace) -> int:
    photos = load_set(args.truth, args.photos, args.fixtures)
    detectors, unavailable = default_detectors()
    if args.no_haar:
        detectors = [d for d in detectors if d.name != "haar"]
    detectors += [_extra(spec) for spec in args.extra]
    names = [d.name for d in detectors]

    def show(result: PhotoResult) -> None:
        if not args.quiet:
            print(_line(result, names), flush=True)

    report = measure(photos, detectors, repeats=args.repeats, unavailable=unavailable, progress=show)
    print()
    print(table(report))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report.to_json(), indent=1) + "\n")
    print(f"\nJSON report: {args.json}")
    return 0 if report.ok("dlib") else 1


if __name__ == "__main__":
    sys.exit(main())
