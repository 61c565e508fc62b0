"""Fixtures of the pipeline tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .synthetic_sheets import Sheet, build_sheet


@pytest.fixture
def sheet_factory() -> Callable[..., Sheet]:
    """Build a synthetic provider-like sheet: see :func:`synthetic_sheets.build_sheet`."""
    return build_sheet
