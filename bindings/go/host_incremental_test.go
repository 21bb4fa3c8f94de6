package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// Incremental host registration (AddHostTools / RemoveHostTools / AddHostURISchemes /
// RemoveHostURISchemes) against the fake agent speaking omp protocol 1.1, whose answers list
// every name registered after the change; the stock protocol (no such commands) and pi (its
// host tools are fixed at start) refuse them.

// startProtocol11 starts the fake agent as the omp protocol 1.1 server.
func startProtocol11(t *testing.T) *Client {
	t.Helper()
	return start(t, fakeOptions("--protocol", "1.1"))
}

// answerNames reads the list under key of a registration answer.
func answerNames(t *testing.T, data json.RawMessage, key string) string {
	t.Helper()
	var answer map[string][]string
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatalf("registration answer %s: %v", data, err)
	}
	return strings.Join(answer[key], ",")
}

// countingEcho is the echo tool whose handler counts its calls.
func countingEcho(calls *atomic.Int32) HostTool {
	return echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		calls.Add(1)
		return echoHandler(ctx, call, update)
	})
}

// hostToolEnd runs the "needs host tool" turn and returns its tool_execution_end.
func hostToolEnd(t *testing.T, c *Client) json.RawMessage {
	t.Helper()
	return findType(t, turn(t, c, "needs host tool").Events, "tool_execution_end", 0)
}

func TestAddAndRemoveHostTools(t *testing.T) {
	c := startProtocol11(t)
	ctx := ctxFor(t)
	var calls atomic.Int32
	data, err := c.AddHostTools(ctx, countingEcho(&calls))
	if err != nil || answerNames(t, data, "toolNames") != "echo_host" {
		t.Fatalf("AddHostTools: %s %v", data, err)
	}
	if end := hostToolEnd(t, c); jstr(t, end, "result.content.0.text") != "host:hello" || calls.Load() != 1 {
		t.Fatalf("the added tool's call: %s (handler calls %d)", end, calls.Load())
	}
	other := HostTool{Name: "other", Description: "d", Parameters: map[string]any{"type": "object"}}
	data, err = c.AddHostTools(ctx, other)
	if err != nil || answerNames(t, data, "toolNames") != "echo_host,other" {
		t.Fatalf("AddHostTools keeps the registered: %s %v", data, err)
	}
	// a name nobody registered is no error, and removes nothing
	data, err = c.RemoveHostTools(ctx, "never_registered")
	if err != nil || answerNames(t, data, "toolNames") != "echo_host,other" {
		t.Fatalf("RemoveHostTools of an unknown name: %s %v", data, err)
	}
	if end := hostToolEnd(t, c); jstr(t, end, "result.content.0.text") != "host:hello" || calls.Load() != 2 {
		t.Fatalf("after removing an unknown name: %s (handler calls %d)", end, calls.Load())
	}
	data, err = c.RemoveHostTools(ctx, "echo_host")
	if err != nil || answerNames(t, data, "toolNames") != "other" {
		t.Fatalf("RemoveHostTools: %s %v", data, err)
	}
	// the agent still calls the removed tool here: its handler is gone, so the call is
	// answered with an error and the handler does not run
	end := hostToolEnd(t, c)
	if jget(t, end, "isError") != true || calls.Load() != 2 {
		t.Fatalf("a call of the removed tool: %s (handler calls %d)", end, calls.Load())
	}
	// re-adding replaces nothing else and serves again
	data, err = c.AddHostTools(ctx, countingEcho(&calls))
	if err != nil || answerNames(t, data, "toolNames") != "other,echo_host" {
		t.Fatalf("AddHostTools again: %s %v", data, err)
	}
	if end := hostToolEnd(t, c); jstr(t, end, "result.content.0.text") != "host:hello" || calls.Load() != 3 {
		t.Fatalf("the re-added tool's call: %s (handler calls %d)", end, calls.Load())
	}
}

func TestAddHostToolsReplacesSameName(t *testing.T) {
	c := startProtocol11(t)
	ctx := ctxFor(t)
	var first, second atomic.Int32
	if _, err := c.AddHostTools(ctx, countingEcho(&first)); err != nil {
		t.Fatal(err)
	}
	data, err := c.AddHostTools(ctx, countingEcho(&second))
	if err != nil || answerNames(t, data, "toolNames") != "echo_host" {
		t.Fatalf("AddHostTools of the same name: %s %v", data, err)
	}
	hostToolEnd(t, c)
	if first.Load() != 0 || second.Load() != 1 {
		t.Fatalf("handler calls: replaced %d, replacing %d", first.Load(), second.Load())
	}
}

