"""The lead state machines on real Postgres (issue 21 item 3): a lead's status
(:data:`shared.repositories.leads.ALLOWED`) and a card's or notice's publication
(:data:`shared.repositories.lead_posts.ALLOWED`). An undeclared edge is refused before any SQL and changes
nothing, as the job's are; the buttons' edges (``leads.cards``) are all declared; the enums are the values
the schema's CHECKs admit."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from leads.cards import ALLOWED_FROM, REOPENED, STAFF_ALLOWED_FROM, TARGET_STATUS
from shared.db.tables import LEAD_CARD_STATES, LEAD_NOTICE_STATES, LEAD_STATUSES, leads
from shared.domain import LeadStatus, PostState
from shared.errors import UndeclaredTransition
from shared.repositories import Database
from shared.repositories import lead_posts as posts_repo
from shared.repositories import leads as leads_repo
from shared.repositories.lead_posts import CARD
from tests.shared.lead_helpers import lead

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


async def new_lead(db: Database) -> int:
    return await lead(db, uuid.uuid4().hex, f"{uuid.uuid4().hex}@example.com")


def test_the_enums_are_the_stored_values() -> None:
    assert LEAD_STATUSES == ("new", "taken", "done", "spam")
    assert LEAD_CARD_STATES == ("pending", "sending", "unsure", "checking", "posted")
    assert (*LEAD_CARD_STATES, "failed") == LEAD_NOTICE_STATES
    assert set(leads_repo.ALLOWED) == set(LeadStatus) and set(posts_repo.ALLOWED) == set(PostState)


def test_every_button_moves_along_a_declared_edge() -> None:
    for table in (ALLOWED_FROM, STAFF_ALLOWED_FROM):
        for action, sources in table.items():
            targets = [TARGET_STATUS[action]] if action in TARGET_STATUS else list(REOPENED.values())
            for source, target in itertools.product(sources, targets):
                assert target in leads_repo.ALLOWED[source], f"{action}: {source} → {target}"


UNDECLARED_STATUS = [
    (a, b) for a, b in itertools.product(LeadStatus, LeadStatus) if b not in leads_repo.ALLOWED[a]
]


@pytest.mark.parametrize(
    ("source", "target"), UNDECLARED_STATUS, ids=[f"{a}->{b}" for a, b in UNDECLARED_STATUS]
)
async def test_an_undeclared_status_edge_is_refused_and_changes_nothing(
    db: Database, source: LeadStatus, target: LeadStatus
) -> None:
    lead_id = await new_lead(db)
    async with db.transaction() as repos:
        await repos.conn.execute(sa.update(leads).where(leads.c.id == lead_id).values(status=source.value))
        before = await repos.leads.get(lead_id)
        with pytest.raises(UndeclaredTransition, match=f"{source} → {target}"):
            await repos.leads.set_status(
                lead_id, status=target, allowed_from=[source], by_id=1, by_name="Olga", now=NOW
            )
        assert await repos.leads.get(lead_id) == before


async def test_a_reopen_from_a_status_that_cannot_reopen_is_refused(db: Database) -> None:
    """Reopen goes to ``new`` or ``taken``: from ``new`` the ``new → new`` edge is not declared."""
    lead_id = await new_lead(db)
    async with db.transaction() as repos:
        with pytest.raises(UndeclaredTransition, match="new → new"):
            await repos.leads.set_status(
                lead_id, status=None, allowed_from=[LeadStatus.NEW], by_id=1, by_name="Olga", now=NOW
            )
        with pytest.raises(UndeclaredTransition):
            await repos.leads.set_status(
                lead_id, status=LeadStatus.TAKEN, allowed_from=[], by_id=1, by_name="Olga", now=NOW
            )


async def test_a_declared_status_edge_moves_the_lead(db: Database) -> None:
    lead_id = await new_lead(db)
    async with db.transaction() as repos:
        taken = await repos.leads.set_status(
            lead_id,
            status=LeadStatus.TAKEN,
            allowed_from=[LeadStatus.NEW],
            by_id=1,
            by_name="Olga",
            now=NOW,
            take=True,
        )
    assert taken is not None and taken.status == "taken"


UNDECLARED_POST = [
    (a, b) for a, b in itertools.product(PostState, PostState) if b not in posts_repo.ALLOWED[a]
]


@pytest.mark.parametrize(("source", "target"), UNDECLARED_POST, ids=[f"{a}->{b}" for a, b in UNDECLARED_POST])
async def test_an_undeclared_post_edge_is_refused_and_changes_nothing(
    db: Database, source: PostState, target: PostState
) -> None:
    lead_id = await new_lead(db)
    async with db.transaction() as repos:
        before = await repos.lead_posts.get(CARD, lead_id)
        with pytest.raises(UndeclaredTransition, match=f"{source} → {target}"):
            await repos.lead_posts._move(
                CARD, lead_id, states=[source], to=[target], values={"post_state": target.value}
            )
        assert await repos.lead_posts.get(CARD, lead_id) == before


async def test_a_card_never_gives_up_but_a_notice_may(db: Database) -> None:
    """``send_failed`` with ``give_up_after`` declares ``sending → failed`` (a notice's); the card's
    failures go back to ``pending``."""
    lead_id = await new_lead(db)
    async with db.transaction() as repos:
        post = await repos.lead_posts.get(CARD, lead_id)
        assert post is not None and post.state == PostState.PENDING
        sending = await repos.lead_posts.start_send(post, now=NOW, probe_after=0)
        assert sending is not None and sending.state == PostState.SENDING
        back = await repos.lead_posts.send_failed(
            CARD, lead_id, sending.attempts, next_attempt_at=NOW, error="x"
        )
        assert back is not None and back.state == PostState.PENDING
