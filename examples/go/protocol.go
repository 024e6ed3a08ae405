// The protocol of `planfold serve`, as the OpenRPC document
// (specs/rpc.openrpc.json) defines it: the params of each method the host
// calls and the results it reads. Each type names what it stands for in a
// `planfold:` line (a method's params, or a schema of components/schemas),
// and a test of the repository compares every field with the document: its
// JSON name is one the schema has, every required name is here, and its Go
// type carries the schema's type (a pointer where null is allowed, omitempty
// where a param may be left out). Results may leave out fields the host does
// not read; encoding/json skips them.

package main

import "encoding/json"

// ---------------------------------------------------------------------------
// Params, one struct per method.

// SessionOpenParams opens (or creates) a session with the host's tools.
// planfold:params session/open
type SessionOpenParams struct {
	Session      string     `json:"session"`
	Tools        []ToolDecl `json:"tools,omitempty"`
	MaxToolCalls *int       `json:"max_tool_calls,omitempty"`
}

// SessionReadParams names the session whose state is read.
// planfold:params session/read
type SessionReadParams struct {
	Session string `json:"session"`
}

// UserCommandParams is one line the user typed (`/plan`, or a message).
// planfold:params user/command
type UserCommandParams struct {
	Session     string   `json:"session"`
	Text        string   `json:"text"`
	Attachments []string `json:"attachments,omitempty"`
}

// TurnStartParams opens a turn with the user's message.
// planfold:params turn/start
type TurnStartParams struct {
	Session   string `json:"session"`
	Text      string `json:"text"`
	GoalRound *bool  `json:"goal_round,omitempty"`
}

// StepBeginParams begins step Step of the open turn.
// planfold:params step/begin
type StepBeginParams struct {
	Session string  `json:"session"`
	Step    int     `json:"step"`
	Verdict *string `json:"verdict,omitempty"`
}

// StepContextParams asks what the next model request holds.
// planfold:params step/context
type StepContextParams struct {
	Session      string `json:"session"`
	Conversation *bool  `json:"conversation,omitempty"`
}

// StepReplyParams records the model's reply: its text and its tool calls.
// planfold:params step/reply
type StepReplyParams struct {
	Session      string          `json:"session"`
	Text         *string         `json:"text,omitempty"`
	ToolCalls    []ModelToolCall `json:"tool_calls,omitempty"`
	FinishReason *string         `json:"finish_reason,omitempty"`
	Refusal      *string         `json:"refusal,omitempty"`
}

// ToolDispatchParams asks what to do with one call of the reply.
// planfold:params tool/dispatch
type ToolDispatchParams struct {
	Session         string `json:"session"`
	CallID          string `json:"call_id"`
	ReviewAvailable *bool  `json:"review_available,omitempty"`
}

// ToolResultParams is what the host's executor answered for one call.
// planfold:params tool/result
type ToolResultParams struct {
	Session string `json:"session"`
	CallID  string `json:"call_id"`
	OK      bool   `json:"ok"`
	Output  string `json:"output"`
}

// ReviewAnswerParams is the human's answer to a plan review.
// planfold:params review/answer
type ReviewAnswerParams struct {
	Session string   `json:"session"`
	CallID  string   `json:"call_id"`
	Answer  string   `json:"answer"`
	Options []string `json:"options,omitempty"`
	Text    *string  `json:"text,omitempty"`
}

// TurnEndParams closes the open turn.
// planfold:params turn/end
type TurnEndParams struct {
	Session string `json:"session"`
}

// ---------------------------------------------------------------------------
// Values the params carry.

// ToolDecl is one tool of the host, with its declared effect.
// planfold:schema ToolDecl
type ToolDecl struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Parameters   json.RawMessage `json:"parameters"`
	Effect       string          `json:"effect"`
	Origin       *string         `json:"origin,omitempty"`
	ReadOnlyHint *bool           `json:"read_only_hint,omitempty"`
	Category     *string         `json:"category,omitempty"`
	TargetArgs   []string        `json:"target_args,omitempty"`
}

// ModelToolCall is one call as the model sent it: its arguments decoded
// (Arguments), or the raw text (ArgumentsJSON); one of the two is set.
// planfold:schema ModelToolCall
type ModelToolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	ArgumentsJSON *string         `json:"arguments_json,omitempty"`
}

// ---------------------------------------------------------------------------
// Results.

// SessionInfo is where a session stands.
// planfold:schema SessionInfo
type SessionInfo struct {
	Session  string         `json:"session"`
	LastSeq  int            `json:"last_seq"`
	Mode     string         `json:"mode"`
	Phase    string         `json:"phase"`
	Turn     int            `json:"turn"`
	TurnOpen bool           `json:"turn_open"`
	Plan     *PlanArtifact  `json:"plan"`
	Goal     *GoalSnapshot  `json:"goal"`
	Pending  *PendingChoice `json:"pending"`
	Armed    bool           `json:"armed"`
	Stage    string         `json:"stage"`
	Awaiting *string        `json:"awaiting"`
	NextStep *int           `json:"next_step,omitempty"`
}

