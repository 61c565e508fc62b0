"""Pure rules of the leads service: the backoff table, command ids, callback data and card rendering."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest

from leads.backoff import Backoff
from leads.cards import Button, card_markup, card_text, may_press, parse_button
from leads.settings import LeadsSettings
from shared.command_ids import find_post, send_post
from shared.domain import Lead

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("failures", "seconds"), [(0, 0), (1, 5), (2, 15), (3, 60), (4, 300), (5, 900), (40, 900)]
)
def test_the_backoff_follows_spec_000(failures: int, seconds: int) -> None:
    assert Backoff().delay(failures) == timedelta(seconds=seconds)


def test_backoff_settings_use_the_spec_names() -> None:
    env = {"DATABASE_URL": "postgresql://x@h/db", "REDIS_URL": "redis://h", "LEADS_CHAT_ID": "-100"}
    settings = LeadsSettings(**env, BACKOFF_SEC="1, 2", LATER_SEC=30, ALERT_AFTER=3)  # type: ignore[arg-type]
    assert (settings.backoff_sec, settings.later_sec, settings.alert_after) == ((1.0, 2.0), 30.0, 3)
    with pytest.raises(ValueError, match="BACKOFF_SEC"):
        LeadsSettings(**env, BACKOFF_SEC="5,-1")  # type: ignore[arg-type]


def test_command_ids_name_the_post_and_the_attempt() -> None:
    # what a result is about travels as its subject (tests/shared/test_command_ids.py); the ids only key
    assert send_post("card", 12, 3) == "lead:12:card:3" and send_post("notice", 4, 1) == "repeat:4:notice:1"
    assert find_post("card", 12, 2) == "lead:12:find:2" and find_post("notice", 4, 5) == "repeat:4:find:5"


def test_only_our_callback_data_parses() -> None:
    assert parse_button("stickers_lead:7:take") == Button("lead", 7, "take")
    assert parse_button("stickers_repeat:3:seen") == Button("repeat", 3, "seen")
    for data in ("stickers_lead:7:seen", "stickers_repeat:3:take", "stickers_lead:x:take", "lead:7:take"):
        assert parse_button(data) is None


def _lead(**fields: object) -> Lead:
    now = datetime.now(UTC)
    values: dict[str, object] = dict(
        id=5,
        request_id="r",
        name="<Ann>",
        contact="+7 999",
        message="a & b",
        source_page=None,
        utm={"utm_source": "ads"},
        status="new",
        published_at=None,
        card_message_id=None,
        failures=0,
        next_attempt_at=None,
        created_at=now,
        contact_kind="phone",
        contact_key="k",
        post_state="pending",
        attempts=0,
        last_error=None,
        card_chat_id=None,
        status_by_id=None,
        status_by_name=None,
        status_at=None,
        status_version=0,
    )
    values.update(fields)
    return Lead(**values)  # type: ignore[arg-type]


def test_the_card_escapes_visitor_input_and_shows_who_pressed() -> None:
    text = card_text(_lead(status="taken", status_by_name="Olga (@olga)"))
    assert "&lt;Ann&gt;" in text and "a &amp; b" in text and "utm_source: ads" in text
    assert text.endswith("Taken by Olga (@olga)")


@pytest.mark.parametrize(
    ("status", "actions"),
    [("new", ["take", "spam"]), ("taken", ["done", "spam"]), ("done", ["reopen"]), ("spam", ["reopen"])],
)
def test_the_buttons_left_depend_on_the_status(status: str, actions: list[str]) -> None:
    markup = card_markup(_lead(status=status))
    assert markup is not None
    assert [b["callback_data"].rsplit(":", 1)[1] for b in markup["inline_keyboard"][0]] == actions


@pytest.mark.parametrize(
    ("status", "holder", "action", "user", "admin", "allowed"),
    [
        ("new", None, "take", 8, False, True),
        ("new", None, "done", 8, False, False),  # take it first
        ("new", None, "done", 1, True, True),
        ("new", None, "spam", 8, False, True),
        ("taken", 7, "done", 7, False, True),
        ("taken", 7, "done", 8, False, False),
        ("taken", 7, "done", 1, True, True),
        ("taken", 7, "spam", 8, False, False),
        ("taken", 7, "take", 8, False, False),
        ("done", 7, "reopen", 7, False, True),
        ("done", 7, "reopen", 8, False, False),
        ("done", 7, "reopen", 1, True, True),
        ("spam", None, "reopen", 8, False, True),
        ("done", None, "done", 1, True, False),
        ("taken", 7, "reopen", 7, False, False),
    ],
)
def test_who_may_press_what(
    status: str, holder: int | None, action: str, user: int, admin: bool, allowed: bool
) -> None:
    assert may_press(_lead(status=status, taken_by_id=holder), action, user_id=user, admin=admin) is allowed


def test_a_card_at_every_field_cap_fits_telegrams_4096_characters() -> None:
    """A lead at ingest's caps made a 4,276-character card: "message is too long" on every attempt
    (core.telegram.org/bots/api#sendmessage: 1-4096 characters after entities parsing; issue 18)."""
    utm = {key: "u" * 200 for key in ("utm_campaign", "utm_content", "utm_medium", "utm_source", "utm_term")}
    lead = _lead(
        id=999_999_999,
        name="N" * 120,
        contact="c" * 254,
        message="&" * 1999 + "😀",  # entities and an astral character: both counted as Telegram does
        source_page="p" * 500,
        utm=utm,
        status="taken",
        status_by_name="S" * 129,
        taken_by_name="T" * 129,
    )
    text = card_text(lead)
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert 4090 <= len(plain.encode("utf-16-le")) // 2 <= 4096
    assert "Message: " + "&" * 100 in plain and plain.split("Message: ")[1].split("\n")[0].endswith("…")
    assert card_text(_lead()) == card_text(_lead())  # a usual card is not cut
    assert "a &amp; b" in card_text(_lead())
