package omprpc

// The error table (tests/fixtures/error-table.json, issue 23 §4) through the Go API: every
// row's failure caused on the fake agent, and the *Error it returns checked — Status, Code
// and the core's Message — as the C, Node and Python suites check theirs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// errorRow is one row of the table (its "about" says what each field means).
type errorRow struct {
	Name          string            `json:"name"`
	AgentArgs     []string          `json:"agent_args"`
	AgentEnv      map[string]string `json:"agent_env"`
	Options       map[string]any    `json:"options"`
	Call          *errorCall        `json:"call"`
	Status        string            `json:"status"`
	Code          Status            `json:"code"`
	Message       *string           `json:"message"`
	MessagePrefix string            `json:"message_prefix"`
	NotIn         map[string]string `json:"not_in"`
}

type errorCall struct {
	Op      string          `json:"op"`
	Type    string          `json:"type"`
	Params  json.RawMessage `json:"params"`
	Message string          `json:"message"`
	ID      string          `json:"id"`
	Result  any             `json:"result"`
}

func loadErrorTable(t *testing.T) []errorRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "tests", "fixtures", "error-table.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Rows []errorRow `json:"rows"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatalf("the error table: %v", err)
	}
	if len(table.Rows) < 10 {
		t.Fatalf("the error table has %d rows", len(table.Rows))
	}
	return table.Rows
}

// startOptions are the row's start options: the fake agent with its arguments and
// environment, the row's options through Extra (a "command" there replaces the fake's).
func (r errorRow) startOptions() Options {
	o := fakeOptions(r.AgentArgs...)
	o.Env, o.Extra = r.AgentEnv, map[string]any{}
	for k, v := range r.Options {
		o.Extra[k] = v
	}
	return o
}

// collectWhilePrompting: PromptAndWait on another goroutine; once the agent streams, its
// prompt was sent and its wait holds the prompt lifecycle, and CollectEvents meets it. Then
// Abort, which ends the background wait.
func collectWhilePrompting(ctx context.Context, c *Client, message string) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.PromptAndWait(ctx, message, nil) // ended by the abort below; how is not the row's business
	}()
	for ctx.Err() == nil {
		state, err := c.Request(ctx, "get_state", nil)
		var s struct {
			IsStreaming bool `json:"isStreaming"`
		}
		if err == nil && json.Unmarshal(state, &s) == nil && s.IsStreaming {
			break
		}
	}
	_, err := c.CollectEvents(ctx)
	if abortErr := c.Abort(ctx); abortErr != nil {
		return abortErr
	}
	<-done
	return err
}

// makeCall makes the row's call on c and returns its error.
func makeCall(ctx context.Context, c *Client, call *errorCall) error {
	switch call.Op {
	case "request", "request_after_close":
		if call.Op == "request_after_close" {
			if err := c.Close(); err != nil {
				return err
			}
		}
		var params any
		if len(call.Params) > 0 {
			params = call.Params
		}
		_, err := c.Request(ctx, call.Type, params)
		return err
	case "prompt_and_wait":
		_, err := c.PromptAndWait(ctx, call.Message, nil)
		return err
	case "host_tool_result":
		return c.HostToolResult(call.ID, call.Result, false)
	case "collect_while_prompting":
		return collectWhilePrompting(ctx, c, call.Message)
	}
	return errors.New("unknown op " + call.Op + " in the error table")
}

// rowProblems are the ways err differs from what the row says.
func rowProblems(row errorRow, err error) []string {
	var e *Error
	if !errors.As(err, &e) {
		return []string{fmt.Sprintf("got %v (%T), want an *Error with status %s", err, err, row.Status)}
	}
	var problems []string
	if e.Status != row.Code || e.Status.String() != row.Status || e.Code != row.Status {
		problems = append(problems, fmt.Sprintf("status %d %s (Code %s), the table says %d %s", e.Status, e.Status, e.Code, row.Code, row.Status))
	}
	if !errors.Is(err, row.Code.Sentinel()) {
		problems = append(problems, fmt.Sprintf("errors.Is(err, %v) is false", row.Code.Sentinel()))
	}
	if row.Message != nil && e.Message != *row.Message {
		problems = append(problems, fmt.Sprintf("message %q, the table says %q", e.Message, *row.Message))
	}
	if row.Message == nil && !strings.HasPrefix(e.Message, row.MessagePrefix) {
		problems = append(problems, fmt.Sprintf("message %q does not start %q", e.Message, row.MessagePrefix))
	}
	return problems
}

func TestErrorTable(t *testing.T) {
	for _, row := range loadErrorTable(t) {
		t.Run(row.Name, func(t *testing.T) {
			if why := row.NotIn["go"]; why != "" {
				t.Skip(why)
			}
			// A hang guard for start and the helpers; the call itself runs without a deadline, so
			// the row's own timeouts (request_timeout_ms) decide, as in the other languages.
			guard, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Start(guard, row.startOptions())
			if row.Call != nil {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				defer c.Close()
				ctx := context.Background()
				if row.Call.Op == "collect_while_prompting" {
					ctx = guard
				}
				err = makeCall(ctx, c, row.Call)
			} else if err == nil {
				c.Close()
			}
			for _, p := range rowProblems(row, err) {
				t.Error(p)
			}
		})
	}
}
