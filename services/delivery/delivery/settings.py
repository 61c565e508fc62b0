"""Delivery settings (numbers of spec/000 "Delivery and messages" and DESIGN.md §6)."""

from __future__ import annotations

from pydantic import AliasChoices, Field

from shared.settings import BotIdentitySettings, DownloadSettings, RetentionSettings, ServiceSettings


class DeliverySettings(ServiceSettings, BotIdentitySettings, RetentionSettings, DownloadSettings):
    """Env of the delivery service.

    ``PACK_POLL_FAST_SEC`` (2 s) for the first ``PACK_POLL_FAST_WINDOW_SEC`` (90 s) after the set was
    created, then ``PACK_POLL_SLOW_SEC`` (10 s): how often ``getStickerSet`` is asked again whether all
    stickers are in (spec/000 "Pack readiness poll"); the first check is asked the moment the set is
    created (issue 12), the schedule runs only after it found the set incomplete or its result was lost.
    ``SWEEP_INTERVAL_SEC``: how often due polls are looked for.
    ``DELAY_NOTICE_SEC`` (300 s) and ``DELIVERY_DEADLINE_SEC`` (900 s): the "still working" notice and the
    failure text, both counted from ``jobs.created_at`` (spec/000 "Deadlines persisted in the database").
    ``DIGEST_HOUR`` (9, 0–23): the local hour in each event's time zone from which that event's admin
    digest of its local yesterday is sent, once per event and local day (:mod:`shared.digest`). The
    default event's zone is UTC unless an operator changed it, so there it is the UTC hour.
    ``DIGEST_HOUR_UTC`` is its old name, still read (deprecated) when ``DIGEST_HOUR`` is not set.
    ``LINK_ATTEMPTS`` (3) sends of the link message, ``LINK_RETRY_DELAY_SEC`` (2 s) apart (spec/000).
    The retention windows (:class:`shared.settings.RetentionSettings`): delivery hosts the housekeeping
    scheduler (:mod:`shared.housekeeping`).
    """

    pack_poll_fast_sec: float = Field(2.0, gt=0, validation_alias="PACK_POLL_FAST_SEC")
    pack_poll_fast_window_sec: float = Field(90.0, ge=0, validation_alias="PACK_POLL_FAST_WINDOW_SEC")
    pack_poll_slow_sec: float = Field(10.0, gt=0, validation_alias="PACK_POLL_SLOW_SEC")
    delay_notice_sec: float = Field(300.0, gt=0, validation_alias="DELAY_NOTICE_SEC")
    delivery_deadline_sec: float = Field(900.0, gt=0, validation_alias="DELIVERY_DEADLINE_SEC")
    digest_hour: int = Field(9, ge=0, le=23, validation_alias=AliasChoices("DIGEST_HOUR", "DIGEST_HOUR_UTC"))
    link_attempts: int = Field(3, ge=1, validation_alias="LINK_ATTEMPTS")
    link_retry_delay_sec: float = Field(2.0, ge=0, validation_alias="LINK_RETRY_DELAY_SEC")
    sweep_interval_sec: float = Field(1.0, gt=0, validation_alias="SWEEP_INTERVAL_SEC")
    results_slots: int = Field(8, ge=1, validation_alias="RESULTS_SLOTS")
    delivery_slots: int = Field(4, ge=1, validation_alias="DELIVERY_SLOTS")
