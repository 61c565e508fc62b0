"""The chaos fault catalogue: every kind has an expected outcome, every body is one the simulators accept,
and the guest plan aims every guest-side kind and hard photo at guests ``reps`` times."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from devstack.chaos import faults as F
from devstack.chaos.run import plan_guests
from simulators.ai.state import FaultSpec as AiFaultSpec
from simulators.telegram.faults import FaultSpec as TgFaultSpec

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", F.GUEST_TG_KINDS)
def test_guest_telegram_faults_are_valid_and_aimed_at_the_guest(kind: str) -> None:
    for occurrence in range(3):
        specs = [TgFaultSpec.model_validate(body) for body in F.guest_tg_faults(kind, 700_001, occurrence)]
        assert specs and all(s.chat_id == 700_001 for s in specs)
        if "-long:" in kind:
            # above the gateway's 30 s bound: the wait goes back to the producer
            assert all(s.hold and (s.retry_after or 0) > 30 for s in specs)


def test_group_and_ai_faults_are_valid() -> None:
    for kind in F.GROUP_TG_KINDS:
        (spec,) = [TgFaultSpec.model_validate(b) for b in F.group_tg_faults(kind, -100)]
        assert spec.chat_id == -100 and spec.hold
    variants = set()
    for kind in F.AI_KINDS:
        for occurrence in range(3):
            variants |= {AiFaultSpec.model_validate(b).kind for b in F.ai_faults(kind, occurrence)}
    assert {"payment_required", "credit", "billing_hard_limit", "safety", "timeout", "no_image"} <= variants


def test_every_kind_has_an_expected_outcome() -> None:
    assert all(k.expected for k in F.KINDS.values())
    assert F.KINDS["ai:credit"].pauses and F.KINDS["ai:content"].causes == {"content"}
    assert not F.KINDS["tg:5xx"].causes  # a Telegram fault explains no failed job


def test_the_plan_aims_every_guest_kind_reps_times() -> None:
    plans = plan_guests(100, 3, random.Random(1))
    tags = Counter(t for p in plans for t in p.tags)
    for kind in (*F.GUEST_TG_KINDS, *F.PHOTO_KINDS):
        assert tags[kind] == 3, kind
    assert len({p.user_id for p in plans}) == 100
    assert all(p.photo.face for p in plans if any(t.startswith("tg:") for t in p.tags))


def test_a_short_plan_keeps_its_burst_but_renders_few() -> None:
    plans = plan_guests(20, 1, random.Random(1), faces=8)
    assert len(plans) == 20 and sum(p.photo.face for p in plans) == 8
    tags = Counter(t for p in plans for t in p.tags)
    assert all(tags[k] >= 1 for k in (*F.GUEST_TG_KINDS, *F.PHOTO_KINDS))
