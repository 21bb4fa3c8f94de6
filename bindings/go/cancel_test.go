package omprpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// cancelAtFirstText calls cancel when the first message_update reaches events (the run is
// live then).
func cancelAtFirstText(t *testing.T, events <-chan Event, cancel func()) {
	t.Helper()
	go func() {
		for ev := range events {
			if ev.Type == "message_update" {
				cancel()
				return
			}
		}
	}()
}

// waitActive waits until the client's active operation is the turn call's (it waits in the
// library, for the agent).
func waitActive(t *testing.T, c *Client, call string) {
	op := map[string]string{"PromptAndWait": "prompt_and_wait", "CollectEvents": "collect_events"}[call]
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		if info, err := c.Info(); err != nil || info.ActiveOperation == op {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("%s never became the active operation", op)
}

// A ctx cancelled mid-turn (a CancelFunc, no deadline) aborts the turn: abort reaches the
// agent, PromptAndWait returns an error wrapping context.Canceled once the agent settled, and
// the next prompt is accepted (the fake agent refuses one while its run is live).
func TestCancelPromptAndWaitAbortsTheTurn(t *testing.T) {
	for _, flavor := range []Flavor{FlavorOmp, FlavorPi} {
		t.Run(string(flavor), func(t *testing.T) {
			o := fakeOptions("--flavor", string(flavor))
			o.Flavor = flavor
			c := start(t, o)
			watch := c.Events(ctxFor(t))
			events := c.Events(ctxFor(t))
			waitSubscribers(t, c, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelAtFirstText(t, watch, cancel)
			turn, err := c.PromptAndWait(ctx, "stream until abort", nil)
			if !errors.Is(err, context.Canceled) || turn != nil {
				t.Fatalf("PromptAndWait cancelled: %v, %v", turn, err)
			}
			if errors.Is(err, ErrTimeout) {
				t.Fatalf("a cancellation is no timeout: %v", err)
			}
			if !abortedRun(t, events) {
				t.Fatal("no aborted message_end: the abort did not reach the agent")
			}
			if tr, err := c.PromptAndWait(ctxFor(t), "say hello", nil); err != nil || *tr.AssistantText != "pong" {
				t.Fatalf("the next prompt: %v", err)
			}
		})
	}
}

// Every other call returns promptly on cancellation with ctx's error; the C call ends in the
// background (here: never answered until Close) and the client stays usable.
func TestCancelLeavesOtherCalls(t *testing.T) {
	c := startFake(t, "--scenario", "hanging") // acknowledges the first prompt, then answers nothing
	if _, err := c.Prompt(ctxFor(t), "hang", nil); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{
		"GetState": func(ctx context.Context) error { _, err := c.GetState(ctx); return err },
		"Request":  func(ctx context.Context) error { _, err := c.Request(ctx, "get_state", nil); return err },
		"Prompt":   func(ctx context.Context) error { _, err := c.Prompt(ctx, "again", nil); return err },
		"Steer":    func(ctx context.Context) error { return c.Steer(ctx, "left") },
		"Abort":    c.Abort,
		"SetHostTool": func(ctx context.Context) error {
			return c.RegisterHostTool(ctx, HostTool{Name: "t", Parameters: map[string]any{"type": "object"}})
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel) // the agent never answers: any moment is mid-call
		t0 := time.Now()
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("%s cancelled: %v", name, err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("%s returned %v after its cancellation", name, d)
		}
	}
	if info, err := c.Info(); err != nil || info.Closed || info.PendingRequests == 0 {
		t.Fatalf("the client after left calls: %+v %v", info, err)
	}
	// Close ends the calls left running; their results are dropped.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
