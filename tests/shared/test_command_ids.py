"""Command ids: the builders keep the formats already stored, and migration 0010's backfill gives every
stored id shape (a ``:again`` resend of the old flood handling included) the subject its producer now
writes, so no consumer needs an id parser for old rows (issue 21)."""

from __future__ import annotations

import importlib
import uuid
from datetime import UTC, date, datetime

import pytest
import sqlalchemy as sa

from shared import command_ids as ids
from shared.db.tables import tg_commands
from shared.repositories import Database
from shared.subjects import (
    AdminText,
    CallbackAnswer,
    JobStep,
    PostBlanking,
    PostStep,
    SetDeletion,
    Subject,
    UnlinkNotice,
    UpdateReply,
    load_subject,
)

JOB = uuid.UUID("0b7f5a8e-2c1d-4e5f-8a9b-0c1d2e3f4a5b")
RUN = datetime(2025, 3, 1, 12, 0, 5, 900_000, tzinfo=UTC)
EPOCH = int(RUN.timestamp())
SET = f"sb{JOB.hex}_by_stickerbooth_bot"
migration = importlib.import_module("shared.migrations.versions.0010_command_subjects")

#: Each builder's id with the subject its producer writes today.
BUILT: list[tuple[str, Subject]] = [
    (ids.generating_notice(JOB), JobStep(id=JOB, step="generating")),
    (ids.unavailable_notice(JOB, RUN), JobStep(id=JOB, step="unavailable", n=EPOCH)),
    (ids.delay_notice(JOB, RUN), JobStep(id=JOB, step="still_working", n=EPOCH)),
    (ids.failure_text(JOB, RUN), JobStep(id=JOB, step="failure_text", n=EPOCH)),
    (ids.create_set(JOB), JobStep(id=JOB, step="create_set")),
    (ids.poll(JOB, 4), JobStep(id=JOB, step="poll", n=4)),
    (ids.link(JOB), JobStep(id=JOB, step="link", n=1)),
    (ids.link(JOB, 2), JobStep(id=JOB, step="link", n=2)),
    (ids.resend_link(JOB, 2), JobStep(id=JOB, step="resend_link", n=2)),
    (ids.preview(JOB), JobStep(id=JOB, step="preview")),
    (ids.find_link(JOB, 2), JobStep(id=JOB, step="find_link", n=2)),
    (ids.send_post("card", 12, 3), PostStep(id=12, post="card", op="send", n=3)),
    (ids.send_post("notice", 4, 1), PostStep(id=4, post="notice", op="send", n=1)),
    (ids.find_post("card", 12, 2), PostStep(id=12, post="card", op="find", n=2)),
    (ids.find_post("notice", 4, 5), PostStep(id=4, post="notice", op="find", n=5)),
    (ids.lead_card_edit(12, 7), PostStep(id=12, post="card", op="edit", n=7)),
    (ids.repeat_notice_seen(4), PostStep(id=4, post="notice", op="seen")),
    (ids.callback_answer("4382:abc"), CallbackAnswer(id="4382:abc")),
    (ids.update_reply(991), UpdateReply(id=991)),
    (ids.unlink_notice(JOB, RUN), UnlinkNotice(id=JOB, bound_us=ids.bound_us(RUN))),
    (ids.digest(date(2025, 3, 1)), AdminText(id="2025-03-01", what="digest")),
    (ids.alert("job_failed", 17), AdminText(id=ids.name_hash("job_failed"), what="alert")),
    (ids.erase_set(SET), SetDeletion(id=ids.name_hash(SET))),
    (ids.erase_set(SET, 2), SetDeletion(id=ids.name_hash(SET), n=2)),
    (ids.erase_post(-100123, 45), PostBlanking(id="-100123:45")),
]


@pytest.mark.unit
def test_the_ids_keep_the_formats_already_stored() -> None:
    assert ids.generating_notice(JOB) == f"job:{JOB}:generating"
    assert ids.failure_text(JOB, RUN) == f"job:{JOB}:failure_text:{EPOCH}"
    assert ids.create_set(JOB) == f"job:{JOB}:create_set" and ids.link(JOB, 3) == f"job:{JOB}:link:3"
    assert ids.link(JOB) == f"job:{JOB}:link"  # the first attempt has no number
    assert (
        ids.send_post("notice", 4, 1) == "repeat:4:notice:1" and ids.lead_card_edit(1, 2) == "lead:1:edit:2"
    )
    assert ids.callback_answer("q") == "cbq:q" and ids.update_reply(5) == "update:5"
    assert ids.digest(date(2025, 3, 1)) == "digest:2025-03-01"  # the default event's, as before events
    assert ids.digest(date(2025, 3, 1), "tokyo") == "digest:tokyo:2025-03-01"  # another event's (issue 23)
    assert ids.alert("k", 9) == f"alert:{ids.name_hash('k')}:9" and len(ids.name_hash("k")) == 16
    assert ids.erase_set(SET) == f"erase_set:{ids.name_hash(SET)}" and JOB.hex not in ids.erase_set(SET)
    assert ids.unlink_notice(JOB, RUN) == f"session:{JOB}:unlinked:{EPOCH * 1_000_000 + 900_000}"


@pytest.mark.unit
def test_a_stored_subject_loads_back_and_an_unknown_one_is_none() -> None:
    for _, subject in BUILT:
        assert load_subject(subject.model_dump(mode="json", exclude_none=True)) == subject
    assert load_subject(None) is None
    assert load_subject({"kind": "job", "id": "not a uuid", "step": "link"}) is None
    assert load_subject({"kind": "something_new", "id": "1"}) is None


@pytest.mark.integration
async def test_the_backfill_gives_every_stored_id_shape_the_subject_its_producer_writes(db: Database) -> None:
    built = [*BUILT, (ids.failure_text(JOB, RUN) + ":again:again", BUILT[3][1])]  # an old resend
    built += [(ids.lead_card_edit(3, 1) + ":again", PostStep(id=3, post="card", op="edit", n=1))]
    built += [(f"job:{JOB}:create_set:2", JobStep(id=JOB, step="create_set", n=2))]  # an old 2nd attempt
    nothing = ["job:big:create_set", f"job:{JOB}:exploded:1", "lead:12:card", "cmd:hello", "alert:x:1"]
    async with db.transaction() as repos:
        for command_id in [c for c, _ in built] + nothing:
            await repos.tg_commands.add(command_id, method="send_message", params={}, reply_to=None)
        for statement in migration.backfill_statements():
            await repos.conn.execute(statement)
        rows = await repos.conn.execute(sa.select(tg_commands.c.command_id, tg_commands.c.subject))
        stored = {r.command_id: r.subject for r in rows}
    for command_id, subject in built:
        assert load_subject(stored[command_id]) == subject, command_id
    assert all(stored[c] is None for c in nothing)  # routed nowhere, logged
