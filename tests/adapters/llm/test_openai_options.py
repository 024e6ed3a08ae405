from __future__ import annotations

from typing import Any

import pytest

from planfold.adapters.llm.openai import AsyncOpenAIClient, OpenAIClient


@pytest.mark.parametrize("client", [OpenAIClient, AsyncOpenAIClient])
def test_a_client_made_with_a_keyword_it_does_not_take_is_a_type_error(client: Any) -> None:
    with pytest.raises(TypeError, match=r"got unexpected keyword arguments: timeout"):
        client("http://127.0.0.1:1/v1", "m", timeout=5)
