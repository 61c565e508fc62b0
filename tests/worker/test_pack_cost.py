"""A pack's cost in ``api_usage`` equals the usage the provider reported times a sourced price: a pack
rendered by the real pipeline through the real SDKs against the AI simulator, its calls recorded in
Postgres; every row's tokens are what the simulator's answer reported (the documented token counts for the
size and the images sent, from its call log), and its ``cost_usd`` is those tokens times the model's price
in ``shared/ai_models.py``."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from shared.ai_models import CATALOGUE, TokenUsage
from shared.db.tables import api_usage
from shared.repositories import Database
from simulators.ai.usage import GEMINI_IMAGE_OUTPUT_TOKENS, GEMINI_INPUT_IMAGE_TOKENS
from tests.simulators.ai.helpers import RunningAiSim
from tests.worker.render_helpers import render
from worker.cost import DbUsageStore

pytestmark = pytest.mark.integration

TOKENS = (
    "input_text_tokens",
    "input_image_tokens",
    "output_text_tokens",
    "output_image_tokens",
    "reasoning_tokens",
)


@pytest.mark.parametrize("provider", ["gemini", "openai"])
async def test_a_packs_cost_is_the_reported_usage_times_the_sourced_price(
    aisim: RunningAiSim, db: Database, provider: str
) -> None:
    result = await render(aisim, "consistency", providers=(provider,), store=DbUsageStore(db))
    assert result.error is None and result.pack is not None
    async with db.transaction() as repos:
        rows = [r._mapping for r in await repos.conn.execute(sa.select(api_usage).order_by(api_usage.c.id))]
    sent = [c for c in await aisim.calls() if c["outcome"] == "ok"]
    assert len(rows) == len(sent) >= 5  # anchor, sheets, passport, verify, pack QA
    for row, call in zip(rows, sent, strict=True):
        assert (row["provider"], row["call_type"], row["outcome"]) == (provider, call["call"], "ok")
        assert all(row[name] is not None for name in TOKENS), dict(row)
        usage = TokenUsage(**{name: row[name] for name in TOKENS})
        price = CATALOGUE[(row["provider"], row["model"], row["call_type"])].price
        assert price is not None and price.source.startswith("https://")
        assert float(row["cost_usd"]) == pytest.approx(price.cost(usage), abs=1e-6)
        if provider == "gemini":  # the Gemini 3 counts the simulator reports for what was sent
            assert usage.input_image_tokens == GEMINI_INPUT_IMAGE_TOKENS * call["images"]
            if row["call_type"] == "image":
                assert usage.output_image_tokens == GEMINI_IMAGE_OUTPUT_TOKENS[call["size"]]
        else:  # images bill image output tokens; the Responses answers report reasoning
            assert (usage.output_image_tokens > 0) == (row["call_type"] == "image")
            assert (usage.reasoning_tokens > 0) == (row["call_type"] == "vision")
    pack_usd = sum(float(row["cost_usd"]) for row in rows)
    assert result.ctx.ledger.attempt_spend == pytest.approx(pack_usd, abs=1e-5)
