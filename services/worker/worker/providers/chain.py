"""The provider chain: ``PRIMARY_AI_PROVIDER`` then ``FALLBACK_AI_PROVIDER``, one rule set for image and
vision calls (spec/002 "Provider chain"; DESIGN.md §5 error classes).

Per provider: before every call the job's cost ceiling and the daily budget are checked
(:class:`worker.cost.CostLedger`); the call runs under the SDK timeout plus an outer guard; it is
recorded in ``api_usage`` whatever its outcome. A ``rate_limit`` is retried on the same provider after 5,
15 and 30 s (``RATE_LIMIT_DELAYS``), or after the provider's ``retryDelay`` hint capped at 60 s, plus up
to 20 % jitter (log ``RATE_LIMIT``); every other failure, ``quota_day`` and ``credit`` included, moves to
the next provider at once. When a later provider serves, one fallback alert per provider pair per 10
minutes goes to the admins.

When no provider serves and none refused the selfie as content (see below), the failures decide
(DESIGN.md §5): any ``credit`` → the queue pauses
(``ProviderUnavailable(credit)``); else any ``auth`` → pause (``auth``); else any ``config`` (no such
model, a parameter the model rejects, an account not set up for the call) → pause (``config``, its
alert naming the setting to fix: :func:`worker.providers.classify.config_alert`); else when every
failure was the providers' unavailability (``outage``, ``rate_limit``, ``quota_day``) → pause
(``outage``, with the provider's ``retry-after`` when one gave it); else the attempt is charged
(``RetryableJobError`` of class ``content`` (vision calls only, see below), ``timeout``, ``invalid`` or
``internal``, in that order of precedence).
``JobCostExceeded``, ``ProviderUnavailable(budget)`` and permanent errors (no face) stop the chain at once:
they never trigger the fallback.

Content refusals (issue 8). An image call refused as ``content`` (OpenAI ``moderation_blocked`` /
``content_policy_violation``, Gemini's safety ``finishReason`` or ``blockReason``) is handed to the next
provider once, like any other failure: the providers' policies differ (Gemini's image safety filter and
OpenAI's moderation are separate systems with their own thresholds, and false positives on ordinary photos of
people are common on both), and a guest who has left the booth loses more from a false positive than one extra
call costs. But the refusing provider is then out for the rest of the job (the job's ledger remembers it, also
across attempts through ``api_usage``): no other sheet, figure, regeneration or retry sends it that selfie
again. Calls already in flight to it when it refused cannot be recalled; but the calls that then fall back
find out one at a time whether the fallback accepts the selfie (``CostLedger.content_probe``), so three
parallel sheets refused by the primary send it to the fallback once, not three times. When every provider of
the chain has refused, the chain raises :class:`ContentRefused` and sends nothing more for the job, vision
calls included; the worker fails the job (``content``, no retry) and the guest is asked for another photo.
When only some refused, a refusal by a provider that answered wins over the others' failures that would
pause the queue (issue 19): ``outage``, ``rate_limit``, ``quota_day``, ``credit``, ``auth`` and ``config``
say that a provider could not look at the selfie, not that it would accept it, while the refuser did look.
DESIGN.md §5 pauses the queue only when *no provider serves*, but a refuser serves every other guest (the
pause would stop the whole booth, auto-resuming only when the primary comes back, or waiting for
``/resume``, because of one guest's photo), so the job fails ``content`` at once (:class:`ContentRefused`,
no retry) and the guest is asked for another photo instead of being told "temporarily unavailable". A
``credit``, ``auth`` or ``config`` fault so outvoted still alerts the admins (the same alert, key and
cool-down as a fallback's): it is theirs to fix and the other guests' jobs now go to the fallback. The
failures that are the job's own (``timeout``, ``invalid``, ``internal``) are charged as above: the attempt is
retried after 10 s and the provider that did not answer gets the selfie again; the refusers are skipped on
the next try.

A vision call's ``content`` (a Gemini vision prompt blocked) or ``invalid`` (a model's ``refusal`` to
judge, an answer that is not JSON) never latches a provider: it only costs that vision step its answer
(the passport is skipped, the anchor check and QA accept), as every other vision failure does.

Fleet budget (issue 12): with a :class:`worker.providers.budget.FleetBudget`, every call also holds a
fleet-wide slot of its provider account while in flight (after the process's ``AI_MAX_PARALLEL_IMAGES``
semaphore for image calls), and a 429 sets a fleet-wide cool-down for that provider (its ``Retry-After``,
else the wait before the retry), so every replica slows, not only the one that got it. A call that gets no
fleet slot in ``AI_FLEET_WAIT_MAX_SEC`` was never sent: it is not recorded and moves to the next provider
at once, as a ``rate_limit``.

Every call that was sent is a row in ``api_usage``: also an image that came back but is not an image
(``invalid``, at its price: the provider billed it) and a call cancelled in flight (``cancelled``, at its
list price: the provider may still bill it), e.g. a sheet running in parallel with the one whose refusal
stopped the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
import structlog

from shared.ai_models import Role
from shared.errors import ContentRefused, ErrorClass, JobError, ProviderUnavailable, RetryableJobError
from shared.repositories.usage import ApiCall
from worker.cost import Alerter, CostLedger
from worker.providers.base import CallUsage, ImageRequest, Provider, ProviderCallError, VisionRequest
from worker.providers.budget import FleetBudget
from worker.providers.classify import classify_exception, config_alert
from worker.providers.images import decode_output
from worker.providers.prices import call_cost, estimate_image, estimate_vision

__all__ = ["ChainPolicy", "ImageResult", "ProviderChain"]

log = structlog.get_logger(__name__)
T = TypeVar("T")

_UNAVAILABLE = frozenset({ErrorClass.OUTAGE, ErrorClass.RATE_LIMIT, ErrorClass.QUOTA_DAY})
# a provider's state, not the job's: these pause the queue when no provider serves
_PAUSES = _UNAVAILABLE | {ErrorClass.CREDIT, ErrorClass.AUTH, ErrorClass.CONFIG}
_CHARGED_ORDER = (ErrorClass.CONTENT, ErrorClass.TIMEOUT, ErrorClass.INVALID, ErrorClass.INTERNAL)


@dataclass(frozen=True, slots=True)
class ChainPolicy:
    """The chain's numbers (spec/002 "Retries, timeouts and limits", "Provider chain").

    Attributes:
        rate_limit_delays: waits (s) before each retry of a 429 on the same provider (5, 15, 30).
        max_hint_s: the provider's ``retryDelay`` is honoured up to this (60 s).
        jitter: up to this fraction is added to each wait (0.2).
        image_timeout_s, image_guard_s: SDK timeout (180 s) and outer guard (+15 s) of an image call.
        vision_timeout_s, vision_guard_s: the same for a vision call (45 s, +10 s).
        fallback_alert_cooldown_s: one fallback alert per provider pair per this long (600 s).
    """

    rate_limit_delays: tuple[float, ...] = (5.0, 15.0, 30.0)
    max_hint_s: float = 60.0
    jitter: float = 0.2
    image_timeout_s: float = 180.0
    image_guard_s: float = 15.0
    vision_timeout_s: float = 45.0
    vision_guard_s: float = 10.0
    fallback_alert_cooldown_s: float = 600.0


@dataclass(frozen=True, slots=True)
class _Call(Generic[T]):
    """One request as the chain sends it to any provider."""

    call_type: Role  # image | vision
    kind: str  # sheet, anchor, passport, ...
    size: str | None  # 1K | 2K for images
    send: Callable[[Provider], Awaitable[tuple[T, CallUsage | None]]]  # the answer and its usage
    estimate: Callable[[Provider], float]  # USD expected before the call (prices.estimate_*)
    slots: asyncio.Semaphore | None = None  # held while the request is in flight (image calls)


@dataclass(frozen=True, slots=True)
class ImageResult:
    """A generated image: its bytes, the provider that drew it, and the bytes decoded (H×W×3 uint8 RGB, or
    ×4 RGBA with real transparency; :func:`worker.providers.images.decode_output`)."""

    data: bytes
    provider: str
    image: npt.NDArray[np.uint8]


class ProviderChain:
    """Providers in order, with one retry policy.

    Args:
        providers: the chain, primary first (providers without a key were left out at start-up).
        policy: the numbers.
        image_slots: the process-wide limit of image requests in flight (``AI_MAX_PARALLEL_IMAGES``),
            shared by every worker slot.
        budget: the fleet-wide budget shared with the other replicas through Redis; ``None``: none.
        alert: sends an admin alert with a cooldown (fallback alerts); ``None`` only logs.
        sleep: ``asyncio.sleep`` (tests inject a recorder).
        rand: uniform [0, 1) for the jitter.
        clock: monotonic seconds (latency).
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        policy: ChainPolicy,
        *,
        image_slots: asyncio.Semaphore,
        budget: FleetBudget | None = None,
        alert: Alerter | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not providers:
            raise ValueError("the provider chain is empty")
        self.providers = list(providers)
        self.policy = policy
        self.image_slots = image_slots
        self.budget = budget
        self.alert = alert
        self.sleep = sleep
        self.rand = rand
        self.clock = clock

    @property
    def names(self) -> list[str]:
        """Provider names in chain order."""
        return [p.name for p in self.providers]

    async def image(self, request: ImageRequest, ledger: CostLedger) -> ImageResult:
        """Generate one image through the chain.

        Raises:
            ProviderUnavailable: no provider served, for a reason that pauses the queue.
            RetryableJobError: no provider served, and the attempt is charged.
            ContentRefused: every provider has refused this job's images as content, or one refused and
                the others did not answer for a reason that would pause the queue (module doc).
            JobCostExceeded: the job's ceiling was reached before a call.
            NoFaceError: the ``local`` provider found no face.
        """

        async def call(provider: Provider) -> tuple[ImageResult, CallUsage | None]:
            data, usage = await asyncio.wait_for(
                provider.generate_image(request, timeout_s=self.policy.image_timeout_s),
                self.policy.image_timeout_s + self.policy.image_guard_s,
            )
            try:
                image = await asyncio.to_thread(decode_output, data)
            except ProviderCallError as exc:  # bytes that are not an image: invalid, but billed
                raise ProviderCallError(exc.error_class, exc.message, billed=True, usage=usage) from exc
            return ImageResult(data=data, provider=provider.name, image=image), usage

        def estimate(provider: Provider) -> float:
            return estimate_image(provider.name, provider.image_model, request)

        return await self._run(
            _Call("image", request.kind, request.size, call, estimate, self.image_slots), ledger
        )

    async def vision(
        self, request: VisionRequest, ledger: CostLedger, *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """One structured vision answer through the chain (``timeout_s`` overrides
        ``VISION_TIMEOUT_SEC``, e.g. ``ANCHOR_VERIFY_TIMEOUT_SEC``).

        Raises:
            The same as :meth:`image`.
        """
        timeout = timeout_s if timeout_s is not None else self.policy.vision_timeout_s

        async def call(provider: Provider) -> tuple[dict[str, Any], CallUsage | None]:
            return await asyncio.wait_for(
                provider.vision_json(request, timeout_s=timeout), timeout + self.policy.vision_guard_s
            )

        def estimate(provider: Provider) -> float:
            return estimate_vision(provider.name, provider.vision_model, request)

        return await self._run(_Call("vision", request.kind, None, call, estimate), ledger)

    async def _run(self, call: _Call[T], ledger: CostLedger) -> T:
        refused = await ledger.content_refusals()  # live: parallel calls of the job add to it
        failures: list[tuple[str, ProviderCallError]] = []
        for provider in self.providers:
            if provider.name in refused:
                continue  # it refused this job's selfie: never sent it again
            probing = bool(refused) and provider.name not in ledger.content_trusted
            async with ledger.content_probe(provider.name) if probing else contextlib.nullcontext():
                if provider.name in refused:
                    continue  # the call probing it was refused meanwhile
                try:
                    result = await self._with_backoff(provider, call, ledger)
                except ProviderCallError as exc:
                    failures.append((provider.name, exc))
                    log.warning(
                        "PROVIDER_FAILED",
                        provider=provider.name,
                        kind=call.kind,
                        error_class=str(exc.error_class),
                        error=exc.message,
                    )
                    if exc.error_class is ErrorClass.CONTENT and call.call_type == "image":
                        refused.add(provider.name)
                        log.warning(
                            "CONTENT_REFUSED",
                            job_id=str(ledger.job_id),
                            provider=provider.name,
                            kind=call.kind,
                        )
                    continue
                if refused and call.call_type == "image":
                    ledger.content_trusted.add(provider.name)
            if failures:
                await self._fallback_alert(failures[0], provider.name, call.kind)
            return result
        # The refusers are out of this job (``refused`` is live: a parallel call's refusal counts too).
        others = [(name, e) for name, e in failures if name not in refused]
        if all(p.name in refused for p in self.providers):
            summary = "; ".join(f"{name}: {error}" for name, error in failures) or "refused earlier"
            raise ContentRefused(f"{call.kind}: every provider refused this selfie as content ({summary})")
        if refused and all(e.error_class in _PAUSES for _name, e in others):
            # a refusal by a provider that answered wins over the others' unavailability (module doc)
            for failure in others:
                if failure[1].error_class not in _UNAVAILABLE:  # credit, auth, config: the admins' to fix
                    await self._fallback_alert(failure, None, call.kind)
            summary = "; ".join(f"{name}: {error}" for name, error in failures) or "refused earlier"
            raise ContentRefused(
                f"{call.kind}: refused as content by {', '.join(sorted(refused))}; "
                f"the others did not answer ({summary})"
            )
        raise self._give_up(others or failures, call.kind)

    async def _with_backoff(self, provider: Provider, call: _Call[T], ledger: CostLedger) -> T:
        model = provider.image_model if call.call_type == "image" else provider.vision_model
        delays = self.policy.rate_limit_delays

        def charge(usage: CallUsage | None, estimate: float) -> float:
            """The reported usage at its price; the estimate when the answer reported none."""
            return estimate if usage is None else call_cost(provider.name, model, call.call_type, usage)

        async def record(
            started: float | None,
            outcome: str,
            cost_usd: float,
            error: str | None = None,
            usage: CallUsage | None = None,
        ) -> None:
            await ledger.record(
                ApiCall(
                    provider=provider.name,
                    model=model,
                    kind=call.kind,
                    call_type=call.call_type,
                    outcome=outcome,
                    cost_usd=cost_usd,
                    latency_s=0.0 if started is None else self.clock() - started,
                    image_size=call.size,
                    error=error,
                    usage=usage,
                )
            )

        for retry in range(len(delays) + 1):
            estimate = call.estimate(provider)
            await ledger.check_before_call(provider.name, estimate_usd=estimate)
            started: float | None = None  # set once the request is on its way
            try:
                async with call.slots or contextlib.nullcontext(), self._fleet_slot(provider, call):
                    started = self.clock()
                    result, usage = await call.send(provider)
            except JobError:
                raise

            except asyncio.CancelledError:  # sent, then abandoned (a sibling stopped the job, a budget)
                if started is not None:
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await asyncio.shield(record(started, "cancelled", estimate, "cancelled"))
                raise
            except Exception as exc:  # every SDK, transport and timeout error is classified here
                if started is None and isinstance(exc, ProviderCallError):
                    raise  # no fleet slot in AI_FLEET_WAIT_MAX_SEC: nothing was sent, nothing is recorded
                error = classify_exception(exc)
                if error.error_class is ErrorClass.CONFIG:
                    error.alert = config_alert(provider.name, call.call_type, model, error)
            else:
                await record(started, "ok", charge(usage, estimate), usage=usage)
                return result
            billed = charge(error.usage, estimate) if error.billed else 0.0
            await record(started, str(error.error_class), billed, error.message, error.usage)
            if error.error_class is ErrorClass.RATE_LIMIT and self.budget is not None:
                # every replica holds this provider's calls (also when this call gives up on it)
                await self.budget.cool_down(provider.name, self._hold(error, retry))
            if error.error_class is not ErrorClass.RATE_LIMIT or retry >= len(delays):
                raise error
            wait = self._hold(error, retry) * (1.0 + self.policy.jitter * self.rand())
            log.warning(
                "RATE_LIMIT", provider=provider.name, kind=call.kind, retry=retry + 1, wait_s=round(wait, 2)
            )
            await self.sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _hold(self, error: ProviderCallError, retry: int) -> float:
        """The wait (s) before the next call to a provider that answered 429: its hint (capped), else
        ``RATE_LIMIT_DELAYS[retry]`` (the last one once they are used up)."""
        if error.retry_after_s is not None:
            return min(error.retry_after_s, self.policy.max_hint_s)
        delays = self.policy.rate_limit_delays
        return delays[min(retry, len(delays) - 1)] if delays else 0.0

    def _fleet_slot(
        self, provider: Provider, call: _Call[Any]
    ) -> contextlib.AbstractAsyncContextManager[None]:
        if self.budget is None:
            return contextlib.nullcontext()
        return self.budget.slot(provider.name, "image" if call.call_type == "image" else "vision")

    async def _fallback_alert(
        self, failed: tuple[str, ProviderCallError], served: str | None, kind: str
    ) -> None:
        """Alert the admins that ``failed`` did not serve: ``served`` did instead, or (``None``) another
        provider refused the selfie as content, so nobody will (one alert per pair per cool-down)."""
        name, error = failed
        log.warning(
            "PROVIDER_FALLBACK", failed=name, served=served, kind=kind, error_class=str(error.error_class)
        )
        if self.alert is None:
            return
        cause = error.alert or error.message[:120]  # a config fault names the setting to fix
        then = f"{served} served instead" if served else "the job's selfie was refused by another provider"
        with contextlib.suppress(Exception):  # an alert never fails the job
            await self.alert(
                f"fallback:{name}->{served or 'refused'}",
                f"AI provider {name} failed ({error.error_class}: {cause}); {then}.",
                timedelta(seconds=self.policy.fallback_alert_cooldown_s),
            )

    @staticmethod
    def _give_up(failures: list[tuple[str, ProviderCallError]], kind: str) -> JobError:
        classes = [error.error_class for _name, error in failures]
        summary = "; ".join(f"{name}: {error}" for name, error in failures)
        if ErrorClass.CREDIT in classes:
            return ProviderUnavailable(f"{kind}: {summary}", error_class=ErrorClass.CREDIT)
        if ErrorClass.AUTH in classes:
            return ProviderUnavailable(f"{kind}: {summary}", error_class=ErrorClass.AUTH)
        if ErrorClass.CONFIG in classes:
            alerts = {e.alert: None for _n, e in failures if e.error_class is ErrorClass.CONFIG and e.alert}
            return ProviderUnavailable(
                f"{kind}: {summary}", error_class=ErrorClass.CONFIG, alert=" ".join(alerts) or None
            )
        if all(c in _UNAVAILABLE for c in classes):
            hints = [
                e.retry_after_s
                for _n, e in failures
                if e.error_class is ErrorClass.OUTAGE and e.retry_after_s
            ]
            return ProviderUnavailable(
                f"{kind}: {summary}",
                error_class=ErrorClass.OUTAGE,
                retry_after_s=max(hints) if hints else None,
            )
        error_class = next((c for c in _CHARGED_ORDER if c in classes), ErrorClass.INTERNAL)
        return RetryableJobError(f"{kind}: {summary}", error_class=error_class)
