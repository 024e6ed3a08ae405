"""The strict payload readers every fold reads through: their refusals name
the payload or the key at fault; and the makers that build records from
values already of their types."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from planfold.kernel.payload import (
    NonBlankWhen,
    PresentWhen,
    Unreadable,
    maker,
    record_maker,
    shape_of,
)

# --------------------------------------------------------------------------
# Makers: records made from values already of their types, without __init__


@dataclass(frozen=True, slots=True, init=False)
class Unbuildable:
    """A record whose ``__init__`` refuses to run: only a maker can make it."""

    number: int
    name: str

    def __init__(self, *args: object) -> None:
        raise AssertionError("a maker never calls __init__")


@dataclass(frozen=True, slots=True)
class Checked:
    """A record whose ``__post_init__`` refuses a negative number."""

    number: int

    def __post_init__(self) -> None:
        if self.number < 0:
            raise ValueError("negative")


@dataclass(frozen=True)
class Unslotted:
    number: int
    name: str


@dataclass(frozen=True, slots=True)
class Base:
    number: int


@dataclass(frozen=True, slots=True)
class Derived(Base):
    name: str


def test_a_maker_makes_a_frozen_slotted_record_without_calling_its_init() -> None:
    made = maker(Unbuildable)(3, "three")
    assert type(made) is Unbuildable
    assert (made.number, made.name) == (3, "three")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.number = 4  # type: ignore[misc]


def test_a_maker_runs_post_init_as_the_class_does() -> None:
    assert maker(Checked)(2) == Checked(2)
    with pytest.raises(ValueError, match="negative"):
        maker(Checked)(-1)


@pytest.mark.parametrize(("cls", "values"), [(Unslotted, (1, "one")), (Derived, (1, "one"))])
def test_a_record_whose_layout_has_no_shadow_is_made_by_calling_it(cls: type, values: tuple[object, ...]) -> None:
    # Instances with a __dict__, or with slots from a base class too, cannot
    # become instances of the class by assigning __class__: they are called.
    made = maker(cls)(*values)
    assert type(made) is cls and made == cls(*values)


def test_a_maker_is_made_once_per_class() -> None:
    assert maker(Checked) is maker(Checked)


@dataclass(frozen=True, slots=True)
class TwoRules:
    """A record with two cross-field rules."""

    __rules__: ClassVar = (
        PresentWhen("reason", "state", "stuck", "a reason exactly when stuck"),
        NonBlankWhen("note", "state", "done", "missing-note", "a note when done"),
    )

    state: Literal["stuck", "done", "open"]
    reason: str | None
    note: str


@pytest.mark.parametrize(
    ("values", "broken"),
    [
        (("open", None, ""), None),
        (("stuck", "why", ""), None),
        (("done", None, "notes"), None),
        (("open", "why", ""), ((("reason",), "rule-broken", "a reason exactly when stuck"),)),
        (("done", None, " "), ((("note",), "missing-note", "a note when done"),)),
        (
            ("stuck", None, ""),
            ((("reason",), "rule-broken", "a reason exactly when stuck"),),
        ),
    ],
)
def test_a_record_maker_checks_every_rule_of_the_record(
    values: tuple[object, ...], broken: tuple[tuple[tuple[str], str, str], ...] | None
) -> None:
    make = record_maker(shape_of(TwoRules))
    if broken is None:
        assert make(*values) == TwoRules(*values)  # type: ignore[arg-type]
        return
    with pytest.raises(Unreadable) as caught:
        make(*values)
    assert tuple(caught.value.problems) == broken
    assert caught.value.partial == TwoRules(*values)  # type: ignore[arg-type]


def test_a_record_maker_is_made_once_per_shape() -> None:
    assert record_maker(shape_of(TwoRules)) is record_maker(shape_of(TwoRules))
