"""What the typed readers of records, lists, scalars and opaque JSON values
return and refuse: every problem with its path, code and message; the value
as far as it could be read (a field wrong as a whole left at its default or
its shape's empty value, a list or object read in part keeping what was
read); the record's rules judged only on fields that were read; and values
of a subclass of ``int`` or ``str`` (as an in-process caller may pass) read
as exactly as JSON values are."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import pytest

from planfold.kernel.errors import PayloadError, Problem
from planfold.kernel.payload import (
    Code,
    NonBlank,
    Opaque,
    PresentWhen,
    Range,
    read_as,
    read_problems,
)
from planfold.kernel.tools.spec import freeze_json, is_json

# --------------------------------------------------------------------------
# Payload types of these tests (each field's shape is read once per type, so
# these types are read here first)


@dataclass(frozen=True, slots=True)
class Spot:
    """A small record nested in others."""

    x: Annotated[int, Range(0, 5)]
    name: str


@dataclass(frozen=True, slots=True)
class Blank:
    """A record of one field of every kind, none with a default."""

    number: int
    above: Annotated[int, Range(5, 9)]
    below: Annotated[int, Range(-9, -5)]
    flag: bool
    text: str
    mode: Literal["slow", "fast"]
    either: Annotated[int, Range(0, 7)] | str
    items: tuple[int, ...]
    inner: Spot
    maybe: int | None


@dataclass(frozen=True, slots=True)
class Shelf:
    """A record with a list of bounded integers."""

    label: str
    counts: tuple[Annotated[int, Range(2, 99)], ...]


@dataclass(frozen=True, slots=True)
class Parcel:
    """A record with a field whose refusals carry a code of its own."""

    version: Annotated[Literal[2], Code("unknown-version")]
    weight: Annotated[int, Range(1, 50)]
    label: NonBlank


@dataclass(frozen=True, slots=True)
class Crate:
    """A record whose fields have defaults other than their shapes' empty values."""

    size: Annotated[int, Range(1, 9)] = 4
    counts: tuple[Annotated[int, Range(0, 9)], ...] = (8,)
    spot: Spot = Spot(1, "home")


@dataclass(frozen=True, slots=True)
class Ticket:
    """A record whose reason is given exactly when it is stuck."""

    __rules__: ClassVar = (PresentWhen("reason", "state", "stuck", "a reason exactly when stuck"),)

    state: Literal["open", "stuck"]
    reason: str | None


class Level(enum.IntEnum):
    LOW = 3
    HIGH = 9


@dataclass(frozen=True, slots=True)
class Gauge:
    """A record of bounded integers."""

    level: Annotated[int, Range(3, 9)]
    total: Annotated[int, Range(0)]


@dataclass(frozen=True, slots=True)
class Ping:
    """A record with a field that is always null."""

    seq: Annotated[int, Range(0, 3)]
    nothing: None


class Name(str):
    """A string of a subclass of ``str``."""


@dataclass(frozen=True, slots=True)
class Badge:
    """A record of strings and a choice of strings."""

    title: str
    handle: NonBlank
    speed: Literal["walk", "run"]


@dataclass(frozen=True, slots=True)
class Retry:
    """A record with a choice of a string and an integer."""

    limit: Literal["auto", 0]


