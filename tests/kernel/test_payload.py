"""The strict payload readers every fold reads through: their refusals name
the payload or the key at fault; and the makers that build records from
values already of their types."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import pytest

from planfold.kernel.errors import PayloadError, Problem
from planfold.kernel.payload import (
    MAX_SAFE_INTEGER,
    NONE_IS_ABSENT,
    OMISSIBLE,
    Code,
    Count,
    Kebab,
    NonBlank,
    NonBlankWhen,
    NonEmpty,
    PresentWhen,
    Range,
    Text,
    Trimmed,
    Unreadable,
    inline_check,
    maker,
    object_of,
    read_as,
    read_problems,
    reader_of,
    record_maker,
    shape_of,
    text_problem,
    to_json,
)
from tests.record_cases import Checked

# --------------------------------------------------------------------------
# Makers: records made from values already of their types, without __init__


@dataclass(frozen=True, slots=True, init=False)
class Unbuildable:
    """A record whose ``__init__`` refuses to run: only a maker can make it."""

    number: int
    name: str

    def __init__(self, *args: object) -> None:
        raise AssertionError("a maker never calls __init__")


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


# --------------------------------------------------------------------------
# Reading: scalars, markers, records, unions and their refusals


@pytest.mark.parametrize(
    ("tp", "value"),
    [(int, 7), (bool, True), (str, "text"), (Literal["a", "b"], "b"), (Literal[1, 2], 2), (None, None)],
)
def test_every_scalar_type_reads_a_value_of_its_own_as_itself(tp: object, value: object) -> None:
    assert read_as(tp, value) == value
    assert type(read_as(tp, value)) is type(value)


def test_reading_the_null_type_leaves_the_readers_of_other_types_alone() -> None:
    assert read_as(None, None) is None
    assert read_as(int, 7) == 7
    assert reader_of(int) is not reader_of(None)


@pytest.mark.parametrize(
    ("tp", "value", "problem"),
    [
        (int, "7", Problem("wrong-type", "payload", "must be an integer")),
        (Count, -1, Problem("out-of-range", "payload", "must be >= 0, got -1")),
        (Annotated[int, Range(1, 5)], 6, Problem("out-of-range", "payload", "must be <= 5, got 6")),
        (bool, 1, Problem("wrong-type", "payload", "must be a boolean")),
        (None, 0, Problem("wrong-type", "payload", "must be null")),
        (NonEmpty, "", Problem("invalid-text", "payload", "must not be empty")),
        (Kebab, "Not_Kebab", Problem("invalid-text", "payload", "must be kebab-case, got 'Not_Kebab'")),
        (Literal["a", "b"], "c", Problem("unknown-value", "payload", "must be one of ['a', 'b'], got 'c'")),
    ],
)
def test_a_scalar_refused_on_its_own_is_one_problem_at_the_payload(tp: object, value: object, problem: Problem) -> None:
    # The path starts from "payload" unless the caller says where the value is.
    _, problems = read_problems(tp, value)
    assert problems == (problem,)


@pytest.mark.parametrize(
    ("rule", "value", "problem"),
    [
        (Text.NON_EMPTY, "a", None),
        (Text.NON_EMPTY, " ", None),
        (Text.NON_EMPTY, "", "must not be empty"),
        (Text.NON_BLANK, " a ", None),
        (Text.NON_BLANK, " \t", "must not be blank"),
        (Text.TRIMMED, "a b", None),
        (Text.TRIMMED, " a", "must be non-blank text without surrounding space"),
        (Text.TRIMMED, "", "must be non-blank text without surrounding space"),
        (Text.KEBAB, "plan-mode-2", None),
        (Text.KEBAB, "Plan", "must be kebab-case, got 'Plan'"),
    ],
)
def test_text_problem_says_why_a_string_breaks_its_rule_and_nothing_when_it_keeps_it(
    rule: Text, value: str, problem: str | None
) -> None:
    assert text_problem(rule, value) == problem


# JSON values of every type, at and around the edges of the scalar rules.
JSON_VALUES: tuple[object, ...] = (
    *(None, True, False, 1.0, [], {}),
    *(0, 1, 2, 5, 6, -1, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER - 1),
    *("", " ", "\t", " a", "a ", "a", "a b", "a-b", "Plan", "b", "c"),
)


SCALARS: tuple[object, ...] = (
    *(int, Count, Annotated[int, Range(1, 5)], bool, None),
    *(str, NonEmpty, NonBlank, Trimmed, Kebab, Literal["a", "b"], Literal[1, 2]),
)


@pytest.mark.parametrize("tp", SCALARS)
def test_a_scalar_inline_check_holds_exactly_for_the_json_values_its_reader_keeps_as_they_are(tp: object) -> None:
    # Readers written from shapes (here and in the adapters) accept a value
    # on this condition alone, without calling the reader.
    consts: dict[str, object] = {}
    condition = inline_check(shape_of(tp), "v", consts)
    assert condition is not None
    for value in JSON_VALUES:
        read, problems = read_problems(tp, value)
        kept = not problems and read == value and type(read) is type(value)
        assert bool(eval(condition, dict(consts), {"v": value})) == kept, value


@pytest.mark.parametrize(
    ("tp", "message"),
    [
        (tuple[int], "only tuple[T, ...] is a JSON array, not tuple[int]"),
        (tuple[int, str], "only tuple[T, ...] is a JSON array, not tuple[int, str]"),
        (float, "<class 'float'> has no exact JSON reading"),
    ],
)
def test_an_annotation_with_no_exact_json_reading_has_no_shape(tp: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        shape_of(tp)
    assert str(caught.value) == message


def test_a_key_that_may_be_left_out_needs_a_default() -> None:
    @dataclass(frozen=True, slots=True)
    class NoDefault:
        note: Annotated[str, OMISSIBLE]

    with pytest.raises(TypeError) as caught:
        shape_of(NoDefault)
    assert str(caught.value) == "NoDefault.note may be left out but has no default"


def test_a_none_written_as_a_left_out_key_needs_a_none_default() -> None:
    @dataclass(frozen=True, slots=True)
    class EmptyDefault:
        note: Annotated[str | None, NONE_IS_ABSENT] = ""

    with pytest.raises(TypeError) as caught:
        shape_of(EmptyDefault)
    assert str(caught.value) == "EmptyDefault.note: a None written as a left-out key needs a None default"


@dataclass(frozen=True, slots=True)
class Versioned:
    """A record with a coded field, keys that may be left out and a None written as a left-out key."""

    version: Annotated[Literal[1], Code("unknown-version")]
    labels: Annotated[tuple[Kebab, ...], OMISSIBLE] = dataclasses.field(default_factory=tuple)
    note: Annotated[NonBlank | None, NONE_IS_ABSENT] = None


def test_left_out_keys_read_as_their_defaults_a_factory_made_one_included() -> None:
    assert read_as(Versioned, {"version": 1}) == Versioned(1, (), None)
    assert read_as(Versioned, {"version": 1, "labels": ["a-b"], "note": "n"}) == Versioned(1, ("a-b",), "n")


def test_a_field_whose_none_is_a_left_out_key_refuses_a_present_null() -> None:
    _, problems = read_problems(Versioned, {"version": 1, "note": None})
    assert problems == (Problem("wrong-type", "payload.note", "must be a string"),)
    note = shape_of(Versioned).fields[2].shape
    assert (note.kind, note.text) == ("str", Text.NON_BLANK)


def test_a_refusal_of_a_coded_field_carries_the_field_s_code() -> None:
    _, problems = read_problems(Versioned, {"version": 2})
    assert problems == (Problem("unknown-version", "payload.version", "must be one of [1], got 2"),)
    with pytest.raises(PayloadError) as caught:
        read_as(Versioned, {"version": 2}, "event")
    assert caught.value.code == "unknown-version"
    assert str(caught.value) == "event.version: must be one of [1], got 2"


def test_a_record_s_doc_is_its_docstring_stripped() -> None:
    assert shape_of(Versioned).doc == (
        "A record with a coded field, keys that may be left out and a None written as a left-out key."
    )


def test_a_record_whose_docstring_was_removed_has_an_empty_doc() -> None:
    @dataclass(frozen=True, slots=True)
    class Bare:
        number: int

    Bare.__doc__ = None
    assert shape_of(Bare).doc == ""


@dataclass(frozen=True, slots=True)
class Size:
    """A record of one field."""

    size: Count


@dataclass(frozen=True, slots=True)
class Nothing:
    """A record of no field: the empty object."""


@dataclass(frozen=True, slots=True)
class Attached:
    """A record whose None is a left-out key, and whose value is a string or an object otherwise."""

    attachment: Annotated[str | Size | None, NONE_IS_ABSENT] = None


def test_a_record_of_one_field_read_in_part_keeps_what_was_read() -> None:
    assert read_problems(Size, {"size": 3, "extra": 1}) == (
        Size(3),
        (Problem("unexpected-field", "payload.extra", "is not a known field"),),
    )


def test_a_record_of_no_field_is_the_empty_object() -> None:
    assert read_as(Nothing, {}) == Nothing()
    assert to_json(Nothing()) == {}
    assert read_problems(Nothing, {"extra": 1}) == (
        Nothing(),
        (Problem("unexpected-field", "payload.extra", "is not a known field"),),
    )


def test_a_none_written_as_a_left_out_key_keeps_every_other_member_of_its_union() -> None:
    assert read_as(Attached, {}) == Attached(None)
    assert read_as(Attached, {"attachment": "a"}) == Attached("a")
    assert read_as(Attached, {"attachment": {"size": 2}}) == Attached(Size(2))
    _, problems = read_problems(Attached, {"attachment": None})
    assert problems == (Problem("wrong-type", "payload.attachment", "must be a string or an object"),)


@dataclass(frozen=True, slots=True)
class Cat:
    type: Literal["cat"]
    lives: Count


@dataclass(frozen=True, slots=True)
class Dog:
    type: Literal["dog"]
    good: bool


@dataclass(frozen=True, slots=True)
class Kennel:
    """A record of a list, a tagged union with and without null, and a null."""

    sizes: tuple[Count, ...]
    pet: Cat | Dog
    spare: Cat | Dog | None
    nothing: None


KENNEL: dict[str, object] = {"sizes": [1, 2], "pet": {"type": "dog", "good": True}, "spare": None, "nothing": None}


def test_a_record_reads_its_lists_unions_and_nulls() -> None:
    assert read_as(Kennel, KENNEL) == Kennel((1, 2), Dog("dog", True), None, None)
    spare = {"type": "cat", "lives": 9}
    assert read_as(Kennel, {**KENNEL, "spare": spare}) == Kennel((1, 2), Dog("dog", True), Cat("cat", 9), None)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"sizes": None}, Problem("wrong-type", "payload.sizes", "must be a list")),
        ({"sizes": [1, -1]}, Problem("out-of-range", "payload.sizes[1]", "must be >= 0, got -1")),
        ({"pet": None}, Problem("wrong-type", "payload.pet", "must be an object")),
        ({"pet": {"type": "cat", "lives": -1}}, Problem("out-of-range", "payload.pet.lives", "must be >= 0, got -1")),
        (
            {"spare": {"type": "cow"}},
            Problem("unknown-value", "payload.spare.type", "must be one of ['cat', 'dog'], got 'cow'"),
        ),
        ({"nothing": 0}, Problem("wrong-type", "payload.nothing", "must be null")),
    ],
)
def test_a_record_with_every_key_present_refuses_a_wrong_value_at_its_path(
    change: dict[str, object], problem: Problem
) -> None:
    _, problems = read_problems(Kennel, {**KENNEL, **change})
    assert problems == (problem,)


def test_a_record_with_rules_still_checks_the_type_of_each_field() -> None:
    _, problems = read_problems(TwoRules, {"state": "open", "reason": None, "note": 5})
    assert problems == (Problem("wrong-type", "payload.note", "must be a string"),)


REASON = "a reason exactly when stuck"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"state": "open", "reason": "why", "note": ""}, Problem("rule-broken", "payload.reason", REASON)),
        ({"state": "stuck", "reason": None, "note": ""}, Problem("rule-broken", "payload.reason", REASON)),
        ({"state": "done", "reason": None, "note": " "}, Problem("missing-note", "payload.note", "a note when done")),
    ],
)
def test_a_record_s_reader_refuses_a_broken_rule_with_the_rule_s_code(value: object, problem: Problem) -> None:
    _, problems = read_problems(TwoRules, value)
    assert problems == (problem,)


@dataclass(frozen=True, slots=True)
class Opened:
    action: Literal["open"]
    urgent: bool
    locked: Annotated[bool, Code("bad-lock")]
    count: int
    quiet: Annotated[bool, OMISSIBLE] = False


@dataclass(frozen=True, slots=True)
class Closed:
    action: Literal["close"]
    urgent: bool
    locked: Annotated[bool, Code("bad-latch")]
    count: str
    quiet: bool


def test_a_tagged_union_s_common_fields_are_those_of_one_shape_code_and_omissibility_in_every_member() -> None:
    # Common fields are read before the tag, so their problems come first.
    assert shape_of(Opened | Closed).common == ("urgent",)
    _, problems = read_problems(Opened | Closed, {"action": "shut", "urgent": 1, "locked": 1, "count": 1})
    assert problems == (
        Problem("wrong-type", "payload.urgent", "must be a boolean"),
        Problem("unknown-value", "payload.action", "must be one of ['open', 'close'], got 'shut'"),
    )


# --------------------------------------------------------------------------
# Refusals and the writer


def test_a_reader_s_refusal_shows_what_it_found_wrong() -> None:
    with pytest.raises(Unreadable) as caught:
        reader_of(int)("7")
    assert caught.value.problems == [((), "wrong-type", "must be an integer")]
    assert str(caught.value) == str(caught.value.problems)


def test_only_payload_values_have_a_json_form() -> None:
    with pytest.raises(TypeError) as caught:
        to_json(object())
    assert str(caught.value) == "object is not a payload value"


def test_only_a_record_is_a_json_object() -> None:
    with pytest.raises(TypeError) as caught:
        object_of([1])
    assert str(caught.value) == "list is not a record"
