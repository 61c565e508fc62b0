"""The appearance passport (spec/002 "Appearance passport"): a vision call describes the guest (skin
tone, hair, facial hair, age band, glasses, face box); ``CARD_ATTEMPTS`` (2) attempts; cached on the job
(blob ``passport``) so a job retry does not pay again; when both attempts fail the job goes on without it
(``APPEARANCE_FAILED``)."""

from __future__ import annotations

import json

from shared.errors import RetryableJobError
from worker.context import ArtefactCache, ProviderCalls
from worker.providers.answers import PASSPORT_SCHEMA, Passport, parse_answer
from worker.providers.base import InputImage, VisionRequest
from worker.providers.prompts import vision_prompt

__all__ = ["appearance_passport"]


async def appearance_passport(
    calls: ProviderCalls, artefacts: ArtefactCache, selfie: InputImage, *, card_attempts: int
) -> Passport | None:
    """The job's passport: cached in ``artefacts`` (``passport``), else asked for (``card_attempts``
    attempts, ``CARD_ATTEMPTS`` 2), else ``None``.

    Raises:
        JobCostExceeded, ProviderUnavailable: from the chain (they stop the job, never the passport
            alone).
    """
    cached = await artefacts.get("passport")
    if cached is not None:
        passport = parse_answer(Passport, json.loads(cached))
        if passport is not None:
            calls.event("PASSPORT_REUSED")
            return passport
    request = VisionRequest(
        kind="passport", prompt=vision_prompt("passport"), images=(selfie,), schema=PASSPORT_SCHEMA
    )
    for attempt in range(1, card_attempts + 1):
        try:
            answer = await calls.vision(request)
        except RetryableJobError as exc:
            calls.event("APPEARANCE_ATTEMPT_FAILED", level="warning", attempt=attempt, error=str(exc)[:200])
            continue
        passport = parse_answer(Passport, answer)
        if passport is None:
            calls.event(
                "APPEARANCE_ATTEMPT_FAILED", level="warning", attempt=attempt, error="unusable answer"
            )
            continue
        await artefacts.put("passport", passport.model_dump_json().encode(), "application/json")
        calls.event("PASSPORT", skin=passport.skin_tone_hex, hair=passport.hair_color_hex)
        return passport
    calls.event("APPEARANCE_FAILED", level="warning", attempts=card_attempts)
    return None
