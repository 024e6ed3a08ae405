/* eslint-disable */
/**
 * The types of planfold serve 2.1.0, generated from its OpenRPC document
 * by examples/generate-types.mjs with json-schema-to-typescript: do not edit by
 * hand; `make diagrams` regenerates this file.
 *
 * openrpc-sha256: 45c80e3b08ea7e2b096c389e57192642138aa52113bcbaff0d6e6f51253d0a18
 */

/**
 * One tool call as the model sent it: ``arguments`` decoded, or
 * ``arguments_json`` the raw text (broken JSON is recorded and refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ModelToolCall".
 */
export type ModelToolCall =
  | {
      /**
       * the id the model gave the call
       */
      id: string;
      name: string;
      /**
       * the call's arguments, decoded (any JSON value; absent or null: none)
       */
      arguments?:
        | {
            [k: string]: unknown;
          }
        | unknown[]
        | string
        | number
        | boolean
        | null;
    }
  | {
      /**
       * the id the model gave the call
       */
      id: string;
      name: string;
      /**
       * the call's arguments as the model sent them (JSON text; broken JSON is refused)
       */
      arguments_json: string;
    };
/**
 * -32700 ParseError: Parse error: the line is not JSON the server can read (or is too deep or too large)
 * -32600 InvalidRequest: Invalid Request: not a JSON-RPC 2.0 request object
 * -32601 MethodNotFound: Method not found: no such method
 * -32602 InvalidParams: Invalid params: the params do not match the method's params type (data.detail says where)
 * -32603 InternalError: Internal error: a bug in the server; nothing was written and it keeps serving
 * -32000 Refused: Refused: planfold refused the request (data.code says why); nothing was written
 * -32001 BadLog: Bad log: the events would break a rule of the log (data.rule, data.position); nothing was written
 * -32002 Conflict: Conflict: another writer appended first; the session was reloaded, nothing was written
 * -32003 OutOfOrder: Out of order: the call does not fit where the session's host is (data.stage); nothing was written
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "RpcErrorCode".
 */
export type RpcErrorCode = -32700 | -32600 | -32601 | -32602 | -32603 | -32000 | -32001 | -32002 | -32003;

/**
 * Every method of planfold serve 2.1.0: its params and its result.
 */
export interface PlanfoldMethods {
  "session/open": {
    params: SessionOpenParams;
    result: SessionInfo;
  };
  "session/read": {
    params: SessionReadParams;
    result: SessionInfo;
  };
  "session/close": {
    params: SessionCloseParams;
    result: SessionClosed;
  };
  "session/fork": {
    params: SessionForkParams;
    result: Forked;
  };
  "user/choose": {
    params: UserChooseParams;
    result: ChoiceResult;
  };
  "user/command": {
    params: UserCommandParams;
    result: CommandResult;
  };
  "turn/start": {
    params: TurnStartParams;
    result: TurnStarted;
  };
  "step/begin": {
    params: StepBeginParams;
    result: StepBegun;
  };
  "step/context": {
    params: StepContextParams;
    result: RequestContext;
  };
  "step/reply": {
    params: StepReplyParams;
    result: ReplyRecorded;
  };
  "tool/dispatch": {
    params: ToolDispatchParams;
    result: ToolAction;
  };
  "tool/result": {
    params: ToolResultParams;
    result: ToolAnswered;
  };
  "review/answer": {
    params: ReviewAnswerParams;
    result: ToolAnswered;
  };
  "turn/end": {
    params: TurnEndParams;
    result: TurnEnded;
  };
  "goal/create": {
    params: GoalCreateParams;
    result: GoalResult;
  };
  "goal/edit": {
    params: GoalEditParams;
    result: GoalResult;
  };
  "goal/pause": {
    params: GoalPauseParams;
    result: GoalResult;
  };
  "goal/resume": {
    params: GoalResumeParams;
    result: GoalResult;
  };
  "goal/complete": {
    params: GoalCompleteParams;
    result: GoalResult;
  };
  "goal/block": {
    params: GoalBlockParams;
    result: GoalResult;
  };
  "goal/clear": {
    params: GoalClearParams;
    result: GoalResult;
  };
  "goal/should_continue": {
    params: GoalShouldContinueParams;
    result: ContinueResult;
  };
  "events/append": {
    params: EventsAppendParams;
    result: Appended;
  };
  "rpc.discover": {
    params: RpcDiscoverParams;
    result: {
      [k: string]: unknown;
    };
  };
}
/**
 * The params of session/open: Open (or create) a session of the store in this process. Process
 * state starts fresh: no pending choice, the goal disarmed. A reply's calls
 * past ``max_tool_calls`` are refused in one notice.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionOpenParams".
 */
