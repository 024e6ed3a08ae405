"""Typed payloads: every JSON shape of the log is a frozen dataclass, read by
one reader driven by the types.

Theory of operation
-------------------
Payloads are stored as plain JSON so that any language can read a log. Each
payload kind is one frozen dataclass whose annotations are its whole
contract: the JSON type of every key, and its value rules as ``Annotated``
markers (``Range`` for integers, ``Text`` for strings, ``Code`` for the code
a field's refusal carries, ``OMISSIBLE`` for a key that may be left out,
``Opaque`` for any JSON value). Rules that tie two fields together are
declared on the class (``__rules__``: ``PresentWhen``, ``NonBlankWhen``).

``shape_of(type)`` reads those annotations once into a ``Shape`` tree, and
everything else is made from that tree: ``read_as(type, value)`` (the one
reader: exact key sets, exact JSON types, ``true`` is not an integer, every
problem reported with its path in one ``PayloadError``), ``to_json(value)``
(its inverse for every value it accepts), and, in the adapters, the JSON
Schema of the same types.

Unions: ``X | None``; a union of records tells its members apart by a *tag*,
a field every member declares as a ``Literal`` with values of its own
(``type``, ``operation``, ``action``); a union of a string and a record tells
them apart by the JSON type. Fields every member of a tagged union shares are
read before the tag, so a field's own code (``unknown-version``) wins over
the tag's (``unknown-operation``), which wins over any other problem.

Every integer is a safe integer: within ``±MAX_SAFE_INTEGER`` (2**53 - 1),
the range a JSON reader using doubles reads exactly. A reader refuses
anything beyond it, whatever the field's own range.

Readers and makers are written as Python source from the shapes, once per
type and on first use, and compiled, as ``dataclasses`` writes an
``__init__``. They make a record without its ``__init__``: a frozen
dataclass's sets every field through ``object.__setattr__``, which costs
several times as much as the rest. The values are stored into an instance
of a plain class with the record's very slots (its *shadow*), which then
becomes the record by assigning its ``__class__``, as Python allows between
classes of the same layout (``maker``, ``record_maker``, ``record_lines``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from .errors import KEBAB_CASE, PayloadError, Problem

__all__ = [
    "JSON",
    "MAX_SAFE_INTEGER",
    "NONE_IS_ABSENT",
    "OMISSIBLE",
    "SHAPE_CODES",
    "Code",
    "Count",
    "FieldShape",
    "JSONObject",
    "Kebab",
    "Millis",
    "NonBlank",
    "NonBlankWhen",
    "NonEmpty",
    "Opaque",
    "Positive",
    "PresentWhen",
    "Range",
    "SafeInt",
    "Shape",
    "Text",
    "Trimmed",
    "Unreadable",
    "inline_check",
    "maker",
    "object_of",
    "read_as",
    "read_problems",
    "reader_of",
    "record_lines",
    "record_maker",
    "shape_of",
    "text_problem",
    "to_json",
]

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"
JSONObject: TypeAlias = Mapping[str, JSON]

#: The largest integer a JSON reader using doubles (every JavaScript runtime)
#: reads exactly. Every integer in a payload lies within ``±MAX_SAFE_INTEGER``.
MAX_SAFE_INTEGER = 2**53 - 1


# --------------------------------------------------------------------------
# Markers


@dataclasses.dataclass(frozen=True, slots=True)
class Range:
    """An integer from ``minimum`` to ``maximum`` (both included; never
    beyond the safe integers)."""

    minimum: int = -MAX_SAFE_INTEGER
    maximum: int = MAX_SAFE_INTEGER


class Text(enum.Enum):
    """A rule for a string: ``non-empty`` (at least one character),
    ``non-blank`` (a character ``str.strip`` keeps), ``trimmed`` (non-blank
    and nothing for ``str.strip`` to remove) or ``kebab-case``
    (``kernel.errors.KEBAB_CASE``)."""

    NON_EMPTY = "non-empty"
    NON_BLANK = "non-blank"
    TRIMMED = "trimmed"
    KEBAB = "kebab-case"


@dataclasses.dataclass(frozen=True, slots=True)
class Code:
    """The code every refusal of this field's present value carries (a
    missing key is always ``missing-field``)."""

    code: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Omissible:
    """The key may be left out: it then reads as the field's default, and a
    field whose value is its default is not written. A ``None`` default is
    never written as ``null``, and a present ``null`` is refused."""


#: The marker of a key that may be left out (see ``_Omissible``).
OMISSIBLE = _Omissible()


@dataclasses.dataclass(frozen=True, slots=True)
class _NoneIsAbsent:
    """The field's ``None`` is written by leaving the key out: the key may be
    left out (reading as ``None``), and a present ``null`` is refused."""


#: The marker of a field whose ``None`` is a left-out key (see ``_NoneIsAbsent``).
NONE_IS_ABSENT = _NoneIsAbsent()


@dataclasses.dataclass(frozen=True, slots=True)
class Opaque:
    """Any JSON value ``check`` accepts, kept as ``freeze`` makes it (the
    writer writes any mapping as an object and any list or tuple as an
    array); ``like`` (optional) is the type of what is expected there, for
    people and schemas: the value is not read as it."""

    check: Callable[[object], bool]
    freeze: Callable[[Any], Any]
    like: object = None


@dataclasses.dataclass(frozen=True, slots=True)
class PresentWhen:
    """Class rule: ``field`` is not ``None`` exactly when ``on`` is ``value``."""

    field: str
    on: str
    value: object
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class NonBlankWhen:
    """Class rule: ``field`` is non-blank text when ``on`` is ``value``;
    otherwise refused with ``code``."""

    field: str
    on: str
    value: object
    code: str
    message: str


Rule: TypeAlias = PresentWhen | NonBlankWhen

SafeInt: TypeAlias = Annotated[int, Range()]
#: A count: zero or more.
Count: TypeAlias = Annotated[int, Range(0)]
#: A number from one: turns, steps, revisions, caps.
Positive: TypeAlias = Annotated[int, Range(1)]
#: A time in integer milliseconds, never negative.
Millis: TypeAlias = Annotated[int, Range(0)]
NonEmpty: TypeAlias = Annotated[str, Text.NON_EMPTY]
NonBlank: TypeAlias = Annotated[str, Text.NON_BLANK]
Trimmed: TypeAlias = Annotated[str, Text.TRIMMED]
Kebab: TypeAlias = Annotated[str, Text.KEBAB]

#: The codes of the reader's own problems (anything else is a field's ``Code``).
SHAPE_CODES: frozenset[str] = frozenset(
    {"wrong-type", "missing-field", "unexpected-field", "unknown-value", "out-of-range", "invalid-text", "rule-broken"}
)


# --------------------------------------------------------------------------
# Shapes


ShapeKind = Literal["int", "bool", "str", "null", "choice", "array", "json", "record", "union"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class FieldShape:
    """One key of a record: its shape, the code of its refusals, whether it
    may be left out and the value it then reads as."""

    name: str
    shape: Shape
    code: str | None
    omissible: bool
    default: object


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """What one annotation means on the wire (see the module docstring).

    ``int``: ``range``; ``str``: ``text`` (or ``None``); ``choice``: the
    ``choices`` of a ``Literal``; ``array``: ``item``; ``json``: ``opaque``;
    ``record``: ``cls``, ``fields`` (in order), ``rules`` and ``doc``;
    ``union``: ``members`` and, for records, the ``tag`` field and the
    ``common`` fields every member shares.
    """

    kind: ShapeKind
    range: Range | None = None
    text: Text | None = None
    choices: tuple[str | int, ...] = ()
    item: Shape | None = None
    opaque: Opaque | None = None
    cls: type | None = None
    fields: tuple[FieldShape, ...] = ()
    rules: tuple[Rule, ...] = ()
    doc: str = ""
    members: tuple[Shape, ...] = ()
    tag: str | None = None
    common: tuple[str, ...] = ()

    @property
    def nullable(self) -> bool:
        return self.kind == "null" or any(m.kind == "null" for m in self.members)


_SHAPES: dict[object, Shape] = {}
_NULL = Shape("null")
_BOOL = Shape("bool")


def shape_of(tp: object) -> Shape:
    """The shape of an annotation (cached). Raises ``TypeError`` for an
    annotation the reader cannot read exactly."""
    found = _SHAPES.get(tp)
    if found is None:
        found = _SHAPES[tp] = _make_shape(tp)
    return found


def _split(tp: object) -> tuple[object, tuple[object, ...]]:
    """An annotation without its ``Annotated`` markers, and the markers."""
    markers: tuple[object, ...] = ()
    while typing.get_origin(tp) is Annotated:
        markers = (*markers, *tp.__metadata__)  # type: ignore[attr-defined]
        tp = typing.get_args(tp)[0]
    return tp, markers


def _make_shape(tp: object) -> Shape:
    base, markers = _split(tp)
    ranges = [m for m in markers if isinstance(m, Range)]
    texts = [m for m in markers if isinstance(m, Text)]
    opaque = next((m for m in markers if isinstance(m, Opaque)), None)
    if opaque is not None:
        return Shape("json", opaque=opaque)
    if base is int:
        return Shape("int", range=ranges[-1] if ranges else Range())
    if base is bool:
        return _BOOL
    if base is str:
        return Shape("str", text=texts[-1] if texts else None)
    if base is None or base is type(None):
        return _NULL
    origin = typing.get_origin(base)
    if origin is Literal:
        return Shape("choice", choices=typing.get_args(base))
    if origin is tuple:
        args = typing.get_args(base)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"only tuple[T, ...] is a JSON array, not {base!r}")
        return Shape("array", item=shape_of(args[0]))
    if origin is typing.Union or origin is types.UnionType:
        return _union_shape(base)
    if isinstance(base, type) and dataclasses.is_dataclass(base):
        return _record_shape(base)
    raise TypeError(f"{base!r} has no exact JSON reading")


def _record_shape(cls: type) -> Shape:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        _, markers = _split(hint)
        code = next((m.code for m in markers if isinstance(m, Code)), None)
        none_is_absent = NONE_IS_ABSENT in markers
        omissible = none_is_absent or OMISSIBLE in markers
        default: object = field.default
        if field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        if omissible and default is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{field.name} may be left out but has no default")
        if none_is_absent and default is not None:
            raise TypeError(f"{cls.__name__}.{field.name}: a None written as a left-out key needs a None default")
        shape = shape_of(hint)
        if none_is_absent:
            shape = _without_null(shape)
        out.append(FieldShape(field.name, shape, code, omissible, default))
    rules: tuple[Rule, ...] = getattr(cls, "__rules__", ())
    doc = (cls.__doc__ or "").strip()
    return Shape("record", cls=cls, fields=tuple(out), rules=rules, doc=doc)


def _without_null(shape: Shape) -> Shape:
    if shape.kind != "union":
        return shape
    rest = tuple(m for m in shape.members if m.kind != "null")
    return rest[0] if len(rest) == 1 else _tagged(rest)


def _union_shape(tp: object) -> Shape:
    members = tuple(shape_of(arg) for arg in typing.get_args(tp))
    return _tagged(members)


def _tagged(members: tuple[Shape, ...]) -> Shape:
    records = [m for m in members if m.kind == "record"]
    others = [m.kind for m in members if m.kind != "record"]
    if len(set(others)) != len(others) or (records and "json" in others):
        raise TypeError(f"a union's members must differ in JSON type: {others}")
    if len(records) <= 1:
        return Shape("union", members=members)
    if any(kind != "null" for kind in others):  # a tagged union is read as an object, or null
        raise TypeError(f"a union of records may add only null: {others}")
    names = [{f.name: f for f in r.fields} for r in records]
    tag = None
    for name in names[0]:
        shapes = [n.get(name) for n in names]
        if all(f is not None and f.shape.kind == "choice" for f in shapes):
            values = [v for f in shapes if f is not None for v in f.shape.choices]
            if len(values) == len(set(values)):
                tag = name
                break
    if tag is None:
        raise TypeError("a union of records needs a tag: a Literal field with values of each member's own")
    common = tuple(
        name
        for name, field in names[0].items()
        if name != tag and all(name in n and _same(n[name], field) for n in names[1:])
    )
    return Shape("union", members=members, tag=tag, common=common)


def _same(a: FieldShape, b: FieldShape) -> bool:
    return a.shape is b.shape and a.code == b.code and a.omissible == b.omissible


# --------------------------------------------------------------------------
# The reader

_Path = tuple[str | int, ...]
_Found = list[tuple[_Path, str, str]]


class Unreadable(Exception):
    """Raised by a reader of ``reader_of``: what it found wrong below one
    value, as (path, code, message) triples, and the value as far as it
    could be read (``partial``: what could not be read is left at its
    default, or empty). ``error`` gives the ``PayloadError`` that
    ``read_as`` raises for it."""

    def __init__(self, problems: _Found, partial: object) -> None:
        super().__init__(problems)
        self.problems = problems
        self.partial = partial

    def error(self, where: str = "payload") -> PayloadError:
        """The ``PayloadError`` listing every problem, each with its path
        from ``where``; its code is the first problem's own code (a field's
        ``Code``) or ``malformed-payload``."""
        problems = _problems(self, where)
        message = "; ".join(f"{p.where}: {p.message}" for p in problems)
        code = next((p.code for p in problems if p.code not in SHAPE_CODES), None)
        return PayloadError(message, code=code, problems=problems)


def _under(key: str | int, exc: Unreadable, code: str | None = None) -> _Found:
    return [((key, *path), code or c, m) for path, c, m in exc.problems]


_Reader = Callable[[object], Any]
_READERS: dict[int, _Reader] = {}
_EMPTY: dict[int, object] = {}


def _reader(shape: Shape) -> _Reader:
    found = _READERS.get(id(shape))
    if found is None:
        found = _READERS[id(shape)] = _compile(shape)
    return found


def _empty(shape: Shape) -> object:
    """The value a shape's reader leaves where it could read nothing: the
    empty string, list or record, ``False``, the smallest number allowed, the
    first choice, or ``None``."""
    key = id(shape)
    if key not in _EMPTY:
        kind = shape.kind
        if kind == "int":
            assert shape.range is not None
            _EMPTY[key] = min(max(0, shape.range.minimum), shape.range.maximum)
        elif kind == "record":
            _EMPTY[key] = _builder(shape)([_default(f) for f in shape.fields])
        elif kind == "union" and not shape.nullable:
            _EMPTY[key] = _empty(shape.members[0])
        elif kind == "choice":
            _EMPTY[key] = shape.choices[0]
        else:
            _EMPTY[key] = {"bool": False, "str": "", "array": ()}.get(kind)
    return _EMPTY[key]


def _default(field: FieldShape) -> object:
    return field.default if field.default is not dataclasses.MISSING else _empty(field.shape)


def _fail(shape: Shape, code: str, message: str) -> Unreadable:
    return Unreadable([((), code, message)], _empty(shape))


def _compile(shape: Shape) -> _Reader:
    kind = shape.kind
    if kind in ("int", "bool", "str", "null", "choice"):
        return _scalar_reader(shape)
    if kind == "array":
        return _array_reader(shape)
    if kind == "json":
        return _opaque_reader(shape)
    if kind == "record":
        return _record_reader(shape)
    return _union_reader(shape)


def text_problem(rule: Text, value: str) -> str | None:
    """Why ``value`` breaks ``rule``, or ``None`` when it keeps it."""
    if rule is Text.NON_EMPTY:
        return None if value else "must not be empty"
    if rule is Text.NON_BLANK:
        return None if value.strip() else "must not be blank"
    if rule is Text.TRIMMED:
        return None if value.strip() and value == value.strip() else "must be non-blank text without surrounding space"
    return None if KEBAB_CASE.fullmatch(value) else f"must be kebab-case, got {value!r}"


def _scalar_problem(shape: Shape, value: object) -> tuple[str, str] | None:
    """The code and message of what makes ``value`` not a ``shape`` scalar."""
    kind = shape.kind
    if kind == "int":
        assert shape.range is not None
        if isinstance(value, bool) or not isinstance(value, int):
            return "wrong-type", "must be an integer"
        low, high = max(shape.range.minimum, -MAX_SAFE_INTEGER), min(shape.range.maximum, MAX_SAFE_INTEGER)
        if value < low:
            return "out-of-range", f"must be >= {low}, got {value}"
        if value > high:
            detail = " (the largest safe integer)" if high == MAX_SAFE_INTEGER else ""
            return "out-of-range", f"must be <= {high}{detail}, got {value}"
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else ("wrong-type", "must be a boolean")
    if kind == "null":
        return None if value is None else ("wrong-type", "must be null")
    if kind == "str":
        if not isinstance(value, str):
            return "wrong-type", "must be a string"
        problem = None if shape.text is None else text_problem(shape.text, value)
        return None if problem is None else ("invalid-text", problem)
    known = isinstance(value, str | int) and not isinstance(value, bool) and value in shape.choices
    return None if known else ("unknown-value", f"must be one of {list(shape.choices)}, got {value!r}")


def _scalar_reader(shape: Shape) -> _Reader:
    consts: dict[str, object] = {}
    fast = inline_check(shape, "value", consts)
    choices = {c: c for c in shape.choices}

    def read(value: object) -> object:
        problem = _scalar_problem(shape, value)
        if problem is not None:
            raise _fail(shape, *problem)
        # A choice reads as the choice itself (an exact str or int).
        return choices.get(value, value) if choices else value  # type: ignore[call-overload]

    if fast is None:
        return read
    # The common case (exact JSON types) without a call, as in _fast_record.
    consts["slow"] = read
    exec(f"def read(value):\n    if {fast}:\n        return value\n    return slow(value)", consts)
    quick: _Reader = consts["read"]  # type: ignore[assignment]
    return quick


def _array_reader(shape: Shape) -> _Reader:
    assert shape.item is not None
    item = _reader(shape.item)

    def read(value: object) -> tuple[Any, ...]:
        if type(value) is not list and (isinstance(value, str | bytes) or not isinstance(value, Sequence)):
            raise _fail(shape, "wrong-type", "must be a list")
        try:
            return tuple(map(item, value))
        except Unreadable:
            pass
        problems: _Found = []
        partial = []
        for index, element in enumerate(value):
            try:
                partial.append(item(element))
            except Unreadable as exc:
                problems += _under(index, exc)
                partial.append(exc.partial)
        raise Unreadable(problems, tuple(partial))

    return read


def _opaque_reader(shape: Shape) -> _Reader:
    opaque = shape.opaque
    assert opaque is not None

    def read(value: object) -> object:
        if not opaque.check(value):
            raise _fail(shape, "wrong-type", "must be a JSON value")
        return opaque.freeze(value)

    return read


def _record_reader(shape: Shape) -> _Reader:
    fields = shape.fields
    readers = tuple(_reader(f.shape) for f in fields)
    keys = frozenset(f.name for f in fields)
    build = _builder(shape)
    rules = shape.rules

    def slow(value: object) -> object:
        if not isinstance(value, Mapping):
            raise _fail(shape, "wrong-type", "must be an object")
        problems: _Found = []
        values = []
        for field, read in zip(fields, readers, strict=True):
            if field.name not in value:
                if not field.omissible:
                    problems.append(((field.name,), "missing-field", "required field is missing"))
                values.append(_default(field))
                continue
            try:
                values.append(read(value[field.name]))
            except Unreadable as exc:
                problems += _under(field.name, exc, field.code)
                # A value wrong as a whole is left at the field's default;
                # one read in part (a list, an object) keeps what was read.
                whole = any(not path for path, _, _ in exc.problems)
                values.append(_default(field) if whole else exc.partial)
        problems += [
            ((str(key),), "unexpected-field", "is not a known field")
            for key in sorted(str(k) for k in value.keys() - keys)
        ]
        made = build(values)
        # A rule is judged only on fields that were read.
        unread = {path[0] for path, _, _ in problems if path}
        problems += _broken(tuple(r for r in rules if r.on not in unread and r.field not in unread), made)
        if problems:
            raise Unreadable(problems, made)
        return made

    return _fast_record(shape, readers, keys, slow)


def _broken(rules: tuple[Rule, ...], made: object) -> _Found:
    found: _Found = []
    for rule in rules:
        on = getattr(made, rule.on) == rule.value
        value = getattr(made, rule.field)
        if isinstance(rule, PresentWhen):
            if (value is not None) != on:
                found.append(((rule.field,), "rule-broken", rule.message))
        elif on and not (isinstance(value, str) and value.strip()):
            found.append(((rule.field,), rule.code, rule.message))
    return found


def inline_check(shape: Shape, var: str, consts: dict[str, object]) -> str | None:
    """A Python condition true when ``var`` certainly reads as ``shape`` as
    it is (the common case, checked without a call), or ``None`` when only
    the shape's reader can tell; the names it uses go into ``consts``. For
    readers written from shapes, here and in the adapters."""
    kind = shape.kind
    if kind == "int":
        assert shape.range is not None
        low, high = max(shape.range.minimum, -MAX_SAFE_INTEGER), min(shape.range.maximum, MAX_SAFE_INTEGER)
        return f"type({var}) is int and {low} <= {var} <= {high}"
    if kind == "bool":
        return f"({var} is True or {var} is False)"
    if kind == "null":
        return f"{var} is None"
    if kind == "str":
        rule = shape.text
        check = f"type({var}) is str"
        if rule is Text.NON_EMPTY:
            return f"{check} and {var} != ''"
        if rule is Text.NON_BLANK:
            return f"{check} and {var} != '' and not {var}.isspace()"
        if rule is Text.TRIMMED:
            return f"{check} and {var} != '' and {var} == {var}.strip()"
        if rule is Text.KEBAB:
            consts["kebab"] = KEBAB_CASE.fullmatch
            return f"{check} and kebab({var}) is not None"
        return check
    if kind == "choice":
        for exact in (str, int):
            if all(type(c) is exact for c in shape.choices):
                name = f"choices_{var}"
                consts[name] = frozenset(shape.choices)
                return f"type({var}) is {exact.__name__} and {var} in {name}"
    return None


def _inline_rule(rule: Rule, index: Mapping[str, str], consts: dict[str, object]) -> str:
    """A Python condition true when the fields read into the variables of
    ``index`` keep ``rule`` (as ``_broken`` judges it)."""
    field, on = index[rule.field], index[rule.on]
    name = f"rule_value_{len(consts)}"
    consts[name] = rule.value
    if isinstance(rule, PresentWhen):
        return f"(({field} is not None) == ({on} == {name}))"
    return f"({on} != {name} or (type({field}) is str and {field} != '' and not {field}.isspace()))"


def _converted(shape: Shape, var: str, nullable: bool, consts: dict[str, object]) -> list[str]:
    """Lines that read ``var`` as ``shape`` (raising ``Unreadable``, or
    returning ``slow(value)`` where only the slow reader can tell): a union
    of records picks its member by the tag right here."""
    if shape.kind != "union" or shape.tag is None or not all(type(c) is str for c in _tags(shape)):
        line = f"{var} = read_{var}({var})"
        return [f"if {var} is not None: {line}"] if nullable else [line]
    consts[f"members_{var}"] = {tag: _reader(member) for tag, member in _tags(shape).items()}
    pick = [
        f"if type({var}) is not dict: return slow(value)",
        f"tag_{var} = {var}.get({shape.tag!r})",
        f"member_{var} = members_{var}.get(tag_{var}) if type(tag_{var}) is str else None",
        f"if member_{var} is None: return slow(value)",
        f"{var} = member_{var}({var})",
    ]
    return [f"if {var} is not None:", *(f"    {line}" for line in pick)] if nullable else pick


def _tags(shape: Shape) -> dict[str | int, Shape]:
    """The member of a tagged union of records each tag value names."""
    return {
        choice: member
        for member in shape.members
        if member.kind == "record"
        for field in member.fields
        if field.name == shape.tag
        for choice in field.shape.choices
    }


def _fast_record(shape: Shape, readers: tuple[_Reader, ...], keys: frozenset[str], slow: _Reader) -> _Reader:
    """The record reader: a function made for the record, as a dataclass's
    own ``__init__`` is, that reads the common case (a ``dict`` with exactly
    the record's keys, whose values need no conversion) with no call per
    field, and hands anything else to ``slow``, which finds every problem."""
    consts: dict[str, object] = {"keys": keys, "slow": slow, "Invalid": Unreadable}
    lines = ["def read(value):", "    if type(value) is dict and value.keys() == keys:"]
    conditions: list[str] = []
    converted: list[tuple[str, bool]] = []
    for index, field in enumerate(shape.fields):
        var = f"v{index}"
        lines.append(f"        {var} = value[{field.name!r}]")
        condition = inline_check(field.shape, var, consts)
        if condition is None:
            consts[f"read_{var}"] = readers[index]
            converted.append((var, field.shape.nullable))
        else:
            conditions.append(f"({condition})")
    if converted:
        lines.append("        try:")
        for var, nullable in converted:
            field_shape = shape.fields[int(var[1:])].shape
            lines += [f"            {line}" for line in _converted(field_shape, var, nullable, consts)]
        lines += ["        except Invalid:", "            return slow(value)"]
    variables = {field.name: f"v{number}" for number, field in enumerate(shape.fields)}
    conditions += [_inline_rule(rule, variables, consts) for rule in shape.rules]
    body = _made(shape, consts, "v")
    if conditions:
        lines.append(f"        if {' and '.join(conditions)}:")
        lines += [f"            {line}" for line in body]
        lines.append("            return made")
    else:
        lines += [f"        {line}" for line in body]
        lines.append("        return made")
    lines.append("    return slow(value)")
    exec("\n".join(lines), consts)
    reader: _Reader = consts["read"]  # type: ignore[assignment]
    return reader


def _made(shape: Shape, consts: dict[str, object], prefix: str) -> list[str]:
    """Lines that make the record ``made`` from the variables ``<prefix>0``,
    ``<prefix>1`` … (see ``_making``)."""
    cls = shape.cls
    assert cls is not None
    values = [f"{prefix}{index}" for index in range(len(shape.fields))]
    return _making(cls, [field.name for field in shape.fields], values, consts, "made")


def _making(
    cls: type, names: Sequence[str], values: Sequence[str], consts: dict[str, object], target: str
) -> list[str]:
    """Lines that make ``target``, an instance of ``cls`` whose fields
    ``names`` hold ``values``. A frozen dataclass's ``__init__`` sets each
    field through ``object.__setattr__``, which costs several times as much
    as storing it; so the values are stored into an instance of ``cls``'s
    *shadow* (``_shadow``), which then becomes an instance of ``cls``, and
    ``__post_init__``, when the class has one, runs as it would. A class
    with no shadow is called."""
    shadow = _shadow(cls)
    consts[f"{target}_cls"] = cls
    if shadow is None:
        return [f"{target} = {target}_cls({', '.join(values)})"]
    consts[f"{target}_shadow"] = shadow
    lines = [f"{target} = {target}_shadow()"]
    lines += [f"{target}.{name} = {values[index]}" for index, name in enumerate(names)]
    lines.append(f"{target}.__class__ = {target}_cls")
    if getattr(cls, "__post_init__", None) is not None:
        lines.append(f"{target}.__post_init__()")
    return lines


@functools.cache
def _shadow(cls: type) -> type | None:
    """A plain class with the very slots of ``cls`` and nothing else, so an
    instance of it may become an instance of ``cls`` by assigning its
    ``__class__`` (Python allows it between classes of the same layout), or
    ``None`` when ``cls`` has no such twin (its instances have a ``__dict__``,
    or part of their layout comes from a base class)."""
    slots = vars(cls).get("__slots__")
    if slots is None:
        return None
    shadow = type(f"{cls.__name__}Shadow", (), {"__slots__": slots})
    probe = shadow()
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return shadow


_T = TypeVar("_T")


@functools.cache
def maker(cls: type[_T]) -> Callable[..., _T]:
    """A function of the field values of the dataclass ``cls``, in field
    order, that makes it as ``cls(...)`` does, ``__post_init__`` included,
    without calling its ``__init__`` (a frozen dataclass's costs several
    times as much): for values made very often, from values already of
    their types (cached)."""
    names = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    values = [f"x{index}" for index in range(len(names))]
    consts: dict[str, object] = {}
    return _make(values, _making(cls, names, values, consts, "made"), consts)


def _make(values: Sequence[str], body: Sequence[str], consts: dict[str, object]) -> Callable[..., Any]:
    """The function of the parameters ``values`` that runs the lines
    ``body`` (whose names are in ``consts``) and returns ``made``."""
    lines = [f"def make({', '.join(values)}):", *(f"    {line}" for line in body), "    return made"]
    exec("\n".join(lines), consts)
    made: Callable[..., Any] = consts["make"]  # type: ignore[assignment]
    return made


def _builder(shape: Shape) -> Callable[[Sequence[object]], object]:
    """A function of the field values that makes the record (see ``_made``)."""
    consts: dict[str, object] = {}
    names = [f"x{index}" for index in range(len(shape.fields))]
    lines = ["def build(values):", f"    [{', '.join(names)}] = values"]
    lines += [f"    {line}" for line in _made(shape, consts, "x")]
    lines.append("    return made")
    exec("\n".join(lines), consts)
    build: Callable[[Sequence[object]], object] = consts["build"]  # type: ignore[assignment]
    return build


def record_lines(shape: Shape, values: Sequence[str], consts: dict[str, object], target: str) -> list[str]:
    """Lines of Python that make the record of ``shape`` into the variable
    ``target`` as the reader makes it, from ``values`` (expressions of its
    fields' values, in order, already of their types), and raise
    ``Unreadable`` when they break one of the record's rules; the names the
    lines use go into ``consts``, each made from ``target``. For readers
    written from shapes, here and in the adapters."""
    cls = shape.cls
    assert cls is not None
    lines = _making(cls, [field.name for field in shape.fields], values, consts, target)
    if shape.rules:
        consts.update({"broken": _broken, "Unreadable": Unreadable, f"{target}_rules": shape.rules})
        variables = {field.name: f"{target}.{field.name}" for field in shape.fields}
        kept = " and ".join(_inline_rule(rule, variables, consts) for rule in shape.rules)
        lines += [f"if not ({kept}):", f"    raise Unreadable(broken({target}_rules, {target}), {target})"]
    return lines


@functools.cache
def record_maker(shape: Shape) -> Callable[..., object]:
    """A function of a record's field values, in order and already of their
    types, that makes the record as the reader does, or raises
    ``Unreadable`` when they break one of the record's rules: for a decoder
    that checked the types itself (cached)."""
    values = [f"x{index}" for index in range(len(shape.fields))]
    consts: dict[str, object] = {}
    return _make(values, record_lines(shape, values, consts, "made"), consts)


def _union_reader(shape: Shape) -> _Reader:
    nullable = shape.nullable
    members = [m for m in shape.members if m.kind != "null"]
    tag = shape.tag
    if tag is None:
        return _untagged_reader(shape, members)
    by_tag = {choice: _reader(member) for choice, member in _tags(shape).items()}
    firsts = {f.name: f for f in members[0].fields}
    gate = (*shape.common, tag)
    expected = "an object or null" if nullable else "an object"

    def slow(value: object) -> object:
        if value is None and nullable:
            return None
        if not isinstance(value, Mapping):
            raise _fail(shape, "wrong-type", f"must be {expected}")
        missing = [name for name in gate if name not in value]
        if missing:
            found: _Found = [((name,), "missing-field", "required field is missing") for name in missing]
            raise Unreadable(found, _empty(shape))
        problems: _Found = []
        for name in shape.common:
            field = firsts[name]
            try:
                _reader(field.shape)(value[name])
            except Unreadable as exc:
                problems += _under(name, exc, field.code)
        found = value[tag]
        member = by_tag.get(found) if isinstance(found, str | int) and not isinstance(found, bool) else None
        if member is None:
            message = f"must be one of {list(by_tag)}, got {found!r}"
            problems.append(((tag,), firsts[tag].code or "unknown-value", message))
            raise Unreadable(problems, _empty(shape))
        return member(value)

    def read(value: object) -> object:
        if type(value) is dict:
            found = value.get(tag)
            member = by_tag.get(found) if type(found) is str else None
            if member is not None:
                return member(value)
        return slow(value)

    return read


def _fits(member: Shape, value: object) -> bool:
    """Whether ``value`` has the JSON type of ``member`` (a union without a
    tag tells its members apart by it)."""
    kind = member.kind
    if kind == "record":
        return isinstance(value, Mapping)
    if kind == "array":
        return isinstance(value, Sequence) and not isinstance(value, str | bytes)
    if kind in ("str", "choice"):
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return kind == "json"


_KIND_NAMES = {
    "int": "an integer", "bool": "a boolean", "str": "a string", "choice": "a string", "array": "a list",
    "json": "a JSON value", "record": "an object",
}


def _untagged_reader(shape: Shape, members: list[Shape]) -> _Reader:
    readers = [(m, _reader(m)) for m in members]
    nullable = shape.nullable
    expected = " or ".join([*(_KIND_NAMES[m.kind] for m in members), *(["null"] if nullable else [])])

    def read(value: object) -> object:
        if value is None and nullable:
            return None
        for member, member_read in readers:
            if _fits(member, value):
                return member_read(value)
        raise _fail(shape, "wrong-type", f"must be {expected}")

    return read


def _render(root: str, path: _Path) -> str:
    return root + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


_TOP: dict[object, _Reader] = {}


def reader_of(tp: object) -> Callable[[object], Any]:
    """The reader of ``tp`` as a function of one value (cached), for folds
    that read many values of one type; its refusal is an internal error that
    only ``read_as`` and ``read_problems`` turn into problems."""
    found = _TOP.get(tp)
    if found is None:
        found = _TOP[tp] = _reader(shape_of(tp))
    return found


def read_problems(tp: object, value: object, where: str = "payload") -> tuple[Any, tuple[Problem, ...]]:
    """``value`` read as ``tp`` and no problem; or the value as far as it
    could be read (what could not be read left at its default, or empty) and
    every problem found, each with its path from ``where``. Never raises for
    a bad value."""
    try:
        return reader_of(tp)(value), ()
    except Unreadable as exc:
        return exc.partial, _problems(exc, where)


def _problems(exc: Unreadable, where: str) -> tuple[Problem, ...]:
    return tuple(Problem(code, _render(where, path), message) for path, code, message in exc.problems)


def read_as(tp: object, value: object, where: str = "payload") -> Any:
    """``value`` read as ``tp``. Raises ``PayloadError`` listing every
    problem with its path; its code is the first problem's own code (a
    field's ``Code``) or ``malformed-payload``."""
    try:
        return reader_of(tp)(value)
    except Unreadable as exc:
        raise exc.error(where) from None


# --------------------------------------------------------------------------
# The writer


_WRITTEN: dict[type, tuple[tuple[str, bool, object], ...]] = {}


def to_json(value: object) -> JSON:
    """The JSON form of a value ``read_as`` made (dataclasses as objects, in
    field order; tuples as lists; omissible fields at their default left
    out); ``read_as`` of it gives the value back."""
    if value is None or isinstance(value, str | int | float):
        return value
    cls = type(value)
    layout = _WRITTEN.get(cls)
    if layout is None and dataclasses.is_dataclass(cls):
        layout = _WRITTEN[cls] = _layout(cls)
    if layout is not None:
        out: dict[str, JSON] = {}
        for name, omissible, default in layout:
            item = getattr(value, name)
            if not (omissible and item == default):
                out[name] = to_json(item)
        return out
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    raise TypeError(f"{cls.__name__} is not a payload value")


def object_of(record: object) -> dict[str, JSON]:
    """``to_json`` of a record: a JSON object (a payload, ready to append)."""
    out = to_json(record)
    if not isinstance(out, dict):
        raise TypeError(f"{type(record).__name__} is not a record")
    return out


def _layout(cls: type) -> tuple[tuple[str, bool, object], ...]:
    shape = shape_of(cls)
    return tuple((f.name, f.omissible, f.default) for f in shape.fields)
