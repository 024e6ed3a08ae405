"""The exact converter: a dataclass becomes the dict cattrs would make of it,
and a value that breaks its annotations is refused with the error cattrs's
own function would raise, although fields that only need a check are
checked inline."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import cattrs
import msgspec
import pytest
from cattrs.gen import make_dict_unstructure_fn
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.structuring import _object_unstructure, exact_converter, problems


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


@dataclass(frozen=True, slots=True)
class Inner:
    name: str


@dataclass(frozen=True, slots=True)
class Fields:
    text: str
    count: int
    ratio: float
    flag: bool
    maybe: str | None
    mode: Literal["a", "b", 1, True]
    number: int | float
    shade: Shade
    inner: Inner
    maybe_inner: Inner | None
    payload: dict[str, Any]
    numbers: tuple[int, ...]
    derived: int = dataclasses.field(default=0, init=False)


#: What a field might hold: its own kind of value, or any other.
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.sampled_from(["a", "b", 1, True, 0, False, 1.0, Shade.LIGHT, "light"]),
    st.builds(Inner, st.text(max_size=3)),
    st.builds(Inner, st.integers()),
    st.lists(st.integers(), max_size=2),
    st.tuples(st.integers(), st.text(max_size=2)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def outcome(unstructure: Any, value: object) -> object:
    """What ``unstructure(value)`` gives: the dict, or the error's type and text."""
    try:
        return unstructure(value)
    except Exception as exc:
        return (type(exc), str(exc))


@given(st.fixed_dictionaries({f.name: anything for f in dataclasses.fields(Fields) if f.init}))
def test_a_dataclass_unstructures_as_cattrs_would_whatever_its_fields_hold(values: dict[str, Any]) -> None:
    conv = exact_converter()
    value = Fields(**values)
    assert outcome(conv.get_unstructure_hook(Fields), value) == outcome(make_dict_unstructure_fn(Fields, conv), value)


def test_a_field_that_passes_inline_is_handed_back_as_it_is_and_init_false_fields_are_left_out() -> None:
    conv = exact_converter()
    value = Fields("t", 2, 1, False, None, True, 2.5, Shade.DARK, Inner("i"), None, {"k": [1]}, (1, 2))
    assert conv.unstructure(value) == {
        "text": "t",
        "count": 2,
        "ratio": 1,
        "flag": False,
        "maybe": None,
        "mode": True,
        "number": 2.5,
        "shade": "dark",
        "inner": {"name": "i"},
        "maybe_inner": None,
        "payload": {"k": [1]},
        "numbers": [1, 2],
    }


@pytest.mark.parametrize(
    ("field", "wrong", "error"),
    [
        ("count", True, "expected an integer, got a boolean"),
        ("mode", 0, "0 is not one of ('a', 'b', 1, True)"),
        ("mode", 1.0, "1.0 is not one of ('a', 'b', 1, True)"),
        ("mode", [1], "[1] is not one of ('a', 'b', 1, True)"),
        ("maybe", 3, "int is not in str | None"),
        ("number", "2", "str is not in int | float"),
        ("inner", Inner(3), "expected a string, got an integer"),  # type: ignore[arg-type]
    ],
)
def test_a_field_that_breaks_its_annotation_is_refused_by_its_own_hook(field: str, wrong: object, error: str) -> None:
    good = Fields("t", 2, 1.5, False, None, "a", 2, Shade.DARK, Inner("i"), None, {}, ())
    changed: dict[str, Any] = {field: wrong}
    with pytest.raises(TypeError) as info:
        exact_converter().unstructure(dataclasses.replace(good, **changed))
    assert str(info.value) == error


@dataclass(frozen=True, slots=True)
class Defaulted:
    count: int = 0


def test_a_function_cattrs_makes_with_settings_of_its_own_is_kept_as_it_is() -> None:
    conv = cattrs.Converter(omit_if_default=True)
    assert _object_unstructure(Defaulted, conv)(Defaulted()) == {}
    assert _object_unstructure(Defaulted, conv)(Defaulted(2)) == {"count": 2}
    assert _object_unstructure(Defaulted, exact_converter())(Defaulted()) == {"count": 0}


@dataclass(frozen=True, slots=True)
class Limited:
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=4, pattern="^[a-z]+$")]
    count: Annotated[int, msgspec.Meta(ge=1, le=9)]
    share: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.5
    tags: Annotated[tuple[Annotated[str, msgspec.Meta(max_length=2)], ...], msgspec.Meta(max_length=2)] = ()
    note: Annotated[str, msgspec.Meta(max_length=3, description="said, not checked")] | None = None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"name": "", "count": 1}, "$.name: expected at least 1 characters, got 0"),
        ({"name": "abcde", "count": 1}, "$.name: expected at most 4 characters, got 5"),
        ({"name": "ab1", "count": 1}, "$.name: expected a string matching '^[a-z]+$'"),
        ({"name": "ab", "count": 0}, "$.count: expected a number >= 1, got 0"),
        ({"name": "ab", "count": 10}, "$.count: expected a number <= 9, got 10"),
        ({"name": "ab", "count": 1, "share": 1}, "$.share: expected a number < 1, got 1"),
        ({"name": "ab", "count": 1, "share": 0.0}, "$.share: expected a number > 0, got 0.0"),
        ({"name": "ab", "count": 1, "tags": ["a", "b", "c"]}, "$.tags: expected at most 2 items, got 3"),
        ({"name": "ab", "count": 1, "tags": ["abc"]}, "$.tags[0]: expected at most 2 characters, got 3"),
        ({"name": "ab", "count": 1, "note": "long"}, "$.note: expected at most 3 characters, got 4"),
        ({"name": "ab", "count": True}, "$.count: expected an integer, got a boolean"),
    ],
)
def test_a_value_past_a_msgspec_meta_limit_is_refused_with_its_path(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(cattrs.BaseValidationError) as caught:
        exact_converter().structure(data, Limited)
    assert problems(caught.value, "$") == (problem,)


def test_values_within_their_limits_are_structured_and_unstructured_unchanged() -> None:
    conv = exact_converter()
    data = {"name": "abcd", "count": 9, "share": 0.25, "tags": ["ab", "c"], "note": None}
    made = conv.structure(data, Limited)
    assert made == Limited("abcd", 9, 0.25, ("ab", "c"))
    assert conv.unstructure(made) == data


def test_keys_a_class_does_not_have_are_refused_unless_the_converter_lets_them_through() -> None:
    data = {"name": "ab", "count": 1, "typo": 0}
    with pytest.raises(cattrs.BaseValidationError) as caught:
        exact_converter().structure(data, Limited)
    allowed = "['count', 'name', 'note', 'share', 'tags']"
    assert problems(caught.value, "$") == (f"$: unknown key(s) ['typo'] (allowed: {allowed})",)
    assert exact_converter(forbid_extra_keys=False).structure(data, Limited) == Limited("ab", 1)


def test_a_limit_the_converter_does_not_check_is_refused_when_its_hook_is_made() -> None:
    @dataclass(frozen=True, slots=True)
    class Stepped:
        size: Annotated[int, msgspec.Meta(multiple_of=2)]

    with pytest.raises(TypeError, match="not multiple_of or tz"):
        exact_converter().structure({"size": 2}, Stepped)
