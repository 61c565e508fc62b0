"""Model lifecycle while the worker runs: an admin alert, at most once a day per model, while a configured
model is within :data:`shared.ai_models.SHUTDOWN_WARNING` (30 days) of its announced shutdown. (A model
past its shutdown, not in the catalogue or unpriced never gets this far: the worker refuses to start on it,
:meth:`worker.settings.PipelineSettings._model_usable`.)"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

import structlog

from shared.ai_models import lookup, shutdown_notice
from worker.cost import Alerter

__all__ = ["ALERT_COOLDOWN", "warn_model_shutdowns"]

log = structlog.get_logger(__name__)

#: One alert per model per this long (the admin-alert mechanism's cooldown, :mod:`shared.alerts`).
ALERT_COOLDOWN = timedelta(hours=24)


async def warn_model_shutdowns(
    models: Iterable[tuple[str, str, str, str]], alert: Alerter | None, *, today: date
) -> list[str]:
    """Alert on each configured model (``(setting, provider, model, role)``) that shuts down within 30 days
    of ``today``. Returns the settings alerted on now (an alert inside its cooldown is not sent again)."""
    warned = []
    for setting, provider, name, role in models:
        info = lookup(provider, name, role)
        text = None if info is None else shutdown_notice(setting, info, today=today)
        if text is None:
            continue
        log.warning("MODEL_SHUTDOWN_SOON", setting=setting, model=name, shutdown=str(info and info.shutdown))
        if alert is not None and await alert(f"model_shutdown:{setting}:{name}", text, ALERT_COOLDOWN):
            warned.append(setting)
    return warned
