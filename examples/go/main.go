// A host runtime in Go, standard library only, that drives one plan-mode
// turn through `planfold serve`: the human asks for a plan, the model reads
// a file and proposes one, the human approves it, and the model carries it
// out. The protocol's types are in protocol.go.
//
//	go build -o planfold-host . && ./planfold-host DB [COMMAND...]
//
// DB is the SQLite file the server writes; COMMAND starts the server
// (default: `planfold serve`; `--db DB` is added).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

const (
	session  = "go-1"
	task     = "Add a farewell() function next to greet() in greet.py."
	farewell = "\n\ndef farewell(name):\n    return f\"Goodbye, {name}!\"\n"
)

var tools = []ToolDecl{
	{
		Name:        "read_file",
		Description: "Read one file of the workspace.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		Effect:      "read",
	},
	{
		Name:        "write_file",
		Description: "Create or replace one file of the workspace.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},` +
			`"content":{"type":"string"}},"required":["path","content"]}`),
		Effect:     "write",
		TargetArgs: []string{"path"},
	},
}

var workspace = map[string]string{"greet.py": "def greet(name):\n    return f\"Hello, {name}!\"\n"}

// A call of the scripted model.
type call struct {
	id        string
	name      string
	arguments map[string]interface{}
}

// What the scripted model answers in one phase.
type reply struct {
	phase string
	text  string
	calls []call
}

var planSpec = map[string]interface{}{
	"goal":        "Add farewell(name) to greet.py, mirroring greet(name).",
	"steps":       []string{"Read greet.py", "Append farewell(name) returning 'Goodbye, <name>!'"},
	"constraints": []string{"Do not change greet()"},
	"verify":      []string{"greet.py defines both greet and farewell"},
	"todos":       []map[string]string{{"id": "t1", "text": "write farewell() into greet.py"}},
}

// The scripted model: each reply is given only in the phase it expects.
var script = []reply{
	{phase: "plan", calls: []call{{"c1", "read_file", map[string]interface{}{"path": "greet.py"}}}},
	{phase: "plan", text: "Here is my plan.",
		calls: []call{{"c2", "exit_plan_mode", map[string]interface{}{"plan_spec": planSpec}}}},
	{phase: "build_execute", calls: []call{{"c3", "write_file",
		map[string]interface{}{"path": "greet.py", "content": workspace["greet.py"] + farewell}}}},
	{phase: "build_execute", calls: []call{{"c4", "update_todo", map[string]interface{}{"todo_id": "t1", "status": "done"}}}},
	{phase: "build_execute", text: "farewell() is written."},
	{phase: "verify", calls: []call{{"c5", "report_verification",
		map[string]interface{}{"passed": true, "notes": "both are defined"}}}},
	{phase: "build_bootstrap", text: "The plan is complete."},
}

func model(context RequestContext) (reply, error) {
	if len(script) == 0 {
		return reply{}, errors.New("the model's script is used up")
	}
	next := script[0]
	script = script[1:]
	if next.phase != context.Phase {
		return reply{}, fmt.Errorf("the model expected phase %s, got %s", next.phase, context.Phase)
	}
	offered := map[string]bool{}
	for _, tool := range context.Tools {
		offered[tool.Name] = true
	}
	for _, c := range next.calls {
		if !offered[c.name] {
			return reply{}, fmt.Errorf("%s was not offered in %s", c.name, context.Phase)
		}
	}
	return next, nil
}

// wire is the call as the server takes it: reads send their arguments
// decoded, the rest as the model's raw text.
func wire(c call) (ModelToolCall, error) {
	text, err := json.Marshal(c.arguments)
	if err != nil {
		return ModelToolCall{}, err
	}
	if c.name == "read_file" {
		return ModelToolCall{ID: c.id, Name: c.name, Arguments: text}, nil
	}
	raw := string(text)
	return ModelToolCall{ID: c.id, Name: c.name, ArgumentsJSON: &raw}, nil
}

// execute runs one call of the host's own tools: whether it worked, and its output.
func execute(c call) (bool, string) {
	path, _ := c.arguments["path"].(string)
	switch c.name {
	case "read_file":
		content, found := workspace[path]
		if !found {
			return false, "no file " + path
		}
		out, _ := json.Marshal(map[string]string{"path": path, "content": content})
		return true, string(out)
	case "write_file":
		content, _ := c.arguments["content"].(string)
		workspace[path] = content
		out, _ := json.Marshal(map[string]interface{}{"path": path, "written": true})
		return true, string(out)
	}
	return false, "no executor for " + c.name
}

func clip(text string, length int) string {
	if len(text) > length {
		return text[:length]
	}
	return text
}

