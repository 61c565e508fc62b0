"""The Bot API methods the simulator answers, by lower-cased name (Telegram method names are
case-insensitive: Client.cpp looks them up lower-cased)."""

from __future__ import annotations

from dataclasses import dataclass

from simulators.telegram.methods import bot, chats, commands, files, messages, stickers
from simulators.telegram.methods.base import Answer, Handler

__all__ = ["Answer", "Handler", "Method", "method_table"]


@dataclass(frozen=True)
class Method:
    """A Bot API method: its canonical name (``sendMessage``) and handler."""

    name: str
    handler: Handler


def method_table() -> dict[str, Method]:
    """Every simulated method keyed by its lower-cased name."""
    table: dict[str, Method] = {}
    for module in (bot, commands, messages, stickers, files, chats):
        for name, handler in module.HANDLERS.items():
            table[name.lower()] = Method(name, handler)
    return table
