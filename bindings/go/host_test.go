package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var echoParams = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}`)

// echoHandler streams "working:<message>", then answers "host:<message>".
func echoHandler(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		return ToolResult{}, err
	}
	if err := update("working:" + args.Message); err != nil {
		return ToolResult{}, err
	}
	return TextResult("host:" + args.Message), nil
}

func echoTool(h HostToolHandler) HostTool {
	return HostTool{Name: "echo_host", Description: "Echo from the Go host", Parameters: echoParams, Handler: h}
}

func startWithTools(t *testing.T, tools ...HostTool) *Client {
	o := fakeOptions()
	o.HostTools = tools
	return start(t, o)
}

func TestHostToolRoundTrip(t *testing.T) {
	var calls []HostToolCall
	var mu sync.Mutex
	c := startWithTools(t, echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		mu.Lock()
		calls = append(calls, call)
		mu.Unlock()
		return echoHandler(ctx, call, update)
	}))
	ctx := ctxFor(t)
	// registered during start
	state, err := c.GetState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := jget(t, state.Raw, "dumpTools").([]any)
	if len(tools) == 0 || tools[len(tools)-1].(map[string]any)["name"] != "echo_host" {
		t.Fatalf("dumpTools: %s", state.Raw)
	}
	tr := turn(t, c, "needs host tool")
	mu.Lock()
	if len(calls) != 1 || calls[0].ID != "host-call-1" || calls[0].ToolName != "echo_host" ||
		calls[0].ToolCallID != "toolu_host_1" || jstr(t, calls[0].Arguments, "message") != "hello" ||
		jstr(t, calls[0].Raw, "type") != "host_tool_call" {
		t.Fatalf("handler calls: %+v", calls)
	}
	mu.Unlock()
	if countType(t, tr.Events, "tool_execution_update") != 1 || countType(t, tr.Events, "tool_execution_end") != 1 {
		t.Fatal("turn events")
	}
	up := findType(t, tr.Events, "tool_execution_update", 0)
	end := findType(t, tr.Events, "tool_execution_end", 0)
	if jstr(t, up, "partialResult.content.0.text") != "working:hello" || jstr(t, up, "toolName") != "echo_host" ||
		jstr(t, end, "result.content.0.text") != "host:hello" || jget(t, end, "isError") != false {
		t.Fatalf("update %s\nend %s", up, end)
	}
	// the call is finished: a second answer names no open call
	wantErr(t, c.HostToolResult("host-call-1", "again", false), ErrNotFound, "a second result")
}

func TestHostToolErrorsAndObjectResults(t *testing.T) {
	mode := "error"
	c := startWithTools(t, echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		if err := update(ToolResult{Content: []MessageContent{TextContent{Text: "half"}}, Details: map[string]int{"step": 1}}); err != nil {
			return ToolResult{}, err
		}
		switch mode {
		case "error":
			return ToolResult{}, errors.New("it broke")
		case "panic":
			panic("boom")
		case "invalid":
			return ToolResult{Content: []MessageContent{TextContent{Text: "x"}}, Details: func() {}}, nil
		default:
			return ToolResult{Details: map[string]int{"k": 1}}, nil // nil Content is sent as []
		}
	}))
	check := func(m, wantText string, wantError bool) json.RawMessage {
		t.Helper()
		mode = m
		tr := turn(t, c, "needs host tool")
		up := findType(t, tr.Events, "tool_execution_update", 0)
		if jstr(t, up, "partialResult.content.0.text") != "half" || jget(t, up, "partialResult.details.step") != 1.0 {
			t.Fatalf("%s: update %s", m, up)
		}
		end := findType(t, tr.Events, "tool_execution_end", 0)
		if got := jstr(t, end, "result.content.0.text"); !strings.Contains(got, wantText) || jget(t, end, "isError") != wantError {
			t.Fatalf("%s: end %s", m, end)
		}
		return end
	}
	check("error", "it broke", true)
	check("panic", "panicked: boom", true)
	check("invalid", "invalid result", true)
	mode = "empty"
	tr := turn(t, c, "needs host tool")
	end := findType(t, tr.Events, "tool_execution_end", 0)
	if content, ok := jget(t, end, "result.content").([]any); !ok || len(content) != 0 || jget(t, end, "result.details.k") != 1.0 {
		t.Fatalf("empty result: %s", end)
	}
}

// xd:// dispatch: update and end events are renamed to the host tool, start keeps "write".
func TestXdDispatchedToolIsRenamed(t *testing.T) {
	c := startWithTools(t, echoTool(echoHandler))
	tr := turn(t, c, "needs xd tool")
	start := findType(t, tr.Events, "tool_execution_start", 0)
	up := findType(t, tr.Events, "tool_execution_update", 0)
	end := findType(t, tr.Events, "tool_execution_end", 0)
	if jstr(t, start, "toolName") != "write" || jstr(t, start, "toolCallId") != "toolu_host_1" ||
		jstr(t, up, "toolName") != "echo_host" || jstr(t, up, "toolCallId") != "toolu_host_1" ||
		jstr(t, end, "toolName") != "echo_host" || jstr(t, end, "toolCallId") != "toolu_host_1" ||
		jstr(t, end, "result.content.0.text") != "host:hello" {
		t.Fatalf("start %s\nupdate %s\nend %s", start, up, end)
	}
}

// host_tool_cancel cancels the handler's context; its late result is dropped.
func TestHostToolCancellation(t *testing.T) {
	cancelled := make(chan error, 1)
	c := startWithTools(t, echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return TextResult("too late"), nil
	}))
	ctx := ctxFor(t)
	events := c.Events(ctx) // the cancel is an event too
	tr := turn(t, c, "cancel host tool")
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ctx: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the handler's context was never cancelled")
	}
	if countType(t, tr.Events, "tool_execution_end") != 0 {
		t.Fatalf("a cancelled call ended with a result: %d events", len(tr.Events))
	}
	sawCancel := false
	for ev := range events {
		if ev.Type == "host_tool_cancel" && jstr(t, ev.Raw, "targetId") == "host-call-1" {
			sawCancel = true
		}
		if ev.Type == "agent_end" {
			break
		}
	}
	if !sawCancel {
		t.Fatal("subscribers did not get the host_tool_cancel event")
	}
	// the cancelled call left the registry at once: any later reply is refused as CANCELLED
	// (the core remembers cancelled ids, boundedly, so a late reply is told apart from a bad id)
	if err := c.HostToolResult("host-call-1", "x", false); !errors.Is(err, ErrCancelled) {
		t.Fatalf("a reply to the cancelled call: %v", err)
	}
}

// Close cancels running handlers at once.
func TestHostToolHandlersCancelledOnClose(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	c := startWithTools(t, echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return ToolResult{}, ctx.Err()
	}))
	if _, err := c.Prompt(ctxFor(t), "needs host tool", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the handler never ran")
	}
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ctx after Close: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Close did not cancel the handler")
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("Close with a running handler took %v", d)
	}
}

// Handlers run concurrently up to HostToolConcurrency; the dispatcher never blocks on them.
func TestHostToolConcurrencyIsBounded(t *testing.T) {
	h := &core{closing: make(chan struct{})} // a closed handle: results answer ErrClosed
	h.base, h.baseCancel = context.WithCancel(context.Background())
	defer h.baseCancel()
	h.ev.init()
	h.host.init(2)
	var running, peak, total atomic.Int32
	var started sync.Map
	release := make(chan struct{})
	h.host.install([]HostTool{{Name: "slow", Handler: func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		started.Store(call.ID, true)
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		total.Add(1)
		return TextResult("ok"), nil
	}}})
	var batch []Event
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		raw := json.RawMessage(`{"type":"host_tool_call","id":"` + id + `","toolCallId":"t","toolName":"slow","arguments":{}}`)
		batch = append(batch, Event{Type: "host_tool_call", Raw: raw})
	}
	// a call to a tool without a handler is left to the program
	batch = append(batch, Event{Type: "host_tool_call", Raw: json.RawMessage(`{"type":"host_tool_call","id":"z","toolCallId":"t","toolName":"other","arguments":{}}`)})
	done := make(chan struct{})
	go func() { h.dispatchHost(batch, true); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("dispatch blocked on busy handlers")
	}
	deadline := time.Now().Add(waitFor)
	for running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if running.Load() != 2 {
		t.Fatalf("%d handlers running, want the bound of 2", running.Load())
	}
	// cancel one that is still waiting for a slot: it never runs
	waiting := ""
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if _, ok := started.Load(id); !ok {
			waiting = id
		}
	}
	h.dispatchHost([]Event{{Type: "host_tool_cancel", Raw: json.RawMessage(`{"type":"host_tool_cancel","id":"x","targetId":"` + waiting + `"}`)}}, true)
	close(release)
	for time.Now().Before(deadline) {
		h.host.mu.Lock()
		open := len(h.host.calls)
		h.host.mu.Unlock()
		if open == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, ran := started.Load(waiting); ran || peak.Load() != 2 || total.Load() != 4 {
		t.Fatalf("peak %d, total %d", peak.Load(), total.Load())
	}
}

// Without a Handler, calls arrive as events and the program answers them itself.
func TestManualHostToolAnswers(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	tool := echoTool(nil)
	tool.Label, tool.Hidden = "Echo", false
	other := HostTool{Name: "other", Description: "d", Parameters: map[string]any{"type": "object"}, Label: "Other", Hidden: true}
	data, err := c.SetHostTools(ctx, []HostTool{tool, other})
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := jget(t, data, "toolNames").([]any); len(names) != 2 || names[0] != "echo_host" || names[1] != "other" {
		t.Fatalf("SetHostTools answer: %s", data)
	}
	events := c.Events(ctx)
	done := make(chan *Turn, 1)
	go func() {
		tr, err := c.PromptAndWait(ctx, "needs host tool", nil)
		if err != nil {
			t.Error(err)
		}
		done <- tr
	}()
	for ev := range events {
		if ev.Type != "host_tool_call" {
			continue
		}
		var call HostToolCall
		if err := ev.Decode(&call); err != nil || call.ID != "host-call-1" {
			t.Fatalf("call %s: %v", ev.Raw, err)
		}
		if err := c.HostToolUpdate(call.ID, json.RawMessage(`{"content":[{"type":"text","text":"half"}]}`)); err != nil {
			t.Fatal(err)
		}
		if err := c.HostToolResult(call.ID, "manual", false); err != nil {
			t.Fatal(err)
		}
		break
	}
	tr := <-done
	if end := findType(t, tr.Events, "tool_execution_end", 0); jstr(t, end, "result.content.0.text") != "manual" {
		t.Fatalf("end: %s", end)
	}
}

// RegisterHostTool adds to the registered set and serves the tool at once.
func TestRegisterHostToolLater(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	if err := c.RegisterHostTool(ctx, HostTool{Name: "first", Description: "d", Parameters: map[string]any{"type": "object"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterHostTool(ctx, echoTool(echoHandler)); err != nil {
		t.Fatal(err)
	}
	state, _ := c.GetState(ctx)
	names := []string{}
	for _, tool := range jget(t, state.Raw, "dumpTools").([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "read,first,echo_host" {
		t.Fatalf("registered tools: %v", names)
	}
	tr := turn(t, c, "needs host tool")
	if end := findType(t, tr.Events, "tool_execution_end", 0); jstr(t, end, "result.content.0.text") != "host:hello" {
		t.Fatalf("end: %s", end)
	}
	// a failed registration keeps the previous set
	c.Close()
	err := c.RegisterHostTool(ctx, HostTool{Name: "third", Description: "d", Parameters: map[string]any{"type": "object"}})
	wantErr(t, err, ErrClosed, "RegisterHostTool after Close")
	if tools := c.h.host.current(); len(tools) != 2 || tools[1].Name != "echo_host" {
		t.Fatalf("a refused registration changed the set: %v", tools)
	}
}

// Calls the library answers by itself (bad arguments, unknown tool) never reach a handler.
func TestLibraryAnswersBadCalls(t *testing.T) {
	var called atomic.Int32
	c := startWithTools(t, echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		called.Add(1)
		return TextResult("x"), nil
	}))
	for _, tc := range []struct{ message, id string }{{"bad host call", "host-call-bad"}, {"unknown host tool", "host-call-unknown"}} {
		tr := turn(t, c, tc.message)
		seen := findType(t, tr.Events, "host_result_seen", 0)
		if jstr(t, seen, "frame.type") != "host_tool_result" || jstr(t, seen, "frame.id") != tc.id ||
			jget(t, seen, "frame.isError") != true {
			t.Fatalf("%s: %s", tc.message, seen)
		}
		if _, ok := jget(t, seen, "frame.result.content").([]any); !ok {
			t.Fatalf("%s: %s", tc.message, seen)
		}
		wantErr(t, c.HostToolResult(tc.id, "x", false), ErrNotFound, tc.message)
	}
	if called.Load() != 0 {
		t.Fatal("a handler ran for a call the library answered")
	}
}

func TestHostURIs(t *testing.T) {
	o := fakeOptions()
	o.HostURISchemes = []HostURIScheme{{Scheme: "memo", Description: "notes", Writable: true}}
	c := start(t, o)
	ctx := ctxFor(t)
	type uriRequest struct {
		ID, Operation, URL, Content string
	}
	roundTrip := func(message string, result any) (uriRequest, json.RawMessage) {
		t.Helper()
		sub, cancel := context.WithCancel(ctx)
		defer cancel()
		events := c.Events(sub)
		done := make(chan *Turn, 1)
		go func() {
			tr, err := c.PromptAndWait(ctx, message, nil)
			if err != nil {
				t.Error(err)
			}
			done <- tr
		}()
		var req uriRequest
		for ev := range events {
			if ev.Type == "host_uri_request" {
				if err := ev.Decode(&req); err != nil {
					t.Fatal(err)
				}
				if err := c.HostURIResult(req.ID, result); err != nil {
					t.Fatalf("HostURIResult: %v", err)
				}
				wantErr(t, c.HostURIResult(req.ID, result), ErrNotFound, "a second URI result")
				break
			}
		}
		tr := <-done
		return req, findType(t, tr.Events, "host_uri_result_seen", 0)
	}
	req, seen := roundTrip("needs host uri", map[string]string{"content": "hello notes", "contentType": "text/plain"})
	if req.ID != "uri-1" || req.Operation != "read" || req.URL != "memo://notes/today" ||
		jstr(t, seen, "frame.type") != "host_uri_result" || jstr(t, seen, "frame.content") != "hello notes" ||
		jstr(t, seen, "frame.contentType") != "text/plain" || jget(t, seen, "frame.isError") == true {
		t.Fatalf("read: %+v %s", req, seen)
	}
	req, seen = roundTrip("needs host uri write", json.RawMessage(`{}`))
	if req.Operation != "write" || req.Content != "new text" || jget(t, seen, "frame.error") != nil {
		t.Fatalf("write: %+v %s", req, seen)
	}
	_, seen = roundTrip("needs host uri", map[string]string{"error": "no such note"})
	if jstr(t, seen, "frame.error") != "no such note" || jget(t, seen, "frame.isError") != true {
		t.Fatalf("error: %s", seen)
	}
	data, err := c.SetHostURISchemes(ctx, []HostURIScheme{{Scheme: "Docs"}})
	if err != nil || !strings.Contains(string(data), `"docs"`) {
		t.Fatalf("SetHostURISchemes: %s %v", data, err)
	}
	// a scheme nobody registered is answered with an error by the library
	tr := turn(t, startFake(t), "needs host uri")
	seen = findType(t, tr.Events, "host_uri_result_seen", 0)
	if jget(t, seen, "frame.isError") != true || jstr(t, seen, "frame.error") == "" {
		t.Fatalf("unregistered scheme: %s", seen)
	}
}
