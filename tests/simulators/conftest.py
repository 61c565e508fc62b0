"""Fixtures for the Telegram simulator: a running in-process server, a control-API client and a real
python-telegram-bot ``Bot`` pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot

from tests.simulators.tgsim_helpers import GUEST_ID, RunningSim, serving, sim_config


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opt in to PTB's timedelta periods, or reading ``RetryAfter`` warns (an error under filterwarnings)."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def tgsim() -> AsyncIterator[RunningSim]:
    """A simulator with flood control off (tests that need it turn it on)."""
    async with serving(sim_config()) as running:
        yield running


@pytest.fixture
async def bot(tgsim: RunningSim) -> AsyncIterator[Bot]:
    """A real python-telegram-bot ``Bot`` talking to ``tgsim``."""
    async with tgsim.bot() as ptb_bot:
        yield ptb_bot


@pytest.fixture
async def guest(tgsim: RunningSim) -> int:
    """A user who has started the bot."""
    await tgsim.say(GUEST_ID, "/start", first_name="Ann", username="ann", language_code="en")
    return GUEST_ID
