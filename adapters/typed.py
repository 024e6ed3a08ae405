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
``Text.NON_EMPTY`` a ``min_length``; a key that may be left out gets its
default), and decodes into it in C. The Structs are not tracked by the
garbage collector (``gc=False``): one holds what msgspec decoded from one
JSON text, a tree, so it is never part of a reference cycle.

Then one function written for the kind from its shape, as the kernel's own
readers are, turns the Struct into the kernel's value, in one frame: it
picks a union's member by its Struct class, checks the other text rules
with the kernel's own condition (``inline_check``: a call of msgspec's
``pattern`` costs more than decoding the rest of a goal change), checks
and freezes an opaque value as the kernel does, and makes each record with
the kernel's lines for it (``record_lines``: no ``__init__``, and the
record's cross-field rules checked).

``decoder(kind)`` gives that function: payload text to the kind's value, or
``None`` when msgspec refuses the text or a rule fails. ``None`` is never a
verdict: the caller then decodes the text as plain JSON and lets the
kernel's reader decide, and report, exactly as it always does. A property
test holds the two paths to the same answer on every payload.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec

from ..kernel.payload import MAX_SAFE_INTEGER, Shape, Text, Unreadable, inline_check, record_lines, shape_of
from ..kernel.session import PAYLOAD_TYPES

__all__ = ["decoder"]


class _Refused(Exception):
    """A value msgspec took that the kernel's rules refuse (a text rule, an
    opaque value that is not JSON it keeps, a broken cross-field rule)."""


#: The Python type msgspec decodes a member of a union into, for the kinds
#: whose values may need a check or a conversion.
_PYTHON_TYPES: dict[str, type] = {"str": str, "array": tuple}


