//go:build linux || windows

package omprpc

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The client's wait source — Linux's event descriptor (eventfd_linux_test.go), Windows' event
// handle (eventhandle_windows_test.go) — as a program's own wait loop sees it.

// waitSource is one client's wait source, opened by openWaitSource (per platform).
type waitSource struct {
	// ready waits up to d (0: no wait) for the source to be ready.
	ready func(d time.Duration) bool
	// resetWithin bounds how long the source may stay ready once every event was taken.
	resetWithin time.Duration
	// gone checks, after Close, that the client refuses to give the source out.
	gone func()
}

// The source is ready while events wait in the library and stays so until they are taken
// (level-triggered; on Windows a manual-reset event), is not once the pump took them, and is
// gone with Close. The client shows the library's prompt_complete events: the last event
// queued for a prompt is its prompt_complete (which the library also queues for a client that
// hides it).
func TestWaitSource(t *testing.T) {
	o := fakeOptions()
	o.PromptCompleteEvents = true
	c := start(t, o)
	ws := openWaitSource(t, c)
	// the agent's ready frame waits in the library's queue from the start: nothing takes it
	// while nothing subscribes
	if !ws.ready(waitFor) {
		t.Fatal("not ready with the ready event queued")
	}
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
		t.Fatal(err)
	}
	if !ws.ready(0) {
		t.Fatal("not ready again before the events were taken (level-triggered)")
	}
	// a subscriber gets the waiting events first
	var types []string
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type == "prompt_complete" {
			break
		}
	}
	if len(types) < 4 || types[0] != "ready" || types[1] != "agent_start" || types[len(types)-2] != "agent_end" {
		t.Fatalf("the waiting events: %v", types)
	}
	for deadline := time.Now().Add(ws.resetWithin); ws.ready(0); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still ready after the pump took every event")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ws.gone()
}

// A client the agent's exit closed is ready with no event left, so a wait loop learns of the
// end (Close is still the caller's to call).
func TestWaitSourceReadyOnceClosed(t *testing.T) {
	c := startFake(t)
	ws := openWaitSource(t, c)
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "crash", nil); err != nil {
		t.Fatal(err)
	}
	var end error
	for _, err := range c.All(ctx) {
		if err != nil {
			end = err
		}
	}
	if !errors.Is(end, ErrClosed) || !strings.Contains(end.Error(), "exited with code 3") {
		t.Fatalf("the events ended with %v, not the agent's exit", end)
	}
	if !ws.ready(0) || !ws.ready(0) {
		t.Fatal("not ready once the client is closed and every event was taken")
	}
}
