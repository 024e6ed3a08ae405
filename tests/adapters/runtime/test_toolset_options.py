from __future__ import annotations

from typing import Any

import pytest

from planfold.adapters.runtime.toolset import open_async_runtime, open_runtime


@pytest.mark.parametrize("opener", [open_runtime, open_async_runtime])
def test_opening_a_runtime_with_a_keyword_it_does_not_take_is_a_type_error(opener: Any) -> None:
    with pytest.raises(TypeError, match=r"got unexpected keyword arguments: polcy"):
        opener(None, "s", None, None, None, polcy=None)
