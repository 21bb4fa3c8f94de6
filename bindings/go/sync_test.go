package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// received takes what the channel holds right now, without waiting.
func received(ch <-chan Event) []string {
	var types []string
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return append(types, "<closed>")
			}
			types = append(types, ev.Type)
		default:
			return types
		}
	}
}

// When a call fails because the agent crashed mid-turn, every subscriber already has the
// events that preceded the crash: they are on its channel, not on their way. Every time.
func TestSubscribersHaveEverythingBeforeACrash(t *testing.T) {
	for i := 0; i < 50; i++ {
		c := startFake(t)
		ctx := ctxFor(t)
		ch := c.Events(ctx)
		ch2 := c.Events(ctx)
		_, err := c.PromptAndWait(ctx, "crash", nil)
		wantErr(t, err, ErrProcessExited, "PromptAndWait on a crashing agent")
		for _, got := range [][]string{received(ch), received(ch2)} {
			if len(got) > 0 && got[0] == "ready" {
				got = got[1:]
			}
			if len(got) < 2 || strings.Join(got[:2], ",") != "agent_start,message_update" {
				t.Fatalf("iteration %d: on the channel when PromptAndWait failed: %v", i, got)
			}
		}
		_ = c.Close()
	}
}

// Requests (and their errors) return after the subscribers have every event the agent sent
// before the response: the turn a prompt started is on the channel when a later request
// returns.
func TestSubscribersHaveEverythingBeforeARequestReturns(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	ch := c.Events(ctx)
	turnTypes := "agent_start,turn_start,message_start,message_update,message_end,turn_end,agent_end"
	for i := 0; i < 20; i++ {
		if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetState(ctx); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(received(ch), ","); !strings.HasSuffix(got, turnTypes) {
			t.Fatalf("iteration %d: on the channel when GetState returned: %v", i, got)
		}
		if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
			t.Fatal(err)
		}
		_, err := c.Request(ctx, "no_such_command", nil)
		var ce *CommandError
		if !errors.As(err, &ce) {
			t.Fatalf("an unknown command: %v", err)
		}
		if got := strings.Join(received(ch), ","); got != turnTypes {
			t.Fatalf("iteration %d: on the channel when Request failed: %v", i, got)
		}
	}
}

