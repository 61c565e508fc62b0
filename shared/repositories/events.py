"""Events, their stations and their uploaded outfits (migration 0014, :mod:`shared.events`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import event_outfits, event_stations, events, sessions
from shared.events import DEFAULT_EVENT, Event, EventOutfit, StationEvent, station_event
from shared.repositories._rows import from_row

__all__ = ["EventRepository"]


def _event(row: Any, stations: Sequence[str]) -> Event:
    m = row._mapping
    return Event(
        id=m["id"],
        name=m["name"],
        venue=m["venue"],
        time_zone=m["time_zone"],
        starts_at=m["starts_at"],
        ends_at=m["ends_at"],
        stations=tuple(sorted(stations)),
        outfits=tuple(m["outfits"]),
        branding=dict(m["branding"]),
        set_title=dict(m["set_title"]),
        texts={lang: dict(t) for lang, t in m["texts"].items()},
        languages=tuple(m["languages"]),
        daily_budget_usd=None if m["daily_budget_usd"] is None else float(m["daily_budget_usd"]),
        total_budget_usd=None if m["total_budget_usd"] is None else float(m["total_budget_usd"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def _outfit(row: Any) -> EventOutfit:
    return from_row(EventOutfit, row)


_OUTFIT_COLUMNS = (
    event_outfits.c.id,
    event_outfits.c.event_id,
    event_outfits.c.title,
    event_outfits.c.prompt,
    event_outfits.c.based_on,
    event_outfits.c.thumbnail.isnot(None).label("has_thumbnail"),
)


#: The advisory lock key every admin write of events holds for its transaction (:meth:`lock_for_write`).
EVENTS_LOCK = 0x5E7E_0023


class EventRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def lock_for_write(self) -> None:
        """Take the events' transaction-scoped advisory lock (``pg_advisory_xact_lock``): writers that
        check the station rule before saving take it first, so two concurrent writes cannot together
        give a station two overlapping events. Released at commit or rollback."""
        await self.conn.execute(sa.select(sa.func.pg_advisory_xact_lock(EVENTS_LOCK)))

    async def has_sessions(self, event_id: str, *, outfit_id: str | None = None) -> bool:
        """Whether any guest session belongs to the event (``sessions.event_id``); with ``outfit_id``, any
        that chose that outfit."""
        where = sessions.c.event_id == event_id
        if outfit_id is not None:
            where &= sessions.c.outfit_id == outfit_id
        found = await self.conn.execute(sa.select(sa.exists().where(where)))
        return bool(found.scalar())

    async def _with_stations(self, rows: Sequence[Any]) -> list[Event]:
        ids = [row.id for row in rows]
        stations: dict[str, list[str]] = {i: [] for i in ids}
        if ids:
            listed = await self.conn.execute(
                sa.select(event_stations.c.event_id, event_stations.c.station).where(
                    event_stations.c.event_id.in_(ids)
                )
            )
            for event_id, station in listed:
                stations[event_id].append(station)
        return [_event(row, stations[row.id]) for row in rows]

    async def get(self, event_id: str, *, for_update: bool = False) -> Event | None:
        query = sa.select(events).where(events.c.id == event_id)
        if for_update:
            query = query.with_for_update()
        row = (await self.conn.execute(query)).one_or_none()
        return (await self._with_stations([row]))[0] if row else None

    async def all(self) -> list[Event]:
        """Every event: the default first, then by start (open starts first), then id."""
        rows = (
            await self.conn.execute(
                sa.select(events).order_by(
                    (events.c.id != DEFAULT_EVENT), events.c.starts_at.asc().nullsfirst(), events.c.id
                )
            )
        ).all()
        return await self._with_stations(rows)

    async def for_station(self, station: str, at: datetime) -> StationEvent:
        """The event ``station`` serves at ``at`` (aware), by :func:`shared.events.station_event`; a
        station's name is matched without case (``HALL3-A`` is ``hall3-a``)."""
        listed = sa.select(event_stations.c.event_id).where(
            sa.func.lower(event_stations.c.station) == station.lower()
        )
        rows = (await self.conn.execute(sa.select(events).where(events.c.id.in_(listed)))).all()
        listing = await self._with_stations(rows)
        default = None if listing else await self.get(DEFAULT_EVENT)
        return station_event(station, at, listing, default)

    async def save(self, event: Event) -> Event:
        """Insert or replace ``event`` and its station list (its uploaded outfits are kept).

        Raises:
            sqlalchemy.exc.IntegrityError: a value breaks a CHECK of migration 0014 (callers validate
                first: :mod:`shared.events`).
        """
        values = event.columns()
        stmt = insert(events).values(id=event.id, **values)
        await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[events.c.id], set_={**values, "updated_at": sa.func.now()}
            )
        )
        await self.conn.execute(sa.delete(event_stations).where(event_stations.c.event_id == event.id))
        if event.stations:
            await self.conn.execute(
                sa.insert(event_stations),
                [{"event_id": event.id, "station": s} for s in sorted(set(event.stations))],
            )
        saved = await self.get(event.id)
        assert saved is not None
        return saved

    async def lock_row(self, event_id: str) -> bool:
        """Lock the event's row until the transaction ends (``FOR UPDATE``); ``False`` when there is no
        such event. A session being opened at its station holds the row's key-share lock (its foreign
        key) until it commits, so after this a :meth:`has_sessions` sees every session the event will
        have had, and one opened later waits and then finds the event gone."""
        found = await self.conn.execute(
            sa.select(events.c.id).where(events.c.id == event_id).with_for_update()
        )
        return found.one_or_none() is not None

    async def delete(self, event_id: str) -> bool:
        """Delete the event, its stations and its uploaded outfits; ``False`` when there is no such event.

        Raises:
            sqlalchemy.exc.IntegrityError: sessions belong to it (``sessions.event_id``).
        """
        gone = await self.conn.execute(
            sa.delete(events).where(events.c.id == event_id).returning(events.c.id)
        )
        return gone.one_or_none() is not None

    async def outfit(self, outfit_id: str) -> EventOutfit | None:
        """The uploaded outfit with this id, or ``None``."""
        row = (
            await self.conn.execute(sa.select(*_OUTFIT_COLUMNS).where(event_outfits.c.id == outfit_id))
        ).one_or_none()
        return _outfit(row) if row else None

    async def outfits(self, event_id: str) -> list[EventOutfit]:
        """The event's uploaded outfits, by id."""
        rows = await self.conn.execute(
            sa.select(*_OUTFIT_COLUMNS)
            .where(event_outfits.c.event_id == event_id)
            .order_by(event_outfits.c.id)
        )
        return [_outfit(row) for row in rows]

    async def save_outfit(self, outfit: EventOutfit, thumbnail: bytes | None = None) -> EventOutfit:
        """Insert or replace an uploaded outfit (a ``thumbnail`` of ``None`` keeps the stored one)."""
        values: dict[str, Any] = {
            "event_id": outfit.event_id,
            "title": outfit.title,
            "prompt": outfit.prompt,
            "based_on": outfit.based_on,
        }
        if thumbnail is not None:
            values["thumbnail"] = thumbnail
        stmt = insert(event_outfits).values(id=outfit.id, **values)
        await self.conn.execute(stmt.on_conflict_do_update(index_elements=[event_outfits.c.id], set_=values))
        saved = await self.outfit(outfit.id)
        assert saved is not None
        return saved

    async def outfit_thumbnail(self, outfit_id: str) -> bytes | None:
        """The uploaded outfit's kiosk thumbnail (PNG bytes, at most 512 KB and 1024 × 1024 px as the admin
        API checks them), or ``None``: no such outfit, or none uploaded."""
        return (
            await self.conn.execute(
                sa.select(event_outfits.c.thumbnail).where(event_outfits.c.id == outfit_id)
            )
        ).scalar()

    async def delete_outfit(self, outfit_id: str) -> bool:
        """Delete the uploaded outfit; ``False`` when there is no such outfit. Sessions and jobs that chose
        it keep its id (a job not yet rendered then fails as an unknown outfit)."""
        gone = await self.conn.execute(
            sa.delete(event_outfits).where(event_outfits.c.id == outfit_id).returning(event_outfits.c.id)
        )
        return gone.one_or_none() is not None
