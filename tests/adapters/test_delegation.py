from __future__ import annotations

import pytest

from planfold.adapters.delegation import Delegated, Writable


class _Part:
    def __init__(self) -> None:
        self.count = 1
        self.label = "part"


class _Whole:
    count = Writable[int]("part")
    label = Delegated[str]("part", doc="The part's label.")
    title = Delegated[str]("part", "label")

    def __init__(self) -> None:
        self.part = _Part()


def test_a_delegated_attribute_reads_the_parts_attribute_at_the_time_of_the_read() -> None:
    whole = _Whole()
    whole.part.label = "renamed"
    assert (whole.label, whole.title) == ("renamed", "renamed")


def test_assigning_a_delegated_attribute_raises_and_leaves_the_part_as_it_was() -> None:
    whole = _Whole()
    with pytest.raises(AttributeError, match="'label' of a _Whole cannot be set"):
        whole.label = "other"  # type: ignore[assignment]
    assert whole.part.label == "part"


def test_assigning_a_writable_attribute_sets_the_parts_attribute() -> None:
    whole = _Whole()
    whole.count = 5
    assert whole.part.count == 5


def test_a_delegated_attribute_read_on_the_class_is_the_attribute_with_its_doc() -> None:
    assert isinstance(_Whole.label, Delegated) and _Whole.label.__doc__ == "The part's label."
