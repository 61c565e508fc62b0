"""What the simulator remembers and what tests script: queued faults, latency, imperfect sheets, scripted
QA and anchor-check answers, and the log of calls.

Fault kinds (each answered in the provider's real wire shape, :mod:`simulators.ai.wire`):

- ``rate_limit`` (429; ``retry_after_s`` becomes Gemini's ``RetryInfo.retryDelay`` / OpenAI's
  ``retry-after`` header and "Please try again in …s"), ``quota_day`` (429 on a per-day quota),
- ``credit`` (Gemini: 429 "prepayment credits are depleted"; OpenAI: 429 ``insufficient_quota``),
  ``payment_required`` (HTTP 402), ``billing_hard_limit`` (OpenAI's 400 ``billing_hard_limit_reached``),
- ``auth`` (Gemini: 400 ``API_KEY_INVALID``; OpenAI: 401 ``invalid_api_key``), ``forbidden`` (Gemini:
  403 ``PERMISSION_DENIED``; OpenAI: 401 ``missing_scope``, a restricted key without the scope),
- configuration faults, the worker's ``config`` (:mod:`simulators.ai.wire`): ``model_not_found`` (Gemini
  404 ``NOT_FOUND``; OpenAI 404 ``model_not_found``; also what a model the simulator does not serve
  gets), ``unsupported_parameter`` (Gemini 400 ``INVALID_ARGUMENT`` "Unknown name … Cannot find field."
  with a ``google.rpc.BadRequest``; OpenAI 400 ``unsupported_parameter``), ``account_not_set_up``
  (Gemini 400 ``FAILED_PRECONDITION`` "free tier is not available … enable billing"; OpenAI 403 "Your
  organization must be verified"), ``location_unsupported`` (Gemini 400 ``FAILED_PRECONDITION`` "User
  location is not supported"; OpenAI 403 ``unsupported_country_region_territory``),
- ``outage`` (500), ``overloaded`` (503 "overloaded"), ``drop`` (the connection is closed unanswered),
- ``timeout`` (the answer comes after ``delay_s``: the client gives up first),
- content refusals (:data:`CONTENT_KINDS`): Gemini answers each with a 200 holding no image, OpenAI's
  image endpoints with a 400 (its vision endpoint with a ``refusal`` part):

  - ``safety``: Gemini ``finishReason`` ``IMAGE_SAFETY`` (image) / ``promptFeedback.blockReason``
    ``SAFETY`` (vision); OpenAI 400 ``moderation_blocked`` (type ``image_generation_user_error``);
  - ``finish_safety``, ``prohibited_content``, ``image_prohibited_content``, ``blocklist``, ``spii``:
    Gemini ``finishReason`` ``SAFETY`` (with a blocked ``safetyRatings`` entry), ``PROHIBITED_CONTENT``,
    ``IMAGE_PROHIBITED_CONTENT``, ``BLOCKLIST``, ``SPII``; OpenAI as ``safety``;
  - ``prompt_blocked``: Gemini ``promptFeedback.blockReason`` ``PROHIBITED_CONTENT`` and no candidates
    (image and vision); OpenAI as ``safety``;
  - ``content_policy``: OpenAI 400 ``content_policy_violation`` (type ``invalid_request_error``, the
    DALL·E shape); Gemini as ``safety``;

- ``no_image`` (200 without an image / without a JSON answer), ``not_image`` (200 with an image part /
  ``b64_json`` whose bytes are not a decodable image: a truncated PNG), ``refusal`` (a vision answer
  that refuses).

Imperfections of the next sheets (:mod:`simulators.ai.imperfect`): ``off_green``, ``shaded``,
``touching``, ``missing``, ``missing_row``, ``edge_cut``.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field

from shared.ai_models import CATALOGUE

__all__ = [
    "CONTENT_KINDS",
    "CallRecord",
    "ContentKind",
    "FaultKind",
    "FaultSpec",
    "Imperfection",
    "ImperfectionSpec",
    "ModelBook",
    "ModelSpec",
    "ScriptedAnswer",
    "SimState",
]

#: The content-refusal fault kinds (see the module docstring).
ContentKind = Literal[
    "safety",
    "finish_safety",
    "prohibited_content",
    "image_prohibited_content",
    "blocklist",
    "spii",
    "prompt_blocked",
    "content_policy",
]
FaultKind = Literal[
    "rate_limit",
    "quota_day",
    "credit",
    "payment_required",
    "billing_hard_limit",
    "auth",
    "forbidden",
    "model_not_found",
    "unsupported_parameter",
    "account_not_set_up",
    "location_unsupported",
    "outage",
    "overloaded",
    "drop",
    "timeout",
    ContentKind,
    "no_image",
    "not_image",
    "refusal",
]
#: :data:`ContentKind` as a set, to test a fault's kind against.
CONTENT_KINDS: frozenset[str] = frozenset(get_args(ContentKind))
Imperfection = Literal["off_green", "shaded", "touching", "missing", "missing_row", "edge_cut"]
Provider = Literal["gemini", "openai", "*"]
CallType = Literal["image", "vision", "*"]
SpecT = TypeVar("SpecT", bound=BaseModel)


class FaultSpec(BaseModel):
    """One queued fault: the next ``count`` calls of ``call`` type (and ``request`` kind: ``sheet``,
    ``heads``, ``anchor``, ``figure``, ``passport``, ``verify``, ``sheet_qa``, ``pack_qa``) to ``provider``
    fail as ``kind``."""

    model_config = ConfigDict(extra="forbid")

    kind: FaultKind
    provider: Provider = "*"
    call: CallType = "*"
    request: str = "*"
    count: int = Field(1, ge=1)
    retry_after_s: float | None = Field(None, ge=0)
    delay_s: float = Field(0.0, ge=0, le=600)

    def matches(self, provider: str, call: str, request: str) -> bool:
        """Whether this fault applies to a ``call`` (``image``/``vision``) of ``request`` kind to
        ``provider``."""
        return (
            self.provider in ("*", provider) and self.call in ("*", call) and self.request in ("*", request)
        )


class ImperfectionSpec(BaseModel):
    """The next ``count`` sheets (image calls with more than one cell) come out with ``kinds``."""

    model_config = ConfigDict(extra="forbid")

    kinds: list[Imperfection] = Field(min_length=1)
    count: int = Field(1, ge=1)


class ScriptedAnswer(BaseModel):
    """The next ``count`` QA answers (``outliers``) or anchor checks (``mismatches``)."""

    model_config = ConfigDict(extra="forbid")

    outliers: list[dict[str, Any]] = Field(default_factory=list)
    mismatches: list[str] = Field(default_factory=list)
    count: int = Field(1, ge=1)


class CallRecord(BaseModel):
    """One call as the simulator saw it."""

    at: float
    provider: str
    model: str
    call: str
    kind: str
    size: str | None = None
    aspect: str | None = None
    images: int = 0
    roles: list[str] = Field(default_factory=list)
    outcome: str = "ok"


def _today() -> date:
    return datetime.now(UTC).date()


class ModelSpec(BaseModel):
    """Body of ``POST /sim/models``: add (``exists``) or retire a model of ``provider`` in ``role``."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["gemini", "openai"]
    name: str = Field(min_length=1)
    role: Literal["image", "vision"]
    exists: bool = True


