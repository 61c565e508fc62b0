"""Domain objects from result rows: a dataclass's fields filled from the row's columns of the same names."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def from_row(cls: type[T], row: Any, **given: Any) -> T:
    """A ``cls`` whose fields are the row's columns of the same names, except the fields in ``given``,
    which take those values instead (a column to convert, or a value the row does not hold).

    ``row`` is a SQLAlchemy ``Row`` (read through its ``_mapping``); columns the dataclass has no field
    for are ignored.

    Raises:
        KeyError: a field neither in ``given`` nor a column of the row.
    """
    m = row._mapping
    return cls(**{f.name: m[f.name] for f in fields(cls) if f.name not in given}, **given)