export interface SessionOpenParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  tools?: ToolDecl[];
  gate?: GateConfig;
  prompt?: PromptConfigParams;
  /**
   * calls of one reply taken
   */
  max_tool_calls?: number;
}
/**
 * One tool of the host: what the model is shown and what it declares.
 * The gate reads only the declarations (``effect``, ``origin``,
 * ``read_only_hint``, ``category``); the plan's scope reads
 * ``target_args`` (a write that declares none fails closed under a scope
 * with paths); the runtime-owned tools are always added by the server and
 * may not be declared.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolDecl".
 */
export interface ToolDecl {
  name: string;
  description: string;
  /**
   * the JSON Schema of the tool's arguments
   */
  parameters: {
    [k: string]: unknown;
  };
  effect: "read" | "unknown" | "write";
  origin?: "builtin" | "mcp" | "shell";
  read_only_hint?: boolean | null;
  category?: ("memory-write" | "plan-state" | "task-state") | null;
  /**
   * the arguments that name the paths a call acts on (the plan's scope)
   */
  target_args?: string[];
}
/**
 * How the gate runs for this session (``kernel.tools.gate.GatePolicy``).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GateConfig".
 */
export interface GateConfig {
  catalog?: "filtered" | "stable";
  enforcement?: "advisory" | "hard";
  rules?: GateRule[];
  default_action?: "allow" | "deny";
}
/**
 * A deployment's allow or deny rule: a case-sensitive glob over tool
 * names, in ``phases`` (every phase when omitted).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GateRule".
 */
export interface GateRule {
  action: "allow" | "deny";
  pattern: string;
  phases?: ("build_bootstrap" | "build_execute" | "plan" | "verify")[] | null;
}
/**
 * The deployment's prompt texts; ``plan_policy`` null renders no
 * ``plan:policy`` section.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PromptConfigParams".
 */
export interface PromptConfigParams {
  base?: string;
  plan_overlay?: string;
  build_overlay?: string;
  plan_policy?: string | null;
}
/**
 * Where a session stands: the fold of its log (mode, phase, turn, plan,
 * goal, last seq) and this process's state (the pending plan-mode choice,
 * whether the goal is armed, the host's stage and the call awaited).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionInfo".
 */
export interface SessionInfo {
  session: string;
  last_seq: number;
  mode: "build" | "plan";
  phase: "build_bootstrap" | "build_execute" | "plan" | "verify";
  turn: number;
  turn_open: boolean;
  plan: PlanArtifact | null;
  goal: GoalSnapshot | null;
  pending: PendingChoice | null;
  armed: boolean;
  stage: "calls" | "execute" | "idle" | "review" | "step" | "turn";
  awaiting: string | null;
  next_step?: number;
}
/**
 * The current plan. ``updated_at`` moves only when content changes
 * (draft, rewrite, todo progress), never on a status change.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PlanArtifact".
 */
export interface PlanArtifact {
  id: string;
  revision: number;
  status: "approved" | "completed" | "draft" | "executing" | "implicit" | "superseded";
  spec: PlanSpec;
  summary: SummaryView;
  created_at: number;
  updated_at: number;
}
/**
 * The plan itself, the only truth every view derives from.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PlanSpec".
 */
export interface PlanSpec {
  goal: string;
  steps: string[];
  constraints: string[];
  verify: string[];
  todos: Todo[];
  open_questions?: OpenQuestion[];
  scope?: PlanScope | null;
}
/**
 * One execution action with a stable ``id`` that summaries refer to.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "Todo".
 */
