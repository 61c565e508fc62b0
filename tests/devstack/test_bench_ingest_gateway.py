"""The "Ingest" and "Gateway" benchmarks of ``make bench``: their loads and bounds, and a quick run of each
against real processes (the figures of a quick run prove only that it runs; no time is asserted)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from devstack.bench import gateway, ingest
from devstack.bench.__main__ import BENCHMARKS
from devstack.bench.report import Options


@pytest.mark.unit
def test_both_are_registered() -> None:
    assert {"ingest", "gateway"} <= set(BENCHMARKS)


@pytest.mark.unit
def test_the_mixed_load_is_300_messages_to_30_private_chats_and_2_groups_interleaved() -> None:
    load = gateway.mixed_load(300, 30, 20)
    per_chat = Counter(chat for chat, _ in load)
    assert len(load) == 300
    assert sorted(c for c in per_chat if c < 0) == sorted(gateway.GROUPS)
    assert all(per_chat[g] == 20 for g in gateway.GROUPS)
    assert sorted({per_chat[c] for c in per_chat if c > 0}) == [8, 9] and len(per_chat) == 32
    assert len({chat for chat, _ in load[:32]}) == 32  # interleaved: the first round visits every chat


@pytest.mark.unit
def test_the_limits_bound_is_the_slowest_bucket() -> None:
    assert gateway.limits_bound_s(gateway.mixed_load(300, 30, 20)) == pytest.approx(9.0)  # (300-30)/30
    # 25 messages to one group: 5 beyond its bucket of 20, one per 3 s
    assert gateway.limits_bound_s([(-1, "m")] * 25) == pytest.approx(15.0)
    # 10 to one private chat: 7 beyond its bucket of 3, one per second
    assert gateway.limits_bound_s([(7, "m")] * 10) == pytest.approx(7.0)


@pytest.mark.unit
def test_the_photos_are_jpegs_of_at_least_the_asked_size() -> None:
    photos = ingest.make_photos(4, 1_000_000, megapixels=4.0)
    assert len(photos) == 4 and photos[3] == photos[0]  # three fixture faces in turn
    for data in photos:
        assert len(data) >= 1_000_000
        with Image.open(io.BytesIO(data)) as image:
            assert image.format == "JPEG" and image.width * image.height > 3_500_000


@pytest.mark.e2e
def test_a_quick_ingest_run_accepts_every_upload_and_reports_each_row(tmp_path: Path) -> None:
    rows = ingest.measure(Options(quick=True, workdir=tmp_path))
    names = [row.name for row in rows]
    assert len(rows) == 5, names
    assert rows[0].note == "5 of 5 uploads answered 202", rows[0].note
    assert all(row.ratio is not None and row.ratio > 0 for row in rows)
    assert rows[1].met is not None and rows[4].met is not None


@pytest.mark.e2e
def test_a_quick_gateway_run_delivers_the_load_through_both_senders(tmp_path: Path) -> None:
    rows = gateway.measure(Options(quick=True, workdir=tmp_path))
    assert len(rows) == 3
    for row in rows[:2]:  # every message accepted by the simulator, else the share is 0 and says so
        assert "accepted in time" not in row.note, row.note
        assert row.ratio is not None and row.ratio > 0
    assert rows[0].met is not None and rows[1].met is None


@pytest.mark.unit
def test_each_429_is_put_on_the_bucket_that_was_empty() -> None:
    def call(seq: int, at: float, chat: int, ok: bool) -> dict[str, object]:
        return {
            "seq": seq,
            "at": at,
            "params": {"chat_id": chat},
            "ok": ok,
            "error_code": None if ok else 429,
        }

    # a private chat's 4th message within a second: its bucket of 3 is empty, the overall one is not
    private = [call(i, 100.0 + i * 0.01, 7, ok=i < 3) for i in range(4)]
    assert gateway.empty_buckets(private) == Counter({"private": 1})
    # 31 messages to 31 chats at once: the overall bucket of 30 is empty for the last
    overall = [call(i, 100.0, 1000 + i, ok=i < 30) for i in range(31)]
    assert gateway.empty_buckets(overall) == Counter({"overall": 1})
    # a 429 the buckets cannot explain is not blamed on one
    assert gateway.empty_buckets([call(0, 100.0, 7, ok=False)]) == Counter({"unclear": 1})
