"""Tests that pin what mutation testing found unpinned in the kernel
package's lazy exports: every public name resolves to its defining module's
object and is kept once resolved; an unknown name is an AttributeError."""

from __future__ import annotations

import importlib

import pytest

import kernel
from kernel.session import fold_session


def test_a_public_name_resolves_on_first_use_and_is_then_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in kernel.__all__:
        monkeypatch.delitem(vars(kernel), name, raising=False)
    for name in kernel.__all__:
        value = getattr(kernel, name)
        assert vars(kernel)[name] is value
        defining = getattr(value, "__module__", None)
        if isinstance(defining, str) and defining.startswith("kernel."):
            assert getattr(importlib.import_module(defining), name, value) is value
    assert kernel.fold_session is fold_session


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'kernel' has no attribute 'no_such_name'$"):
        getattr(kernel, "no_such_name")  # noqa: B009