def _json_object(value: object) -> bool:
    return isinstance(value, Mapping) and is_json(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """A record holding any JSON object, kept frozen."""

    values: Annotated[object, Opaque(_json_object, freeze_json)]


def _problem(code: str, where: str, message: str) -> Problem:
    return Problem(code, where, message)


# --------------------------------------------------------------------------
# Records


@pytest.mark.parametrize("value", [["x", 1], "x", None, 3, 1.5])
def test_a_record_refuses_anything_but_an_object_and_reads_as_its_empty_record(value: object) -> None:
    assert read_problems(Spot, value) == (Spot(0, ""), (_problem("wrong-type", "payload", "must be an object"),))
    with pytest.raises(PayloadError) as caught:
        read_as(Spot, value)
    assert (caught.value.code, caught.value.message) == ("malformed-payload", "payload: must be an object")


def test_a_record_reports_every_problem_in_field_order_with_a_field_s_own_code() -> None:
    value = {"version": 3, "label": " ", "zeta": 1, "extra": 2}
    expected = (
        _problem("unknown-version", "body.version", "must be one of [2], got 3"),
        _problem("missing-field", "body.weight", "required field is missing"),
        _problem("invalid-text", "body.label", "must not be blank"),
        _problem("unexpected-field", "body.extra", "is not a known field"),
        _problem("unexpected-field", "body.zeta", "is not a known field"),
    )
    assert read_problems(Parcel, value, "body") == (Parcel(2, 1, ""), expected)
    with pytest.raises(PayloadError) as caught:
        read_as(Parcel, value, "body")
    assert caught.value.code == "unknown-version"
    assert caught.value.problems == expected


def test_a_field_wrong_as_a_whole_is_left_at_its_default_and_one_read_in_part_keeps_what_was_read() -> None:
    value = {"size": "big", "counts": [1, "x", 3], "spot": {"x": 7, "name": "here"}}
    assert read_problems(Crate, value) == (
        Crate(4, (1, 0, 3), Spot(0, "here")),
        (
            _problem("wrong-type", "payload.size", "must be an integer"),
            _problem("wrong-type", "payload.counts[1]", "must be an integer"),
            _problem("out-of-range", "payload.spot.x", "must be <= 5, got 7"),
        ),
    )


def test_a_field_that_cannot_be_read_is_left_at_the_empty_value_of_its_shape() -> None:
    # Empty: the smallest integer allowed from 0, False, "", the first
    # choice, the first member of a union, an empty list or record, None.
    value = dict.fromkeys(Blank.__dataclass_fields__, 1.5)
    partial, problems = read_problems(Blank, value)
    assert partial == Blank(0, 5, -5, False, "", "slow", 0, (), Spot(0, ""), None)
    assert problems == (
        _problem("wrong-type", "payload.number", "must be an integer"),
        _problem("wrong-type", "payload.above", "must be an integer"),
        _problem("wrong-type", "payload.below", "must be an integer"),
        _problem("wrong-type", "payload.flag", "must be a boolean"),
        _problem("wrong-type", "payload.text", "must be a string"),
        _problem("unknown-value", "payload.mode", "must be one of ['slow', 'fast'], got 1.5"),
        _problem("wrong-type", "payload.either", "must be an integer or a string"),
        _problem("wrong-type", "payload.items", "must be a list"),
        _problem("wrong-type", "payload.inner", "must be an object"),
        _problem("wrong-type", "payload.maybe", "must be an integer or null"),
    )


@pytest.mark.parametrize(
    ("value", "partial", "problems"),
    [
        (
            {"state": "stuck", "reason": None},
            Ticket("stuck", None),
            (_problem("rule-broken", "payload.reason", "a reason exactly when stuck"),),
        ),
        (
            {"state": "open", "reason": "why"},
            Ticket("open", "why"),
            (_problem("rule-broken", "payload.reason", "a reason exactly when stuck"),),
        ),
        # A rule whose field or whose condition was not read is not judged.
        (
            {"state": "stuck", "reason": 5},
            Ticket("stuck", None),
            (_problem("wrong-type", "payload.reason", "must be a string or null"),),
        ),
        (
            {"state": "shut", "reason": "why"},
            Ticket("open", "why"),
            (_problem("unknown-value", "payload.state", "must be one of ['open', 'stuck'], got 'shut'"),),
        ),
    ],
)
def test_a_record_s_rules_are_judged_on_the_fields_that_were_read(
    value: object, partial: Ticket, problems: tuple[Problem, ...]
) -> None:
    assert read_problems(Ticket, value) == (partial, problems)


def test_a_record_that_keeps_its_rules_is_read() -> None:
    assert read_as(Ticket, {"state": "stuck", "reason": "why"}) == Ticket("stuck", "why")
    assert read_as(Ticket, {"state": "open", "reason": None}) == Ticket("open", None)


# --------------------------------------------------------------------------
# Lists


@pytest.mark.parametrize("value", ["12", b"12", {"0": 2}, 12, None])
def test_a_list_refuses_a_string_a_mapping_or_a_scalar_as_a_whole(value: object) -> None:
    assert read_problems(Shelf, {"label": "a", "counts": value}) == (
        Shelf("a", ()),
        (_problem("wrong-type", "payload.counts", "must be a list"),),
    )
    with pytest.raises(PayloadError, match=r"^payload\.counts: must be a list$"):
        read_as(Shelf, {"label": "a", "counts": value})


@pytest.mark.parametrize("value", [[2, 3], (2, 3), range(2, 4)])
def test_a_list_is_read_from_any_sequence_as_a_tuple(value: object) -> None:
    assert read_as(Shelf, {"label": "a", "counts": value}) == Shelf("a", (2, 3))


def test_every_bad_item_of_a_list_is_reported_with_its_index_and_the_good_ones_are_kept() -> None:
    value = {"label": "a", "counts": [5, "x", 7, 100]}
    assert read_problems(Shelf, value) == (
        Shelf("a", (5, 2, 7, 2)),
        (
            _problem("wrong-type", "payload.counts[1]", "must be an integer"),
            _problem("out-of-range", "payload.counts[3]", "must be <= 99, got 100"),
        ),
    )


# --------------------------------------------------------------------------
# Scalars


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"level": 2, "total": 0}, _problem("out-of-range", "payload.level", "must be >= 3, got 2")),
        ({"level": 10, "total": 0}, _problem("out-of-range", "payload.level", "must be <= 9, got 10")),
        (
            {"level": 3, "total": 2**53},
            _problem(
                "out-of-range",
                "payload.total",
                "must be <= 9007199254740991 (the largest safe integer), got 9007199254740992",
            ),
        ),
        ({"level": "3", "total": 0}, _problem("wrong-type", "payload.level", "must be an integer")),
        ({"level": True, "total": 0}, _problem("wrong-type", "payload.level", "must be an integer")),
    ],
)
def test_an_integer_out_of_its_range_or_not_an_integer_is_refused(value: object, problem: Problem) -> None:
    assert read_problems(Gauge, value)[1] == (problem,)


