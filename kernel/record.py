"""Records: the kernel's frozen dataclasses, declared as before and built
without compiling their methods at import.

Theory of operation
-------------------
Every value of the kernel is a frozen dataclass with slots. Declared with
``dataclasses.dataclass``, each class gets its methods (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``)
written as Python source and compiled, close to a millisecond per class, and
``dataclasses`` itself imports ``inspect`` (with ``ast``, ``dis`` and
``tokenize``); the kernel declares over a hundred classes, so these were
most of what importing it cost.

``@record`` declares the same class: ``dataclass(frozen=True, slots=True)``
with its ``eq`` and ``order`` options, fields with defaults and ``field(...)``
(``default``, ``default_factory``, ``compare``, ``hash``, ``repr``), type
checkers reading it as that dataclass (``dataclass_transform``). The class
is made once, with its slots and its methods in it:

- ``__eq__``, ``__hash__``, the orderings and ``__repr__`` are closures over
  the fields' names that compare, hash and print the very tuples and text
  the generated methods do (``operator.attrgetter`` reads the fields);
  ``__eq__`` and ``__hash__`` are replaced by the methods ``dataclasses``
  writes when ``__init__`` is compiled (below), in the same compile, since a
  closure costs a call more and these two run in folds;
  ``__setattr__`` and ``__delattr__`` refuse with ``FrozenInstanceError``;
  ``__getstate__`` and ``__setstate__`` let ``pickle`` and ``copy`` rebuild
  an instance, as ``dataclasses`` provides for frozen slotted classes.
- ``__init__``, the one method whose speed matters, is written and compiled
  as ``dataclasses`` writes it (each field set through
  ``object.__setattr__``, defaults and default factories, ``__post_init__``)
  the second time the class is called (the first call binds the arguments
  as it would, without compiling), and then takes the place of the
  placeholder: a class made once, at import, or never, compiles nothing.
- What makes a class a dataclass to everyone else (``__dataclass_fields__``
  with its ``dataclasses.Field`` objects, ``__dataclass_params__``) is
  built on first look, importing ``dataclasses`` then: ``dataclasses.fields``,
  ``replace``, ``is_dataclass`` and ``asdict``, cattrs and msgspec all see a
  frozen dataclass. The fields are marked as ``dataclasses`` marks its own
  (``dataclasses._FIELD``, which msgspec reads too).

``replace`` is ``dataclasses.replace`` for records without importing
``dataclasses`` (anything else is handed to it); type checkers see
``dataclasses.replace`` and ``dataclasses.field`` themselves. A record has no
base class, no ``InitVar`` and no keyword-only field: each is refused with
``TypeError`` when the class is declared.
"""

from __future__ import annotations

from _thread import get_ident
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = ["field", "record", "replace"]

_T = TypeVar("_T")


class _Missing:
    """No default (``dataclasses.MISSING`` once ``dataclasses`` is looked at)."""


_MISSING: Any = _Missing()