export interface Todo {
  id: string;
  text: string;
  status?: "done" | "dropped" | "in_progress" | "pending";
}
/**
 * A question the plan leaves open; ``blocking`` when it blocks writes.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "OpenQuestion".
 */
export interface OpenQuestion {
  text: string;
  blocking?: boolean;
}
/**
 * Where execution may act: path patterns and effect names.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PlanScope".
 */
export interface PlanScope {
  paths?: string[];
  effects?: string[];
}
/**
 * The default plan context of ordinary requests, derived from a spec.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SummaryView".
 */
export interface SummaryView {
  goal: string;
  key_steps: string[];
  constraints: string[];
  verify: string[];
  active_todo_ids: string[];
}
/**
 * The current goal as the log determines it.
 *
 * ``blocked_reason`` is set exactly when ``phase`` is ``blocked``.
 * ``rounds_started`` counts the goal-attributed rounds admitted so far;
 * ``created_at`` is the time of the ``create``, ``updated_at`` the time of
 * the latest ``goal/change`` (rounds do not touch it).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalSnapshot".
 */
export interface GoalSnapshot {
  id: string;
  objective: string;
  phase: "active" | "blocked" | "complete" | "paused";
  blocked_reason: BlockedReason | null;
  max_rounds: number;
  revision: number;
  rounds_started: number;
  created_at: number;
  updated_at: number;
}
/**
 * Why a goal is blocked: a kebab-case ``code`` for routing and a trimmed,
 * non-empty ``message``. ``goal.ops.block`` checks and trims it.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "BlockedReason".
 */
export interface BlockedReason {
  code: string;
  message: string;
}
/**
 * A choice waiting for the next accepted in-turn pre-step.
 *
 * ``silent`` marks the exit queued by an approved ``exit_plan_mode`` review:
 * the tool result reports it to the model, so no notice is added.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PendingChoice".
 */
export interface PendingChoice {
  target: boolean;
  silent?: boolean;
}
/**
 * The params of session/read: Names an open session.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionReadParams".
 */
export interface SessionReadParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
}
/**
 * The params of session/close: Names an open session.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionCloseParams".
 */
export interface SessionCloseParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
}
/**
 * The session's process state is gone; its log stays in the store.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionClosed".
 */
export interface SessionClosed {
  session: string;
  last_seq: number;
}
/**
 * The params of session/fork: Fork the session: a new session whose log is the first ``at`` events
 * of this one, or the events before turn ``turn`` started (give one).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "SessionForkParams".
 */
export interface SessionForkParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  /**
   * the session's id in the store (no NUL)
   */
  new_session: string;
  at?: number | null;
  turn?: number | null;
}
/**
 * The new session's provenance: its source, the seq it was forked at and
 * the SHA-256 of that prefix as an export writes it.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "Forked".
 */
export interface Forked {
  session: string;
  source: string;
  seq: number;
  prefix_sha256: string;
}
/**
 * The params of user/choose: The user chooses plan mode on or off.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "UserChooseParams".
 */
export interface UserChooseParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  active: boolean;
}
/**
 * ``committed`` (appended now, between turns), ``queued`` (appended at
 * the next accepted pre-step), ``cancelled`` or ``noop``.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ChoiceResult".
 */
export interface ChoiceResult {
  outcome: "cancelled" | "committed" | "noop" | "queued";
  pending: PendingChoice | null;
  last_seq: number;
}
/**
 * The params of user/command: One line a human typed, with the names of any files attached to it
 * (``/plan off`` takes none).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "UserCommandParams".
 */
export interface UserCommandParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  text: string;
  attachments?: string[];
}
/**
 * What the line was. ``plan``: ``/plan``, ``/plan <message>`` or
 * ``/plan off`` was applied (``outcome``); when ``message`` is set the host
 * starts a turn with it, passing ``rewriting`` in the turn's view.
 * ``goal``: a ``/goal`` command was applied (``verb``; ``goal`` is the goal
 * after it, ``seq`` the event appended). ``message``: not a command; the
 * host starts a turn with ``message`` (the text, attachments listed after
 * it).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "CommandResult".
 */
