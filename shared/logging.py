"""Structured JSON logs (structlog) with the spec's markers as event names (``RATE_LIMIT``, ...).

Secrets never reach a log line: :func:`redact` strips bot tokens and API keys from any text, and the
``httpx`` logger (which prints request URLs holding the bot token, REFERENCE.md) is held at WARNING.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_PATTERNS = (
    re.compile(r"(?<!\d)\d{6,12}:[A-Za-z0-9_-]{30,}"),  # Telegram bot token, also inside .../bot<token>/
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"),  # OpenAI key
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}\b"),  # Google API key
    re.compile(r"(?i)(api[_-]?key|token|secret|password)=([^&\s]+)"),
)


def redact(text: str) -> str:
    """``text`` with bot tokens, API keys and ``key=value`` secrets replaced by ``[REDACTED]``."""
    for pattern in _SECRET_PATTERNS:
        if pattern.groups == 2:
            text = pattern.sub(lambda m: f"{m.group(1)}=[REDACTED]", text)
        else:
            text = pattern.sub("[REDACTED]", text)
    return text


def _redact_processor(
    _logger: Any, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = redact(value)
    return event_dict


def configure_logging(*, service: str, level: str = "INFO", fmt: str = "json") -> None:
    """Route structlog and stdlib logging to stderr, one JSON object per line (``fmt='console'``: dev)."""
    renderer: Any = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared_processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact_processor,
    ]
    structlog.configure(
        processors=[*shared_processors, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(service=service)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _redact_processor,
                renderer,
            ],
            foreign_pre_chain=shared_processors,
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "telegram.ext.ExtBot", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
