"""``make bench``'s fleet rows: the budget-bound ideal, and a quick run of real worker processes against the
AI simulator that stays under the fleet budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.bench.fleet import QUICK, Run, measure
from devstack.bench.report import Options
from devstack.infra import Infra


def test_the_ideal_is_bound_by_the_fleet_budget_or_the_processes_own_limit() -> None:
    sizes = {"packs": 10, "span_s": 60, "image_calls": 40, "image_latency_s": 2.0, "failed": 0}
    run = Run(workers=4, budget=4, max_in_flight=4, **sizes)
    assert run.per_minute == 10.0
    assert run.ideal(per_process=3) == 60 * 4 / (4 * 2.0)  # 4 processes × 3 > budget 4
    one = Run(workers=1, budget=4, max_in_flight=3, **sizes)
    assert one.ideal(per_process=3) == 60 * 3 / (4 * 2.0)  # one process: its own 3


@pytest.mark.e2e
@pytest.mark.timeout(400)
def test_a_quick_fleet_run_renders_every_pack_and_stays_under_the_budget(
    tmp_path: Path, infra: Infra, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", infra.postgres_url)
    rows = measure(Options(quick=True, workdir=tmp_path))
    in_flight = [r for r in rows if r.name.startswith("max image calls in flight (simulator)")]
    packs = [r for r in rows if r.name.startswith("packs per minute")]
    assert len(in_flight) == len(packs) == len(QUICK.workers)
    assert all(r.met for r in in_flight), [(r.name, r.ours, r.note) for r in in_flight]
    assert all(r.note.startswith(f"{QUICK.packs}/{QUICK.packs} packs, 0 failed") for r in packs), packs