export interface CommandResult {
  kind: "goal" | "message" | "plan";
  outcome?: ("cancelled" | "committed" | "noop" | "queued") | null;
  message?: string | null;
  rewriting?: boolean;
  verb?: ("clear" | "complete" | "create" | "edit" | "pause" | "resume" | "show") | null;
  goal?: GoalSnapshot | null;
  seq?: number | null;
  last_seq?: number;
}
/**
 * The params of turn/start: Open a turn with its first user message. ``goal_round`` attributes it
 * to the current goal (a round of its budget), which ``goal/should_continue``
 * must allow right now; ``view`` is what the host knows about the plan view
 * this turn needs.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "TurnStartParams".
 */
export interface TurnStartParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  text: string;
  goal_round?: boolean;
  view?: ViewRequest;
}
/**
 * What the runtime knows about the next request that the log does not:
 * the user asked for the full plan, the summary is judged not enough, the
 * task at hand is rewriting the plan, or this is the first request since
 * the session was resumed.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ViewRequest".
 */
export interface ViewRequest {
  user_asked_full?: boolean;
  summary_insufficient?: boolean;
  rewriting?: boolean;
  first_since_resume?: boolean;
}
/**
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "TurnStarted".
 */
export interface TurnStarted {
  turn: number;
  first_seq: number;
  last_seq: number;
  round: number | null;
}
/**
 * The params of step/begin: The pre-step of a proposed step: ``step`` counts 1, 2, 3 … per turn
 * (a same-step retry after a failed model call repeats it); ``verdict`` is
 * what the host's own step listeners said.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "StepBeginParams".
 */
export interface StepBeginParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  step: number;
  verdict?: "aborted" | "accepted" | "rejected";
}
/**
 * ``accepted`` false: nothing was appended and the host ends the turn.
 * Otherwise ``flushed`` says whether a pending choice was appended,
 * ``started`` whether an approved plan started, and ``header_seq`` is the
 * request header's seq.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "StepBegun".
 */
export interface StepBegun {
  accepted: boolean;
  flushed: boolean;
  started: boolean;
  header_seq: number | null;
  phase: "build_bootstrap" | "build_execute" | "plan" | "verify";
  last_seq: number;
}
/**
 * The params of step/context: ``conversation`` true also returns the conversation rebuilt from the
 * log (OpenAI chat-completions message objects).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "StepContextParams".
 */
export interface StepContextParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  conversation?: boolean;
}
/**
 * What the step's request is derived from: the prompt sections in
 * order (send each as one system message), the plan view chosen and why,
 * and exactly the tools to offer (a call of any other is refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "RequestContext".
 */
export interface RequestContext {
  phase: "build_bootstrap" | "build_execute" | "plan" | "verify";
  mode: "build" | "plan";
  view: ViewChoice;
  sections: PromptSection[];
  tools: ToolInfo[];
  messages?:
    | {
        [k: string]: unknown;
      }[]
    | null;
}
/**
 * The plan view for one request and the kebab-case rule that chose it.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ViewChoice".
 */
export interface ViewChoice {
  view: "full" | "none" | "summary";
  reason: string;
}
/**
 * One named section: ``base``, ``overlay:plan`` or ``overlay:build``,
 * ``plan:policy``, ``plan:view``.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "PromptSection".
 */
export interface PromptSection {
  name: string;
  text: string;
}
/**
 * A tool to offer the model (its arguments' JSON Schema in ``parameters``).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolInfo".
 */
export interface ToolInfo {
  name: string;
  description: string;
  parameters: {
    [k: string]: unknown;
  };
}
/**
 * The params of step/reply: The model's reply to the step's request, with the server's
 * ``finish_reason`` (``stop``, ``tool_calls``, ``length``,
 * ``content_filter`` …) and the model's ``refusal`` text, if any: a reply
 * cut off, filtered or refused is never taken as the model's final word.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "StepReplyParams".
 */
