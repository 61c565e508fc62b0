"""Worker settings: slots and attempts (:class:`WorkerSettings`) and the generation pipeline
(:class:`PipelineSettings`, names and defaults of spec/002)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from shared.ai_models import Role, model_problem
from shared.settings import BudgetSettings, CaptureSettings, ProviderName, ServiceSettings

#: The model settings: field → (env name, provider, role).
MODEL_SETTINGS: dict[str, tuple[str, ProviderName, Role]] = {
    "gemini_image_model": ("GEMINI_IMAGE_MODEL", "gemini", "image"),
    "openai_image_model": ("OPENAI_IMAGE_MODEL", "openai", "image"),
    "gemini_vision_model": ("GEMINI_VISION_MODEL", "gemini", "vision"),
    "openai_vision_model": ("OPENAI_VISION_MODEL", "openai", "vision"),
}


class PipelineSettings(BudgetSettings):
    """The generation pipeline (spec/002; every number of its tables is a setting with its name and default).

    ``SHEET_LAYOUT``: ``3x4`` (3 sheets of 4), ``2x6`` or ``1x12`` (all 12 on one 4:3 sheet, issue 12).

    - Variant: ``STICKER_RENDER_MODE`` (``figure``/``composite``; empty is a start-up error; the default is
      ``figure``, what venues ran with, spec/002 ".env.example" column), ``LIKENESS_MODE`` (``classic`` or
      ``hybrid``; wins over) ``CONSISTENCY_MODE`` (1), ``FIGURE_FALLBACK_ENABLED`` (1),
      ``FIGURE_SHEET_ASPECT`` (``2:3``: sheets of 6 are 2 columns × 3 rows; ``3:2``: 3 × 2),
      ``ART_STYLE`` (``cute_cartoon``), ``QA_IDENTITY_ENABLED`` (true), ``LIKENESS_QA_ENABLED`` (true: a
      sticker without a face, or with a face over the likeness bound, is a regeneration candidate like a
      QA outlier; false: scored and stored only; issue 20).
    - Attempts: ``FIGURE_SHEET_ATTEMPTS`` (3), ``SHEET_ATTEMPTS`` (2, composite head sheets),
      ``CARD_ATTEMPTS`` (2, appearance passport), ``ANCHOR_RETRIES`` (1, only on a verified mismatch),
      ``CONSISTENCY_MAX_REGEN`` (4 single-figure regenerations per pack; missing figures are outside it).
    - Time: ``AI_TIMEOUT_SEC`` (180 s) + ``AI_TIMEOUT_GUARD_SEC`` (15 s outer guard) per image call,
      ``VISION_TIMEOUT_SEC`` (45 s) + ``VISION_TIMEOUT_GUARD_SEC`` (10 s), ``ANCHOR_VERIFY_TIMEOUT_SEC``
      (10 s), ``EDGE_REGEN_TIMEOUT_SEC`` (35 s, edge or flat cut regenerations),
      ``CONSISTENCY_REGEN_BUDGET_SEC`` (20 s, QA outlier regenerations).
    - Parallelism: ``AI_MAX_PARALLEL_IMAGES`` (9 image requests per process, all slots together),
      ``CUT_MAX_PARALLEL`` (sheets keyed and cut at once per process; spec/002 gives no number: 2, the
      cores of a small worker).
    - Fleet budget (issue 12, per provider account, shared by every replica through Redis; 0 = no fleet
      limit): ``AI_FLEET_MAX_IMAGES_IN_FLIGHT`` (9: spec/002's one-process number, so scaling out adds no
      provider pressure until an operator raises it to what the account allows), ``AI_FLEET_IMAGES_PER_MIN``
      (0), ``AI_FLEET_MAX_VISION_IN_FLIGHT`` (0), ``AI_FLEET_VISION_PER_MIN`` (0), ``AI_FLEET_LEASE_SEC``
      (30: a crashed replica's slots come back after at most this), ``AI_FLEET_WAIT_MAX_SEC`` (120: the
      longest wait for a slot before the call moves to the next provider as ``rate_limit``).
    - Colour (CIELAB ΔE2000): ``ANCHOR_SKIN_STRENGTH`` (0.6), ``CONSISTENCY_SKIN_DE_MAX`` (6),
      ``CONSISTENCY_SKIN_STRENGTH`` (0.85), ``SKIN_NORM_MAX_DE`` (4, the largest shift ever applied),
      ``HYBRID_SELFIE_PULL`` (how far the hybrid targets move from the pack's median toward the selfie,
      0..1; spec/002 gives no number: 0.5).
    - Providers: ``PRIMARY_AI_PROVIDER`` (gemini), ``FALLBACK_AI_PROVIDER`` (openai; empty = none),
      ``GEMINI_API_KEY``/``OPENAI_API_KEY`` (secrets; a provider without one is skipped),
      ``AI_BASE_URL_GEMINI``/``AI_BASE_URL_OPENAI`` (the simulator in dev and tests), models
      ``GEMINI_IMAGE_MODEL`` (gemini-3.1-flash-image), ``OPENAI_IMAGE_MODEL`` (gpt-image-2),
      ``GEMINI_VISION_MODEL`` (gemini-3.5-flash-lite), ``OPENAI_VISION_MODEL`` (gpt-6.1-terra: OpenAI's
      named replacement of gpt-5-mini, which shuts down on 2026-12-11). Each must be in
      ``shared/ai_models.py``, priced and not past its shutdown (a start-up error naming the setting).
    - 429 backoff: ``RATE_LIMIT_DELAYS`` (5,15,30 s), ``RATE_LIMIT_MAX_HINT_SEC`` (a ``retryDelay`` hint
      is honoured up to 60 s), ``RATE_LIMIT_JITTER`` (up to +20 %); ``FALLBACK_ALERT_COOLDOWN_SEC``
      (600: one fallback alert per provider pair per 10 minutes).
    - Cost: ``JOB_MAX_COST_USD`` (1.5), ``IMAGE_RPD_WARN_FRAC`` (0.7); ``DAILY_BUDGET_USD`` (unset = no
      daily budget) and ``IMAGE_RPD_LIMIT`` (1000 image requests per Pacific-time day) are
      :class:`shared.settings.BudgetSettings`, shared with ingest and the gateway.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    sheet_layout: Literal["3x4", "2x6", "1x12"] = Field("3x4", validation_alias="SHEET_LAYOUT")
    sticker_render_mode: Literal["figure", "composite"] = Field(
        "figure", validation_alias="STICKER_RENDER_MODE"
    )

    # variant (spec/002 "Which path runs")
    likeness_mode: Literal["", "classic", "hybrid"] = Field("", validation_alias="LIKENESS_MODE")
    consistency_mode: bool = Field(True, validation_alias="CONSISTENCY_MODE")
    figure_fallback_enabled: bool = Field(True, validation_alias="FIGURE_FALLBACK_ENABLED")
    figure_sheet_aspect: Literal["2:3", "3:2"] = Field("2:3", validation_alias="FIGURE_SHEET_ASPECT")
    art_style: str = Field("cute_cartoon", min_length=1, validation_alias="ART_STYLE")
    qa_identity_enabled: bool = Field(True, validation_alias="QA_IDENTITY_ENABLED")
    likeness_qa_enabled: bool = Field(True, validation_alias="LIKENESS_QA_ENABLED")
    anchor_verify: bool = Field(True, validation_alias="ANCHOR_VERIFY")

    # attempts (spec/002 "Retries, timeouts and limits")
    figure_sheet_attempts: int = Field(3, ge=1, validation_alias="FIGURE_SHEET_ATTEMPTS")
    sheet_attempts: int = Field(2, ge=1, validation_alias="SHEET_ATTEMPTS")
    card_attempts: int = Field(2, ge=1, validation_alias="CARD_ATTEMPTS")
    anchor_retries: int = Field(1, ge=0, validation_alias="ANCHOR_RETRIES")
    consistency_max_regen: int = Field(4, ge=0, validation_alias="CONSISTENCY_MAX_REGEN")

    # time (s)
    ai_timeout_sec: float = Field(180.0, gt=0, validation_alias="AI_TIMEOUT_SEC")
    ai_timeout_guard_sec: float = Field(15.0, ge=0, validation_alias="AI_TIMEOUT_GUARD_SEC")
    vision_timeout_sec: float = Field(45.0, gt=0, validation_alias="VISION_TIMEOUT_SEC")
    vision_timeout_guard_sec: float = Field(10.0, ge=0, validation_alias="VISION_TIMEOUT_GUARD_SEC")
    anchor_verify_timeout_sec: float = Field(10.0, gt=0, validation_alias="ANCHOR_VERIFY_TIMEOUT_SEC")
    edge_regen_timeout_sec: float = Field(35.0, gt=0, validation_alias="EDGE_REGEN_TIMEOUT_SEC")
    consistency_regen_budget_sec: float = Field(20.0, gt=0, validation_alias="CONSISTENCY_REGEN_BUDGET_SEC")

    # parallelism
    ai_max_parallel_images: int = Field(9, ge=1, validation_alias="AI_MAX_PARALLEL_IMAGES")
    cut_max_parallel: int = Field(2, ge=1, validation_alias="CUT_MAX_PARALLEL")

    # fleet-wide provider budget (issue 12; worker.providers.budget), per provider account, 0 = no limit
    ai_fleet_max_images_in_flight: int = Field(9, ge=0, validation_alias="AI_FLEET_MAX_IMAGES_IN_FLIGHT")
    ai_fleet_images_per_min: int = Field(0, ge=0, validation_alias="AI_FLEET_IMAGES_PER_MIN")
    ai_fleet_max_vision_in_flight: int = Field(0, ge=0, validation_alias="AI_FLEET_MAX_VISION_IN_FLIGHT")
    ai_fleet_vision_per_min: int = Field(0, ge=0, validation_alias="AI_FLEET_VISION_PER_MIN")
    ai_fleet_lease_sec: float = Field(30.0, gt=0, validation_alias="AI_FLEET_LEASE_SEC")
    ai_fleet_wait_max_sec: float = Field(120.0, gt=0, validation_alias="AI_FLEET_WAIT_MAX_SEC")

    # colour (ΔE2000)
    anchor_skin_strength: float = Field(0.6, ge=0, le=1, validation_alias="ANCHOR_SKIN_STRENGTH")
    consistency_skin_de_max: float = Field(6.0, ge=0, validation_alias="CONSISTENCY_SKIN_DE_MAX")
    consistency_skin_strength: float = Field(0.85, ge=0, le=1, validation_alias="CONSISTENCY_SKIN_STRENGTH")
    skin_norm_max_de: float = Field(4.0, ge=0, validation_alias="SKIN_NORM_MAX_DE")
    hybrid_selfie_pull: float = Field(0.5, ge=0, le=1, validation_alias="HYBRID_SELFIE_PULL")

    # providers
    primary_ai_provider: ProviderName = Field("gemini", validation_alias="PRIMARY_AI_PROVIDER")
    fallback_ai_provider: ProviderName | Literal[""] = Field(
        "openai", validation_alias="FALLBACK_AI_PROVIDER"
    )
    gemini_api_key: SecretStr | None = Field(None, validation_alias="GEMINI_API_KEY")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    ai_base_url_gemini: str | None = Field(None, validation_alias="AI_BASE_URL_GEMINI")
    ai_base_url_openai: str | None = Field(None, validation_alias="AI_BASE_URL_OPENAI")
    gemini_image_model: str = Field("gemini-3.1-flash-image", validation_alias="GEMINI_IMAGE_MODEL")
    openai_image_model: str = Field("gpt-image-2", validation_alias="OPENAI_IMAGE_MODEL")
    gemini_vision_model: str = Field("gemini-3.5-flash-lite", validation_alias="GEMINI_VISION_MODEL")
    openai_vision_model: str = Field("gpt-6.1-terra", validation_alias="OPENAI_VISION_MODEL")
    rate_limit_delays: Annotated[tuple[float, ...], NoDecode] = Field(
        (5.0, 15.0, 30.0), validation_alias="RATE_LIMIT_DELAYS"
    )
    rate_limit_max_hint_sec: float = Field(60.0, ge=0, validation_alias="RATE_LIMIT_MAX_HINT_SEC")
    rate_limit_jitter: float = Field(0.2, ge=0, le=1, validation_alias="RATE_LIMIT_JITTER")
    fallback_alert_cooldown_sec: float = Field(600.0, ge=0, validation_alias="FALLBACK_ALERT_COOLDOWN_SEC")

    # cost
    job_max_cost_usd: float = Field(1.5, gt=0, validation_alias="JOB_MAX_COST_USD")
    image_rpd_warn_frac: float = Field(0.7, gt=0, le=1, validation_alias="IMAGE_RPD_WARN_FRAC")

    @field_validator(*MODEL_SETTINGS)
    @classmethod
    def _model_usable(cls, value: str, info: ValidationInfo) -> str:
        """A model in the catalogue, priced and not past its shutdown (:func:`shared.ai_models.check_model`,
        today in UTC)."""
        _env, provider, role = MODEL_SETTINGS[str(info.field_name)]
        problem = model_problem(provider, value, role, today=datetime.now(UTC).date())
        if problem is not None:
            raise ValueError(problem)
        return value

    def configured_models(self) -> list[tuple[str, ProviderName, str, Role]]:
        """(env name, provider, model, role) of every model setting."""
        return [
            (env, provider, str(getattr(self, name)), role)
            for name, (env, provider, role) in MODEL_SETTINGS.items()
        ]

    @field_validator("sticker_render_mode", mode="before")
    @classmethod
    def _render_mode_not_empty(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("STICKER_RENDER_MODE is empty: set figure or composite (spec/002), or unset it")
        return value

    @field_validator("likeness_mode", mode="before")
    @classmethod
    def _likeness_lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("fallback_ai_provider", "primary_ai_provider", mode="before")
    @classmethod
    def _provider_lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("rate_limit_delays", mode="before")
    @classmethod
    def _split_delays(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(float(part) for part in value.replace(" ", "").split(",") if part)
        return value

    @field_validator(
        "gemini_api_key",
        "openai_api_key",
        "ai_base_url_gemini",
        "ai_base_url_openai",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


class WorkerSettings(ServiceSettings, PipelineSettings, CaptureSettings):
    """Env of the worker.

    ``WORKER_SLOTS``: jobs rendered at once per replica. ``MAX_ATTEMPTS`` (2) and ``RETRY_DELAY_SEC`` (10 s)
    from spec/002 "Retries, timeouts and limits". ``HEARTBEAT_SEC``: how often a running job refreshes
    ``jobs.heartbeat_at``; ``HEARTBEAT_TIMEOUT_SEC``: a ``processing`` job silent that long has a dead owner
    and is recovered as ``crashed`` (DESIGN.md §5) unless its owner still holds the job's lease in Redis
    (:mod:`worker.store_outage`). ``STORE_WAIT_MAX_SEC``: how long the worker's writes during a job wait
    for Postgres to come back before the job gives up (s). ``NOTIFY_URL``: POSTed a fixed, secret-free
    text on the first queue pause of an episode (e.g. ntfy).

    The pipeline's settings are those of :class:`PipelineSettings`.
    """

    worker_slots: int = Field(2, ge=1, validation_alias="WORKER_SLOTS")
    max_attempts: int = Field(2, ge=1, validation_alias="MAX_ATTEMPTS")
    retry_delay_sec: float = Field(10.0, ge=0, validation_alias="RETRY_DELAY_SEC")
    heartbeat_sec: float = Field(5.0, gt=0, validation_alias="HEARTBEAT_SEC")
    heartbeat_timeout_sec: float = Field(30.0, gt=0, validation_alias="HEARTBEAT_TIMEOUT_SEC")
    store_wait_max_sec: float = Field(300.0, ge=0, validation_alias="STORE_WAIT_MAX_SEC")
    notify_url: str | None = Field(None, validation_alias="NOTIFY_URL")
