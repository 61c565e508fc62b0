"""A faithful Telegram Bot API simulator for development and tests.

``create_app(SimConfig(token=..., bot_username=...))`` gives an ``aiohttp`` application that speaks the Bot
API wire format (``/bot<token>/<method>``, ``/file/bot<token>/<path>``) plus a control API under ``/sim/`` and
a watch page at ``/``. Run it with ``python -m simulators.telegram``.
"""

from simulators.telegram.app import SIMULATOR_KEY, create_app
from simulators.telegram.config import Limits, SimConfig
from simulators.telegram.simulator import Simulator

__all__ = ["SIMULATOR_KEY", "Limits", "SimConfig", "Simulator", "create_app"]
