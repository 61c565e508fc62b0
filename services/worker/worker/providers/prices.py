"""What a provider call costs, from the one price table: :data:`shared.ai_models.CATALOGUE` (USD per
million tokens of each kind, each price with its source and the day it was read).

- **A call that answered** costs the usage its answer reported times its model's price
  (:func:`call_cost`): Gemini ``usageMetadata``, OpenAI's ``usage`` on image and Responses answers,
  mapped to :class:`shared.ai_models.TokenUsage` by the adapters.
- **Before a call** the job's ceiling (``JOB_MAX_COST_USD``) is checked against an estimate
  (:func:`estimate_image`, :func:`estimate_vision`): the prompt's text at 4 characters a token (both
  vendors' rule of thumb: ai.google.dev/gemini-api/docs/tokens, OpenAI's tokenizer guide), each
  reference image at the model's documented input tokens per image, and, for an image, the image-output
  tokens of the size asked (:attr:`shared.ai_models.ModelInfo.image_tokens`, the dearest aspect we ask at
  that size); for a vision answer an allowance of :data:`VISION_OUTPUT_ALLOWANCE` tokens of text and
  reasoning (not a documented figure: our JSON answers are a few hundred tokens, reasoning varies).
- **The estimate is also the charge** of an answer that reported no usage, of a billed but unusable
  answer without usage, and of a call cancelled in flight (the provider may still bill it).
- Failed calls cost nothing (the providers do not bill errors).

Every model the worker calls is priced: the worker refuses to start on one that is not
(:func:`shared.ai_models.check_model`), so an unpriced model here is a programming error (``LookupError``).
"""

from __future__ import annotations

import math

from shared.ai_models import ModelInfo, Price, Role, TokenUsage, lookup
from worker.providers.base import ImageRequest, VisionRequest

__all__ = [
    "VISION_OUTPUT_ALLOWANCE",
    "call_cost",
    "estimate_image",
    "estimate_vision",
    "model_price",
]

#: Output tokens (text and reasoning) assumed for a vision answer before it is sent.
VISION_OUTPUT_ALLOWANCE = 2000


def _info(provider: str, model: str, role: Role) -> tuple[ModelInfo, Price]:
    info = lookup(provider, model, role)
    if info is None or info.price is None:
        raise LookupError(f"no sourced price for {provider} {role} model {model!r} (shared/ai_models.py)")
    return info, info.price


def model_price(provider: str, model: str, role: Role) -> Price:
    """The sourced price of ``model``.

    Raises:
        LookupError: the model is not in the catalogue or has no price.
    """
    return _info(provider, model, role)[1]


def call_cost(provider: str, model: str, role: Role, usage: TokenUsage) -> float:
    """USD of one answered call: the usage it reported times its model's price."""
    return model_price(provider, model, role).cost(usage)


def _text_tokens(prompt: str) -> int:
    return math.ceil(len(prompt) / 4)


def estimate_image(provider: str, model: str, request: ImageRequest) -> float:
    """USD one image call of ``request`` is expected to cost (see the module docstring)."""
    info, price = _info(provider, model, "image")
    usage = TokenUsage(
        input_text_tokens=_text_tokens(request.prompt),
        input_image_tokens=info.input_image_tokens * len(request.images),
        output_image_tokens=info.image_tokens.get(request.size, max(info.image_tokens.values(), default=0)),
    )
    return price.cost(usage)


def estimate_vision(provider: str, model: str, request: VisionRequest) -> float:
    """USD one vision call of ``request`` is expected to cost (see the module docstring)."""
    info, price = _info(provider, model, "vision")
    usage = TokenUsage(
        input_text_tokens=_text_tokens(request.prompt),
        input_image_tokens=info.input_image_tokens * len(request.images),
        output_text_tokens=VISION_OUTPUT_ALLOWANCE,
    )
    return price.cost(usage)
