"""The kernel package itself (``kernel/__init__.py``): what it shows to
``dir()`` and ``from planfold.kernel import *``."""

from __future__ import annotations

from planfold import kernel


def test_dir_of_the_package_lists_every_public_name_sorted() -> None:
    listed = dir(kernel)
    assert listed == sorted(listed)
    assert set(kernel.__all__) <= set(listed)
    assert {"__name__", "__all__"} <= set(listed)
