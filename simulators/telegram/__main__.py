"""``python -m simulators.telegram``: serve the Telegram Bot API simulator.

Flags override the ``TGSIM_*`` environment (``config.SimConfig``)::

    python -m simulators.telegram --host 127.0.0.1 --port 8081 --token 123456:TEST \\
        --bot-username stickerbooth_bot [--data-dir var/tgsim] [--group=-1001000000001="Staff"]... \\
        [--private-per-second 1] [--private-burst 3] [--group-per-minute 20] [--global-per-second 30] \\
        [--callback-answer-timeout 15] [--max-request-bytes 52428800]

Point python-telegram-bot at it with ``Bot(token, base_url="http://HOST:PORT/bot",
base_file_url="http://HOST:PORT/file/bot")``; open ``http://HOST:PORT/`` to watch.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from simulators.telegram.app import create_app
from simulators.telegram.config import SimConfig


def parse_args(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The flags that were given, as ``SimConfig`` field overrides."""
    parser = argparse.ArgumentParser(
        prog="python -m simulators.telegram", description="Serve the Telegram Bot API simulator."
    )
    parser.add_argument("--host", help="interface to listen on (TGSIM_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (TGSIM_PORT, default 8081)")
    parser.add_argument("--token", help="the bot token to accept (TGSIM_TOKEN, required)")
    parser.add_argument("--bot-username", help="bot username without @ (TGSIM_BOT_USERNAME)")
    parser.add_argument("--bot-first-name", help="bot display name (TGSIM_BOT_FIRST_NAME)")
    parser.add_argument(
        "--data-dir", type=Path, help="keep state and files here across restarts (TGSIM_DATA_DIR)"
    )
    parser.add_argument(
        "--group",
        action="append",
        type=_group,
        dest="groups",
        metavar="CHAT_ID=TITLE",
        help="a group chat the bot is in from the start, as --group=-100…=Title (repeatable; TGSIM_GROUPS)",
    )
    parser.add_argument("--private-per-second", type=float, help="messages/s per private chat, 0 = off")
    parser.add_argument("--private-burst", type=int, help="messages sent back to back in a private chat")
    parser.add_argument("--group-per-minute", type=float, help="messages/min per group chat, 0 = off")
    parser.add_argument("--global-per-second", type=float, help="messages/s across all chats, 0 = off")
    parser.add_argument("--callback-answer-timeout", type=float, help="seconds to answer a callback, 0 = off")
    parser.add_argument(
        "--max-request-bytes", type=int, help="larger request bodies get a 413 (TGSIM_MAX_REQUEST_BYTES)"
    )
    values = {key: value for key, value in vars(parser.parse_args(argv)).items() if value is not None}
    if "groups" in values:
        values["groups"] = dict(values["groups"])
    return values


def _group(text: str) -> tuple[int, str]:
    """``CHAT_ID=TITLE`` as a pair; raises ``argparse.ArgumentTypeError`` for anything else."""
    chat_id, separator, title = text.partition("=")
    try:
        return int(chat_id), title.strip() if separator else ""
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CHAT_ID=TITLE, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Build the settings, then serve until interrupted. Returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        config = SimConfig(**parse_args(argv))
    except ValidationError as error:
        print(f"invalid settings: {error}", file=sys.stderr)
        return 2
    print(f"Telegram simulator for @{config.bot_username} on http://{config.host}:{config.port}/", flush=True)
    web.run_app(create_app(config), host=config.host, port=config.port, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
