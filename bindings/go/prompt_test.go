package omprpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPromptAndWaitReturnsAssistantText(t *testing.T) {
	c := startFake(t)
	tr := turn(t, c, "say hello")
	if text(tr.AssistantText) != "pong" || len(tr.Events) < 3 || tr.RequestID == "" || !tr.AgentInvoked ||
		jstr(t, tr.AssistantMessage, "role") != "assistant" || len(tr.Messages) != 1 ||
		messageText(tr.Messages[0]) != "pong" {
		t.Fatalf("turn: %+v", tr)
	}
	if countType(t, tr.Events, "agent_end") != 1 || countType(t, tr.Events, "message_update") != 1 ||
		countType(t, tr.Events, "ready") != 0 {
		t.Fatal("turn events")
	}
	data, err := c.Request(ctxFor(t), "get_last_assistant_text", nil)
	if err != nil || jstr(t, data, "text") != "pong" {
		t.Fatalf("get_last_assistant_text: %s %v", data, err)
	}
}

func TestTurnSummaryAndContent(t *testing.T) {
	o := fakeOptions()
	o.TurnSummary = true
	c := start(t, o)
	tr, err := c.PromptAndWait(ctxFor(t), "say hello", &PromptOptions{Content: []any{map[string]string{"type": "text", "text": "more"}}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Summary == nil || jstr(t, tr.Summary, "text") != "pong" {
		t.Fatalf("summary: %s", tr.Summary)
	}
	if tr := turn(t, startFake(t), "say hello"); tr.Summary != nil {
		t.Fatalf("a summary without TurnSummary: %s", tr.Summary)
	}
}

// A message with a NUL byte cannot be a C string: it travels in the options' JSON instead.
func TestMessagesWithNUL(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	events := c.Events(ctx)
	tr, err := c.PromptAndWait(ctx, "say\x00hello", &PromptOptions{Images: []ImageContent{{Data: "aGk=", MimeType: "image/png"}}})
	if err != nil || text(tr.AssistantText) != "pong" {
		t.Fatalf("PromptAndWait with a NUL: %+v %v", tr, err)
	}
	if _, err := c.Prompt(ctx, "local\x00", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Steer(ctx, "nudge\x00"); err != nil {
		t.Fatal(err)
	}
	if err := c.FollowUp(ctx, "later\x00", ImageContent{Data: "aGk=", MimeType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Type == "agent_end" {
			break
		}
	}
}

func TestTurnShapes(t *testing.T) {
	c := startFake(t)
	if tr := turn(t, c, "thinking"); text(tr.AssistantText) != "visible" {
		t.Fatalf("thinking: %q", text(tr.AssistantText))
	}
	// a compacted agent_end is rebuilt from the streamed message_end messages
	tr := turn(t, c, "compacted")
	if len(tr.Messages) != 2 || tr.Messages[0].Value.Role() != "assistant" ||
		messageText(tr.Messages[0]) != "pong" || customType(tr.Messages[1]) != "terminal" ||
		text(tr.AssistantText) != "pong" {
		t.Fatalf("compacted: %+v", tr)
	}
	// isTerminal:false does not end the wait
	tr = turn(t, c, "non-terminal")
	if countType(t, tr.Events, "agent_end") != 2 || text(tr.AssistantText) != "pong" {
		t.Fatalf("non-terminal: %+v", tr)
	}
	tr = turn(t, c, "all events")
	for _, typ := range []string{"agent_start", "turn_start", "message_start", "message_update", "message_end",
		"turn_end", "tool_execution_start", "tool_execution_update", "tool_execution_end", "auto_compaction_start",
		"auto_compaction_end", "auto_retry_start", "auto_retry_end", "retry_fallback_applied",
		"retry_fallback_succeeded", "ttsr_triggered", "todo_reminder", "todo_auto_clear", "agent_end"} {
		if countType(t, tr.Events, typ) != 1 {
			t.Errorf("all events: %s missing", typ)
		}
	}
}

func TestLocalPromptsComplete(t *testing.T) {
	c := startFake(t)
	tr := turn(t, c, "local")
	if tr.AgentInvoked || tr.AssistantText != nil || tr.AssistantMessage != nil {
		t.Fatalf("local: %+v", tr)
	}
	tr = turn(t, c, "prompt result")
	if tr.AgentInvoked || tr.PromptResult == nil || jstr(t, tr.PromptResult, "type") != "prompt_result" {
		t.Fatalf("prompt result: %+v", tr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatal("after local prompts")
	}
}

func checkLateFailure(t *testing.T, c *Client, message string) {
	t.Helper()
	tr, err := c.PromptAndWait(ctxFor(t), message, nil)
	var ce *CommandError
	if tr != nil || !errors.As(err, &ce) || ce.Command != "prompt" || ce.Message != "late failure" {
		t.Fatalf("late failure: %+v, %#v", tr, err)
	}
	pe, err := c.ProtocolErrors()
	if err != nil || len(pe) != 1 || !strings.Contains(string(pe[0]), "late failure") {
		t.Fatalf("protocol errors: %s %v", pe, err)
	}
	// sticky for WaitForIdle until the next prompt
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	wantErr(t, c.WaitForIdle(ctx), ErrCommandFailed, "WaitForIdle after a late failure")
}

func TestLatePromptFailure(t *testing.T) {
	checkLateFailure(t, startFake(t, "--scenario", "late-failure"), "say hello")
	c := startFake(t)
	checkLateFailure(t, c, "late failure")
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatal("client unusable after a late failure")
	}
}

func TestIdlessErrorCorrelation(t *testing.T) {
	c := startFake(t, "--scenario", "idless-error")
	ctx := ctxFor(t)
	_, err := c.Request(ctx, "unknown", nil)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "unknown" || ce.Message != "unsupported: unknown" {
		t.Fatalf("id-less failure: %#v", err)
	}
	// two commands in flight: each failure goes to its own caller
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, typ := range []string{"alpha", "beta"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(ctx, typ, nil)
			var ce *CommandError
			if errors.As(err, &ce) {
				got[i] = ce.Command
			}
		}()
	}
	wg.Wait()
	if got[0] != "alpha" || got[1] != "beta" {
		t.Fatalf("failures went to %q", got)
	}
}

func TestCollectEventsAndWaitForIdle(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	id, err := c.Prompt(ctx, "slow", nil)
	if err != nil || id == "" {
		t.Fatalf("Prompt: %q %v", id, err)
	}
	evs, err := c.CollectEvents(ctx)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Type != "agent_end" {
		t.Fatalf("CollectEvents: %d events, %v", len(evs), err)
	}
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AbortAndPrompt(ctx, "say hello", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if data, _ := c.Request(ctx, "get_last_assistant_text", nil); jstr(t, data, "text") != "pong" {
		t.Fatalf("after abort_and_prompt: %s", data)
	}
	// a prompt that never finishes: the wait times out, the client stays usable
	if _, err := c.Prompt(ctx, "hang", nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.WaitForIdle(short)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForIdle past its deadline: %v", err)
	}
	if _, err := c.GetState(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSingleFlightCollectors(t *testing.T) {
	o := fakeOptions()
	// No handler: the call arrives as a host_tool_call event, and the turn cannot end before
	// the test answers it, so the first collector surely still runs while the others are tried.
	o.HostTools = []HostTool{{Name: "echo_host", Description: "Echo", Parameters: echoParams}}
	c := start(t, o)
	ctx := ctxFor(t)
	// subscribe before the prompt, so its host_tool_call cannot be missed
	events := c.Events(ctx)
	done := make(chan *Turn, 1)
	go func() {
		tr, err := c.PromptAndWait(ctx, "needs host tool", nil)
		if err != nil {
			t.Errorf("the first collector: %v", err)
		}
		done <- tr
	}()
	var call HostToolCall
	for ev := range events {
		if ev.Type == "host_tool_call" {
			if err := ev.Decode(&call); err != nil {
				t.Fatalf("host_tool_call %s: %v", ev.Raw, err)
			}
			break
		}
	}
	if call.ID == "" {
		t.Fatal("the events ended before the host_tool_call")
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := c.CollectEvents(short)
	wantErr(t, err, ErrConcurrency, "CollectEvents during PromptAndWait")
	tr, err := c.PromptAndWait(short, "say hello", nil)
	wantErr(t, err, ErrConcurrency, "a second PromptAndWait")
	if tr != nil {
		t.Fatal("a refused PromptAndWait returned a turn")
	}
	if err := c.HostToolResult(call.ID, "done", false); err != nil {
		t.Fatal(err)
	}
	tr = <-done
	if tr == nil || len(tr.Events) == 0 || jstr(t, tr.Events[len(tr.Events)-1], "type") != "agent_end" {
		t.Fatalf("the first collector's turn: %+v", tr)
	}
	if end := findType(t, tr.Events, "tool_execution_end", 0); jstr(t, end, "result.content.0.text") != "done" {
		t.Fatalf("the first collector's tool_execution_end: %s", end)
	}
}

// Close wakes a PromptAndWait blocked without a deadline at once, with ErrClosed.
func TestCloseWakesPromptAndWait(t *testing.T) {
	c := start(t, slowToStopOptions())
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := c.PromptAndWait(context.Background(), "hang", nil)
		done <- result{err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond) // nothing observable to wait for: let it block
	select {
	case r := <-done:
		t.Fatalf("PromptAndWait returned before Close: %v", r.err)
	default:
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Close() }() // two closes racing
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	r := <-done
	// The agent was still alive when the waiter woke: only Close can have ended the wait.
	wantErr(t, r.err, ErrClosed, "PromptAndWait after Close")
	if d := r.at.Sub(t0); d > 1500*time.Millisecond {
		t.Fatalf("PromptAndWait woke %v after Close began", d)
	}
}

// A context ends the wait, not the client: waits that can be repeated are cut into short C
// waits, so a cancellation without a deadline is seen within one slice.
func TestContextEndsTheWaitNotTheClient(t *testing.T) {
	c := startFake(t, "--scenario", "hanging")
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "hang", nil); err != nil { // acknowledged, then nothing
		t.Fatal(err)
	}
	cancelAfter := func(d time.Duration) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(d, cancel)
		t.Cleanup(cancel)
		return ctx
	}
	within := func(what string, t0 time.Time, limit time.Duration) {
		t.Helper()
		if d := time.Since(t0); d > limit {
			t.Fatalf("%s took %v", what, d)
		}
	}
	// cancellation without a deadline
	t0 := time.Now()
	err := c.WaitForIdle(cancelAfter(100 * time.Millisecond))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitForIdle cancelled: %v", err)
	}
	within("a cancelled WaitForIdle", t0, 100*time.Millisecond+waitSlice+300*time.Millisecond)
	t0 = time.Now()
	_, err = c.NextUIRequest(cancelAfter(100 * time.Millisecond))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("NextUIRequest cancelled: %v", err)
	}
	within("a cancelled NextUIRequest", t0, 100*time.Millisecond+waitSlice+300*time.Millisecond)
	t0 = time.Now()
	var last error
	for _, err := range c.All(cancelAfter(100 * time.Millisecond)) {
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("All cancelled: %v", last)
	}
	within("a cancelled All", t0, 2*time.Second) // cancelled at 100 ms; without it, All never ends
	// deadlines bound requests too (the hanging agent answers nothing now)
	for name, call := range map[string]func(context.Context) error{
		"GetState":      func(ctx context.Context) error { _, err := c.GetState(ctx); return err },
		"PromptAndWait": func(ctx context.Context) error { _, err := c.PromptAndWait(ctx, "x", nil); return err },
		"CollectEvents": func(ctx context.Context) error { _, err := c.CollectEvents(ctx); return err },
		"WaitForIdle":   c.WaitForIdle,
		"NextUIRequest": func(ctx context.Context) error { _, err := c.NextUIRequest(ctx); return err },
	} {
		short, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		t0 := time.Now()
		err := call(short)
		cancel()
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s past its deadline: %v", name, err)
		}
		within(name+" with a 150 ms deadline", t0, time.Second)
	}
	// a context that already ended: nothing is sent
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetState(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetState with a cancelled ctx: %v", err)
	}
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := c.PromptAndWait(expired, "x", nil); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PromptAndWait with an expired ctx: %v", err)
	}
	// and the client is still there
	if info, err := c.Info(); err != nil || info.Closed {
		t.Fatalf("the client after ended waits: %+v %v", info, err)
	}
}

func TestStartContext(t *testing.T) {
	// already cancelled: nothing is started
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(done, fakeOptions()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled ctx: %v", err)
	}
	// a deadline bounds the handshake (the library's startup_timeout_ms follows it)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := Start(short, fakeOptions("--scenario", "silent"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start past its deadline: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("a 300 ms Start took %v", d)
	}
	// cancelled while the agent starts up: Start returns at once, long before the agent is
	// ready (5 s)
	ctx, cancel3 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel3)
	o := fakeOptions("--scenario", "slow-start")
	o.Env = map[string]string{"OMPRPC_FAKE_SLOW_START_MS": "5000"}
	t0 = time.Now()
	c, err := Start(ctx, o)
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Start cancelled: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("a cancelled Start returned after %v", d)
	}
}

