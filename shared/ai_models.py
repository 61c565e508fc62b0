"""The catalogue of AI models this product may call: provider, role, announced shutdown date, and the
source of each fact. One table, read by the worker (start-up refusal, shutdown alerts, prices), the AI
provider simulator (which models exist), and the preflight.

A model that is not in the catalogue is not used: the worker refuses to start on it
(:class:`shared.errors.ConfigError`), because neither its existence nor its price is known.

Sources are the installed SDKs' own types (``openai/types/shared/chat_model.py`` and
``openai/types/image_model.py`` list each model with its "Announced shutdown date") and the vendors'
deprecation pages; each entry names its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

__all__ = ["CATALOGUE", "ModelInfo", "Provider", "Role", "lookup"]

Provider = Literal["gemini", "openai", "local"]
Role = Literal["image", "vision"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model we may call.

    Attributes:
        provider: ``gemini``, ``openai`` or ``local``.
        name: the model id as the API takes it (``gpt-image-2``).
        role: ``image`` (generates images) or ``vision`` (answers JSON about images).
        shutdown: the announced shutdown date (the API answers 404 from that day), or ``None``.
        source: where the existence and the shutdown date were read.
    """

    provider: Provider
    name: str
    role: Role
    shutdown: date | None
    source: str


_ENTRIES: tuple[ModelInfo, ...] = (
    ModelInfo("gemini", "gemini-3.1-flash-image", "image", None, "google-genai 3.3.0 docstrings"),
    ModelInfo("gemini", "gemini-3.5-flash-lite", "vision", None, "google-genai 3.3.0 docstrings"),
    ModelInfo("openai", "gpt-image-2", "image", None, "openai 3.51.0 types/image_model.py"),
    ModelInfo(
        "openai", "gpt-5-mini", "vision", date(2026, 12, 11), "openai 3.51.0 types/shared/chat_model.py"
    ),
    ModelInfo("local", "local", "image", None, "this repository (cartoon/)"),
    ModelInfo("local", "local", "vision", None, "this repository (cartoon/)"),
)

CATALOGUE: dict[tuple[str, str, str], ModelInfo] = {(m.provider, m.name, m.role): m for m in _ENTRIES}


def lookup(provider: str, name: str, role: str) -> ModelInfo | None:
    """The catalogue entry of ``name`` at ``provider`` in ``role``, or ``None`` when we do not know it."""
    return CATALOGUE.get((provider, name, role))