// An agent without the commands (the stock protocol, like a released omp) refuses them; the
// handlers registered before still serve, the refused one never runs.
func TestIncrementalHostToolsRefusedByStockAgent(t *testing.T) {
	var kept, refused atomic.Int32
	c := startWithTools(t, countingEcho(&kept))
	ctx := ctxFor(t)
	_, err := c.AddHostTools(ctx, countingEcho(&refused))
	wantErr(t, err, ErrCommandFailed, "AddHostTools on the stock protocol")
	_, err = c.RemoveHostTools(ctx, "echo_host")
	wantErr(t, err, ErrCommandFailed, "RemoveHostTools on the stock protocol")
	_, err = c.AddHostURISchemes(ctx, HostURIScheme{Scheme: "memo"})
	wantErr(t, err, ErrCommandFailed, "AddHostURISchemes on the stock protocol")
	_, err = c.RemoveHostURISchemes(ctx, "memo")
	wantErr(t, err, ErrCommandFailed, "RemoveHostURISchemes on the stock protocol")
	if end := hostToolEnd(t, c); jstr(t, end, "result.content.0.text") != "host:hello" || kept.Load() != 1 || refused.Load() != 0 {
		t.Fatalf("after the refusals: %s (kept %d, refused %d)", end, kept.Load(), refused.Load())
	}
}

// pi's host tools come from the bridge extension, loaded once at start: the core refuses
// AddHostTools / RemoveHostTools before sending anything, and the binding says so.
func TestIncrementalHostToolsRefusedByBridgedClient(t *testing.T) {
	c := startPi(t)
	ctx := ctxFor(t)
	var calls atomic.Int32
	_, err := c.AddHostTools(ctx, countingEcho(&calls))
	wantErr(t, err, ErrInvalidArgument, "AddHostTools on pi")
	if !strings.Contains(err.Error(), "bridged") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	_, err = c.RemoveHostTools(ctx, "echo_host")
	wantErr(t, err, ErrInvalidArgument, "RemoveHostTools on pi")
	// the refused handler is not left registered: the client still answers GetState
	// without a pump reading for host tools, and no call ever reached it
	if _, err := c.GetState(ctx); err != nil || calls.Load() != 0 {
		t.Fatalf("after the refusal: %v (handler calls %d)", err, calls.Load())
	}
}

// hostURIReply runs "needs host uri" and returns the reply the agent saw.
func hostURIReply(t *testing.T, c *Client) json.RawMessage {
	t.Helper()
	return findType(t, turn(t, c, "needs host uri").Events, "host_uri_result_seen", 0)
}

func TestAddAndRemoveHostURISchemes(t *testing.T) {
	c := startProtocol11(t)
	ctx := ctxFor(t)
	var reads atomic.Int32
	memo := HostURIScheme{Scheme: "memo", Description: "notes", Handler: func(ctx context.Context, req HostURIRequest) (HostURIContent, error) {
		reads.Add(1)
		return HostURIContent{Content: "note at " + req.URL}, nil
	}}
	data, err := c.AddHostURISchemes(ctx, memo)
	if err != nil || answerNames(t, data, "schemes") != "memo" {
		t.Fatalf("AddHostURISchemes: %s %v", data, err)
	}
	if seen := hostURIReply(t, c); !strings.HasPrefix(jstr(t, seen, "frame.content"), "note at memo://notes/today") || reads.Load() != 1 {
		t.Fatalf("the added scheme's read: %s (reads %d)", seen, reads.Load())
	}
	data, err = c.AddHostURISchemes(ctx, HostURIScheme{Scheme: "docs"})
	if err != nil || answerNames(t, data, "schemes") != "memo,docs" {
		t.Fatalf("AddHostURISchemes keeps the registered: %s %v", data, err)
	}
	// a scheme the agent keeps for itself is refused; the registered ones stay served
	_, err = c.AddHostURISchemes(ctx, HostURIScheme{Scheme: "omp"})
	if err == nil || !errors.Is(err, ErrCommandFailed) {
		t.Fatalf("AddHostURISchemes of a reserved scheme: %v", err)
	}
	if seen := hostURIReply(t, c); jget(t, seen, "frame.isError") == true || reads.Load() != 2 {
		t.Fatalf("after a refused scheme: %s (reads %d)", seen, reads.Load())
	}
	data, err = c.RemoveHostURISchemes(ctx, "never_registered")
	if err != nil || answerNames(t, data, "schemes") != "memo,docs" {
		t.Fatalf("RemoveHostURISchemes of an unknown scheme: %s %v", data, err)
	}
	// matched as the agent matches it: trimmed, case-insensitively
	data, err = c.RemoveHostURISchemes(ctx, " MEMO ")
	if err != nil || answerNames(t, data, "schemes") != "docs" {
		t.Fatalf("RemoveHostURISchemes: %s %v", data, err)
	}
	if seen := hostURIReply(t, c); jget(t, seen, "frame.isError") != true || reads.Load() != 2 {
		t.Fatalf("a read of the removed scheme: %s (reads %d)", seen, reads.Load())
	}
}