// The iterator and the channel: every event, in order, to every subscriber; batches; the
// end of the events after Close.
func TestEventsIteratorAndChannel(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	if _, ok := waitEvent(t, c, "ready", waitFor); !ok {
		t.Fatal("no ready event")
	}
	// two subscribers at once, both before the prompt
	chCtx, chCancel := context.WithCancel(ctx)
	ch := c.Events(chCtx)
	var iterTypes []string
	iterDone := make(chan struct{})
	go func() {
		defer close(iterDone)
		for ev, err := range c.All(ctx) {
			if err != nil {
				t.Errorf("All: %v", err)
				return
			}
			iterTypes = append(iterTypes, ev.Type)
			if ev.Type == "agent_end" {
				return
			}
		}
	}()
	waitSubscribers(t, c, 2)
	if _, err := c.Prompt(ctx, "burst 50", nil); err != nil {
		t.Fatal(err)
	}
	var chanTypes []string
	for ev := range ch {
		chanTypes = append(chanTypes, ev.Type)
		if ev.Type == "agent_end" {
			break
		}
	}
	<-iterDone
	want := []string{"agent_start", "turn_start", "message_start"}
	for i := 0; i < 50; i++ {
		want = append(want, "message_update")
	}
	want = append(want, "message_end", "turn_end", "agent_end")
	if strings.Join(chanTypes, ",") != strings.Join(want, ",") || strings.Join(iterTypes, ",") != strings.Join(want, ",") {
		t.Fatalf("channel got %d events, iterator %d, want %d\n%v\n%v", len(chanTypes), len(iterTypes), len(want), chanTypes, iterTypes)
	}
	chCancel()
	waitSubscribers(t, c, 0)
	// events read while nobody subscribes wait for the next subscriber (nothing is lost)
	if tr := turn(t, c, "say hello"); tr == nil {
		t.Fatal("turn")
	}
	n := 0
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Type == "agent_end" {
			break
		}
	}
	if n != 7 {
		t.Fatalf("the next subscriber got %d events of the turn, want 7", n)
	}
	// Close ends every subscription: the channel closes, the iterator yields ErrClosed
	ch2 := c.Events(context.Background())
	errc := make(chan error, 1)
	go func() {
		var last error
		for _, err := range c.All(context.Background()) {
			last = err
		}
		errc <- last
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch2 {
	}
	select {
	case err := <-errc:
		wantErr(t, err, ErrClosed, "the iterator's end after Close")
	case <-time.After(waitFor):
		t.Fatal("the iterator did not end after Close")
	}
}

