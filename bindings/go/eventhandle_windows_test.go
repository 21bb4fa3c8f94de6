package omprpc

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The event handle, waited on as a Windows program does: eventfd_linux_test.go's checks with
// WaitForSingleObject, and a wait that is already blocked when events arrive or the client
// closes.

// signalled waits up to ms milliseconds (0: no wait) for h.
func signalled(t *testing.T, h syscall.Handle, ms uint32) bool {
	t.Helper()
	ev, err := syscall.WaitForSingleObject(h, ms)
	switch ev {
	case syscall.WAIT_OBJECT_0:
		return true
	case syscall.WAIT_TIMEOUT:
		return false
	default:
		t.Fatalf("WaitForSingleObject on the event handle: %#x %v", ev, err)
		return false
	}
}

// blockedWait starts a goroutine that waits on h for up to waitFor and reports whether h was
// signalled; it checks that the wait is still blocked a moment later.
func blockedWait(t *testing.T, h syscall.Handle) <-chan bool {
	t.Helper()
	woke := make(chan bool, 1)
	go func() {
		ev, _ := syscall.WaitForSingleObject(h, uint32(waitFor.Milliseconds()))
		woke <- ev == syscall.WAIT_OBJECT_0
	}()
	select {
	case <-woke:
		t.Fatal("the wait returned with nothing queued")
	case <-time.After(200 * time.Millisecond):
	}
	return woke
}

// The handle is set while events wait in the library (a manual-reset event: it stays set
// until they are taken), is reset once the pump took them, and is gone with Close; EventFD
// is Unix's and fails here with the library's typed error.
func TestEventHandle(t *testing.T) {
	o := fakeOptions()
	o.PromptCompleteEvents = true
	c := start(t, o)
	if fd, err := c.EventFD(); !errors.Is(err, ErrInvalidArgument) || fd != -1 || !strings.Contains(err.Error(), "omprpc_client_event_handle") {
		t.Fatalf("EventFD on Windows: %d %v", fd, err)
	}
	h, err := c.EventHandle()
	if err != nil || h == 0 || h == syscall.InvalidHandle {
		t.Fatalf("EventHandle: %#x %v", h, err)
	}
	if again, err := c.EventHandle(); err != nil || again != h {
		t.Fatalf("EventHandle again: %#x %v, first %#x", again, err, h)
	}
	// the agent's ready event waits in the library's queue from the start
	if !signalled(t, h, uint32(waitFor.Milliseconds())) {
		t.Fatal("not signalled with the ready event queued")
	}
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
		t.Fatal(err)
	}
	if !signalled(t, h, 0) {
		t.Fatal("not signalled again before the events were taken (manual reset)")
	}
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
	// The pump takes what the agent wrote after prompt_complete in the background: the
	// handle must be reset once it has (manual reset, cleared by the take that empties the
	// queue), within the wait's bound.
	for deadline := time.Now().Add(waitFor); signalled(t, h, 0); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still signalled after the pump took every event")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.EventHandle(); !errors.Is(err, ErrClosed) || got != syscall.InvalidHandle {
		t.Fatalf("EventHandle after Close: %#x %v", got, err)
	}
}

// A wait already blocked on the handle wakes when the agent's events arrive, and another
// when Close runs. That one waits on a duplicate of its own, as a program must whose wait may
// still be pending when Close frees the client (and closes the client's handle).
func TestEventHandleWakesABlockedWait(t *testing.T) {
	o := fakeOptions()
	o.PromptCompleteEvents = true
	c := start(t, o)
	h, err := c.EventHandle()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	for ev, err := range c.All(ctx) { // take the ready event: the queue is empty then
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "ready" {
			break
		}
	}
	woke := blockedWait(t, h)
	if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
		t.Fatal(err)
	}
	if !<-woke {
		t.Fatal("the blocked wait did not wake for the turn's events")
	}
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "prompt_complete" {
			break
		}
	}
	if signalled(t, h, 0) {
		t.Fatal("signalled with every event taken")
	}
	self, _ := syscall.GetCurrentProcess()
	var own syscall.Handle
	if err := syscall.DuplicateHandle(self, h, self, &own, 0, false, syscall.DUPLICATE_SAME_ACCESS); err != nil {
		t.Fatal(err)
	}
	defer syscall.CloseHandle(own)
	woke = blockedWait(t, own)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !<-woke {
		t.Fatal("Close did not wake the blocked wait")
	}
}

// A client the agent's exit closed stays signalled with no event left, so a wait loop learns
// of the end (Close is still the caller's to call).
func TestEventHandleSignalledOnceClosed(t *testing.T) {
	c := startFake(t)
	h, err := c.EventHandle()
	if err != nil {
		t.Fatal(err)
	}
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
	if !signalled(t, h, 0) || !signalled(t, h, 0) {
		t.Fatal("not signalled once the client is closed and every event was taken")
	}
}
