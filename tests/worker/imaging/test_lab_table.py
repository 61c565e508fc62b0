"""The table-driven Lab conversion and the written-out ΔE76 radius give scikit-image's and NumPy's values
to the last bit (skin masks and shifts must not move when the code gets faster)."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import color

from shared.imaging.lab import _within, rgb_to_lab

pytestmark = pytest.mark.unit


def test_rgb_to_lab_is_scikit_images_rgb2lab_exactly() -> None:
    levels = np.arange(0, 256, 3, dtype=np.uint8)
    cube = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    expected = color.rgb2lab(cube.reshape(-1, 1, 3).astype(np.float64) / 255.0).reshape(-1, 3)
    assert np.array_equal(rgb_to_lab(cube), expected)


def test_the_radius_check_is_the_norms() -> None:
    lab = np.random.default_rng(3).normal(50.0, 30.0, (20_000, 3))
    centre = np.array([60.0, 15.0, 20.0])
    assert np.array_equal(_within(lab, centre, 30.0), np.linalg.norm(lab - centre, axis=1) <= 30.0)
