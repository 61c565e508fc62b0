from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from shared.messages import JobQueued, LeadCreated, TelegramErrorInfo, TelegramResult, decode, encode

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "message",
    [
        JobQueued(job_id=uuid.uuid4()),
        LeadCreated(lead_id=7),
        TelegramResult(
            command_id="job:x:link",
            ok=False,
            error=TelegramErrorInfo(error_code=429, description="x", retry_after=3),
        ),
    ],
)
def test_messages_round_trip_through_stream_fields(message: object) -> None:
    assert decode(encode(message)) == message  # type: ignore[arg-type]


def test_bytes_fields_from_a_raw_client_decode_too() -> None:
    job_id = uuid.uuid4()
    fields = {b"data": encode(JobQueued(job_id=job_id))["data"].encode()}
    assert decode(fields) == JobQueued(job_id=job_id)


def test_unknown_type_and_newer_version_are_rejected() -> None:
    with pytest.raises(ValidationError):
        decode({"data": '{"type": "job.exploded", "v": 1, "job_id": "x"}'})
    with pytest.raises(ValidationError):
        decode({"data": f'{{"type": "job.queued", "v": 2, "job_id": "{uuid.uuid4()}"}}'})
