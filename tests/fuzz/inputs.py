"""Hostile inputs for the fuzz targets, as Hypothesis strategies of bytes.

Every target takes bytes, so that a failing input can be kept as a file in
the corpus and replayed exactly. The strategies here cover what outside input
can throw at an entry point: random and mutated bytes, values of the wrong
type, NaN and infinities, huge integers, deep nesting, huge strings, invalid
UTF-8, NUL, lone surrogates and duplicate object keys.

JSON documents are rendered by ``render`` rather than ``json.dumps`` so that
they can carry what a well-behaved encoder never writes: duplicate keys,
``NaN``/``Infinity`` tokens and raw (CESU-8) surrogates.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "SPECIAL_SCALARS",
    "TOKENS",
    "byte_mutations",
    "deep_nesting",
    "hostile_json",
    "hostile_scalars",
    "huge_json_string",
    "json_inputs",
    "render",
    "rendered",
    "structural_mutations",
    "text_inputs",
]

Draw = Callable[[st.SearchStrategy[Any]], Any]

#: Values that break careless code: NaN and infinities, -0.0, integers just
#: past the 32/53/63/64-bit limits, a 4000-digit integer, NUL, lone
#: surrogates, a byte-order mark, a right-to-left override, a full-width
#: letter, and empty containers.
SPECIAL_SCALARS: tuple[object, ...] = (
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    5e-324,
    1.7976931348623157e308,
    0,
    -1,
    2**31,
    2**53 + 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**100,
    -(10**4000),
    "",
    " ",
    "\x00",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u202e",
    "\uff41",
    True,
    False,
    None,
)

#: Byte strings spliced into documents by ``byte_mutations``.
TOKENS: tuple[bytes, ...] = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"-0.0",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"9" * 400,
    b'"\\u0000"',
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b"\x00",
    b"\xff",
    b"\xfe\xff",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\n",
    b"\r\n",
    b'"',
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"a":1,"a":2',
    b"true",
    b"null",
    b"[]",
    b"{}",
    b'""',
)

_TOKEN_RE = re.compile(rb'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|true|false|null')

# Printable text, control characters, NUL and lone surrogates alike.
_any_char = st.characters(exclude_categories=())


def hostile_scalars(keys: Sequence[str] = ()) -> st.SearchStrategy[object]:
    """Scalars of every JSON type, biased towards the values in
    ``SPECIAL_SCALARS`` and towards ``keys`` (names a target knows)."""
    texts: st.SearchStrategy[str] = st.text(_any_char, max_size=12)
    if keys:
        texts = st.one_of(st.sampled_from(list(keys)), texts)
    return st.one_of(
        st.sampled_from(SPECIAL_SCALARS),
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(),
        texts,
    )


def hostile_json(keys: Sequence[str] = (), max_leaves: int = 12) -> st.SearchStrategy[object]:
    """JSON-shaped values (as ``json.loads`` would return them) whose leaves
    are ``hostile_scalars`` and whose object keys favour ``keys``."""
    key_strategy: st.SearchStrategy[str] = st.text(_any_char, max_size=8)
    if keys:
        key_strategy = st.one_of(st.sampled_from(list(keys)), key_strategy)
    return st.recursive(
        hostile_scalars(keys),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(key_strategy, children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def _render_str(draw: Draw, text: str) -> bytes:
    if draw(st.booleans()):
        return json.dumps(text, ensure_ascii=True).encode("ascii")
    # Raw UTF-8; a lone surrogate becomes its CESU-8 bytes (invalid UTF-8).
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")


def render(draw: Draw, value: object) -> bytes:
    """Render ``value`` as JSON text, drawing the encoding choices: NaN and
    infinities as ``NaN``/``Infinity``/``1e999`` tokens, strings escaped or
    raw, and now and then an object member written twice."""
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, int):
        return str(value).encode("ascii")
    if isinstance(value, float):
        if math.isnan(value):
            return b"NaN"
        if math.isinf(value):
            sign = b"-" if value < 0 else b""
            word: bytes = draw(st.sampled_from([b"Infinity", b"1e999"]))
            return sign + word
        return repr(value).encode("ascii")
    if isinstance(value, str):
        return _render_str(draw, value)
    if isinstance(value, list):
        return b"[" + b",".join(render(draw, item) for item in value) + b"]"
    if isinstance(value, dict):
        members = [(_render_str(draw, str(k)), render(draw, v)) for k, v in value.items()]
        if members and draw(st.integers(0, 7)) == 0:
            index = draw(st.integers(0, len(members) - 1))
            twin = render(draw, draw(hostile_scalars()))
            members.insert(index + draw(st.integers(0, 1)), (members[index][0], twin))
        return b"{" + b",".join(k + b":" + v for k, v in members) + b"}"
    raise TypeError(f"cannot render {type(value).__name__}")


@st.composite
def rendered(draw: Draw, values: st.SearchStrategy[object]) -> bytes:
    """A value from ``values`` rendered by ``render``."""
    return render(draw, draw(values))


# --------------------------------------------------------------------------
# Structural mutation of valid seed values


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


def _get(value: object, path: tuple[object, ...]) -> object:
    for step in path:
        value = value[step]  # type: ignore[index]
    return value


def _nearest_float(number: int) -> float:
    """The int as a float; past the float range, the infinity of its sign (float() would raise)."""
    try:
        return float(number)
    except OverflowError:
        return -math.inf if number < 0 else math.inf


def _tweak(draw: Draw, node: object, keys: Sequence[str]) -> object:
    """A nearby wrong value: off by one, the wrong type, or empty."""
    if isinstance(node, bool):
        return draw(st.sampled_from([not node, int(node), str(node).lower()]))
    if isinstance(node, int):
        return draw(st.sampled_from([node + 1, node - 1, -node, str(node), _nearest_float(node), [node]]))
    if isinstance(node, str):
        return draw(st.sampled_from([node + node, node.upper(), " " + node, node[:-1], [node], {node: node}]))
    if isinstance(node, list):
        return draw(st.sampled_from([[], [*node, *node], list(reversed(node)), {"0": node}]))
    if isinstance(node, dict):
        return draw(st.sampled_from([{}, list(node.values()), {**node, draw(st.sampled_from(list(keys) or ["x"])): 0}]))
    return draw(hostile_scalars(keys))


def _mutate_once(draw: Draw, value: object, keys: Sequence[str]) -> object:
    paths = _paths(value)
    path = draw(st.sampled_from(paths))
    node = _get(value, path)
    op = draw(st.sampled_from(["replace", "tweak", "delete", "insert", "duplicate", "swap"]))
    if op in ("replace", "tweak") or not path:
        new = draw(hostile_json(keys, max_leaves=4)) if op == "replace" else _tweak(draw, node, keys)
        if not path:
            return new
        parent = _get(value, path[:-1])
        parent[path[-1]] = new  # type: ignore[index]
        return value
    parent = _get(value, path[:-1])
    step = path[-1]
    if isinstance(parent, dict):
        if op == "delete":
            del parent[step]
        else:
            parent[draw(st.sampled_from(list(keys) or ["x"]))] = draw(hostile_json(keys, max_leaves=3))
    elif isinstance(parent, list):
        assert isinstance(step, int)
        if op == "delete":
            del parent[step]
        elif op == "insert":
            parent.insert(step, draw(hostile_json(keys, max_leaves=3)))
        elif op == "duplicate":
            parent.insert(step, copy.deepcopy(node))
        elif step + 1 < len(parent):
            parent[step], parent[step + 1] = parent[step + 1], parent[step]
    return value


@st.composite
def structural_mutations(draw: Draw, seeds: Sequence[object], keys: Sequence[str] = ()) -> object:
    """A seed value with one to three mutations applied at random places:
    a node replaced by a hostile value or a nearby wrong one, a member or
    item deleted, inserted, duplicated or swapped with its neighbour."""
    value = copy.deepcopy(draw(st.sampled_from(list(seeds))))
    for _ in range(draw(st.integers(1, 3))):
        value = _mutate_once(draw, value, keys)
    return value


# --------------------------------------------------------------------------
# Byte-level mutation


@st.composite
def byte_mutations(draw: Draw, seeds: Sequence[bytes]) -> bytes:
    """A seed with one to four byte-level edits: a byte overwritten, a
    ``TOKENS`` entry spliced in or put in place of a JSON token, a slice
    deleted or duplicated, or the tail cut off."""
    data = bytearray(draw(st.sampled_from(list(seeds))))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["overwrite", "splice", "retoken", "delete", "duplicate", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if op == "overwrite" and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif op == "splice":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif op == "retoken":
            matches = list(_TOKEN_RE.finditer(bytes(data)))
            if matches:
                match = draw(st.sampled_from(matches))
                data[match.start() : match.end()] = draw(st.sampled_from(TOKENS))
        elif op in ("delete", "duplicate"):
            end = min(len(data), at + draw(st.integers(1, 16)))
            if op == "delete":
                del data[at:end]
            else:
                data[at:at] = data[at:end]
        elif op == "truncate":
            del data[at:]
    return bytes(data)


# --------------------------------------------------------------------------
# Documents that are expensive by size


@st.composite
def deep_nesting(draw: Draw) -> bytes:
    """Arrays or objects nested from a few levels to 100 000 deep."""
    depth: int = draw(st.sampled_from([2, 50, 400, 900, 1_000, 5_000, 100_000]))
    opener: bytes
    closer: bytes
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'{"payload":[', b"]}")]))
    inner: bytes = draw(st.sampled_from([b"0", b"null", b'"x"', b"NaN", b""]))
    closed: bool = draw(st.booleans())
    return opener * depth + inner + (closer * depth if closed else b"")


@st.composite
def huge_json_string(draw: Draw) -> bytes:
    """A JSON string of up to about two million characters."""
    unit: str = draw(st.sampled_from(["a", " ", "\\u0000", "\\ud800", "é", "\\n", "\\\\"]))
    count: int = draw(st.sampled_from([10_000, 100_000, 1_000_000]))
    return b'"' + unit.encode("utf-8") * count + b'"'


def json_inputs(
    seeds: Sequence[object], keys: Sequence[str] = (), *, wrap: Callable[[bytes], bytes] | None = None
) -> st.SearchStrategy[bytes]:
    """Inputs for a target that reads one JSON document: random bytes,
    byte-mutated and structurally mutated seeds, hostile documents, deep
    nesting and huge strings (``wrap`` puts the size attacks where the
    target will look, e.g. inside a known field)."""
    seed_bytes = [json.dumps(seed).encode("utf-8") for seed in seeds]
    wrapper = wrap or (lambda body: body)
    structural = rendered(structural_mutations(seeds, keys))
    return st.one_of(
        st.binary(max_size=256),
        byte_mutations(seed_bytes),
        structural,
        structural,
        structural,
        rendered(hostile_json(keys)),
        deep_nesting().map(wrapper),
        huge_json_string().map(wrapper),
    )


def text_inputs(seeds: Sequence[str], words: Sequence[str] = ()) -> st.SearchStrategy[bytes]:
    """Inputs for a target that reads one line of text (decoded by the
    target with ``surrogateescape``): random bytes, mutated seeds, seeds
    with hostile text spliced in, and huge lines."""
    seed_bytes = [seed.encode("utf-8") for seed in seeds]
    pieces = st.one_of(st.text(_any_char, max_size=16), st.sampled_from(list(words) or [" "]))
    spliced = st.builds(
        lambda seed, extra, where: seed[:where] + extra.encode("utf-8", "surrogatepass") + seed[where:],
        st.sampled_from(seed_bytes),
        pieces,
        st.integers(0, 64),
    )
    huge = st.builds(
        lambda seed, unit, count: seed + b" " + unit * count,
        st.sampled_from(seed_bytes),
        st.sampled_from([b"x", b" ", b"\t", b"\x00", b"\xff", b"'", b'"', b"|", b"\\"]),
        st.sampled_from([1_000, 100_000, 1_000_000]),
    )
    return st.one_of(
        st.binary(max_size=128),
        byte_mutations(seed_bytes),
        spliced,
        st.text(_any_char, max_size=64).map(lambda text: text.encode("utf-8", "surrogatepass")),
        huge,
    )
