"""``text_contains`` aims a fault at the calls whose ``text`` contains a string (issue 19: only the guest's
link message loses its answer, not the other texts to the same chat)."""

from __future__ import annotations

from simulators.telegram.faults import FaultQueue, FaultSpec


def test_a_fault_with_text_contains_is_met_only_by_a_call_with_that_text() -> None:
    queue = FaultQueue()
    queue.add(FaultSpec(method="sendMessage", kind="drop", chat_id=7, text_contains="t.me/addstickers/"))
    assert queue.take("sendmessage", 7, text="Generating your stickers…") is None
    assert queue.take("sendmessage", 8, text="https://t.me/addstickers/x_by_bot") is None  # another chat
    met = queue.take("sendmessage", 7, text="Ready! https://t.me/addstickers/x_by_bot")
    assert met is not None and met.kind == "drop"
    assert queue.pending() == []


def test_a_fault_without_text_contains_is_met_by_any_text() -> None:
    queue = FaultQueue()
    queue.add(FaultSpec(method="sendMessage", chat_id=7))
    assert queue.take("sendmessage", 7, text="anything") is not None
