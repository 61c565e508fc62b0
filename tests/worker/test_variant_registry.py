"""The variant registry (:data:`worker.variants.VARIANTS`, issue 21 item 3): every settings combination
selects the variant spec/002 "Which path runs" names, each variant's ``selected_by`` selects it (what
``make render VARIANT=`` and the tests rely on), and a fallback names a registered variant."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import get_args

import pytest

from worker.render import resolve_mode, startup_fields
from worker.settings import PipelineSettings
from worker.variants import VARIANTS, resolve_variant


def spec_variant(render_mode: str, likeness: str, consistency: bool) -> str:
    """spec/002 "Which path runs", written out as the rule reads."""
    if render_mode == "composite":
        return "composite"
    if likeness:
        return likeness
    return "consistency" if consistency else "legacy"


def combinations() -> list[tuple[str, str, bool]]:
    fields = PipelineSettings.model_fields
    render_modes = get_args(fields["sticker_render_mode"].annotation)
    likeness_modes = get_args(fields["likeness_mode"].annotation)
    assert render_modes and likeness_modes  # the settings' types list their values
    return list(itertools.product(render_modes, likeness_modes, (True, False)))


@pytest.mark.parametrize(("render_mode", "likeness", "consistency"), combinations())
def test_every_settings_combination_selects_the_spec_variant(
    render_mode: str, likeness: str, consistency: bool
) -> None:
    chosen = {"sticker_render_mode": render_mode, "likeness_mode": likeness, "consistency_mode": consistency}
    settings = PipelineSettings().model_copy(update=chosen)
    assert resolve_variant(settings).name == spec_variant(render_mode, likeness, consistency)
    assert startup_fields(settings)["variant"] == resolve_mode(settings)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_is_selected_by_its_own_settings(name: str) -> None:
    variant = VARIANTS[name]
    assert variant.name == name
    assert resolve_variant(PipelineSettings().model_copy(update=variant.selected_by)) is variant


def test_a_fallback_is_a_registered_variant_without_its_own_fallback() -> None:
    for variant in VARIANTS.values():
        if variant.fallback is not None:
            assert VARIANTS[variant.fallback].fallback is None, variant.name


def test_settings_no_line_selects_are_refused() -> None:
    """A value no line names is refused, not run as some other variant."""
    settings = PipelineSettings().model_copy(update={"sticker_render_mode": "sketch"})
    with pytest.raises(LookupError, match="0 variants"):
        resolve_variant(settings)


def test_two_lines_selecting_the_same_settings_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry line that overlaps another (here: classic without ``figure``) is found, not resolved by
    the order of the lines."""
    loose = replace(VARIANTS["classic"], selected_by={"likeness_mode": "classic"})
    monkeypatch.setitem(VARIANTS, "classic", loose)
    settings = PipelineSettings().model_copy(
        update={"sticker_render_mode": "composite", "likeness_mode": "classic"}
    )
    with pytest.raises(LookupError, match=r"2 variants \(composite, classic\)"):
        resolve_variant(settings)
