"""The journey benchmarks (``overhead``, ``soak``): the critical-path reconstruction from call intervals, the
soak's flatness verdicts (a growing figure is marked missed), and a quick run of each through the whole
stack, whose figures only prove that it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.bench import overhead, soak
from devstack.bench.overhead import Call, critical_path, union
from devstack.bench.report import Options
from devstack.bench.soak import Phase, Snapshot, SoakResult


def consistency_calls(*, sheet_starts: tuple[float, ...] = (3.0, 3.0, 3.0)) -> list[Call]:
    """passport 0–1, anchor 1–3, verify 3–4 … as the consistency variant calls them, at 3 s per image
    call and 1 s per vision call; the sheets start at ``sheet_starts`` (+1 s, after the verify)."""
    calls = [Call(0.0, 1.0, "vision"), Call(1.0, 3.0, "image"), Call(3.0, 4.0, "vision")]
    sheets = [Call(1.0 + s, 4.0 + s, "image") for s in sheet_starts]
    last = max(s.end for s in sheets)
    return [*calls, *sheets, Call(last, last + 1.0, "vision")]


def test_the_critical_path_is_the_longest_chain_and_a_late_sheet_is_overhead() -> None:
    assert critical_path(consistency_calls()) == pytest.approx(1 + 2 + 1 + 3 + 1)
    late = consistency_calls(sheet_starts=(3.0, 3.0, 3.5))  # one sheet started 0.5 s late
    assert critical_path(late) == pytest.approx(8.0)  # the wait for it is not provider time…
    assert union(late) == pytest.approx(8.5)  # …though a call was in flight all along
    assert critical_path([]) == 0.0


def test_calls_that_overlap_are_never_chained() -> None:
    parallel = [Call(0.0, 3.0), Call(0.5, 3.5), Call(1.0, 4.0)]
    assert critical_path(parallel) == pytest.approx(3.0)
    assert union(parallel) == pytest.approx(4.0)


def shot(total_rows: int, jobs: int, *, other: int = 1_000_000, rss: int = 100_000) -> Snapshot:
    return Snapshot(
        rows={"jobs": jobs, "others": total_rows - jobs},
        jobs=jobs,
        redis_used=other + 50_000,
        redis_streams=50_000,
        rss_kb={"worker": rss},
    )


def verdicts(end: Snapshot) -> dict[str, bool | None]:
    result = SoakResult(shot(100, 10), shot(600, 60), end, Phase(50), Phase(50), 10.0, 100)
    return {row.name: row.met for row in soak.rows(result)}


def test_a_flat_soak_meets_every_target_and_growth_misses_them() -> None:
    assert set(verdicts(shot(1100, 110)).values()) == {True}
    grown = verdicts(shot(1300, 110, other=1_500_000, rss=150_000))
    assert grown == {
        "Postgres rows per job, second half": False,
        "Redis used_memory other than stream entries, end": False,
        "RSS of worker, end": False,
    }


@pytest.mark.e2e
@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", [overhead, soak], ids=["overhead", "soak"])
def test_a_quick_run_goes_through_the_whole_stack(module: object, tmp_path: Path) -> None:
    rows = module.measure(Options(quick=True, workdir=tmp_path))  # type: ignore[attr-defined]
    assert rows and all(row.ours and row.reference and row.target for row in rows)