class _Source:
    """The source of one kind's reader, written from its shape: the
    msgspec type of every shape, and the lines that turn what msgspec
    decoded into the kernel's value."""

    def __init__(self) -> None:
        self.consts: dict[str, object] = {"Refused": _Refused, "UNSET": msgspec.UNSET}
        self.twins: dict[tuple[int, object], Any] = {}
        self.names = 0

    def name(self, stem: str, value: object = None) -> str:
        """A new name in the reader's source (bound to ``value`` when given)."""
        self.names += 1
        name = f"{stem}{self.names}"
        if value is not None:
            self.consts[name] = value
        return name

    # ----------------------------------------------------------------------
    # The msgspec types

    def twin(self, shape: Shape) -> Any:
        """The msgspec type of ``shape``."""
        kind = shape.kind
        if kind == "int":
            assert shape.range is not None
            low, high = max(shape.range.minimum, -MAX_SAFE_INTEGER), min(shape.range.maximum, MAX_SAFE_INTEGER)
            return Annotated[int, msgspec.Meta(ge=low, le=high)]
        if kind == "bool":
            return bool
        if kind == "null":
            return None
        if kind == "str":
            return Annotated[str, msgspec.Meta(min_length=1)] if shape.text is Text.NON_EMPTY else str
        if kind == "choice":
            return Literal[shape.choices]
        if kind == "array":
            assert shape.item is not None
            return tuple[self.twin(shape.item), ...]  # type: ignore[misc]
        if kind == "json":
            return Any
        if kind == "record":
            return self.record_twin(shape, None, None)
        union: Any = functools.reduce(lambda a, b: a | b, [twin for _, twin, _ in self.members(shape)])
        return union

    def members(self, shape: Shape) -> list[tuple[Shape, Any, object]]:
        """The members of a union with their msgspec types and tag values (a
        record member of a tagged union has one Struct per value of its tag)."""
        out: list[tuple[Shape, Any, object]] = []
        for member in shape.members:
            if member.kind == "record" and shape.tag is not None:
                tag = next(f for f in member.fields if f.name == shape.tag)
                out += [(member, self.record_twin(member, shape.tag, value), value) for value in tag.shape.choices]
            else:
                out.append((member, self.twin(member), None))
        return out

    def record_twin(self, shape: Shape, tag: str | None, value: object) -> Any:
        """The Struct of a record (tagged ``tag = value`` when it is a member
        of a tagged union; the tag is then not a field of the Struct)."""
        key = (id(shape), value)
        found = self.twins.get(key)
        if found is not None:
            return found
        assert shape.cls is not None
        fields: list[tuple[Any, ...]] = []
        for field in shape.fields:
            if field.name == tag:
                continue
            twin = self.twin(field.shape)
            if field.omissible and field.default is None:
                fields.append((field.name, twin | msgspec.UnsetType, msgspec.UNSET))
            elif field.omissible:
                fields.append((field.name, twin, field.default))
            else:
                fields.append((field.name, twin))
        # Fields with a default come last in a Struct; the reader reads them
        # by name, in the record's order.
        fields.sort(key=lambda f: len(f) == 3)
        # gc=False: a Struct holds only what msgspec decoded from one JSON
        # text, a tree, so it is never part of a reference cycle.
        options: dict[str, Any] = {"forbid_unknown_fields": True, "gc": False}
        if tag is not None:
            options.update(tag_field=tag, tag=value)
        name = f"{shape.cls.__name__}{'' if tag is None else f'_{value}'}Twin"
        twin = msgspec.defstruct(name, fields, module=__name__, **options)
        self.twins[key] = twin
        return twin

    # ----------------------------------------------------------------------
    # The lines

    def value(self, shape: Shape, expr: str, lines: list[str], indent: str) -> str:
        """An expression of the kernel's value of ``shape`` for the decoded
        ``expr``, after ``lines`` (indented by ``indent``) that check it and
        raise ``Refused`` for a value the kernel refuses."""
        kind = shape.kind
        if kind == "str" and shape.text not in (None, Text.NON_EMPTY):
            var = self.name("s")
            kept = inline_check(shape, var, self.consts)
            lines += [f"{indent}{var} = {expr}", f"{indent}if not ({kept}): raise Refused"]
            return var
        if kind == "array":
            assert shape.item is not None
            inner: list[str] = []
            item = self.value(shape.item, "item", inner, "    ")
            if not inner and item == "item":
                return expr
            convert = self.name("item_of")
            self.function(convert, "item", inner, item)
            return f"tuple(map({convert}, {expr}))"
        if kind == "json":
            assert shape.opaque is not None
            var = self.name("j")
            check, freeze = self.name("check", shape.opaque.check), self.name("freeze", shape.opaque.freeze)
            lines += [f"{indent}{var} = {expr}", f"{indent}if not {check}({var}): raise Refused"]
            return f"{freeze}({var})"
        if kind == "record":
            return self.record(shape, expr, lines, indent)
        if kind == "union":
            return self.union(shape, expr, lines, indent)
        return expr

    def record(
        self, shape: Shape, expr: str, lines: list[str], indent: str, *, tag: tuple[str, str] | None = None
    ) -> str:
        """An expression of the kernel's record of ``shape`` for the decoded
        Struct ``expr``; ``tag``: the name of its tag field and the
        expression of the tag's value, when the Struct is a member of a
        tagged union (see ``value``)."""
        struct = expr if expr.isidentifier() else self.name("r")
        if struct != expr:
            lines.append(f"{indent}{struct} = {expr}")
        args: list[str] = []
        for field in shape.fields:
            if tag is not None and field.name == tag[0]:
                args.append(tag[1])
            elif field.omissible and field.default is None:
                var = self.name("o")
                inner: list[str] = []
                made = self.value(field.shape, var, inner, indent + "    ")
                lines += [f"{indent}{var} = {struct}.{field.name}", f"{indent}if {var} is UNSET:",
                          f"{indent}    {var} = None"]
                if inner or made != var:
                    lines += [f"{indent}else:", *inner, f"{indent}    {var} = {made}"]
                args.append(var)
            else:
                args.append(self.value(field.shape, f"{struct}.{field.name}", lines, indent))
        made = self.name("m")
        lines += [f"{indent}{line}" for line in record_lines(shape, args, self.consts, made)]
        return made

    def union(self, shape: Shape, expr: str, lines: list[str], indent: str) -> str:
        """A variable holding the kernel's value of the union ``shape`` for
        the decoded ``expr`` (see ``value``)."""
        var = self.name("u")
        lines.append(f"{indent}{var} = {expr}")
        tests: list[tuple[str, list[str], str]] = []
        records: dict[int, tuple[Shape, dict[Any, object]]] = {}
        for member, twin, value in self.members(shape):
            if member.kind == "record":
                records.setdefault(id(member), (member, {}))[1][twin] = value
                continue
            inner: list[str] = []
            made = self.value(member, var, inner, indent + "    ")
            if inner or made != var:
                # msgspec tells the other members apart by their JSON type.
                tests.append((f"type({var}) is {self.name('type', _PYTHON_TYPES[member.kind])}", inner, made))
        for member, values in records.values():
            inner = []
            if len(values) == 1:
                ((twin, value),) = values.items()
                test = f"type({var}) is {self.name('twin', twin)}"
                tag = None if shape.tag is None else (shape.tag, self.name("tag", value))
            else:
                # One Struct per value of the tag: the value is looked up by the Struct's class.
                assert shape.tag is not None
                tag = (shape.tag, self.name("tag"))
                test = f"({tag[1]} := {self.name('tags', values)}.get(type({var}))) is not None"
            made = self.record(member, var, inner, indent + "    ", tag=tag)
            tests.append((test, inner, made))
        # Members that need no conversion (null, plain values) are kept as they are.
        for number, (test, inner, made) in enumerate(tests):
            lines += [f"{indent}{'elif' if number else 'if'} {test}:", *inner, f"{indent}    {var} = {made}"]
        return var

    def function(self, name: str, argument: str, lines: list[str], result: str | None = None) -> None:
        """Define ``name`` of ``argument``: ``lines`` then ``return result``."""
        tail = [] if result is None else [f"    return {result}"]
        exec("\n".join([f"def {name}({argument}):", *lines, *tail]), self.consts)  # written from the shape


@functools.cache
def decoder(kind: str) -> Callable[[str | bytes], object] | None:
    """The fast decoder of one kind: payload text to the kind's value, or
    ``None`` for text it leaves to the kernel's reader; ``None`` for a kind
    with no payload type."""
    payload_type = PAYLOAD_TYPES.get(kind)
    if payload_type is None:
        return None
    source = _Source()
    shape = shape_of(payload_type)
    source.consts["decode"] = msgspec.json.Decoder(source.twin(shape)).decode
    source.consts.update(DecodeError=msgspec.DecodeError, Unreadable=Unreadable)
    lines: list[str] = []
    made = source.value(shape, "struct", lines, "        ")
    body = [
        "    try:",
        "        struct = decode(text)",
        "    except (DecodeError, RecursionError, TypeError):",
        "        return None",
        "    try:",
        *lines,
        f"        return {made}",
        "    except (Refused, Unreadable, RecursionError):",
        "        return None",
    ]
    source.function("read", "text", body)
    read: Callable[[str | bytes], object] = source.consts["read"]  # type: ignore[assignment]
    return read
