"""The outfit catalog: package data files become frozen, validated models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.outfits import Outfit, get_outfit, load_catalog

pytestmark = pytest.mark.unit


def test_the_catalog_has_at_least_four_distinct_outfits() -> None:
    catalog = load_catalog()
    assert len(catalog) >= 4
    assert {"astronaut", "superhero", "pirate", "chef"} <= set(catalog)
    assert len({outfit.title for outfit in catalog.values()}) == len(catalog)


@pytest.mark.parametrize("outfit_id", sorted(load_catalog()))
def test_each_outfit_has_what_every_consumer_needs(outfit_id: str) -> None:
    outfit = load_catalog()[outfit_id]
    assert outfit.id == outfit_id
    assert outfit.title
    assert len(outfit.prompt.split()) >= 12  # a real description for an image model
    assert "face" in outfit.prompt or outfit.art.headwear in ("chef_toque", "wizard_hat", "cowboy_hat")
    assert outfit.body_template
    palette = outfit.art.palette
    for colour in (palette.suit, palette.trim, palette.accent, palette.pants, palette.shoes):
        assert colour.startswith("#") and len(colour) == 7


def test_outfits_are_frozen() -> None:
    outfit = get_outfit("astronaut")
    with pytest.raises(ValidationError):
        outfit.title = "Something else"  # type: ignore[misc]


def test_the_catalog_is_read_once() -> None:
    assert load_catalog()["pirate"] is load_catalog()["pirate"]


def test_mutating_the_returned_dict_does_not_change_the_catalog() -> None:
    load_catalog().clear()
    assert load_catalog()


def test_unknown_outfit_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        get_outfit("dragon")


def test_malformed_outfit_data_is_refused() -> None:
    good = get_outfit("chef").model_dump()
    good["art"]["palette"]["suit"] = "white"
    with pytest.raises(ValidationError):
        Outfit.model_validate(good)
    good = get_outfit("chef").model_dump()
    good["art"]["headwear"] = "crown"
    with pytest.raises(ValidationError):
        Outfit.model_validate(good)
