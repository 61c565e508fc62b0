"""The chaos suite, short: one burst of 20 kiosks uploading at once (8 photos with a face, the rest without,
so only 8 jobs render), with every fault kind injected once (the full run is ``make chaos``). Its own
Postgres, Redis and simulators, so restarts touch nothing else. The ledger must show no guest let down,
nothing lost or doubled and no unexpected exit."""

from __future__ import annotations

import pytest

from devstack import chaos
from devstack.chaos import faults
from devstack.chaos.run import SWEEP_GUESTS

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(1200)]


def test_every_guest_is_accounted_for_under_faults(capsys: pytest.CaptureFixture[str]) -> None:
    result = chaos.run(
        journeys=20, leads=8, reps=1, seed=3, interval=(2, 5), settle_s=300, lead_every_s=2, faces=8
    )
    with capsys.disabled():
        print("\n" + result.table())
    ledger = result.ledger
    assert set(faults.KINDS) <= set(ledger.injected), set(faults.KINDS) - set(ledger.injected)
    swept = result.swept  # sweep waves: SWEEP_GUESTS guests and one lead each
    assert len(ledger.verdicts) == 20 + swept * SWEEP_GUESTS and ledger.leads == 8 + swept
    assert ledger.let_down == [] and ledger.lost == [] and ledger.duplicated == []
    assert ledger.unexpected_exits == []
    assert result.unmet == []  # every injected fault was met by the traffic
