"""The provider chain's one rule set (spec/002 "Provider chain", DESIGN.md §5) with scripted providers,
an injected sleep and a fixed jitter: 429 waits, per-day quota, fallback and its alert, what pauses the
queue and what charges the attempt, the cost ceiling and the daily budget before every call, the
process-wide image limit and the outer timeout guard."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from PIL import Image

from shared.ai_models import CATALOGUE, TokenUsage
from shared.errors import (
    ContentRefused,
    ErrorClass,
    JobCostExceeded,
    ProviderUnavailable,
    RetryableJobError,
)
from shared.repositories.usage import ApiCall
from worker.cost import CostLedger, MemoryUsageStore
from worker.providers.base import CallUsage, DrawSpec, ImageRequest, ProviderCallError, VisionRequest
from worker.providers.chain import ChainPolicy, ImageResult, ProviderChain

pytestmark = pytest.mark.unit

Outcome = bytes | BaseException | Callable[[], Awaitable[bytes]]


def _png(side: int = 64) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (side, side), (0, 255, 0)).save(out, format="PNG")
    return out.getvalue()


PNG = _png()
REQUEST = ImageRequest(
    kind="sheet",
    prompt="p",
    images=(),
    size="2K",
    aspect="1:1",
    spec=DrawSpec(outfit_id="chef", poses=("waving",)),
)
VISION = VisionRequest(kind="passport", prompt="p", images=(), schema={})


#: What the scripted answers report: a 2K image with one reference image, and a vision answer that reasoned.
IMAGE_USAGE = TokenUsage(input_text_tokens=200, input_image_tokens=1120, output_image_tokens=1680)
VISION_USAGE = TokenUsage(input_text_tokens=1000, output_text_tokens=100, reasoning_tokens=50)
#: Gemini 3.1 Flash Image: $0.50 per 1M input tokens, $60 per 1M image output tokens (shared/ai_models.py).
GEMINI_IMAGE_USD = (200 * 0.50 + 1120 * 0.50 + 1680 * 60.0) / 1e6


def err(error_class: ErrorClass, retry_after_s: float | None = None) -> ProviderCallError:
    return ProviderCallError(error_class, f"scripted {error_class}", status=429, retry_after_s=retry_after_s)


class Scripted:
    """A provider answering from a script (then a small PNG / ``{}``), counting calls."""

    def __init__(self, name: str, *outcomes: Outcome) -> None:
        self.name = name
        self.image_model = "gemini-3.1-flash-image" if name == "gemini" else "gpt-image-2"
        self.vision_model = "gemini-3.5-flash-lite" if name == "gemini" else "gpt-6.1-terra"
        self.outcomes = list(outcomes)
        self.calls = 0

    async def _next(self) -> bytes:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else PNG
        if isinstance(outcome, BaseException):
            raise outcome
        if callable(outcome):
            return await outcome()
        return outcome

    async def generate_image(
        self, request: ImageRequest, *, timeout_s: float
    ) -> tuple[bytes, CallUsage | None]:
        return await self._next(), IMAGE_USAGE

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage | None]:
        await self._next()
        return {"ok": True}, VISION_USAGE

    async def aclose(self) -> None:
        return None


class Recorder:
    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.alerts: list[tuple[str, timedelta]] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def alert(self, key: str, text: str, cooldown: timedelta) -> bool:
        self.alerts.append((key, cooldown))
        return True


def chain(*providers: Scripted, recorder: Recorder, slots: int = 9, **policy: Any) -> ProviderChain:
    return ProviderChain(
        providers,
        ChainPolicy(**policy),
        image_slots=asyncio.Semaphore(slots),
        alert=recorder.alert,
        sleep=recorder.sleep,
        rand=lambda: 0.5,  # +10 % of each wait
    )


def ledger(store: MemoryUsageStore | None = None, **kwargs: Any) -> CostLedger:
    return CostLedger(
        store or MemoryUsageStore(),
        job_id=kwargs.pop("job_id", uuid4()),
        created_at=datetime.now(UTC) - timedelta(minutes=1),
        max_cost_usd=kwargs.pop("max_cost_usd", 1.5),
        **kwargs,
    )


async def test_a_rate_limit_waits_5_15_30_s_with_jitter_on_the_same_provider() -> None:
    recorder = Recorder()
    gemini = Scripted(
        "gemini", err(ErrorClass.RATE_LIMIT), err(ErrorClass.RATE_LIMIT), err(ErrorClass.RATE_LIMIT)
    )
    openai = Scripted("openai")
    result = await chain(gemini, openai, recorder=recorder).image(REQUEST, ledger())
    assert (result.provider, gemini.calls, openai.calls) == ("gemini", 4, 0)
    assert recorder.sleeps == pytest.approx([5.5, 16.5, 33.0])
    assert recorder.alerts == []


async def test_the_providers_retry_hint_is_honoured_up_to_60_s() -> None:
    recorder = Recorder()
    gemini = Scripted("gemini", err(ErrorClass.RATE_LIMIT, 26), err(ErrorClass.RATE_LIMIT, 300))
    await chain(gemini, recorder=recorder).image(REQUEST, ledger())
    assert recorder.sleeps == pytest.approx([26 * 1.1, 60 * 1.1])


async def test_after_three_waits_the_next_provider_serves_and_the_pair_is_alerted() -> None:
    recorder = Recorder()
    gemini = Scripted("gemini", *[err(ErrorClass.RATE_LIMIT)] * 4)
    openai = Scripted("openai")
    result = await chain(gemini, openai, recorder=recorder).image(REQUEST, ledger())
    assert (result.provider, gemini.calls, openai.calls, len(recorder.sleeps)) == ("openai", 4, 1, 3)
    assert recorder.alerts == [("fallback:gemini->openai", timedelta(minutes=10))]


async def test_a_per_day_quota_moves_to_the_next_provider_at_once() -> None:
    recorder = Recorder()
    gemini = Scripted("gemini", err(ErrorClass.QUOTA_DAY))
    result = await chain(gemini, Scripted("openai"), recorder=recorder).image(REQUEST, ledger())
    assert (result.provider, gemini.calls, recorder.sleeps) == ("openai", 1, [])


@pytest.mark.parametrize(
    ("primary", "fallback", "expected"),
    [
        (ErrorClass.CREDIT, ErrorClass.CREDIT, ErrorClass.CREDIT),
        (ErrorClass.CREDIT, ErrorClass.OUTAGE, ErrorClass.CREDIT),
        (ErrorClass.OUTAGE, ErrorClass.AUTH, ErrorClass.AUTH),
        (ErrorClass.OUTAGE, ErrorClass.OUTAGE, ErrorClass.OUTAGE),
        (ErrorClass.QUOTA_DAY, ErrorClass.OUTAGE, ErrorClass.OUTAGE),
        (ErrorClass.CONFIG, ErrorClass.CONFIG, ErrorClass.CONFIG),
        (ErrorClass.CONFIG, ErrorClass.OUTAGE, ErrorClass.CONFIG),
        (ErrorClass.TIMEOUT, ErrorClass.CONFIG, ErrorClass.CONFIG),
        (ErrorClass.CONFIG, ErrorClass.AUTH, ErrorClass.AUTH),
    ],
)
async def test_no_provider_serving_for_the_providers_reasons_pauses_the_queue(
    primary: ErrorClass, fallback: ErrorClass, expected: ErrorClass
) -> None:
    recorder = Recorder()
    providers = (Scripted("gemini", err(primary)), Scripted("openai", err(fallback)))
    with pytest.raises(ProviderUnavailable) as raised:
        await chain(*providers, recorder=recorder).image(REQUEST, ledger())
    assert raised.value.error_class is expected
    assert [p.calls for p in providers] == [1, 1]  # billing and outages are never waited for


def config(cause: str, param: str | None = None) -> ProviderCallError:
    return ProviderCallError(ErrorClass.CONFIG, "404 model_not_found: …", cause=cause, param=param)


@pytest.mark.parametrize(
    ("call", "cause", "expected"),
    [
        ("image", "model", "OPENAI_IMAGE_MODEL=gpt-image-2 does not exist at openai"),
        ("vision", "model", "OPENAI_VISION_MODEL=gpt-6.1-terra does not exist at openai"),
        ("image", "parameter", "rejects a parameter (input_fidelity) the worker sends to OPENAI_IMAGE"),
        ("vision", "verification", "verify the organization of OPENAI_API_KEY"),
    ],
)
async def test_a_config_fault_pauses_with_an_alert_naming_the_setting_to_fix(
    call: str, cause: str, expected: str
) -> None:
    openai = Scripted("openai", config(cause, "input_fidelity"))
    with pytest.raises(ProviderUnavailable) as raised:
        run = chain(openai, recorder=Recorder())
        await (run.image(REQUEST, ledger()) if call == "image" else run.vision(VISION, ledger()))
    assert raised.value.error_class is ErrorClass.CONFIG
    assert raised.value.alert is not None and expected in raised.value.alert
    assert "…" not in raised.value.alert  # our words and the setting, never the provider's text


async def test_a_config_fault_of_the_primary_falls_back_and_alerts_with_the_setting() -> None:
    recorder = Recorder()
    texts: list[str] = []

    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        texts.append(text)
        return await recorder.alert(key, text, cooldown)

    gemini = Scripted("gemini", config("model"))
    run = ProviderChain(
        [gemini, Scripted("openai")], ChainPolicy(), image_slots=asyncio.Semaphore(9), alert=alert
    )
    store = MemoryUsageStore()
    result = await run.image(REQUEST, ledger(store))
    assert result.provider == "openai" and gemini.calls == 1
    assert recorder.alerts == [("fallback:gemini->openai", timedelta(minutes=10))]
    assert "GEMINI_IMAGE_MODEL=gemini-3.1-flash-image does not exist at gemini" in texts[0]
    assert next((c.provider, c.outcome, c.cost_usd) for _at, c in store.calls) == ("gemini", "config", 0.0)


async def test_an_outage_pause_carries_the_providers_retry_after() -> None:
    providers = (Scripted("gemini", err(ErrorClass.OUTAGE, 120)), Scripted("openai", err(ErrorClass.OUTAGE)))
    with pytest.raises(ProviderUnavailable) as raised:
        await chain(*providers, recorder=Recorder()).image(REQUEST, ledger())
    assert raised.value.retry_after_s == 120


async def test_rate_limits_everywhere_after_all_waits_pause_as_an_outage() -> None:
    recorder = Recorder()
    providers = (
        Scripted("gemini", *[err(ErrorClass.RATE_LIMIT)] * 4),
        Scripted("openai", *[err(ErrorClass.RATE_LIMIT)] * 4),
    )
    with pytest.raises(ProviderUnavailable) as raised:
        await chain(*providers, recorder=recorder).image(REQUEST, ledger())
    assert raised.value.error_class is ErrorClass.OUTAGE
    assert len(recorder.sleeps) == 6


@pytest.mark.parametrize(
    ("primary", "fallback", "expected"),
    [
        # the refuser is out of the job; the other provider's failure decides
        (ErrorClass.CONTENT, ErrorClass.TIMEOUT, ErrorClass.TIMEOUT),
        (ErrorClass.OUTAGE, ErrorClass.TIMEOUT, ErrorClass.TIMEOUT),
        (ErrorClass.INVALID, ErrorClass.INVALID, ErrorClass.INVALID),
        (ErrorClass.INTERNAL, ErrorClass.OUTAGE, ErrorClass.INTERNAL),
    ],
)
async def test_a_failure_that_is_the_jobs_is_charged(
    primary: ErrorClass, fallback: ErrorClass, expected: ErrorClass
) -> None:
    providers = (Scripted("gemini", err(primary)), Scripted("openai", err(fallback)))
    with pytest.raises(RetryableJobError) as raised:
        await chain(*providers, recorder=Recorder()).image(REQUEST, ledger())
    assert raised.value.error_class is expected


async def test_every_call_is_recorded_as_it_happens_with_its_outcome_and_cost() -> None:
    store = MemoryUsageStore()
    providers = (Scripted("gemini", err(ErrorClass.RATE_LIMIT)), Scripted("openai"))
    job = ledger(store)
    await chain(*providers, recorder=Recorder()).image(REQUEST, job)
    await chain(*providers, recorder=Recorder()).vision(VISION, job)
    calls = [call for _at, call in store.calls]
    assert [(c.provider, c.kind, c.call_type, c.outcome) for c in calls] == [
        ("gemini", "sheet", "image", "rate_limit"),
        ("gemini", "sheet", "image", "ok"),
        ("gemini", "passport", "vision", "ok"),
    ]
    assert calls[0].cost_usd == 0 and calls[0].usage is None  # a 429 is not billed and reports nothing
    assert calls[1].cost_usd == pytest.approx(GEMINI_IMAGE_USD) and calls[1].usage == IMAGE_USAGE
    # gemini-3.5-flash-lite: $0.30 per 1M input, $2.50 per 1M output, thinking billed as output
    assert calls[2].cost_usd == pytest.approx((1000 * 0.30 + (100 + 50) * 2.50) / 1e6)
    assert calls[2].usage == VISION_USAGE
    assert job.attempt_spend == pytest.approx(calls[1].cost_usd + calls[2].cost_usd)


async def test_each_call_costs_its_reported_usage_times_its_models_sourced_price() -> None:
    """The cost is the answer's usage at its own model's price: the same tokens from the OpenAI image
    model cost what gpt-image-2's rates say (text $5, image input $8, image output $30 per 1M), not a
    per-image list price."""
    store = MemoryUsageStore()
    await chain(Scripted("openai"), recorder=Recorder()).image(REQUEST, ledger(store))
    [(_at, call)] = store.calls
    price = CATALOGUE[("openai", "gpt-image-2", "image")].price
    assert price is not None and price.source.startswith("https://developers.openai.com")
    assert call.cost_usd == pytest.approx((200 * 5.0 + 1120 * 8.0 + 1680 * 30.0) / 1e6)
    assert call.cost_usd == pytest.approx(price.cost(IMAGE_USAGE))


async def test_an_answer_without_usage_is_charged_the_estimate_for_the_size_asked() -> None:
    class Silent(Scripted):
        async def generate_image(
            self, request: ImageRequest, *, timeout_s: float
        ) -> tuple[bytes, CallUsage | None]:
            return await self._next(), None

    store = MemoryUsageStore()
    await chain(Silent("gemini"), recorder=Recorder()).image(REQUEST, ledger(store))
    [(_at, call)] = store.calls
    # the prompt "p" (1 token) and a 2K image (1680 tokens at $60 per 1M), no reference images
    assert call.usage is None and call.cost_usd == pytest.approx((1 * 0.50 + 1680 * 60.0) / 1e6)


async def test_the_job_cost_ceiling_is_checked_before_every_call() -> None:
    store = MemoryUsageStore()
    job_id = uuid4()
    await store.record(
        ApiCall(
            "gemini",
            "gemini-3.1-flash-image",
            "sheet",
            "image",
            "ok",
            cost_usd=1.45,
            latency_s=1,
            job_id=job_id,
        )
    )
    job = ledger(store, job_id=job_id)
    gemini = Scripted("gemini")
    tight = chain(gemini, recorder=Recorder())
    vision = await tight.vision(VISION, job)  # 1.45 spent by an earlier attempt: a vision call still fits
    assert vision == {"ok": True}
    with pytest.raises(JobCostExceeded, match="the next call"):
        await tight.image(REQUEST, job)  # a 2K sheet (about 0.10 USD) would pass 1.50: refused before
    assert gemini.calls == 1


async def test_the_cost_ceiling_never_triggers_the_fallback() -> None:
    store = MemoryUsageStore()
    openai = Scripted("openai")
    with pytest.raises(JobCostExceeded):
        await chain(Scripted("gemini"), openai, recorder=Recorder()).image(
            REQUEST, ledger(store, max_cost_usd=0.0)
        )
    assert openai.calls == 0


async def test_the_daily_budget_pauses_the_queue_before_a_paid_call() -> None:
    store = MemoryUsageStore()
    await store.record(ApiCall("openai", "gpt-image-2", "sheet", "image", "ok", cost_usd=3.0, latency_s=1))
    gemini = Scripted("gemini")
    with pytest.raises(ProviderUnavailable) as raised:
        await chain(gemini, recorder=Recorder()).image(REQUEST, ledger(store, daily_budget_usd=3.0))
    assert (raised.value.error_class, gemini.calls) == (ErrorClass.BUDGET, 0)


async def test_image_requests_in_flight_are_limited_across_callers() -> None:
    in_flight = 0
    peak = 0

    async def slow() -> bytes:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return PNG

    gemini = Scripted("gemini", *[slow] * 6)
    shared = chain(gemini, recorder=Recorder(), slots=2)
    await asyncio.gather(*(shared.image(REQUEST, ledger()) for _ in range(6)))
    assert peak == 2


async def test_a_call_that_hangs_past_its_timeout_and_guard_is_a_timeout() -> None:
    async def hang() -> bytes:
        await asyncio.sleep(5)
        return PNG

    gemini = Scripted("gemini", hang)
    with pytest.raises(RetryableJobError) as raised:
        await chain(gemini, recorder=Recorder(), image_timeout_s=0.05, image_guard_s=0.05).image(
            REQUEST, ledger()
        )
    assert raised.value.error_class is ErrorClass.TIMEOUT


# Content refusals (issue 8): the fallback gets the call once, the refuser is out of the job, and when
# every provider refused, nothing more of the job is sent.


async def test_a_refusal_by_every_provider_stops_the_job_and_nothing_more_is_sent() -> None:
    gemini = Scripted("gemini", err(ErrorClass.CONTENT))
    openai = Scripted("openai", err(ErrorClass.CONTENT))
    shared, job = chain(gemini, openai, recorder=Recorder()), ledger()
    with pytest.raises(ContentRefused) as raised:
        await shared.image(REQUEST, job)
    assert raised.value.error_class is ErrorClass.CONTENT
    assert (gemini.calls, openai.calls) == (1, 1)  # the fallback was asked once
    for later in (shared.image(REQUEST, job), shared.vision(VISION, job)):  # other figures, QA
        with pytest.raises(ContentRefused):
            await later
    assert (gemini.calls, openai.calls) == (1, 1)


async def test_after_one_refusal_the_fallback_serves_the_rest_of_the_job_alone() -> None:
    gemini = Scripted("gemini", err(ErrorClass.CONTENT))
    openai = Scripted("openai")
    shared, job = chain(gemini, openai, recorder=Recorder()), ledger()
    for _ in range(3):
        assert (await shared.image(REQUEST, job)).provider == "openai"
    await shared.vision(VISION, job)
    assert (gemini.calls, openai.calls) == (1, 4)


async def test_a_refusal_is_remembered_by_the_next_attempt_and_the_others_failure_decides() -> None:
    store = MemoryUsageStore()
    job_id = uuid4()
    gemini = Scripted("gemini", err(ErrorClass.CONTENT))
    openai = Scripted("openai", err(ErrorClass.TIMEOUT))
    shared = chain(gemini, openai, recorder=Recorder())
    with pytest.raises(RetryableJobError) as raised:  # openai's own failure: charged, not a refusal
        await shared.image(REQUEST, ledger(store, job_id=job_id))
    assert raised.value.error_class is ErrorClass.TIMEOUT
    result = await shared.image(REQUEST, ledger(store, job_id=job_id))  # the retry
    assert (result.provider, gemini.calls, openai.calls) == ("openai", 1, 2)


# Issue 19: a refusal is never an outage. A provider that could not look at the selfie (down, rate
# limited, out of credit, a bad key or setting) does not outvote one that looked and refused: pausing the
# booth for one guest's photo stops every other guest, whom the refuser serves.
PAUSES = [
    ErrorClass.OUTAGE,
    ErrorClass.RATE_LIMIT,
    ErrorClass.QUOTA_DAY,
    ErrorClass.CREDIT,
    ErrorClass.AUTH,
    ErrorClass.CONFIG,
]


@pytest.mark.parametrize("down", PAUSES)
async def test_a_refusal_while_the_primary_cannot_answer_fails_the_job_as_content(down: ErrorClass) -> None:
    recorder = Recorder()
    gemini = Scripted("gemini", *[err(down)] * 4)  # a 429 is retried 3 times first
    openai = Scripted("openai", err(ErrorClass.CONTENT))
    with pytest.raises(ContentRefused) as raised:
        await chain(gemini, openai, recorder=recorder).image(REQUEST, ledger())
    assert raised.value.error_class is ErrorClass.CONTENT
    assert openai.calls == 1
    # the admins still learn of what is theirs to fix; an outage or a rate limit alerts no one here
    expected = (
        []
        if down in (ErrorClass.OUTAGE, ErrorClass.RATE_LIMIT, ErrorClass.QUOTA_DAY)
        else ["fallback:gemini->refused"]
    )
    assert [key for key, _cooldown in recorder.alerts] == expected


@pytest.mark.parametrize("down", PAUSES)
async def test_a_refusal_in_an_earlier_attempt_wins_over_the_others_outage_in_this_one(
    down: ErrorClass,
) -> None:
    store = MemoryUsageStore()
    job_id = uuid4()
    gemini = Scripted("gemini", err(ErrorClass.CONTENT))
    openai = Scripted("openai", err(ErrorClass.TIMEOUT), *[err(down)] * 4)
    shared = chain(gemini, openai, recorder=Recorder())
    with pytest.raises(RetryableJobError):
        await shared.image(REQUEST, ledger(store, job_id=job_id))
    with pytest.raises(ContentRefused):  # the retry: gemini refused earlier, openai is down now
        await shared.image(REQUEST, ledger(store, job_id=job_id))
    assert gemini.calls == 1


async def test_a_parallel_sheets_refusal_wins_over_this_calls_outage() -> None:
    refused = asyncio.Event()

    async def down_after_the_refusal() -> bytes:
        await refused.wait()
        raise err(ErrorClass.OUTAGE)

    gemini = Scripted("gemini", down_after_the_refusal, err(ErrorClass.OUTAGE))
    openai = Scripted("openai", err(ErrorClass.CONTENT))
    shared, job = chain(gemini, openai, recorder=Recorder()), ledger()
    first = asyncio.ensure_future(shared.image(REQUEST, job))  # in flight at gemini
    await asyncio.sleep(0)
    with pytest.raises(ContentRefused):  # a sibling sheet: gemini is down, openai refused
        await shared.image(REQUEST, job)
    refused.set()
    with pytest.raises(ContentRefused):  # gemini is down now and openai refused: not an outage
        await first
    assert openai.calls == 1


async def test_a_vision_refusal_never_takes_a_provider_out_of_the_job() -> None:
    gemini = Scripted("gemini", err(ErrorClass.CONTENT))
    openai = Scripted("openai", err(ErrorClass.INVALID))
    shared, job = chain(gemini, openai, recorder=Recorder()), ledger()
    with pytest.raises(RetryableJobError):  # the step goes on without this answer
        await shared.vision(VISION, job)
    assert (await shared.image(REQUEST, job)).provider == "gemini"


@pytest.mark.parametrize("answer", [b"<html>502 Bad Gateway</html>", PNG[:40], _png(8)])
async def test_an_image_that_is_not_an_image_is_invalid_billed_and_falls_back(answer: bytes) -> None:
    store = MemoryUsageStore()
    gemini = Scripted("gemini", answer)
    result = await chain(gemini, Scripted("openai"), recorder=Recorder()).image(REQUEST, ledger(store))
    assert result.provider == "openai" and result.image.shape == (64, 64, 3)
    [bad, good] = [call for _at, call in store.calls]
    assert (bad.provider, bad.outcome, good.provider, good.outcome) == ("gemini", "invalid", "openai", "ok")
    assert bad.cost_usd == pytest.approx(GEMINI_IMAGE_USD)  # the provider billed it: its reported usage
    assert bad.usage == IMAGE_USAGE


async def test_a_call_cancelled_in_flight_is_recorded_and_one_not_yet_sent_is_not() -> None:
    store = MemoryUsageStore()
    started = asyncio.Event()

    async def slow() -> bytes:
        started.set()
        await asyncio.sleep(30)
        return PNG

    shared = chain(Scripted("gemini", slow, slow), recorder=Recorder(), slots=1)
    job = ledger(store)
    sent = asyncio.ensure_future(shared.image(REQUEST, job))
    await started.wait()
    waiting = asyncio.ensure_future(shared.image(REQUEST, job))  # queued behind the image slot
    await asyncio.sleep(0)
    for task in (waiting, sent):
        task.cancel()
    await asyncio.gather(sent, waiting, return_exceptions=True)
    assert [(c.provider, c.outcome) for _at, c in store.calls] == [("gemini", "cancelled")]
    # at the estimate (the answer never came): prompt "p" and a 2K image
    assert store.calls[0][1].cost_usd == pytest.approx((1 * 0.50 + 1680 * 60.0) / 1e6)


async def parallel_refusals(fallback: Scripted) -> tuple[Scripted, list[object]]:
    """Three sheets sent at once; the primary refuses each after they are all in flight."""
    arrived = 0
    all_sent = asyncio.Event()

    async def refuse() -> bytes:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            all_sent.set()
        await all_sent.wait()
        raise err(ErrorClass.CONTENT)

    gemini = Scripted("gemini", refuse, refuse, refuse)
    shared, job = chain(gemini, fallback, recorder=Recorder()), ledger()
    results = await asyncio.gather(*(shared.image(REQUEST, job) for _ in range(3)), return_exceptions=True)
    return gemini, list(results)


async def test_parallel_sheets_refused_by_the_primary_send_the_selfie_to_the_fallback_once() -> None:
    openai = Scripted("openai", err(ErrorClass.CONTENT))
    gemini, results = await parallel_refusals(openai)
    assert (gemini.calls, openai.calls) == (3, 1)  # the three were in flight; the fallback asked once
    assert all(isinstance(r, ContentRefused) for r in results)


async def test_once_the_fallback_drew_one_the_other_refused_sheets_go_to_it_at_once() -> None:
    openai = Scripted("openai")
    gemini, results = await parallel_refusals(openai)
    assert (gemini.calls, openai.calls) == (3, 3)
    assert all(isinstance(r, ImageResult) and r.provider == "openai" for r in results)
