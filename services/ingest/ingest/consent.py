"""The consent screen the kiosk shows before the camera opens (issue 11 "Consent on the kiosk").

The guest is told, in the kiosk's language, which AI provider receives the photo, that the sticker set can
be opened by anyone with its link, how long the photo and the stickers are kept and how to delete them
(``/delete`` in the bot). "Agree" is recorded on the session (``sessions.consent_version``,
``consent_language``, ``consented_at``); without it no photo is accepted (:class:`ConsentRequired`).

Everything the guest reads comes from the catalogues (:mod:`shared.texts`, ``msgctxt "consent"``: one
text per language, one point per line, placeholders ``{providers}``, ``{selfie_hours}``,
``{sticker_days}``, ``{session_days}``; the providers' titles) and :class:`ingest.settings.IngestSettings`:
the venue's own English and Russian texts ``CONSENT_TEXT_EN``/``CONSENT_TEXT_RU`` in place of the
catalogues' (default: the catalogues'), the provider chain
``PRIMARY_AI_PROVIDER``/``FALLBACK_AI_PROVIDER`` (the worker's settings, same names and defaults) and the
retention numbers ``SELFIE_RETENTION_HOURS``/``STICKER_RETENTION_DAYS``/``SESSION_RETENTION_DAYS``
(:class:`shared.settings.RetentionSettings`; after the last, ``/delete`` finds nothing: the guest is told).
The version recorded is ``<CONSENT_VERSION>-<digest>``: the venue's own label plus the first 8 hex digits of
the SHA-256 of the rendered texts, so a changed text (or number, or provider) is a new version even if the
label stays.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from shared.ai_providers import PROVIDERS, provider_chain
from shared.errors import UploadRejected
from shared.texts import CATALOGUES, LANGUAGES

if TYPE_CHECKING:
    from ingest.settings import IngestSettings

#: The kiosk's languages: every catalogue's (:data:`shared.texts.LANGUAGES`); English is the fallback.
KioskLanguage = str
KIOSK_LANGUAGES: Final[tuple[KioskLanguage, ...]] = LANGUAGES
PLACEHOLDERS: Final = frozenset({"providers", "selfie_hours", "sticker_days", "session_days"})

_CONSENT: Final = CATALOGUES.table("consent")
#: Between two providers' titles in ``{providers}``, per language (`` or ``).
_OR: Final = _CONSENT["or"]
#: The consent text of each language (:mod:`shared.texts`, ``msgctxt "consent"``, ``msgid "consent"``).
DEFAULT_TEXTS: Final = _CONSENT["consent"]

_LINE_BREAK = re.compile(r"\r?\n|\\n")


class ConsentRequired(UploadRejected):
    """The session has no recorded "Agree": HTTP 403 ``consent_required``, raised before any of the upload
    is read."""

    def __init__(self) -> None:
        super().__init__(
            "consent_required", "The guest has not agreed to the consent screen yet.", status=403
        )


def check_template(template: str) -> str:
    """``template`` unchanged when it is a consent text: at least one point, only the known placeholders,
    each written bare (``{providers}``): a format spec or conversion (``{providers:d}``, ``{x!r}``,
    ``{selfie_hours:>9999999}``) could fail at every request or blow the screen up, so it is refused here,
    at start-up.

    Raises:
        ValueError: empty, an unknown ``{name}``, a placeholder with a format spec or conversion, or a
            stray brace (a literal brace is written ``{{``/``}}``).
    """
    try:
        parsed = [
            (name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)
        ]
    except ValueError as exc:
        raise ValueError(f"not a text template ({exc}); write a literal brace as {{{{ or }}}}") from exc
    fields = {name for name, _, _ in parsed if name is not None}
    dressed = sorted({name for name, spec, conversion in parsed if name is not None and (spec or conversion)})
    if dressed:
        raise ValueError(f"placeholder(s) {dressed} must be written bare, e.g. {{providers}}")
    unknown = fields - PLACEHOLDERS
    if unknown:
        raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; known: {sorted(PLACEHOLDERS)}")
    if not split_points(template):
        raise ValueError("a consent text needs at least one line")
    return template


def split_points(text: str) -> list[str]:
    """The points of a consent text: one per line (a newline, or the two characters ``\\n`` where the env
    format has no multi-line values), blank lines dropped."""
    return [line.strip() for line in _LINE_BREAK.split(text) if line.strip()]


def providers_phrase(providers: tuple[str, ...], language: str) -> str:
    """``Google Gemini or OpenAI`` in ``language``: each provider's guest-facing title
    (:data:`shared.ai_providers.PROVIDERS`; ``local`` sends the photo to no outside service)."""
    return _OR[language].join(PROVIDERS[p].titles[language] for p in providers)


@dataclass(frozen=True)
class ConsentText:
    """The consent screen as shown: ``points`` per kiosk language, and the facts they were made from."""

    version: str
    points: Mapping[KioskLanguage, tuple[str, ...]]
    providers: tuple[str, ...]
    selfie_retention_hours: int
    sticker_retention_days: int


def consent_text(settings: IngestSettings) -> ConsentText:
    """The consent screen for these settings, with its version (module docstring)."""
    # the worker's chain (a provider it skips for want of a key is still named: ingest holds no AI keys,
    # DESIGN.md §12)
    chain = provider_chain(settings.primary_ai_provider, settings.fallback_ai_provider)
    providers = tuple(p.name for p in chain)
    templates = {**DEFAULT_TEXTS, "en": settings.consent_text_en, "ru": settings.consent_text_ru}
    points = {
        language: tuple(
            line.format(
                providers=providers_phrase(providers, language),
                selfie_hours=settings.selfie_retention_hours,
                sticker_days=settings.sticker_retention_days,
                session_days=settings.session_retention_days,
            )
            for line in split_points(templates[language])
        )
        for language in KIOSK_LANGUAGES
    }
    digest = hashlib.sha256(json.dumps(points, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
    return ConsentText(
        version=f"{settings.consent_version}-{digest[:8]}",
        points=points,
        providers=providers,
        selfie_retention_hours=settings.selfie_retention_hours,
        sticker_retention_days=settings.sticker_retention_days,
    )