// A subscriber that calls the client from its own loop body (or leaves its channel full)
// does not hold up the call: nothing waits for a consumer that is busy.
func TestBusySubscribersDoNotBlockCalls(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	unread := c.Events(ctx) // never read: 300 events overfill its channel
	_ = unread
	done := make(chan error, 1)
	go func() {
		for ev, err := range c.All(ctx) {
			if err != nil {
				done <- err
				return
			}
			if ev.Type == "agent_start" {
				_, err := c.GetState(ctx) // from the loop body
				done <- err
				return
			}
		}
	}()
	waitSubscribers(t, c, 2)
	tr, err := c.PromptAndWait(ctx, "burst 300", nil)
	if err != nil || len(tr.Events) != 306 {
		t.Fatalf("PromptAndWait: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("GetState from the loop body: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("GetState from the loop body hung")
	}
}

// Host URI handlers serve reads and writes; errors and panics become error replies.
func TestHostURIHandlers(t *testing.T) {
	var writes atomic.Value
	memo := HostURIScheme{Scheme: "Memo", Writable: true, Handler: func(ctx context.Context, req HostURIRequest) (HostURIContent, error) {
		if req.Operation == "write" {
			writes.Store(req.URL + "=" + req.Content)
			return HostURIContent{}, nil
		}
		return HostURIContent{Content: "notes for " + req.URL, ContentType: "text/markdown", Notes: []string{"n"}}, nil
	}}
	o := fakeOptions()
	o.HostURISchemes = []HostURIScheme{memo}
	c := start(t, o)
	seen := findType(t, turn(t, c, "needs host uri").Events, "host_uri_result_seen", 0)
	if jstr(t, seen, "frame.content") != "notes for memo://notes/today" || jstr(t, seen, "frame.contentType") != "text/markdown" ||
		jget(t, seen, "frame.isError") == true {
		t.Fatalf("read: %s", seen)
	}
	seen = findType(t, turn(t, c, "needs host uri write").Events, "host_uri_result_seen", 0)
	if jget(t, seen, "frame.error") != nil || writes.Load() != "memo://notes/today=new text" {
		t.Fatalf("write: %s %v", seen, writes.Load())
	}
	for _, tc := range []struct {
		handler HostURIHandler
		want    string
	}{
		{func(ctx context.Context, req HostURIRequest) (HostURIContent, error) {
			return HostURIContent{}, errors.New("no such note")
		}, "no such note"},
		{func(ctx context.Context, req HostURIRequest) (HostURIContent, error) { panic("boom") }, "panicked: boom"},
	} {
		if err := c.RegisterHostURIScheme(ctxFor(t), HostURIScheme{Scheme: "memo", Handler: tc.handler}); err != nil {
			t.Fatal(err)
		}
		seen = findType(t, turn(t, c, "needs host uri").Events, "host_uri_result_seen", 0)
		if jget(t, seen, "frame.isError") != true || !strings.Contains(jstr(t, seen, "frame.error"), tc.want) {
			t.Fatalf("%s: %s", tc.want, seen)
		}
	}
}

// A host call that no handler and no subscriber can answer is answered with an error at
// once, whether or not other handlers are registered: the turn does not wait for a deadline.
func TestUnanswerableHostCallsAreAnsweredAtOnce(t *testing.T) {
	for _, withHandler := range []bool{false, true} {
		o := fakeOptions()
		o.HostURISchemes = []HostURIScheme{{Scheme: "memo"}}
		o.HostTools = []HostTool{{Name: "echo_host", Parameters: json.RawMessage(`{"type":"object"}`)}}
		if withHandler {
			o.HostTools = append(o.HostTools, HostTool{Name: "other", Parameters: json.RawMessage(`{"type":"object"}`),
				Handler: func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
					return TextResult("x"), nil
				}})
		}
		c := start(t, o)
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		t0 := time.Now()
		tr, err := c.PromptAndWait(ctx, "needs host uri", nil)
		if err != nil {
			t.Fatalf("host URI request nobody answers: %v", err)
		}
		seen := findType(t, tr.Events, "host_uri_result_seen", 0)
		if jget(t, seen, "frame.isError") != true || !strings.Contains(jstr(t, seen, "frame.error"), "no handler") {
			t.Fatalf("host URI request nobody answers: %s", seen)
		}
		tr, err = c.PromptAndWait(ctx, "needs host tool", nil)
		if err != nil {
			t.Fatalf("host tool call nobody answers: %v", err)
		}
		end := findType(t, tr.Events, "tool_execution_end", 0)
		if jget(t, end, "isError") != true || !strings.Contains(jstr(t, end, "result.content.0.text"), "no handler") {
			t.Fatalf("host tool call nobody answers: %s", end)
		}
		cancel()
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("answering took %v", d)
		}
	}
}

// While only handlers make the pump read, nothing is dropped silently: the events wait for
// the next subscriber, and past the queue's bound the drops are counted and reported.
func TestEventsReadForHandlersAreKeptOrCounted(t *testing.T) {
	o := fakeOptions()
	o.EventQueueCapacity = Ptr(16)
	o.HostTools = []HostTool{{Name: "echo_host", Parameters: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
			return TextResult("x"), nil
		}}}
	c := start(t, o)
	turn(t, c, "needs host tool")
	turn(t, c, "burst 200")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	got, dropped := 0, uint64(0)
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := libraryOverflow(ev); ok {
			dropped += n
		} else {
			got++
		}
		if ev.Type == "agent_end" && got+int(dropped) > 10 {
			break
		}
	}
	// ready + the host tool turn (agent_start, host_tool_call, tool_execution_end, agent_end)
	// + the burst turn (206)
	if got+int(dropped) != 1+4+206 || dropped == 0 {
		t.Fatalf("received %d + dropped %d != 211 emitted", got, dropped)
	}
	k, err := c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if k.EventsDropped != dropped || k.BindingEventsDropped > dropped {
		t.Fatalf("counters: %d dropped (%d by the binding), %d reported", k.EventsDropped, k.BindingEventsDropped, dropped)
	}
}
