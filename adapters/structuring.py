"""cattrs configured for exact JSON: the one structuring library of the
adapters, behind snapshots, model scripts and ``planfold serve``'s messages.

Theory of operation
-------------------
cattrs turns dataclasses into plain data and back with a function it
generates per class from the annotations. Out of the box it coerces
(``int("2")``, a string iterated as an array, ``True`` taken as ``1``); a
snapshot must come back *equal* and a script must be refused when it is
wrong, so ``exact_converter()`` registers hooks that keep JSON as it is:

- scalars are exactly their type both ways (a ``float`` also takes an
  ``int``; a ``bool`` is never a number);
- an array field takes only a JSON array (a set's items are sorted on the way
  out, so equal values give equal bytes); a fixed tuple takes an array of its
  length; a mapping whose keys are not strings is an array of ``[key, value]``
  pairs;
- a ``Literal`` is checked on the way out too;
- a JSON value (``Any``, the kernel's recursive ``JSON`` alias) is passed
  through untouched;
- a union whose members JSON tells apart (``int | str``, ``str | list[str]``,
  ``SomeClass | None``) picks its member by the JSON kind of the value, and by
  the Python type on the way out; a union JSON cannot tell apart (``str |
  SomeStrEnum``) is refused when its hook is built (``AmbiguousUnionError``);
- a union of several dataclasses is left to cattrs's tagged-union strategy
  (``tag_union``): the object carries a tag naming its class.

Objects must have exactly the fields of their class (``forbid_extra_keys``)
and errors are collected per field (``detailed_validation``);
``problems(exc, root)`` turns them into one sentence per problem, each with
its path (``cattrs.transform_error``), e.g. ``script.steps[0].label: expected
str, got int``.

On the way out, a dataclass goes through a function made from cattrs's own
(the same fields, keys and hooks) in which a field whose hook only checks its
value is checked inline and an optional object goes straight to its class's
hook (``_object_unstructure``): a hook is called only where it has work to do
or an error to raise, and a snapshot encodes a few such objects per append.

The wire protocol states its limits once, as ``msgspec.Meta`` markers on
``Annotated`` types (the OpenRPC document is generated from them); the
converter enforces them: a number's ``ge``/``gt``/``le``/``lt``, the
``min_length``/``max_length`` of a text, an array or an object, and a
text's ``pattern`` (searched, as msgspec does). cattrs reads a dataclass's
fields without their ``Annotated`` markers, so a field whose type carries a
limit is structured with the hook of its full type. ``exact_converter(
forbid_extra_keys=False)`` lets objects carry keys their class does not
have, for a caller that names them itself (the server reports the first
unknown key after the types and the texts' cap).

Why one library, and why cattrs
-------------------------------
Three readers had grown over the same kernel types: the kernel's payload
reader, msgspec mirrors of the payload types (a decoding fast path of the
stores) and this converter. Payloads have one reader, the kernel's; for
snapshots, script files and wire messages one library was chosen by
measuring both on real data (one process on 2 shared cores under load,
medians of 5 rounds; the data: the fold state of a 200,000-event
coding-agent session from ``benchmarks.workloads``, a 12-step script of
every step kind, and ``planfold serve`` params):

| data | msgspec | cattrs (this converter) |
|---|---:|---:|
| snapshot, 765 bytes: encode / decode | cannot: no ``IdSet``, no recursive ``JSON`` alias | 18.4 / 75.8 µs |
| script, 12 steps: structure | cannot: a union of error dataclasses | 525 µs |
| ``session/open`` with 5 tools | 21.8 µs | 28.5 µs |
| ``step/begin`` / ``step/reply`` / ``goal/create`` | 2.0 / 4.0 / 1.7 µs | 3.9 / 8.1 / 4.0 µs |

msgspec is faster where it can structure at all, but it cannot read the
snapshots and scripts as they are declared (it takes at most one dataclass
per union, refuses the kernel's recursive ``JSON`` alias and an ``IdSet``,
and stops at the first problem, where a script must report every problem
with its path). cattrs structures all three; on the wire it costs a few
microseconds more per message, against a step's budget of a millisecond
(the ``serve-step`` benchmark). So cattrs structures, msgspec only turns
JSON bytes into plain values and back (and writes the OpenRPC schema).
The payload mirrors went with it: the stores hand payloads to the fold as
plain JSON and the kernel's reader, the one reader of payloads, reads them.
That costs replay time, measured on the benchmarks' goal log of 20,000
events in SQLite (``SqliteStore.load``, CPU, medians of 7): 4.0-4.5 µs per
event against 3.1 with the mirrors; the ``cold-replay`` family's ratio of
the naive fold to planfold's load went from 1.60-1.78x to 1.15-1.40x (scale
0.1, two runs of each, interleaved), below its goal of 1.5x.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Annotated, Any, Union

import cattrs
import msgspec
from cattrs.cols import list_structure_factory
from cattrs.errors import ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn, override
from cattrs.strategies import configure_tagged_union

__all__ = [
    "SCALARS",
    "AmbiguousUnionError",
    "dataclass_members",
    "exact_converter",
    "is_json",
    "members",
    "problems",
    "tag_union",
]

#: The JSON scalars, as Python types.
SCALARS: tuple[type, ...] = (bool, int, float, str)
_NONE = type(None)
_UNIONS = (Union, types.UnionType)
_ARRAYS = (tuple, list, frozenset, Sequence, AbstractSet)
_SORTING = msgspec.json.Encoder(order="deterministic")

StructureHook = Callable[[Any, Any], Any]
UnstructureHook = Callable[[Any], Any]


class AmbiguousUnionError(TypeError):
    """A union two of whose members JSON cannot tell apart."""


def members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type (``()`` for any other type)."""
    return typing.get_args(tp) if typing.get_origin(tp) in _UNIONS else ()


