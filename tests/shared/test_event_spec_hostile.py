"""Hostile operator input that the store or the services cannot take (issue 23; found by trying the admin
API as a hostile user: each case was a 500, or a saved event that later broke other requests, through
``PUT /admin/events/{id}``).

Every bad input must be a ``pydantic.ValidationError`` here, so the route answers 422 and writes nothing;
the same fields written well still pass (the last tests).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ingest.api.admin_events import OutfitUpload
from shared.events import EventSpec


def spec(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Luau",
        "time_zone": "Pacific/Honolulu",
        "starts_at": "2026-07-01T09:00:00-10:00",
        "ends_at": "2026-07-03T18:00:00-10:00",
        "stations": ["hnl-1"],
    }
    body.update(changes)
    return body


@pytest.mark.parametrize(
    "time_zone",
    [
        "Asia",  # a folder of the zoneinfo tree: IsADirectoryError, a 500
        "Etc",
        "a" * 300,  # OSError: file name too long, a 500
    ],
)
def test_a_time_zone_that_is_no_file_is_a_validation_error(time_zone: str) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(time_zone=time_zone))


@pytest.mark.parametrize(
    "changes",
    [
        # to_event's astimezone(UTC) overflows: OverflowError, a 500
        {"starts_at": "0001-01-01T00:00:00+01:00", "ends_at": None},
        {"starts_at": None, "ends_at": "9999-12-31T23:59:59-01:00"},
        # datetime.min in UTC is stored by asyncpg as -infinity and read back naive: afterwards
        # GET /admin/overview, /kiosk/config and POST /sessions at its station and every PUT sharing
        # the station answer 500 (TypeError: can't compare offset-naive and offset-aware datetimes)
        {"starts_at": "0001-01-01T00:00:00Z", "ends_at": "0001-01-02T00:00:00Z"},
        {"starts_at": None, "ends_at": "9999-12-31T23:59:59.999999Z"},
    ],
)
def test_times_at_the_ends_of_the_calendar_are_a_validation_error(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(**changes)).to_event("luau")


@pytest.mark.parametrize(
    "changes",
    [
        # NUMERIC(12,2) rounds it to 0.00, which ck_events_daily_budget refuses: a 500
        {"daily_budget_usd": 0.004},
        {"daily_budget_usd": 1e-300},
        # rounds to 10000000000.00: numeric field overflow, a 500
        {"total_budget_usd": 9999999999.999},
    ],
)
def test_a_budget_the_column_cannot_hold_is_a_validation_error(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(**changes))


def test_an_own_text_with_a_nul_is_a_validation_error() -> None:
    # Postgres JSONB refuses \u0000: a 500
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(texts={"en": {"failed": "a\u0000b"}}))


def test_an_uploaded_outfits_prompt_with_a_nul_is_a_validation_error() -> None:
    # Postgres text refuses 0x00: a 500
    with pytest.raises(ValidationError):
        OutfitUpload.model_validate(
            {"title": "Keeper", "prompt": "a lighthouse keeper \x00 in a raincoat", "based_on": "astronaut"}
        )


@pytest.mark.parametrize(
    "own",
    [
        "Your stickers: {link:.0}",  # the link is cut to nothing: the guest never sees it
        "Your stickers: {link:>100000}",  # 100 kB of spaces: Telegram refuses a text over 4096
        "Your stickers: {link:>2000000000}",  # MemoryError (not caught by Event.text) in delivery
        "Your stickers: {link!r}",  # the link in quotes
    ],
)
def test_an_own_text_with_a_format_spec_or_conversion_is_a_validation_error(own: str) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(texts={"en": {"pack_ready": own}}))


def test_an_own_text_that_is_too_long_once_the_link_is_in_is_a_validation_error() -> None:
    # 4096 characters with "{link}": the message is longer than Telegram's 4096 once the link replaces it
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(texts={"en": {"pack_ready": "x" * 4089 + " {link}"}}))


@pytest.mark.parametrize("name", ["\u202eevil\u202c", "a\x85b", "del\x7f", "tab\there"])
def test_a_name_with_a_control_or_bidirectional_character_is_a_validation_error(name: str) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(name=name))


@pytest.mark.parametrize("budget", [True, "5", 0.015])
def test_a_budget_that_is_not_a_number_of_cents_is_a_validation_error(budget: Any) -> None:
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(daily_budget_usd=budget))


def test_the_same_fields_written_well_pass() -> None:
    event = EventSpec.model_validate(
        spec(
            name="Luau 👨‍👩‍👧 night",  # an emoji's zero-width joiners are not controls
            starts_at="2026-07-01T09:00:00-10:00",
            ends_at="2100-12-31T23:00:00-10:00",
            daily_budget_usd=12.5,
            total_budget_usd=9999999999.99,
            texts={"en": {"pack_ready": "Aloha!\n\tYour stickers: {link}", "failed": "x" * 4000}},
        )
    ).to_event("luau")
    assert event.text("pack_ready", "en", link="L") == "Aloha!\n\tYour stickers: L"
    assert event.daily_budget_usd == 12.5


def test_stations_are_stored_lowercase_and_a_repeat_in_another_case_is_refused() -> None:
    assert EventSpec.model_validate(spec(stations=["HNL-1", "hnl-2"])).stations == ["hnl-1", "hnl-2"]
    with pytest.raises(ValidationError):
        EventSpec.model_validate(spec(stations=["hnl-1", "HNL-1"]))
