"""An AI provider simulator for development and tests: the Gemini ``generateContent`` and OpenAI image and
vision HTTP endpoints the SDKs call, with images drawn from the request's selfie by the ``local``
renderer, scriptable latency and faults in the providers' real wire shapes, and imperfect sheets on
demand.

``create_app(AiSimConfig())`` gives the ``aiohttp`` application; ``python -m simulators.ai`` serves it.
"""

from simulators.ai.app import STATE_KEY, create_app
from simulators.ai.config import AiSimConfig
from simulators.ai.state import SimState

__all__ = ["STATE_KEY", "AiSimConfig", "SimState", "create_app"]