def dataclass_members(tp: Any) -> tuple[type, ...]:
    """The dataclasses among the members of a union type."""
    return tuple(m for m in members(tp) if isinstance(m, type) and dataclasses.is_dataclass(m))


def is_json(tp: Any) -> bool:
    """A JSON value kept as plain data (an event payload): ``Any``, an array
    or string-keyed object of JSON values, or the kernel's recursive ``JSON``
    alias (a union of the scalars, an array and an object of JSON; what
    ``typing`` leaves of its inner references is a ``ForwardRef``)."""
    if tp is Any or isinstance(tp, typing.ForwardRef):
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (list, Sequence):
        return not args or is_json(args[0])
    if origin in (dict, Mapping):
        return not args or (args[0] is str and is_json(args[1]))
    found = members(tp)
    containers = {typing.get_origin(m) for m in found if is_json(m)}
    return bool(containers & {list, Sequence}) and bool(containers & {dict, Mapping}) and all(
        is_json(m) or m in SCALARS or m is _NONE for m in found
    )


def _is_array(tp: Any) -> bool:
    return typing.get_origin(tp) in _ARRAYS and not is_json(tp) and not _is_fixed_tuple(tp)


def _is_fixed_tuple(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis)


def _is_pair_map(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) in (dict, Mapping) and len(args) == 2 and args[0] is not str


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


def _is_plain_union(tp: Any) -> bool:
    return bool(members(tp)) and not is_json(tp) and len(dataclass_members(tp)) <= 1


def _kinds(tp: Any) -> tuple[type, ...]:
    """The Python types of the values of the scalar type ``tp`` (``()`` for others)."""
    if tp is float:
        return (int, float)
    return (tp,) if tp in SCALARS or tp is _NONE else ()


def _base(tp: Any) -> Any:
    """``tp``, or the type a ``NewType`` or an ``Annotated`` stands for."""
    if typing.get_origin(tp) is Annotated:
        return _base(typing.get_args(tp)[0])
    return getattr(tp, "__supertype__", tp)


#: How problems name the JSON kind of a type or value.
_JSON_NAMES: dict[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    _NONE: "null",
    dict: "an object",
    list: "an array",
}


def _label(tp: Any) -> str:
    """What a value of ``tp`` is, in JSON words."""
    tp = _base(tp)
    if _is_literal(tp):
        return f"one of {list(typing.get_args(tp))}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return f"one of {[m.value for m in tp]}"
    return _JSON_NAMES.get(_json_kinds(tp)[-1], repr(tp))