class _Factory:
    """The default of a parameter whose field has a default factory (shown
    as ``<factory>``, as ``dataclasses`` shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


class _Spec:
    """What ``field(...)`` says of one field (a plain class: a named tuple
    would compile its constructor at import)."""

    __slots__ = ("compare", "default", "default_factory", "hash", "repr")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        repr: bool = True,
        hash: bool | None = None,
        compare: bool = True,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.hash = hash
        self.compare = compare


class _Field:
    """One field of a record: its name, its annotation and its spec."""

    __slots__ = ("name", "spec", "type")

    def __init__(self, name: str, annotation: Any, spec: _Spec) -> None:
        self.name = name
        self.type = annotation
        self.spec = spec


if TYPE_CHECKING:
    from dataclasses import field, replace
else:

    def field(*, default=_MISSING, default_factory=_MISSING, repr=True, hash=None, compare=True):
        """``dataclasses.field`` for a record (the options records have)."""
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        return _Spec(default, default_factory, repr, hash, compare)

    def replace(obj, /, **changes):
        """``dataclasses.replace``: a record of ``obj``'s class with its
        fields, except ``changes``; anything else goes to ``dataclasses``."""
        fields = getattr(obj.__class__, "__record_fields__", None)
        if fields is None:
            import dataclasses  # noqa: PLC0415 (not a record)

            return dataclasses.replace(obj, **changes)
        for f in fields:
            if f.name not in changes:
                changes[f.name] = getattr(obj, f.name)
        return obj.__class__(**changes)


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, eq: bool = True, order: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[Any] | None = None, /, *, eq: bool = True, order: bool = False) -> Any:
    """``dataclass(frozen=True, slots=True, eq=eq, order=order)``, built as the
    module docstring says."""

    def wrap(declared: type[_T]) -> type[_T]:
        return _build(declared, eq, order)

    return wrap if cls is None else wrap(cls)


def _is_pseudo(annotation: object, name: str) -> bool:
    """Whether an annotation declares a class variable (not a field); an
    ``InitVar`` is refused."""
    if isinstance(annotation, str):
        if "InitVar" in annotation:
            raise TypeError(f"{name}: a record has no InitVar")
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    if annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar:
        return True
    if type(annotation).__name__ == "InitVar" or getattr(annotation, "__name__", None) == "InitVar":
        raise TypeError(f"{name}: a record has no InitVar")
    return False


def _build(declared: type[_T], eq: bool, order: bool) -> type[_T]:
    if order and not eq:
        raise ValueError("eq must be true if order is true")
    name = declared.__name__
    if declared.__bases__ != (object,):
        raise TypeError(f"{name}: a record has no base class")
    namespace = dict(declared.__dict__)
    fields: list[_Field] = []
    for key, annotation in namespace.get("__annotations__", {}).items():
        if _is_pseudo(annotation, f"{name}.{key}"):
            continue
        value = namespace.pop(key, _MISSING)
        spec = value if isinstance(value, _Spec) else _Spec(default=value)
        fields.append(_Field(key, annotation, spec))
    seen_default = False
    for f in fields:
        if f.spec.default is not _MISSING or f.spec.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    names = tuple(f.name for f in fields)
    made: Any = None  # the class, once made: the methods below close over it
    calls = 0

    def __init__(self: object, /, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        values = _bound(fields, args, kwargs) if calls == 1 else None
        if values is None:
            _compile_init(made)(self, *args, **kwargs)
            return
        for name, value in zip(names, values, strict=True):
            object.__setattr__(self, name, value)
        if hasattr(self, "__post_init__"):
            self.__post_init__()

    methods: dict[str, Any] = {"__init__": __init__, **_frozen(lambda: made, names)}
    methods["__repr__"] = _repr(tuple(f.name for f in fields if f.spec.repr))
    if eq:
        methods.update(_comparisons(_key(tuple(f.name for f in fields if f.spec.compare)), order))
        if "__hash__" not in namespace or (namespace["__hash__"] is None and "__eq__" in namespace):
            hashed = tuple(f.name for f in fields if (f.spec.compare if f.spec.hash is None else f.spec.hash))
            namespace.pop("__hash__", None)
            methods["__hash__"] = _hash(_key(hashed))
    made_here = []
    for key, method in methods.items():
        if key not in namespace:
            method.__qualname__ = f"{declared.__qualname__}.{key}"
            namespace[key] = method
            made_here.append(key)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace.setdefault("__match_args__", names)
    namespace.update(
        __slots__=names,
        __qualname__=declared.__qualname__,
        __record_fields__=tuple(fields),
        __record_options__=(eq, order),
        __record_made__=frozenset(made_here),
        __dataclass_fields__=_DataclassView(),
        __dataclass_params__=_DataclassView(),
    )
    metaclass: Any = type(declared)
    made = metaclass(name, declared.__bases__, namespace)
    if not namespace.get("__doc__"):
        # As dataclasses documents an undocumented class: by its signature.
        import inspect  # noqa: PLC0415 (only for a class with no docstring)

        _compile_init(made)
        made.__doc__ = name + str(inspect.signature(made)).replace(" -> None", "")
    result: type[_T] = made
    return result


# --------------------------------------------------------------------------
# __init__: compiled on first use


def _bound(fields: Sequence[_Field], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
    """The field values of a call with ``args`` and ``kwargs``, bound as the
    compiled ``__init__`` binds them, or ``None`` for a call it would refuse
    (the compiled one then raises its own ``TypeError``). The first call of
    a class is bound so, without compiling: a class made once, at import,
    compiles nothing."""
    if len(args) > len(fields):
        return None
    values = list(args)
    used = 0
    for f in fields[len(args) :]:
        if f.name in kwargs:
            values.append(kwargs[f.name])
            used += 1
        elif f.spec.default is not _MISSING:
            values.append(f.spec.default)
        elif f.spec.default_factory is not _MISSING:
            values.append(f.spec.default_factory())
        else:
            return None
    return values if used == len(kwargs) else None


def _compile_init(cls: Any) -> Callable[..., None]:
    """The ``__init__`` ``dataclasses`` would write for the frozen record
    ``cls``, set on it (compiled once: a second compile, from two threads at
    once, writes the same function)."""
    fields: tuple[_Field, ...] = cls.__record_fields__
    me = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"  # the dataclass's names
    consts: dict[str, object] = {"__record_set__": object.__setattr__, "__record_factory__": _FACTORY}
    params, body = [me], []
    for f in fields:
        value = f.name
        if f.spec.default is not _MISSING:
            consts[f"__record_default_{f.name}__"] = f.spec.default
            params.append(f"{f.name}=__record_default_{f.name}__")
        elif f.spec.default_factory is not _MISSING:
            consts[f"__record_make_{f.name}__"] = f.spec.default_factory
            params.append(f"{f.name}=__record_factory__")
            value = f"__record_make_{f.name}__() if {f.name} is __record_factory__ else {f.name}"
        else:
            params.append(f.name)
        body.append(f"__record_set__({me}, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append(f"{me}.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    source += _compared_source(cls, fields)
    exec(source, consts)
    init: Any = consts["__init__"]
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    for name in ("__init__", "__eq__", "__hash__"):
        if name in consts:
            method: Any = consts[name]
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            method.__module__ = cls.__module__
            setattr(cls, name, method)
    compiled: Callable[..., None] = init
    return compiled


def _compared_source(cls: Any, fields: Sequence[_Field]) -> str:
    """The source of the ``__eq__`` and ``__hash__`` ``dataclasses`` writes,
    for those of ``cls``'s that record made: compiled with its ``__init__``,
    they take the place of the closures, which cost a call more."""
    made: frozenset[str] = cls.__record_made__
    source = ""
    if "__eq__" in made:
        compared = [f.name for f in fields if f.spec.compare]
        mine = "".join(f"self.{name}," for name in compared)
        theirs = "".join(f"other.{name}," for name in compared)
        source += (
            "def __eq__(self, other):\n"
            "    if other.__class__ is self.__class__:\n"
            f"        return ({mine}) == ({theirs})\n"
            "    return NotImplemented\n"
        )
    if "__hash__" in made:
        hashed = [f.name for f in fields if (f.spec.compare if f.spec.hash is None else f.spec.hash)]
        source += f"def __hash__(self):\n    return hash(({''.join(f'self.{name},' for name in hashed)}))\n"
    return source


# --------------------------------------------------------------------------
# The other methods: closures


def _key(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    """The tuple of the fields ``names`` of an instance, as the generated
    methods build it (``(self.a, self.b)``)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    many: Callable[[object], tuple[Any, ...]] = attrgetter(*names)
    return many


