"""``python -m simulators.ai``: serve the AI provider simulator.

Flags override the ``AISIM_*`` environment (:class:`simulators.ai.config.AiSimConfig`)::

    python -m simulators.ai --host 127.0.0.1 --port 8082 [--keys k1,k2] [--latency 0]
        [--latency-image S] [--latency-vision S]

Point the SDKs at it: google-genai ``HttpOptions(base_url="http://HOST:PORT")``, openai
``AsyncOpenAI(base_url="http://HOST:PORT/v1")`` (the worker: ``AI_BASE_URL_GEMINI``, ``AI_BASE_URL_OPENAI``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from simulators.ai.app import create_app
from simulators.ai.config import AiSimConfig


def parse_args(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The flags that were given, as ``AiSimConfig`` field overrides."""
    parser = argparse.ArgumentParser(
        prog="python -m simulators.ai", description="Serve the AI provider simulator."
    )
    parser.add_argument("--host", help="interface to listen on (AISIM_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (AISIM_PORT, default 8082)")
    parser.add_argument("--keys", help="comma-separated API keys to accept (AISIM_KEYS; default: any)")
    parser.add_argument("--latency", dest="latency_sec", type=float, help="seconds added to every call")
    parser.add_argument(
        "--latency-image", dest="latency_image_sec", type=float, help="seconds added to image calls instead"
    )
    parser.add_argument(
        "--latency-vision",
        dest="latency_vision_sec",
        type=float,
        help="seconds added to vision calls instead",
    )
    return {key: value for key, value in vars(parser.parse_args(argv)).items() if value is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """Build the settings, then serve until interrupted. Returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        config = AiSimConfig(**parse_args(argv))
    except ValidationError as error:
        print(f"invalid settings: {error}", file=sys.stderr)
        return 2
    print(f"AI provider simulator on http://{config.host}:{config.port}/ (Gemini and OpenAI)", flush=True)
    web.run_app(create_app(config), host=config.host, port=config.port, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
