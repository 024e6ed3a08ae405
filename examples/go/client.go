package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// ErrorData is what every error's data carries: planfold's stable code and,
// when known, where.
type ErrorData struct {
	Code     string `json:"code"`
	Detail   string `json:"detail,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Position *int   `json:"position,omitempty"`
	Stage    string `json:"stage,omitempty"`
}

// RemoteError is a JSON-RPC error the server answered.
type RemoteError struct {
	Code    int       `json:"code"`
	Message string    `json:"message"`
	Data    ErrorData `json:"data"`
}

func (e *RemoteError) Error() string {
	if e.Data.Detail != "" {
		return fmt.Sprintf("[%s] %s", e.Data.Code, e.Data.Detail)
	}
	return fmt.Sprintf("[%s] %s", e.Data.Code, e.Message)
}

type request struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      int         `json:"id"`
	Method  string      `json:"method"`
	Params  interface{} `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *int            `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *RemoteError    `json:"error"`
}

// Client is `planfold serve` as a child process: one request per line, one
// answer per line, in order (this host waits for each answer before it
// sends the next request).
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	nextID int
}

// Start runs command (its first word the program) with `--db db` added.
func Start(command []string, db string) (*Client, error) {
	args := append(append([]string{}, command[1:]...), "--db", db)
	cmd := exec.Command(command[0], args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	return &Client{cmd: cmd, stdin: stdin, lines: lines, nextID: 1}, nil
}

// Call sends method with params and decodes its result into result; a
// JSON-RPC error comes back as a *RemoteError.
func (c *Client) Call(method string, params interface{}, result interface{}) error {
	id := c.nextID
	c.nextID++
	line, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return err
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: writing the request: %w", method, err)
	}
	if !c.lines.Scan() {
		if err := c.lines.Err(); err != nil {
			return fmt.Errorf("%s: reading the answer: %w", method, err)
		}
		return fmt.Errorf("%s: planfold serve ended before it answered", method)
	}
	var got response
	if err := json.Unmarshal(c.lines.Bytes(), &got); err != nil {
		return fmt.Errorf("%s: an answer that is not JSON-RPC: %w", method, err)
	}
	if got.ID == nil || *got.ID != id {
		return fmt.Errorf("%s: an answer to another request: %s", method, c.lines.Text())
	}
	if got.Error != nil {
		return got.Error
	}
	if err := json.Unmarshal(got.Result, result); err != nil {
		return fmt.Errorf("%s: a result that does not match the protocol: %w", method, err)
	}
	return nil
}

// Close ends the server's input and waits for it to exit.
func (c *Client) Close() error {
	if err := c.stdin.Close(); err != nil {
		return err
	}
	return c.cmd.Wait()
}

// IsRemote reports whether err is the server's error with JSON-RPC code
// rpc and planfold code code.
func IsRemote(err error, rpc int, code string) bool {
	var remote *RemoteError
	return errors.As(err, &remote) && remote.Code == rpc && remote.Data.Code == code
}
