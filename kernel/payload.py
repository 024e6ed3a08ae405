"""Strict readers for JSON-shaped event payloads.

Payloads are stored as plain JSON values so that a log can be read by any
language. Every fold reads them through these helpers, which demand an exact
key set and exact types (``True`` is not an integer here) and raise
``PayloadError`` naming the offending key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from .errors import PayloadError

__all__ = [
    "JSON",
    "JSONObject",
    "check_keys",
    "read_bool",
    "read_int",
    "read_object",
    "read_optional_str",
    "read_str",
    "read_str_list",
]

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"
JSONObject: TypeAlias = Mapping[str, JSON]


def check_keys(
    payload: object,
    required: frozenset[str],
    optional: frozenset[str] = frozenset(),
    *,
    where: str = "payload",
) -> JSONObject:
    """Return ``payload`` as a mapping whose keys are exactly ``required`` plus
    any of ``optional``; raise ``PayloadError`` on a missing or extra key."""
    if not isinstance(payload, Mapping):
        raise PayloadError(f"{where} must be an object, got {type(payload).__name__}")
    keys = payload.keys()
    missing = required - keys
    if missing:
        raise PayloadError(f"{where} is missing key(s) {sorted(missing)}")
    extra = keys - required - optional
    if extra:
        raise PayloadError(f"{where} has unexpected key(s) {sorted(map(str, extra))}")
    return payload


def read_object(payload: JSONObject, key: str) -> JSONObject:
    value = payload[key]
    if not isinstance(value, Mapping):
        raise PayloadError(f"{key!r} must be an object")
    return value


def read_bool(payload: JSONObject, key: str) -> bool:
    value = payload[key]
    if not isinstance(value, bool):
        raise PayloadError(f"{key!r} must be a boolean")
    return value


def read_int(payload: JSONObject, key: str, *, minimum: int | None = None) -> int:
    value = payload[key]
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and not math.isfinite(value):
            raise PayloadError(f"{key!r} must be an integer, got a non-finite number")
        raise PayloadError(f"{key!r} must be an integer")
    if minimum is not None and value < minimum:
        raise PayloadError(f"{key!r} must be >= {minimum}, got {value}")
    return value


def read_str(payload: JSONObject, key: str, *, non_empty: bool = False) -> str:
    value = payload[key]
    if not isinstance(value, str):
        raise PayloadError(f"{key!r} must be a string")
    if non_empty and not value.strip():
        raise PayloadError(f"{key!r} must not be empty")
    return value


def read_optional_str(payload: JSONObject, key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise PayloadError(f"{key!r} must be a string or null")
    return value


def read_str_list(payload: JSONObject, key: str) -> tuple[str, ...]:
    value = payload[key]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise PayloadError(f"{key!r} must be a list of strings")
    out: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise PayloadError(f"{key!r}[{index}] must be a string")
        out.append(item)
    return tuple(out)