export interface StepReplyParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  text?: string | null;
  /**
   * @maxItems 10000
   */
  tool_calls?: ModelToolCall[];
  finish_reason?: string | null;
  refusal?: string | null;
}
/**
 * The calls taken, each with the gate's verdict: answer every one with
 * ``tool/dispatch``, in order. ``next`` is what follows once they are
 * answered: ``continue`` (begin the next step: the reply made calls, was
 * cut off, or ended the plan's execution so verification starts) or
 * ``end`` (end the turn; when the reply was filtered or refused,
 * ``ended_by`` and ``error`` say so).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ReplyRecorded".
 */
export interface ReplyRecorded {
  verdicts: CallVerdict[];
  next: "continue" | "end";
  ended_by: string | null;
  error: string | null;
  last_seq: number;
}
/**
 * The gate's verdict on one call: ``allowed`` with its ``route``
 * (``executor``: the host runs it; ``runtime``: planfold handles it), or
 * refused with ``refusal`` (code, reason, hint). In advisory mode an
 * allowed call may carry the refusal hard mode would have made.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "CallVerdict".
 */
export interface CallVerdict {
  call_id: string;
  tool: string;
  phase: "build_bootstrap" | "build_execute" | "plan" | "verify";
  allowed: boolean;
  route: ("executor" | "runtime") | null;
  refusal: Refused | null;
}
/**
 * The call may not run (or the tool may not be offered). ``hint`` tells
 * the model what to do instead; ``code`` is stable kebab-case.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "Refused".
 */
export interface Refused {
  code: string;
  reason: string;
  tool: string;
  phase: "build_bootstrap" | "build_execute" | "plan" | "verify";
  hint: string;
}
/**
 * The params of tool/dispatch: Ask what to do with the next call of the reply. ``review_available``
 * says whether a human can review a plan right now (``exit_plan_mode``
 * fails closed without one).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolDispatchParams".
 */
export interface ToolDispatchParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  /**
   * the id the model gave the call
   */
  call_id: string;
  review_available?: boolean;
}
/**
 * What the host does with the call. ``refused``: send ``output`` to the
 * model as the call's tool message. ``done``: the runtime handled it (its
 * result is recorded): send ``output``. ``execute``: run it and report with
 * ``tool/result``. ``review``: show ``review`` to a human and report with
 * ``review/answer``. ``remaining`` counts the calls still to dispatch.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolAction".
 */
export interface ToolAction {
  call_id: string;
  tool: string;
  action: "done" | "execute" | "refused" | "review";
  ok: boolean | null;
  output: string | null;
  review: ReviewInfo | null;
  remaining: number;
  last_seq: number;
}
/**
 * The plan to show a human (markdown) and the answers on offer.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ReviewInfo".
 */
export interface ReviewInfo {
  plan: string;
  options: string[];
}
/**
 * The params of tool/result: What the host's executor returned for an ``execute`` call.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolResultParams".
 */
export interface ToolResultParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  /**
   * the id the model gave the call
   */
  call_id: string;
  ok: boolean;
  output: string;
}
/**
 * The call's recorded result (send ``output`` to the model); ``last_seq``
 * is the seq of the last event the answer appended. ``review`` is the
 * review's outcome for ``review/answer``.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ToolAnswered".
 */
export interface ToolAnswered {
  call_id: string;
  ok: boolean;
  output: string;
  last_seq: number;
  remaining: number;
  review?: ("approved" | "channel-lost" | "dismissed" | "keep-planning") | null;
}
/**
 * The params of review/answer: The human's answer to a plan review: ``selected`` options (exactly
 * ``["Approve"]`` approves), with any ``text`` they typed (notes on an
 * approval, feedback otherwise); a ``custom`` text (keep planning, with it
 * as feedback); ``dismissed`` (they want to talk instead) or
 * ``channel-lost``.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ReviewAnswerParams".
 */
export interface ReviewAnswerParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  /**
   * the id the model gave the call
   */
  call_id: string;
  answer: "channel-lost" | "custom" | "dismissed" | "selected";
  options?: string[];
  text?: string | null;
}
/**
 * The params of turn/end: Names an open session.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "TurnEndParams".
 */