def _got(value: Any) -> str:
    """What ``value`` is, in JSON words (or its Python type's name)."""
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _json_kinds(tp: Any) -> tuple[type, ...]:
    """The Python types msgspec decodes the JSON of ``tp`` into."""
    tp = _base(tp)
    if tp is _NONE or tp in SCALARS:
        return _kinds(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tuple({type(m.value) for m in tp})
    if _is_literal(tp):
        return tuple({type(v) for v in typing.get_args(tp)})
    if (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or (
        typing.get_origin(tp) in (dict, Mapping) and not _is_pair_map(tp)
    ):
        return (dict,)
    return (list,)


def _value_kinds(tp: Any) -> tuple[type, ...]:
    """The Python types of the values of ``tp`` (on the way out)."""
    tp = _base(tp)
    if isinstance(tp, type) and (issubclass(tp, enum.Enum) or dataclasses.is_dataclass(tp)):
        return (tp,)
    origin = typing.get_origin(tp)
    if origin in (frozenset, AbstractSet):
        return (frozenset, set)
    if origin in (tuple, list, Sequence):
        return (tuple, list)
    if origin in (dict, Mapping):
        return (dict,)
    return _json_kinds(tp)


def _by_kind(tp: Any, kinds_of: Callable[[Any], tuple[type, ...]]) -> dict[type, Any]:
    """Each Python type a member of the union ``tp`` claims, and that member;
    ``AmbiguousUnionError`` when two claim one type (an ``int`` goes to an
    ``int`` member before a ``float`` one)."""
    claims: dict[type, Any] = {}
    for member in sorted(members(tp), key=lambda m: m is float):
        for kind in kinds_of(member):
            if kind in claims and not (kind is int and member is float):
                raise AmbiguousUnionError(f"union {tp!r} is ambiguous in JSON")
            claims.setdefault(kind, member)
    return claims


# --------------------------------------------------------------------------
# Hooks


def _exactly(tp: type) -> UnstructureHook:
    kinds = _kinds(tp)

    def check(value: Any) -> Any:
        if type(value) not in kinds:
            raise TypeError(f"expected {_label(tp)}, got {_got(value)}")
        return value

    return _passing(check, kinds)


#: The attributes that tell which values a hook hands back unchanged (see
#: ``_object_unstructure``): every value of one of the ``PASSES`` types, or
#: every ``(type, value)`` pair in ``PASSES_VALUES``.
PASSES = "exact_passes"
PASSES_VALUES = "exact_passes_values"
#: The attribute of a union's hook that maps each type it takes to the hook
#: of its member.
DISPATCH = "exact_dispatch"


def _passing(hook: UnstructureHook, kinds: tuple[type, ...]) -> UnstructureHook:
    """``hook``, marked as handing back every value whose type is one of ``kinds`` unchanged."""
    setattr(hook, PASSES, kinds)
    return hook


def _structuring(check: UnstructureHook) -> StructureHook:
    return lambda value, _: check(value)


def _array_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    origin, item = typing.get_origin(tp), typing.get_args(tp)[0]
    make: Callable[[list[Any]], Any] = (
        frozenset if origin in (frozenset, AbstractSet) else list if origin is list else tuple
    )
    as_list = list_structure_factory(list[item], conv)  # type: ignore[valid-type]
    kinds = _kinds(item)

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, list):
            raise TypeError(f"expected an array, got {_got(data)}")
        if kinds and all(type(v) in kinds for v in data):
            return make(data)  # scalars checked at once; cattrs finds the bad ones otherwise
        return make(as_list(data, list))

    return structure


def _array_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    origin, item = typing.get_origin(tp), typing.get_args(tp)[0]
    hook = conv.get_unstructure_hook(item)
    kinds = _kinds(item)
    unordered = origin in (frozenset, AbstractSet)

    def unstructure(value: Any) -> Any:
        if not isinstance(value, AbstractSet if unordered else (tuple, list)):
            raise TypeError(f"expected {origin.__name__}, got {type(value).__name__}")
        if kinds and all(type(v) in kinds for v in value):
            return value if unordered else list(value)  # msgspec sorts a set's scalars
        items = [hook(v) for v in value]
        return sorted(items, key=_SORTING.encode) if unordered else items

    return unstructure


def _fixed_tuple_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    hook = conv.gen_structure_hetero_tuple(tp)
    size = len(typing.get_args(tp))

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, list) or len(data) != size:
            raise TypeError(f"expected an array of {size}")
        return hook(data, tp)

    return structure


def _fixed_tuple_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    hooks = [conv.get_unstructure_hook(a) for a in typing.get_args(tp)]

    def unstructure(value: Any) -> Any:
        if not isinstance(value, tuple) or len(value) != len(hooks):
            raise TypeError(f"expected a tuple of {len(hooks)}")
        return [h(v) for h, v in zip(hooks, value, strict=True)]

    return unstructure


def _pairs(tp: Any) -> Any:
    key, value = typing.get_args(tp)
    return list[tuple[key, value]]  # type: ignore[valid-type]


