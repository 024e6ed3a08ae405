"""One line per event (``adapters.cli.describe``): every kind is read by its
kind's reader and said in a few words, and a payload that does not read is
shown as its JSON instead of failing the display."""

from __future__ import annotations

import pytest

from planfold.adapters.cli.describe import describe
from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log
from planfold.kernel.goal.values import GoalRef, clear_payload
from planfold.kernel.log import Event, GoalSource, PluginSource, user_message
from planfold.kernel.payload import JSONObject
from planfold.kernel.tools.events import tool_call_payload, tool_notice_payload, tool_result_payload
from planfold.kernel.tools.gate import Refused
from planfold.kernel.tools.spec import ToolCall

#: Lines of the contract's whole session, by seq: one of each kind it holds.
WHOLE_SESSION = {
    1: "turn 1",
    2: "turn 1 step 1, build mode",
    3: '[human] "hello"',
    4: '"olleh"',
    6: "plan mode on",
    7: "draft: p1 rev 1, summary from the runtime",
    8: "approve: p1 rev 1, hash c950d63decb8",
    10: "turn 2 step 1, plan mode",
    14: "plan mode off",
    16: "todo: p1 rev 1, t1 -> done",
    17: "create: g1 rev 1 active, rounds 0/8",
    23: '[plugin lint] "note"',
    24: "pause: g1 rev 2 paused, rounds 0/8",
}


def test_every_event_of_a_whole_session_is_said_in_its_kind_s_words() -> None:
    lines = {event.seq: describe(event) for event in build_log(FULL_SCRIPT).events}
    assert {seq: lines[seq] for seq in WHOLE_SESSION} == WHOLE_SESSION


def _event(kind: str, payload: JSONObject) -> Event:
    return Event(1, kind, 1, payload)


def test_a_goal_round_a_clear_and_the_tool_events_are_said_in_their_kinds_words() -> None:
    goal_round = user_message("Continue the goal.", GoalSource("goal", "g1", 2, 3)).payload
    assert describe(_event("user/message", goal_round)) == '[goal g1 round 3] "Continue the goal."'
    notice = user_message("Plan mode is on.", PluginSource("plugin", "plan-mode")).payload
    assert describe(_event("user/message", notice)) == '[plugin plan-mode] "Plan mode is on."'
    cleared = clear_payload(GoalRef("g1", 4), 9)
    assert describe(_event("goal/change", cleared)) == "clear: g1 (tombstone rev 4)"
    call = tool_call_payload(ToolCall.of("c1", "read_file", {"path": "README.md", "limit": 2}))
    assert describe(_event("tool/call", call)) == 'read_file {"limit": 2, "path": "README.md"}'
    result = tool_result_payload("c1", "read_file", ok=False, output="no such file")
    assert describe(_event("tool/result", result)) == "read_file failed: no such file"
    refused = tool_notice_payload("c1", Refused("not-offered", "no writes in plan mode", "write_file", "plan", ""))
    assert describe(_event("tool/refused", refused)) == "write_file [not-offered] in plan"


@pytest.mark.parametrize(
    ("kind", "payload", "line"),
    [
        ("turn/start", {"turn": True}, '{"turn": true}'),
        ("plan/mode", {"active": 1}, '{"active": 1}'),
        ("user/message", {"text": "hi"}, '{"text": "hi"}'),
        ("goal/change", {"operation": "create", "version": 1}, '{"operation": "create", "version": 1}'),
        ("tool/result", {"call_id": "c1"}, '{"call_id": "c1"}'),
        ("no/such-kind", {"a": [1]}, '{"a": [1]}'),
    ],
    ids=["turn", "plan-mode", "message", "goal", "tool-result", "unknown-kind"],
)
def test_a_payload_its_kind_s_reader_refuses_is_shown_as_its_json(kind: str, payload: JSONObject, line: str) -> None:
    assert describe(_event(kind, payload)) == line
