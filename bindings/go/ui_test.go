package omprpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

func nextUI(t *testing.T, c *Client) *UIRequest {
	t.Helper()
	r, err := c.NextUIRequest(ctxFor(t))
	if err != nil {
		t.Fatalf("NextUIRequest: %v", err)
	}
	return r
}

func promptOnly(t *testing.T, c *Client, message string) {
	t.Helper()
	id, err := c.Prompt(ctxFor(t), message, nil)
	if err != nil || id == "" {
		t.Fatalf("Prompt(%q): %q %v", message, id, err)
	}
}

// seenAnswer is the agent's echo of the answer it received for UI request id.
func seenAnswer(t *testing.T, c *Client, id string) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for ev, err := range c.All(ctx) {
		if err != nil {
			break
		}
		if ev.Type == "ui_response_seen" && jstr(t, ev.Raw, "frame.id") == id {
			return ev
		}
	}
	t.Fatalf("the agent never saw an answer to %s", id)
	return Event{}
}

func TestUIRoundTrips(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)

	promptOnly(t, c, "needs ui")
	r := nextUI(t, c)
	if r.Method != "input" || r.ID != "ui-1" || r.Title != "Need input" || r.Placeholder != "value" ||
		jstr(t, r.Raw, "type") != "extension_ui_request" {
		t.Fatalf("input request: %+v", r)
	}
	if err := c.UISendValue("ui-1", "approved"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if seen := seenAnswer(t, c, "ui-1"); jstr(t, seen.Raw, "frame.value") != "approved" {
		t.Fatalf("seen: %s", seen.Raw)
	}
	// answered: no longer open
	wantErr(t, c.UISendValue("ui-1", "again"), ErrNotFound, "a second answer")

	promptOnly(t, c, "needs confirm")
	r = nextUI(t, c)
	if r.Method != "confirm" || r.ID != "ui-2" || r.Message != "Continue?" {
		t.Fatalf("confirm request: %+v", r)
	}
	if err := c.UISendConfirmation("ui-2", true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if seen := seenAnswer(t, c, "ui-2"); jget(t, seen.Raw, "frame.confirmed") != true {
		t.Fatalf("seen: %s", seen.Raw)
	}

	promptOnly(t, c, "needs cancel")
	r = nextUI(t, c)
	if r.Method != "editor" || r.ID != "ui-3" {
		t.Fatalf("editor request: %+v", r)
	}
	if err := c.UICancel("ui-3", true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if seen := seenAnswer(t, c, "ui-3"); jget(t, seen.Raw, "frame.cancelled") != true || jget(t, seen.Raw, "frame.timedOut") != true {
		t.Fatalf("seen: %s", seen.Raw)
	}
	// nothing pending: a short deadline times out, the client stays usable
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if r, err := c.NextUIRequest(short); r != nil || !errors.Is(err, ErrTimeout) {
		t.Fatalf("NextUIRequest with nothing pending: %+v %v", r, err)
	}
}

// A goroutine waiting for a UI request without a deadline is woken by Close.
func TestCloseWakesNextUIRequest(t *testing.T) {
	c := start(t, slowToStopOptions())
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := c.NextUIRequest(context.Background())
		done <- result{err, time.Now()}
	}()
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	wantErr(t, r.err, ErrClosed, "NextUIRequest after Close")
	if d := r.at.Sub(t0); d > 1500*time.Millisecond {
		t.Fatalf("NextUIRequest woke %v after Close began", d)
	}
}

func TestHeadlessPolicy(t *testing.T) {
	o := fakeOptions()
	o.UIPolicy = &UIPolicy{Confirm: Ptr(false)} // select, input, editor: cancel
	c := start(t, o)
	ctx := ctxFor(t)
	// the input request is cancelled inside the library; the agent's follow-up turn ends the wait
	if tr := turn(t, c, "needs ui"); text(tr.AssistantText) != "ui acknowledged" {
		t.Fatalf("turn: %q", text(tr.AssistantText))
	}
	if seen := seenAnswer(t, c, "ui-1"); jget(t, seen.Raw, "frame.cancelled") != true {
		t.Fatalf("seen: %s", seen.Raw)
	}
	// an unknown, non-passive method is cancelled too
	turn(t, c, "unknown ui")
	if seen := seenAnswer(t, c, "ui-ask"); jget(t, seen.Raw, "frame.cancelled") != true {
		t.Fatalf("seen: %s", seen.Raw)
	}
	turn(t, c, "needs confirm")
	if seen := seenAnswer(t, c, "ui-2"); jget(t, seen.Raw, "frame.confirmed") != false {
		t.Fatalf("seen: %s", seen.Raw)
	}
	// values
	if err := c.SetUIPolicy(&UIPolicy{Confirm: Ptr(true), Input: Ptr("typed"), Editor: Ptr("edited"), Select: Ptr("b")}); err != nil {
		t.Fatal(err)
	}
	turn(t, c, "needs ui")
	if seen := seenAnswer(t, c, "ui-1"); jstr(t, seen.Raw, "frame.value") != "typed" {
		t.Fatalf("seen: %s", seen.Raw)
	}
	turn(t, c, "needs cancel")
	if seen := seenAnswer(t, c, "ui-3"); jstr(t, seen.Raw, "frame.value") != "edited" {
		t.Fatalf("seen: %s", seen.Raw)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.NextUIRequest(short); !errors.Is(err, ErrTimeout) {
		t.Fatalf("the policy left a request: %v", err)
	}
	// removing the policy brings the requests back to the host
	if err := c.SetUIPolicy(nil); err != nil {
		t.Fatal(err)
	}
	promptOnly(t, c, "needs ui")
	if r := nextUI(t, c); r.ID != "ui-1" {
		t.Fatalf("request after removing the policy: %+v", r)
	}
	if err := c.UISendValue("ui-1", "manual"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPassiveAndDismissedRequests(t *testing.T) {
	c := startFake(t)
	if _, ok := waitEvent(t, c, "ready", waitFor); !ok {
		t.Fatal("no ready")
	}
	// passive requests need no answer and never reach NextUIRequest...
	if tr := turn(t, c, "passive ui"); text(tr.AssistantText) != "pong" {
		t.Fatal("passive ui turn")
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.NextUIRequest(short); !errors.Is(err, ErrTimeout) {
		t.Fatalf("a passive request reached NextUIRequest: %v", err)
	}
	// ...but they are events like any other frame
	n := 0
	quiet, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	for ev, err := range c.All(quiet) {
		if err != nil {
			break
		}
		if ev.Type == "extension_ui_request" {
			n++
		}
		if ev.Type == "agent_end" {
			break
		}
	}
	if n != 4 {
		t.Fatalf("%d passive extension_ui_request events, want 4", n)
	}
	// a request the agent dismisses is no longer open
	turn(t, c, "ui dismiss")
	wantErr(t, c.UISendValue("ui-5", "a"), ErrNotFound, "answering a dismissed request")
	// a request followed by the turn: the turn ends without an answer, the request stays open
	turn(t, c, "ui then tool")
	r := nextUI(t, c)
	for r.ID == "ui-5" { // a dismissed request may still be queued
		r = nextUI(t, c)
	}
	if r.ID != "ui-9" {
		t.Fatalf("request: %+v", r)
	}
	if err := c.UISendValue("ui-9", "late"); err != nil {
		t.Fatal(err)
	}
	if seen := seenAnswer(t, c, "ui-9"); jstr(t, seen.Raw, "frame.value") != "late" {
		t.Fatalf("seen: %s", seen.Raw)
	}
}

func TestPiFlavour(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	c := start(t, o)
	ctx := ctxFor(t)
	if info, err := c.Info(); err != nil || info.Flavor != "pi" {
		t.Fatalf("info: %+v %v", info, err)
	}
	if s, err := c.GetState(ctx); err != nil || s.SessionID != "fake-session" {
		t.Fatalf("state: %+v %v", s, err)
	}
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatal("pi turn")
	}
	// pi sends the UI request before it acknowledges the prompt: answer it while Prompt waits
	for i, message := range []string{"needs ui", "needs confirm", "needs cancel"} {
		errc := make(chan error, 1)
		go func() { _, err := c.Prompt(ctx, message, nil); errc <- err }()
		r := nextUI(t, c)
		var err error
		switch i {
		case 0:
			err = c.UISendValue(r.ID, "approved")
		case 1:
			err = c.UISendConfirmation(r.ID, true)
		case 2:
			err = c.UICancel(r.ID, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("pi Prompt(%q): %v", message, err)
		}
		if err := c.WaitForIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// pi answers unknown commands id-less: still correlated to the caller
	_, err := c.Request(ctx, "set_host_tools", map[string]any{"tools": []any{}})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "set_host_tools" {
		t.Fatalf("pi unknown command: %#v", err)
	}
}
