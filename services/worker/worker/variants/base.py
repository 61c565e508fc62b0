"""What a generation variant is to the registry (:data:`worker.variants.VARIANTS`): its name, the settings
that select it, how it draws a pack and where it falls back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from worker.context import RenderContext
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.steps.inputs import Inputs
from worker.steps.slots import Slot

__all__ = ["Draw", "Drawn", "Variant"]


class Drawn(NamedTuple):
    """The 12 finished slots of a pack and the name of the variant that drew them (the consistency path
    draws with the legacy path when no anchor portrait could be had)."""

    slots: list[Slot]
    path: str


#: How a variant draws: ``(ctx, inputs, face crop, appearance passport) → Drawn``; raises what
#: :func:`worker.render.render_job` documents (``NoValidSheet`` for a figure path whose sheets are never
#: valid).
Draw = Callable[[RenderContext, Inputs, InputImage | None, Passport | None], Awaitable[Drawn]]


@dataclass(frozen=True, slots=True)
class Variant:
    """One generation variant of spec/002 ("How the variants differ").

    Attributes:
        name: ``consistency``, ``classic``, … (the ``JOB_RENDER_MODE`` log's ``mode``, the ``variant`` of
            the ``STARTUP`` line, ``make render VARIANT=``).
        selected_by: the :class:`worker.settings.PipelineSettings` fields and values that select it
            (spec/002 "Which path runs"); ``settings.model_copy(update=selected_by)`` selects it.
        draw: renders the pack's 12 slots.
        fallback: the variant that draws instead when this figure path's sheets are never valid and
            ``FIGURE_FALLBACK_ENABLED`` (``None``: no fallback; its errors are the job's).
    """

    name: str
    selected_by: Mapping[str, object]
    draw: Draw
    fallback: str | None = None
