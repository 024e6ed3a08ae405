"""The strict payload readers every fold reads through: their refusals name
the payload or the key at fault."""

from __future__ import annotations

import pytest

from planfold.kernel.errors import PayloadError
from planfold.kernel.payload import check_keys, read_optional_str, read_str


def test_check_keys_names_the_payload_when_not_told_where() -> None:
    with pytest.raises(PayloadError) as caught:
        check_keys({"a": 1}, frozenset({"a", "b"}))
    assert str(caught.value) == "payload is missing key(s) ['b']"


def test_read_optional_str_refuses_a_number_naming_the_key() -> None:
    with pytest.raises(PayloadError) as caught:
        read_optional_str({"note": 3}, "note")
    assert str(caught.value) == "'note' must be a string or null"


def test_read_str_refuses_an_empty_string_when_told_to() -> None:
    assert read_str({"id": ""}, "id") == ""
    with pytest.raises(PayloadError) as caught:
        read_str({"id": ""}, "id", non_empty=True)
    assert str(caught.value) == "'id' must not be empty"
