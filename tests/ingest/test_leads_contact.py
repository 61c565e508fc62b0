"""Contacts a landing visitor may leave, and their normalised identity (repeats are found by it)."""

from __future__ import annotations

import pytest

from ingest.contact import Contact, parse_contact

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("+7 (999) 000-00-00", Contact("phone", "tel:+79990000000")),
        ("8 999 000 00 00", Contact("phone", "tel:+79990000000")),
        ("+44 20 7946 0958", Contact("phone", "tel:+442079460958")),
        ("Ann.K@Example.COM", Contact("email", "email:ann.k@example.com")),
        ("@Ann_K", Contact("telegram", "tg:ann_k")),
        ("https://t.me/ann_k", Contact("telegram", "tg:ann_k")),
        ("t.me/ann_k/", Contact("telegram", "tg:ann_k")),
    ],
)
def test_phones_emails_and_usernames_are_recognised_and_normalised(raw: str, expected: Contact) -> None:
    assert parse_contact(raw) == expected


@pytest.mark.parametrize(
    "raw", ["call me", "+7 12", "1" * 16, "ann@", "@ab", "@1abcde", "ann@example", "t.me/"]
)
def test_anything_else_is_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="phone number"):
        parse_contact(raw)
