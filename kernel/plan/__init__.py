"""The plan machines: plan mode, the plan artifact and its statuses, review, context.

They know only plan state: the plan fold (``PlanState``), the recorded plan
mode and the plan's status. What needs the whole session lives above the
session fold: the builders of ``plan/artifact`` drafts (``kernel.plan_events``)
and the decisions a runtime asks (``kernel.decisions``).

Modules, in the order data flows through them:

- ``mode``: plan mode as a fold of ``plan/mode`` events, the choice table and
  the notice of a recorded choice (seed 004);
- ``spec``, ``spec_json``, ``views``: ``PlanSpec``, the one truth of a plan,
  its JSON form and the ``SummaryView`` derived from it;
- ``artifact``, ``payload``, ``checks``, ``status``: the plan artifact, its
  ``plan/artifact`` payloads, the named checks and the status table and fold;
- ``events``: the refusal of a plan change and how two versions differ;
- ``review``: ``exit_plan_mode`` review, ``/plan`` and the plan policy;
- ``context``, ``capsule``: what plan view and prompt a request carries;
- ``scope``, ``tools``: the plan's scope and the runtime-owned plan tools.

The package exports the surface a runtime uses (``__all__``); every other
name stays importable from its module.
"""

from . import artifact as artifact
from . import capsule as capsule
from . import checks as checks
from . import context as context
from . import events as events
from . import mode as mode
from . import payload as payload
from . import review as review
from . import scope as scope
from . import spec as spec
from . import spec_json as spec_json
from . import status as status
from . import tools as tools
from . import views as views
from .artifact import PLAN_STATUSES, PlanArtifact, PlanFacts, PlanRef, PlanState, PlanStatus
from .capsule import StateCapsule, build_capsule, capsule_from_json, capsule_to_json, check_capsule, render_capsule
from .context import (
    PromptParts,
    PromptSection,
    ViewChoice,
    ViewRequest,
    choose_plan_view,
    compose_prompt,
    plan_to_start,
    render_plan_view,
    runtime_phase,
)
from .events import ChangeKind, PlanChangeError, classify_change
from .mode import (
    CHOICE_TABLE,
    NOTICE_SOURCE,
    ChoiceOutcome,
    PendingChoice,
    PlanModeView,
    StepVerdict,
    fold_plan_mode,
    get_plan_mode,
)
from .payload import PlanAction, plan_action_payload, read_plan_action
from .review import (
    APPROVE,
    KEEP_PLANNING,
    ChannelLost,
    Custom,
    Dismissed,
    ExitPlanError,
    PlanCommand,
    PlanCommandError,
    PlanPolicy,
    PlanPolicyConfigError,
    ReviewAnswer,
    ReviewOutcome,
    ReviewRequest,
    Selected,
    load_plan_policy,
    parse_plan_command,
)
from .scope import Effect, ScopeVerdict, ScopeViolation, check_scope
from .spec import (
    OpenQuestion,
    PlanScope,
    PlanSpec,
    PlanSpecError,
    SpecProblem,
    SummaryView,
    Todo,
    TodoStatus,
    spec_hash,
    validate_plan_spec,
    validate_summary_candidate,
)
from .spec_json import ExitPlanArgs, decode_exit_plan_args, spec_from_json, spec_to_json
from .status import fold_plans
from .tools import TodoUpdate, ToolArgumentsError, VerificationReport, execution_effects
from .views import build_summary_view, render_plan_content

__all__ = [
    "APPROVE",
    "CHOICE_TABLE",
    "KEEP_PLANNING",
    "NOTICE_SOURCE",
    "PLAN_STATUSES",
    "ChangeKind",
    "ChannelLost",
    "ChoiceOutcome",
    "Custom",
    "Dismissed",
    "Effect",
    "ExitPlanArgs",
    "ExitPlanError",
    "OpenQuestion",
    "PendingChoice",
    "PlanAction",
    "PlanArtifact",
    "PlanChangeError",
    "PlanCommand",
    "PlanCommandError",
    "PlanFacts",
    "PlanModeView",
    "PlanPolicy",
    "PlanPolicyConfigError",
    "PlanRef",
    "PlanScope",
    "PlanSpec",
    "PlanSpecError",
    "PlanState",
    "PlanStatus",
    "PromptParts",
    "PromptSection",
    "ReviewAnswer",
    "ReviewOutcome",
    "ReviewRequest",
    "ScopeVerdict",
    "ScopeViolation",
    "Selected",
    "SpecProblem",
    "StateCapsule",
    "StepVerdict",
    "SummaryView",
    "Todo",
    "TodoStatus",
    "TodoUpdate",
    "ToolArgumentsError",
    "VerificationReport",
    "ViewChoice",
    "ViewRequest",
    "build_capsule",
    "build_summary_view",
    "capsule_from_json",
    "capsule_to_json",
    "check_capsule",
    "check_scope",
    "choose_plan_view",
    "classify_change",
    "compose_prompt",
    "decode_exit_plan_args",
    "execution_effects",
    "fold_plan_mode",
    "fold_plans",
    "get_plan_mode",
    "load_plan_policy",
    "parse_plan_command",
    "plan_action_payload",
    "plan_to_start",
    "read_plan_action",
    "render_capsule",
    "render_plan_content",
    "render_plan_view",
    "runtime_phase",
    "spec_from_json",
    "spec_hash",
    "spec_to_json",
    "validate_plan_spec",
    "validate_summary_candidate",
]
