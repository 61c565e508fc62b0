"""The exception tree drawn in ``shared/errors.py``'s docstring is the tree the code has.

Every module of ``shared`` and the five services is imported; each exception class defined there must
descend from ``StickerBoothError`` and stand in the drawing under its real parent, and each class in the
drawing must exist. The simulators are left out: their errors are Telegram's and the providers' wire
answers, not ours.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from types import ModuleType

import pytest

from shared import errors

pytestmark = pytest.mark.unit

OUR_PACKAGES = ("shared", "ingest", "worker", "delivery", "leads", "telegram_gateway")
_NODE = re.compile(r"^(?P<indent>[ │]*)(?:[├└]── )?(?P<name>[A-Z]\w+)\b")


def drawn_tree(doc: str) -> dict[str, str | None]:
    """``{class name: parent name}`` from the box drawing (the root's parent is ``None``)."""
    body = doc.split("    StickerBoothError\n", 1)[1].split("\n\n", 1)[0]
    parents: dict[str, str | None] = {"StickerBoothError": None}
    stack = ["StickerBoothError"]
    for line in body.splitlines():
        line = line[4:]
        match = _NODE.match(line)
        if match is None or "──" not in line:
            continue  # a continuation line of a description
        depth = len(match["indent"]) // 4 + 1
        del stack[depth:]
        parents[match["name"]] = stack[-1]
        stack.append(match["name"])
    return parents


def our_modules() -> list[ModuleType]:
    modules = []
    for package_name in OUR_PACKAGES:
        package = importlib.import_module(package_name)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
            if info.name.endswith("__main__") or ".migrations" in info.name:
                continue
            modules.append(importlib.import_module(info.name))
    return modules


def defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in our_modules():
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                assert name not in found or found[name] is value, f"two exception classes named {name}"
                found[name] = value
    return found


def test_the_drawing_parses() -> None:
    tree = drawn_tree(errors.__doc__ or "")
    assert tree["DatabaseUnavailable"] == "UnavailableError"
    assert tree["ContentRefused"] == "PermanentJobError"
    assert tree["ConfigError"] == "StickerBoothError"


def tree_problems(classes: dict[str, type[BaseException]], tree: dict[str, str | None]) -> list[str]:
    """Each way ``classes`` and the drawing ``tree`` disagree, one line each (empty: they agree)."""
    problems = []
    for name, cls in sorted(classes.items()):
        if not issubclass(cls, errors.StickerBoothError):
            problems.append(f"{cls.__module__}.{name} is outside StickerBoothError")
            continue
        if name not in tree:
            problems.append(f"{cls.__module__}.{name} is not in the drawing")
            continue
        ours = [base.__name__ for base in cls.__bases__ if issubclass(base, errors.StickerBoothError)]
        expected = tree[name]
        if expected is not None and ours != [expected]:
            problems.append(f"{name}: drawn under {expected}, defined under {ours}")
    problems += [f"{name} is drawn but no such class is defined" for name in tree if name not in classes]
    return problems


def test_every_exception_we_define_is_in_the_drawing_under_its_parent() -> None:
    assert tree_problems(defined_exceptions(), drawn_tree(errors.__doc__ or "")) == []


def test_the_check_sees_a_class_outside_the_root_one_under_the_wrong_parent_and_a_missing_one() -> None:
    """The checker itself, fed each bad case: it must name all three."""
    tree = drawn_tree(errors.__doc__ or "")
    classes = defined_exceptions()
    stray = type("Stray", (Exception,), {"__module__": "shared.stray"})
    misplaced = type("NoFaceError", (errors.RetryableJobError,), {"__module__": "shared.errors"})
    bad = {
        **{n: c for n, c in classes.items() if n != "ConfigError"},
        "Stray": stray,
        "NoFaceError": misplaced,
    }
    found = tree_problems(bad, tree)
    assert "shared.stray.Stray is outside StickerBoothError" in found
    assert "NoFaceError: drawn under PermanentJobError, defined under ['RetryableJobError']" in found
    assert "ConfigError is drawn but no such class is defined" in found
    assert len(found) == 3


@pytest.mark.parametrize("error_class", list(errors.ErrorClass))
def test_provider_unavailable_takes_exactly_the_pausing_classes(error_class: errors.ErrorClass) -> None:
    """DESIGN.md §5: credit, auth, config, outage and budget pause the queue; nothing else does."""
    pausing = {"credit", "auth", "config", "outage", "budget"}
    if error_class in pausing:
        paused = errors.ProviderUnavailable("x", error_class=error_class, alert="a")
        assert (paused.error_class, paused.alert) == (error_class, "a")
    else:
        with pytest.raises(ValueError, match="does not pause the queue"):
            errors.ProviderUnavailable("x", error_class=error_class)
