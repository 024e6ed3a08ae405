"""Payload bytes decoded straight into the kernel's payload types, with
msgspec: the stores' fast path, made from the same definition the kernel
reads with.

Theory of operation
-------------------
Every payload kind is one frozen dataclass in the kernel (``kernel.payload``
reads its annotations into a ``Shape`` tree). msgspec decodes JSON into
dataclasses, but not exactly enough for a strict log: it ignores a
dataclass's unknown keys and cannot tell a union of dataclasses apart. So
this module makes, once per shape, a msgspec ``Struct`` with the same fields
and the same rules (``forbid_unknown_fields``; a tagged union of records
becomes Structs tagged by the same field; ``Range`` becomes ``ge``/``le``,
``Text`` a ``min_length`` or the schema's ``pattern``; a key that may be left
out gets its default), decodes into it in C, and turns the Struct into the
kernel's own value with the kernel's ``record_maker``, which also checks the
record's cross-field rules. An opaque value (any JSON) is checked and frozen
as the kernel does.

``decoder(kind)`` gives the function for one kind: payload text to the kind's
value, or ``None`` when msgspec refuses the text or a rule fails. ``None``
is never a verdict: the caller then decodes the text as plain JSON and lets
the kernel's reader decide, and report, exactly as it always does. A property
test holds the two paths to the same answer on every payload.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

import msgspec

from planfold.adapters.specgen.schema import KEBAB, NON_BLANK, TRIMMED
from planfold.kernel.payload import MAX_SAFE_INTEGER, Shape, Text, Unreadable, record_maker, shape_of
from planfold.kernel.session import PAYLOAD_TYPES

__all__ = ["decoder"]

_TEXT: Mapping[Text, msgspec.Meta] = {
    Text.NON_EMPTY: msgspec.Meta(min_length=1),
    Text.NON_BLANK: msgspec.Meta(pattern=NON_BLANK),
    Text.TRIMMED: msgspec.Meta(pattern=TRIMMED),
    Text.KEBAB: msgspec.Meta(pattern=KEBAB),
}

Convert = Callable[[Any], Any]


class _Refused(Exception):
    """A value msgspec took that the kernel's rules refuse (an opaque value
    that is not JSON it keeps, a broken cross-field rule)."""


def _same(value: Any) -> Any:
    return value


class _Twins:
    """msgspec types made from shapes, and the converters back to the
    kernel's values (by the Struct's class)."""

    def __init__(self) -> None:
        self.types: dict[tuple[int, object], Any] = {}
        self.convert: dict[type, Convert] = {}
        #: A union's converter -> its members' converters by Struct class.
        self.dispatch: dict[Convert, dict[Any, Convert]] = {}
        #: The records whose converters only read attributes (see ``_Simple``).
        self.simple: dict[Any, _Simple] = {}

    def of(self, shape: Shape) -> tuple[Any, Convert]:
        """The msgspec type of ``shape`` and the function that turns what
        msgspec decodes into the kernel's value."""
        kind = shape.kind
        if kind == "int":
            assert shape.range is not None
            low, high = max(shape.range.minimum, -MAX_SAFE_INTEGER), min(shape.range.maximum, MAX_SAFE_INTEGER)
            return Annotated[int, msgspec.Meta(ge=low, le=high)], _same
        if kind == "bool":
            return bool, _same
        if kind == "null":
            return None, _same
        if kind == "str":
            return (str if shape.text is None else Annotated[str, _TEXT[shape.text]]), _same
        if kind == "choice":
            return Literal[shape.choices], _same
        if kind == "array":
            assert shape.item is not None
            item, convert = self.of(shape.item)
            if convert is _same:
                return tuple[item, ...], _same  # type: ignore[valid-type]
            return tuple[item, ...], lambda values: tuple(map(convert, values))  # type: ignore[valid-type]
        if kind == "json":
            return Any, _opaque(shape)
        if kind == "record":
            twin = self.record(shape, None, None)
            return twin, self.convert[twin]
        return self.union(shape)

    def union(self, shape: Shape) -> tuple[Any, Convert]:
        twins: list[Any] = []
        for member in shape.members:
            if member.kind == "record" and shape.tag is not None:
                field = next(f for f in member.fields if f.name == shape.tag)
                twins += [self.record(member, shape.tag, choice) for choice in field.shape.choices]
            else:
                twins.append(self.of(member)[0])
        union: Any = functools.reduce(lambda a, b: a | b, twins)
        by_type = {twin: self.convert[twin] for twin in twins if twin in self.convert}

        def back(value: Any) -> Any:
            made = by_type.get(type(value))
            return value if made is None else made(value)

        self.dispatch[back] = by_type
        return union, back

    def record(self, shape: Shape, tag: str | None, value: object) -> Any:
        """The Struct of a record (tagged ``tag = value`` when it is a member
        of a tagged union; the tag is then not a field of the Struct)."""
        key = (id(shape), value)
        found = self.types.get(key)
        if found is not None:
            return found
        assert shape.cls is not None
        fields: list[tuple[Any, ...]] = []
        converts: list[Convert] = []
        for field in shape.fields:
            if field.name == tag:
                converts.append(_same)
                continue
            twin, convert = self.of(field.shape)
            if field.omissible and field.default is None:
                fields.append((field.name, twin | msgspec.UnsetType, msgspec.UNSET))
                convert = functools.partial(_unset_is_none, convert)
            elif field.omissible:
                fields.append((field.name, twin, field.default))
            else:
                fields.append((field.name, twin))
            converts.append(convert)
        # Fields with a default come last in a Struct; the converter reads
        # them back by name, in the record's order.
        fields.sort(key=lambda f: len(f) == 3)
        options: dict[str, Any] = {"forbid_unknown_fields": True}
        if tag is not None:
            options.update(tag_field=tag, tag=value)
        name = f"{shape.cls.__name__}{'' if tag is None else f'_{value}'}Twin"
        twin = msgspec.defstruct(name, fields, module=__name__, **options)
        self.types[key] = twin
        self.convert[twin] = _converter(
            shape, converts, twin=twin, tag=tag, value=value, dispatch=self.dispatch, simple=self.simple
        )
        return twin


