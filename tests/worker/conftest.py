"""Fixtures of the worker tests: the AI provider simulator served in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.simulators.ai.helpers import RunningAiSim, serve_aisim


@pytest.fixture
async def aisim() -> AsyncIterator[RunningAiSim]:
    """A fresh AI provider simulator (Gemini and OpenAI) accepting the test key."""
    runner, running = await serve_aisim()
    yield running
    await running.http.close()
    await runner.cleanup()
