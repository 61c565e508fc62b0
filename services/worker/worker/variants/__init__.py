"""The five generation variants of spec/002 ("How the variants differ"): consistency, classic, hybrid,
legacy figure and composite, in one registry (:data:`VARIANTS`) that :func:`worker.render.render_job`
dispatches on and ``devstack.render`` and the tests read. Each draws the 12 finished slots of a pack or
raises. Adding a variant is one module with its ``draw`` function and one line here."""

from __future__ import annotations

from worker.settings import PipelineSettings
from worker.variants.base import Drawn, Variant
from worker.variants.classic import draw_classic, draw_hybrid
from worker.variants.composite import draw_composite
from worker.variants.consistency import draw_consistency
from worker.variants.legacy import draw_legacy

__all__ = ["VARIANTS", "Drawn", "Variant", "resolve_variant"]

_FIGURE = {"sticker_render_mode": "figure"}

#: Variant name → variant. Exactly one variant's ``selected_by`` matches any settings (spec/002 "Which path
#: runs": ``STICKER_RENDER_MODE=composite`` wins, then ``LIKENESS_MODE``, then ``CONSISTENCY_MODE``; so a
#: figure path names ``figure`` and the consistency/legacy paths an empty ``LIKENESS_MODE``).
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("composite", {"sticker_render_mode": "composite"}, draw_composite),
        Variant("classic", {**_FIGURE, "likeness_mode": "classic"}, draw_classic, "composite"),
        Variant("hybrid", {**_FIGURE, "likeness_mode": "hybrid"}, draw_hybrid, "composite"),
        Variant(
            "consistency",
            {**_FIGURE, "likeness_mode": "", "consistency_mode": True},
            draw_consistency,
            "composite",
        ),
        Variant(
            "legacy", {**_FIGURE, "likeness_mode": "", "consistency_mode": False}, draw_legacy, "composite"
        ),
    )
}


def resolve_variant(settings: PipelineSettings) -> Variant:
    """The one variant of :data:`VARIANTS` whose ``selected_by`` ``settings`` match.

    Raises:
        LookupError: none or several match (a registry line that selects nothing distinct, or a settings
            value no line names: a programming error, as the settings' types admit only registered values).
    """
    matches = [
        variant
        for variant in VARIANTS.values()
        if all(getattr(settings, name) == value for name, value in variant.selected_by.items())
    ]
    if len(matches) != 1:
        raise LookupError(
            f"{len(matches)} variants ({', '.join(v.name for v in matches)}) for STICKER_RENDER_MODE="
            f"{settings.sticker_render_mode!r} LIKENESS_MODE={settings.likeness_mode!r} "
            f"CONSISTENCY_MODE={int(settings.consistency_mode)}: exactly one must match"
        )
    return matches[0]