// The pump drains what the agent queued before it exited, then ends with the reason.
func TestEventsDrainAfterCrash(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	_, err := c.PromptAndWait(ctx, "crash", nil)
	wantErr(t, err, ErrProcessExited, "PromptAndWait on a crashing agent")
	var types []string
	var last error
	for ev, err := range c.All(ctx) {
		if err != nil {
			last = err
			break
		}
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "ready,agent_start,message_update" {
		t.Fatalf("events before the crash: %v", types)
	}
	if !errors.Is(last, ErrClosed) || !strings.Contains(last.Error(), "fatal: crashed") {
		t.Fatalf("the end of the events: %v", last)
	}
}

// A full queue drops the oldest events and says so: received + dropped == emitted.
func TestEventQueueOverflowIsReported(t *testing.T) {
	o := fakeOptions()
	o.EventQueueCapacity = Ptr(16)
	c := start(t, o)
	turn(t, c, "burst 200")
	received, dropped, overflows := 0, 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "event_overflow" {
			var o struct {
				Omprpc  bool `json:"omprpc"`
				Dropped int  `json:"dropped"`
			}
			if ev.Decode(&o) != nil || !o.Omprpc || o.Dropped <= 0 {
				t.Fatalf("overflow event: %s", ev.Raw)
			}
			overflows++
			dropped += o.Dropped
		} else {
			received++
		}
		if ev.Type == "agent_end" {
			break
		}
	}
	// and nothing follows agent_end, the last event emitted
	quick, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	for ev, err := range c.All(quick) {
		if err == nil {
			t.Fatalf("an event after agent_end: %s", ev.Raw)
		}
	}
	if overflows < 1 || received+dropped != 1+206 {
		t.Fatalf("received %d + dropped %d (in %d overflow events) != 207 emitted", received, dropped, overflows)
	}
}