def _unset_is_none(convert: Convert, value: Any) -> Any:
    return None if value is msgspec.UNSET else convert(value)


def _opaque(shape: Shape) -> Convert:
    opaque = shape.opaque
    assert opaque is not None

    def convert(value: Any) -> Any:
        if not opaque.check(value):
            raise _Refused
        return opaque.freeze(value)

    return convert


#: A record's converter that only reads attributes (no nesting): its maker
#: and its arguments, as expressions of the Struct in ``{struct}``.
_Simple = tuple[Callable[..., object], list[str], dict[str, object]]


def _converter(
    shape: Shape,
    converts: list[Convert],
    *,
    twin: Any,
    tag: str | None,
    value: object,
    dispatch: Mapping[Convert, Mapping[Any, Convert]],
    simple: dict[Any, _Simple],
) -> Convert:
    """The function from a decoded Struct to the kernel's record: each field
    taken (and converted where it nests: a union's member picked by its
    Struct class right here, and made right here when it only reads
    attributes), the tag given back, the record made by the kernel (which
    checks its cross-field rules)."""
    maker = record_maker(shape)
    consts: dict[str, object] = {"make": maker, "Unreadable": Unreadable, "Refused": _Refused}
    own: dict[str, object] = {}
    lines, args = [], []
    for index, (field, convert) in enumerate(zip(shape.fields, converts, strict=True)):
        if field.name == tag:
            own[f"tag_{id(twin)}_{index}"] = value
            args.append(f"tag_{id(twin)}_{index}")
        elif convert is _same:
            args.append(f"{{struct}}.{field.name}")
        elif convert in dispatch and all(member in simple for member in dispatch[convert]):
            lines += [f"    v{index} = struct.{field.name}", f"    t{index} = type(v{index})"]
            for number, member in enumerate(dispatch[convert]):
                member_make, member_args, member_consts = simple[member]
                consts.update(member_consts)
                consts[f"twin{index}_{number}"], consts[f"make{index}_{number}"] = member, member_make
                made = f"make{index}_{number}({', '.join(a.format(struct=f'v{index}') for a in member_args)})"
                lines += [f"    {'if' if number == 0 else 'elif'} t{index} is twin{index}_{number}:",
                          f"        v{index} = {made}"]
            args.append(f"v{index}")
        elif convert in dispatch:
            consts[f"members{index}"] = dispatch[convert]
            lines += [
                f"    v{index} = struct.{field.name}",
                f"    c{index} = members{index}.get(type(v{index}))",
                f"    if c{index} is not None:",
                f"        v{index} = c{index}(v{index})",
            ]
            args.append(f"v{index}")
        else:
            consts[f"convert{index}"] = convert
            args.append(f"convert{index}({{struct}}.{field.name})")
    if not lines and all("(" not in arg for arg in args):
        simple[twin] = (maker, args, own)
    consts.update(own)
    source = "\n".join([
        "def convert(struct):",
        "    try:",
        *(f"    {line}" for line in lines),
        f"        return make({', '.join(arg.format(struct='struct') for arg in args)})",
        "    except Unreadable as exc:",
        "        raise Refused from exc",
    ])
    exec(source, consts)  # the source is made above from the shape's own fields
    converter: Convert = consts["convert"]  # type: ignore[assignment]
    return converter


@functools.cache
def decoder(kind: str) -> Callable[[str | bytes], object] | None:
    """The fast decoder of one kind: payload text to the kind's value, or
    ``None`` for text it leaves to the kernel's reader; ``None`` for a kind
    with no payload type."""
    payload_type = PAYLOAD_TYPES.get(kind)
    if payload_type is None:
        return None
    twins = _Twins()
    twin, convert = twins.of(shape_of(payload_type))
    decode = msgspec.json.Decoder(twin).decode
    members = twins.dispatch.get(convert)
    if members is not None:
        # A union of records: the member's converter, picked by its Struct class.
        by_type = members

        def read(text: str | bytes) -> object:
            try:
                struct = decode(text)
                return by_type[type(struct)](struct)
            except (msgspec.DecodeError, _Refused, RecursionError, TypeError):
                return None

        return read

    def read_one(text: str | bytes) -> object:
        try:
            return convert(decode(text))
        except (msgspec.DecodeError, _Refused, RecursionError, TypeError):
            return None

    return read_one
