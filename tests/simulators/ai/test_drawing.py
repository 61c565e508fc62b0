"""The simulator's drawings (``simulators.ai.drawing.draw_image``): the same request gets the same bytes
(drawn once and kept), and anything a drawing depends on (the images, the imperfections asked for, the
outfit's definition) makes it another drawing."""

from __future__ import annotations

import pytest

from cartoon.grammar import DrawSpec, figure_line, image_line, outfit_line, task_line
from cartoon.poses import POSES
from shared.outfits import load_catalog
from simulators.ai import drawing
from simulators.ai.drawing import draw_image
from tests.simulators.ai.helpers import photo

POSE_NAMES = (POSES[0].name, POSES[1].name)


def prompt(outfit: str = "chef") -> str:
    spec = DrawSpec(outfit_id=outfit, poses=POSE_NAMES, cols=2, rows=1)
    return "\n".join(
        [
            task_line("sheet", spec, "2:1"),
            outfit_line(outfit, "an outfit"),
            *(figure_line(k + 1, name, "a pose") for k, name in enumerate(POSE_NAMES)),
            image_line(1, "selfie"),
        ]
    )


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    drawing._drawn.clear()


def test_the_same_request_is_answered_with_the_same_bytes_and_kept() -> None:
    selfie = photo("astronaut-portrait.png", max_side=320)
    first, parsed = draw_image(prompt(), [("selfie", selfie)], load_catalog())
    again, _ = draw_image(prompt(), [("selfie", bytes(selfie))], load_catalog())
    assert again is first  # the kept drawing, not a second one
    assert parsed.spec.poses == POSE_NAMES and len(drawing._drawn) == 1


def test_another_selfie_imperfection_or_outfit_definition_is_another_drawing() -> None:
    catalog = load_catalog()
    selfie = photo("astronaut-portrait.png", max_side=320)
    base, _ = draw_image(prompt(), [("selfie", selfie)], catalog)
    other_photo, _ = draw_image(
        prompt(), [("selfie", photo("face-woman-red-hat.png", max_side=320))], catalog
    )
    imperfect, _ = draw_image(prompt(), [("selfie", selfie)], catalog, ("shaded",))
    chef = catalog["chef"]
    redrawn = {
        **catalog,
        "chef": chef.model_copy(
            update={
                "art": chef.art.model_copy(
                    update={"headwear": "none" if chef.art.headwear != "none" else "tricorn"}
                )
            }
        ),
    }
    other_outfit, _ = draw_image(prompt(), [("selfie", selfie)], redrawn)
    assert len({base, other_photo, imperfect, other_outfit}) == 4
    assert len(drawing._drawn) == 4


def test_the_cache_keeps_the_last_drawings_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawing, "DRAWN_CACHE_SIZE", 1)
    selfie = photo("astronaut-portrait.png", max_side=320)
    first, _ = draw_image(prompt(), [("selfie", selfie)], load_catalog())
    draw_image(prompt(), [("selfie", photo("face-woman-red-hat.png", max_side=320))], load_catalog())
    assert len(drawing._drawn) == 1
    again, _ = draw_image(prompt(), [("selfie", selfie)], load_catalog())
    assert again == first and again is not first  # drawn anew, to the same bytes