func TestEventHistoryLimit(t *testing.T) {
	o := fakeOptions()
	o.MaxEventHistory = Ptr(2)
	c := start(t, o)
	_, err := c.PromptAndWait(ctxFor(t), "say hello", nil)
	wantErr(t, err, ErrLimitExceeded, "a turn past max_event_history")
	if !strings.Contains(err.Error(), "max_event_history") {
		t.Fatalf("the error does not name max_event_history: %v", err)
	}
	o.MaxEventHistory = Unlimited()
	c = start(t, o)
	if tr := turn(t, c, "burst 100"); len(tr.Events) != 106 {
		t.Fatalf("unbounded: %d events", len(tr.Events))
	}
	// in bytes: 100 updates of 640 bytes do not fit in 10,000
	o.MaxEventHistory, o.MaxTurnBytes = nil, Ptr(10000)
	_, err = start(t, o).PromptAndWait(ctxFor(t), "burst 100", nil)
	wantErr(t, err, ErrLimitExceeded, "a turn past max_turn_bytes")
	// a turn that keeps no message_update events
	o.MaxTurnBytes, o.TurnEvents = nil, "no_updates"
	if tr := turn(t, start(t, o), "burst 100"); len(tr.Events) != 6 || text(tr.AssistantText) != "pong" {
		t.Fatalf("turn_events no_updates: %d events", len(tr.Events))
	}
}

