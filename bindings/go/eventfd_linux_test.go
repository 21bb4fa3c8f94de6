//go:build linux

package omprpc

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// readable polls fd with epoll (level-triggered) for up to ms milliseconds (0: no wait).
func readable(t *testing.T, fd, ms int) bool {
	t.Helper()
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(ep)
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}); err != nil {
		t.Fatalf("epoll_ctl on the event fd %d: %v", fd, err)
	}
	var got [1]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(ep, got[:], ms)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n == 1 && got[0].Events&syscall.EPOLLIN != 0
	}
}

// The descriptor wakes a poll loop while events wait in the library, stays readable until
// they are taken (level-triggered), goes quiet once the pump took them, and is gone with
// Close. The client shows the library's prompt_complete events: the last event queued for a
// prompt is its prompt_complete (which the library also queues for a client that hides it).
func TestEventFD(t *testing.T) {
	o := fakeOptions()
	o.PromptCompleteEvents = true
	c := start(t, o)
	fd, err := c.EventFD()
	if err != nil || fd < 0 {
		t.Fatalf("EventFD: %d %v", fd, err)
	}
	if again, err := c.EventFD(); err != nil || again != fd {
		t.Fatalf("EventFD again: %d %v, first %d", again, err, fd)
	}
	// the agent's ready frame waits in the library's queue from the start: nothing takes
	// it while nothing subscribes
	if !readable(t, fd, int(waitFor.Milliseconds())) {
		t.Fatal("not readable with the ready event queued")
	}
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
		t.Fatal(err)
	}
	if !readable(t, fd, 0) {
		t.Fatal("not readable again before the events were taken (level-triggered)")
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
	if readable(t, fd, 0) {
		t.Fatal("readable after the pump took every event")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.EventFD(); !errors.Is(err, ErrClosed) || got != -1 {
		t.Fatalf("EventFD after Close: %d %v", got, err)
	}
}

// A client the agent's exit closed polls readable with no event left, so a poll loop learns
// of the end (Close is still the caller's to call).
func TestEventFDReadableOnceClosed(t *testing.T) {
	c := startFake(t)
	fd, err := c.EventFD()
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
	if !readable(t, fd, 0) || !readable(t, fd, 0) {
		t.Fatal("not readable once the client is closed and every event was taken")
	}
}