// PlanArtifact is the session's current plan (its spec and summary are
// kept as the JSON they arrive as: this host only shows them).
// planfold:schema PlanArtifact
type PlanArtifact struct {
	ID        string          `json:"id"`
	Revision  int             `json:"revision"`
	Status    string          `json:"status"`
	Spec      json.RawMessage `json:"spec"`
	Summary   json.RawMessage `json:"summary"`
	CreatedAt int64           `json:"created_at"`
	UpdatedAt int64           `json:"updated_at"`
}

// GoalSnapshot is the session's goal.
// planfold:schema GoalSnapshot
type GoalSnapshot struct {
	ID            string          `json:"id"`
	Objective     string          `json:"objective"`
	Phase         string          `json:"phase"`
	BlockedReason json.RawMessage `json:"blocked_reason"`
	MaxRounds     int             `json:"max_rounds"`
	Revision      int             `json:"revision"`
	RoundsStarted int             `json:"rounds_started"`
	CreatedAt     int64           `json:"created_at"`
	UpdatedAt     int64           `json:"updated_at"`
}

// PendingChoice is a plan-mode choice queued until the next step.
// planfold:schema PendingChoice
type PendingChoice struct {
	Target bool  `json:"target"`
	Silent *bool `json:"silent,omitempty"`
}

// CommandResult is what one typed line became.
// planfold:schema CommandResult
type CommandResult struct {
	Kind      string        `json:"kind"`
	Outcome   *string       `json:"outcome,omitempty"`
	Message   *string       `json:"message,omitempty"`
	Rewriting *bool         `json:"rewriting,omitempty"`
	Verb      *string       `json:"verb,omitempty"`
	Goal      *GoalSnapshot `json:"goal,omitempty"`
	Seq       *int          `json:"seq,omitempty"`
	LastSeq   *int          `json:"last_seq,omitempty"`
}

// TurnStarted says which turn opened.
// planfold:schema TurnStarted
type TurnStarted struct {
	Turn     int  `json:"turn"`
	FirstSeq int  `json:"first_seq"`
	LastSeq  int  `json:"last_seq"`
	Round    *int `json:"round"`
}

// StepBegun says whether the step may ask the model.
// planfold:schema StepBegun
type StepBegun struct {
	Accepted  bool   `json:"accepted"`
	Flushed   bool   `json:"flushed"`
	Started   bool   `json:"started"`
	HeaderSeq *int   `json:"header_seq"`
	Phase     string `json:"phase"`
	LastSeq   int    `json:"last_seq"`
}

// RequestContext is what the next model request holds.
// planfold:schema RequestContext
type RequestContext struct {
	Phase    string            `json:"phase"`
	Mode     string            `json:"mode"`
	View     ViewChoice        `json:"view"`
	Sections []PromptSection   `json:"sections"`
	Tools    []ToolInfo        `json:"tools"`
	Messages []json.RawMessage `json:"messages,omitempty"`
}

// ViewChoice is the plan view of a request and the rule that chose it.
// planfold:schema ViewChoice
type ViewChoice struct {
	View   string `json:"view"`
	Reason string `json:"reason"`
}

// PromptSection is one section of the system prompt.
// planfold:schema PromptSection
type PromptSection struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// ToolInfo is one tool offered to the model.
// planfold:schema ToolInfo
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ReplyRecorded is the gate's verdicts on a reply, and whether the turn goes on.
// planfold:schema ReplyRecorded
type ReplyRecorded struct {
	Verdicts []CallVerdict `json:"verdicts"`
	Next     string        `json:"next"`
	EndedBy  *string       `json:"ended_by"`
	Error    *string       `json:"error"`
	LastSeq  int           `json:"last_seq"`
}

// CallVerdict is the gate's verdict on one call.
// planfold:schema CallVerdict
type CallVerdict struct {
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Phase   string          `json:"phase"`
	Allowed bool            `json:"allowed"`
	Route   *string         `json:"route"`
	Refusal json.RawMessage `json:"refusal"`
}

// ToolAction is what the host does with one call: execute it, ask for a
// review, or nothing (planfold answered it, or refused it).
// planfold:schema ToolAction
type ToolAction struct {
	CallID    string      `json:"call_id"`
	Tool      string      `json:"tool"`
	Action    string      `json:"action"`
	OK        *bool       `json:"ok"`
	Output    *string     `json:"output"`
	Review    *ReviewInfo `json:"review"`
	Remaining int         `json:"remaining"`
	LastSeq   int         `json:"last_seq"`
}

// ReviewInfo is the plan a reviewer sees, and the options offered.
// planfold:schema ReviewInfo
type ReviewInfo struct {
	Plan    string   `json:"plan"`
	Options []string `json:"options"`
}

// ToolAnswered is the recorded answer to one call.
// planfold:schema ToolAnswered
type ToolAnswered struct {
	CallID    string  `json:"call_id"`
	OK        bool    `json:"ok"`
	Output    string  `json:"output"`
	LastSeq   int     `json:"last_seq"`
	Remaining int     `json:"remaining"`
	Review    *string `json:"review,omitempty"`
}

// TurnEnded says which turn closed.
// planfold:schema TurnEnded
type TurnEnded struct {
	Turn    int `json:"turn"`
	LastSeq int `json:"last_seq"`
}
