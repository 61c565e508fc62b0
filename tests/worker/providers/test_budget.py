"""The fleet-wide provider budget (issue 12 item 4) on real Redis: two budgets on two clients stand for two
worker replicas. The cap holds for both together (and the same harness sees more without it), a crashed
holder's lease expires while a live one's is renewed, a 429 in one replica holds the other, the per-minute
window, the bounded wait, failing open without Redis, and the chain's use of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from shared.errors import ErrorClass
from shared.metrics import PROVIDER_BUDGET_UNAVAILABLE, PROVIDER_BUDGET_WAITS
from tests.worker.providers.test_chain import REQUEST, Recorder, Scripted, err, ledger
from worker.cost import MemoryUsageStore
from worker.providers.base import ProviderCallError
from worker.providers.budget import BudgetLimits, FleetBudget
from worker.providers.chain import ChainPolicy, ProviderChain

pytestmark = pytest.mark.integration


@pytest.fixture
async def replicas(redis: aioredis.Redis, redis_url: str) -> AsyncIterator[list[aioredis.Redis]]:
    """Two separate clients (two replicas' connection pools) on the same empty Redis database."""
    second = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield [redis, second]
    await second.aclose()


def budget(client: aioredis.Redis, *, in_flight: int = 0, per_minute: int = 0, **kwargs: Any) -> FleetBudget:
    limits = BudgetLimits(in_flight=in_flight, per_minute=per_minute)
    return FleetBudget(client, {"image": limits, "vision": limits}, prefix="t:budget:", **kwargs)


async def max_in_flight_together(budgets: list[FleetBudget], calls_each: int, hold_s: float = 0.05) -> int:
    """Run ``calls_each`` concurrent image calls per budget, each holding its slot ``hold_s``; the most that
    were inside a slot at the same moment, counted by the callers themselves."""
    inside = 0
    most = 0

    async def call(b: FleetBudget) -> None:
        nonlocal inside, most
        async with b.slot("gemini", "image"):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(hold_s)
            inside -= 1

    await asyncio.gather(*(call(b) for b in budgets for _ in range(calls_each)))
    return most


async def test_two_replicas_never_exceed_the_cap_together(replicas: list[aioredis.Redis]) -> None:
    budgets = [budget(client, in_flight=3, poll_s=0.01) for client in replicas]
    assert await max_in_flight_together(budgets, calls_each=8) == 3  # never above, and the cap is used
    assert await budgets[0].in_flight("gemini", "image") == 0  # every slot was given back


async def test_the_cap_check_can_fail_without_the_cap_both_replicas_go_over(
    replicas: list[aioredis.Redis],
) -> None:
    budgets = [budget(client, in_flight=0, poll_s=0.01) for client in replicas]  # 0: no fleet limit
    assert await max_in_flight_together(budgets, calls_each=8) > 3


async def test_a_crashed_holders_lease_expires_and_a_live_holders_is_renewed(
    replicas: list[aioredis.Redis],
) -> None:
    crashed = budget(replicas[0], in_flight=1, lease_s=0.6)
    other = budget(replicas[1], in_flight=1, lease_s=0.6, poll_s=0.05, wait_max_s=1.5)
    # A live holder renews its lease: past 2 lease lives the other replica still gets no slot.
    async with crashed.slot("gemini", "image"):
        with pytest.raises(ProviderCallError) as waited:
            async with other.slot("gemini", "image"):
                pytest.fail("a slot was granted over the cap")
        assert waited.value.error_class is ErrorClass.RATE_LIMIT and "in_flight" in waited.value.message
    # A crashed holder: the lease is taken and never renewed nor released (what SIGKILL leaves behind).
    assert await crashed._wait("gemini", "image") is not None
    assert await other.in_flight("gemini", "image") == 1
    async with other.slot("gemini", "image"):  # granted once the lease expired, within wait_max_s
        assert await other.in_flight("gemini", "image") == 1


async def test_a_429_in_one_replica_holds_the_other(replicas: list[aioredis.Redis]) -> None:
    got_429 = budget(replicas[0], in_flight=5)
    other = budget(replicas[1], in_flight=5, wait_max_s=0.3)
    before = PROVIDER_BUDGET_WAITS.labels(provider="gemini", call="vision", reason="cooldown")._value.get()
    await got_429.cool_down("gemini", 3.0)
    with pytest.raises(ProviderCallError) as waited:
        async with other.slot("gemini", "vision"):  # vision calls of that provider wait too
            pytest.fail("a call went out during the fleet's cool-down")
    assert "cooldown" in waited.value.message
    assert PROVIDER_BUDGET_WAITS.labels(provider="gemini", call="vision", reason="cooldown")._value.get() == (
        before + 1
    )
    async with other.slot("openai", "image"):  # another provider's account is not held
        pass
    await got_429.cool_down("gemini", 0.5)  # a shorter cool-down never shortens a longer one
    ttl = await replicas[0].pttl("t:budget:gemini:cooldown")
    assert ttl > 2000


async def test_the_cooldown_waits_out_its_hint_then_lets_calls_through(
    replicas: list[aioredis.Redis],
) -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        await asyncio.sleep(seconds)

    await budget(replicas[0], in_flight=5).cool_down("gemini", 0.4)
    other = budget(replicas[1], in_flight=5, sleep=sleep, wait_max_s=5)
    async with other.slot("gemini", "image"):
        pass
    assert sleeps and sleeps[0] >= 0.25  # slept for the cool-down's remaining time, not a short poll


async def test_the_per_minute_window_is_fleet_wide(replicas: list[aioredis.Redis]) -> None:
    first, second = (budget(c, per_minute=3, wait_max_s=0.2) for c in replicas)
    for b in (first, second, first):
        async with b.slot("gemini", "image"):
            pass
    with pytest.raises(ProviderCallError) as waited:
        async with second.slot("gemini", "image"):
            pytest.fail("a 4th call in the minute went out")
    assert "per_minute" in waited.value.message


async def test_waiting_for_a_slot_is_cancellable_and_leaves_no_lease(replicas: list[aioredis.Redis]) -> None:
    holder, waiter = (budget(c, in_flight=1, poll_s=0.02) for c in replicas)
    async with holder.slot("gemini", "image"):

        async def wait() -> None:
            async with waiter.slot("gemini", "image"):
                pytest.fail("granted over the cap")

        task = asyncio.create_task(wait())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await holder.in_flight("gemini", "image") == 1
    assert await holder.in_flight("gemini", "image") == 0


async def test_without_redis_the_budget_fails_open_and_counts_it() -> None:
    down = aioredis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    try:
        before = PROVIDER_BUDGET_UNAVAILABLE.labels(provider="gemini")._value.get()
        async with budget(down, in_flight=1).slot("gemini", "image"):
            pass
        assert PROVIDER_BUDGET_UNAVAILABLE.labels(provider="gemini")._value.get() == before + 1
    finally:
        await down.aclose()


async def test_the_chain_spreads_a_429_to_the_other_replica_and_skips_a_provider_without_a_slot(
    replicas: list[aioredis.Redis],
) -> None:
    recorder = Recorder()
    first = ProviderChain(  # no same-provider retries: the 429 moves this call to openai at once
        [Scripted("gemini", err(ErrorClass.RATE_LIMIT, retry_after_s=4.0)), Scripted("openai")],
        ChainPolicy(rate_limit_delays=()),
        image_slots=asyncio.Semaphore(9),
        budget=budget(replicas[0], in_flight=5),
        sleep=recorder.sleep,
    )
    assert (await first.image(REQUEST, ledger())).provider == "openai"
    assert await replicas[1].pttl("t:budget:gemini:cooldown") > 3000  # the fleet holds gemini (Retry-After)
    # The other replica: gemini gives no slot within its wait, so openai serves; the unsent call is no row.
    gemini, openai = Scripted("gemini"), Scripted("openai")
    store = MemoryUsageStore()
    second = ProviderChain(
        [gemini, openai],
        ChainPolicy(),
        image_slots=asyncio.Semaphore(9),
        budget=budget(replicas[1], in_flight=5, wait_max_s=0.2),
        sleep=recorder.sleep,
    )
    assert (await second.image(REQUEST, ledger(store))).provider == "openai"
    assert gemini.calls == 0
    assert [call.provider for _at, call in store.calls] == ["openai"]


async def test_a_new_budget_creates_its_series_at_zero_so_the_dashboard_has_data(
    replicas: list[aioredis.Redis],
) -> None:
    from prometheus_client import REGISTRY

    def waits() -> float | None:
        labels = {"provider": "acme", "call": "vision", "reason": "cooldown"}
        return REGISTRY.get_sample_value("stk_provider_budget_waits_total", labels)

    assert waits() is None  # no budget for this provider yet
    FleetBudget(replicas[0], {}, providers=frozenset({"acme"}), prefix="t:budget:")
    assert waits() == 0.0
    assert REGISTRY.get_sample_value("stk_provider_budget_unavailable_total", {"provider": "acme"}) == 0.0
