"""The JSON Schemas made from the kernel's payload types say what the kernel
reads: the event schema, and the argument schemas the runtime-owned tools are
offered with.

The spine is a property: for payloads of every kind, valid ones taken from
the conformance cases and the kernel's builders, then mutated (a key dropped
or added, a value replaced by a near miss or by arbitrary JSON, a tag
switched), every payload the kernel accepts validates against the schema,
and every schema-valid payload the kernel refuses is refused only for a rule
the schema documents in words (an integer written with a fraction, a JSON
value nested past the limit, a plan's content rules). The tools' arguments
are held to the same property against their decoders.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from planfold.adapters.codec.schema import (
    KEBAB,
    NON_BLANK,
    TRIMMED,
    WHITESPACE,
    event_schema,
    tool_parameters,
)
from planfold.adapters.runtime.toolset import BOOTSTRAP_PLAN, EXIT_PLAN_MODE, REPORT_VERIFICATION, UPDATE_TODO
from planfold.adapters.specgen.vector_cases import cases
from planfold.adapters.specgen.vector_log import SPEC
from planfold.kernel import log
from planfold.kernel.errors import PayloadError, Problem, is_kebab_case
from planfold.kernel.payload import JSON, read_as
from planfold.kernel.plan.spec import PlanSpecError
from planfold.kernel.plan.spec_json import PlanArgs, decode_exit_plan_args, spec_to_json
from planfold.kernel.plan.tools import (
    TodoUpdate,
    ToolArgumentsError,
    VerificationReport,
    decode_todo_update,
    decode_verification,
)
from planfold.kernel.session import PAYLOAD_TYPES
from planfold.kernel.tools.spec import thaw_json
from tests.payload_cases import SEEDS, mutated

SHAPE_RULES = frozenset({"malformed-payload", "unknown-version", "unknown-operation"})


@cache
def validator() -> jsonschema.protocols.Validator:
    schema = event_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_accepts(kind: str, payload: JSON) -> bool:
    return validator().is_valid({"seq": 1, "kind": kind, "at": 0, "payload": payload})


def kernel_refusal(kind: str, payload: JSON) -> PayloadError | None:
    try:
        read_as(PAYLOAD_TYPES[kind], payload)
    except PayloadError as exc:
        return exc
    return None


def _at(value: Any, where: str) -> Any:
    """The value at a problem's path (``payload.todos[2].id``)."""
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", re.sub(r"^[^.\[]*", "", where)):
        value = value[key] if key else value[int(index)]
    return value


def documented(problem: Problem, payload: JSON) -> bool:
    """Whether the schema can accept what the kernel refused here because
    the schema only says it in words: an integer written with a fraction
    (JSON Schema's integer takes 1.0, and its enum and const compare numbers
    by value, so 1.0 is the version 1) or a JSON value nested too deep."""
    if problem.message == "must be an integer" or problem.message.startswith("must be one of "):
        value = _at(payload, problem.where)
        return isinstance(value, float) and value.is_integer()
    return problem.message == "must be a JSON value"


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
@given(data=st.data())
def test_the_schema_takes_what_the_kernel_reads_and_refuses_nothing_it_does_not_document(
    kind: str, data: st.DataObject
) -> None:
    payload = data.draw(mutated(SEEDS[kind]), label="payload")
    refusal = kernel_refusal(kind, payload)
    event("accepted" if refusal is None else "refused")
    if refusal is None:
        assert schema_accepts(kind, payload), f"{kind}: the kernel reads it, the schema refuses it"
    elif schema_accepts(kind, payload):
        assert all(documented(p, payload) for p in refusal.problems), refusal.message


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
def test_every_seed_is_accepted_by_both(kind: str) -> None:
    assert SEEDS[kind], f"no valid payload of {kind} to mutate"
    for payload in SEEDS[kind]:
        assert kernel_refusal(kind, payload) is None
        assert schema_accepts(kind, payload)


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        (log.TURN_START, {"turn": True}),
        (log.TURN_END, {"turn": 0}),
        (log.TURN_END, {"turn": 2**53}),
        (log.REQUEST_HEADER, {"turn": 1, "step": 1}),
        (log.USER_MESSAGE, {"text": "x", "source": {"type": "plugin", "plugin": ""}}),
        (log.USER_MESSAGE, {"text": "x", "source": {"type": "goal", "goal_id": "g", "revision": 1}}),
        (log.USER_MESSAGE, {"text": "x", "source": {"type": "goal", "goal_id": "g", "revision": 1, "round": 2**53}}),
        (log.PLAN_MODE, {"active": 1}),
        (log.PLAN_MODE, {"active": True, "extra": None}),
        (log.TOOL_REFUSED, {"call_id": "c", "tool": "t", "code": "Bad", "reason": "r", "phase": "plan"}),
        (log.TOOL_REFUSED, {"call_id": "c", "tool": "t", "code": "a", "reason": "r", "phase": "plan", "hint": None}),
        (log.TOOL_CALL, {"call_id": " ", "tool": "t", "arguments": {}}),
    ],
)
def test_known_bad_payloads_are_refused_by_both(kind: str, payload: JSON) -> None:
    assert kernel_refusal(kind, payload) is not None
    assert not schema_accepts(kind, payload)


