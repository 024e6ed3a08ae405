"""A model client that replays a fixed conversation, for offline runs and tests.

Theory of operation
-------------------
A script is a list of steps. Each call to ``complete`` takes the next step:
it first checks the step's expectations against the request (the tool names
offered, text the system prompt must or must not contain, the latest user
message, the role of the last message), and then answers with the step's
canned reply, or raises the step's canned ``ModelError`` (to rehearse a
timeout or a rate limit without a server).

Failures are loud and change nothing. A request that misses an expectation
raises ``ScriptMismatchError`` listing every unmet expectation of that step,
and the step stays current. A request after the last step raises
``ScriptExhaustedError``. ``assert_finished`` raises ``ScriptUnfinishedError``
when steps are left over. Every request received is kept in ``requests``.

Scripts can be written as Python values (``ScriptStep``, ``Expectation``) or
loaded from a dict, JSON or TOML of this shape (TOML: ``[[steps]]`` tables)::

    {"steps": [
      {"label": "plan",
       "expect": {"tools": ["read_file", "exit_plan_mode"],
                  "tools_include": [], "tools_exclude": ["write_file"],
                  "system_contains": ["plan:policy"], "system_excludes": [],
                  "last_user_contains": ["fix the bug"], "last_role": "user"},
       "reply": {"text": "Reading first.",
                 "tool_calls": [{"id": "c1", "name": "read_file",
                                 "arguments": {"path": "README.md"}}],
                 "finish_reason": "tool_calls",
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                           "cached_tokens": 8},
                 "latency_ms": 420}},
      {"reply": "Plain text is a text reply."},
      {"error": {"code": "model-timeout"}}
    ]}

A reply's ``usage`` and ``latency_ms`` are what the call is said to have
cost (the scripted client measures nothing; a reply without them reports
none). A tool call's ``arguments`` is an object, or a string taken as the raw JSON
text (so a script can feed the runtime broken JSON). Unknown keys are errors;
loading reports every problem of a script at once as ``ScriptFormatError``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

from .model import ChatRequest, ChatResponse, ModelError
from .script_format import Expectation, ScriptFormatError, ScriptStep, parse_script

__all__ = [
    "Expectation",
    "ScriptExhaustedError",
    "ScriptFormatError",
    "ScriptMismatchError",
    "ScriptStep",
    "ScriptUnfinishedError",
    "ScriptedClient",
]


# --- errors -----------------------------------------------------------------


class ScriptExhaustedError(ModelError):
    """A request arrived after the script's last step."""

    code = "script-exhausted"

    def __init__(self, steps: int, request: ChatRequest) -> None:
        asked = request.last_user_text
        super().__init__(
            f"the script has only {steps} step(s) and all were used; an extra request "
            f"arrived (last user message: {asked!r}, tools: {list(request.tool_names)})"
        )
        self.steps = steps


class ScriptMismatchError(ModelError):
    """A request did not meet its step's expectations; ``problems`` lists them all."""

    code = "script-mismatch"

    def __init__(self, step: int, label: str | None, problems: Sequence[str]) -> None:
        name = f"step {step}" + (f" ({label})" if label else "")
        super().__init__(f"{name} of the script expected otherwise: " + "; ".join(problems))
        self.step = step
        self.label = label
        self.problems = tuple(problems)


class ScriptUnfinishedError(ModelError):
    """Steps are left over when the conversation was supposed to be done."""

    code = "script-unfinished"

    def __init__(self, used: int, steps: int) -> None:
        super().__init__(f"only {used} of the script's {steps} step(s) were used")
        self.used = used
        self.steps = steps


# --- the client -------------------------------------------------------------


class ScriptedClient:
    """A ``ModelClient`` that replays ``steps`` in order."""

    def __init__(self, steps: Iterable[ScriptStep]) -> None:
        self.steps: tuple[ScriptStep, ...] = tuple(steps)
        self._position = 0
        self._requests: list[ChatRequest] = []

    @classmethod
    def replies(cls, *responses: ChatResponse) -> ScriptedClient:
        """A client that answers with ``responses``, in order, whatever it is
        asked (a script of steps with no expectations)."""
        return cls(ScriptStep(response, Expectation()) for response in responses)

    @classmethod
    def from_dict(cls, data: object, source: str = "script") -> ScriptedClient:
        """A client from the dict form; raises ``ScriptFormatError`` listing every problem."""
        return cls(parse_script(data, source))

    @classmethod
    def from_json(cls, text: str, source: str = "JSON script") -> ScriptedClient:
        """A client from JSON text; raises ``ScriptFormatError``."""
        try:
            data = json.loads(text)
        except ValueError as err:
            raise ScriptFormatError([f"not JSON: {err}"], source) from err
        return cls.from_dict(data, source)

    @classmethod
    def from_toml(cls, text: str, source: str = "TOML script") -> ScriptedClient:
        """A client from TOML text (``[[steps]]`` tables); raises ``ScriptFormatError``."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ScriptFormatError([f"not TOML: {err}"], source) from err
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> ScriptedClient:
        """A client from a ``.json`` or ``.toml`` file; raises ``ScriptFormatError``
        for another suffix, an unreadable file or a bad script."""
        file = Path(path)
        loaders = {".json": cls.from_json, ".toml": cls.from_toml}
        loader = loaders.get(file.suffix.lower())
        if loader is None:
            raise ScriptFormatError([f"unknown script suffix {file.suffix!r}"], file.name)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ScriptFormatError([f"cannot read it: {err}"], file.name) from err
        return loader(text, file.name)

    @property
    def position(self) -> int:
        """How many steps have been used."""
        return self._position

    @property
    def remaining(self) -> int:
        """How many steps are left."""
        return len(self.steps) - self._position

    @property
    def requests(self) -> tuple[ChatRequest, ...]:
        """Every request received, including ones that failed their expectations."""
        return tuple(self._requests)

    def complete(self, request: ChatRequest) -> ChatResponse:
        """The current step's reply. Raises ``ScriptExhaustedError`` after the last
        step, ``ScriptMismatchError`` (the step stays current) when an expectation
        is not met, and the step's own error when it scripts one."""
        self._requests.append(request)
        if self._position >= len(self.steps):
            raise ScriptExhaustedError(len(self.steps), request)
        step = self.steps[self._position]
        problems = step.expect.problems(request)
        if problems:
            raise ScriptMismatchError(self._position + 1, step.label, problems)
        self._position += 1
        if isinstance(step.reply, ModelError):
            raise step.reply
        return step.reply

    def assert_finished(self) -> None:
        """Raise ``ScriptUnfinishedError`` unless every step was used."""
        if self._position < len(self.steps):
            raise ScriptUnfinishedError(self._position, len(self.steps))
