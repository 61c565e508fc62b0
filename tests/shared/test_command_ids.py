"""The one command-id grammar: every builder's id parses back to what it names, and nothing else parses."""

from __future__ import annotations

import fnmatch
import uuid
from datetime import UTC, date, datetime

import pytest

from shared import command_ids as ids
from shared.command_ids import (
    AlertId,
    CallbackAnswerId,
    CommandId,
    DigestId,
    EraseSetId,
    JobCommandId,
    PostCommandId,
    PostEditId,
    UnlinkNoticeId,
    UpdateReplyId,
)

pytestmark = pytest.mark.unit

JOB = uuid.UUID("0b7f5a8e-2c1d-4e5f-8a9b-0c1d2e3f4a5b")
RUN = datetime(2025, 3, 1, 12, 0, 5, 900_000, tzinfo=UTC)
EPOCH = int(RUN.timestamp())


@pytest.mark.parametrize(
    ("command_id", "parsed"),
    [
        (ids.generating_notice(JOB), JobCommandId(JOB, "generating")),
        (ids.unavailable_notice(JOB, RUN), JobCommandId(JOB, "unavailable", EPOCH)),
        (ids.delay_notice(JOB, RUN), JobCommandId(JOB, "still_working", EPOCH)),
        (ids.failure_text(JOB, RUN), JobCommandId(JOB, "failure_text", EPOCH)),
        (ids.create_set(JOB), JobCommandId(JOB, "create_set", 1)),
        (ids.create_set(JOB, 3), JobCommandId(JOB, "create_set", 3)),
        (ids.poll(JOB, 4), JobCommandId(JOB, "poll", 4)),
        (ids.resend_link(JOB, 2), JobCommandId(JOB, "resend_link", 2)),
        (ids.link(JOB), JobCommandId(JOB, "link", 1)),
        (ids.link(JOB, 2), JobCommandId(JOB, "link", 2)),
        (ids.preview(JOB), JobCommandId(JOB, "preview")),
        (ids.send_post("card", 12, 3), PostCommandId("card", 12, "send", 3)),
        (ids.send_post("notice", 4, 1), PostCommandId("notice", 4, "send", 1)),
        (ids.find_post("card", 12, 2), PostCommandId("card", 12, "find", 2)),
        (ids.find_post("notice", 4, 5), PostCommandId("notice", 4, "find", 5)),
        (ids.lead_card_edit(12, 7), PostEditId("card", 12, 7)),
        (ids.repeat_notice_seen(4), PostEditId("notice", 4)),
        (ids.callback_answer("4382:abc"), CallbackAnswerId("4382:abc")),
        (ids.update_reply(991), UpdateReplyId(991)),
        (ids.unlink_notice(JOB, RUN), UnlinkNoticeId(JOB, int(RUN.timestamp()) * 1_000_000 + 900_000)),
        (ids.digest(date(2025, 3, 1)), DigestId(date(2025, 3, 1))),
        (ids.alert("job_failed", 17), AlertId(ids.alert("job_failed", 17).split(":")[1], 17)),
        (ids.erase_set("sbx_by_bot"), EraseSetId(ids.erase_set("sbx_by_bot").split(":")[1])),
        (ids.erase_set("sbx_by_bot", 2), EraseSetId(ids.erase_set("sbx_by_bot").split(":")[1], 2)),
    ],
)
def test_every_built_id_parses_to_what_it_names(command_id: str, parsed: CommandId) -> None:
    assert ids.parse(command_id) == parsed


def test_the_ids_keep_the_formats_already_stored() -> None:
    assert ids.generating_notice(JOB) == f"job:{JOB}:generating"
    assert ids.failure_text(JOB, RUN) == f"job:{JOB}:failure_text:{EPOCH}"
    assert ids.create_set(JOB) == f"job:{JOB}:create_set" and ids.link(JOB, 3) == f"job:{JOB}:link:3"
    assert (
        ids.send_post("notice", 4, 1) == "repeat:4:notice:1" and ids.lead_card_edit(1, 2) == "lead:1:edit:2"
    )
    assert ids.callback_answer("q") == "cbq:q" and ids.update_reply(5) == "update:5"
    assert ids.digest(date(2025, 3, 1)) == "digest:2025-03-01"
    assert ids.alert("k", 9).startswith("alert:") and len(ids.alert("k", 9).split(":")[1]) == 16
    name = f"sb{JOB.hex}_by_stickerbooth_bot"
    assert ids.erase_set(name).startswith(ids.ERASE_SET_PREFIX) and JOB.hex not in ids.erase_set(name)


def test_a_resend_is_the_same_intent_counted_once_more() -> None:
    again = ids.resend(ids.resend(ids.failure_text(JOB, RUN)))
    assert again.endswith(":again:again")
    assert ids.parse(again) == JobCommandId(JOB, "failure_text", EPOCH, resends=2)
    assert ids.parse(ids.resend(ids.lead_card_edit(3, 1))) == PostEditId("card", 3, 1, resends=1)


@pytest.mark.parametrize(
    "command_id",
    [
        "job:big:create_set",  # not a job uuid
        f"job:{JOB}:link:1",  # the first attempt has no number
        f"job:{JOB}:poll",
        f"job:{JOB}:preview:2",  # one preview per job, no attempts
        f"job:{JOB}:exploded:1",
        f"job:{JOB}:failure_text",
        "lead:12:card",
        "lead:4:notice:1",
        "repeat:4:card:1",
        "repeat:4:edit:1",
        "alert:x:1",
        "erase_set:abc",
        f"erase_set:{'0' * 16}:1",
        "digest:2025-13-01",
        "update:abc",
        "cmd:hello",
        "",
    ],
)
def test_anything_else_does_not_parse(command_id: str) -> None:
    assert ids.parse(command_id) is None


def test_like_patterns_match_the_built_ids() -> None:
    def like(pattern: str, value: str) -> bool:  # SQL LIKE's ``%``; the ids hold no ``*?[``
        return fnmatch.fnmatchcase(value, pattern.replace("%", "*"))

    for step, built in [
        ("generating", ids.generating_notice(JOB)),
        ("still_working", ids.delay_notice(JOB, RUN)),
        ("failure_text", ids.resend(ids.failure_text(JOB, RUN))),
        ("unavailable", ids.unavailable_notice(JOB, RUN)),
    ]:
        assert like(ids.job_pattern(step), built)  # type: ignore[arg-type]
    assert like(ids.POST_EDIT_PATTERNS[0], ids.lead_card_edit(1, 2))
    assert like(ids.POST_EDIT_PATTERNS[1], ids.resend(ids.repeat_notice_seen(4)))
    assert like(ids.ERASE_SET_PATTERN, ids.resend(ids.erase_set("s", 3)))
    assert like(ids.ADMIN_PATTERNS[0], ids.alert("k", 1)) and like(
        ids.ADMIN_PATTERNS[1], ids.digest(date.today())
    )
