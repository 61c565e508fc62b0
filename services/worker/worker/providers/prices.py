"""What a provider call costs: the one price table (USD), per model and image size.

Image calls are billed per image at the size asked for; vision calls per token (USD per million input
and output tokens), with a flat estimate when a provider does not report tokens. Prices as listed on
ai.google.dev/pricing and openai.com/api/pricing for the default models of spec/002; check them before
an event and change them here only. An unknown model is billed at the dearest known price of its kind,
so the cost ceiling errs on the safe side. Failed calls cost nothing (providers do not bill errors).
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.providers.base import CallUsage

__all__ = ["IMAGE_PRICES", "VISION_PRICES", "VisionPrice", "image_cost", "vision_cost"]

#: USD per generated image, by model and size (``1K``: about 1024 px on the long side, ``2K``: 2048).
IMAGE_PRICES: dict[str, dict[str, float]] = {
    "gemini-3.1-flash-image": {"1K": 0.039, "2K": 0.067},
    "gemini-3-pro-image": {"1K": 0.134, "2K": 0.134},
    "gpt-image-2": {"1K": 0.063, "2K": 0.25},  # 1K at medium quality, 2K sheets at high quality
    "local": {"1K": 0.0, "2K": 0.0},
}


@dataclass(frozen=True, slots=True)
class VisionPrice:
    """USD per million input and output tokens, and the flat USD estimate when no usage is reported."""

    input_per_m: float
    output_per_m: float
    flat: float


VISION_PRICES: dict[str, VisionPrice] = {
    "gemini-3.5-flash-lite": VisionPrice(0.10, 0.40, 0.001),
    "gpt-5-mini": VisionPrice(0.25, 2.00, 0.003),
    "local": VisionPrice(0.0, 0.0, 0.0),
}


def image_cost(model: str, size: str) -> float:
    """USD for one image of ``size`` (``1K``/``2K``) from ``model``."""
    prices = IMAGE_PRICES.get(model)
    if prices is None:
        return max(p.get(size, max(p.values())) for p in IMAGE_PRICES.values())
    return prices.get(size, max(prices.values()))


def vision_cost(model: str, usage: CallUsage) -> float:
    """USD for one vision call of ``model`` that used ``usage`` tokens."""
    price = VISION_PRICES.get(model) or max(VISION_PRICES.values(), key=lambda p: p.output_per_m)
    if usage.input_tokens == 0 and usage.output_tokens == 0:
        return price.flat
    return (usage.input_tokens * price.input_per_m + usage.output_tokens * price.output_per_m) / 1e6
