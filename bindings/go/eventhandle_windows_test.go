package omprpc

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The event handle, waited on as a Windows program does: waitsource_test.go's checks with
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

// openWaitSource: the client's event handle, waited on with WaitForSingleObject. EventFD is
// Unix's and fails here with the library's typed error; the same handle every time it is asked
// for. The pump takes what the agent wrote after prompt_complete in the background: the handle
// is reset once it has (manual reset, cleared by the take that empties the queue), so it may
// stay set for a moment after the last event the test took.
func openWaitSource(t *testing.T, c *Client) waitSource {
	t.Helper()
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
	return waitSource{
		ready:       func(d time.Duration) bool { return signalled(t, h, uint32(d.Milliseconds())) },
		resetWithin: waitFor,
		gone: func() {
			if got, err := c.EventHandle(); !errors.Is(err, ErrClosed) || got != syscall.InvalidHandle {
				t.Fatalf("EventHandle after Close: %#x %v", got, err)
			}
		},
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
