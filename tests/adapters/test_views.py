"""Views of a list that only grows: immutable, and as cheap at any length."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.views import Prefix


@given(
    items=st.lists(st.integers(), max_size=8),
    cut=st.integers(0, 8),
    head=st.lists(st.integers(), max_size=3).map(tuple),
    tail=st.lists(st.integers(), max_size=3).map(tuple),
    grown=st.lists(st.integers(), max_size=4),
    index=st.integers(-15, 15),
    window=st.tuples(st.integers(-15, 15) | st.none(), st.integers(-15, 15) | st.none(), st.sampled_from([1, 2, -1])),
)
def test_a_prefix_reads_as_the_tuple_it_stands_for_and_later_appends_do_not_change_it(
    *,
    items: list[int],
    cut: int,
    head: tuple[int, ...],
    tail: tuple[int, ...],
    grown: list[int],
    index: int,
    window: tuple[int | None, int | None, int],
) -> None:
    length = min(cut, len(items))
    view = Prefix(items, length, head, tail)
    same = (*head, *items[:length], *tail)
    items.extend(grown)  # the owner appends: the view stays what it was
    assert len(view) == len(same) and tuple(view) == same and view == same and view == list(same)
    assert view[slice(*window)] == same[slice(*window)]
    assert list(reversed(view)) == list(reversed(same))
    if -len(same) <= index < len(same):
        assert view[index] == same[index]
    else:
        with pytest.raises(IndexError):
            view[index]
    assert hash(view) == hash(same) and view.source is items
    assert view != (*same, 0) and (view == "text") is False


def test_a_prefix_longer_than_its_list_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot hold 3"):
        Prefix([1, 2], 3)
    with pytest.raises(ValueError, match="cannot hold -1"):
        Prefix([1, 2], -1)
