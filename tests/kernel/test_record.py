"""``record`` builds the frozen slotted dataclass ``dataclasses`` would: each
test declares the same class both ways and holds them to the same behaviour."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
import typing
from typing import Any, ClassVar

import pytest

from planfold.kernel.record import field, record, replace


@record
class Point:
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = field(default="", compare=False)
    KIND: ClassVar[str] = "point"


@dataclasses.dataclass(frozen=True, slots=True)
class PointDC:
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
    note: str = dataclasses.field(default="", compare=False)
    KIND: ClassVar[str] = "point"


@record(order=True)
class Ranked:
    """Ordered by rank, then name."""

    rank: int
    name: str


@record(eq=False)
class Handle:
    """Compared by identity."""

    value: int


@record
class Checked:
    """Refuses a negative value after construction."""

    value: int
    hashed: dict[str, int] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


@record
class Single:
    """One field."""

    only: float


def test_a_record_compares_hashes_and_prints_as_the_same_dataclass_does() -> None:
    cases: list[tuple[Any, ...]] = [(1,), (1, 2), (1, 2, ("a",)), (1, 2, (), "n")]
    for args in cases:
        mine, theirs = Point(*args), PointDC(*args)
        assert repr(mine).replace("Point(", "PointDC(") == repr(theirs)
        assert hash(mine) == hash(theirs)
        assert mine == Point(*args)
    assert Point(1, note="a") == Point(1, note="b")
    assert Point(1) != Point(2)
    assert Point(1) != PointDC(1)  # type: ignore[comparison-overlap]
    assert Point.KIND == "point"
    nan = float("nan")
    assert Single(nan) == Single(nan)  # the same object: equal, as in a tuple
    assert hash(Single(1.5)) == hash((1.5,))


def test_a_record_is_frozen_and_slotted() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'x'"):
        del p.x
    loose: Any = p
    with pytest.raises(dataclasses.FrozenInstanceError):
        loose.other = 1
    assert not hasattr(p, "__dict__")
    assert vars(Point)["__slots__"] == ("x", "y", "tags", "note")


def loose_point(x: int) -> object:
    return Point(x)


def test_a_record_is_a_dataclass_to_the_dataclasses_module() -> None:
    p = Point(1, 2)
    cls: Any = Point
    assert all(dataclasses.is_dataclass(each) for each in (cls, loose_point(3)))
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags", "note"]
    assert [f.compare for f in dataclasses.fields(p)] == [True, True, True, False]
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": (), "note": ""}
    assert dataclasses.replace(p, y=5) == Point(1, 5)
    params = cls.__dataclass_params__
    assert (params.frozen, params.eq, params.order) == (True, True, False)
    assert cls.__match_args__ == ("x", "y", "tags", "note")
    match p:
        case Point(1, y):
            assert y == 2
        case _:
            pytest.fail("no match")


def test_a_records_field_options_and_parameters_are_what_dataclasses_gives_the_same_class() -> None:
    # Declared here, so that the dataclass view is built inside the test.
    @record(order=True)
    class Options:
        a: int
        b: list[int] = field(default_factory=list, repr=False, hash=False, compare=False)
        c: int = field(default=3, hash=True)

    @dataclasses.dataclass(frozen=True, slots=True, order=True)
    class OptionsDC:
        a: int
        b: list[int] = dataclasses.field(default_factory=list, repr=False, hash=False, compare=False)
        c: int = dataclasses.field(default=3, hash=True)

    def described(cls: Any) -> list[tuple[object, ...]]:
        return [
            (f.name, f.type, f.default, f.default_factory, f.repr, f.hash, f.compare) for f in dataclasses.fields(cls)
        ]

    assert described(Options) == described(OptionsDC)
    mine, theirs = vars(Options)["__dataclass_params__"], vars(OptionsDC)["__dataclass_params__"]
    assert repr(mine) == repr(theirs)
    @record(eq=False)
    class Identity:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True, eq=False)
    class IdentityDC:
        a: int

    loose: Any = Identity
    assert repr(loose.__dataclass_params__) == repr(vars(IdentityDC)["__dataclass_params__"])
    shown = "(a: 'int', b: 'list[int]' = <factory>, c: 'int' = 3) -> None"
    assert str(inspect.signature(Options)) == str(inspect.signature(OptionsDC)) == shown


def test_replace_makes_a_new_record_with_the_changes_and_runs_post_init() -> None:
    p = Point(1, 2, ("a",))
    assert replace(p, y=3) == Point(1, 3, ("a",))
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        replace(p, z=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="negative"):
        replace(Checked(1), value=-1)
    assert replace(PointDC(1), y=2) == PointDC(1, 2)  # anything else: dataclasses.replace


def test_construction_binds_as_a_dataclass_init_does_on_the_first_call_and_after() -> None:
    for _ in range(3):  # the first call binds without compiling; later ones compile
        assert Point(1, tags=("t",)) == Point(x=1, y=0, tags=("t",), note="")
        assert Point(1).tags == ()
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
            Point()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="multiple values for argument 'x'"):
            Point(1, x=2)  # type: ignore[misc]
        with pytest.raises(TypeError, match="takes from 2 to 5 positional arguments but 6 were given"):
            Point(1, 2, (), "", 5)  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="negative"):
            Checked(-1)
    assert Checked(1).hashed == {}
    assert Checked(1).hashed is not Checked(1).hashed


def _fresh_classes() -> tuple[Any, Any]:
    """A record like ``Point`` and one with two fields and no default,
    declared anew: their next call is their first."""

    @record
    class Fresh:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = field(default_factory=tuple)
        note: str = field(default="", compare=False)

    @record
    class Pair:
        """Two fields, neither with a default."""

        a: int
        b: int

    return Fresh, Pair


#: (class: 0 is like Point, 1 the pair; positional and keyword arguments;
#: the fields it makes, or the start of the TypeError a dataclass raises)
FIRST_CALLS: list[tuple[int, tuple[Any, ...], dict[str, Any], tuple[Any, ...] | str]] = [
    (0, (1,), {}, (1, 0, (), "")),
    (0, (1,), {"tags": ("t",)}, (1, 0, ("t",), "")),
    (0, (), {"x": 1, "note": "n"}, (1, 0, (), "n")),
    (0, (1, 2, ("t",), "n"), {}, (1, 2, ("t",), "n")),
    (1, (1, 2), {}, (1, 2)),
    (1, (1,), {"b": 2}, (1, 2)),
    (0, (), {}, "missing 1 required positional argument: 'x'"),
    (1, (1,), {}, "missing 1 required positional argument: 'b'"),
    (1, (), {"b": 2}, "missing 1 required positional argument: 'a'"),
    (0, (1,), {"x": 2}, "multiple values for argument 'x'"),
    (0, (1, 2, (), "", 5), {}, "takes from 2 to 5 positional arguments but 6 were given"),
    (1, (1, 2, 3), {}, "takes 3 positional arguments but 4 were given"),
    (0, (1,), {"z": 1}, "unexpected keyword argument 'z'"),
    (0, (1,), {"y": 2, "z": 1}, "unexpected keyword argument 'z'"),
    (1, (1, 2), {"z": 1}, "unexpected keyword argument 'z'"),
]


@pytest.mark.parametrize(("which", "args", "kwargs", "expected"), FIRST_CALLS)
def test_the_first_call_of_a_record_class_binds_its_arguments_as_a_dataclass_init_does(
    which: int, args: tuple[Any, ...], kwargs: dict[str, Any], expected: tuple[Any, ...] | str
) -> None:
    cls = _fresh_classes()[which]
    names = [f.name for f in dataclasses.fields(cls)]
    for _ in ("first call, bound without compiling", "second call, compiled"):
        if isinstance(expected, str):
            with pytest.raises(TypeError) as refused:
                cls(*args, **kwargs)
            assert expected in str(refused.value)
        else:
            made = cls(*args, **kwargs)
            assert tuple(getattr(made, name) for name in names) == expected


def _declared_hashes(decorate: Any) -> dict[str, object]:
    """What ``hash`` gives (or the exception's type) for four classes that
    declare ``__eq__`` and ``__hash__`` themselves in each way, decorated
    by ``decorate``."""

    @decorate
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @decorate
    class OwnEq:  # noqa: PLW1641 (the decorator writes the hash)
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq)

    @decorate
    class NoHash:
        a: int
        __hash__ = None  # type: ignore[assignment]

    @decorate
    class Both:
        a: int

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 8

    out: dict[str, object] = {}
    classes: tuple[Any, ...] = (OwnHash, OwnEq, NoHash, Both)  # decorated by an untyped decorator
    for cls in classes:
        try:
            out[cls.__name__] = hash(cls(1))
        except TypeError as exc:
            out[cls.__name__] = type(exc)
    return out


def test_a_record_keeps_a_hash_it_declares_and_hashes_its_fields_when_it_declares_only_eq() -> None:
    expected = _declared_hashes(dataclasses.dataclass(frozen=True, slots=True))
    assert expected == {"OwnHash": 7, "OwnEq": hash((1,)), "NoHash": TypeError, "Both": 8}
    assert _declared_hashes(record) == expected


def _options_class(decorate: Any, option: Any) -> Any:
    """A class with every field option, decorated by ``decorate(order=True)``,
    its options given by ``option`` (``field`` of record or of dataclasses)."""

    @decorate(order=True)
    class Opts:
        """Documented: a record without a docstring compiles its methods at once."""

        a: int
        b: list[int] = option(default_factory=list, hash=False)
        c: int = option(default=0, compare=False)
        d: int = option(default=0, compare=False, hash=True)
        e: str = option(default="", repr=False)

    return Opts


def _uncalled(cls: Any, *values: object) -> Any:
    """An instance of ``cls`` made without calling the class (as ``copy``
    makes one), so that a record's ``__init__`` stays uncompiled."""
    made = cls.__new__(cls)
    made.__setstate__(list(values))
    return made


def _behaviour(cls: Any) -> tuple[object, ...]:
    one = _uncalled(cls, 1, [2], 3, 4, "e")
    others = [_uncalled(cls, *values) for values in ((1, [2], 9, 5, "e"), (1, [3], 3, 4, "e"), (2, [0], 0, 0, ""))]
    orders = [(one < o, one <= o, one > o, one >= o) for o in others]
    # Called directly, each comparison answers for itself: through an
    # operator, Python would ask the reflected one when it declines.
    direct = [(one.__lt__(o), one.__le__(o), one.__gt__(o), one.__ge__(o)) for o in others]
    declined = (one.__lt__(1), one.__le__(1), one.__gt__(1), one.__ge__(1))
    return hash(one), repr(one), [one == o for o in others], orders, direct, declined, one.__eq__(object())


def test_before_its_init_is_compiled_a_record_compares_hashes_orders_and_prints_as_the_dataclass_does() -> None:
    def dataclass(**options: Any) -> Any:
        return dataclasses.dataclass(frozen=True, slots=True, **options)

    expected = _behaviour(_options_class(dataclass, dataclasses.field))
    assert expected[0] == hash((1, 4, "e")) and expected[2] == [True, False, False]
    assert _behaviour(_options_class(record, field)) == expected


def test_before_its_init_is_compiled_a_record_of_one_field_or_none_compares_and_hashes_as_the_dataclass_does() -> None:
    def behaviour(decorate: Any) -> tuple[object, ...]:
        @decorate(order=True)
        class One:
            """One field."""

            a: int

        @decorate(order=True)
        class Nothing:
            """No field."""

        one, same, two = (_uncalled(One, value) for value in (1, 1, 2))
        empty, other = _uncalled(Nothing), _uncalled(Nothing)
        return (
            (hash(one), one == same, one == two, one.__lt__(two), one.__ge__(two), repr(one).split(".")[-1]),
            (hash(empty), empty == other, empty.__lt__(other), empty.__le__(other), repr(empty).split(".")[-1]),
        )

    expected = behaviour(lambda **options: dataclasses.dataclass(frozen=True, slots=True, **options))
    assert expected == ((hash((1,)), True, False, True, False, "One(a=1)"), (hash(()), True, False, True, "Nothing()"))
    assert behaviour(record) == expected


def test_a_record_without_fields_and_one_that_names_its_own_slots_are_made_as_declared() -> None:
    @record
    class Empty:
        """Nothing."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class EmptyDC:
        """Nothing."""

    first = Empty()  # hashed before the class's second call compiles its methods
    assert hash(first) == hash(EmptyDC())
    assert (repr(Empty()), Empty() == Empty(), hash(Empty())) == (
        repr(EmptyDC()).replace("EmptyDC", "Empty"),
        True,
        hash(EmptyDC()),
    )
    assert repr(Empty()).endswith(".<locals>.Empty()")

    @record
    class Slotted:
        """Names its slots: a record has those of its fields."""

        __slots__ = ()
        a: int

    assert vars(Slotted)["__slots__"] == ("a",) and Slotted(1).a == 1


def test_a_record_has_no_instance_dict_and_no_weak_reference_slot_as_the_slotted_dataclass() -> None:
    for cls in (Point, PointDC):
        assert not hasattr(cls, "__weakref__")
        assert not hasattr(cls(1), "__dict__")


def test_a_class_variable_declared_between_fields_is_not_a_field_and_the_fields_after_it_are() -> None:
    @record
    class Mixed:
        """A class variable between two fields."""

        a: int
        LIMIT: ClassVar[int] = 3
        b: int = 0

    assert [f.name for f in dataclasses.fields(Mixed)] == ["a", "b"]
    assert Mixed(1, 2) == Mixed(a=1, b=2) and Mixed.LIMIT == 3 and repr(Mixed(1)).endswith("Mixed(a=1, b=0)")


def test_class_variables_are_told_from_fields_by_annotation_text_or_value_as_dataclasses_tells_them() -> None:
    # Declared in a module without deferred annotations, a class annotates
    # its attributes with the values themselves; here with text, as both
    # "ClassVar[...]" and "typing.ClassVar[...]".
    annotations: dict[str, object] = {
        "a": int,
        "BARE": ClassVar,
        "VALUE": ClassVar[int],
        "TEXT": "ClassVar[int]",
        "DOTTED": "typing.ClassVar[int]",
        "b": "list[int]",
        "c": int | None,  # a value without a __name__
    }
    constants = {"BARE": 1, "VALUE": 2, "TEXT": 3, "DOTTED": 4, "c": None}

    def declare(decorate: Any, name: str) -> Any:
        return decorate(type(name, (), {"__annotations__": dict(annotations), "__doc__": "d", **constants}))

    mine = declare(record, "Mine")
    theirs = declare(dataclasses.dataclass(frozen=True, slots=True), "Theirs")
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(theirs)] == ["a", "b", "c"]
    assert [f.type for f in dataclasses.fields(mine)] == [int, "list[int]", int | None]
    made = mine(1, [2])
    assert (made.a, made.b, mine.DOTTED, repr(made)) == (1, [2], 4, repr(theirs(1, [2])).replace("Theirs", "Mine"))
    assert typing.get_origin(annotations["VALUE"]) is ClassVar


def test_post_init_runs_on_the_first_call_of_a_record_class_and_on_every_later_one() -> None:
    @record
    class Positive:
        """Refuses a value under one after construction."""

        value: int

        def __post_init__(self) -> None:
            if self.value < 1:
                raise ValueError(f"not positive: {self.value}")

    for _ in ("first call, bound without compiling", "second call, compiled"):
        with pytest.raises(ValueError, match=r"^not positive: 0$"):
            Positive(0)
    assert Positive(2).value == 2


def test_ordering_and_identity_equality_follow_the_options() -> None:
    assert sorted([Ranked(2, "a"), Ranked(1, "b"), Ranked(1, "a")]) == [Ranked(1, "a"), Ranked(1, "b"), Ranked(2, "a")]
    assert Ranked(1, "a") <= Ranked(1, "a") < Ranked(1, "b")
    assert Ranked(2, "a") > Ranked(1, "z") and Ranked(2, "a") >= Ranked(2, "a")
    h, same = Handle(1), []
    same.append(h)
    assert h == same[0] and h != Handle(1)
    assert hash(h) == object.__hash__(h)
    assert hash(Checked(1, {"a": 1})) == hash(Checked(1, {"b": 2}))  # hash=False: left out of the hash


def test_a_record_pickles_and_copies() -> None:
    p = Point(1, 2, ("a",), "n")
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)).note == "n"


def test_a_record_that_prints_itself_prints_an_ellipsis_inside() -> None:
    holder: dict[str, object] = {}
    c = Checked(1, holder)  # type: ignore[arg-type]
    holder["me"] = c
    assert repr(c) == "Checked(value=1, hashed={'me': ...})"
    # Only the very record is elided: another of its class prints in full.
    outer = Checked(1, {"inner": Checked(2)})  # type: ignore[dict-item]
    assert repr(outer) == "Checked(value=1, hashed={'inner': Checked(value=2, hashed={})})"


def test_declarations_records_do_not_support_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^non-default argument 'b' follows default argument$"):

        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match=r"^Child: a record has no base class$"):

        @record
        class Child(Point):
            z: int = 0

    with pytest.raises(ValueError, match=r"^eq must be true if order is true$"):

        @record(eq=False, order=True)  # type: ignore[misc]
        class Unordered:
            a: int


def test_an_undocumented_record_is_documented_by_its_signature_as_dataclasses_does() -> None:
    @record
    class Bare:
        a: int
        b: str = "x"

    @dataclasses.dataclass(frozen=True, slots=True)
    class BareDC:
        a: int
        b: str = "x"

    assert Bare.__doc__ == (BareDC.__doc__ or "").replace("BareDC", "Bare")
    assert (Point.__doc__, PointDC.__doc__) == ("A point.", "A point.")  # a documented one keeps its own


def test_importing_every_machine_imports_neither_dataclasses_nor_inspect() -> None:
    code = (
        "import sys\n"
        "import planfold.kernel.session, planfold.kernel.plan, planfold.kernel.goal, planfold.kernel.tools\n"
        "print(sorted(m for m in ('dataclasses', 'inspect', 'json', 'hashlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_init_var_is_refused_whether_its_annotation_is_text_or_a_value() -> None:
    with pytest.raises(TypeError, match=r"^Text\.a: a record has no InitVar$"):

        @record
        class Text:
            a: dataclasses.InitVar[int]

    for annotation in (dataclasses.InitVar[int], dataclasses.InitVar):
        namespace: dict[str, Any] = {"__annotations__": {"a": annotation}, "__doc__": "d"}
        with pytest.raises(TypeError, match=r"^Value\.a: a record has no InitVar$"):
            record(type("Value", (), namespace))


def test_a_plain_subclass_of_a_record_may_set_and_delete_its_own_attributes_but_never_a_field() -> None:
    # dataclasses means this too, but on Python 3.11 its slotted frozen
    # class refuses every attribute of a subclass with a TypeError (its
    # __setattr__ names the class it replaced); a record does what it means.
    @record
    class Point:
        """Two coordinates."""

        x: int
        y: int

    class Tagged(Point):  # not a record: it has an instance dict
        pass

    seen: list[object] = []
    plain, sub = Point(1, 2), Tagged(3, 4)
    for target, name in ((plain, "x"), (plain, "tag"), (sub, "x"), (sub, "tag")):
        try:
            setattr(target, name, 9)
            seen.append(("set", name, getattr(target, name)))
        except dataclasses.FrozenInstanceError:
            seen.append(("refused", name))
    for target, name in ((sub, "tag"), (sub, "y"), (plain, "x"), (plain, "tag")):
        try:
            delattr(target, name)
            seen.append(("deleted", name, hasattr(target, name)))
        except dataclasses.FrozenInstanceError:
            seen.append(("kept", name, getattr(target, name, None)))
    assert seen == [
        ("refused", "x"),
        ("refused", "tag"),
        ("refused", "x"),
        ("set", "tag", 9),
        ("deleted", "tag", False),
        ("kept", "y", 4),
        ("kept", "x", 1),
        ("kept", "tag", None),
    ]


def test_a_record_restored_from_a_shorter_state_sets_only_the_fields_the_state_gives() -> None:
    @record
    class Pair:
        """Two values."""

        a: int
        b: int = 0

    made: Any = Pair.__new__(Pair)
    made.__setstate__([5])  # a state written before the second field existed
    assert made.a == 5 and not hasattr(made, "b")


def _init_parameters(cls: Any) -> list[tuple[str, object]]:
    """The names and kinds of ``cls.__init__``'s parameters, the instance's
    included, once a record's ``__init__`` is compiled (at its second call)."""
    cls(1), cls(2)
    return [(p.name, p.kind) for p in inspect.signature(cls.__init__).parameters.values()]


def test_a_record_may_name_a_field_self_and_is_built_by_keyword_and_by_position() -> None:
    @record
    class Odd:
        """A field that shares the name of the instance."""

        self: int
        other: str = "o"

    @dataclasses.dataclass(frozen=True, slots=True)
    class OddDC:
        self: int
        other: str = "o"

    for _ in range(3):  # the first call, the one that compiles, and a compiled one
        assert (Odd(1).self, Odd(self=2, other="x").other) == (OddDC(1).self, OddDC(self=2, other="x").other)
    assert list(inspect.signature(Odd).parameters) == list(inspect.signature(OddDC).parameters)
    assert _init_parameters(Odd) == _init_parameters(OddDC)  # the instance's renamed as the dataclass's


def test_a_compiled_init_names_its_parameters_as_the_dataclasses_own_instance_included() -> None:
    assert _init_parameters(Point) == _init_parameters(PointDC)
    assert [name for name, _ in _init_parameters(Point)] == ["self", "x", "y", "tags", "note"]


def test_the_compiled_methods_of_a_record_are_named_and_placed_as_the_dataclasses() -> None:
    @record
    class Point:
        """Two coordinates."""

        x: int
        y: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class PointDC:
        x: int
        y: int

    Point(1, 2), Point(3, 4)  # the second construction compiles the methods
    for name in ("__init__", "__eq__", "__hash__"):
        ours, theirs = getattr(Point, name), getattr(PointDC, name)
        assert ours.__qualname__.replace("Point.", "PointDC.") == theirs.__qualname__
        assert ours.__module__ == theirs.__module__ == __name__
    assert Point(1, 2) == Point(1, 2) and hash(Point(1, 2)) == hash(PointDC(1, 2))
