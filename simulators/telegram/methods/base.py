"""What a Bot API method is: an async function of the simulator and the call's parameters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator


@dataclass(frozen=True)
class Answer:
    """A result with Telegram's optional ``description`` next to it (``deleteWebhook`` says one)."""

    result: Any
    description: str


Handler = Callable[[Simulator, Params], Awaitable[Any]]
