"""IdSet behaves as an immutable set of ids whatever the order of inserts,
and an insert into any version leaves every other version as it was."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from planfold.kernel.idset import IdSet

ids = st.text(alphabet="abcdef", min_size=1, max_size=3)


class Versions(RuleBasedStateMachine):
    """Every version ever made, each beside the frozenset it must equal."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: list[tuple[IdSet, frozenset[str]]] = [(IdSet(), frozenset())]

    @rule(data=st.data(), new=ids)
    def insert_into_any_version(self, data: st.DataObject, new: str) -> None:
        index = data.draw(st.integers(0, len(self.versions) - 1), label="version")
        base, model = self.versions[index]
        grown = base.with_id(new)
        if new in model:
            assert grown is base
        self.versions.append((grown, model | {new}))

    @invariant()
    def every_version_equals_its_model(self) -> None:
        for version, model in self.versions:
            assert version == model and model == version
            assert len(version) == len(model) and set(version) == model
            assert all(item in version for item in model) and "zz" not in version
            assert hash(version) == hash(model)


TestVersions = Versions.TestCase


@given(st.lists(ids, max_size=40))
def test_sets_of_the_same_ids_are_equal_however_they_were_built(items: list[str]) -> None:
    one, other = IdSet(), IdSet(items)
    for item in reversed(items):
        one = one.with_id(item)
    assert one == other and hash(one) == hash(other)
    assert (one == IdSet([*items, "new"])) is False
    assert pickle.loads(pickle.dumps(one)) == one


def test_an_insert_copies_each_id_a_logarithmic_number_of_times() -> None:
    grown = IdSet()
    for number in range(1_000):
        grown = grown.with_id(f"goal-{number}")
    levels = grown._levels
    assert [len(level) for level in levels] == sorted((len(level) for level in levels), reverse=True)
    assert len(levels) == bin(1_000).count("1") and len(grown) == 1_000


def test_an_id_set_cannot_be_changed_in_place() -> None:
    made = IdSet(["a"])
    with pytest.raises(AttributeError, match="immutable"):
        made._size = 3
    with pytest.raises(AttributeError, match="immutable"):
        del made._levels
    assert made == {"a"} and made != ["a"] and repr(made) == "IdSet(['a'])"
