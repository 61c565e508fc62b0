"""The simulator's latency settings: one for every call, or one per kind of call (image, vision), from its
settings or the control API (issue 12's benchmarks run it at 3 s per image call and 1 s per vision call)."""

from __future__ import annotations

from simulators.ai import AiSimConfig, SimState
from tests.simulators.ai.helpers import RunningAiSim


def test_per_call_latencies_from_the_settings_override_the_common_one() -> None:
    config = AiSimConfig(latency_sec=0.5, latency_image_sec=3.0)  # type: ignore[call-arg]
    state = SimState(latency_s=config.latency_sec, call_latency_s=config.call_latencies())

    assert (state.latency_for("image"), state.latency_for("vision")) == (3.0, 0.5)
    state.call_latency_s.clear()
    state.reset()  # a reset goes back to the configured latencies
    assert state.latency_for("image") == 3.0


async def test_the_control_api_sets_image_and_vision_latency_apart(aisim: RunningAiSim) -> None:
    answer = await aisim.post("/sim/latency", {"image": 3.0, "vision": 1.0})

    assert answer == {"seconds": 0.0, "image": 3.0, "vision": 1.0}
    assert (aisim.state.latency_for("image"), aisim.state.latency_for("vision")) == (3.0, 1.0)
    await aisim.post("/sim/latency", {"seconds": 0.25})
    assert (aisim.state.latency_for("image"), aisim.state.latency_for("vision")) == (0.25, 0.25)
