"""Likeness of a sticker to the guest (issue 20): the bounds on the face-descriptor distance
(:func:`shared.imaging.faces.descriptor_distance`, dlib's ResNet descriptor) above which a sticker does not
look like its guest.

Shared by the worker (pack QA: a sticker over the bound is a regeneration candidate, ``worker.likeness``)
and the admin page (which marks it).

**Calibration** (``python -m devstack.bench.likeness``, BENCHMARKS.md "Sticker likeness", run of
2026-12-02 on commit 5817302): the offline ``local`` drawer rendered a pack per variant (5 variants) for each
fixture face (``../shared/fixtures/photos``; 5 faces: the welder's selfie has no detectable face behind
the mask and was left out), with the likeness QA off; each sticker's face was compared with its own
selfie's face and with the 4 other selfies' faces.

- Eyes shown (9 poses of 12): same person min 0.186, median 0.290, p90 0.403, **max 0.466** (n=213);
  other people **min 0.634**, median 0.854 (n=852). Bound = min(other people) − margin 0.06 = 0.574,
  rounded down: **0.57**; the same-person maximum stays 0.10 under it. For comparison dlib's own
  same-person threshold on photos is 0.6 (LFW).
- Eyes hidden (the 😎 shades, 😍 heart eyes, 😴 closed eyes; ``worker.likeness.EYES_HIDDEN_OVERLAYS``):
  no face found on 45 of 75 such stickers; where found, same person 0.456–**0.704** (median 0.557, n=30)
  against other people from **0.659** (n=120): the two overlap, no bound separates them, so these poses
  are **not judged** (reason ``eyes_hidden``; the distance is still logged).

The figures are one drawer's on five faces, not an image model's: ``stk_sticker_likeness`` shows the
production distribution per variant, and ``LIKENESS_QA_ENABLED=false`` scores without acting while it is
gathered.
"""

from __future__ import annotations

__all__ = ["LIKENESS_MARGIN", "LIKENESS_MAX_DISTANCE", "LIKENESS_MAX_DISTANCE_EYES_HIDDEN"]

#: The gap kept below the nearest other person's face on the fixtures (descriptor units): a tenth of
#: dlib's same-person threshold (0.6).
LIKENESS_MARGIN = 0.06
#: A sticker whose face is further than this from the guest's selfie face does not look like the guest
#: (eyes-shown poses; the calibration above: min(other people) 0.634 − 0.06, rounded down).
LIKENESS_MAX_DISTANCE = 0.57
#: The bound for poses that hide the eyes; ``None``: not judged (same person and other people overlap on
#: the fixtures, 0.456–0.704 against ≥ 0.659; see above).
LIKENESS_MAX_DISTANCE_EYES_HIDDEN: float | None = None