export interface TurnEndParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
}
/**
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "TurnEnded".
 */
export interface TurnEnded {
  turn: number;
  last_seq: number;
}
/**
 * The params of goal/create: A new goal (its id defaults to ``goal-<seq>``).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalCreateParams".
 */
export interface GoalCreateParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  objective: string;
  max_rounds?: number | null;
  goal_id?: string | null;
}
/**
 * The accepted change: its seq, the new ref (the cleared one for
 * ``clear``), the goal after it (null after ``clear``) and whether this
 * process is armed to run rounds.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalResult".
 */
export interface GoalResult {
  operation: "block" | "clear" | "complete" | "create" | "edit" | "pause" | "resume";
  seq: number;
  ref: GoalRef;
  goal: GoalSnapshot | null;
  armed: boolean;
}
/**
 * The compare-and-set handle of one revision of one goal (in a clear
 * tombstone: the goal it clears, at the tombstone's own revision).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalRef".
 */
export interface GoalRef {
  id: string;
  revision: number;
}
/**
 * The params of goal/edit: Change the objective or the round cap of the goal at ``ref``.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalEditParams".
 */
export interface GoalEditParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
  objective?: string | null;
  max_rounds?: number | null;
}
/**
 * The params of goal/pause: An operation on the goal at ``ref`` (compare-and-set: a stale ref is
 * refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalPauseParams".
 */
export interface GoalPauseParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
}
/**
 * The params of goal/resume: An operation on the goal at ``ref`` (compare-and-set: a stale ref is
 * refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalResumeParams".
 */
export interface GoalResumeParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
}
/**
 * The params of goal/complete: An operation on the goal at ``ref`` (compare-and-set: a stale ref is
 * refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalCompleteParams".
 */
export interface GoalCompleteParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
}
/**
 * The params of goal/block: Block the goal at ``ref`` for ``reason`` (kebab-case code, message).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalBlockParams".
 */
export interface GoalBlockParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
  reason: BlockedReason;
}
/**
 * The params of goal/clear: An operation on the goal at ``ref`` (compare-and-set: a stale ref is
 * refused).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalClearParams".
 */
export interface GoalClearParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  ref: GoalRef;
}
/**
 * The params of goal/should_continue: Names an open session.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "GoalShouldContinueParams".
 */
export interface GoalShouldContinueParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
}
/**
 * Whether this process may start the goal's next round now
 * (``next_round``), or why not. When the budget is spent the server has
 * blocked the goal (``blocked_at`` is that event's seq).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "ContinueResult".
 */
export interface ContinueResult {
  proceed: boolean;
  reason:
    | (
        | "budget-spent"
        | "disarmed"
        | "goal-blocked"
        | "goal-complete"
        | "goal-paused"
        | "no-goal"
        | "plan-mode"
        | "turn-open"
      )
    | null;
  next_round: number | null;
  blocked_at: number | null;
  goal: GoalSnapshot | null;
  armed: boolean;
}
/**
 * The params of events/append: Facts to record, in order, in one compare-and-set append.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "EventsAppendParams".
 */
export interface EventsAppendParams {
  /**
   * the session's id in the store (no NUL)
   */
  session: string;
  /**
   * @minItems 1
   * @maxItems 1000
   */
  events: [RecordedEvent, ...RecordedEvent[]];
}
/**
 * An event to record: the server assigns seq and time.
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "RecordedEvent".
 */
export interface RecordedEvent {
  kind: "assistant/message" | "request/header" | "user/message";
  payload: {
    [k: string]: unknown;
  };
}
/**
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "Appended".
 */
export interface Appended {
  first_seq: number;
  last_seq: number;
}
/**
 * The params of rpc.discover: The OpenRPC document of the server (this document).
 *
 * This interface was referenced by `PlanfoldMethods`'s JSON-Schema
 * via the `definition` "RpcDiscoverParams".
 */
export interface RpcDiscoverParams {}
