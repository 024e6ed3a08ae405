"""The fuzz targets: one per public entry point that takes outside input.

Each target turns bytes into what its entry point reads (a JSON document, a
log of JSON lines, a line of text), calls the entry point under ``unchanged``
and ``clock.timed()``, and checks what the entry point promises beyond "only
typed errors": a strict fold reports the same first bad event however it is
asked, a decoded plan is a valid plan that round-trips, a read-only shell
verdict only ever covers printable ASCII.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, cast

from hypothesis import strategies as st

from planfold.kernel.errors import ReplayError
from planfold.kernel.goal.command import GoalCommand, parse_goal_command
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.log import Event
from planfold.kernel.plan.review import PlanCommand, load_plan_policy, parse_plan_command
from planfold.kernel.plan.spec import spec_hash, validate_plan_spec
from planfold.kernel.plan.spec_json import decode_exit_plan_args, spec_from_json, spec_to_json
from planfold.kernel.plan.status import fold_plans
from planfold.kernel.plan.views import adopt_summary, render_plan_content
from planfold.kernel.session import SessionState, apply_session_event, fold_more, fold_rows, fold_session
from planfold.kernel.tools.shell import MAX_COMMAND_LENGTH, classify_command, classify_shell_call
from planfold.kernel.tools.spec import Classification, ToolSpec
from tests.fuzz.cli_targets import CLI_TARGETS
from tests.fuzz.database_targets import DATABASE_TARGETS
from tests.fuzz.harness import (
    Clock,
    FuzzFinding,
    NotJSON,
    Target,
    decode_json,
    decode_text,
    expect,
    stable_repr,
    unchanged,
)
from tests.fuzz.inputs import (
    byte_mutations,
    hostile_json,
    json_inputs,
    render,
    rendered,
    structural_mutations,
    text_inputs,
)
from tests.fuzz.scope_targets import SCOPE_TARGETS
from tests.fuzz.seeds import EXIT_PLAN_ARGS, LOG_KEYS, PLAN_SPEC_KEYS, SEED_LOGS
from tests.fuzz.serve_targets import SERVE_TARGETS
from tests.fuzz.store_targets import STORE_TARGETS
from tests.fuzz.tool_targets import TOOL_TARGETS
from tests.fuzz.views import derived_views

__all__ = ["KERNEL_TARGETS", "TARGETS", "by_name"]


# --------------------------------------------------------------------------
# replay: fold_session (and fold_goal) on a decoded log


def decode_log(data: bytes) -> list[Event]:
    """One event per non-blank line, each a JSON object; fields are taken as
    they come (missing ones are ``None``), wrong types and all."""
    events: list[Event] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        record = decode_json(line)
        if not isinstance(record, dict):
            raise NotJSON("a log line must be a JSON object")
        fields: Any = record  # wrong types go through on purpose
        events.append(Event(fields.get("seq"), fields.get("kind"), fields.get("at"), fields.get("payload")))
    return events


def _run_replay(data: bytes, clock: Clock) -> str:
    events = decode_log(data)
    with unchanged(events):
        with clock.timed():
            try:
                state: SessionState | None = fold_session(events)
                failure: ReplayError | None = None
            except ReplayError as exc:
                state, failure = None, exc
        # The same first bad event, event by event and resumed from a prefix.
        folded, stopped_at = SessionState(), len(events)
        for index, event in enumerate(events):
            try:
                folded = apply_session_event(folded, event)
            except ReplayError as exc:
                expect(
                    failure is not None and (exc.position, exc.rule) == (failure.position, failure.rule),
                    f"event-by-event fold failed at {exc.position} [{exc.rule}], whole fold said {failure}",
                )
                stopped_at = index
                break
        expect((failure is None) == (stopped_at == len(events)), "whole and event-by-event folds disagree")
        if failure is not None:
            try:
                fold_more(fold_session(events[:stopped_at]), events[stopped_at:])
            except ReplayError as again:
                expect(
                    (again.position, again.rule) == (failure.position, failure.rule),
                    f"resumed fold failed at {again.position} [{again.rule}], not {failure.position}",
                )
            else:
                raise FuzzFinding("a resumed fold accepted a log the whole fold rejected")
        with clock.timed():
            try:
                goal: object = fold_goal(events)
            except ReplayError as exc:
                expect(state is None, "fold_goal rejected a log that fold_session accepted")
                goal = exc
            else:
                expect(state is None or state.goal == goal, "fold_goal and fold_session disagree on the goal")
        # The row fold is what stores run: it must agree, errors included.
        whole = _outcome(lambda: fold_session(events))
        rows = [(e.seq, e.kind, e.at, e.payload) for e in events]
        expect(_outcome(lambda: fold_rows(SessionState(), rows)) == whole, "fold_rows and fold_session disagree")
        plans = _outcome(lambda: fold_plans(events))
    # What the kernel derives from the state the fold reached, and the
    # events it would write next (see tests.fuzz.views).
    with clock.timed():
        views = derived_views(events[:stopped_at], folded)
    return f"{stable_repr(failure or state)}\ngoal fold: {stable_repr(goal)}\nplan fold: {plans}\n{views}"


def _outcome(fold: Callable[[], object]) -> str:
    try:
        return stable_repr(fold())
    except ReplayError as exc:
        return stable_repr(exc)


@st.composite
def _mutated_logs(draw: Any) -> bytes:
    """A seed log with events or fields mutated, one event per line."""
    value = draw(structural_mutations(SEED_LOGS, LOG_KEYS))
    if isinstance(value, list):
        return b"\n".join(render(draw, item) for item in value)
    return render(draw, value)


def _long_log(turns: int) -> bytes:
    """A valid log of ``2 * turns`` events, to catch folds that slow down
    with the length of the log."""
    lines = []
    for turn in range(1, turns + 1):
        seq = 2 * turn - 1
        lines.append(b'{"seq":%d,"kind":"turn/start","at":%d,"payload":{"turn":%d}}' % (seq, seq, turn))
        lines.append(b'{"seq":%d,"kind":"turn/end","at":%d,"payload":{"turn":%d}}' % (seq + 1, seq + 1, turn))
    return b"\n".join(lines)


def _replay_inputs() -> st.SearchStrategy[bytes]:
    whole = [b"\n".join(json.dumps(record).encode("utf-8") for record in log) for log in SEED_LOGS]
    mutated = _mutated_logs()
    return st.one_of(
        mutated,
        mutated,
        mutated,
        byte_mutations(whole),
        st.binary(max_size=256),
        rendered(hostile_json(LOG_KEYS)),
        st.builds(
            lambda log, line: log + b"\n" + line, st.sampled_from(whole), json_inputs(SEED_LOGS[0][:1], LOG_KEYS)
        ),
        st.sampled_from([1_000, 5_000]).map(_long_log),
    )


# --------------------------------------------------------------------------
# the model-output decoder: exit_plan_mode(plan_spec, summary_candidate)


def _run_exit_plan(data: bytes, clock: Clock) -> str:
    args = decode_json(data)
    with unchanged(args), clock.timed():
        decoded = decode_exit_plan_args(args)
        adoption = adopt_summary(decoded.summary_candidate, decoded.spec)
        content = render_plan_content(decoded.spec)
        digest = spec_hash(decoded.spec)
    expect(validate_plan_spec(decoded.spec) == (), "the decoder returned a spec that does not validate")
    expect(spec_from_json(spec_to_json(decoded.spec)) == decoded.spec, "the decoded spec does not round-trip")
    expect(content.startswith("# "), "the rendered plan does not start with a '# ' heading")
    expect(adoption.summary is not None, "no summary was adopted or built")
    return stable_repr((decoded, adoption, content, digest))


# --------------------------------------------------------------------------
# /plan, /goal and the plan:policy config


def _run_plan_command(data: bytes, clock: Clock) -> str:
    # Attachments follow the text, separated by ASCII record separators.
    text, *attachments = decode_text(data).split("\x1e")
    with clock.timed():
        command = parse_plan_command(text, attachments)
    expect(command is None or isinstance(command, PlanCommand), "parse_plan_command returned a non-command")
    if command is not None:
        expect(text.strip().startswith("/plan"), f"{text!r} parsed as /plan")
        expect(command.target or not command.attachments, "/plan off kept attachments")
    return stable_repr(command)


def _run_goal_command(data: bytes, clock: Clock) -> str:
    text = decode_text(data)
    with clock.timed():
        command = parse_goal_command(text)
    expect(command is None or isinstance(command, GoalCommand), "parse_goal_command returned a non-command")
    if command is not None:
        expect(text.split(maxsplit=1)[0] == "/goal", f"{text!r} parsed as /goal")
        objective = command.objective
        if command.verb in ("create", "edit"):
            expect(objective is not None and objective != "" and objective == objective.strip(), "bad objective")
    return stable_repr(command)


def _run_plan_policy(data: bytes, clock: Clock) -> str:
    config = decode_json(data)
    with unchanged(config), clock.timed():
        policy = load_plan_policy(config)
    expect(isinstance(config, Mapping) and policy.section == config.get("section"), "policy is not the config")
    return stable_repr(policy)


# --------------------------------------------------------------------------
# the shell classifier


SHELL_TOOL = ToolSpec("bash", "Run a command", {"type": "object"}, "write", "shell")


def _expect_sound(line: object, verdict: Classification) -> str:
    expect(isinstance(verdict, Classification), "the classifier returned a non-classification")
    if verdict.read_only:
        expect(isinstance(line, str) and 0 < len(line) <= MAX_COMMAND_LENGTH, "admitted an empty or long line")
        text = cast(str, line)
        expect(all(" " <= ch <= "~" or ch == "\t" for ch in text), f"admitted a non-printable line {text!r}")
        expect(text.strip() != "", "admitted a blank line")
    return stable_repr(verdict)


def _run_shell_command(data: bytes, clock: Clock) -> str:
    line = decode_text(data)
    with clock.timed():
        verdict = classify_command(line)
    return _expect_sound(line, verdict)


def _run_shell_call(data: bytes, clock: Clock) -> str:
    arguments = decode_json(data)
    with unchanged(arguments), clock.timed():
        verdict = classify_shell_call(SHELL_TOOL, cast(Any, arguments))
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return _expect_sound(command, verdict)


# --------------------------------------------------------------------------

_SHELL_LINES = (
    "ls -la src",
    "git status",
    "rg -n 'TODO' kernel | head -20",
    "cat README.md | wc -l",
    "find . -name '*.py' -type f",
    "grep -rn \"x\" tests",
    "echo hi > out.txt",
    "ls; rm -rf /",
    "sed -i s/a/b/ f",
    "$(whoami)",
)

KERNEL_TARGETS: tuple[Target, ...] = (
    Target("replay", "fold_session", _run_replay, _replay_inputs()),
    Target(
        "exit_plan_args",
        "decode_exit_plan_args",
        _run_exit_plan,
        json_inputs(EXIT_PLAN_ARGS, PLAN_SPEC_KEYS, wrap=lambda body: b'{"plan_spec":{"goal":' + body + b"}}"),
    ),
    Target(
        "plan_command",
        "parse_plan_command",
        _run_plan_command,
        text_inputs(
            ["/plan", "/plan off", "/plan fix the importer", "/plan off\x1eshot.png", "  /plan\tOFF ", "/planner"],
            ["/plan", "off", "OFF", "\x1e", "\t", "\n", "\u3000", "\x00"],
        ),
    ),
    Target(
        "goal_command",
        "parse_goal_command",
        _run_goal_command,
        text_inputs(
            ["/goal", "/goal ship it", "/goal new pause the rollout", "/goal edit x", "/goal pause", "/goals"],
            ["/goal", "new", "edit", "pause", "resume", "complete", "clear", "CLEAR", "\u00a0", "\u2028", "\x00"],
        ),
    ),
    Target(
        "plan_policy",
        "load_plan_policy",
        _run_plan_policy,
        json_inputs(
            [{"section": "Plan before you write."}], ["section"], wrap=lambda body: b'{"section":' + body + b"}"
        ),
    ),
    Target("shell_command", "classify_command", _run_shell_command, text_inputs(_SHELL_LINES, ["|", "'", '"'])),
    Target(
        "shell_call",
        "classify_shell_call",
        _run_shell_call,
        json_inputs(
            [{"command": line} for line in _SHELL_LINES] + [{"command": "ls", "description": "list", "timeout": 5}],
            ["command", "description", "timeout"],
            wrap=lambda body: b'{"command":' + body + b"}",
        ),
    ),
)


#: Every fuzz target, kernel entry points first.
TARGETS: tuple[Target, ...] = (
    KERNEL_TARGETS + TOOL_TARGETS + SCOPE_TARGETS + STORE_TARGETS + SERVE_TARGETS + CLI_TARGETS + DATABASE_TARGETS
)


def by_name(name: str) -> Target:
    """The target called ``name``; ``KeyError`` when there is none."""
    for target in TARGETS:
        if target.name == name:
            return target
    raise KeyError(name)
