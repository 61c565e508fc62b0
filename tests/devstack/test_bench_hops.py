"""``make bench``'s queue-hop rows: a quick run through real Redis, ours and arq's on the same server."""

from __future__ import annotations

import pytest
import redis

from devstack.bench.hops import percentile, rows_of, run

pytestmark = pytest.mark.integration


def test_a_quick_run_measures_every_hop_and_leaves_no_keys(redis_url: str) -> None:
    result = run(redis_url, hops=20, default_hops=3)
    assert [len(result[k]) for k in ("ours", "arq_fast", "arq_default")] == [20, 20, 3]
    assert all(latency > 0 for values in result.values() for latency in values)
    rows = rows_of(result)
    assert [row.group for row in rows] == ["Queue hop"] * 4
    assert [row.met is None for row in rows] == [False, True, False, True]  # p50 rows carry the target
    client = redis.Redis.from_url(redis_url)
    assert list(client.scan_iter(match="*bench:hops*")) == []


def test_percentiles_are_read_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([3.0], 99) == 3.0
