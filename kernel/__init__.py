"""planfold's kernel: pure, immutable reducers over an append-only session log.

Standard library only; no clock, randomness, I/O or global state. Time and ids
are inputs. Everything public is re-exported here.

``import kernel`` is cheap: the public names below are resolved on first use
(PEP 562), so a program pays only for the machines it touches. Type checkers
see the same names through the ``TYPE_CHECKING`` imports; a test keeps the two
lists equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.errors import (
        KEBAB_CASE as KEBAB_CASE,
    )
    from kernel.errors import (
        ConflictError as ConflictError,
    )
    from kernel.errors import (
        KernelError as KernelError,
    )
    from kernel.errors import (
        PayloadError as PayloadError,
    )
    from kernel.errors import (
        ReplayError as ReplayError,
    )
    from kernel.errors import (
        is_kebab_case as is_kebab_case,
    )
    from kernel.gate import (
        TOOL_CLASSES as TOOL_CLASSES,
    )
    from kernel.gate import (
        VERDICT_TABLE as VERDICT_TABLE,
    )
    from kernel.gate import (
        Allowed as Allowed,
    )
    from kernel.gate import (
        CatalogMode as CatalogMode,
    )
    from kernel.gate import (
        DeploymentRule as DeploymentRule,
    )
    from kernel.gate import (
        Enforcement as Enforcement,
    )
    from kernel.gate import (
        GateError as GateError,
    )
    from kernel.gate import (
        GatePolicy as GatePolicy,
    )
    from kernel.gate import (
        PhaseRule as PhaseRule,
    )
    from kernel.gate import (
        Refused as Refused,
    )
    from kernel.gate import (
        ToolClass as ToolClass,
    )
    from kernel.gate import (
        Verdict as Verdict,
    )
    from kernel.gate import (
        check_call as check_call,
    )
    from kernel.gate import (
        decide as decide_tool,  # noqa: F401 (re-exported under another name)
    )
    from kernel.gate import (
        list_available_specs as list_available_specs,
    )
    from kernel.gate import (
        tool_class as tool_class,
    )
    from kernel.goal import (
        ARMED as ARMED,
    )
    from kernel.goal import (
        DEFAULT_MAX_ROUNDS as DEFAULT_MAX_ROUNDS,
    )
    from kernel.goal import (
        DISARMED as DISARMED,
    )
    from kernel.goal import (
        GOAL_CHANGE_VERSION as GOAL_CHANGE_VERSION,
    )
    from kernel.goal import (
        TRANSITION_TABLE as TRANSITION_TABLE,
    )
    from kernel.goal import (
        TRANSITIONS as TRANSITIONS,
    )
    from kernel.goal import (
        Activation as Activation,
    )
    from kernel.goal import (
        BlockedReason as BlockedReason,
    )
    from kernel.goal import (
        GoalOperation as GoalOperation,
    )
    from kernel.goal import (
        GoalPhase as GoalPhase,
    )
    from kernel.goal import (
        GoalRef as GoalRef,
    )
    from kernel.goal import (
        GoalSnapshot as GoalSnapshot,
    )
    from kernel.goal import (
        Transition as Transition,
    )
    from kernel.goal import (
        activation_after as activation_after,
    )
    from kernel.goal import (
        read_goal_change as read_goal_change,
    )
    from kernel.goal import (
        session_started as session_started,
    )
    from kernel.goal_command import (
        GoalCommand as GoalCommand,
    )
    from kernel.goal_command import (
        GoalCommandError as GoalCommandError,
    )
    from kernel.goal_command import (
        parse_goal_command as parse_goal_command,
    )
    from kernel.goal_continuation import (
        ContinueDecision as ContinueDecision,
    )
    from kernel.goal_continuation import (
        ContinueFacts as ContinueFacts,
    )
    from kernel.goal_continuation import (
        budget_block as budget_block,
    )
    from kernel.goal_continuation import (
        round_message as round_message,
    )
    from kernel.goal_continuation import (
        should_continue as should_continue,
    )
    from kernel.goal_fold import (
        GOAL_REPLAY_RULES as GOAL_REPLAY_RULES,
    )
    from kernel.goal_fold import (
        GoalFailure as GoalFailure,
    )
    from kernel.goal_fold import (
        GoalFold as GoalFold,
    )
    from kernel.goal_fold import (
        GoalState as GoalState,
    )
    from kernel.goal_fold import (
        advance_goal_fold as advance_goal_fold,
    )
    from kernel.goal_fold import (
        apply_goal_event as apply_goal_event,
    )
    from kernel.goal_fold import (
        fold_goal as fold_goal,
    )
    from kernel.goal_ops import (
        BUDGET_BLOCK_CODE as BUDGET_BLOCK_CODE,
    )
    from kernel.goal_ops import (
        GOAL_ERROR_CODES as GOAL_ERROR_CODES,
    )
    from kernel.goal_ops import (
        GoalAuthorityError as GoalAuthorityError,
    )
    from kernel.goal_ops import (
        GoalError as GoalError,
    )
    from kernel.goal_ops import (
        block as block_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        clear as clear_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        complete as complete_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        create as create_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        edit as edit_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        pause as pause_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.goal_ops import (
        resume as resume_goal,  # noqa: F401 (re-exported under another name)
    )
    from kernel.graph import (
        Edge as Edge,
    )
    from kernel.graph import (
        Graph as Graph,
    )
    from kernel.graph import (
        GraphDiff as GraphDiff,
    )
    from kernel.graph import (
        GraphError as GraphError,
    )
    from kernel.graph import (
        all_graphs as all_graphs,
    )
    from kernel.graph import (
        compare as compare,
    )
    from kernel.log import (
        HUMAN as HUMAN,
    )
    from kernel.log import (
        KNOWN_KINDS as KNOWN_KINDS,
    )
    from kernel.log import (
        Event as Event,
    )
    from kernel.log import (
        MessageSource as MessageSource,
    )
    from kernel.log import (
        RequestHeader as RequestHeader,
    )
    from kernel.log import (
        TurnState as TurnState,
    )
    from kernel.log import (
        check_envelope as check_envelope,
    )
    from kernel.log import (
        fold_turns as fold_turns,
    )
    from kernel.log import (
        last_seq as last_seq,
    )
    from kernel.log import (
        next_event as next_event,
    )
    from kernel.phase import (
        READ_ONLY_PHASES as READ_ONLY_PHASES,
    )
    from kernel.phase import (
        RUNTIME_PHASES as RUNTIME_PHASES,
    )
    from kernel.phase import (
        RuntimePhase as RuntimePhase,
    )
    from kernel.plan_capsule import (
        StateCapsule as StateCapsule,
    )
    from kernel.plan_capsule import (
        build_capsule as build_capsule,
    )
    from kernel.plan_capsule import (
        capsule_from_json as capsule_from_json,
    )
    from kernel.plan_capsule import (
        capsule_matches as capsule_matches,
    )
    from kernel.plan_capsule import (
        capsule_to_json as capsule_to_json,
    )
    from kernel.plan_capsule import (
        check_capsule as check_capsule,
    )
    from kernel.plan_capsule import (
        render_capsule as render_capsule,
    )
    from kernel.plan_context import (
        DEFAULT_BUILD_OVERLAY as DEFAULT_BUILD_OVERLAY,
    )
    from kernel.plan_context import (
        DEFAULT_PLAN_OVERLAY as DEFAULT_PLAN_OVERLAY,
    )
    from kernel.plan_context import (
        VIEW_RULES as VIEW_RULES,
    )
    from kernel.plan_context import (
        PlanView as PlanView,
    )
    from kernel.plan_context import (
        PromptParts as PromptParts,
    )
    from kernel.plan_context import (
        PromptSection as PromptSection,
    )
    from kernel.plan_context import (
        ViewChoice as ViewChoice,
    )
    from kernel.plan_context import (
        ViewRequest as ViewRequest,
    )
    from kernel.plan_context import (
        ViewRule as ViewRule,
    )
    from kernel.plan_context import (
        choose_plan_view as choose_plan_view,
    )
    from kernel.plan_context import (
        compose_prompt as compose_prompt,
    )
    from kernel.plan_context import (
        plan_to_start as plan_to_start,
    )
    from kernel.plan_context import (
        render_plan_view as render_plan_view,
    )
    from kernel.plan_context import (
        render_summary as render_summary,
    )
    from kernel.plan_context import (
        runtime_phase as runtime_phase,
    )
    from kernel.plan_events import (
        PlanError as PlanError,
    )
    from kernel.plan_events import (
        approve_event as approve_event,
    )
    from kernel.plan_events import (
        bootstrap_event as bootstrap_event,
    )
    from kernel.plan_events import (
        classify_change as classify_change,
    )
    from kernel.plan_events import (
        complete_event as complete_event,
    )
    from kernel.plan_events import (
        draft_event as draft_event,
    )
    from kernel.plan_events import (
        exit_plan_events as exit_plan_events,
    )
    from kernel.plan_events import (
        realign_event as realign_event,
    )
    from kernel.plan_events import (
        reject_event as reject_event,
    )
    from kernel.plan_events import (
        rewrite_event as rewrite_event,
    )
    from kernel.plan_events import (
        start_event as start_event,
    )
    from kernel.plan_events import (
        supersede_event as supersede_event,
    )
    from kernel.plan_events import (
        todo_event as todo_event,
    )
    from kernel.plan_events import (
        update_plan_events as update_plan_events,
    )
    from kernel.plan_events import (
        verify_event as verify_event,
    )
    from kernel.plan_events import (
        verify_fail_event as verify_fail_event,
    )
    from kernel.plan_json import (
        ExitPlanArgs as ExitPlanArgs,
    )
    from kernel.plan_json import (
        decode_exit_plan_args as decode_exit_plan_args,
    )
    from kernel.plan_json import (
        spec_from_json as spec_from_json,
    )
    from kernel.plan_json import (
        spec_to_json as spec_to_json,
    )
    from kernel.plan_json import (
        summary_from_json as summary_from_json,
    )
    from kernel.plan_json import (
        summary_to_json as summary_to_json,
    )
    from kernel.plan_mode import (
        CHOICE_TABLE as CHOICE_TABLE,
    )
    from kernel.plan_mode import (
        ChoiceDecision as ChoiceDecision,
    )
    from kernel.plan_mode import (
        Flush as Flush,
    )
    from kernel.plan_mode import (
        PendingChoice as PendingChoice,
    )
    from kernel.plan_mode import (
        PlanModeView as PlanModeView,
    )
    from kernel.plan_mode import (
        choice_events as choice_events,
    )
    from kernel.plan_mode import (
        decide_choice as decide_choice,
    )
    from kernel.plan_mode import (
        derive_request_header as derive_request_header,
    )
    from kernel.plan_mode import (
        flush_pre_step as flush_pre_step,
    )
    from kernel.plan_mode import (
        fold_plan_mode as fold_plan_mode,
    )
    from kernel.plan_mode import (
        get_plan_mode as get_plan_mode,
    )
    from kernel.plan_mode import (
        policy_section_active as policy_section_active,
    )
    from kernel.plan_payload import (
        PLAN_ACTIONS as PLAN_ACTIONS,
    )
    from kernel.plan_payload import (
        PlanAction as PlanAction,
    )
    from kernel.plan_payload import (
        plan_action_payload as plan_action_payload,
    )
    from kernel.plan_payload import (
        read_plan_action as read_plan_action,
    )
    from kernel.plan_review import (
        APPROVE as APPROVE,
    )
    from kernel.plan_review import (
        KEEP_PLANNING as KEEP_PLANNING,
    )
    from kernel.plan_review import (
        ChannelLost as ChannelLost,
    )
    from kernel.plan_review import (
        Custom as Custom,
    )
    from kernel.plan_review import (
        Dismissed as Dismissed,
    )
    from kernel.plan_review import (
        ExitPlanError as ExitPlanError,
    )
    from kernel.plan_review import (
        PlanCommand as PlanCommand,
    )
    from kernel.plan_review import (
        PlanCommandError as PlanCommandError,
    )
    from kernel.plan_review import (
        PlanPolicy as PlanPolicy,
    )
    from kernel.plan_review import (
        PlanPolicyConfigError as PlanPolicyConfigError,
    )
    from kernel.plan_review import (
        ReviewOutcome as ReviewOutcome,
    )
    from kernel.plan_review import (
        ReviewRequest as ReviewRequest,
    )
    from kernel.plan_review import (
        Selected as Selected,
    )
    from kernel.plan_review import (
        decide_review as decide_review,
    )
    from kernel.plan_review import (
        load_plan_policy as load_plan_policy,
    )
    from kernel.plan_review import (
        parse_plan_command as parse_plan_command,
    )
    from kernel.plan_review import (
        start_review as start_review,
    )
    from kernel.plan_scope import (
        Effect as ScopeEffect,  # noqa: F401 (re-exported under another name)
    )
    from kernel.plan_scope import (
        ScopeVerdict as ScopeVerdict,
    )
    from kernel.plan_scope import (
        ScopeViolation as ScopeViolation,
    )
    from kernel.plan_scope import (
        check_scope as check_scope,
    )
    from kernel.plan_scope import (
        path_in_scope as path_in_scope,
    )
    from kernel.plan_scope import (
        scope_realign_event as scope_realign_event,
    )
    from kernel.plan_spec import (
        ACTIVE_TODO_STATUSES as ACTIVE_TODO_STATUSES,
    )
    from kernel.plan_spec import (
        TODO_STATUSES as TODO_STATUSES,
    )
    from kernel.plan_spec import (
        OpenQuestion as OpenQuestion,
    )
    from kernel.plan_spec import (
        PlanScope as PlanScope,
    )
    from kernel.plan_spec import (
        PlanSpec as PlanSpec,
    )
    from kernel.plan_spec import (
        PlanSpecError as PlanSpecError,
    )
    from kernel.plan_spec import (
        SpecProblem as SpecProblem,
    )
    from kernel.plan_spec import (
        SummaryView as SummaryView,
    )
    from kernel.plan_spec import (
        Todo as Todo,
    )
    from kernel.plan_spec import (
        TodoStatus as TodoStatus,
    )
    from kernel.plan_spec import (
        active_todo_ids as active_todo_ids,
    )
    from kernel.plan_spec import (
        require_valid_spec as require_valid_spec,
    )
    from kernel.plan_spec import (
        spec_hash as spec_hash,
    )
    from kernel.plan_spec import (
        validate_plan_spec as validate_plan_spec,
    )
    from kernel.plan_spec import (
        validate_summary_candidate as validate_summary_candidate,
    )
    from kernel.plan_status import (
        LIVE_STATUSES as LIVE_STATUSES,
    )
    from kernel.plan_status import (
        PLAN_STATUSES as PLAN_STATUSES,
    )
    from kernel.plan_status import (
        STATUS_TABLE as STATUS_TABLE,
    )
    from kernel.plan_status import (
        TRANSITIONS as PLAN_TRANSITIONS,  # noqa: F401 (re-exported under another name)
    )
    from kernel.plan_status import (
        PlanArtifact as PlanArtifact,
    )
    from kernel.plan_status import (
        PlanRef as PlanRef,
    )
    from kernel.plan_status import (
        PlanState as PlanState,
    )
    from kernel.plan_status import (
        PlanStatus as PlanStatus,
    )
    from kernel.plan_status import (
        StatusInfo as PlanStatusInfo,  # noqa: F401 (re-exported under another name)
    )
    from kernel.plan_status import (
        Transition as PlanTransition,  # noqa: F401 (re-exported under another name)
    )
    from kernel.plan_status import (
        apply_plan_event as apply_plan_event,
    )
    from kernel.plan_status import (
        fold_plans as fold_plans,
    )
    from kernel.plan_tools import (
        TodoUpdate as TodoUpdate,
    )
    from kernel.plan_tools import (
        ToolArgumentsError as ToolArgumentsError,
    )
    from kernel.plan_tools import (
        VerificationReport as VerificationReport,
    )
    from kernel.plan_tools import (
        decode_todo_update as decode_todo_update,
    )
    from kernel.plan_tools import (
        decode_verification as decode_verification,
    )
    from kernel.plan_tools import (
        execution_end_event as execution_end_event,
    )
    from kernel.plan_tools import (
        scope_decision as scope_decision,
    )
    from kernel.plan_tools import (
        verification_event as verification_event,
    )
    from kernel.plan_views import (
        SummaryAdoption as SummaryAdoption,
    )
    from kernel.plan_views import (
        adopt_summary as adopt_summary,
    )
    from kernel.plan_views import (
        build_summary_view as build_summary_view,
    )
    from kernel.plan_views import (
        refresh_summary as refresh_summary,
    )
    from kernel.plan_views import (
        render_plan_content as render_plan_content,
    )
    from kernel.plan_views import (
        summary_derives_from as summary_derives_from,
    )
    from kernel.session import (
        AgentMode as AgentMode,
    )
    from kernel.session import (
        SessionState as SessionState,
    )
    from kernel.session import (
        apply_session_event as apply_session_event,
    )
    from kernel.session import (
        fold_more as fold_more,
    )
    from kernel.session import (
        fold_session as fold_session,
    )
    from kernel.shell import (
        SHELL_CLASSIFIER as SHELL_CLASSIFIER,
    )
    from kernel.shell import (
        classify_command as classify_command,
    )
    from kernel.shell import (
        classify_shell_call as classify_shell_call,
    )
    from kernel.tool_events import (
        ToolNotice as ToolNotice,
    )
    from kernel.tool_events import (
        ToolResult as ToolResult,
    )
    from kernel.tool_events import (
        read_tool_call as read_tool_call,
    )
    from kernel.tool_events import (
        read_tool_notice as read_tool_notice,
    )
    from kernel.tool_events import (
        read_tool_result as read_tool_result,
    )
    from kernel.tool_events import (
        tool_call_payload as tool_call_payload,
    )
    from kernel.tool_events import (
        tool_notice_payload as tool_notice_payload,
    )
    from kernel.tool_events import (
        tool_result_payload as tool_result_payload,
    )
    from kernel.tool_events import (
        verdict_events as verdict_events,
    )
    from kernel.tools import (
        RUNTIME_OWNED_TOOLS as RUNTIME_OWNED_TOOLS,
    )
    from kernel.tools import (
        CallClassifier as CallClassifier,
    )
    from kernel.tools import (
        Classification as Classification,
    )
    from kernel.tools import (
        ToolCall as ToolCall,
    )
    from kernel.tools import (
        ToolRegistry as ToolRegistry,
    )
    from kernel.tools import (
        ToolSpec as ToolSpec,
    )
    from kernel.tools import (
        ToolSpecError as ToolSpecError,
    )

#: module -> the public names it provides (``(public, attribute)`` where they differ).
_EXPORTS: dict[str, tuple[str | tuple[str, str], ...]] = {
    "kernel.errors": (
        "ConflictError",
        "KEBAB_CASE",
        "KernelError",
        "PayloadError",
        "ReplayError",
        "is_kebab_case",
    ),
    "kernel.gate": (
        "Allowed",
        "CatalogMode",
        "DeploymentRule",
        "Enforcement",
        "GateError",
        "GatePolicy",
        "PhaseRule",
        "Refused",
        "TOOL_CLASSES",
        "ToolClass",
        "VERDICT_TABLE",
        "Verdict",
        "check_call",
        ("decide_tool", "decide"),
        "list_available_specs",
        "tool_class",
    ),
    "kernel.goal": (
        "ARMED",
        "Activation",
        "BlockedReason",
        "DEFAULT_MAX_ROUNDS",
        "DISARMED",
        "GOAL_CHANGE_VERSION",
        "GoalOperation",
        "GoalPhase",
        "GoalRef",
        "GoalSnapshot",
        "TRANSITIONS",
        "TRANSITION_TABLE",
        "Transition",
        "activation_after",
        "read_goal_change",
        "session_started",
    ),
    "kernel.goal_command": (
        "GoalCommand",
        "GoalCommandError",
        "parse_goal_command",
    ),
    "kernel.goal_continuation": (
        "ContinueDecision",
        "ContinueFacts",
        "budget_block",
        "round_message",
        "should_continue",
    ),
    "kernel.goal_fold": (
        "GOAL_REPLAY_RULES",
        "GoalFailure",
        "GoalFold",
        "GoalState",
        "advance_goal_fold",
        "apply_goal_event",
        "fold_goal",
    ),
    "kernel.goal_ops": (
        "BUDGET_BLOCK_CODE",
        "GOAL_ERROR_CODES",
        "GoalAuthorityError",
        "GoalError",
        ("block_goal", "block"),
        ("clear_goal", "clear"),
        ("complete_goal", "complete"),
        ("create_goal", "create"),
        ("edit_goal", "edit"),
        ("pause_goal", "pause"),
        ("resume_goal", "resume"),
    ),
    "kernel.graph": (
        "Edge",
        "Graph",
        "GraphDiff",
        "GraphError",
        "all_graphs",
        "compare",
    ),
    "kernel.log": (
        "Event",
        "HUMAN",
        "KNOWN_KINDS",
        "MessageSource",
        "RequestHeader",
        "TurnState",
        "check_envelope",
        "fold_turns",
        "last_seq",
        "next_event",
    ),
    "kernel.phase": (
        "READ_ONLY_PHASES",
        "RUNTIME_PHASES",
        "RuntimePhase",
    ),
    "kernel.plan_capsule": (
        "StateCapsule",
        "build_capsule",
        "capsule_from_json",
        "capsule_matches",
        "capsule_to_json",
        "check_capsule",
        "render_capsule",
    ),
    "kernel.plan_context": (
        "DEFAULT_BUILD_OVERLAY",
        "DEFAULT_PLAN_OVERLAY",
        "PlanView",
        "PromptParts",
        "PromptSection",
        "VIEW_RULES",
        "ViewChoice",
        "ViewRequest",
        "ViewRule",
        "choose_plan_view",
        "compose_prompt",
        "plan_to_start",
        "render_plan_view",
        "render_summary",
        "runtime_phase",
    ),
    "kernel.plan_events": (
        "PlanError",
        "approve_event",
        "bootstrap_event",
        "classify_change",
        "complete_event",
        "draft_event",
        "exit_plan_events",
        "realign_event",
        "reject_event",
        "rewrite_event",
        "start_event",
        "supersede_event",
        "todo_event",
        "update_plan_events",
        "verify_event",
        "verify_fail_event",
    ),
    "kernel.plan_json": (
        "ExitPlanArgs",
        "decode_exit_plan_args",
        "spec_from_json",
        "spec_to_json",
        "summary_from_json",
        "summary_to_json",
    ),
    "kernel.plan_mode": (
        "CHOICE_TABLE",
        "ChoiceDecision",
        "Flush",
        "PendingChoice",
        "PlanModeView",
        "choice_events",
        "decide_choice",
        "derive_request_header",
        "flush_pre_step",
        "fold_plan_mode",
        "get_plan_mode",
        "policy_section_active",
    ),
    "kernel.plan_payload": (
        "PLAN_ACTIONS",
        "PlanAction",
        "plan_action_payload",
        "read_plan_action",
    ),
    "kernel.plan_review": (
        "APPROVE",
        "ChannelLost",
        "Custom",
        "Dismissed",
        "ExitPlanError",
        "KEEP_PLANNING",
        "PlanCommand",
        "PlanCommandError",
        "PlanPolicy",
        "PlanPolicyConfigError",
        "ReviewOutcome",
        "ReviewRequest",
        "Selected",
        "decide_review",
        "load_plan_policy",
        "parse_plan_command",
        "start_review",
    ),
    "kernel.plan_scope": (
        ("ScopeEffect", "Effect"),
        "ScopeVerdict",
        "ScopeViolation",
        "check_scope",
        "path_in_scope",
        "scope_realign_event",
    ),
    "kernel.plan_spec": (
        "ACTIVE_TODO_STATUSES",
        "OpenQuestion",
        "PlanScope",
        "PlanSpec",
        "PlanSpecError",
        "SpecProblem",
        "SummaryView",
        "TODO_STATUSES",
        "Todo",
        "TodoStatus",
        "active_todo_ids",
        "require_valid_spec",
        "spec_hash",
        "validate_plan_spec",
        "validate_summary_candidate",
    ),
    "kernel.plan_status": (
        "LIVE_STATUSES",
        "PLAN_STATUSES",
        ("PLAN_TRANSITIONS", "TRANSITIONS"),
        "PlanArtifact",
        "PlanRef",
        "PlanState",
        "PlanStatus",
        ("PlanStatusInfo", "StatusInfo"),
        ("PlanTransition", "Transition"),
        "STATUS_TABLE",
        "apply_plan_event",
        "fold_plans",
    ),
    "kernel.plan_tools": (
        "TodoUpdate",
        "ToolArgumentsError",
        "VerificationReport",
        "decode_todo_update",
        "decode_verification",
        "execution_end_event",
        "scope_decision",
        "verification_event",
    ),
    "kernel.plan_views": (
        "SummaryAdoption",
        "adopt_summary",
        "build_summary_view",
        "refresh_summary",
        "render_plan_content",
        "summary_derives_from",
    ),
    "kernel.session": (
        "AgentMode",
        "SessionState",
        "apply_session_event",
        "fold_more",
        "fold_session",
    ),
    "kernel.shell": (
        "SHELL_CLASSIFIER",
        "classify_command",
        "classify_shell_call",
    ),
    "kernel.tool_events": (
        "ToolNotice",
        "ToolResult",
        "read_tool_call",
        "read_tool_notice",
        "read_tool_result",
        "tool_call_payload",
        "tool_notice_payload",
        "tool_result_payload",
        "verdict_events",
    ),
    "kernel.tools": (
        "CallClassifier",
        "Classification",
        "RUNTIME_OWNED_TOOLS",
        "ToolCall",
        "ToolRegistry",
        "ToolSpec",
        "ToolSpecError",
    ),
}

_WHERE: dict[str, tuple[str, str]] = {}
for _module, _names in _EXPORTS.items():
    for _entry in _names:
        _public, _attr = (_entry, _entry) if isinstance(_entry, str) else _entry
        _WHERE[_public] = (_module, _attr)

__all__ = sorted(_WHERE)  # noqa: PLE0605 (a list, built from the table)


if not TYPE_CHECKING:  # type checkers see the explicit imports above instead

    def __getattr__(name: str) -> Any:
        """Resolve a public name on first use; raise ``AttributeError`` otherwise."""
        try:
            module, attr = _WHERE[name]
        except KeyError:
            raise AttributeError(f"module 'kernel' has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