def test_a_goal_whose_cap_is_not_a_safe_integer_is_refused_by_the_schema_and_the_kernel() -> None:
    payload = copy.deepcopy(next(p for p in SEEDS[log.GOAL_CHANGE] if p["operation"] == "create"))
    payload["goal"]["max_rounds"] = 2**53  # type: ignore[index]
    refusal = kernel_refusal(log.GOAL_CHANGE, payload)
    assert refusal is not None and refusal.code == "malformed-payload"
    assert not schema_accepts(log.GOAL_CHANGE, payload)


def test_an_integer_written_with_a_fraction_is_the_one_thing_the_schema_takes_and_says_in_words() -> None:
    refusal = kernel_refusal(log.TURN_START, {"turn": 1.0})
    assert refusal is not None and schema_accepts(log.TURN_START, {"turn": 1.0})
    assert all(documented(p, {"turn": 1.0}) for p in refusal.problems)
    assert "without a fraction" in json.dumps(event_schema())


# --------------------------------------------------------------------------
# The patterns mean what the readers check

PATTERN_TEXT = st.text(alphabet=st.sampled_from([*"ab-z09A_.", *WHITESPACE]), max_size=8)


@given(PATTERN_TEXT)
def test_the_string_patterns_match_the_readers(value: str) -> None:
    assert (re.search(NON_BLANK, value) is not None) == bool(value.strip())
    assert (re.search(TRIMMED, value) is not None) == (bool(value.strip()) and value == value.strip())
    assert (re.search(KEBAB, value) is not None) == is_kebab_case(value)


def test_whitespace_is_exactly_what_strip_removes() -> None:
    assert {ord(ch) for ch in WHITESPACE} == {code for code in range(0x110000) if chr(code).isspace()}


# --------------------------------------------------------------------------
# Event lines


def test_the_schema_names_every_kind_and_demands_the_envelope_within_the_safe_integers() -> None:
    schema = event_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["discriminator"]["mapping"]) == set(log.KNOWN_KINDS)
    for ref in schema["discriminator"]["mapping"].values():
        body = schema["$defs"][ref.rsplit("/", 1)[1]]
        assert set(body["required"]) == {"kind", "seq", "at", "payload"}
        assert body["additionalProperties"] is False
        for name in ("seq", "at"):
            assert body["properties"][name]["maximum"] == 2**53 - 1


