package omprpc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Shutdown lets the running turn finish, then closes.
func TestShutdownWaitsForTheTurn(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	shut := make(chan error, 1)
	var items []StreamItem
	for item, err := range c.Stream(ctx, "slow") { // "pong", a 300 ms pause, then the end
		if err != nil {
			t.Fatalf("the stream under Shutdown: %v after %#v", err, items)
		}
		items = append(items, item)
		if len(items) == 1 {
			go func() { shut <- c.Shutdown(ctx) }()
		}
	}
	if _, ok := items[len(items)-1].(*TurnComplete); !ok {
		t.Fatalf("the turn did not complete: %#v", items)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if info, err := c.Info(); err != nil || !info.Closed {
		t.Fatalf("after Shutdown: %+v %v", info, err)
	}
	// an idle client: at once
	idle := startFake(t)
	if err := idle.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown of an idle client: %v", err)
	}
}

// When ctx ends first, Shutdown closes at once: the running turn ends with ErrClosed.
func TestShutdownDeadlineCloses(t *testing.T) {
	c := startFake(t)
	turnErr := make(chan error, 1)
	events := c.Events(ctxFor(t))
	waitSubscribers(t, c, 1)
	go func() {
		_, err := c.PromptAndWait(ctxFor(t), "stream until abort", nil) // runs until aborted
		turnErr <- err
	}()
	if _, ok := waitEventOn(t, events, "message_update"); !ok {
		t.Fatal("the run did not start")
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.Shutdown(short)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown past its deadline: %v", err)
	}
	if err := <-turnErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("the turn under a forced Shutdown: %v", err)
	}
}

func waitEventOn(t *testing.T, events <-chan Event, typ string) (Event, bool) {
	t.Helper()
	for ev := range events {
		if ev.Type == typ {
			return ev, true
		}
	}
	return Event{}, false
}

// A subscription says why its channel closed: ctx, Close, the agent's exit.
func TestSubscriptionErr(t *testing.T) {
	c := startFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	sub := c.Subscribe(ctx)
	if sub.Err() != nil {
		t.Fatalf("Err while open: %v", sub.Err())
	}
	cancel()
	for range sub.C {
	}
	if !errors.Is(sub.Err(), context.Canceled) {
		t.Fatalf("Err after ctx: %v", sub.Err())
	}

	closed := c.Subscribe(ctxFor(t))
	waitSubscribers(t, c, 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range closed.C {
	}
	if !errors.Is(closed.Err(), ErrClosed) {
		t.Fatalf("Err after Close: %v", closed.Err())
	}

	crash := startFake(t)
	exited := crash.Subscribe(ctxFor(t))
	waitSubscribers(t, crash, 1)
	if _, err := crash.PromptAndWait(ctxFor(t), "crash", nil); !errors.Is(err, ErrProcessExited) {
		t.Fatalf("crash: %v", err)
	}
	n := 0
	for range exited.C {
		n++
	}
	if err := exited.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "exited with code 3") || n == 0 {
		t.Fatalf("Err after the agent's exit: %v (%d events first)", err, n)
	}
}
