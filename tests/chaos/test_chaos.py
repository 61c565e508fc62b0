"""The chaos suite, short: guests and leads while every kind of fault is injected once (the full run is
``make chaos``). Its own Postgres and Redis servers, so restarts touch nothing else."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from skimage import data

from devstack import chaos

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]


def test_nothing_is_lost_or_doubled_under_faults(capsys: pytest.CaptureFixture[str]) -> None:
    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, format="JPEG")
    report = chaos.run(
        journeys=8, leads=8, faults=len(chaos.FAULT_KINDS), photo=buffer.getvalue(), seed=3, interval=(1, 3)
    )
    with capsys.disabled():
        print("\n" + report.table())
    assert sum(report.faults.values()) == len(chaos.FAULT_KINDS)
    assert set(report.faults) == set(chaos.FAULT_KINDS)
    assert report.rejected == 0
    assert report.lost == [] and report.duplicated == []
    assert sum(report.outcomes.values()) == 8
