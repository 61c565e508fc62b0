"""The catalogue of AI models this product may call: provider, role, announced shutdown date, price, and
the source of each fact. One table, read by the worker (start-up refusal, shutdown alerts, cost), the AI
provider simulator (which models exist), and the preflight.

A model that is not in the catalogue, has no sourced price, or is past its announced shutdown is not used:
the worker refuses to start on it (:func:`check_model` raises :class:`shared.errors.ConfigError` naming the
setting), because its existence, its price or its answer (a 404 from its shutdown day) is not what we
expect. Within :data:`SHUTDOWN_WARNING` of a shutdown the worker alerts the admins once a day
(:func:`shutdown_notice`).

Prices are USD per million tokens, per kind of token, as the vendors bill them (:class:`Price`): every
call's cost is the usage its answer reports (:class:`TokenUsage`) times its model's price
(:meth:`Price.cost`). Each price names the page it was read from and the day it was read; check them before
an event and change them here only.

Sources (read on 2026-12-02 through stored copies of the pages, no network to the vendors from here):

- lifecycle: the installed SDKs' own types (openai 3.51.0 ``types/shared/chat_model.py`` and
  ``types/image_model.py``, "Announced shutdown date"), OpenAI's deprecations page
  (https://developers.openai.com/api/docs/deprecations) and Gemini's
  (https://ai.google.dev/gemini-api/docs/deprecations);
- prices: OpenAI's model pages (https://developers.openai.com/api/docs/models/<model>) and pricing page,
  Gemini's pricing page (https://ai.google.dev/gemini-api/docs/pricing, through transcriptions that quote it
  verbatim where the page itself was not stored: each entry says so);
- image token counts: Google Cloud's model page for Gemini 3.1 Flash Image (747 / 1120 / 1680 / 2520
  tokens for a 0.5K / 1K / 2K / 4K image) and Gemini's media-resolution page (an input image is 1120
  tokens at the Gemini 3 default); OpenAI's published per-image prices of gpt-image-2 divided by its
  image-output rate.

What is not modelled: prompt caching (cached input tokens are billed below the input rate; we charge them
at the full rate, which errs high), long-context tiers (over 200K / 272K input tokens; our calls stay far
below), Batch/Flex (we do not use them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Literal

from shared.errors import ConfigError

__all__ = [
    "CATALOGUE",
    "SHUTDOWN_WARNING",
    "ModelInfo",
    "Price",
    "Provider",
    "Role",
    "TokenUsage",
    "check_model",
    "lookup",
    "model_problem",
    "price_known",
    "price_of",
    "shutdown_notice",
]

#: The AI providers (one entry each in :data:`shared.ai_providers.PROVIDERS`: title, key, models).
Provider = Literal["gemini", "openai", "local"]
Role = Literal["image", "vision"]

#: A configured model this close to its announced shutdown is alerted on, once a day.
SHUTDOWN_WARNING = timedelta(days=30)


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """The tokens one call used, as the provider's answer reported them, by how they are billed.

    Attributes:
        input_text_tokens: prompt text (and, where the vendor does not split them, everything else the
            prompt held: OpenAI's Responses ``input_tokens``, images included, bill at one rate).
        input_image_tokens: reference images in the prompt, where the answer counts them apart
            (Gemini ``promptTokensDetails`` ``IMAGE``, OpenAI images ``input_tokens_details.image_tokens``).
        output_text_tokens: text the model wrote, reasoning not included.
        output_image_tokens: the image the model drew (Gemini ``candidatesTokensDetails`` ``IMAGE``,
            OpenAI images ``output_tokens`` / ``output_tokens_details.image_tokens``).
        reasoning_tokens: thinking (Gemini ``thoughtsTokenCount``) or reasoning (OpenAI
            ``output_tokens_details.reasoning_tokens``), billed as output text by both vendors.
    """

    input_text_tokens: int = 0
    input_image_tokens: int = 0
    output_text_tokens: int = 0
    output_image_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_text_tokens + other.input_text_tokens,
            self.input_image_tokens + other.input_image_tokens,
            self.output_text_tokens + other.output_text_tokens,
            self.output_image_tokens + other.output_image_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost: USD per million tokens of each kind, as its vendor lists them.

    Attributes:
        input_text: prompt text (and images, where the vendor bills them at the same rate).
        input_image: reference images in the prompt.
        output_text: text and reasoning/thinking output.
        output_image: image output; ``None`` for a model that draws no images (its answer never reports
            image tokens; if one did they would be charged at the dearest rate of the model, erring high).
        source: the page the rates were read from.
        read: the day they were read.
    """

    input_text: float
    input_image: float
    output_text: float
    output_image: float | None
    source: str
    read: date

    def cost(self, usage: TokenUsage) -> float:
        """USD for ``usage`` at these rates."""
        image_out = self.output_image
        if image_out is None:
            image_out = max(self.input_text, self.input_image, self.output_text)
        return (
            usage.input_text_tokens * self.input_text
            + usage.input_image_tokens * self.input_image
            + (usage.output_text_tokens + usage.reasoning_tokens) * self.output_text
            + usage.output_image_tokens * image_out
        ) / 1e6


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model we may call (or one that was retired, so that its refusal can name the replacement).

    Attributes:
        provider: ``gemini``, ``openai`` or ``local``.
        name: the model id as the API takes it (``gpt-image-2``).
        role: ``image`` (generates images) or ``vision`` (answers JSON about images).
        shutdown: the announced shutdown date (the API answers 404 from that day), or ``None``.
        source: where the existence and the shutdown date were read.
        price: its token prices, or ``None`` when no price could be sourced (a start-up error).
        replacement: the vendor's recommended replacement, when the model is deprecated.
        image_tokens: image output tokens of one image of each size we ask for (``1K``, ``2K``; the dearest
            aspect we ask for at that size), for the estimate before a call (:mod:`worker.providers.prices`).
        input_image_tokens: tokens one reference image of ours (at most 1536 px) costs as input, for the
            same estimate.
        tokens_source: where ``image_tokens`` and ``input_image_tokens`` come from.
    """

    provider: Provider
    name: str
    role: Role
    shutdown: date | None
    source: str
    price: Price | None = None
    replacement: str | None = None
    image_tokens: Mapping[str, int] = field(default_factory=dict)
    input_image_tokens: int = 0
    tokens_source: str = ""


# --- sources -------------------------------------------------------------------------------------------
READ = date(2026, 12, 2)
_OPENAI_SDK_CHAT = "openai 3.51.0 types/shared/chat_model.py"
_OPENAI_SDK_IMAGE = "openai 3.51.0 types/image_model.py"
_OPENAI_DEPRECATIONS = "https://developers.openai.com/api/docs/deprecations"
_GEMINI_DEPRECATIONS = "https://ai.google.dev/gemini-api/docs/deprecations"
_GEMINI_PRICING = "https://ai.google.dev/gemini-api/docs/pricing"

#: Gemini 3 image tokens: "747 tokens for 512p (0.25MP), 1120 tokens for 1K (1MP), 1680 tokens for 2K
#: (4MP), and 2520 tokens for 4K (16MP)" (docs.cloud.google.com/gemini-enterprise-agent-platform/models/
#: gemini/3-1-flash-image-preview); an input image is 1120 tokens at the Gemini 3 default media resolution
#: (ai.google.dev/gemini-api/docs/media-resolution, "Token counts").
_GEMINI_3_IMAGE_TOKENS = {"1K": 1120, "2K": 1680}
_GEMINI_3_INPUT_IMAGE = 1120
_GEMINI_TOKENS = (
    "docs.cloud.google.com .../models/gemini/3-1-flash-image-preview (image output tokens per size); "
    "ai.google.dev/gemini-api/docs/media-resolution (1120 tokens per input image)"
)

#: gpt-image-2 output tokens: OpenAI's published per-image prices for 1024x1024 (medium $0.053, high
#: $0.211; developers.openai.com/api/docs/models/gpt-image-2, as quoted at launch) divided by the $30/M
#: image-output rate give 1767 and 7033 tokens; the 3:2 sizes we ask for (1536x1024, 1024x1536) are not
#: quoted there, so they are scaled by the 6208/4160 ratio OpenAI documented for the GPT image models'
#: 3:2 and square sizes (gpt-image-1 cost table): 2637 (1K, medium) and 10496 (2K, high). An input image
#: of ours (at most 1536 px) is estimated with OpenAI's vision tile rule (fit in 2048 px, shortest side
#: 768 px, 85 + 170 tokens per 512 px tile): at most 765 + 170 × 2 = 1105 tokens.
_GPT_IMAGE_2_TOKENS = {"1K": math.ceil(1767 * 6208 / 4160), "2K": math.ceil(7033 * 6208 / 4160)}
_OPENAI_INPUT_IMAGE = 1105
_OPENAI_TOKENS = (
    "gpt-image-2 per-image prices / $30 per M image tokens, 3:2 scaled by the GPT image cost table; "
    "input images: OpenAI's vision tile rule (85 + 170 per 512 px tile)"
)

_ENTRIES: tuple[ModelInfo, ...] = (
    # --- Gemini: image ---
    ModelInfo(
        "gemini",
        "gemini-3.1-flash-image",
        "image",
        None,
        f"{_GEMINI_DEPRECATIONS}: released 2026-05-28, no shutdown date announced",
        Price(
            0.50,
            0.50,
            3.00,
            60.00,
            f"{_GEMINI_PRICING} (Gemini 3.1 Flash Image, paid tier, standard: input $0.50 text/image, "
            "output $3.00 text and thinking, $60.00 images; the page itself was not stored here: rates as "
            "quoted by transcriptions of it (Vertex AI / gateway price lists, 2026-05 onwards); the preview "
            "model was listed at $0.25 / $1.50 / $60.00)",
            READ,
        ),
        image_tokens=_GEMINI_3_IMAGE_TOKENS,
        input_image_tokens=_GEMINI_3_INPUT_IMAGE,
        tokens_source=_GEMINI_TOKENS,
    ),
    ModelInfo(
        "gemini",
        "gemini-3-pro-image",
        "image",
        None,
        f"{_GEMINI_DEPRECATIONS}: released 2026-05-28, no shutdown date announced",
        # no price: only its image-output rate ($120/M) was found quoted; input and text rates were not
        # sourced here, so it is refused at start-up until they are added
    ),
    ModelInfo(
        "gemini",
        "gemini-3.1-flash-image-preview",
        "image",
        date(2026, 6, 25),
        _GEMINI_DEPRECATIONS,
        replacement="gemini-3.1-flash-image",
    ),
    ModelInfo(
        "gemini",
        "gemini-3-pro-image-preview",
        "image",
        date(2026, 6, 25),
        _GEMINI_DEPRECATIONS,
        replacement="gemini-3-pro-image",
    ),
    ModelInfo(
        "gemini",
        "gemini-2.5-flash-image",
        "image",
        date(2026, 10, 2),
        _GEMINI_DEPRECATIONS,
        replacement="gemini-3.1-flash-image",
    ),
    # --- Gemini: vision ---
    ModelInfo(
        "gemini",
        "gemini-3.5-flash-lite",
        "vision",
        None,
        f"{_GEMINI_DEPRECATIONS}: released 2026-07-21, no shutdown date announced",
        Price(
            0.30,
            0.30,
            2.50,
            None,
            f"{_GEMINI_PRICING} (Gemini 3.5 Flash-Lite, paid tier: input $0.30 text/image/video/audio, "
            "output $2.50 including thinking; verbatim transcription of the page read 2026-10-07, "
            "github.com/api-evangelist/deepmind plans/deepmind-plans-pricing.yml)",
            READ,
        ),
        input_image_tokens=_GEMINI_3_INPUT_IMAGE,
        tokens_source=_GEMINI_TOKENS,
    ),
    ModelInfo(
        "gemini",
        "gemini-3.5-flash",
        "vision",
        None,
        f"{_GEMINI_DEPRECATIONS}: released 2026-05-19, no shutdown date announced",
        Price(
            1.50,
            1.50,
            9.00,
            None,
            f"{_GEMINI_PRICING} (Gemini 3.5 Flash: input $1.50, output $9.00; verbatim transcription of the "
            "page read 2026-10-07, github.com/api-evangelist/deepmind plans/deepmind-plans-pricing.yml)",
            READ,
        ),
        input_image_tokens=_GEMINI_3_INPUT_IMAGE,
        tokens_source=_GEMINI_TOKENS,
    ),
    ModelInfo(
        "gemini",
        "gemini-3.1-flash-lite",
        "vision",
        date(2027, 5, 7),
        _GEMINI_DEPRECATIONS,
        # no price sourced here
    ),
    ModelInfo(
        "gemini",
        "gemini-2.5-flash-lite",
        "vision",
        date(2026, 7, 22),
        _GEMINI_DEPRECATIONS,
        replacement="gemini-3.5-flash-lite",
    ),
    ModelInfo(
        "gemini",
        "gemini-2.5-flash",
        "vision",
        date(2026, 6, 17),
        _GEMINI_DEPRECATIONS,
        replacement="gemini-3.5-flash",
    ),
    # --- OpenAI: image ---
    ModelInfo(
        "openai",
        "gpt-image-2",
        "image",
        None,
        f"{_OPENAI_SDK_IMAGE} (not among its deprecated values); {_OPENAI_DEPRECATIONS}",
        Price(
            5.00,
            8.00,
            10.00,
            30.00,
            "https://developers.openai.com/api/docs/models/gpt-image-2 and .../pricing (text $5.00 in, "
            "$10.00 out; image $8.00 in, $30.00 out per 1M tokens; as quoted by gateways that transcribe "
            "the model page: the page itself was not stored here)",
            READ,
        ),
        image_tokens=_GPT_IMAGE_2_TOKENS,
        input_image_tokens=_OPENAI_INPUT_IMAGE,
        tokens_source=_OPENAI_TOKENS,
    ),
    *(
        ModelInfo("openai", name, "image", None, f"{_OPENAI_SDK_IMAGE}; no price sourced here")
        for name in (
            "gpt-image-2.5-sunburst",
            "gpt-image-2.5-flare",
            "gpt-image-2.6-sunburst",
            "gpt-image-2.6-flare",
        )
    ),
    *(
        ModelInfo(
            "openai",
            name,
            "image",
            date(2026, 12, 1),
            _OPENAI_DEPRECATIONS,
            replacement="gpt-image-2.6-sunburst",
        )
        for name in ("gpt-image-1.5", "gpt-image-1-mini", "chatgpt-image-latest")
    ),
    ModelInfo(
        "openai",
        "gpt-image-1",
        "image",
        date(2026, 10, 23),
        f'{_OPENAI_SDK_IMAGE} ("GPT Image 1 was shut down on October 23, 2026")',
        replacement="gpt-image-2.5-sunburst",
    ),
    # --- OpenAI: vision ---
    ModelInfo(
        "openai",
        "gpt-6.1-terra",
        "vision",
        None,
        f"{_OPENAI_SDK_CHAT} (not among its deprecated values); {_OPENAI_DEPRECATIONS} (the replacement "
        "of gpt-5-mini)",
        Price(
            1.00,
            1.00,
            5.00,
            None,
            "https://developers.openai.com/api/docs/models/gpt-6.1-terra (text tokens per 1M: input $1.00, "
            "output $5.00; images are input tokens; reasoning tokens are billed as output)",
            READ,
        ),
        input_image_tokens=_OPENAI_INPUT_IMAGE,
        tokens_source=_OPENAI_TOKENS,
    ),
    ModelInfo(
        "openai",
        "gpt-5-mini",
        "vision",
        date(2026, 12, 11),
        f'{_OPENAI_SDK_CHAT} ("Announced shutdown date: 2026-12-11"); {_OPENAI_DEPRECATIONS}',
        Price(
            0.25,
            0.25,
            2.00,
            None,
            "https://developers.openai.com/api/docs/models/gpt-5-mini (input $0.25, output $2.00 per 1M)",
            READ,
        ),
        replacement="gpt-6.1-terra",
        input_image_tokens=_OPENAI_INPUT_IMAGE,
        tokens_source=_OPENAI_TOKENS,
    ),
    # --- the offline renderer: no bill ---
    *(
        ModelInfo(
            "local",
            "local",
            role,
            None,
            "this repository (cartoon/)",
            Price(0.0, 0.0, 0.0, 0.0, "this repository: the offline renderer sends no request", READ),
        )
        for role in ("image", "vision")
    ),
)

CATALOGUE: dict[tuple[str, str, str], ModelInfo] = {(m.provider, m.name, m.role): m for m in _ENTRIES}


def lookup(provider: str, name: str, role: str) -> ModelInfo | None:
    """The catalogue entry of ``name`` at ``provider`` in ``role``, or ``None`` when we do not know it."""
    return CATALOGUE.get((provider, name, role))


def price_of(provider: str, name: str, role: str) -> Price | None:
    """The sourced price of ``name``, or ``None`` when it is unknown (not in the catalogue, or unpriced)."""
    info = lookup(provider, name, role)
    return info.price if info is not None else None


def price_known(provider: str, name: str, role: str) -> bool:
    """Whether ``name`` at ``provider`` in ``role`` has a sourced price (the preflight's check)."""
    return price_of(provider, name, role) is not None


def model_problem(provider: str, name: str, role: str, *, today: date) -> str | None:
    """Why ``name`` may not be used on ``today`` (not in the catalogue, past its shutdown, or unpriced),
    or ``None`` when it may."""
    info = lookup(provider, name, role)
    if info is None:
        known = ", ".join(sorted(m.name for m in _ENTRIES if m.provider == provider and m.role == role))
        return f"{name!r} is not a known {provider} {role} model (shared/ai_models.py knows: {known})"
    if info.shutdown is not None and today >= info.shutdown:
        instead = f"; use {info.replacement}" if info.replacement else ""
        return f"{name!r} was shut down on {info.shutdown.isoformat()}{instead}"
    if info.price is None:
        return (
            f"{name!r} has no sourced price in shared/ai_models.py: add its price with source and date, or "
            "choose a priced model"
        )
    return None


def check_model(setting: str, provider: str, name: str, role: str, *, today: date) -> ModelInfo:
    """The catalogue entry of a configured model, if it may be used on ``today``.

    Raises:
        ConfigError: naming ``setting``: the model is not in the catalogue (misspelt, or never checked), is
            past its announced shutdown (the API answers 404 ``model_not_found``), or has no sourced price.
    """
    problem = model_problem(provider, name, role, today=today)
    if problem is not None:
        raise ConfigError(f"{setting}: {problem}")
    info = lookup(provider, name, role)
    assert info is not None
    return info


def shutdown_notice(setting: str, info: ModelInfo, *, today: date) -> str | None:
    """The admin alert's text when ``info`` shuts down within :data:`SHUTDOWN_WARNING` of ``today``."""
    if info.shutdown is None or not today <= info.shutdown <= today + SHUTDOWN_WARNING:
        return None
    days = (info.shutdown - today).days
    choice = f"{info.replacement} (the vendor's replacement)" if info.replacement else "a current model"
    return (
        f"{setting}={info.name} shuts down on {info.shutdown.isoformat()} (in {days} days): from then every "
        f"{info.role} call to {info.provider} fails. Set {setting} to {choice} and restart the worker."
    )
