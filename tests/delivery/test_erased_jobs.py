"""A guest erased (issue 11) while their pack was on its way: delivery asks for no set, and a set whose
creation finished after the erasure is deleted again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from delivery.packs import PackDelivery, sticker_set_name
from shared import command_ids
from shared.erasure import erase_user
from shared.messages import TelegramResult
from shared.repositories import Database
from shared.subjects import JobStep
from tests.delivery.delivery_helpers import job_with_stickers

pytestmark = pytest.mark.integration


async def test_an_erased_rendered_job_gets_no_set(delivery: PackDelivery, db: Database) -> None:
    job = await job_with_stickers(db, status="rendered")
    async with db.transaction() as repos:
        await erase_user(repos, 8)
    await delivery.request_set(job.id)
    async with db.transaction() as repos:
        assert await repos.tg_commands.for_subject("job", job.id, step="create_set") == []


async def test_a_set_created_after_the_erasure_is_deleted_again(delivery: PackDelivery, db: Database) -> None:
    job = await job_with_stickers(db, status="rendered")
    await delivery.request_set(job.id)  # the gateway is creating the set…
    async with db.transaction() as repos:
        erased = await erase_user(repos, 8)  # …when the guest erases everything
    name = sticker_set_name(job.id, "stickerbooth_bot")
    assert erased.rows.sticker_sets == (name,)  # the set it asked for, though not created yet
    async with db.transaction() as repos:  # the deletion ran first and found nothing: done
        await repos.tg_commands.start_sending(erased.commands[0], stale_after=timedelta(0))
        await repos.tg_commands.finish(erased.commands[0], ok=True, result=True)
    created = TelegramResult(
        command_id=command_ids.create_set(job.id),
        ok=True,
        result={"name": name},
        subject=JobStep(id=job.id, step="create_set"),
    )
    await delivery.handle_result(created)
    async with db.transaction() as repos:
        assert await repos.jobs.get(job.id) is None
        again = await repos.tg_commands.get(command_ids.erase_set(name, 2))
    assert again is not None and again.method == "delete_sticker_set" and again.params["name"] == name
