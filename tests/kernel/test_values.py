"""Every value the kernel exports is a plain frozen, slotted dataclass of the
standard library: what ``dataclasses``, msgspec and cattrs see is what the
kernel declares, with no machinery of its own in between."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import pkgutil
import re
from collections.abc import Collection
from pathlib import Path

import pytest

from planfold import kernel

#: Exported classes that are not values, and why: errors are exceptions,
#: choices are enums, ``Protocol``s describe what a caller passes in, and a
#: collection type (``IdSet``) is a container with its own structure.
NOT_VALUES: tuple[type, ...] = (BaseException, enum.Enum, Collection)


def exported_classes() -> list[type]:
    """Every class a kernel module lists in its ``__all__`` and defines itself."""
    found = []
    for info in pkgutil.walk_packages(kernel.__path__, "planfold.kernel."):
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and value.__module__ == module.__name__:
                found.append(value)
    return found


def value_classes() -> list[type]:
    return [
        cls
        for cls in exported_classes()
        if not issubclass(cls, NOT_VALUES) and not getattr(cls, "_is_protocol", False)
    ]


def test_every_value_class_the_kernel_exports_is_a_frozen_slotted_standard_library_dataclass() -> None:
    values = value_classes()
    assert len(values) >= 50, [cls.__name__ for cls in values]
    assert [cls.__qualname__ for cls in values if not dataclasses.is_dataclass(cls)] == []
    assert [cls.__qualname__ for cls in values if "__slots__" not in vars(cls)] == []
    assert [cls.__qualname__ for cls in values if "__setattr__" not in vars(cls)] == []


def test_the_classes_left_out_are_errors_enums_protocols_and_collections_only() -> None:
    left_out = {cls.__qualname__ for cls in exported_classes()} - {cls.__qualname__ for cls in value_classes()}
    others = [
        cls.__qualname__
        for cls in exported_classes()
        if cls.__qualname__ in left_out
        and not issubclass(cls, BaseException | enum.Enum)
    ]
    assert sorted(others) == ["IdSet", "PlanFacts"]


def test_a_kernel_value_refuses_assignment_as_a_frozen_dataclass_does() -> None:
    problem = kernel.Problem("bad-value", "payload.x", "x is wrong")
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.code = "other"  # type: ignore[misc]
    assert dataclasses.replace(problem, code="other") == kernel.Problem("other", "payload.x", "x is wrong")
    assert problem.code == "bad-value"


#: ``dataclasses._FIELD`` or ``from dataclasses import _FIELDS``.
PRIVATE = re.compile(r"\bdataclasses\s*(\.|import\s+[\w\s,(]*\b)_")


def test_the_private_name_pattern_finds_an_attribute_and_an_import_and_nothing_public() -> None:
    assert PRIVATE.search("x = dataclasses._FIELD")
    assert PRIVATE.search("from dataclasses import fields, _FIELDS")
    assert not PRIVATE.search("from dataclasses import dataclass, field, replace")
    assert not PRIVATE.search("dataclasses.fields(cls)")


def test_no_module_of_the_house_reads_a_private_name_of_dataclasses() -> None:
    root = Path(kernel.__file__).resolve().parent.parent
    found = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("kernel", "adapters")
        for path in sorted((root / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert found == []