class ModelBook:
    """The models the simulated providers serve: the catalogue's (less those past their shutdown date),
    plus what tests add, less what they retire."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to the catalogue."""
        self.added: set[tuple[str, str, str]] = set()
        self.retired: set[tuple[str, str, str]] = set()

    def set(self, provider: str, name: str, role: str, *, exists: bool) -> None:
        """Add (``exists``) or retire a model of ``provider`` in ``role``."""
        key = (provider, name, role)
        (self.added if exists else self.retired).add(key)
        (self.retired if exists else self.added).discard(key)

    def exists(self, provider: str, name: str, role: str, *, today: date | None = None) -> bool:
        """Whether ``provider`` serves ``name`` as a model of ``role`` (``image``/``vision``) today."""
        key = (provider, name, role)
        if key in self.retired:
            return False
        if key in self.added:
            return True
        info = CATALOGUE.get(key)
        # From the announced shutdown date the API answers 404 (openai types/shared/chat_model.py and
        # types/image_model.py: "Announced shutdown date"; gpt-image-1 "was shut down on October 23, 2026").
        return info is not None and (info.shutdown is None or info.shutdown > (today or _today()))

    def listing(self) -> list[dict[str, Any]]:
        """Every model served today (``GET /sim/models``)."""
        keys = {k for k in CATALOGUE if k[0] != "local"} | self.added
        return [{"provider": p, "name": n, "role": r} for p, n, r in sorted(keys) if self.exists(p, n, r)]


