package omprpc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamAll runs a Stream to its end: its items (TurnComplete last) and the error, if any.
func streamAll(t *testing.T, c *Client, ctx context.Context, message string) ([]StreamItem, error) {
	t.Helper()
	var items []StreamItem
	for item, err := range c.Stream(ctx, message) {
		if err != nil {
			if item != nil {
				t.Errorf("an error came with an item: %T", item)
			}
			return items, err
		}
		items = append(items, item)
	}
	return items, nil
}

// Text and reasoning stay apart; tool calls come as request and completion; the turn ends
// with TurnComplete, which carries the outcome, stop reason, usage, final text and summary.
func TestStreamItems(t *testing.T) {
	c := startFake(t)
	items, err := streamAll(t, c, ctxFor(t), "thinking") // thinking_delta "hmm", then text_delta "visible"
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("items: %#v", items)
	}
	if r, ok := items[0].(*ReasoningChunk); !ok || r.Text != "hmm" {
		t.Fatalf("first item: %#v", items[0])
	}
	if x, ok := items[1].(*TextChunk); !ok || x.Text != "visible" {
		t.Fatalf("second item: %#v", items[1])
	}
	done, ok := items[2].(*TurnComplete)
	if !ok {
		t.Fatalf("last item: %#v", items[2])
	}
	if done.Outcome != TurnAgentEnd || done.StopReason == nil || *done.StopReason != "stop" ||
		done.Text == nil || *done.Text != "visible" || done.Usage == nil || done.Usage.TotalTokens != 2 ||
		done.Summary == nil || done.Summary.Reasoning != "hmm" || !done.AgentInvoked ||
		done.RequestID == "" {
		t.Fatalf("TurnComplete: %+v", done)
	}

	items, err = streamAll(t, c, ctxFor(t), `gated bash {"command":"echo hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, item := range items {
		switch x := item.(type) {
		case *ToolCallRequest:
			kinds = append(kinds, "request "+x.ToolName+" "+string(x.Args))
		case *ToolCallComplete:
			kinds = append(kinds, "complete "+x.ToolName+" "+x.Outcome+" "+jstr(t, x.Result, "content.0.text"))
		case *TextChunk:
			kinds = append(kinds, "text "+x.Text)
		case *TurnComplete:
			kinds = append(kinds, "done "+*x.Text)
		default:
			kinds = append(kinds, "other")
		}
	}
	want := "request bash {\"command\":\"echo hi\"}|complete bash success hi\n|text after: hi\n|done after: hi\n"
	if got := strings.Join(kinds, "|"); got != want {
		t.Fatalf("items:\n%q\nwant\n%q", got, want)
	}
}

// The agent's recovery is inside the turn: a retry is announced, its answer follows.
func TestStreamRetry(t *testing.T) {
	c := startFake(t)
	items, err := streamAll(t, c, ctxFor(t), "retry once")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("items: %#v", items)
	}
	if r, ok := items[0].(*RetryScheduled); !ok || r.Attempt != 1 || r.DelayMs != 100 || !strings.HasPrefix(r.Error, "500") {
		t.Fatalf("first item: %#v", items[0])
	}
	if x, ok := items[1].(*TextChunk); !ok || x.Text != "recovered" {
		t.Fatalf("second item: %#v", items[1])
	}
	if done := items[2].(*TurnComplete); done.Summary.Attempts != 2 || len(done.Summary.FailedAttempts) != 1 {
		t.Fatalf("TurnComplete: %+v", done.Summary)
	}
}

// A stream shows its own turn only: earlier turns' events still queued in the library (nobody
// read them) are not fed to it.
func TestStreamStartsClean(t *testing.T) {
	c := startFake(t)
	turn(t, c, "say hello") // its events stay in the library's queue
	turn(t, c, "thinking")
	items, err := streamAll(t, c, ctxFor(t), "say hello")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("items: %#v", items)
	}
	if x, ok := items[0].(*TextChunk); !ok || x.Text != "pong" {
		t.Fatalf("first item: %#v", items[0])
	}
	if s := items[1].(*TurnComplete).Summary; s.Text != "pong" || s.Reasoning != "" {
		t.Fatalf("summary: %+v", s)
	}
}

// abortedRun reports whether events hold the aborted end of a run (its message_end
// stopReason "aborted"), reading the channel until that run's agent_end.
func abortedRun(t *testing.T, events <-chan Event) bool {
	t.Helper()
	aborted := false
	for ev := range events {
		if ev.Type == "message_end" && jstr(t, ev.Raw, "message.stopReason") == "aborted" {
			aborted = true
		}
		if ev.Type == "agent_end" {
			return aborted
		}
	}
	t.Fatal("the events ended before agent_end")
	return false
}

// Leaving the loop aborts the turn, and returns once the agent settled: the next prompt is
// accepted (the fake agent refuses one while its run is live).
func TestStreamBreakAborts(t *testing.T) {
	for _, flavor := range []Flavor{FlavorOmp, FlavorPi} {
		t.Run(string(flavor), func(t *testing.T) {
			o := fakeOptions("--flavor", string(flavor))
			o.Flavor = flavor
			c := start(t, o)
			ctx := ctxFor(t)
			events := c.Events(ctx)
			waitSubscribers(t, c, 1)
			var first StreamItem
			for item, err := range c.Stream(ctx, "stream until abort") {
				if err != nil {
					t.Fatal(err)
				}
				first = item
				break
			}
			if x, ok := first.(*TextChunk); !ok || x.Text != "thinking " {
				t.Fatalf("first item: %#v", first)
			}
			if !abortedRun(t, events) {
				t.Fatal("no aborted message_end: the abort did not reach the agent")
			}
			items, err := streamAll(t, c, ctx, "say hello")
			if err != nil {
				t.Fatalf("the next stream: %v", err)
			}
			if done := items[len(items)-1].(*TurnComplete); *done.Text != "pong" {
				t.Fatalf("the next turn: %+v", done)
			}
		})
	}
}

// A cancelled ctx aborts the turn too: the stream yields an error wrapping context.Canceled,
// and the next turn runs.
func TestStreamCancelAborts(t *testing.T) {
	c := startFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var items []StreamItem
	var last error
	for item, err := range c.Stream(ctx, "stream until abort") {
		if err != nil {
			last = err
			continue
		}
		items = append(items, item)
		cancel() // at the first text: the run is live
	}
	if !errors.Is(last, context.Canceled) || len(items) != 1 {
		t.Fatalf("cancelled stream: %v after %#v", last, items)
	}
	if _, err := c.PromptAndWait(ctxFor(t), "say hello", nil); err != nil {
		t.Fatalf("the next prompt: %v", err)
	}
}

// One stream at a time per client; a refused prompt and the agent's exit end a stream with
// their typed errors.
func TestStreamErrors(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	for item, err := range c.Stream(ctx, "stream until abort") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := item.(*TextChunk); !ok {
			t.Fatalf("first item: %#v", item)
		}
		_, err := streamAll(t, c, ctx, "say hello")
		if !errors.Is(err, ErrConcurrency) {
			t.Fatalf("a second stream: %v", err)
		}
		break
	}
	for _, err := range c.Stream(ctx, "say hello", nil, nil) {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("two options: %v", err)
		}
	}

	late := startFake(t, "--scenario", "late-failure")
	_, err := streamAll(t, late, ctx, "say hello")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Message != "late failure" {
		t.Fatalf("a late failure: %v", err)
	}

	crash := startFake(t)
	items, err := streamAll(t, crash, ctx, "crash")
	if !errors.Is(err, ErrProcessExited) {
		t.Fatalf("a crash: %v after %#v", err, items)
	}
}

// A stream keeps no history, so PromptAndWait's bound on a turn's events (max_event_history,
// 10000 by default) does not apply: a longer turn streams completely, every text chunk in
// order, then TurnComplete.
func TestStreamHasNoEventHistoryBound(t *testing.T) {
	const chunks = 10050 // message_update text_delta "xxxxxxxx" each, between 6 other events
	c := startFake(t)
	message := "burst " + strconv.Itoa(chunks)
	if _, err := c.PromptAndWait(ctxFor(t), message, nil); !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("PromptAndWait of a turn past max_event_history: %v", err)
	}
	items, err := streamAll(t, c, ctxFor(t), message)
	if err != nil {
		t.Fatalf("the same turn streamed: %v", err)
	}
	if len(items) != chunks+1 {
		t.Fatalf("%d items, want %d text chunks and TurnComplete", len(items), chunks)
	}
	for i, item := range items[:chunks] {
		if x, ok := item.(*TextChunk); !ok || x.Text != "xxxxxxxx" {
			t.Fatalf("item %d: %#v", i, item)
		}
	}
	done, ok := items[chunks].(*TurnComplete)
	if !ok || done.Text == nil || *done.Text != "pong" || done.Outcome != TurnAgentEnd {
		t.Fatalf("last item: %#v", items[chunks])
	}
	if n := len(done.Summary.Text); n != 8*chunks {
		t.Fatalf("the summary's text: %d bytes, want %d", n, 8*chunks)
	}
}

// A stream is one of the client's prompt-lifecycle calls: PromptAndWait, CollectEvents and
// WaitForIdle are refused while it runs, and a stream while PromptAndWait runs.
func TestStreamIsOneLifecycleCallAtATime(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	for item, err := range c.Stream(ctx, "stream until abort") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := item.(*TextChunk); !ok {
			t.Fatalf("first item: %#v", item)
		}
		_, err = c.PromptAndWait(ctx, "say hello", nil)
		wantErr(t, err, ErrConcurrency, "PromptAndWait during a stream")
		_, err = c.CollectEvents(ctx)
		wantErr(t, err, ErrConcurrency, "CollectEvents during a stream")
		wantErr(t, c.WaitForIdle(ctx), ErrConcurrency, "WaitForIdle during a stream")
		break
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.PromptAndWait(ctx, "stream until abort", nil)
		done <- err
	}()
	waitActive(t, c, "PromptAndWait")
	_, err := streamAll(t, c, ctx, "say hello")
	wantErr(t, err, ErrConcurrency, "a stream during PromptAndWait")
	if err := c.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the aborted PromptAndWait: %v", err)
	}
	if items, err := streamAll(t, c, ctx, "say hello"); err != nil || *items[len(items)-1].(*TurnComplete).Text != "pong" {
		t.Fatalf("the next stream: %v", err)
	}
}

// A ctx deadline ends the stream with ErrTimeout (also context.DeadlineExceeded) and, as with
// PromptAndWait, leaves the agent's work going: the run is still live afterwards.
func TestStreamDeadline(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = FlavorPi
	c := start(t, o)
	// Long enough for the run to stream some items; the run itself never ends by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	items, err := streamAll(t, c, ctx, "stream until abort")
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || len(items) == 0 {
		t.Fatalf("a stream past its deadline: %v after %d items", err, len(items))
	}
	// pi refuses a prompt while its run is live
	_, err = c.Prompt(ctxFor(t), "say hello", nil)
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("a prompt during the run the deadline left: %v", err)
	}
	if err := c.Abort(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
}