def _comparisons(key: Callable[[object], tuple[Any, ...]], order: bool) -> dict[str, Callable[..., Any]]:
    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    methods: dict[str, Callable[..., Any]] = {"__eq__": __eq__}
    if not order:
        return methods

    def __lt__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) < key(other)
        return NotImplemented

    def __le__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) <= key(other)
        return NotImplemented

    def __gt__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) > key(other)
        return NotImplemented

    def __ge__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) >= key(other)
        return NotImplemented

    methods.update(__lt__=__lt__, __le__=__le__, __gt__=__gt__, __ge__=__ge__)
    return methods


def _hash(key: Callable[[object], tuple[Any, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(key(self))

    return __hash__


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    running: set[tuple[int, int]] = set()

    def __repr__(self: object) -> str:
        # "..." for a record met again inside its own repr, as dataclasses
        # does (keyed by thread, as reprlib keys it: two threads may print
        # the same record at once)
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _refusal() -> type[Exception]:
    """``dataclasses.FrozenInstanceError``, the error of an assignment to a record."""
    import dataclasses  # noqa: PLC0415 (only a refused assignment needs it)

    return dataclasses.FrozenInstanceError


def _frozen(made: Callable[[], Any], names: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    fields = frozenset(names)

    def __setattr__(self: object, name: str, value: object) -> None:
        cls = made()
        if type(self) is cls or name in fields:
            raise _refusal()(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        cls = made()
        if type(self) is cls or name in fields:
            raise _refusal()(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    def __getstate__(self: object) -> list[object]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: object, state: Sequence[object]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    return {
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
        "__getstate__": __getstate__,
        "__setstate__": __setstate__,
    }


# --------------------------------------------------------------------------
# What dataclasses reads, built on first look


class _DataclassView:
    """``__dataclass_fields__`` and ``__dataclass_params__`` of a record,
    built (importing ``dataclasses``) the first time either is read, and then
    set on the class in place of this placeholder."""

    def __get__(self, instance: object, owner: type) -> Any:
        import dataclasses  # noqa: PLC0415 (someone reads the record as a dataclass)

        fields: dict[str, dataclasses.Field[Any]] = {}
        for f in owner.__record_fields__:  # type: ignore[attr-defined]
            made: Any = dataclasses.field(
                default=f.spec.default if f.spec.default is not _MISSING else dataclasses.MISSING,
                default_factory=(
                    f.spec.default_factory if f.spec.default_factory is not _MISSING else dataclasses.MISSING
                ),
                repr=f.spec.repr,
                hash=f.spec.hash,
                compare=f.spec.compare,
            )
            made.name, made.type = f.name, f.type
            made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what dataclasses marks a field with
            fields[f.name] = made
        params = _params(dataclasses, *owner.__record_options__)  # type: ignore[attr-defined]
        type.__setattr__(owner, "__dataclass_fields__", fields)
        type.__setattr__(owner, "__dataclass_params__", params)
        return getattr(owner, self.name)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name


_PARAMS: dict[tuple[bool, bool], object] = {}


def _params(dataclasses: Any, eq: bool, order: bool) -> object:
    """The ``__dataclass_params__`` of a frozen slotted dataclass with ``eq``
    and ``order``: those ``dataclasses`` gives a class declared so (made
    once per pair, from an empty class: its constructor's parameters differ
    between Python versions)."""
    found = _PARAMS.get((eq, order))
    if found is None:
        probe = dataclasses.dataclass(type("Probe", (), {}), frozen=True, slots=True, eq=eq, order=order)
        found = _PARAMS[(eq, order)] = probe.__dataclass_params__
    return found
