"""The plan machines: plan mode, the plan artifact and its statuses, review, context.

Modules, in the order data flows through them:

- ``mode``: plan mode as a fold of ``plan/mode`` events, the choice table and
  the turn-boundary flush (seed 004);
- ``spec``, ``spec_json``, ``views``: ``PlanSpec``, the one truth of a plan,
  its JSON form and the ``SummaryView`` derived from it;
- ``artifact``, ``payload``, ``checks``, ``status``: the plan artifact, its
  ``plan/artifact`` events, the named checks and the status table and fold;
- ``events``: builders of every ``plan/artifact`` event;
- ``review``: ``exit_plan_mode`` review, ``/plan`` and the plan policy;
- ``context``, ``capsule``: what plan view and prompt a request carries;
- ``scope``, ``tools``: the plan's scope and the runtime-owned plan tools;
- ``decisions``: what a runtime asks, one call per decision (a runtime-owned
  tool call, a review answer, a plan-mode choice, around requests).
"""

from . import (
    artifact,
    capsule,
    checks,
    context,
    decisions,
    events,
    mode,
    payload,
    review,
    scope,
    spec,
    spec_json,
    status,
    tools,
    views,
)
from .artifact import *
from .capsule import *
from .checks import *
from .context import *
from .decisions import *
from .events import *
from .mode import *
from .payload import *
from .review import *
from .scope import *
from .spec import *
from .spec_json import *
from .status import *
from .tools import *
from .views import *

__all__ = [
    *mode.__all__,
    *spec.__all__,
    *spec_json.__all__,
    *views.__all__,
    *artifact.__all__,
    *payload.__all__,
    *checks.__all__,
    *status.__all__,
    *events.__all__,
    *review.__all__,
    *context.__all__,
    *capsule.__all__,
    *scope.__all__,
    *tools.__all__,
    *decisions.__all__,
]
