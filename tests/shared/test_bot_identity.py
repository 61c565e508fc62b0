"""``BOT_USERNAME`` by Telegram's rules (issue 18): a username Telegram would not give a bot, or one so long
that every sticker set name we build is over Telegram's 64 characters, is refused at settings validation,
not discovered when every pack fails. And the getMe comparison the gateway (and a preflight) use."""

from __future__ import annotations

from uuid import uuid4

import pytest

from shared.bot_identity import (
    bot_mismatch,
    longest_set_name,
    max_bot_username_chars,
    set_name_problems,
    sticker_set_name,
)
from shared.errors import ConfigError
from shared.settings import BotIdentitySettings, load_settings

pytestmark = pytest.mark.unit


def username(length: int) -> str:
    """A bot username of ``length`` characters by Telegram's rules (letters, ends in ``bot``)."""
    return "a" * (length - 4) + "_bot"


@pytest.mark.parametrize("length", [27, 30, 32])
def test_a_username_too_long_for_set_names_is_refused_at_settings_validation(
    monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    name = username(length)
    monkeypatch.setenv("BOT_USERNAME", name)
    with pytest.raises(ConfigError) as caught:
        load_settings(BotIdentitySettings)
    message = str(caught.value)
    assert "not a bot username" not in message  # Telegram would give a bot this username, but...
    # ...its set names would be 38 + length characters: the message names the limit and the longest name
    assert "BOT_USERNAME" in message and f"{38 + length} characters" in message
    assert longest_set_name(name) in message and "at most 26 characters" in message


@pytest.mark.parametrize(
    "name", ["booth", "sticker_booth", "@stickerbooth_bot", "1booth_bot", "boo-bot", "bot"]
)
def test_a_username_that_is_no_bot_username_is_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("BOT_USERNAME", name)
    with pytest.raises(ConfigError, match="not a bot username"):
        load_settings(BotIdentitySettings)


@pytest.mark.parametrize("name", ["stickerbooth_bot", "BoothBot", "abbot", username(26)])
def test_a_bot_username_whose_set_names_fit_is_accepted(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("BOT_USERNAME", name)
    assert load_settings(BotIdentitySettings).bot_username == name
    assert len(sticker_set_name(uuid4(), name)) <= 64


def test_the_longest_set_name_is_computed_from_the_name_we_build() -> None:
    job_id = uuid4()
    name = sticker_set_name(job_id, "stickerbooth_bot")
    assert name == f"sb{job_id.hex}_by_stickerbooth_bot"
    assert len(longest_set_name("stickerbooth_bot")) == len(name)  # every job id's hex is 32 digits
    assert max_bot_username_chars() == 26
    assert len(longest_set_name(username(26))) == 64
    assert set_name_problems(longest_set_name(username(27)), username(27)) == [
        "is 65 characters; Telegram allows 1-64"
    ]
    with pytest.raises(ValueError, match="65 characters"):
        sticker_set_name(job_id, username(27))


def test_set_name_rules() -> None:
    assert set_name_problems("sbabc_by_stickerbooth_bot", "StickerBooth_Bot") == []  # case-insensitive suffix
    assert "must not contain consecutive underscores" in set_name_problems("sb__x_by_a_bot", "a_bot")
    assert "must end in _by_a_bot" in set_name_problems("sbx_by_b_bot", "a_bot")
    assert set_name_problems("1x_by_a_bot", "a_bot") == [
        "must be English letters, digits and underscores, beginning with a letter"
    ]


def test_the_get_me_comparison_names_both_bots() -> None:
    assert bot_mismatch("StickerBooth_bot", "stickerbooth_bot") is None  # usernames are not case sensitive
    problem = bot_mismatch("stickerboth_bot", "stickerbooth_bot")
    assert problem is not None
    assert "@stickerbooth_bot" in problem and "'stickerboth_bot'" in problem
    assert bot_mismatch("stickerbooth_bot", None) is not None