func answer(client *Client, c call, action ToolAction) error {
	switch {
	case action.Action == "execute":
		ok, output := execute(c)
		var answered ToolAnswered
		result := ToolResultParams{Session: session, CallID: c.id, OK: ok, Output: output}
		if err := client.Call("tool/result", result, &answered); err != nil {
			return err
		}
		fmt.Printf("    %s: executed (seq %d) %s\n", c.name, answered.LastSeq, clip(output, 50))
	case action.Action == "review" && action.Review != nil:
		fmt.Printf("    the reviewer sees:\n    | %s\n", strings.ReplaceAll(action.Review.Plan, "\n", "\n    | "))
		var answered ToolAnswered
		approval := ReviewAnswerParams{Session: session, CallID: c.id, Answer: "selected", Options: []string{"Approve"}}
		if err := client.Call("review/answer", approval, &answered); err != nil {
			return err
		}
		verdict := "answered"
		if answered.Review != nil {
			verdict = *answered.Review
		}
		fmt.Printf("    %s: %s (seq %d)\n", c.name, verdict, answered.LastSeq)
	default:
		output := ""
		if action.Output != nil {
			output = *action.Output
		}
		fmt.Printf("    %s: %s %s\n", c.name, action.Action, clip(output, 50))
	}
	return nil
}

func step(client *Client, number int) (bool, error) {
	var begun StepBegun
	if err := client.Call("step/begin", StepBeginParams{Session: session, Step: number}, &begun); err != nil {
		return false, err
	}
	if !begun.Accepted {
		return false, nil
	}
	var context RequestContext
	if err := client.Call("step/context", StepContextParams{Session: session}, &context); err != nil {
		return false, err
	}
	next, err := model(context)
	if err != nil {
		return false, err
	}
	recorded := StepReplyParams{Session: session, ToolCalls: []ModelToolCall{}}
	if next.text != "" {
		recorded.Text = &next.text
	}
	finish := "stop"
	if len(next.calls) > 0 {
		finish = "tool_calls"
	}
	recorded.FinishReason = &finish
	for _, c := range next.calls {
		wired, err := wire(c)
		if err != nil {
			return false, err
		}
		recorded.ToolCalls = append(recorded.ToolCalls, wired)
	}
	var verdicts ReplyRecorded
	if err := client.Call("step/reply", recorded, &verdicts); err != nil {
		return false, err
	}
	names := make([]string, 0, len(context.Sections))
	for _, section := range context.Sections {
		names = append(names, section.Name)
	}
	said := ""
	if next.text != "" {
		said = fmt.Sprintf(" %q", next.text)
	}
	fmt.Printf("  step %d [%s, %s]%s\n", number, context.Phase, strings.Join(names, " "), said)
	for _, c := range next.calls {
		var action ToolAction
		if err := client.Call("tool/dispatch", ToolDispatchParams{Session: session, CallID: c.id}, &action); err != nil {
			return false, err
		}
		if err := answer(client, c, action); err != nil {
			return false, err
		}
	}
	return verdicts.Next != "end", nil
}

func runTurn(client *Client, text string) (err error) {
	var started TurnStarted
	if err := client.Call("turn/start", TurnStartParams{Session: session, Text: text}, &started); err != nil {
		return err
	}
	fmt.Printf("turn %d: %s\n", started.Turn, text)
	defer func() {
		var ended TurnEnded
		if closing := client.Call("turn/end", TurnEndParams{Session: session}, &ended); err == nil {
			err = closing
		}
	}()
	for number := 1; number <= 16; number++ {
		more, err := step(client, number)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func run(db string, command []string) error {
	client, err := Start(command, db)
	if err != nil {
		return err
	}
	var info SessionInfo
	if err := client.Call("session/open", SessionOpenParams{Session: session, Tools: tools}, &info); err != nil {
		return err
	}
	var plan CommandResult
	if err := client.Call("user/command", UserCommandParams{Session: session, Text: "/plan"}, &plan); err != nil {
		return err
	}
	if plan.Outcome == nil {
		return errors.New("/plan has no outcome")
	}
	fmt.Printf("/plan: %s\n", *plan.Outcome)
	var typed CommandResult
	if err := client.Call("user/command", UserCommandParams{Session: session, Text: task}, &typed); err != nil {
		return err
	}
	if typed.Kind != "message" || typed.Message == nil {
		return errors.New("the task is not a message")
	}
	if err := runTurn(client, *typed.Message); err != nil {
		return err
	}
	// a second turn/end is refused, out of order, and writes nothing
	err = client.Call("turn/end", TurnEndParams{Session: session}, &TurnEnded{})
	if err == nil {
		return errors.New("a turn was ended twice")
	}
	if !IsRemote(err, -32003, "out-of-order") {
		return err
	}
	if err := client.Call("session/read", SessionReadParams{Session: session}, &info); err != nil {
		return err
	}
	if info.Plan == nil {
		return errors.New("the session has no plan")
	}
	fmt.Printf("mode %s, plan %s %s, last seq %d\n", info.Mode, info.Plan.ID, info.Plan.Status, info.LastSeq)
	if info.Mode != "build" || info.Plan.Status != "completed" {
		return errors.New("the plan did not complete")
	}
	if !strings.Contains(workspace["greet.py"], "def farewell") {
		return errors.New("farewell() was not written")
	}
	return client.Close()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: planfold-host DB [COMMAND...]")
		os.Exit(2)
	}
	command := os.Args[2:]
	if len(command) == 0 {
		command = []string{"planfold", "serve"}
	}
	if err := run(os.Args[1], command); err != nil {
		fmt.Fprintln(os.Stderr, "planfold-host:", err)
		os.Exit(1)
	}
}
