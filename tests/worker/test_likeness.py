"""The likeness judgement of one sticker (issue 20), from descriptors: pure, no scoring process.

The descriptors here are plain vectors placed at known distances; the real descriptors of real packs are
in ``test_likeness_pack.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from cartoon.poses import pose_named
from shared.likeness import LIKENESS_MAX_DISTANCE, LIKENESS_MAX_DISTANCE_EYES_HIDDEN
from worker.likeness import (
    EYES_HIDDEN,
    NO_FACE_FOUND,
    NO_SELFIE_FACE,
    SCORER_UNAVAILABLE,
    eyes_hidden,
    judge,
)
from worker.steps.likeness import merge_outliers

pytestmark = pytest.mark.unit


def at(distance: float) -> np.ndarray:
    """A descriptor ``distance`` away from :func:`origin`."""
    vector = np.zeros(128, np.float32)
    vector[0] = distance
    return vector


def origin() -> np.ndarray:
    return np.zeros(128, np.float32)


def test_the_poses_that_hide_the_eyes_are_the_shades_the_heart_eyes_and_sleep() -> None:
    hidden = {
        name for name in ("cool", "love", "sleeping", "waving", "surprised") if eyes_hidden(pose_named(name))
    }
    assert hidden == {"cool", "love", "sleeping"}


def test_a_near_face_passes_and_a_far_one_is_a_defect() -> None:
    near = judge(at(LIKENESS_MAX_DISTANCE - 0.01), None, origin(), None, pose_named("waving"))
    far = judge(at(LIKENESS_MAX_DISTANCE + 0.01), None, origin(), None, pose_named("waving"))
    assert near.distance == pytest.approx(LIKENESS_MAX_DISTANCE - 0.01, abs=1e-4) and near.defect is None
    assert far.defect == "likeness_far"


def test_a_pose_that_hides_the_eyes_is_measured_but_not_judged() -> None:
    """The calibrated choice (shared/likeness.py: same person and other people overlap on these poses)."""
    assert LIKENESS_MAX_DISTANCE_EYES_HIDDEN is None
    hidden = judge(at(0.9), None, origin(), None, pose_named("love"))
    shown = judge(at(0.9), None, origin(), None, pose_named("thumbs_up"))
    assert hidden.distance == pytest.approx(0.9) and hidden.reason == EYES_HIDDEN
    assert hidden.judged is None and hidden.defect is None
    assert shown.judged == pytest.approx(0.9) and shown.defect == "likeness_far"


def test_no_face_is_a_defect_only_where_the_eyes_show() -> None:
    shown = judge(None, NO_FACE_FOUND, origin(), None, pose_named("waving"))
    hidden = judge(None, NO_FACE_FOUND, origin(), None, pose_named("cool"))
    assert (shown.distance, shown.reason, shown.defect) == (None, NO_FACE_FOUND, NO_FACE_FOUND)
    assert (hidden.distance, hidden.reason, hidden.defect) == (None, EYES_HIDDEN, None)


def test_nothing_to_compare_with_or_no_scorer_is_a_reason_not_a_defect() -> None:
    no_selfie = judge(at(0.1), None, None, None, pose_named("waving"))
    unavailable = judge(None, SCORER_UNAVAILABLE, origin(), None, pose_named("waving"))
    assert (no_selfie.reason, no_selfie.defect) == (NO_SELFIE_FACE, None)
    assert (unavailable.reason, unavailable.defect) == (SCORER_UNAVAILABLE, None)


def test_the_anchor_distance_is_kept_beside_the_selfie_distance() -> None:
    found = judge(at(0.3), None, origin(), at(0.1), pose_named("ok"))
    assert found.distance == pytest.approx(0.3) and found.anchor_distance == pytest.approx(0.2)


def test_a_worse_judgement_is_further_and_no_face_is_worst() -> None:
    pose = pose_named("ok")
    close, far = judge(at(0.3), None, origin(), None, pose), judge(at(0.7), None, origin(), None, pose)
    none = judge(None, NO_FACE_FOUND, origin(), None, pose)
    assert far.worse_than(close) and not close.worse_than(far) and none.worse_than(far)


def test_vision_and_likeness_outliers_merge_by_position() -> None:
    merged = merge_outliers(
        {0: ["hair_length"], 3: ["skin_tone"]}, {3: ["likeness_far"], 5: ["no_face_found"]}
    )
    assert merged == {0: ["hair_length"], 3: ["skin_tone", "likeness_far"], 5: ["no_face_found"]}