func TestProtocolV2(t *testing.T) {
	c := startFake(t, "--v2")
	if info, err := c.Info(); err != nil || info.ProtocolVersion != 2 {
		t.Fatalf("info after --v2: %+v %v", info, err)
	}
	// 2,000,000 bytes of text: chunked message_end, compacted agent_end, rebuilt turn
	tr := turn(t, c, "big 2000000")
	if s := text(tr.AssistantText); len(s) != 2000000 || s[0] != 'a' || s[25] != 'z' || s[1999999] != byte('a'+1999999%26) {
		t.Fatalf("big: %d bytes", len(s))
	}
	if len(tr.Messages) != 1 {
		t.Fatalf("big: %d messages", len(tr.Messages))
	}
	if tr := turn(t, c, "exact MiB"); !strings.HasPrefix(text(tr.AssistantText), "abc") {
		t.Fatal("exact MiB")
	}
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatal("after big frames")
	}
	// negotiation refused: v1
	o := fakeOptions("--v2")
	o.Env = map[string]string{"OMPRPC_FAKE_V2_FAIL": "1"}
	c = start(t, o)
	if info, _ := c.Info(); info.ProtocolVersion != 1 {
		t.Fatalf("a refused v2: protocol %d", info.ProtocolVersion)
	}
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatal("after a refused v2")
	}
	o = fakeOptions("--v2")
	o.NegotiateV2 = Ptr(false)
	if info, _ := start(t, o).Info(); info.ProtocolVersion != 1 {
		t.Fatalf("negotiate_v2 false: protocol %d", info.ProtocolVersion)
	}
}