class SimState:
    """The mutable state behind one simulator app."""

    def __init__(self, latency_s: float = 0.0, call_latency_s: dict[str, float] | None = None) -> None:
        self.default_latency_s = latency_s
        self.in_flight: dict[str, int] = {}  # calls being answered now, by call type and by provider:call
        self.max_in_flight: dict[str, int] = {}
        self.default_call_latency_s = dict(call_latency_s or {})
        self.reset()

    def entered(self, provider: str, call: str) -> None:
        """A call arrived: count it in flight (by ``call`` type and by ``provider:call``), keep the maxima."""
        for key in (call, f"{provider}:{call}"):
            self.in_flight[key] = self.in_flight.get(key, 0) + 1
            self.max_in_flight[key] = max(self.max_in_flight.get(key, 0), self.in_flight[key])

    def left(self, provider: str, call: str) -> None:
        """A call was answered (or its client went away)."""
        for key in (call, f"{provider}:{call}"):
            self.in_flight[key] -= 1

    def forget_max_in_flight(self) -> None:
        """Start the maxima again from the calls in flight now."""
        self.max_in_flight = dict(self.in_flight)

    def reset(self) -> None:
        """Forget every script and call, and the models tests added or retired."""
        self.latency_s = self.default_latency_s
        #: Seconds added to an ``image`` or ``vision`` call instead of ``latency_s`` (per call kind).
        self.call_latency_s: dict[str, float] = dict(self.default_call_latency_s)
        self.faults: list[FaultSpec] = []
        self.imperfections: list[ImperfectionSpec] = []
        self.qa: list[ScriptedAnswer] = []
        self.verify: list[ScriptedAnswer] = []
        self.calls: list[CallRecord] = []
        self.models = ModelBook()
        self.forget_max_in_flight()

    @staticmethod
    def _take(queue: list[SpecT], accept: Any = None) -> SpecT | None:
        for item in queue:
            if accept is None or accept(item):
                counted: Any = item  # every queued spec has a ``count``
                counted.count -= 1
                if counted.count <= 0:
                    queue.remove(item)
                return item
        return None

    def take_fault(self, provider: str, call: str, request: str) -> FaultSpec | None:
        """The fault for this call, if one is queued (counted down)."""
        return self._take(self.faults, lambda f: f.matches(provider, call, request))

    def take_imperfections(self) -> list[Imperfection]:
        """The imperfections of the next sheet, if any are queued."""
        spec = self._take(self.imperfections)
        return list(spec.kinds) if spec else []

    def take_qa(self) -> ScriptedAnswer | None:
        """A scripted QA answer, if one is queued."""
        return self._take(self.qa)

    def take_verify(self) -> ScriptedAnswer | None:
        """A scripted anchor check, if one is queued."""
        return self._take(self.verify)

    def latency_for(self, call: str) -> float:
        """Seconds added to a call of kind ``call`` (``image``/``vision``): its own latency when one is set,
        else ``latency_s``."""
        return self.call_latency_s.get(call, self.latency_s)

    def log(self, record: CallRecord) -> CallRecord:
        """Remember a call."""
        self.calls.append(record)
        return record

    @staticmethod
    def now() -> float:
        """Wall-clock seconds (the ``at`` of call records)."""
        return time.time()
