"""How the typed reader reads a union: a union of records picks its member by
the tag (a ``Literal`` field with values of each member's own), checking the
fields every member shares before the tag; any other union picks its member
by the value's JSON type; and the unions that cannot be read exactly are
refused when their shape is made. Each refusal is pinned with its path, code
and message, and the value as far as it could be read."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

import pytest

from planfold.kernel.errors import PayloadError, Problem
from planfold.kernel.payload import Code, Count, NonEmpty, Opaque, read_as, read_problems, shape_of

# --------------------------------------------------------------------------
# A union of records, told apart by its tag

#: Shared by both members (the same shape and code), and no tag: every
#: member has the one value 1.
Version: TypeAlias = Annotated[Literal[1], Code("unknown-version")]


@dataclass(frozen=True, slots=True)
class Put:
    version: Version
    id: NonEmpty
    operation: Annotated[Literal["put"], Code("unknown-operation")]
    value: int


@dataclass(frozen=True, slots=True)
class Drop:
    version: Version
    id: NonEmpty
    operation: Annotated[Literal["drop", "erase"], Code("unknown-operation")]
    reason: str


Change: TypeAlias = Put | Drop

#: What the reader leaves where it could read no member: the first member,
#: each field at its empty value.
EMPTY_PUT = Put(1, "", "put", 0)


def missing(*names: str) -> tuple[Problem, ...]:
    """The problems of required payload fields ``names`` left out, in order."""
    return tuple(Problem("missing-field", f"payload.{name}", "required field is missing") for name in names)


def test_a_union_of_records_reads_each_member_by_its_tag() -> None:
    assert read_as(Change, {"version": 1, "id": "g", "operation": "put", "value": 3}) == Put(1, "g", "put", 3)
    assert read_as(Change, {"version": 1, "id": "g", "operation": "erase", "reason": "old"}) == Drop(
        1, "g", "erase", "old"
    )


def test_an_unknown_tag_is_refused_with_the_tag_fields_code_and_every_known_tag() -> None:
    # The member's own fields (here none) are not asked for: without a member
    # nothing says which they are.
    value, problems = read_problems(Change, {"version": 1, "id": "g", "operation": "move"})
    assert problems == (
        Problem("unknown-operation", "payload.operation", "must be one of ['put', 'drop', 'erase'], got 'move'"),
    )
    assert value == EMPTY_PUT
    with pytest.raises(PayloadError) as caught:
        read_as(Change, {"version": 1, "id": "g", "operation": "move"}, where="change")
    assert caught.value.code == "unknown-operation"
    assert str(caught.value) == "change.operation: must be one of ['put', 'drop', 'erase'], got 'move'"


@pytest.mark.parametrize("tag", [None, True, 1, ["put"], {"put": 1}])
def test_a_tag_that_is_not_a_known_string_is_refused_as_an_unknown_tag(tag: object) -> None:
    _, problems = read_problems(Change, {"version": 1, "id": "g", "operation": tag, "value": 3})
    assert problems == (
        Problem("unknown-operation", "payload.operation", f"must be one of ['put', 'drop', 'erase'], got {tag!r}"),
    )


def test_a_missing_shared_field_or_tag_is_all_that_is_reported() -> None:
    # The shared fields first, in the first member's order, then the tag.
    value, problems = read_problems(Change, {"value": "three", "extra": 1})
    assert problems == missing("version", "id", "operation")
    assert value == EMPTY_PUT


def test_a_known_tag_reports_every_problem_its_member_finds() -> None:
    value, problems = read_problems(Change, {"operation": "put", "value": "three"})
    assert problems == (*missing("version", "id"), Problem("wrong-type", "payload.value", "must be an integer"))
    assert value == EMPTY_PUT


def test_shared_fields_are_read_before_the_tag_so_their_own_code_wins() -> None:
    payload = {"version": 2, "id": "", "operation": "move"}
    value, problems = read_problems(Change, payload)
    assert problems == (
        Problem("unknown-version", "payload.version", "must be one of [1], got 2"),
        Problem("invalid-text", "payload.id", "must not be empty"),
        Problem("unknown-operation", "payload.operation", "must be one of ['put', 'drop', 'erase'], got 'move'"),
    )
    assert value == EMPTY_PUT
    with pytest.raises(PayloadError) as caught:
        read_as(Change, payload)
    assert caught.value.code == "unknown-version"


def test_a_value_that_is_not_an_object_is_refused_as_a_whole() -> None:
    value, problems = read_problems(Change, ["put"])
    assert problems == (Problem("wrong-type", "payload", "must be an object"),)
    assert value == EMPTY_PUT


def test_a_nullable_union_of_records_reads_null_and_names_it_when_refusing() -> None:
    assert read_as(Change | None, None) is None
    assert read_problems(Change | None, 3) == (None, (Problem("wrong-type", "payload", "must be an object or null"),))
    assert read_problems(Change | None, {"version": 1, "id": "g", "operation": "move"})[1] == (
        Problem("unknown-operation", "payload.operation", "must be one of ['put', 'drop', 'erase'], got 'move'"),
    )


def test_a_mapping_that_is_not_a_dict_is_read_as_the_dict_would_be() -> None:
    payload = types.MappingProxyType({"version": 1, "id": "g", "operation": "drop", "reason": "done"})
    assert read_as(Change, payload) == Drop(1, "g", "drop", "done")


@dataclass(frozen=True, slots=True)
class One:
    schema: Literal[1]
    count: int


@dataclass(frozen=True, slots=True)
class Two:
    schema: Literal[2]
    name: str


def test_a_union_tagged_by_integers_reads_each_member_and_refuses_a_boolean_tag() -> None:
    assert read_as(One | Two, {"schema": 2, "name": "n"}) == Two(2, "n")
    assert read_as(One | Two, {"schema": 1, "count": 4}) == One(1, 4)
    # true is not the integer 1, though Python's True == 1.
    _, problems = read_problems(One | Two, {"schema": True, "count": 4})
    assert problems == (Problem("unknown-value", "payload.schema", "must be one of [1, 2], got True"),)


@dataclass(frozen=True, slots=True)
class Left:
    side: Annotated[Literal["left"], Code("unknown-side")]


@dataclass(frozen=True, slots=True)
class Right:
    side: Literal["right"]


def test_an_unknown_tag_carries_the_code_the_first_member_gives_its_tag() -> None:
    assert read_problems(Left | Right, {"side": "up"})[1] == (
        Problem("unknown-side", "payload.side", "must be one of ['left', 'right'], got 'up'"),
    )


@dataclass(frozen=True, slots=True)
class KindFirst:
    kind: Literal["a"]
    mode: Literal["x"]


@dataclass(frozen=True, slots=True)
class ModeFirst:
    mode: Literal["y"]
    kind: Literal["b"]


def test_the_tag_is_the_first_member_s_first_field_that_can_be_one() -> None:
    assert read_problems(KindFirst | ModeFirst, {"kind": "c", "mode": "x"})[1] == (
        Problem("unknown-value", "payload.kind", "must be one of ['a', 'b'], got 'c'"),
    )


@dataclass(frozen=True, slots=True)
class IdFirst:
    id: str
    at: int
    kind: Literal["i"]


@dataclass(frozen=True, slots=True)
class AtFirst:
    at: int
    id: str
    kind: Literal["t"]


def test_shared_fields_are_checked_in_the_first_member_s_order() -> None:
    assert read_problems(IdFirst | AtFirst, {})[1] == missing("id", "at", "kind")


@dataclass(frozen=True, slots=True)
class Untagged:
    x: int


@dataclass(frozen=True, slots=True)
class Overlapping:
    kind: Literal["a", "b"]


@dataclass(frozen=True, slots=True)
class Other:
    kind: Literal["b"]


@pytest.mark.parametrize("union", [Untagged | Drop, Overlapping | Other])
def test_a_union_of_records_without_a_tag_has_no_shape(union: object) -> None:
    with pytest.raises(TypeError) as caught:
        shape_of(union)
    assert str(caught.value) == "a union of records needs a tag: a Literal field with values of each member's own"


#: Any JSON number that is not an integer, kept as it is.
Fraction: TypeAlias = Annotated[object, Opaque(lambda value: isinstance(value, float), float)]


@pytest.mark.parametrize(
    ("union", "others"),
    [
        (int | Count, "['int', 'int']"),
        (Put | Fraction, "['json']"),
        (Put | str | None | Count | Fraction, "['str', 'null', 'int', 'json']"),
    ],
)
def test_a_union_whose_members_share_a_json_type_has_no_shape(union: object, others: str) -> None:
    with pytest.raises(TypeError) as caught:
        shape_of(union)
    assert str(caught.value) == f"a union's members must differ in JSON type: {others}"


@pytest.mark.parametrize(
    ("union", "others"), [(str | Put | Drop, "['str']"), (Put | int | Drop | None, "['int', 'null']")]
)
def test_a_union_of_records_with_a_member_that_is_neither_a_record_nor_null_has_no_shape(
    union: object, others: str
) -> None:
    with pytest.raises(TypeError) as caught:
        shape_of(union)
    assert str(caught.value) == f"a union of records may add only null: {others}"


def test_a_union_of_records_may_add_null() -> None:
    shape = shape_of(Put | Drop | None)
    assert shape.kind == "union" and shape.tag == "operation" and shape.nullable


# --------------------------------------------------------------------------
# A union without a tag, told apart by the value's JSON type


@pytest.mark.parametrize(
    ("union", "value", "read"),
    [
        (bool | str, True, True),
        (bool | str, "yes", "yes"),
        (tuple[int, ...] | int, [1, 2], (1, 2)),
        (tuple[int, ...] | int, 5, 5),
        (tuple[int, ...] | str, "ab", "ab"),
        (str | Fraction, 1.5, 1.5),
        (str | Fraction, "half", "half"),
        (int | str | None, None, None),
        (int | str | None, 3, 3),
        (int | str | None, "x", "x"),
        (Put | str, {"version": 1, "id": "g", "operation": "put", "value": 3}, Put(1, "g", "put", 3)),
        (Put | str, "put", "put"),
    ],
)
def test_a_union_without_a_tag_reads_the_member_of_the_value_s_json_type(
    union: object, value: object, read: object
) -> None:
    assert read_as(union, value) == read
    assert type(read_as(union, value)) is type(read)


@pytest.mark.parametrize(
    ("union", "value", "expected", "empty"),
    [
        (int | str, 1.5, "an integer or a string", 0),
        (int | str, True, "an integer or a string", 0),
        (tuple[int, ...] | bool | None, "x", "a list or a boolean or null", None),
        (tuple[int, ...] | bool | None, 5, "a list or a boolean or null", None),
        (Put | str, 3, "an object or a string", EMPTY_PUT),
    ],
)
def test_a_value_of_no_member_s_json_type_is_refused_naming_every_type_it_may_be(
    union: object, value: object, expected: str, empty: object
) -> None:
    assert read_problems(union, value) == (empty, (Problem("wrong-type", "payload", f"must be {expected}"),))