func TestMaxFrameBytes(t *testing.T) {
	o := fakeOptions()
	o.MaxFrameBytes = Ptr(8 << 20)
	tr := turn(t, start(t, o), "huge 5000000")
	if s, _ := jget(t, findType(t, tr.Events, "tool_execution_end", 0), "result.content.0.text").(string); len(s) != 5000000 {
		t.Fatalf("huge: %d bytes", len(s))
	}
	o.MaxFrameBytes = Ptr(1 << 20)
	_, err := start(t, o).PromptAndWait(ctxFor(t), "huge 2000000", nil)
	if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("a 2 MB frame over max_frame_bytes: %v", err)
	}
}

// A turn of several MiB (copied into Go memory while its events are located) arrives exactly:
// every event's bytes, the parts decoded from the copy (messages, usage), a long text.
func TestLargeTurnCopiedExactly(t *testing.T) {
	o := fakeOptions()
	o.MaxEventHistory = Unlimited()
	c := start(t, o)

	// One 3,000,000-byte text in a tool result: the pattern "abc…z" (byte i = 'a' + i%26).
	const size = 3000000
	tr := turn(t, c, "huge "+strconv.Itoa(size))
	var types []string
	for _, ev := range tr.TypedEvents() {
		if !json.Valid(ev.Raw) {
			t.Fatalf("event %s is not JSON: %.200s", ev.Type, ev.Raw)
		}
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "agent_start,tool_execution_start,tool_execution_end,agent_end" {
		t.Fatalf("huge: events %v", types)
	}
	got, _ := jget(t, tr.Events[2], "result.content.0.text").(string)
	want := make([]byte, size)
	for i := range want {
		want[i] = byte('a' + i%26)
	}
	if got != string(want) {
		i := 0
		for i < len(got) && i < size && got[i] == want[i] {
			i++
		}
		t.Fatalf("huge: %d bytes of text, first difference at byte %d", len(got), i)
	}

	// 5,000 message_update events of 640 bytes (3.2 MB), each the same bytes.
	tr = turn(t, c, "burst 5000")
	if len(tr.Events) != 5006 || countType(t, tr.Events, "message_update") != 5000 {
		t.Fatalf("burst: %d events, %d message_update", len(tr.Events), countType(t, tr.Events, "message_update"))
	}
	update := findType(t, tr.Events, "message_update", 0)
	if len(update) != 640 || !json.Valid(update) {
		t.Fatalf("burst: a message_update of %d bytes: %.200s", len(update), update)
	}
	for i, ev := range tr.TypedEvents() {
		if ev.Type == "message_update" && !bytes.Equal(ev.Raw, update) {
			t.Fatalf("burst: event %d differs from the first message_update: %.200s", i, ev.Raw)
		}
		if !json.Valid(ev.Raw) {
			t.Fatalf("burst: event %d (%s) is not JSON: %.200s", i, ev.Type, ev.Raw)
		}
	}
	var end struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(tr.Events[len(tr.Events)-1], &end); err != nil || len(end.Messages) != 1 {
		t.Fatalf("burst: agent_end %v: %.300s", err, tr.Events[len(tr.Events)-1])
	}
	if text(tr.AssistantText) != "pong" || len(tr.Messages) != 1 {
		t.Fatalf("burst: text %q, %d messages", text(tr.AssistantText), len(tr.Messages))
	}
	if m, ok := tr.Messages[0].Value.(*AssistantMessage); !ok || len(m.Content) != 1 {
		t.Fatalf("burst: message %#v", tr.Messages[0].Value)
	}
	if !bytes.Equal(tr.AssistantMessage, end.Messages[0]) {
		t.Fatalf("burst: the assistant message %.200s is not agent_end's %.200s", tr.AssistantMessage, end.Messages[0])
	}
	if tr.Usage == nil || tr.Usage.TotalTokens != 2 || tr.Usage.Input != 1 {
		t.Fatalf("burst: usage %+v", tr.Usage)
	}
}