def test_an_integer_range_includes_both_its_bounds_for_an_int_subclass_too() -> None:
    assert read_as(Gauge, {"level": Level.LOW, "total": 0}) == Gauge(3, 0)
    assert read_as(Gauge, {"level": Level.HIGH, "total": 0}) == Gauge(9, 0)
    assert read_as(Gauge, {"level": 3, "total": 2**53 - 1}) == Gauge(3, 2**53 - 1)


@pytest.mark.parametrize("value", [0, False, "", [], {}])
def test_a_null_field_refuses_anything_but_null(value: object) -> None:
    assert read_as(Ping, {"seq": 1, "nothing": None}) == Ping(1, None)
    assert read_problems(Ping, {"seq": 1, "nothing": value}) == (
        Ping(1, None),
        (_problem("wrong-type", "payload.nothing", "must be null"),),
    )


def test_a_string_subclass_is_read_as_a_string_and_a_choice_as_the_choice_itself() -> None:
    read = read_as(Badge, {"title": Name("Hello World"), "handle": Name("me"), "speed": Name("run")})
    assert read == Badge("Hello World", "me", "run")
    assert type(read.speed) is str


def test_a_string_subclass_is_held_to_the_field_s_text_rule() -> None:
    value = {"title": Name("Hi"), "handle": Name("  "), "speed": "walk"}
    assert read_problems(Badge, value)[1] == (_problem("invalid-text", "payload.handle", "must not be blank"),)


@pytest.mark.parametrize("value", ["auto", 0])
def test_a_choice_of_a_string_and_an_integer_reads_either(value: str | int) -> None:
    assert read_as(Retry, {"limit": value}) == Retry(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["x", True, 0.0, None])
def test_a_choice_of_a_string_and_an_integer_refuses_anything_else(value: object) -> None:
    assert read_problems(Retry, {"limit": value}) == (
        Retry("auto"),
        (_problem("unknown-value", "payload.limit", f"must be one of ['auto', 0], got {value!r}"),),
    )


# --------------------------------------------------------------------------
# Opaque JSON values


def test_an_opaque_value_is_kept_as_its_freeze_makes_it() -> None:
    read = read_as(Settings, {"values": {"a": [1, {"b": None}]}})
    assert read.values == {"a": (1, {"b": None})}
    assert not isinstance(read.values, dict)


@pytest.mark.parametrize("value", [[1], "x", None, {"a": float("nan")}])
def test_an_opaque_value_its_check_refuses_is_not_a_json_value(value: object) -> None:
    assert read_problems(Settings, {"values": value}) == (
        Settings(None),
        (_problem("wrong-type", "payload.values", "must be a JSON value"),),
    )
