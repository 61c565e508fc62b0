"""Skin normalisation in CIELAB (spec/002 "Skin normalisation", "Anchor"): a figure further than the
threshold (ΔE2000) from the reference is shifted by the strength, never by more than ``SKIN_NORM_MAX_DE``;
within the threshold nothing moves; clothing never moves."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from shared.imaging.lab import colour_lab, delta_e, mean_lab, skin_mask
from worker.imaging.skin import normalise_skin
from worker.steps.anchor import shift_anchor_skin

pytestmark = pytest.mark.unit

SHIRT = (40, 70, 200)


def figure(skin: tuple[int, int, int]) -> np.ndarray:
    rgba = np.zeros((300, 200, 4), np.uint8)
    cv2.rectangle(rgba, (40, 150), (160, 290), (*SHIRT, 255), -1)
    cv2.ellipse(rgba, (100, 80), (55, 70), 0, 0, 360, (*skin, 255), -1)
    return rgba


def skin_of(rgba: np.ndarray, near: np.ndarray) -> np.ndarray:
    lab = mean_lab(rgba, skin_mask(rgba, near))
    assert lab is not None
    return lab


REFERENCE = colour_lab((224, 172, 140))


def test_a_far_skin_moves_toward_the_reference_by_at_most_the_cap() -> None:
    far = figure((196, 132, 100))
    before = delta_e(skin_of(far, REFERENCE), REFERENCE)
    assert before > 10
    moved, report = normalise_skin(far, REFERENCE, threshold_de=6, strength=0.85, max_de=4)
    assert report is not None and report.applied_de == pytest.approx(4, abs=0.05)
    after = skin_of(moved, REFERENCE)
    assert delta_e(after, REFERENCE) == pytest.approx(before - 4, abs=1.0)
    assert delta_e(skin_of(far, REFERENCE), after) <= 4.5  # the pixels moved by the capped shift


def test_without_a_binding_cap_the_strength_decides() -> None:
    far = figure((196, 132, 100))
    before = delta_e(skin_of(far, REFERENCE), REFERENCE)
    moved, _ = normalise_skin(far, REFERENCE, threshold_de=6, strength=0.85, max_de=100)
    assert delta_e(skin_of(moved, REFERENCE), REFERENCE) == pytest.approx(0.15 * before, abs=1.0)


def test_a_skin_within_the_threshold_is_left_alone() -> None:
    near = figure((220, 168, 138))
    moved, report = normalise_skin(near, REFERENCE, threshold_de=6, strength=0.85, max_de=4)
    assert moved is near and report is not None and report.applied_de == 0


def test_clothing_never_moves() -> None:
    far = figure((196, 132, 100))
    moved, _ = normalise_skin(far, REFERENCE, threshold_de=6, strength=0.85, max_de=4)
    assert (moved[200:280, 60:140, :3] == SHIRT).all()


def test_the_anchor_skin_is_shifted_toward_the_passport_estimate() -> None:
    anchor = figure((196, 132, 100))
    rgb = np.where(anchor[..., 3:4] > 0, anchor[..., :3], np.array([0, 255, 0], np.uint8))
    target = colour_lab((224, 172, 140))
    shifted, applied, before = shift_anchor_skin(np.ascontiguousarray(rgb), target, strength=0.6, max_de=4)
    assert before is not None and before > 10 and applied == pytest.approx(4, abs=0.05)
    assert (shifted[5, 5] == (0, 255, 0)).all()  # the backdrop is not skin