def test_valid_vector_lines_are_schema_valid_and_shape_errors_are_not() -> None:
    for case in cases():
        lines = list(case.lines)
        for index, line in enumerate(lines):
            bad = case.rule is not None and index == len(lines) - 1
            valid = validator().is_valid(line)
            seq = line["seq"]
            if not bad:
                assert valid, case.name
            elif not isinstance(seq, int):
                # 2.0 is an integer to JSON Schema; the description says it is not one here.
                assert not valid or (isinstance(seq, float) and seq.is_integer()), case.name
            elif case.rule in (*SHAPE_RULES, "unknown-kind"):
                kind, payload = str(line["kind"]), line["payload"]
                refusal = kernel_refusal(kind, payload) if kind in PAYLOAD_TYPES else None
                documented_only = refusal is not None and all(documented(p, payload) for p in refusal.problems)
                assert not valid or documented_only, case.name


# --------------------------------------------------------------------------
# The runtime-owned tools' arguments

#: The content rules of a plan, which the plan's description states.
PLAN_RULES = frozenset(
    {"empty-goal", "no-steps", "no-verify", "no-todos", "blank-item", "blank-todo-id", "duplicate-todo-id",
     "blocking-question"}
)
PLAN_ARGS_SEEDS: list[Any] = [
    {"plan_spec": spec_to_json(SPEC)},
    {"plan_spec": {"goal": "g", "steps": ["s"], "verify": ["v"], "todos": [{"id": "t1", "text": "do"}],
                   "open_questions": ["why?", {"text": "db?"}], "scope": {"paths": ["src"]}},
     "summary_candidate": {"goal": "g"}},
]
TOOLS: list[tuple[Any, type, Callable[[object], object], list[Any]]] = [
    (EXIT_PLAN_MODE, PlanArgs, decode_exit_plan_args, PLAN_ARGS_SEEDS),
    (BOOTSTRAP_PLAN, PlanArgs, decode_exit_plan_args, PLAN_ARGS_SEEDS),
    (UPDATE_TODO, TodoUpdate, decode_todo_update, [{"todo_id": "t1", "status": "done"}]),
    (REPORT_VERIFICATION, VerificationReport, decode_verification,
     [{"passed": True}, {"passed": False, "notes": "the tests fail"}]),
]


@pytest.mark.parametrize(
    ("tool", "arguments_type"), [(t[0], t[1]) for t in TOOLS], ids=lambda t: getattr(t, "name", "")
)
def test_each_runtime_owned_tool_is_offered_the_schema_of_its_arguments_type(tool: Any, arguments_type: type) -> None:
    offered = thaw_json(tool.parameters)
    assert offered == tool_parameters(arguments_type)
    assert offered["additionalProperties"] is False
    jsonschema.Draft202012Validator.check_schema(offered)


def offered(tool: Any) -> Any:
    return thaw_json(tool.parameters)


def test_the_todo_status_the_decoder_takes_is_offered() -> None:
    assert offered(UPDATE_TODO)["properties"]["status"]["enum"] == ["pending", "in_progress", "done", "dropped"]
    plan = offered(EXIT_PLAN_MODE)["properties"]["plan_spec"]
    assert plan["properties"]["todos"]["items"]["properties"]["status"]["enum"] == [
        "pending", "in_progress", "done", "dropped"
    ]


@pytest.mark.parametrize(("tool", "decode", "seeds"), [(t[0], t[2], t[3]) for t in TOOLS],
                         ids=lambda t: getattr(t, "name", ""))
@given(data=st.data())
def test_a_tool_s_schema_takes_what_its_decoder_takes(
    tool: Any, decode: Callable[[object], object], seeds: list[Any], data: st.DataObject
) -> None:
    arguments = data.draw(mutated(seeds), label="arguments")
    schema = jsonschema.Draft202012Validator(offered(tool))
    try:
        decode(arguments)
    except (PlanSpecError, ToolArgumentsError) as exc:
        event("refused")
        if schema.is_valid(arguments):
            assert all(p.code in PLAN_RULES or documented(p, arguments) for p in exc.problems), exc
    else:
        event("accepted")
        assert schema.is_valid(arguments), f"{tool.name}: the decoder takes it, the schema refuses it"