def _pair_map_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    pairs = _pairs(tp)
    hook = conv.get_structure_hook(pairs)
    return lambda data, _: dict(hook(data, pairs))


def _pair_map_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    hook = conv.get_unstructure_hook(_pairs(tp))

    def unstructure(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a mapping, got {type(value).__name__}")
        return hook(list(value.items()))

    return unstructure


def _literal_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    allowed = typing.get_args(tp)

    def structure(value: Any, _: Any) -> Any:
        if not any(type(value) is type(v) and value == v for v in allowed):
            raise ValueError(f"expected one of {list(allowed)}, got {value!r}")
        return value

    return structure


def _literal_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    allowed = typing.get_args(tp)

    def unstructure(value: Any) -> Any:
        if not any(type(value) is type(v) and value == v for v in allowed):
            raise TypeError(f"{value!r} is not one of {allowed}")
        return value

    setattr(unstructure, PASSES_VALUES, frozenset((type(v), v) for v in allowed))
    return unstructure


def _union_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    hooks = {kind: (member, conv.get_structure_hook(member)) for kind, member in _by_kind(tp, _json_kinds).items()}
    expected = " or ".join(dict.fromkeys(_label(m) for m, _ in hooks.values()))

    def structure(data: Any, _: Any) -> Any:
        found = hooks.get(type(data))
        if found is None:
            raise TypeError(f"expected {expected}, got {_got(data)}")
        return found[1](data, found[0])

    return structure


def _union_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    hooks = {kind: conv.get_unstructure_hook(member) for kind, member in _by_kind(tp, _value_kinds).items()}

    def unstructure(value: Any) -> Any:
        hook = hooks.get(type(value))
        if hook is None:
            raise TypeError(f"{type(value).__name__} is not in {tp!r}")
        return hook(value)

    # A value goes to the member hook of its type, which may hand it back unchanged.
    setattr(unstructure, DISPATCH, hooks)
    return _passing(unstructure, tuple(kind for kind, hook in hooks.items() if kind in getattr(hook, PASSES, ())))


def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _object_structure(cl: Any, conv: cattrs.Converter) -> StructureHook:
    # cattrs reads a dataclass's fields without their Annotated markers: a
    # field whose type carries msgspec.Meta limits gets the hook of its full type.
    hints = typing.get_type_hints(cl, include_extras=True)
    limited = {f.name: hints[f.name] for f in dataclasses.fields(cl) if f.init and _carries_limits(hints[f.name])}
    hook: Callable[[Any, Any], Any]
    if limited:
        overrides: dict[str, Any] = {
            name: override(struct_hook=conv.get_structure_hook(tp)) for name, tp in limited.items()
        }
        hook = make_dict_structure_fn(
            cl,
            conv,
            _cattrs_forbid_extra_keys=conv.forbid_extra_keys,
            _cattrs_detailed_validation=conv.detailed_validation,
            **overrides,
        )
    else:
        hook = conv.gen_structure_attrs_fromdict(cl)

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {_got(data)}")
        return hook(data, cl)

    return structure


def _object_unstructure(cl: Any, conv: cattrs.Converter) -> UnstructureHook:
    """cattrs's function from the dataclass ``cl`` to a dict, made again with
    the same fields, keys and hooks, except that a field whose hook hands
    some values back unchanged (a scalar's check, a literal's, a union's that
    picks such a member) is checked inline, and its hook is called only for
    any other value: the hook then refuses it with its own error, or hands
    back what it always does. A snapshot encodes a few such objects on every
    append, and a call per field was most of their cost. When cattrs's
    function is not the plain one (renamed or omitted fields), it is kept."""
    base: UnstructureHook = conv.gen_unstructure_attrs_fromdict(cl)
    code = getattr(base, "__code__", None)
    names = [f.name for f in dataclasses.fields(cl) if f.init]
    if code is None or getattr(base, "overrides", None) or conv.omit_if_default or getattr(conv, "use_alias", False):
        return base
    handlers = dict(zip(code.co_varnames[1 : code.co_argcount], getattr(base, "__defaults__", None) or (), strict=True))
    if set(handlers) != {f"__c_unstr_{name}" for name in names} or code.co_freevars:
        return base  # every field's hook must be known, or the function is kept
    globs: dict[str, Any] = {}
    lines = []
    for index, name in enumerate(names):
        value, hook = f"v{index}", handlers.get(f"__c_unstr_{name}")
        lines.append(f"    {value} = instance.{name}")
        if hook is None or hook is _identity:
            continue
        globs[f"h{index}"] = hook
        kinds, values = getattr(hook, PASSES, None), getattr(hook, PASSES_VALUES, None)
        others = [(kind, member) for kind, member in getattr(hook, DISPATCH, {}).items() if kind not in (kinds or ())]
        if kinds is not None and len(others) == 1:
            # A union of values that pass and one other type (an optional
            # object): that type goes straight to its member's hook.
            globs[f"k{index}"], globs[f"o{index}"], globs[f"m{index}"] = frozenset(kinds), *others[0]
            lines.append(f"    if type({value}) is o{index}:")
            lines.append(f"        {value} = m{index}({value})")
            lines.append(f"    elif type({value}) not in k{index}:")
            lines.append(f"        {value} = h{index}({value})")
            continue
        if values:
            globs[f"t{index}"], globs[f"p{index}"] = frozenset(kind for kind, _ in values), values
            test = f"type({value}) not in t{index} or (type({value}), {value}) not in p{index}"
        elif kinds and len(kinds) == 1:
            globs[f"k{index}"] = kinds[0]
            test = f"type({value}) is not k{index}"
        elif kinds:
            globs[f"k{index}"] = frozenset(kinds)
            test = f"type({value}) not in k{index}"
        else:
            lines.append(f"    {value} = h{index}({value})")
            continue
        lines.append(f"    if {test}:")
        lines.append(f"        {value} = h{index}({value})")
    body = ", ".join(f"{name!r}: v{index}" for index, name in enumerate(names))
    script = "\n".join(["def unstructure(instance):", *lines, f"    return {{{body}}}"])
    exec(compile(script, f"<exact unstructure {cl.__module__}.{cl.__qualname__}>", "exec"), globs)
    made: UnstructureHook = globs["unstructure"]
    return made


def _identity(value: Any) -> Any:
    return value


def _is_constrained(tp: Any) -> bool:
    """An ``Annotated`` type with a ``msgspec.Meta`` marker (the wire
    protocol's bounds, lengths and patterns)."""
    return typing.get_origin(tp) is Annotated and any(isinstance(m, msgspec.Meta) for m in typing.get_args(tp)[1:])


def _carries_limits(tp: Any) -> bool:
    """``tp`` or a type inside it is ``_is_constrained``."""
    return _is_constrained(tp) or any(_carries_limits(arg) for arg in typing.get_args(tp) if arg is not Ellipsis)


def _limits(tp: Any) -> list[Callable[[Any], str | None]]:
    """The checks the ``msgspec.Meta`` markers of ``Annotated`` type ``tp``
    ask for (bounds of a number, the length of a text, an array or an
    object, a text's pattern, searched as msgspec does); each gives what is
    wrong with a value, or None."""
    checks: list[Callable[[Any], str | None]] = []
    for meta in typing.get_args(tp)[1:]:
        if not isinstance(meta, msgspec.Meta):
            continue
        if meta.multiple_of is not None or meta.tz is not None:
            raise TypeError(f"{tp!r}: only bounds, lengths and patterns are checked, not multiple_of or tz")
        for name, holds, says in (
            ("ge", operator.ge, ">="), ("gt", operator.gt, ">"), ("le", operator.le, "<="), ("lt", operator.lt, "<"),
        ):
            bound = getattr(meta, name)
            if bound is not None:
                checks.append(functools.partial(_bound, holds, bound, f"expected a number {says} {bound}"))
        if meta.min_length is not None:
            checks.append(functools.partial(_length, operator.ge, meta.min_length, "at least"))
        if meta.max_length is not None:
            checks.append(functools.partial(_length, operator.le, meta.max_length, "at most"))
        if meta.pattern is not None:
            checks.append(functools.partial(_pattern, re.compile(meta.pattern)))
    return checks


def _bound(holds: Callable[[Any, Any], bool], bound: Any, expected: str, value: Any) -> str | None:
    return None if holds(value, bound) else f"{expected}, got {value!r}"


def _length(holds: Callable[[int, int], bool], bound: int, which: str, value: Any) -> str | None:
    unit = "characters" if isinstance(value, str) else "items"
    return None if holds(len(value), bound) else f"expected {which} {bound} {unit}, got {len(value)}"


def _pattern(pattern: re.Pattern[str], value: Any) -> str | None:
    return None if pattern.search(value) else f"expected a string matching {pattern.pattern!r}"


def _constrained_structure(tp: Any, conv: cattrs.Converter) -> StructureHook:
    inner = typing.get_args(tp)[0]
    hook = conv.get_structure_hook(inner)
    checks = _limits(tp)
    if not checks:
        return hook

    def structure(data: Any, _: Any) -> Any:
        value = hook(data, inner)
        for check in checks:
            problem = check(value)
            if problem is not None:
                raise ValueError(problem)
        return value

    return structure


def _constrained_unstructure(tp: Any, conv: cattrs.Converter) -> UnstructureHook:
    return conv.get_unstructure_hook(typing.get_args(tp)[0])


#: Each kind of type the converter treats its own way, with the factories of
#: its structure and unstructure hooks.
_HOOK_FACTORIES = (
    (_is_constrained, _constrained_structure, _constrained_unstructure),
    (_is_array, _array_structure, _array_unstructure),
    (_is_fixed_tuple, _fixed_tuple_structure, _fixed_tuple_unstructure),
    (_is_pair_map, _pair_map_structure, _pair_map_unstructure),
    (_is_literal, _literal_structure, _literal_unstructure),
    (_is_plain_union, _union_structure, _union_unstructure),
)


def exact_converter(*, forbid_extra_keys: bool = True) -> cattrs.Converter:
    """A cattrs converter that keeps JSON exact both ways (see the module
    doc); ``forbid_extra_keys=False`` lets an object carry keys its class
    does not have, for a caller that names them itself."""
    conv = cattrs.Converter(forbid_extra_keys=forbid_extra_keys, detailed_validation=True)
    for tp in (*SCALARS, _NONE):
        check = _exactly(tp)
        conv.register_structure_hook(tp, _structuring(check))
        conv.register_unstructure_hook(tp, check)
    conv.register_structure_hook_factory(_is_class, _object_structure)
    conv.register_unstructure_hook_factory(_is_class, _object_unstructure)
    for is_kind, structure, unstructure in _HOOK_FACTORIES:
        conv.register_structure_hook_factory(is_kind, structure)
        conv.register_unstructure_hook_factory(is_kind, unstructure)
    conv.register_structure_hook_func(is_json, lambda value, _: value)
    conv.register_unstructure_hook_func(is_json, _identity)
    return conv


def tag_union(
    union: Any, conv: cattrs.Converter, *, tag_name: str, tag_generator: Callable[[type], str]
) -> None:
    """cattrs's tagged-union strategy for the dataclasses of ``union`` (which
    may also hold ``None``): each object carries ``tag_name`` set to
    ``tag_generator(its class)``. A missing or unknown tag is reported as such
    (cattrs alone would say 'required field missing')."""
    classes = dataclass_members(union)
    tagged = functools.reduce(operator.or_, classes)
    tags = {tag_generator(c) for c in classes}
    expected = f"expected {tag_name!r} to be one of {sorted(tags)}"

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {_got(data)}")
        tag = data.get(tag_name)
        if tag not in tags:
            raise ValueError(f"{expected}, got {tag!r}")
        return base(data, tagged)

    def optional(data: Any, _: Any) -> Any:
        return None if data is None else structure(data, tagged)

    def unstructure(value: Any) -> Any:
        return None if value is None else conv.unstructure(value, unstructure_as=tagged)

    if tagged != union:  # registered first: a member may refer to the union itself
        conv.register_structure_hook(union, optional)
        conv.register_unstructure_hook(union, unstructure)
    configure_tagged_union(tagged, conv, tag_generator=tag_generator, tag_name=tag_name)
    base = conv.get_structure_hook(tagged)
    conv.register_structure_hook(tagged, structure)


def _describe(exc: BaseException, tp: type | None) -> str:
    if isinstance(exc, ForbiddenExtraKeysError):
        allowed = sorted(f.name for f in dataclasses.fields(exc.cl)) if dataclasses.is_dataclass(exc.cl) else []
        return f"unknown key(s) {sorted(exc.extra_fields)} (allowed: {allowed})"
    if isinstance(exc, KeyError):
        return "required key missing"
    if isinstance(exc, TypeError | ValueError) and str(exc):
        return str(exc)
    return cattrs.v.format_exception(exc, tp)


def problems(exc: BaseException, root: str) -> tuple[str, ...]:
    """Every problem ``exc`` (raised by an ``exact_converter`` structuring a
    value) holds, as ``path: what is wrong``, paths starting at ``root``."""
    found = cattrs.transform_error(exc, path=root, format_exception=_describe)
    return tuple(f"{path}: {what}" for what, _, path in (p.rpartition(" @ ") for p in found))
