//go:build linux

package omprpc

import (
	"errors"
	"syscall"
	"testing"
	"time"
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

// openWaitSource: the client's event descriptor, polled with epoll. The same descriptor every
// time it is asked for; quiet at once when the last event is taken.
func openWaitSource(t *testing.T, c *Client) waitSource {
	t.Helper()
	fd, err := c.EventFD()
	if err != nil || fd < 0 {
		t.Fatalf("EventFD: %d %v", fd, err)
	}
	if again, err := c.EventFD(); err != nil || again != fd {
		t.Fatalf("EventFD again: %d %v, first %d", again, err, fd)
	}
	return waitSource{
		ready: func(d time.Duration) bool { return readable(t, fd, int(d.Milliseconds())) },
		gone: func() {
			if got, err := c.EventFD(); !errors.Is(err, ErrClosed) || got != -1 {
				t.Fatalf("EventFD after Close: %d %v", got, err)
			}
		},
	}
}
